//! On/off outages of `mslink emulate` in real namespaces (issue 34): in drop mode, as
//! Mahimahi's `mm-onoff`, exactly the packets that arrive while the link is off are lost, in
//! the direction asked for only; in queue mode (the default) an outage loses nothing. Needs
//! root (fails, not skips, under MSLINK_REQUIRE_ROOT=1). Assertions are on the emulator's
//! counters, its per-packet link log and the receiver's packet numbers, never on how long a
//! run took.

mod common;

use common::{emulate, read_counters, scratch, skip_without_root};
use serde_json::Value;

/// 100 ms on, 100 ms off, fixed periods from the emulator's start: the link is off at `t` ms
/// exactly when `t mod 200 >= 100`.
const ONOFF: &str = "100,100,fixed";

/// 800 datagrams of 200 bytes at 400/s from right to left (the downlink), with `words` added
/// to `--onoff`; returns the summary, the receiver's counters and the downlink's log.
fn run(name: &str, words: &str) -> (Value, std::collections::BTreeMap<String, u64>, String) {
    let d = scratch(&format!("onoff-{name}"));
    let onoff = format!("{ONOFF},{words}");
    let v = emulate(
        &d,
        &[
            "--onoff",
            &onoff,
            "--seed",
            "1",
            "--downlink-log",
            "down.log",
            "--pair",
            "--until",
            "both",
            "--left",
            "python3 traffic.py udp-server 7020 recv.txt 1.5",
            "--right",
            "sleep 0.5; python3 traffic.py udp-client $MSLINK_LEFT 7020 800 200 400 sent.txt",
        ],
    );
    let mut c = read_counters(&d.join("recv.txt"));
    c.insert("sent".into(), read_counters(&d.join("sent.txt"))["sent"]);
    let log = std::fs::read_to_string(d.join("down.log")).unwrap();
    (v, c, log)
}

/// Arrivals (`T + BYTES` lines) of a link log whose millisecond falls in an off period, and in
/// all. A log's times are truncated milliseconds since the emulator's clock started, the same
/// clock the outage process runs on, so `T mod 200 >= 100` is "arrived while off".
fn arrivals(log: &str) -> (u64, u64) {
    let (mut off, mut all) = (0, 0);
    for line in log.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split_whitespace();
        let (Some(t), Some("+")) = (f.next(), f.next()) else {
            continue;
        };
        let t: u64 = t.parse().unwrap();
        all += 1;
        off += u64::from(t % 200 >= 100);
    }
    (off, all)
}

#[test]
fn drop_mode_loses_exactly_what_arrives_while_off_in_its_direction_only() {
    if skip_without_root() {
        return;
    }
    let (v, recv, log) = run("drop", "drop,downlink");
    let p = |dir: &str, k: &str| v[dir]["packets"][k].as_u64().unwrap();
    let dropped = p("right_to_left", "dropped_outage");
    let (off, all) = arrivals(&log);
    assert_eq!(all, p("right_to_left", "received"), "{log}");
    // Every packet that arrived in an off period was dropped, and no other.
    assert_eq!(dropped, off, "{}", v["right_to_left"]["packets"]);
    // About half the time is off: the sender's 2 s span ten outages.
    assert!(
        dropped * 10 > all * 3 && dropped * 10 < all * 7,
        "{dropped} of {all}"
    );
    // The rest crossed (the link is otherwise lossless and unlimited).
    assert_eq!(recv["distinct"] + dropped, recv["sent"], "{recv:?}");
    // The uplink has no outages: its packets (the receiver's kernel's, if any) all crossed.
    assert_eq!(p("left_to_right", "dropped_outage"), 0);
    assert_eq!(p("left_to_right", "dropped_queue"), 0);
}

#[test]
fn queue_mode_holds_what_arrives_while_off_and_loses_nothing() {
    if skip_without_root() {
        return;
    }
    let (v, recv, log) = run("queue", "queue");
    let (off, all) = arrivals(&log);
    assert!(off * 10 > all * 3, "{off} of {all}: some arrived while off");
    assert_eq!(v["right_to_left"]["packets"]["dropped_outage"], 0);
    assert_eq!(recv["distinct"], recv["sent"], "{recv:?}");
}
