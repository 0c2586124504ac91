//! The handshake, the FIN exchange and timestamps, end to end over a loopback with a fixed
//! one-way delay; every segment goes through `emit` and `parse`, so the sequence-space
//! conventions of the wire are exercised too.

use super::super::super::receiver::Receiver;
use super::super::super::segment::{self, Endpoints, Segment, ACK, FIN, SYN};
use super::super::Sender;
use crate::tcp::{TcpConfig, Variant};
use mslink_link::{Duration, Instant};

const MSS: u64 = 1000;

fn cfg(handshake: bool, timestamps: bool) -> TcpConfig {
    TcpConfig {
        variant: Variant::NewReno,
        mss: MSS as u32,
        initial_window: 4,
        granularity_s: 0.0,
        send_buffer_bytes: 1 << 20,
        recv_buffer_bytes: 1 << 20,
        handshake,
        timestamps,
        ..TcpConfig::default()
    }
}

type Loss = Box<dyn FnMut(bool, &Segment) -> bool>;

struct Link {
    s: Sender,
    r: Receiver,
    now: Instant,
    one_way: Duration,
    /// (arrival, to the receiver?, wire bytes), in arrival order.
    q: Vec<(Instant, bool, Vec<u8>)>,
    /// Whether to lose a segment (to the receiver?, segment).
    drop: Loss,
    /// Every segment sent: (time, to the receiver?, segment).
    log: Vec<(Instant, bool, Segment)>,
    ends: Endpoints,
}

impl Link {
    fn new(c: &TcpConfig, total: u64, drop: Loss) -> Link {
        Link {
            s: Sender::new(c, total),
            r: Receiver::new(c),
            now: Instant::ZERO,
            one_way: Duration::from_millis(50),
            q: Vec::new(),
            drop,
            log: Vec::new(),
            ends: Endpoints {
                src: [10, 0, 0, 1],
                dst: [10, 0, 0, 2],
                sport: 40000,
                dport: 5001,
                dscp: 0,
                shift: c.window_shift(),
            },
        }
    }

    fn send(&mut self, to_r: bool, seg: Segment) {
        self.log.push((self.now, to_r, seg));
        if (self.drop)(to_r, &seg) {
            return;
        }
        let mut e = self.ends;
        if !to_r {
            (e.src, e.dst, e.sport, e.dport) = (e.dst, e.src, e.dport, e.sport);
        }
        let mut p = Vec::new();
        segment::emit(&seg, &e, &mut p);
        assert_eq!(p.len(), segment::packet_len(&seg));
        let at = self.now + self.one_way;
        let i = self.q.partition_point(|x| x.0 <= at);
        self.q.insert(i, (at, to_r, p));
    }

    fn drain(&mut self) {
        while let Some(seg) = self.s.poll_transmit(self.now) {
            self.send(true, seg);
        }
        while let Some(seg) = self.r.poll_transmit(self.now) {
            self.send(false, seg);
        }
    }

