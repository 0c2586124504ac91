//! Proportional Rate Reduction, RFC 6937: how much a sender may send on each ACK of a fast
//! recovery.
//!
//! Contract. [`Prr::start`] begins a recovery with `RecoverFS` (RFC 6937 §3: `snd.nxt -
//! snd.una` when it starts); [`Prr::sndcnt`] takes one ACK's `DeliveredData`, the current
//! `pipe` and `ssthresh` and returns `sndcnt`, the bytes the sender may send in response; the
//! sender reports what it sends with [`Prr::on_send`] (`prr_out`). While `pipe > ssthresh`
//! the sending rate is `ssthresh / RecoverFS` of the delivery rate (the proportional part);
//! below it the Slow Start Reduction Bound (PRR-SSRB, the one §6 recommends) lets pipe grow
//! back towards ssthresh by at most one SMSS more than was delivered per ACK. Which data to
//! send, and setting `cwnd = ssthresh` when recovery ends, are the sender's (`sender.rs`).
//! Pure arithmetic in bytes: no clock, no I/O.

/// PRR state of one recovery episode.
#[derive(Clone, Debug, Default)]
pub struct Prr {
    /// `prr_delivered`: bytes delivered to the receiver since recovery began.
    delivered: u64,
    /// `prr_out`: bytes sent since recovery began.
    out: u64,
    /// `RecoverFS`: the FlightSize when recovery began.
    recover_fs: u64,
}

impl Prr {
    /// RFC 6937 §3 initialisation: `prr_delivered = prr_out = 0`, `RecoverFS` given.
    pub fn start(&mut self, recover_fs: u64) {
        *self = Prr {
            delivered: 0,
            out: 0,
            recover_fs: recover_fs.max(1),
        };
    }

    /// RFC 6937 §3, "on every ACK during recovery": adds `delivered_data` to `prr_delivered`
    /// and returns `sndcnt` (never negative).
    pub fn sndcnt(&mut self, delivered_data: u64, pipe: u64, ssthresh: u64, mss: u64) -> u64 {
        self.delivered += delivered_data;
        if pipe > ssthresh {
            // Proportional Rate Reduction:
            // sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out, the CEIL taken in
            // whole segments (the RFC's examples count segments, as Linux does): in bytes a
            // fraction of a segment could never be sent and would shift every send by an ACK.
            let target = (self.delivered as u128 * ssthresh as u128)
                .div_ceil(self.recover_fs as u128 * mss as u128) as u64
                * mss;
            target.saturating_sub(self.out)
        } else {
            // PRR-SSRB: limit = MAX(prr_delivered - prr_out, DeliveredData) + MSS;
            // sndcnt = MIN(ssthresh - pipe, limit).
            let banked = self.delivered.saturating_sub(self.out);
            let limit = banked.max(delivered_data) + mss;
            (ssthresh - pipe).min(limit)
        }
    }

    /// RFC 6937 §3, "on any data transmission or retransmission": `prr_out += data sent`.
    pub fn on_send(&mut self, bytes: u64) {
        self.out += bytes;
    }

    /// `prr_out`, bytes.
    pub fn out(&self) -> u64 {
        self.out
    }

    /// `prr_delivered`, bytes.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6937 §3.1, first example: cwnd = FlightSize = pipe = 20 segments, segment 0 lost,
    /// ssthresh 10, limited transmit (so recovery starts on the ACK of segment 3). Units are
    /// segments. Feeding the `pipe` row of the RFC's PRR table ACK by ACK, the pseudocode sends
    /// the retransmission on ACK 3 and one new segment on every second ACK after it, exactly
    /// as the table's `sent` row, up to ACK 16. (The table's last three columns do not follow
    /// its own pseudocode: it marks ACKs 18 and 19 "s" (sndcnt = ssthresh - pipe) with pipe 11
    /// and 10, which would give 0 and 0; the pseudocode sends on ACK 17 instead, on pipe 12 >
    /// ssthresh. The test pins the pseudocode.)
    #[test]
    fn rfc6937_single_loss_example_sends_on_every_other_ack() {
        let mut p = Prr::default();
        p.start(20);
        // ACK# 3..=19 and the RFC table's pipe row for them.
        let pipe = [
            18, 18, 18, 17, 17, 16, 16, 15, 15, 14, 14, 13, 13, 12, 12, 11, 10,
        ];
        let mut sent = Vec::new();
        for (i, &pp) in pipe.iter().enumerate() {
            let n = p.sndcnt(1, pp, 10, 1);
            p.on_send(n);
            sent.push((i as u64 + 3, n));
        }
        let rfc = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0];
        let ours: Vec<u64> = sent.iter().map(|e| e.1).collect();
        assert_eq!(ours[..14], rfc, "ACKs 3..=16 as in the RFC table");
        assert_eq!(ours[14..], [1, 0, 0], "ACKs 17..=19 by the pseudocode");
        // Proportional: prr_out tracks ssthresh/RecoverFS of prr_delivered.
        assert_eq!((p.delivered(), p.out()), (17, 8));
    }

    /// RFC 6937 §3.1, second example: segments 0-14 lost, so the ACKs of 15 and 16 (limited
    /// transmit) and 17-19 are the only ones; recovery starts on 17 with pipe 4, below
    /// ssthresh 10. PRR-SSRB sends 2 per ACK ("bd", "d", "d": DeliveredData + 1 SMSS), growing
    /// pipe by one per ACK (4, 5, 6 in the table); the conservative bound (CRB, limit =
    /// prr_delivered - prr_out) would send 1 per ACK.
    #[test]
    fn rfc6937_burst_loss_example_slow_starts_below_ssthresh() {
        let mut p = Prr::default();
        p.start(20);
        let mut pipe = 4;
        let mut sent = Vec::new();
        for _ in 17..=19 {
            let n = p.sndcnt(1, pipe, 10, 1);
            p.on_send(n);
            sent.push(n);
            pipe = pipe + n - 1; // what was sent joins pipe; the next ACK delivers one
        }
        assert_eq!(sent, [2, 2, 2]);
        // Never more than ssthresh - pipe, however much was banked.
        let mut q = Prr::default();
        q.start(20);
        assert_eq!(q.sndcnt(8, 9, 10, 1), 1, "capped by ssthresh - pipe");
    }

    #[test]
    fn proportional_part_converges_on_ssthresh_per_recoverfs() {
        // With pipe above ssthresh throughout, after a whole RecoverFS is delivered prr_out is
        // ssthresh (RFC 6937 §4: "prr_out approaches ssthresh"), here 7 of 10 (a 30% cut).
        let mut p = Prr::default();
        p.start(10_000);
        for _ in 0..10 {
            let n = p.sndcnt(1000, 9000, 7000, 1000);
            p.on_send(n);
        }
        assert_eq!(p.out(), 7000);
    }
}
