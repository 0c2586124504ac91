//! Tests of the queue disciplines.

use super::*;
use crate::streams::stream;
use proptest::prelude::*;

fn cfg(d: Discipline, packets: Option<usize>, bytes: Option<usize>) -> QueueConfig {
    QueueConfig {
        discipline: d,
        packets,
        bytes,
        aqm: AqmParams::default(),
    }
}

fn q(c: &QueueConfig) -> Queue<Vec<u8>> {
    Queue::new(c, stream(1, "test.queue"))
}

/// An IPv4/UDP packet of `len` bytes from source port `port`, sequence `seq` in the payload
/// (headers written by mslink-wire, as every crate builds them).
fn udp(len: usize, port: u16, seq: u32) -> Vec<u8> {
    use mslink_wire::{ipv4, udp};
    let mut p = vec![0u8; len.max(32)];
    let ip = ipv4::Ipv4Repr {
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        protocol: 17,
        ttl: 64,
        tos: 0,
        ident: 0,
        dont_frag: false,
        reserved_flag: false,
        payload_len: p.len() - 20,
    };
    ip.emit(&mut ipv4::Ipv4Packet::new_unchecked(&mut p[..]));
    let u = udp::UdpRepr {
        src_port: port,
        dst_port: 5001,
        payload_len: p.len() - 28,
        checksum: 0,
    };
    u.emit(&mut udp::UdpPacket::new_unchecked(&mut p[20..]));
    p[28..32].copy_from_slice(&seq.to_be_bytes());
    p
}

fn seq(p: &[u8]) -> u32 {
    u32::from_be_bytes(p[28..32].try_into().unwrap())
}

fn t_us(us: u64) -> Instant {
    Instant::from_micros(us)
}

#[test]
fn drop_tail_and_drop_head_in_packets_and_bytes() {
    let mut t = q(&cfg(Discipline::Droptail, Some(2), None));
    for k in 0..3 {
        t.enqueue(Instant::ZERO, udp(100, 1, k));
    }
    assert_eq!(seq(&t.dequeue(Instant::ZERO).unwrap().item), 0);
    assert_eq!(t.stats().dropped_tail, 1);
    let mut h = q(&cfg(Discipline::Drophead, Some(2), None));
    for k in 0..3 {
        h.enqueue(Instant::ZERO, udp(100, 1, k));
    }
    // The oldest made room: 1 and 2 remain.
    assert_eq!(seq(&h.dequeue(Instant::ZERO).unwrap().item), 1);
    assert_eq!(h.stats().dropped_head, 1);
    let mut hb = q(&cfg(Discipline::Drophead, None, Some(1500)));
    hb.enqueue(Instant::ZERO, udp(1000, 1, 0));
    hb.enqueue(Instant::ZERO, udp(600, 1, 1));
    assert_eq!((hb.len(), hb.bytes(), hb.stats().dropped_head), (1, 600, 1));
    hb.enqueue(Instant::ZERO, udp(1600, 1, 2));
    // Too large on its own: refused at the tail, nothing evicted for it.
    assert_eq!((hb.stats().dropped_tail, hb.len()), (1, 1));
    let mut tb = q(&cfg(Discipline::Droptail, None, Some(1500)));
    tb.enqueue(Instant::ZERO, udp(1000, 1, 0));
    tb.enqueue(Instant::ZERO, udp(501, 1, 1));
    tb.enqueue(Instant::ZERO, udp(500, 1, 2));
    assert_eq!((tb.bytes(), tb.stats().dropped_bytes), (1500, 501));
}

