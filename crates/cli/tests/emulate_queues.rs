//! Queue disciplines and delay models of `mslink emulate` in real namespaces (issue 17): a UDP
//! overload through a 10 Mbit/s link with a big buffer, under drop-tail and the AQMs, and
//! jitter with and without reordering. Needs root (fails, not skips, under
//! MSLINK_REQUIRE_ROOT=1). Assertions are on the emulator's own counters and the receiver's
//! packet numbers and one-way delays, never on how long a run took.

mod common;

use common::{emulate, read_counters, scratch, skip_without_root};
use serde_json::Value;

/// 1340 datagrams/s of 1000 bytes (1028 on the wire: 11.0 Mbit/s) for 6 s from right to left
/// through a 10 Mbit/s hop whose queue holds 2000 packets under `queue`.
fn overload(queue: &str) -> (Value, std::collections::BTreeMap<String, u64>) {
    let d = scratch(&format!("queue-{queue}"));
    let v = emulate(
        &d,
        &[
            "--set",
            "rate_bps=10e6",
            "--queue",
            queue,
            "--queue-packets",
            "2000",
            "--seed",
            "1",
            "--pair",
            "--until",
            "both",
            "--left",
            "python3 traffic.py udp-server 7010 recv.txt 1.5",
            "--right",
            "sleep 0.5; python3 traffic.py udp-client $MSLINK_LEFT 7010 8040 1000 1340 sent.txt",
        ],
    );
    let mut c = read_counters(&d.join("recv.txt"));
    c.insert("sent".into(), read_counters(&d.join("sent.txt"))["sent"]);
    (v, c)
}

fn median_s(v: &Value) -> f64 {
    let s = &v["right_to_left"]["queue"]["sojourn"];
    let count = s["count"].as_u64().unwrap();
    let rank = count.div_ceil(2).max(1);
    let mut seen = 0;
    for (k, n) in s["histogram"].as_array().unwrap().iter().enumerate() {
        seen += n.as_u64().unwrap();
        if seen >= rank {
            return 2f64.powf((k as f64 + 0.5) / 4.0) * 1e-6;
        }
    }
    unreachable!("rank within count")
}

#[test]
fn aqm_keeps_queue_delay_well_below_drop_tails_and_counts_every_drop() {
    if skip_without_root() {
        return;
    }
    let mut medians = Vec::new();
    for queue in ["droptail", "codel", "pie", "fq_codel"] {
        let (v, recv) = overload(queue);
        let dir = &v["right_to_left"];
        let q = &dir["queue"];
        let n = |k: &str| q[k].as_u64().unwrap();
        // Every drop has a cause, and the hop's count is the queue's.
        assert_eq!(
            n("dropped"),
            n("dropped_tail") + n("dropped_head") + n("dropped_aqm") + n("dropped_overflow"),
            "{queue}: {q}"
        );
        assert_eq!(dir["packets"]["dropped_queue"], q["dropped"], "{queue}");
        // What the receiver got plus what the queue dropped is what was sent (the link itself
        // is lossless here and the hop drained).
        assert_eq!(
            recv["distinct"] + n("dropped"),
            recv["sent"],
            "{queue}: {recv:?} {q}"
        );
        let m = median_s(&v);
        eprintln!(
            "{queue}: queue delay median {:.1} ms, drops {} (aqm {}, tail {})",
            m * 1e3,
            n("dropped"),
            n("dropped_aqm"),
            n("dropped_tail")
        );
        if queue != "droptail" {
            assert!(n("dropped_aqm") > 0, "{queue}: {q}");
        } else {
            assert_eq!(n("dropped"), 0, "the buffer is big enough: {q}");
        }
        medians.push((queue, m));
    }
    let tail = medians[0].1;
    // 1 Mbit/s of excess for 6 s: drop-tail's queue grows to ~0.6 s.
    assert!(tail > 0.2, "drop-tail median {tail}");
    for (queue, m) in &medians[1..] {
        assert!(*m < tail / 3.0, "{queue}: median {m} vs drop-tail's {tail}");
    }
}

/// 1000 datagrams at 500/s through 20 ms ± `jitter` (uniform) with or without reordering.
fn jitter(reorder: &str) -> std::collections::BTreeMap<String, u64> {
    let d = scratch(&format!("jitter{reorder}"));
    emulate(
        &d,
        &[
            "--set",
            "delay_ms=20",
            "--jitter",
            "5",
            "--jitter-dist",
            "uniform",
            reorder,
            "--seed",
            "2",
            "--pair",
            "--until",
            "both",
            "--left",
            "python3 traffic.py udp-server 7011 recv.txt 1.0",
            "--right",
            "sleep 0.5; python3 traffic.py udp-client $MSLINK_LEFT 7011 1000 200 500",
        ],
    );
    read_counters(&d.join("recv.txt"))
}

#[test]
fn jitter_spreads_the_delay_and_reorders_only_when_asked() {
    if skip_without_root() {
        return;
    }
    let kept = jitter("--no-reorder");
    let mixed = jitter("--reorder");
    eprintln!("in order: {kept:?}\nreordered: {mixed:?}");
    for c in [&kept, &mixed] {
        assert_eq!(c["distinct"], 1000);
        // Uniform ±8.7 ms around 20 ms: the one-way delays spread over more than 8 ms, and
        // none is below the jitter's floor (20 - 8.7 ms).
        assert!(c["delay_max_us"] - c["delay_min_us"] > 8_000, "{c:?}");
        assert!(c["delay_min_us"] >= 11_000, "{c:?}");
    }
    assert_eq!(kept["reordered"], 0);
    // 2 ms apart with ±8.7 ms of jitter: many packets overtake.
    assert!(mixed["reordered"] > 100, "{mixed:?}");
}
