//! IEEE 802.11b DSSS timing of data frame exchanges, for 001's single-link experiments.
//!
//! Contract. Pure arithmetic, no state, no clock. [`Dot11b`] holds the PHY and MAC timing of
//! one hop (RTS/CTS off) and gives the pieces a DCF model puts together: DIFS, SIFS and the
//! slot, the PLCP preamble and header, the data frame carrying an MSDU of `len` bytes at the
//! data rate ([`Dot11b::data_frame`]), the MAC ACK at the basic rate ([`Dot11b::ack_frame`]),
//! the medium time of one exchange once a station has won the medium ([`Dot11b::busy`]: data
//! frame, SIFS, ACK), and the contention window bounds and retry limit of the backoff
//! procedure (IEEE 802.11-1999 §9.2.4, §9.2.5.2). Who transmits when (DIFS, backoff counters,
//! collisions) is the simulator's DCF state machine (`crates/sim/src/world/dcf.rs`).
//! [`Dot11b::exchange`] is the mean medium time per frame of ONE saturated station alone
//! (DIFS + the mean backoff CWmin/2 slots + [`Dot11b::busy`]): a closed-form reference, not
//! what two stations sharing the medium pay. Long or short preamble (001 §III.A: the choice
//! alone costs about 15% of TCP throughput at 11 Mbit/s).
//!
//! Constants are those of IEEE 802.11b-1999 (clause 18, DSSS/HR-DSSS PHY): slot 20 µs, SIFS
//! 10 µs, DIFS = SIFS + 2 slots, CWmin 31, CWmax 1023; long PLCP preamble 144 µs + header 48 µs
//! at 1 Mbit/s, short 72 µs + 24 µs at 2 Mbit/s. dot11ShortRetryLimit 7 (IEEE 802.11-1999
//! Annex D). The MPDU adds a 24-byte MAC header, a 4-byte FCS and 8 bytes of LLC/SNAP to the IP
//! packet.

use crate::ParamError;
use mslink_link::Duration;

/// PLCP preamble kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preamble {
    /// 144 µs preamble + 48 µs PLCP header (always at 1 Mbit/s).
    #[default]
    Long,
    /// 72 µs preamble + 24 µs PLCP header (header at 2 Mbit/s).
    Short,
}

impl Preamble {
    /// Time of PLCP preamble and header.
    pub fn duration(self) -> Duration {
        match self {
            Preamble::Long => Duration::from_micros(192),
            Preamble::Short => Duration::from_micros(96),
        }
    }
}

/// 802.11b timing parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Dot11b {
    /// PHY data rate, bit/s (1, 2, 5.5 or 11 Mbit/s).
    pub data_rate_bps: f64,
    /// Rate of the MAC ACK, bit/s (a basic rate: 1 Mbit/s with a long preamble, 2 with short).
    pub basic_rate_bps: f64,
    /// Long or short preamble.
    pub preamble: Preamble,
    /// Slot time, µs.
    pub slot_us: f64,
    /// Short interframe space, µs.
    pub sifs_us: f64,
    /// Minimum contention window, slots: a backoff is drawn uniformly from [0, CW] slots, CW
    /// starting at `cw_min` (IEEE 802.11-1999 §9.2.4).
    pub cw_min: u32,
    /// Maximum contention window, slots: CW doubles (2 CW + 1) after each collision up to it.
    pub cw_max: u32,
    /// Transmission attempts of one frame before the MAC gives it up (dot11ShortRetryLimit:
    /// frames shorter than the RTS threshold, RTS/CTS being off).
    pub retry_limit: u32,
    /// MAC header + FCS + LLC/SNAP bytes added to each packet.
    pub mac_overhead_bytes: usize,
    /// MAC ACK frame length, bytes.
    pub ack_bytes: usize,
}

impl Default for Dot11b {
    fn default() -> Self {
        Dot11b {
            data_rate_bps: 11e6,
            basic_rate_bps: 1e6,
            preamble: Preamble::Long,
            slot_us: 20.0,
            sifs_us: 10.0,
            cw_min: 31,
            cw_max: 1023,
            retry_limit: 7,
            mac_overhead_bytes: 24 + 4 + 8,
            ack_bytes: 14,
        }
    }
}

impl Dot11b {
    /// The 001 configuration with a short preamble (its ACK at 2 Mbit/s).
    pub fn short_preamble() -> Self {
        Dot11b {
            preamble: Preamble::Short,
            basic_rate_bps: 2e6,
            ..Dot11b::default()
        }
    }

    /// DIFS = SIFS + 2 slots.
    pub fn difs(&self) -> Duration {
        Duration::from_secs_f64((self.sifs_us + 2.0 * self.slot_us) * 1e-6)
    }

    /// SIFS.
    pub fn sifs(&self) -> Duration {
        Duration::from_secs_f64(self.sifs_us * 1e-6)
    }

    /// One backoff slot.
    pub fn slot(&self) -> Duration {
        Duration::from_secs_f64(self.slot_us * 1e-6)
    }

    /// Mean of a backoff drawn from [0, CWmin] slots: CWmin / 2 slots.
    pub fn mean_backoff(&self) -> Duration {
        Duration::from_secs_f64(f64::from(self.cw_min) / 2.0 * self.slot_us * 1e-6)
    }