/// Feeds a queue at `in_pps` and serves it at `out_pps` for `secs`, with `size`-byte
/// packets; returns the queue.
fn run(c: &QueueConfig, in_pps: u64, out_pps: u64, secs: u64) -> Queue<Vec<u8>> {
    let mut q = q(c);
    let (din, dout) = (1_000_000 / in_pps, 1_000_000 / out_pps);
    let (mut next_in, mut next_out) = (0u64, 0u64);
    let mut k = 0;
    while next_in.min(next_out) < secs * 1_000_000 {
        if next_in <= next_out {
            q.enqueue(t_us(next_in), udp(1000, 1, k));
            k += 1;
            next_in += din;
        } else {
            q.dequeue(t_us(next_out));
            next_out += dout;
        }
    }
    q
}

#[test]
fn codel_does_not_drop_below_target_or_within_one_interval() {
    let c = cfg(Discipline::Codel, None, None);
    // A queue of 4 ms sojourn forever: below the 5 ms target, never a drop.
    let mut q = q(&c);
    for k in 0..4 {
        q.enqueue(Instant::ZERO, udp(1000, 1, k));
    }
    let mut t = 0;
    for k in 4..10_000u32 {
        t += 1000;
        q.enqueue(t_us(t), udp(1000, 1, k));
        q.dequeue(t_us(t));
    }
    assert_eq!(q.stats().dropped, 0);
    // Twenty packets at 0, then one in and one out every ms: the head's sojourn reaches
    // the 5 ms target at 5 ms and climbs to 20 ms. CoDel may drop only a whole interval
    // later (RFC 8289 §4.3): not at 104 ms, but at 105 ms.
    let mut q = q_from(&c);
    for k in 0..20 {
        q.enqueue(Instant::ZERO, udp(1000, 1, k));
    }
    for ms in 1..=106u32 {
        q.enqueue(t_us(ms as u64 * 1000), udp(1000, 1, 100 + ms));
        q.dequeue(t_us(ms as u64 * 1000));
        let expect = u64::from(ms >= 105);
        assert_eq!(q.stats().dropped_aqm, expect, "at {ms} ms");
    }
}

fn q_from(c: &QueueConfig) -> Queue<Vec<u8>> {
    q(c)
}

#[test]
fn codel_holds_a_standing_queue_of_unresponsive_overload() {
    // Arrivals at 1100 pps, service at 1000 pps for 20 s, no limit: drop-tail's queue (and
    // delay) grows without bound; CoDel raises its drop rate by the sqrt law until it
    // matches the 10% excess and the queue stays short.
    let mut q = q(&cfg(Discipline::Codel, None, None));
    let mut first_drop = None;
    let (mut next_in, mut next_out) = (0u64, 0u64);
    let mut k = 0;
    while next_in.min(next_out) < 20_000_000 {
        if next_in <= next_out {
            q.enqueue(t_us(next_in), udp(1000, 1, k));
            k += 1;
            next_in += 909;
        } else {
            q.dequeue(t_us(next_out));
            if q.stats().dropped > 0 && first_drop.is_none() {
                first_drop = Some(next_out);
            }
            next_out += 1000;
        }
    }
    let s = q.stats();
    assert!(s.dropped_aqm > 0 && s.dropped == s.dropped_aqm);
    // Not before the sojourn passed 5 ms (after ~55 ms) and stayed there an interval.
    assert!(first_drop.unwrap() >= 155_000, "{first_drop:?}");
    // The drops absorbed the excess (~100/s): what is left queued is a fraction of it.
    assert!(q.len() < 150, "{} queued", q.len());
    let median = s.sojourn.quantile_s(0.5);
    assert!(median < 0.05, "median {median}");
    assert_eq!(s.arrived, s.dequeued + s.dropped + q.len() as u64);
}

