//! RFC behaviour of the sender, over a small loopback network with a fixed one-way delay, no
//! serialisation and a chosen set of first transmissions lost.

use super::*;
use crate::tcp::{Receiver, TcpConfig, Variant};
use std::collections::BTreeSet;

const MSS: u64 = 1000;

fn cfg(variant: Variant, iw: u32) -> TcpConfig {
    TcpConfig {
        variant,
        mss: MSS as u32,
        initial_window: iw,
        send_buffer_bytes: 1 << 20,
        recv_buffer_bytes: 1 << 20,
        ..TcpConfig::default()
    }
}

struct Net {
    s: Sender,
    r: Receiver,
    now: Instant,
    one_way: Duration,
    /// (arrival, to the receiver?, segment), kept in arrival order.
    q: Vec<(Instant, bool, Segment)>,
    /// Starting bytes whose first transmission is lost.
    lose_once: BTreeSet<u64>,
    /// Starting bytes whose first two transmissions are lost.
    lose_twice: BTreeSet<u64>,
    /// Every data segment sent: (time, seq), and the sender's next timer just after it.
    sent: Vec<(Instant, u64)>,
    timer_after: Vec<Option<Instant>>,
    max_flight: u64,
    done_at: Option<Instant>,
}

impl Net {
    fn new(c: &TcpConfig, total: u64, lose: &[u64]) -> Net {
        Net {
            s: Sender::new(c, total),
            r: Receiver::new(c),
            now: Instant::ZERO,
            one_way: Duration::from_millis(50),
            q: Vec::new(),
            lose_once: lose.iter().map(|k| k * MSS).collect(),
            lose_twice: BTreeSet::new(),
            sent: Vec::new(),
            timer_after: Vec::new(),
            max_flight: 0,
            done_at: None,
        }
    }

    fn push(&mut self, at: Instant, to_r: bool, seg: Segment) {
        let i = self.q.partition_point(|e| e.0 <= at);
        self.q.insert(i, (at, to_r, seg));
    }

    /// Sends whatever both ends have to send now.
    fn drain(&mut self) {
        while let Some(seg) = self.s.poll_transmit(self.now) {
            self.sent.push((self.now, seg.seq));
            self.timer_after.push(self.s.poll_timeout());
            let lost = if self.lose_twice.remove(&seg.seq) {
                self.lose_once.insert(seg.seq)
            } else {
                self.lose_once.remove(&seg.seq)
            };
            if !lost {
                self.push(self.now + self.one_way, true, seg);
            }
        }
        self.max_flight = self.max_flight.max(self.s.snd_max() - self.s.snd_una());
        while let Some(a) = self.r.poll_transmit(self.now) {
            self.push(self.now + self.one_way, false, a);
        }
        if self.s.is_done() && self.done_at.is_none() {
            self.done_at = Some(self.now);
        }
    }

