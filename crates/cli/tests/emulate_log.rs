//! `mslink emulate --uplink-log/--downlink-log` and `mslink graph`, end to end in real network
//! namespaces (run as root, as CI does; with `MSLINK_REQUIRE_ROOT=1` a missing privilege fails
//! the test instead of skipping it).
//!
//! A UDP stream faster than the link crosses a small drop-tail queue; the per-packet logs are
//! checked against the emulator's own counters (arrivals = packets read, departures = packets
//! and bytes delivered, drops = every drop before the air, capacity = the rate over the run,
//! and arrivals = departures + drops + the losses after it), and `mslink graph` turns the
//! uplink log into a PNG and an SVG whose JSON figures agree with the log. A second run drops
//! packets at a full service queue: they have `d` lines too.
//! `common::emulate` checks the exit status, the accounting and that no device is left behind.

mod common;

use std::path::Path;

use common::{emulate, mslink, scratch, skip_without_root};
use serde_json::Value;

/// (`+` count, `+` bytes, `-` count, `-` bytes, `d` packets, `d` bytes, `#` bytes) of a log.
fn totals(path: &Path) -> [u64; 7] {
    let text = std::fs::read_to_string(path).unwrap();
    let mut t = [0u64; 7];
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<u64> = l
            .split(' ')
            .filter_map(|x| x.parse().ok())
            .collect::<Vec<_>>();
        match l.split(' ').nth(1) {
            Some("+") => {
                t[0] += 1;
                t[1] += f[1];
            }
            Some("-") => {
                t[2] += 1;
                t[3] += f[1];
                assert!(f[0] >= f[2], "a departure before its arrival: {l}");
            }
            Some("d") => {
                t[4] += f[1];
                t[5] += f[2];
            }
            Some("#") => t[6] += f[1],
            _ => panic!("{}: unexpected line {l:?}", path.display()),
        }
    }
    t
}

/// Checks the log at `path` against direction `dir` of the summary `v` (`json`: its name under
/// `link_logs`): arrivals, departures, every drop before the air in `d` lines, and the whole
/// reconciliation; returns the log's totals.
fn check_log(path: &Path, v: &Value, dir: &str, json: &str) -> [u64; 7] {
    let file = path.display();
    let p = &v[dir]["packets"];
    let n = |k: &str| p[k].as_u64().unwrap();
    let t = totals(path);
    assert_eq!(t[0], n("received"), "{file}: arrivals");
    assert_eq!(t[1], n("received_bytes"), "{file}: arrival bytes");
    assert_eq!(t[2], n("delivered"), "{file}: departures");
    assert_eq!(t[3], n("delivered_bytes"), "{file}: departure bytes");
    let before_air = n("dropped_queue")
        + n("refused_malformed")
        + n("refused_too_large")
        + n("dropped_service_queue")
        + n("dropped_outage");
    assert_eq!(t[4], before_air, "{file}: drops ({p})");
    // Every packet of the log is accounted for: a `-`, a `d`, or a cause after the air.
    assert_eq!(
        t[0],
        t[2] + t[4] + n("lost_channel") + n("abandoned") + n("write_failed") + n("in_flight"),
        "{file}: {p}"
    );
    // The summary reports the same totals, and every departure found its arrival.
    let l = &v["link_logs"][json];
    assert_eq!(l["departure_bytes"].as_u64().unwrap(), t[3]);
    assert_eq!(l["arrivals"].as_u64().unwrap(), t[0]);
    assert_eq!(l["drops"].as_u64().unwrap(), t[4], "{l}");
    assert_eq!(l["drop_bytes"].as_u64().unwrap(), t[5], "{l}");
    assert_eq!(l["unmatched_departures"], 0, "{l}");
    assert_eq!(l["capacity_bytes"].as_u64().unwrap(), t[6]);
    t
}

