//! `mslink bench local --quick` runs end to end (server child process, both backends, both
//! wait modes) and produces every table, as JSON and CSV, and every figure as PNG and SVG;
//! with `--reps` every figure carries its 95% interval, `--log` has every round trip, and
//! `--verify` checks every throughput message.

use std::process::Command;

mod figures;

#[test]
fn bench_local_quick_produces_every_table() {
    let dir = std::env::temp_dir().join(format!("mslink-bench-test-{}", std::process::id()));
    let log = dir.join("log/rtt.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_mslink"))
        .args([
            "bench",
            "local",
            "--quick",
            "--sizes",
            "1,64,4096",
            "--iters",
            "50",
            "--warmup",
            "5",
            "--reps",
            "2",
            "--verify",
            "--json",
            "--log",
        ])
        .arg(&log)
        .arg("--csv")
        .arg(&dir)
        .output()
        .expect("run mslink bench");
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    // 2 backends x 2 modes x 3 sizes, plus the plain-socket reference ping-pong.
    assert_eq!(v["pingpong"].as_array().unwrap().len(), 15);
    assert_eq!(v["throughput"].as_array().unwrap().len(), 12);
    assert_eq!(v["rtt_fit"].as_array().unwrap().len(), 5);
    for row in v["pingpong"].as_array().unwrap() {
        let p = |k: &str| row[k].as_f64().unwrap();
        assert!(p("p50_us") > 0.0);
        assert!(p("p50_us") <= p("p90_us") && p("p90_us") <= p("p99_us"));
        assert!(p("p99_us") <= p("p999_us") && p("p999_us") <= p("max_us"));
        // Two runs: every figure has a finite 95% half-width; CPU on both sides.
        assert_eq!(row["reps"], 2);
        for k in [
            "p50_us",
            "p99_us",
            "mean_us",
            "client_cpu_pct",
            "server_cpu_pct",
        ] {
            assert!(
                row["ci95"][k].as_f64().is_some_and(|h| h >= 0.0),
                "{k}: {row}"
            );
        }
        assert!(
            p("client_cpu_us_per_rtt") > 0.0 && p("server_cpu_us_per_rtt") > 0.0,
            "{row}"
        );
    }
    for row in v["throughput"].as_array().unwrap() {
        assert_eq!(row["reps"], 2);
        assert_eq!(
            row["verified_messages"],
            2 * row["messages"].as_u64().unwrap(),
            "{row}"
        );
        assert!(row["ci95"]["mbit_s"].as_f64().is_some(), "{row}");
    }
    for f in v["rtt_fit"].as_array().unwrap() {
        assert!(f["r2"].as_f64().unwrap() <= 1.0, "{f}");
        assert_eq!(f["residuals"].as_array().unwrap().len(), 3, "{f}");
    }
    // --log: every recorded round trip of every run.
    let text = std::fs::read_to_string(&log).expect("--log file");
    let samples = text.lines().skip(1).count();
    assert_eq!(samples, 15 * 2 * 50, "{}", text.lines().next().unwrap());
    assert!(text.starts_with("backend,mode,path,size,rep,seq,rtt_ns\n"));
    let calls: Vec<&str> = v["callcost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["call"].as_str().unwrap())
        .collect();
    for c in [
        "send() 1 B",
        "recv() 1 B",
        "post send",
        "send wait",
        "post recv",
        "recv wait",
    ] {
        assert!(calls.contains(&c), "missing call-cost row {c}");
    }
    // The two loops timed whole carry the thread's CPU per call; the socket pair spends
    // some of it in the kernel. Calls timed one by one have none (JSON null).
    let row = |call: &str| {
        v["callcost"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["call"].as_str().unwrap() == call)
            .unwrap_or_else(|| panic!("no {call} row"))
            .clone()
    };
    let pair = row("send()+recv() 1 B");
    let total = row("total of 4 (post send + send wait + post recv + recv wait)");
    for r in [&pair, &total] {
        let cpu = r["cpu_usr_us"].as_f64().unwrap() + r["cpu_sys_us"].as_f64().unwrap();
        assert!(cpu > 0.0, "{r}");
    }
    assert!(pair["cpu_sys_us"].as_f64().unwrap() > 0.0, "{pair}");
    assert!(row("post send")["cpu_usr_us"].is_null());
    for f in [
        "pingpong.csv",
        "throughput.csv",
        "callcost.csv",
        "rtt_fit.csv",
        "rtt_hist.csv",
    ] {
        let text = std::fs::read_to_string(dir.join(f)).expect(f);
        assert!(text.lines().count() > 1, "{f} empty");
    }
    let text = std::fs::read_to_string(dir.join("callcost.csv")).unwrap();
    assert!(text.starts_with("table,api,call,reps,mean_us,mean_us_ci95,cpu_usr_us,"));
    let text = std::fs::read_to_string(dir.join("pingpong.csv")).unwrap();
    assert!(text.lines().next().unwrap().contains(",p50_us_ci95,"));
    // The percentile distribution reaches 100% for every point.
    let hist = std::fs::read_to_string(dir.join("rtt_hist.csv")).unwrap();
    let complete = hist
        .lines()
        .filter(|l| l.split(',').nth(4) == Some("100"))
        .count();
    assert_eq!(complete, 15, "{hist}");
    // The figures beside the CSVs; the legends name every backend, mode and percentile.
    figures::check_figure(&dir.join("throughput"), &["shm poll loopback", "tcp block"]);
    figures::check_figure(&dir.join("cpu_per_byte"), &["client", "server", "ns/byte"]);
    figures::check_figure(&dir.join("rtt"), &["p50", "p99", "4K"]);
    figures::check_figure(&dir.join("rtt_fit"), &["fit", "p50", "Fig. 7"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--netns`: the tool makes two namespaces joined by a veth, runs the server in one and
/// the client in the other over io_uring and plain sockets, TCP and UDP, and leaves nothing
/// behind: no named namespace, no server process. Needs root (CI runs as root).
#[test]
fn bench_netns_uring_and_sockets_over_tcp_and_udp() {
    let dir = std::env::temp_dir().join(format!("mslink-bench-ns-{}", std::process::id()));
    let child = Command::new(env!("CARGO_BIN_EXE_mslink"))
        .args([
            "bench",
            "local",
            "--quick",
            "--netns",
            "--zc",
            "--backend",
            "uring",
            "--backend",
            "sockets",
            "--transport",
            "tcp",
            "--transport",
            "udp",
            "--mode",
            "block",
            "--sizes",
            "64,4096",
            "--json",
            "--no-plots",
            "--csv",
        ])
        .arg(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run mslink bench");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait for mslink bench");
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    // uring, uring-udp, tcp, udp x 1 mode x 2 sizes, plus the plain-socket references over
    // TCP and UDP.
    let tput = v["throughput"].as_array().unwrap();
    assert_eq!(tput.len(), 8);
    assert_eq!(v["pingpong"].as_array().unwrap().len(), 12);
    // Each ran over the transport it is named for, as the kernel reported its socket.
    let carriers: Vec<(&str, &str)> = v["carriers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["backend"].as_str().unwrap(),
                c["carrier"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        carriers,
        [
            ("uring-tcp", "tcp"),
            ("uring-udp", "udp"),
            ("tcp", "tcp"),
            ("udp", "udp"),
            ("sock", "tcp"),
            ("sock-udp", "udp")
        ]
    );
    let mut names: Vec<&str> = tput
        .iter()
        .map(|r| r["backend"].as_str().unwrap())
        .collect();
    names.dedup();
    assert_eq!(names, ["uring-tcp", "uring-udp", "tcp", "udp"]);
    for r in tput {
        assert_eq!(r["path"], "veth");
        assert!(r["mbit_s"].as_f64().unwrap() > 0.0);
        let zc = r["zc_sends"].as_u64().unwrap();
        if r["backend"].as_str().unwrap().starts_with("uring") {
            // SEND_ZC (--zc): every message's payload went zero-copy or was reported
            // copied.
            assert!(zc >= r["messages"].as_u64().unwrap(), "{r}");
            assert!(r["zc_copied"].as_u64().unwrap() <= zc);
        } else {
            assert_eq!(zc, 0);
        }
    }
    let text = std::fs::read_to_string(dir.join("throughput.csv")).expect("throughput.csv");
    assert!(text.lines().nth(1).unwrap().contains(",veth,"));
    // --no-plots: CSVs only.
    assert!(!dir.join("throughput.png").exists() && !dir.join("rtt.svg").exists());
    // Both namespaces are gone: they were never named (nothing under /run/netns, where `ip
    // netns` would have mounted them), and no server process is left inside one to keep it
    // alive (the kernel removes an unnamed namespace with its last process and descriptor).
    let named: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !named.iter().any(|n| n.contains(&format!("msv{pid}"))),
        "left behind: {named:?}"
    );
    let servers: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| {
            c.starts_with(env!("CARGO_BIN_EXE_mslink"))
                && c.contains(" bench server ")
                && c.contains("10.201.0.1:0")
        })
        .collect();
    assert!(
        servers.is_empty(),
        "bench servers left running: {servers:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `--floor`, the text report ends the ping-pong table with each polling row over the
/// floor measured just before and after its run (printed in the line), at p50, p99 and
/// p99.9, saying whether the two floors agreed.
#[test]
fn floor_ratio_line_follows_from_the_rows() {
    let out = Command::new(env!("CARGO_BIN_EXE_mslink"))
        .args([
            "bench",
            "local",
            "--backend",
            "shm",
            "--mode",
            "poll",
            "--sizes",
            "64",
            "--floor",
            "--iters",
            "200",
            "--warmup",
            "20",
            "--max-messages",
            "50",
            "--calls",
            "10",
            "-q",
        ])
        .output()
        .expect("run mslink bench");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p50 = |back: &str| -> f64 {
        let row = text
            .lines()
            .find(|l| l.starts_with(back) && l.contains(" poll "))
            .unwrap_or_else(|| panic!("no {back} row in\n{text}"));
        row.split_whitespace().nth(3).unwrap().parse().unwrap()
    };
    let line = text
        .lines()
        .find(|l| l.contains("shm poll 64 B against the floor"))
        .unwrap_or_else(|| panic!("no ratio line in\n{text}"));
    let ratio: f64 = line
        .split("p50 ")
        .nth(1)
        .and_then(|r| r.split('x').next())
        .unwrap()
        .parse()
        .unwrap();
    let floor: f64 = line
        .split("after each run (")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(line.contains(" p99 ") && line.contains(" p99.9 "), "{line}");
    assert!(
        line.contains("floors within") || line.contains("PLACEMENT CHANGED"),
        "{line}"
    );
    // The row and the floor print two decimals, the ratio uses the unrounded values and
    // prints two decimals itself (a floor of 0.13 µs shown is 0.125 to 0.135: 4%).
    let shown = p50("shm") / floor;
    assert!(
        (ratio - shown).abs() <= 0.1 * shown + 0.005,
        "{ratio} vs {shown}: {line}"
    );
}