    fn run_until(&mut self, end: Instant) {
        loop {
            self.drain();
            let next = [
                self.q.first().map(|e| e.0),
                self.s.poll_timeout(),
                self.r.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next.filter(|&t| t <= end) else {
                return;
            };
            self.now = next;
            while self.q.first().is_some_and(|e| e.0 <= next) {
                let (_, to_r, seg) = self.q.remove(0);
                if to_r {
                    self.r.handle_segment(next, &seg);
                } else {
                    self.s.handle_ack(next, &seg);
                }
                self.drain();
            }
            self.s.handle_timeout(next);
            self.r.handle_timeout(next);
        }
    }
}

#[test]
fn slow_start_doubles_the_window_every_round_trip() {
    let mut n = Net::new(&cfg(Variant::Reno, 1), 10_000_000, &[]);
    for k in 0..8u32 {
        n.run_until(Instant::from_millis(100 * k as u64 + 1));
        assert_eq!(n.s.cwnd(), MSS << k, "round {k}");
    }
}

#[test]
fn congestion_avoidance_adds_about_one_segment_per_round_trip() {
    // One loss at segment 40 ends slow start; then the window grows by ~1 MSS per RTT.
    let mut n = Net::new(&cfg(Variant::NewReno, 1), 100_000_000, &[40]);
    n.run_until(Instant::from_millis(1000));
    assert!(n.s.stats().fast_retransmits == 1 && !n.s.in_recovery());
    let (w0, t0) = (n.s.cwnd(), 1000);
    n.run_until(Instant::from_millis(t0 + 1000));
    let grew = (n.s.cwnd() - w0) as f64 / MSS as f64;
    assert!((9.0..=11.0).contains(&grew), "{grew} segments in 10 RTTs");
}

/// Ten segments out; the ACKs of 0-4 arrive, then duplicates of the ACK for 5000.
#[test]
fn fast_retransmit_on_the_third_duplicate_ack() {
    let c = cfg(Variant::Reno, 10);
    let mut s = Sender::new(&c, 1_000_000);
    let t = Instant::ZERO;
    let mut out = Vec::new();
    while let Some(x) = s.poll_transmit(t) {
        out.push(x.seq);
    }
    assert_eq!(out, (0..10).map(|k| k * MSS).collect::<Vec<_>>());
    let ack = |n: u64| Segment {
        ack: n,
        flags: ACK,
        window: 1 << 20,
        ..Segment::default()
    };
    for k in 1..=5 {
        s.handle_ack(t, &ack(k * MSS));
        while s.poll_transmit(t).is_some() {}
    }
    for d in 1..=3 {
        s.handle_ack(t, &ack(5 * MSS));
        let first = s.poll_transmit(t).map(|x| x.seq);
        if d < 3 {
            assert_ne!(first, Some(5 * MSS), "no retransmission on duplicate {d}");
            while s.poll_transmit(t).is_some() {}
        } else {
            assert_eq!(first, Some(5 * MSS), "retransmitted on the third");
        }
    }
    // Sent: 10 initial + 5 x 2 in slow start = segments 0..20; flight = 15 segments.
    let flight = 20 * MSS - 5 * MSS;
    assert_eq!(s.ssthresh(), flight / 2, "RFC 5681 eq. (4)");
    assert_eq!(s.cwnd(), flight / 2 + 3 * MSS, "RFC 5681 §3.2 step 3");
    assert!(s.in_recovery());
    assert_eq!(s.stats().fast_retransmits, 1);
}

/// RFC 3042 §2: with a window of four segments and the first lost, limited transmit sends one
/// new segment on each of the first two duplicate ACKs (cwnd unchanged), so the third
/// duplicate arrives and fast retransmit repairs the loss; ssthresh ignores those two
/// segments (RFC 5681 §3.2 step 2). Without it, the same window yields only three duplicates.
#[test]
fn limited_transmit_sends_a_new_segment_on_each_of_the_first_two_duplicates() {
    let ack = |n: u64| Segment {
        ack: n,
        flags: ACK,
        window: 1 << 20,
        ..Segment::default()
    };
    let t = Instant::ZERO;
    for on in [false, true] {
        let c = TcpConfig {
            limited_transmit: on,
            ..cfg(Variant::NewReno, 4)
        };
        let mut s = Sender::new(&c, 1_000_000);
        let mut out = Vec::new();
        while let Some(x) = s.poll_transmit(t) {
            out.push(x.seq);
        }
        assert_eq!(out.len(), 4);
        let mut after = Vec::new();
        for d in 1..=2 {
            s.handle_ack(t, &ack(0));
            let sent: Vec<u64> = std::iter::from_fn(|| s.poll_transmit(t).map(|x| x.seq)).collect();
            assert_eq!(s.cwnd(), 4 * MSS, "cwnd unchanged on duplicate {d}");
            after.push(sent);
        }
        if on {
            assert_eq!(after, [vec![4 * MSS], vec![5 * MSS]]);
            assert_eq!(s.stats().limited_transmits, 2);
        } else {
            assert_eq!(after, [Vec::<u64>::new(), Vec::new()]);
        }
        s.handle_ack(t, &ack(0));
        assert_eq!(
            s.poll_transmit(t).map(|x| x.seq),
            Some(0),
            "fast retransmit"
        );
        // FlightSize without the limited-transmit segments: 4 segments, halved.
        assert_eq!(s.ssthresh(), 2 * MSS, "limited transmit {on}");
    }
}

#[test]
fn limited_transmit_saves_a_small_window_from_a_timeout() {
    // A window of three segments and the first lost: two duplicates, and no new ACK to open
    // the window, without limited transmit, so only the timeout repairs it; with it, the two
    // new segments bring the third duplicate and fast retransmit does.
    for (on, timeouts, fast) in [(false, 1, 0), (true, 0, 1)] {
        let c = TcpConfig {
            limited_transmit: on,
            ..cfg(Variant::NewReno, 3)
        };
        let mut n = Net::new(&c, 10 * MSS, &[0]);
        n.run_until(Instant::from_millis(10_000));
        assert!(n.s.is_done(), "limited transmit {on}");
        let st = n.s.stats();
        assert_eq!(
            (st.timeouts, st.fast_retransmits),
            (timeouts, fast),
            "on={on}: {st:?}"
        );
    }
}

#[test]
fn newreno_repairs_three_losses_in_one_window_without_a_timeout() {
    let lost = [12, 15, 18];
    let mut nr = Net::new(&cfg(Variant::NewReno, 20), 40 * MSS, &lost);
    nr.run_until(Instant::from_secs(30));
    let st = nr.s.stats();
    assert_eq!(nr.r.rcv_nxt(), 40 * MSS);
    assert_eq!(
        (st.timeouts, st.fast_retransmits, st.retransmits),
        (0, 1, 3)
    );
    // Partial ACKs each retransmit the next hole: one hole per round trip.
    let rtx: Vec<u64> = lost
        .iter()
        .map(|&k| {
            nr.sent
                .iter()
                .rev()
                .find(|e| e.1 == k * MSS)
                .unwrap()
                .0
                .as_nanos()
        })
        .collect();
    assert!(rtx[1] - rtx[0] >= 100_000_000 && rtx[2] - rtx[1] >= 100_000_000);
    // Reno, under the same losses, leaves recovery at the first partial ACK and must wait
    // for more duplicates or the timer.
    let mut reno = Net::new(&cfg(Variant::Reno, 20), 40 * MSS, &lost);
    reno.run_until(Instant::from_secs(30));
    let rs = reno.s.stats();
    assert_eq!(reno.r.rcv_nxt(), 40 * MSS);
    assert!(rs.timeouts + rs.fast_retransmits > 1, "{rs:?}");
    assert!(reno.done_at.unwrap() > nr.done_at.unwrap());
}

#[test]
fn sack_repairs_several_losses_in_about_one_round_trip() {
    let lost = [21, 24, 27, 30];
    let mut sk = Net::new(&cfg(Variant::Sack, 20), 60 * MSS, &lost);
    sk.run_until(Instant::from_secs(30));
    let st = sk.s.stats();
    assert_eq!(sk.r.rcv_nxt(), 60 * MSS);
    // Four holes repaired, plus at most the one rescue retransmission RFC 6675 allows per
    // recovery (here of a segment whose SACK was still on its way).
    assert_eq!(
        (
            st.timeouts,
            st.fast_retransmits,
            st.retransmits - st.rescue_retransmits
        ),
        (0, 1, 4),
        "{st:?}"
    );
    assert!(st.rescue_retransmits <= 1);
    // All four holes go out within one round trip of the first retransmission.
    let when = |k: u64| sk.sent.iter().rev().find(|e| e.1 == k * MSS).unwrap().0;
    let span = when(30).saturating_since(when(21));
    assert!(span < Duration::from_millis(100), "{span}");
    let mut nr = Net::new(&cfg(Variant::NewReno, 20), 60 * MSS, &lost);
    nr.run_until(Instant::from_secs(30));
    assert!(sk.done_at.unwrap() + Duration::from_millis(200) <= nr.done_at.unwrap());
}

#[test]
fn sack_rescue_retransmission_repairs_a_lost_last_segment_without_a_timeout() {
    // All 20 segments go out at once; 5 and the last, 19, are lost. The SACKs for 6-18 make 5
    // a lost hole (rule 1); 19 lies above every SACKed segment, so rules 1-3 never name it and,
    // with no new data to send, only RFC 6675's rescue retransmission (rule 4) or a timeout
    // can repair it.
    let mut sk = Net::new(&cfg(Variant::Sack, 20), 20 * MSS, &[5, 19]);
    sk.run_until(Instant::from_secs(30));
    let st = sk.s.stats();
    assert_eq!(sk.r.rcv_nxt(), 20 * MSS);
    assert_eq!(
        (st.timeouts, st.fast_retransmits, st.rescue_retransmits),
        (0, 1, 1),
        "{st:?}"
    );
    assert_eq!(st.retransmits, 2, "segment 5, then 19 as the rescue");
}

#[test]
fn rto_backs_off_and_karn_skips_retransmitted_samples() {
    // The first segment is lost three times: sent at 0, then after 1, 2 and 4 s.
    let c = cfg(Variant::Reno, 1);
    let mut n = Net::new(&c, 10 * MSS, &[0]);
    n.run_until(Instant::from_millis(1));
    for _ in 0..2 {
        let at = n.s.poll_timeout().unwrap();
        n.lose_once.insert(0);
        n.run_until(at);
    }
    let times: Vec<u64> = n.sent.iter().map(|e| e.0.as_nanos() / 1_000_000).collect();
    assert_eq!(times, vec![0, 1000, 3000]);
    assert_eq!(n.s.rto().rto(), Duration::from_secs(4));
    // The next copy gets through at 7 s; its ACK gives no sample (Karn), so the backoff stays.
    n.run_until(Instant::from_millis(7000 + 100));
    assert_eq!(n.sent[3].0, Instant::from_secs(7));
    assert_eq!(n.s.snd_una(), MSS);
    assert_eq!(n.s.stats().rtt_samples, 0);
    assert_eq!(n.s.rto().rto(), Duration::from_secs(8));
    // The next segment is new: its sample ends the backoff (100 ms RTT -> RTO 1 s).
    n.run_until(Instant::from_millis(7000 + 201));
    assert_eq!(n.s.stats().rtt_samples, 1);
    assert_eq!(n.s.rto().rto(), Duration::from_secs(1));
}

/// Linux's timer (`rto_flavour = "linux"`): at 200 ms RTT with a 200 ms minimum the RTO is
/// about SRTT + 200 ms, not RFC 6298's max(200 ms, SRTT + 4 RTTVAR) = 201 ms, and it restarts
/// when the first unacknowledged segment is retransmitted, so the repair has a whole RTO to
/// come back. RFC 6298's timer still runs from the last cumulative ACK before the repair:
/// here it would expire 1 ms after the repair's ACK could return, and behind any queue
/// before it. Segment 2000's (late enough for RTTVAR to have settled) first two transmissions are lost; RACK finds both losses with Linux's timer; RFC 6298's expires first.
#[test]
fn linux_timer_restarts_when_the_first_unacknowledged_segment_is_resent() {
    for flavour in [RtoFlavour::Rfc6298, RtoFlavour::Linux] {
        let c = TcpConfig {
            prr: true,
            min_rto_s: 0.2,
            granularity_s: 0.001,
            rto_flavour: flavour,
            ..rack_cfg(10)
        };
        let mut n = Net::new(&c, 3000 * MSS, &[]);
        n.one_way = Duration::from_millis(100);
        n.lose_twice.insert(2000 * MSS);
        n.run_until(Instant::from_secs(30));
        assert!(n.s.is_done());
        let st = n.s.stats().clone();
        if flavour == RtoFlavour::Rfc6298 {
            // The timer from the last cumulative ACK expires before RACK sees the second loss.
            assert!(st.timeouts >= 1, "{st:?}");
            continue;
        }
        assert_eq!(st.timeouts, 0, "{st:?}");
        let copies: Vec<usize> = (0..n.sent.len())
            .filter(|&i| n.sent[i].1 == 2000 * MSS)
            .collect();
        assert_eq!(copies.len(), 3, "{st:?}");
        for &i in &copies[1..] {
            let (t, timer) = (n.sent[i].0, n.timer_after[i].unwrap());
            let left = timer.saturating_since(t).as_secs_f64();
            assert!(left > 0.39, "{left} s left after a repair");
        }
        let rto = n.s.rto().rto().as_secs_f64();
        assert!(
            (0.39..0.45).contains(&rto),
            "RTO {rto} s: SRTT + 200 ms and a little"
        );
    }
}

/// Linux's `tcp_clean_rtx_queue`: in a recovery the cumulative ACK stands still while SACKs
/// come in; those of data sent before the head's repair restart the retransmission timer (the
/// repair waits behind that data), those of data sent after it do not. Found at validate's 10
/// Mbit/s, 200 ms, 2% bursts-of-4 point (CUBIC, seed 3): a slow start filled the 1000-packet
/// queue, the head's repair sat behind half a second of it, and the timer armed at the repair
/// (RTO 0.53 s then) expired 19 ms before the repair's ACK came back, where the kernel, on the
/// same link and losses, had no timeout. Here segment 0 is lost; SACKs of 1-3 start the
/// recovery and 0 is resent at 102 ms; SACKs of 4-9, sent at 0, come at 150 ms and push the
/// timer to 150 ms + RTO; a SACK of data sent after the repair does not push it again.
#[test]
fn sacks_of_data_sent_before_the_repair_restart_the_linux_timer() {
    let c = TcpConfig {
        prr: true,
        min_rto_s: 0.2,
        granularity_s: 0.001,
        rto_flavour: RtoFlavour::Linux,
        ..rack_cfg(10)
    };
    let mut s = Sender::new(&c, 1_000_000);
    let w = 1 << 20;
    let sack = |s: &mut Sender, t: u64, hi: u64| {
        s.handle_ack(
            Instant::from_millis(t),
            &ack_with(0, Some((MSS, hi * MSS)), w),
        );
    };
    assert_eq!(sent_at(&mut s, 0), (0..10).collect::<Vec<_>>());
    sack(&mut s, 100, 2);
    sack(&mut s, 101, 3);
    sack(&mut s, 102, 4);
    assert!(s.in_recovery());
    let repair = sent_at(&mut s, 102);
    assert_eq!(repair.first(), Some(&0), "{repair:?}");
    let rto = s.rto_now();
    let at_repair = Instant::from_millis(102) + rto;
    assert_eq!(s.deadline, Some(at_repair));
    sack(&mut s, 150, 10);
    let pushed = Instant::from_millis(150) + s.rto_now();
    assert_eq!(
        s.deadline,
        Some(pushed),
        "SACKs of 4-9, sent before the repair"
    );
    let after = sent_at(&mut s, 150);
    assert!(!after.is_empty(), "new data goes out in the recovery");
    // A SACK of what was sent at 150 ms (after the repair) leaves the timer where it is.
    let k = *after.last().unwrap();
    s.handle_ack(
        Instant::from_millis(260),
        &ack_with(0, Some((MSS, (k + 1) * MSS)), w),
    );
    assert_eq!(s.deadline, Some(pushed));
    // The old deadline passes without a timeout.
    s.handle_timeout(at_repair);
    assert_eq!(s.stats().timeouts, 0);
}

#[test]
fn socket_buffers_bound_the_window() {
    for (snd, rcv) in [(5 * MSS, 1 << 20), (1 << 20, 3 * MSS)] {
        let mut c = cfg(Variant::Reno, 1);
        c.send_buffer_bytes = snd;
        c.recv_buffer_bytes = rcv;
        let mut n = Net::new(&c, 200 * MSS, &[]);
        n.run_until(Instant::from_secs(60));
        assert_eq!(n.r.rcv_nxt(), 200 * MSS);
        assert_eq!(n.max_flight, snd.min(rcv));
        // Window-limited: one buffer per round trip, so about 200/k round trips of 100 ms.
        let rounds = n.done_at.unwrap().as_nanos() as f64 / 100e6;
        let k = (snd.min(rcv) / MSS) as f64;
        assert!(rounds >= 200.0 / k && rounds <= 200.0 / k + 6.0, "{rounds}");
    }
}

#[test]
fn an_ack_for_unsent_data_is_counted_not_obeyed() {
    let mut s = Sender::new(&cfg(Variant::Sack, 2), 10 * MSS);
    while s.poll_transmit(Instant::ZERO).is_some() {}
    let mut a = Segment {
        ack: 9 * MSS,
        flags: ACK,
        window: 1 << 20,
        ..Segment::default()
    };
    s.handle_ack(Instant::ZERO, &a);
    assert_eq!((s.stats().bad_acks, s.snd_una()), (1, 0));
    a.ack = 0;
    a.sack = [(u64::MAX - 5, u64::MAX), (7, 3), (0, 1 << 40)];
    a.sack_len = 3;
    s.handle_ack(Instant::ZERO, &a);
    assert_eq!(s.snd_una(), 0);
}

fn ack_with(n: u64, sack: Option<(u64, u64)>, window: u64) -> Segment {
    let mut a = Segment {
        ack: n,
        flags: ACK,
        window,
        ..Segment::default()
    };
    if let Some(b) = sack {
        a.sack[0] = b;
        a.sack_len = 1;
    }
    a
}

/// The segment numbers the sender sends at `t` ms, until it has nothing more to send.
fn sent_at(s: &mut Sender, t: u64) -> Vec<u64> {
    let at = Instant::from_millis(t);
    std::iter::from_fn(|| s.poll_transmit(at).map(|x| x.seq / MSS)).collect()
}

/// What the sender sends after one ACK: 'N' new data, 'R' a retransmission, counted.
fn sends_after(s: &mut Sender, t: Instant, a: &Segment) -> (usize, usize) {
    let hi = s.snd_max();
    s.handle_ack(t, a);
    let (mut n, mut r) = (0, 0);
    while let Some(x) = s.poll_transmit(t) {
        if x.seq < hi {
            r += 1;
        } else {
            n += 1;
        }
    }
    (n, r)
}

/// RFC 6937 §3.1, first example, through the whole sender: 20 segments out, segment 0 lost,
/// limited transmit on (RFC 3042), ssthresh = 10. The ACKs of segments 1-19 arrive (with SACK
/// blocks for `sack`, as plain duplicates for `newreno`). With PRR: a new segment on each of
/// the first two (limited transmit), the retransmission on the third, then one new segment on
/// every second ACK, as the RFC's table shows (see `prr.rs` for its last columns); RFC 6675
/// alone sends nothing until pipe falls below cwnd = ssthresh, then one per ACK ("half RTT
/// silence"). Recovery ends on the ACK of the retransmission with cwnd = ssthresh.
#[test]
fn prr_spreads_the_window_reduction_over_the_round_trip() {
    let prr_row = "NNR.N.N.N.N.N.N.N..";
    for variant in [Variant::Sack, Variant::NewReno] {
        for prr in [true, false] {
            let c = TcpConfig {
                prr,
                limited_transmit: true,
                ..cfg(variant, 20)
            };
            let mut s = Sender::new(&c, 1_000_000);
            let t = Instant::ZERO;
            while s.poll_transmit(t).is_some() {}
            let mut row = String::new();
            for k in 1..=19u64 {
                let sack = (variant == Variant::Sack).then_some((MSS, (k + 1) * MSS));
                let (n, r) = sends_after(&mut s, t, &ack_with(0, sack, 1 << 20));
                row.push(match (n, r) {
                    (0, 0) => '.',
                    (1, 0) => 'N',
                    (0, 1) => 'R',
                    _ => '?',
                });
                if k == 3 {
                    assert_eq!(s.ssthresh(), 10 * MSS, "{variant:?}: RFC 5681 eq. (4)");
                }
            }
            if prr {
                assert_eq!(row, prr_row, "{variant:?} with PRR");
                assert_eq!(s.stats().prr_sent, 8, "R + 7 N in recovery");
            } else if variant == Variant::Sack {
                // cwnd = ssthresh = 10, pipe 18 after the retransmission: silence, then one
                // new segment per ACK once pipe is below 10 (limited-transmit segments count).
                assert_eq!(row, "NNR.........NNNNNNN", "RFC 6675");
            }
            // The ACK of the retransmission covers everything sent before recovery.
            let end = s.snd_max();
            s.handle_ack(t, &ack_with(22 * MSS, None, 1 << 20));
            assert!(
                s.snd_una() < end && !s.in_recovery(),
                "{variant:?} prr={prr}"
            );
            if prr {
                assert_eq!(
                    s.cwnd(),
                    s.ssthresh(),
                    "RFC 6937: cwnd = ssthresh at the end"
                );
            }
        }
    }
}

/// RFC 6937 §3.1, second example: segments 0-14 of 20 lost, so only the ACKs of 15-19 come.
/// Recovery starts on the ACK of 17 with pipe = 4, far below ssthresh = 10: PRR-SSRB then
/// sends DeliveredData + 1 SMSS = 2 segments per ACK (all retransmissions), so pipe grows
/// 4, 5, 6 (slow start within recovery) instead of RFC 6675's burst of 7 on one ACK.
#[test]
fn prr_ssrb_slow_starts_when_pipe_is_below_ssthresh() {
    for prr in [true, false] {
        let c = TcpConfig {
            prr,
            limited_transmit: true,
            ..cfg(Variant::Sack, 20)
        };
        let mut s = Sender::new(&c, 1_000_000);
        let t = Instant::ZERO;
        while s.poll_transmit(t).is_some() {}
        let mut out = Vec::new();
        for k in 15..=19u64 {
            let a = ack_with(0, Some((15 * MSS, (k + 1) * MSS)), 1 << 20);
            out.push(sends_after(&mut s, t, &a));
        }
        if prr {
            assert_eq!(out, [(1, 0), (1, 0), (0, 2), (0, 2), (0, 2)]);
        } else {
            assert_eq!(
                out[2],
                (0, 6),
                "RFC 6675: cwnd - pipe = 10 - 4 segments on one ACK"
            );
        }
    }
}

fn rack_cfg(iw: u32) -> TcpConfig {
    TcpConfig {
        rack: true,
        ..cfg(Variant::Sack, iw)
    }
}

/// RFC 8985 §6.2: with three segments in flight and the first lost only two duplicate ACKs
/// come (no limited transmit), so DupThresh never triggers and the classic SACK sender waits for its RTO. RACK
/// marks the segment lost once a segment sent after it is SACKed and RACK.rtt + reo_wnd
/// has passed: when the SACK arrives that time is still ahead, so the reordering timer is
/// armed, fires (§6.3), marks the loss and starts a fast recovery.
#[test]
fn rack_repairs_a_loss_two_duplicates_cannot_trigger() {
    for rack in [false, true] {
        let c = TcpConfig {
            rack,
            ..cfg(Variant::Sack, 3)
        };
        let mut n = Net::new(&c, 10 * MSS, &[0]);
        n.run_until(Instant::from_secs(30));
        assert!(n.s.is_done());
        let st = n.s.stats().clone();
        if rack {
            assert_eq!((st.timeouts, st.rack_recoveries), (0, 1), "{st:?}");
            assert!(
                st.reorder_timeouts >= 1 && st.rack_marked_lost == 1,
                "{st:?}"
            );
        } else {
            assert_eq!(st.timeouts, 1, "{st:?}");
        }
    }
}

/// RFC 8985 §6.2: reordering shorter than reo_wnd (min_RTT / 4) is not loss. Ten segments
/// go out at 0; segment 0's ACK at 100 ms gives min_RTT = 100 ms (reo_wnd 25 ms); segment
/// 2's SACK at 101 ms makes RACK.rtt 101 ms and finds segment 1 missing: not lost before
/// 0 + 101 + 25 ms, so the timer is armed for then. If segment 1 arrives at 110 ms nothing is
/// retransmitted; if it never arrives, the timer marks it lost at 126 ms and it is resent.
#[test]
fn rack_tolerates_reordering_within_reo_wnd_and_its_timer_marks_the_loss() {
    for arrives in [true, false] {
        let mut s = Sender::new(&rack_cfg(10), 1_000_000);
        while s.poll_transmit(Instant::ZERO).is_some() {}
        let w = 1 << 20;
        s.handle_ack(Instant::from_millis(100), &ack_with(MSS, None, w));
        while s.poll_transmit(Instant::from_millis(100)).is_some() {}
        let t1 = Instant::from_millis(101);
        s.handle_ack(t1, &ack_with(MSS, Some((2 * MSS, 3 * MSS)), w));
        assert_eq!(s.poll_transmit(t1).map(|x| x.seq), None, "within reo_wnd");
        assert_eq!(
            s.poll_timeout(),
            Some(Instant::from_millis(126)),
            "reorder timer"
        );
        s.handle_timeout(Instant::from_millis(125));
        assert_eq!(s.stats().rack_marked_lost, 0, "nothing due yet");
        if arrives {
            let t2 = Instant::from_millis(110);
            s.handle_ack(t2, &ack_with(3 * MSS, None, w));
            while s.poll_transmit(t2).is_some() {}
            s.handle_timeout(Instant::from_millis(126));
            let st = s.stats();
            assert_eq!(
                (st.retransmits, st.rack_marked_lost, st.fast_retransmits),
                (0, 0, 0)
            );
        } else {
            let t2 = Instant::from_millis(126);
            s.handle_timeout(t2);
            assert_eq!(s.stats().reorder_timeouts, 1);
            assert_eq!(s.stats().rack_marked_lost, 1);
            assert!(s.in_recovery());
            assert_eq!(
                s.poll_transmit(t2).map(|x| x.seq),
                Some(MSS),
                "the lost segment"
            );
        }
    }
}

/// Linux's `tcp_rack_reo_timeout` in a recovery already under way: segments 2-5 are lost,
/// 2 and 3 sent at 0, 4 and 5 at 100 ms; the SACK of 6 and 7 (sent at 101 ms) at 201 ms marks
/// 2 and 3 lost at once and starts the recovery, and arms the reordering timer for 4 and 5
/// (sent within RACK.rtt + reo_wnd of it). When the timer marks them at 225 ms, they leave the
/// flight, and the room they free under the window of the last PRR step resends lost
/// segments then, not at an ACK that, with the rest of the flight lost, would not come.
#[test]
fn the_reordering_timer_in_a_recovery_resends_what_it_marks() {
    let c = TcpConfig {
        prr: true,
        ..rack_cfg(4)
    };
    let mut s = Sender::new(&c, 1_000_000);
    let w = 1 << 20;
    assert_eq!(sent_at(&mut s, 0), [0, 1, 2, 3]);
    s.handle_ack(Instant::from_millis(100), &ack_with(MSS, None, w));
    assert_eq!(sent_at(&mut s, 100), [4, 5]);
    s.handle_ack(Instant::from_millis(101), &ack_with(2 * MSS, None, w));
    assert_eq!(sent_at(&mut s, 101), [6, 7]);
    s.handle_ack(
        Instant::from_millis(201),
        &ack_with(2 * MSS, Some((6 * MSS, 8 * MSS)), w),
    );
    assert!(s.in_recovery());
    assert_eq!(s.stats().rack_marked_lost, 2, "2 and 3");
    assert_eq!(sent_at(&mut s, 201), [2]);
    assert_eq!(
        s.poll_timeout(),
        Some(Instant::from_millis(225)),
        "4 and 5 due"
    );
    s.handle_timeout(Instant::from_millis(225));
    assert_eq!(s.stats().rack_marked_lost, 4);
    // The window of the last PRR step is 3 (4 and 5 in flight, one more to send: 2); now 2
    // alone is in flight, so two of the lost go at once.
    assert_eq!(sent_at(&mut s, 225), [3, 4], "resent at the timer");
    assert_eq!(s.stats().timeouts, 0);
}

/// RFC 8985 §7: the last segment of a transfer is lost, so no later segment can be SACKed
/// and neither DupThresh nor RACK can see it. The classic sender waits for the RTO (1 s
/// here); the probe timeout (2 SRTT + WCDelAckT = 400 ms after the last ACK, one segment
/// being in flight) retransmits the last segment and the transfer ends 0.6 s sooner, with no
/// timeout.
#[test]
fn a_lost_last_segment_is_repaired_by_a_tail_loss_probe() {
    let mut done = Vec::new();
    for rack in [false, true] {
        let c = TcpConfig {
            rack,
            ..cfg(Variant::Sack, 20)
        };
        let mut n = Net::new(&c, 20 * MSS, &[19]);
        n.run_until(Instant::from_secs(30));
        assert!(n.s.is_done());
        let st = n.s.stats().clone();
        if rack {
            assert_eq!(
                (st.timeouts, st.tlp_probes, st.retransmits),
                (0, 1, 1),
                "{st:?}"
            );
        } else {
            assert_eq!(st.timeouts, 1, "{st:?}");
        }
        done.push(n.done_at.unwrap());
    }
    assert_eq!(
        done[1],
        Instant::from_millis(600),
        "ACKs at 100, probe at 500 ms"
    );
    assert!(done[1] + Duration::from_millis(500) < done[0], "{done:?}");
}

/// RFC 8985 §7.4: a probe that retransmitted the last segment repaired a loss if the
/// cumulative ACK later passes it with no sign the original arrived; then the window is
/// reduced as for a fast recovery. If instead a duplicate ACK without SACK blocks follows
/// (the receiver already held the segment: the original was only late; this model has no
/// DSACK), the probe was needless and the window stays.
#[test]
fn tlp_loss_detection_reduces_the_window_only_for_a_repaired_loss() {
    for original_arrived in [false, true] {
        let mut s = Sender::new(&rack_cfg(10), 40 * MSS);
        while s.poll_transmit(Instant::ZERO).is_some() {}
        // ACK of 0-8 at 100 ms, with a window closed to the data outstanding: no new data.
        let t = Instant::from_millis(100);
        s.handle_ack(t, &ack_with(9 * MSS, None, MSS));
        assert!(s.poll_transmit(t).is_none());
        // One segment in flight: PTO = 2 SRTT + WCDelAckT (200 ms) = 400 ms.
        let pto = s.poll_timeout().unwrap();
        assert_eq!(pto, t + Duration::from_millis(400));
        s.handle_timeout(pto);
        let probe = s.poll_transmit(pto).expect("a probe");
        assert_eq!(
            probe.seq,
            9 * MSS,
            "the last segment again (no new data allowed)"
        );
        assert_eq!(s.stats().tlp_probes, 1);
        assert!(
            s.poll_timeout().unwrap() > pto + Duration::from_millis(900),
            "RTO re-armed"
        );
        let ss0 = s.ssthresh();
        let t2 = pto + Duration::from_millis(100);
        s.handle_ack(t2, &ack_with(10 * MSS, None, 1 << 20));
        while s.poll_transmit(t2).is_some() {}
        if original_arrived {
            s.handle_ack(t2, &ack_with(10 * MSS, None, 1 << 20));
        }
        let t3 = t2 + Duration::from_millis(100);
        s.handle_ack(t3, &ack_with(11 * MSS, None, 1 << 20));
        if original_arrived {
            assert_eq!((s.stats().tlp_recoveries, s.ssthresh()), (0, ss0));
        } else {
            assert_eq!(s.stats().tlp_recoveries, 1);
            assert!(s.ssthresh() < ss0, "window reduced");
        }
    }
}

#[test]
fn prr_and_rack_name_the_variants_they_need() {
    let bad = |prr, rack, variant| {
        TcpConfig {
            prr,
            rack,
            ..cfg(variant, 1)
        }
        .validate()
        .err()
        .map(|e| e.0)
    };
    assert_eq!(bad(true, false, Variant::Reno), Some("prr"));
    assert_eq!(bad(true, false, Variant::NewReno), None);
    assert_eq!(bad(false, true, Variant::NewReno), Some("rack"));
    assert_eq!(bad(true, true, Variant::Sack), None);
    // Off by default: the 004/003/001 reproductions keep the classic algorithms.
    let d = TcpConfig::default();
    assert!(!d.prr && !d.rack);
}

mod random_loss {
    use super::*;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Every variant, with or without delayed ACKs, delivers the whole stream exactly over
    /// any seeded pattern of data and ACK losses (any transmission may be lost), and the
    /// sender's bookkeeping stays consistent throughout.
    fn transfer(variant: Variant, delack: bool, loss: f64, seed: u64) -> Result<(), TestCaseError> {
        transfer_with(cfg(variant, 2), delack, loss, seed)
    }