#[test]
fn link_logs_match_the_counters_and_graph_draws_them() {
    if skip_without_root() {
        return;
    }
    let d = scratch("linklog");
    // 1000 datagrams of 1200 bytes at 1000/s (9.6 Mbit/s of IP) into a 5 Mbit/s link with a
    // 20-packet queue: about half are dropped by the queue.
    let v = emulate(
        &d,
        &[
            "--set",
            "rate_bps=5e6",
            "--set",
            "delay_ms=10",
            "--queue-packets",
            "20",
            "--seed",
            "1",
            "--uplink-log",
            "logs/up.log",
            "--downlink-log",
            "logs/down.log",
            "--pair",
            "--until",
            "both",
            "--right",
            "python3 traffic.py udp-server 7003 recv.txt 1.0",
            "--left",
            "sleep 0.5; python3 traffic.py udp-client $MSLINK_RIGHT 7003 1000 1200 1000",
        ],
    );
    for (file, dir, json) in [
        ("logs/up.log", "left_to_right", "uplink"),
        ("logs/down.log", "right_to_left", "downlink"),
    ] {
        let path = d.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(&format!(
                "# mahimahi mm-link ({}link) [5000000 bit/s] > {file}\n",
                if json == "uplink" { "Up" } else { "Down" }
            )),
            "{}",
            &text[..200.min(text.len())]
        );
        assert!(text.contains("\n# queue: droptail [packets=20]\n"));
        assert!(text.contains("\n# base timestamp: 0\n"));
        let t = check_log(&path, &v, dir, json);
        assert_eq!(t[4], v[dir]["packets"]["dropped_queue"].as_u64().unwrap());
        assert_eq!(t[5], v[dir]["queue"]["dropped_bytes"].as_u64().unwrap());
        // Capacity: 625 bytes per ms, for every millisecond of the run written.
        assert_eq!(t[6] % 625, 0);
    }
    let up = totals(&d.join("logs/up.log"));
    // The stream overran the queue, and the queue's drops are in the log.
    assert!(up[4] > 100, "drops {}", up[4]);
    assert!(up[2] > 300, "departures {}", up[2]);

    for figure in ["up.png", "figs/up.svg"] {
        let o = mslink()
            .args([
                "graph",
                "logs/up.log",
                "-o",
                figure,
                "--window",
                "100",
                "--json",
            ])
            .current_dir(&*d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let g: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(g["counts"]["departure_bytes"].as_u64().unwrap(), up[3]);
        assert_eq!(g["counts"]["drops"].as_u64().unwrap(), up[4]);
        assert_eq!(g["skipped_lines"], 0);
        // The link was full: departures ran at the capacity while the stream lasted.
        let util = g["utilization"].as_f64().unwrap();
        assert!(util > 0.3 && util <= 1.0, "utilization {util}");
        let bytes = std::fs::read(d.join(figure)).unwrap();
        if figure.ends_with(".png") {
            let dec = png::Decoder::new(std::io::Cursor::new(bytes));
            let r = dec.read_info().unwrap();
            assert_eq!((r.info().width, r.info().height), (960, 1200));
        } else {
            let text = String::from_utf8(bytes).unwrap();
            roxmltree::Document::parse(&text).unwrap();
            assert!(text.contains("per-packet delay"));
        }
    }
}