#[test]
fn codel_spacing_shrinks_with_count() {
    // A queue that is always long: every drop in one dropping state, spaced by the control
    // law interval/sqrt(count).
    let mut q = q(&cfg(Discipline::Codel, None, None));
    for k in 0..200_000 {
        q.enqueue(Instant::ZERO, udp(100, 1, k));
    }
    let mut times = Vec::new();
    let mut t = 0;
    let mut last = 0;
    // Serve one packet every 100 µs for 2 s.
    while t < 2_000_000 {
        q.dequeue(t_us(t));
        if q.stats().dropped > last {
            for _ in last..q.stats().dropped {
                times.push(t);
            }
            last = q.stats().dropped;
        }
        t += 100;
    }
    assert!(times.len() > 10, "{times:?}");
    // The gap before drop k+1 is ~100 ms / sqrt(k) (to the 100 µs service grid).
    for k in 1..times.len().min(40) {
        let gap = (times[k] - times[k - 1]) as f64;
        let law = 100_000.0 / (k as f64).sqrt();
        assert!(
            (gap - law).abs() <= 200.0,
            "drop {k}: gap {gap} µs vs {law}"
        );
    }
}

#[test]
fn pie_probability_rises_under_overload_and_decays_when_drained() {
    let c = cfg(Discipline::Pie, None, None);
    let mut q = run(&c, 1500, 1000, 5);
    let p_loaded = q.drop_probability();
    assert!(p_loaded > 0.1, "p {p_loaded}");
    assert!(q.stats().dropped_aqm > 0);
    // Held near the 15 ms target (mean sojourn well below what 50% overload builds).
    let mean = q.stats().sojourn.mean_s();
    assert!(mean < 0.06, "mean sojourn {mean}");
    // Drain: no arrivals for a few seconds, then light load.
    let mut t = 5_000_000;
    while !q.is_empty() {
        q.dequeue(t_us(t));
        t += 1000;
    }
    for k in 0..3000 {
        t += 2000;
        q.enqueue(t_us(t), udp(1000, 2, k));
        q.dequeue(t_us(t));
    }
    let p_after = q.drop_probability();
    assert!(
        p_after < p_loaded / 10.0,
        "drop probability {p_loaded} -> {p_after}"
    );
}

#[test]
fn pie_allows_a_burst() {
    // 100 packets at once into an idle PIE: the burst allowance takes them all.
    let mut q = q(&cfg(Discipline::Pie, None, None));
    for k in 0..100 {
        q.enqueue(t_us(k as u64 * 10), udp(1000, 1, k));
    }
    assert_eq!(q.stats().dropped, 0);
}

#[test]
fn fq_codel_isolates_a_sparse_flow() {
    // A bulk flow at twice the 1000 pps service rate and a sparse one at 10 pps; with a
    // FIFO the sparse flow waits behind the bulk backlog, with FQ-CoDel it goes first.
    let sparse_delay = |d: Discipline| {
        let mut q = q(&cfg(d, Some(1000), None));
        let mut worst = Duration::ZERO;
        let mut sum = 0.0;
        let mut n = 0;
        let (mut t_bulk, mut t_sparse, mut t_out) = (0u64, 0u64, 0u64);
        let mut k = 0;
        while t_out < 5_000_000 {
            let next = t_bulk.min(t_sparse).min(t_out);
            if next == t_bulk {
                q.enqueue(t_us(t_bulk), udp(1000, 1, k));
                t_bulk += 500;
            } else if next == t_sparse {
                q.enqueue(t_us(t_sparse), udp(100, 2, k));
                t_sparse += 100_000;
            } else {
                if let Some(e) = q.dequeue(t_us(t_out)) {
                    if e.len == 100 && t_out > 1_000_000 {
                        let d = t_us(t_out).saturating_since(e.enqueued);
                        worst = worst.max(d);
                        sum += d.as_secs_f64();
                        n += 1;
                    }
                }
                t_out += 1000;
            }
            k += 1;
        }
        let s = q.stats();
        assert_eq!(s.arrived, s.dequeued + s.dropped + q.len() as u64);
        (worst, sum / n as f64)
    };
    let (fifo_worst, fifo_mean) = sparse_delay(Discipline::Droptail);
    let (fq_worst, fq_mean) = sparse_delay(Discipline::FqCodel);
    assert!(fifo_mean > 0.5, "drop-tail sparse delay {fifo_mean}");
    assert!(
        fq_worst <= Duration::from_millis(2),
        "fq_codel {fq_worst:?}"
    );
    assert!(fq_mean < fifo_mean / 100.0, "{fq_mean} vs {fifo_mean}");
    let _ = fifo_worst;
}