    /// Time on air of the data frame carrying `len` bytes (preamble + MPDU).
    pub fn data_frame(&self, len: usize) -> Duration {
        let bits = ((len + self.mac_overhead_bytes) * 8) as f64;
        self.preamble.duration() + Duration::from_secs_f64(bits / self.data_rate_bps)
    }

    /// Time on air of the MAC ACK.
    pub fn ack_frame(&self) -> Duration {
        let bits = (self.ack_bytes * 8) as f64;
        self.preamble.duration() + Duration::from_secs_f64(bits / self.basic_rate_bps)
    }

    /// Medium time of one successful exchange carrying `len` bytes from the start of its data
    /// frame: data frame + SIFS + ACK (the medium is busy until the ACK ends).
    pub fn busy(&self, len: usize) -> Duration {
        self.data_frame(len) + self.sifs() + self.ack_frame()
    }

    /// Mean medium time per frame of ONE saturated station alone (every frame follows a
    /// backoff drawn after the previous one, IEEE 802.11-1999 §9.2.5.2): DIFS + mean backoff +
    /// [`Dot11b::busy`]. A closed-form reference: two stations sharing the medium count their
    /// backoffs down together and pay less idle time per frame.
    pub fn exchange(&self, len: usize) -> Duration {
        self.difs() + self.mean_backoff() + self.busy(len)
    }

    /// Highest packet throughput (bit/s of `len`-byte packets) one saturated sender alone
    /// reaches (mean of [`Dot11b::exchange`]).
    pub fn saturation_throughput_bps(&self, len: usize) -> f64 {
        (len * 8) as f64 / self.exchange(len).as_secs_f64()
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), ParamError> {
        let positive = [
            ("data_rate_bps", self.data_rate_bps),
            ("basic_rate_bps", self.basic_rate_bps),
            ("slot_us", self.slot_us),
            ("sifs_us", self.sifs_us),
        ];
        for (k, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(ParamError::new(
                    k,
                    format!("must be a positive number, got {v}"),
                ));
            }
        }
        if self.cw_max < self.cw_min {
            return Err(ParamError::new(
                "cw_max",
                format!(
                    "must be at least cw_min ({}), got {}",
                    self.cw_min, self.cw_max
                ),
            ));
        }
        if self.retry_limit == 0 {
            return Err(ParamError::new("retry_limit", "must be at least 1 attempt"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchange_matches_the_standard_sum_for_a_1500_byte_packet() {
        // Long: 50 DIFS + 310 backoff + 192 + (1536*8/11) µs + 10 SIFS + 192 + 112 µs.
        let long = Dot11b::default().exchange(1500).as_secs_f64() * 1e6;
        let expect_long = 50.0 + 310.0 + 192.0 + 1536.0 * 8.0 / 11.0 + 10.0 + 192.0 + 112.0;
        assert!((long - expect_long).abs() < 0.01, "{long} vs {expect_long}");
        // Short: preambles 96 µs, ACK at 2 Mbit/s (56 µs).
        let short = Dot11b::short_preamble().exchange(1500).as_secs_f64() * 1e6;
        let expect_short = 50.0 + 310.0 + 96.0 + 1536.0 * 8.0 / 11.0 + 10.0 + 96.0 + 56.0;
        assert!(
            (short - expect_short).abs() < 0.01,
            "{short} vs {expect_short}"
        );
    }

    #[test]
    fn long_preamble_costs_about_fifteen_percent_at_11_mbps() {
        // 001 §III.A: NIC_3's TCP throughput drops by about 15% with the long preamble.
        let s = Dot11b::short_preamble().saturation_throughput_bps(1500);
        let l = Dot11b::default().saturation_throughput_bps(1500);
        let loss = 1.0 - l / s;
        assert!((0.10..0.20).contains(&loss), "long preamble costs {loss}");
        assert!(
            s < 11e6 * 0.7,
            "MAC overhead keeps 11 Mbit/s far from reach: {s}"
        );
    }

    #[test]
    fn validate_names_the_bad_key() {
        let d = Dot11b {
            slot_us: 0.0,
            ..Dot11b::default()
        };
        assert!(d.validate().unwrap_err().to_string().contains("slot_us"));
        let d = Dot11b {
            cw_max: 15,
            ..Dot11b::default()
        };
        assert!(d.validate().unwrap_err().to_string().contains("cw_max"));
        let d = Dot11b {
            retry_limit: 0,
            ..Dot11b::default()
        };
        assert!(d
            .validate()
            .unwrap_err()
            .to_string()
            .contains("retry_limit"));
    }

    #[test]
    fn busy_is_data_frame_sifs_and_ack() {
        // Short preamble, 64-byte ping: 96 + 100 × 8 / 11 µs of data frame, SIFS, 96 + 56 µs ACK.
        let d = Dot11b::short_preamble();
        let us = |x: Duration| x.as_secs_f64() * 1e6;
        assert!((us(d.data_frame(64)) - (96.0 + 800.0 / 11.0)).abs() < 0.001);
        assert!((us(d.busy(64)) - (96.0 + 800.0 / 11.0 + 10.0 + 152.0)).abs() < 0.001);
        assert_eq!(d.exchange(64), d.difs() + d.mean_backoff() + d.busy(64));
        assert_eq!(
            (d.difs(), d.slot()),
            (Duration::from_micros(50), Duration::from_micros(20))
        );
    }
}