    /// Runs until `stop` holds or nothing is left to happen.
    fn run_until(&mut self, mut stop: impl FnMut(&Link) -> bool) {
        self.drain();
        for _ in 0..100_000 {
            if stop(self) {
                return;
            }
            let next = [
                self.q.first().map(|x| x.0),
                self.s.poll_timeout(),
                self.r.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(t) = next else { return };
            self.now = t;
            if self.q.first().is_some_and(|x| x.0 <= t) {
                let (_, to_r, p) = self.q.remove(0);
                let w = segment::parse(&p).expect("our own segment parses");
                if to_r {
                    self.r
                        .handle_segment(t, &w.to_segment(self.r.rcv_nxt(), 0, self.ends.shift));
                } else {
                    let seg = w.to_segment(0, self.s.snd_una(), self.ends.shift);
                    self.s.handle_ack(t, &seg);
                }
            } else {
                self.s.handle_timeout(t);
                self.r.handle_timeout(t);
            }
            self.drain();
        }
        panic!("did not settle");
    }

    fn run(&mut self) {
        self.run_until(|_| false);
    }

    fn data_sent(&self) -> Vec<(Instant, Segment)> {
        self.log
            .iter()
            .filter(|x| x.1 && x.2.len > 0)
            .map(|x| (x.0, x.2))
            .collect()
    }
}

fn ms(x: u64) -> Instant {
    Instant::from_millis(x)
}

/// RFC 9293 §3.5: SYN (with MSS, window scale, SACK-permitted off for NewReno), SYN-ACK,
/// and the ACK on the first data segment; no data before the SYN-ACK (one RTT, 100 ms);
/// the handshake's RTT is the first sample (RFC 6298 (2.2)). §3.6: the FIN rides on the
/// last data segment, the receiver ACKs it and closes in the same segment, the sender's
/// ACK closes both ends.
#[test]
fn handshake_then_data_then_fin_exchange() {
    let mut l = Link::new(&cfg(true, false), 5 * MSS, Box::new(|_, _| false));
    l.run();
    let syn = l.log[0];
    assert_eq!((syn.0, syn.1, syn.2.flags), (ms(0), true, SYN));
    let o = syn.2.syn.unwrap();
    assert_eq!((o.mss, o.wscale, o.sack_permitted), (1000, Some(5), false));
    let synack = l.log[1];
    assert_eq!((synack.0, synack.1), (ms(50), false));
    assert_eq!(synack.2.flags, SYN | ACK);
    let data = l.data_sent();
    assert_eq!(data[0].0, ms(100), "data starts when the SYN-ACK arrives");
    assert!(
        data[0].1.flags & ACK != 0,
        "the first data segment completes the handshake"
    );
    assert_eq!(data.len(), 5);
    assert!(data[..4].iter().all(|d| d.1.flags & FIN == 0));
    assert!(
        data[4].1.flags & FIN != 0,
        "FIN rides on the last data segment"
    );
    assert!(l.s.is_done() && l.s.is_closed() && l.r.is_closed());
    assert_eq!(l.s.rto().srtt(), Some(Duration::from_millis(100)));
    // The receiver's FIN and ACK in one segment, acknowledging the FIN (total + 1).
    let rfin: Vec<_> = l
        .log
        .iter()
        .filter(|x| !x.1 && x.2.flags & FIN != 0)
        .collect();
    assert_eq!(rfin.len(), 1);
    assert_eq!(rfin[0].2.ack, 5 * MSS + 1);
    let last = l.log.last().unwrap();
    assert_eq!((last.1, last.2.flags, last.2.ack), (true, ACK, 1));
    assert_eq!(l.s.stats().retransmits + l.s.stats().syn_retransmits, 0);
}

/// RFC 6298 (2.1), (5.5): a lost SYN is resent after the initial RTO, 1 s; (5.7): the RTO is
/// then 3 s when data begins; RFC 5681 §3.1: the initial window is one segment (not 4).
#[test]
fn lost_syn_is_resent_after_one_second_then_rto_three_seconds_and_iw_one() {
    let mut lost = false;
    let drop: Loss = Box::new(move |to_r, s| {
        let hit = to_r && s.flags & SYN != 0 && !lost;
        lost |= hit;
        hit
    });
    let mut l = Link::new(&cfg(true, false), 10 * MSS, drop);
    l.run_until(|l| l.s.is_established());
    let syns: Vec<_> = l
        .log
        .iter()
        .filter(|x| x.2.flags == SYN)
        .map(|x| x.0)
        .collect();
    assert_eq!(syns, vec![ms(0), ms(1000)]);
    assert_eq!(l.s.stats().syn_retransmits, 1);
    l.drain();
    assert_eq!(l.s.rto_now(), Duration::from_secs(3));
    assert_eq!(l.data_sent().len(), 1, "IW = 1 after a lost SYN");
    assert_eq!(l.s.cwnd(), MSS);
    l.run();
    assert!(l.s.is_done() && l.s.is_closed());
}

/// A lost SYN-ACK: the receiver resends it (on the repeated SYN or its own timer), the
/// sender's SYN timer fired, so the RTO is 3 s and IW 1 (RFC 6298 (5.7), RFC 5681 §3.1).
#[test]
fn lost_syn_ack_is_resent_and_the_transfer_completes() {
    let mut lost = false;
    let drop: Loss = Box::new(move |to_r, s| {
        let hit = !to_r && s.flags & SYN != 0 && !lost;
        lost |= hit;
        hit
    });
    let mut l = Link::new(&cfg(true, false), 10 * MSS, drop);
    l.run_until(|l| l.s.is_established());
    // The first (lost), one on the receiver's timer (50 ms + 1 s) and one answering the
    // repeated SYN that arrives at the same moment.
    let synacks = l.log.iter().filter(|x| x.2.flags == SYN | ACK).count();
    assert_eq!(synacks, 3);
    assert_eq!(l.r.stats().synack_retransmits, 1);
    assert_eq!(l.s.stats().syn_retransmits, 1);
    l.drain();
    assert_eq!(l.data_sent().len(), 1);
    assert_eq!(l.s.rto_now(), Duration::from_secs(3));
    l.run();
    assert!(l.s.is_done() && l.s.is_closed() && l.r.is_closed());
    assert_eq!(l.r.rcv_nxt(), 10 * MSS);
}

/// RFC 9293 §3.6 with RFC 6298 timers: with no data the FIN goes alone; lost, it is resent
/// when the RTO expires (the handshake's 100 ms sample gives the minimum RTO, 1 s).
#[test]
fn lone_fin_is_retransmitted_on_the_rto() {
    let mut lost = false;
    let drop: Loss = Box::new(move |to_r, s| {
        let hit = to_r && s.flags & FIN != 0 && !lost;
        lost |= hit;
        hit
    });
    let mut l = Link::new(&cfg(true, false), 0, drop);
    l.run();
    let fins: Vec<_> = l
        .log
        .iter()
        .filter(|x| x.1 && x.2.flags & FIN != 0)
        .map(|x| x.0)
        .collect();
    assert_eq!(fins, vec![ms(100), ms(1100)]);
    assert_eq!(l.s.stats().fin_retransmits, 1);
    assert!(l.s.is_closed() && l.r.is_closed());
}

/// The receiver's FIN (riding on its ACK of the sender's FIN) lost: the receiver resends it
/// on its timer, the sender's timer resends its last segment and FIN; both ends close.
#[test]
fn lost_receiver_fin_is_retransmitted() {
    let mut lost = false;
    let drop: Loss = Box::new(move |to_r, s| {
        let hit = !to_r && s.flags & FIN != 0 && !lost;
        lost |= hit;
        hit
    });
    let mut l = Link::new(&cfg(true, false), 3 * MSS, drop);
    l.run();
    assert_eq!(l.r.stats().fin_retransmits, 1);
    assert!(l.s.is_closed() && l.r.is_closed());
    assert_eq!(l.r.rcv_nxt(), 3 * MSS);
}

/// RFC 7323 §4.1: with timestamps every ACK of new data is an RTT sample (10 segments, an
/// ACK each: 10 samples); Karn's single timed segment gives one per round trip.
#[test]
fn timestamps_sample_every_new_data_ack() {
    let mut l = Link::new(&cfg(false, true), 10 * MSS, Box::new(|_, _| false));
    l.run();
    assert_eq!(l.s.stats().ts_rtt_samples, 10);
    assert_eq!(l.s.stats().rtt_samples, 10);
    assert!(l.log.iter().all(|x| x.2.ts.is_some()));
    let mut k = Link::new(&cfg(false, false), 10 * MSS, Box::new(|_, _| false));
    k.run();
    assert!(k.s.stats().rtt_samples < 5, "{:?}", k.s.stats());
}

/// RFC 7323 §4.1 / RFC 6298 §3: the ACK of a retransmitted segment echoes the TSval of the
/// retransmission, so it is a valid sample (100 ms); under Karn's rule it gives none.
#[test]
fn timestamps_measure_a_retransmitted_segment() {
    for ts in [true, false] {
        let mut lost = false;
        let drop: Loss = Box::new(move |to_r, s| {
            let hit = to_r && s.len > 0 && !lost;
            lost |= hit;
            hit
        });
        let mut c = cfg(false, ts);
        c.initial_window = 1;
        let mut l = Link::new(&c, 2 * MSS, drop);
        l.run_until(|l| l.s.snd_una() > 0);
        assert_eq!(l.s.stats().retransmits, 1);
        if ts {
            assert_eq!(l.s.stats().ts_rtt_samples, 1);
            assert_eq!(l.s.rto().srtt(), Some(Duration::from_millis(100)));
        } else {
            assert_eq!(l.s.stats().rtt_samples, 0, "Karn: no sample");
        }
    }
}

/// With both options on: timestamps are negotiated on the SYNs (both carry them) and every
/// later segment carries them; an ACK echoes the TSval of the segment it acknowledges.
#[test]
fn handshake_negotiates_timestamps() {
    let mut l = Link::new(&cfg(true, true), 4 * MSS, Box::new(|_, _| false));
    l.run();
    assert!(l.s.timestamps() && l.r.timestamps());
    assert!(l.log.iter().all(|x| x.2.ts.is_some()));
    assert_eq!(l.log[0].2.ts.unwrap().ecr, 0, "TSecr 0 on the SYN");
    assert_eq!(
        l.log[1].2.ts.unwrap().ecr,
        0,
        "SYN-ACK echoes the SYN's TSval (0 ms)"
    );
    // The first data segment (100 ms) is ACKed at 150 ms echoing 100.
    let ack = l.log.iter().find(|x| !x.1 && x.0 == ms(150)).unwrap();
    assert_eq!(ack.2.ts.unwrap().ecr, 100);
    assert!(l.s.is_closed());
    // A receiver without timestamps: the sender stops sending them after the SYN-ACK.
    let mut off = cfg(true, false);
    off.timestamps = false;
    let mut m = Link::new(&cfg(true, true), 2 * MSS, Box::new(|_, _| false));
    m.r = Receiver::new(&off);
    m.run();
    assert!(!m.s.timestamps());
    assert!(m.log.iter().skip(1).all(|x| x.2.ts.is_none()));
    assert!(m.s.is_closed());
}