#[test]
fn fq_codel_overflow_drops_from_the_fattest_flow() {
    let mut q = q(&cfg(Discipline::FqCodel, Some(10), None));
    for k in 0..10 {
        q.enqueue(Instant::ZERO, udp(1000, 1, k));
    }
    q.enqueue(Instant::ZERO, udp(100, 2, 100));
    // The sparse packet stays; the bulk flow's oldest packet went.
    assert_eq!(q.stats().dropped_overflow, 1);
    let out: Vec<u32> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
        .map(|e| seq(&e.item))
        .collect();
    assert!(out.contains(&100) && !out.contains(&0), "{out:?}");
}

#[test]
fn flow_hash_is_keyed_and_reads_ports() {
    let a = udp(100, 1, 0);
    let b = udp(200, 1, 9);
    let c = udp(100, 2, 0);
    assert_eq!(flow_hash(&a, 7), flow_hash(&b, 7), "same 5-tuple");
    assert_ne!(flow_hash(&a, 7), flow_hash(&c, 7));
    assert_ne!(flow_hash(&a, 7), flow_hash(&a, 8));
    // Not IP: still a hash, no panic.
    let _ = flow_hash(&[1, 2, 3], 1);
    let _ = flow_hash(&[], 1);
}

#[test]
fn validation_names_the_key() {
    let mut c = cfg(Discipline::Codel, Some(0), None);
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .contains("queue_packets"));
    c.packets = None;
    c.aqm.interval_ms = -1.0;
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .contains("aqm.interval_ms"));
    c.aqm = AqmParams {
        flows: 0,
        ..AqmParams::default()
    };
    assert!(c.validate().unwrap_err().to_string().contains("aqm.flows"));
    assert_eq!(Discipline::parse("fq_codel"), Some(Discipline::FqCodel));
    assert_eq!(Discipline::parse("red"), None);
    let t: QueueConfig = toml::from_str("discipline = 'fq_codel'\npackets = 10").unwrap();
    assert_eq!(t.discipline, Discipline::FqCodel);
}

#[test]
fn sojourn_quantiles() {
    let mut s = SojournStats::default();
    for ms in 1..=100u64 {
        s.record(Duration::from_millis(ms));
    }
    let m = s.quantile_s(0.5);
    assert!((m / 0.050 - 1.0).abs() < 0.2, "{m}");
    assert_eq!(s.max_ns, 100_000_000);
}

proptest! {
    #[test]
    fn every_discipline_conserves_packets(
        d in proptest::sample::select(vec![Discipline::Droptail, Discipline::Drophead, Discipline::Codel, Discipline::Pie, Discipline::FqCodel]),
        limit in 1usize..30,
        ops in proptest::collection::vec((any::<bool>(), 40usize..1600, 0u64..20_000, 0u16..4), 0..400),
    ) {
        let mut q = q(&cfg(d, Some(limit), Some(20_000)));
        let mut t = 0;
        for (push, len, dt, port) in ops {
            t += dt;
            if push { q.enqueue(t_us(t), udp(len, port, 0)); } else { q.dequeue(t_us(t)); }
            prop_assert!(q.len() <= limit && q.bytes() <= 20_000);
            let s = q.stats();
            prop_assert_eq!(s.arrived, s.dequeued + s.dropped + q.len() as u64);
            prop_assert_eq!(s.dropped, s.dropped_tail + s.dropped_head + s.dropped_aqm + s.dropped_overflow);
        }
        while q.dequeue(t_us(t)).is_some() { t += 1; }
        prop_assert_eq!(q.bytes(), 0);
    }
}