#[test]
fn every_drop_before_the_air_has_a_d_line() {
    if skip_without_root() {
        return;
    }
    let d = scratch("linklog-svcq");
    // Selective repeat with a window of 4 frames and room for 4 more SDUs over 10 ms each way:
    // at most 4 frames per 20 ms round trip, against 1000 datagrams a second. The link end's
    // service queue overflows (the hop feeds it a packet whenever it has no frame to send, so
    // the queue in front of it stays short): before, these drops had a `+` line and nothing
    // else.
    let v = emulate(
        &d,
        &[
            "--set",
            "rate_bps=5e6",
            "--set",
            "delay_ms=10",
            "--scheme",
            "selective_repeat",
            "--set",
            "link.service.0.window=4",
            "--set",
            "link.service.0.queue_limit=4",
            "--queue-packets",
            "20",
            "--seed",
            "1",
            "--uplink-log",
            "up.log",
            "--pair",
            "--until",
            "both",
            "--right",
            "python3 traffic.py udp-server 7003 recv.txt 1.0",
            "--left",
            "sleep 0.5; python3 traffic.py udp-client $MSLINK_RIGHT 7003 500 1200 1000",
        ],
    );
    let p = &v["left_to_right"]["packets"];
    assert!(p["dropped_service_queue"].as_u64().unwrap() > 10, "{p}");
    let t = check_log(&d.join("up.log"), &v, "left_to_right", "uplink");
    // The drops' bytes: 1228-byte IP packets (1200 bytes of UDP payload).
    assert_eq!(t[5], 1228 * t[4]);
}

/// Malformed logs: an error naming the file and line (no panic, no figure); `--lenient` skips
/// and says how many. Needs no root.
#[test]
fn graph_names_the_bad_line_and_skips_only_when_asked() {
    let d = std::env::temp_dir().join(format!("mslink-graph-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("bad.log"),
        "# base timestamp: 10\n10 # 1504\n11 + 1500\n12 - 1500 x\n13 - 1500 3\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        mslink()
            .arg("graph")
            .args(args)
            .current_dir(&d)
            .output()
            .unwrap()
    };
    let o = run(&["bad.log", "-o", "bad.png"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("bad.log:4: delay"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(!d.join("bad.png").exists());
    let o = run(&["bad.log", "-o", "bad.svg", "--lenient"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("skipped 1 malformed line of bad.log (the first: bad.log:4:"),
        "{e}"
    );
    assert!(d.join("bad.svg").exists());
    let o = run(&["bad.log", "-o", "bad.jpg"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("give a file ending in .png or .svg"));
    let o = run(&["missing.log", "-o", "m.png"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read missing.log"));
    let _ = std::fs::remove_dir_all(&d);
}

/// Captures and link logs are flushed every second while the emulator runs, so they are
/// readable, packets and lines up to the last second, after SIGKILL (issue 34): the pcap files
/// parse to their last whole record, the log has its arrivals.
#[test]
fn captures_and_logs_are_readable_after_sigkill() {
    if skip_without_root() {
        return;
    }
    let d = scratch("sigkill");
    let mut child = mslink()
        .current_dir(&*d)
        .args([
            "emulate",
            "--set",
            "delay_ms=5",
            "--pcap-left",
            "left.pcap",
            "--pcap-link",
            "link.pcap",
            "--uplink-log",
            "up.log",
            "--pair",
            "--right",
            "python3 traffic.py udp-server 7003 recv.txt 60",
            "--left",
            // 20 small datagrams a second: far less than any buffer holds, so only the timed
            // flushes put them in the files before the kill.
            "sleep 0.5; python3 traffic.py udp-client $MSLINK_RIGHT 7003 100000 200 20",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _stderr = common::wait_ready(&mut child);
    // Half a second of set-up, then about three seconds of traffic (some 60 datagrams).
    std::thread::sleep(std::time::Duration::from_millis(3500));
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
    }
    child.wait().unwrap();
    // Whatever the SIGKILL left of the emulator's namespaces goes with its processes.
    for (file, least) in [("left.pcap", 30), ("link.pcap", 30)] {
        let bytes = std::fs::read(d.join(file)).unwrap();
        let mut r =
            pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut n = 0;
        // The last record may be cut short by the kill: every one before it parses.
        while let Some(Ok(_)) = r.next_packet() {
            n += 1;
        }
        assert!(n >= least, "{file}: {n} packets");
    }
    let log = std::fs::read_to_string(d.join("up.log")).unwrap();
    let arrivals = log.lines().filter(|l| l.contains(" + ")).count();
    assert!(arrivals >= 30, "up.log: {arrivals} arrivals");
}
