//! The live view of `mslink emulate` (issue 17): `--live` with standard error to a file
//! prints plain lines, per direction the counters and per class (link service) and direction
//! the throughput, loss, queue delay and retransmissions. Over a short run of 004's WLAN link
//! (`links/wlan.toml`: TCP on selective repeat, UDP on OOS RLP) carrying both, the lines name
//! both classes in both directions, their counters never go down, stay within the final
//! JSON's per-class counts, and their throughputs add up to the bytes the JSON says were
//! delivered. Without `--live` and without a terminal, no view is drawn. Linux, root.
#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use common::{check_accounting, mslink, scratch, skip_without_root};
use serde_json::Value;

/// One class line of the view.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    t_s: f64,
    mbps: f64,
    lost: u64,
    accepted: u64,
    retx: u64,
}

/// Class lines by (direction, "name (scheme)"), in order; panics on a line it cannot read.
fn parse(text: &str) -> BTreeMap<(String, String), Vec<Row>> {
    let mut out: BTreeMap<(String, String), Vec<Row>> = BTreeMap::new();
    for l in text.lines() {
        let Some(rest) = l.strip_prefix('[') else {
            continue;
        };
        let (t, body) = rest.split_once("s] ").expect(l);
        let t_s: f64 = t.trim().parse().expect(l);
        // The counters line starts at once; class lines are indented.
        let Some(body) = body.strip_prefix("  ") else {
            continue;
        };
        let w: Vec<&str> = body.split_whitespace().collect();
        let dir = w[0].to_string();
        let class = format!("{} {}", w[1], w[2]);
        let at = |word: &str| w.iter().position(|x| *x == word).expect(l);
        let mbps: f64 = w[at("Mbit/s") - 1].parse().expect(l);
        let of = at("of");
        let lost: u64 = w[of - 1].trim_start_matches('(').parse().expect(l);
        let accepted: u64 = w[of + 1].trim_end_matches(')').parse().expect(l);
        let retx: u64 = w[at("retx") + 1].parse().expect(l);
        let pct: f64 = w[at("loss") + 1].trim_end_matches('%').parse().expect(l);
        if accepted > 0 {
            assert!(
                (pct - lost as f64 * 100.0 / accepted as f64).abs() < 0.01,
                "{l}"
            );
        }
        out.entry((dir, class)).or_default().push(Row {
            t_s,
            mbps,
            lost,
            accepted,
            retx,
        });
    }
    out
}

#[test]
fn live_lines_name_both_classes_and_agree_with_the_final_summary() {
    if skip_without_root() {
        return;
    }
    let d = scratch("live");
    let link = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../links/wlan.toml");
    let err = std::fs::File::create(d.join("stderr.txt")).unwrap();
    let status = mslink()
        .args(["emulate", "--pair", "--live", "--stats-interval", "0.5", "--until", "both"])
        .arg("--link")
        .arg(&link)
        .args(["--out", "out"])
        .args([
            "--left",
            "python3 traffic.py tcp-server 7101 tcp.txt & python3 traffic.py udp-server 7102 udp.txt 1.5; wait",
            "--right",
            "sleep 0.5; python3 traffic.py tcp-client $MSLINK_LEFT 7101 2.5 tcpc.txt & python3 traffic.py udp-client $MSLINK_LEFT 7102 500 500 200; wait",
        ])
        .current_dir(&*d)
        .stderr(err)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    let text = std::fs::read_to_string(d.join("stderr.txt")).unwrap();
    assert!(status.success(), "{text}");
    assert!(!text.contains('\x1b'), "a file gets plain lines:\n{text}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/summary.json")).unwrap())
            .unwrap();
    check_accounting(&v);
    let rows = parse(&text);
    for (dir, key) in [("L->R", "left_to_right"), ("R->L", "right_to_left")] {
        for (k, class) in ["tcp (selective_repeat)", "udp (oos_rlp)"]
            .iter()
            .enumerate()
        {
            let r = rows
                .get(&(dir.to_string(), class.to_string()))
                .unwrap_or_else(|| panic!("no {dir} {class} line in:\n{text}"));
            assert!(r.len() >= 4, "{dir} {class}: {r:?}");
            for w in r.windows(2) {
                assert!(w[1].t_s > w[0].t_s, "{w:?}");
                assert!(
                    w[1].accepted >= w[0].accepted
                        && w[1].lost >= w[0].lost
                        && w[1].retx >= w[0].retx,
                    "{dir} {class}: counters went down: {w:?}"
                );
            }
            let last = r.last().unwrap();
            let f = &v[key]["services"][k];
            assert_eq!(
                format!(
                    "{} ({})",
                    f["name"].as_str().unwrap(),
                    f["scheme"].as_str().unwrap()
                ),
                *class
            );
            let n = |x: &str| f[x].as_u64().unwrap();
            assert!(
                last.accepted <= n("accepted"),
                "{dir} {class}: {last:?} vs {f}"
            );
            assert!(
                last.lost <= n("lost_channel") + n("abandoned"),
                "{dir} {class}: {last:?} vs {f}"
            );
            assert!(
                last.retx <= n("retransmissions"),
                "{dir} {class}: {last:?} vs {f}"
            );
            // Each frame's Mbit/s is the bytes delivered since the previous frame over the
            // interval: summed over the frames they give the bytes delivered by the last
            // one, which comes after the traffic (the UDP server waits 1.5 s idle).
            let mut prev_t = 0.0;
            let bytes: f64 = r
                .iter()
                .map(|x| {
                    let b = x.mbps * 1e6 / 8.0 * (x.t_s - prev_t);
                    prev_t = x.t_s;
                    b
                })
                .sum();
            let fin = n("delivered_bytes") as f64;
            assert!(
                bytes <= fin * 1.01 + 2000.0 && bytes >= fin * 0.9,
                "{dir} {class}: the view's throughputs add up to {bytes:.0} bytes, the summary says {fin}"
            );
        }
    }
    // Traffic went where it was sent: both flows right to left, bulk TCP with the most bytes
    // and the UDP stream's 500 datagrams all offered to its class (the queue has no limit).
    let udp = &v["right_to_left"]["services"][1];
    assert_eq!(
        udp["accepted"].as_u64().unwrap() + udp["refused"].as_u64().unwrap(),
        500,
        "{udp}"
    );
    assert!(
        v["right_to_left"]["services"][0]["delivered_bytes"]
            .as_u64()
            .unwrap()
            > 200_000
    );

    // Not a terminal and no --live: no view.
    let out = mslink()
        .args(["emulate", "--no-nat", "--", "sleep", "1.2"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("Mbit/s"), "{text}");
}