    fn transfer_with(
        mut c: TcpConfig,
        delack: bool,
        loss: f64,
        seed: u64,
    ) -> Result<(), TestCaseError> {
        c.delayed_ack = delack;
        c.recv_buffer_bytes = 30 * MSS;
        let total = 150 * MSS + 123;
        let mut s = Sender::new(&c, total);
        let mut r = Receiver::new(&c);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let one_way = Duration::from_millis(20);
        let mut q: Vec<(Instant, bool, Segment)> = Vec::new();
        let mut now = Instant::ZERO;
        for _ in 0..200_000 {
            while let Some(seg) = s.poll_transmit(now) {
                // Zero-length segments only with the handshake: SYN, lone FIN, pure ACK.
                prop_assert!(seg.len > 0 || c.handshake);
                prop_assert!(seg.len == 0 || seg.end() <= total);
                prop_assert!(
                    seg.end() <= s.snd_una() + 30 * MSS,
                    "beyond the receive window"
                );
                if !rng.gen_bool(loss) {
                    q.push((now + one_way, true, seg));
                }
            }
            while let Some(a) = r.poll_transmit(now) {
                if !rng.gen_bool(loss) {
                    q.push((now + one_way, false, a));
                }
            }
            prop_assert!(s.snd_una() <= s.snd_max() && s.cwnd() >= MSS);
            if s.is_done() {
                prop_assert_eq!(r.rcv_nxt(), total);
                prop_assert_eq!(s.stats().bad_acks, 0);
                return Ok(());
            }
            let next = q
                .iter()
                .map(|e| e.0)
                .chain(s.poll_timeout())
                .chain(r.poll_timeout())
                .min()
                .expect("a stalled connection has no timer");
            now = next;
            // Deliver one due item at a time (in queue order: a FIFO path).
            if let Some(i) = q.iter().position(|e| e.0 <= now) {
                let (_, to_r, seg) = q.remove(i);
                if to_r {
                    r.handle_segment(now, &seg);
                } else {
                    s.handle_ack(now, &seg);
                }
            }
            s.handle_timeout(now);
            r.handle_timeout(now);
        }
        prop_assert!(false, "did not finish");
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn any_losses_deliver_the_whole_stream(
            v in 0usize..3,
            delack: bool,
            loss in 0.0f64..0.3,
            seed: u64,
        ) {
            let variant = [Variant::Reno, Variant::NewReno, Variant::Sack][v];
            transfer(variant, delack, loss, seed)?;
        }

        /// The same with PRR and RACK-TLP in every combination they allow.
        #[test]
        fn any_losses_deliver_the_whole_stream_with_prr_and_rack(
            v in 0usize..4,
            delack: bool,
            loss in 0.0f64..0.3,
            seed: u64,
        ) {
            let (variant, prr, rack) = [
                (Variant::NewReno, true, false),
                (Variant::Sack, true, false),
                (Variant::Sack, false, true),
                (Variant::Sack, true, true),
            ][v];
            let c = TcpConfig { prr, rack, ..cfg(variant, 2) };
            transfer_with(c, delack, loss, seed)?;
        }

        /// The same for a Linux-like sender (docs/transports.md): the handshake and FIN
        /// (RFC 9293) and timestamps (RFC 7323) wrapped around CUBIC, PRR and RACK-TLP, so the
        /// probe and reordering timers also run behind the connection state.
        #[test]
        fn any_losses_deliver_the_whole_stream_linux_like(
            delack: bool,
            loss in 0.0f64..0.3,
            seed: u64,
        ) {
            let c = TcpConfig {
                prr: true,
                rack: true,
                handshake: true,
                timestamps: true,
                limited_transmit: true,
                congestion_control: crate::tcp::WindowGrowth::Cubic,
                ..cfg(Variant::Sack, 10)
            };
            transfer_with(c, delack, loss, seed)?;
        }
    }
}
