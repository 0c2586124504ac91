//! scenarios/aqm/standing_queue.toml, every sweep point (issue 17): four bulk TCP transfers and
//! a ping through a 10 Mbit/s bottleneck whose queue is drop-tail, CoDel, PIE or FQ-CoDel with
//! 100, 400 or 1600 packets of buffer. Drop-tail's standing queue grows with the buffer; the
//! AQMs hold the median queue delay near their targets whatever the buffer, at the same
//! throughput; every dropped packet is counted by cause.

use mslink_sim::{run, Scenario};

struct Point {
    queue: String,
    buffer: usize,
    median_s: f64,
    throughput_bps: f64,
    ping_rtt_s: f64,
}

fn points() -> Vec<Point> {
    let sc = Scenario::parse(include_str!("../../../scenarios/aqm/standing_queue.toml")).unwrap();
    let mut out = Vec::new();
    for sets in sc.sweep_points().unwrap() {
        let s = sc.with_overrides(&sets).unwrap();
        s.validate().unwrap();
        let r = run(&s, 0, &mut |_| Err(std::io::Error::other("no traces"))).unwrap();
        let d = &r.segments[0].directions[0];
        let q = &d.queue;
        assert_eq!(d.queue_drops, q.dropped, "{sets:?}");
        assert_eq!(
            q.dropped,
            q.dropped_tail + q.dropped_head + q.dropped_aqm + q.dropped_overflow,
            "{sets:?}"
        );
        let bulk: f64 = r
            .flows
            .iter()
            .filter(|f| f.app == "ftp")
            .map(|f| f.throughput_bps)
            .sum();
        let ping = r.flows.iter().find(|f| f.app == "ping").unwrap();
        let seg = &s.segments[0];
        out.push(Point {
            queue: format!("{:?}", seg.queue.unwrap_or_default()).to_lowercase(),
            buffer: seg.queue_packets.unwrap(),
            median_s: q.sojourn.quantile_s(0.5),
            throughput_bps: bulk,
            ping_rtt_s: ping.delay_mean_s,
        });
    }
    out
}

#[test]
fn aqm_holds_the_median_queue_delay_near_target_while_drop_tails_grows_with_the_buffer() {
    let pts = points();
    assert_eq!(pts.len(), 12);
    for p in &pts {
        eprintln!(
            "{:9} {:5} packets: median queue delay {:7.1} ms, bulk {:.2} Mbit/s, ping {:.1} ms",
            p.queue,
            p.buffer,
            p.median_s * 1e3,
            p.throughput_bps / 1e6,
            p.ping_rtt_s * 1e3
        );
    }
    let of = |q: &str| -> Vec<&Point> { pts.iter().filter(|p| p.queue == q).collect() };
    let tail = of("droptail");
    assert_eq!(tail.len(), 3);
    // Drop-tail: the buffer fills, so the delay grows with it (1600 packets of 1500 bytes at
    // 10 Mbit/s: 1.9 s when full).
    assert!(tail.windows(2).all(|w| w[1].median_s > 2.0 * w[0].median_s));
    assert!(tail[2].median_s > 0.5, "{}", tail[2].median_s);
    for (q, target) in [("codel", 0.005), ("pie", 0.015), ("fqcodel", 0.005)] {
        let a = of(q);
        assert_eq!(a.len(), 3, "{q}");
        for (p, t) in a.iter().zip(&tail) {
            // Near target (within a factor of 4: the median is to a quarter octave and the
            // control laws hover around it) whatever the buffer ...
            assert!(
                p.median_s < 4.0 * target,
                "{q} at {}: {}",
                p.buffer,
                p.median_s
            );
            // ... below drop-tail's at every buffer, with the link as busy.
            assert!(p.median_s < t.median_s / 3.0, "{q} at {}", p.buffer);
            assert!(p.throughput_bps > 0.8e7, "{q}: {}", p.throughput_bps);
        }
    }
    // FQ-CoDel gives the ping its own queue: its round trip is the path's 40 ms plus little.
    for p in of("fqcodel") {
        assert!(p.ping_rtt_s < 0.045, "{}", p.ping_rtt_s);
    }
}
