//! `mslink bench local --quick` runs end to end (server child process, both backends, both
//! wait modes) and produces every table, as JSON and CSV.

use std::process::Command;

#[test]
fn bench_local_quick_produces_every_table() {
    let dir = std::env::temp_dir().join(format!("mslink-bench-test-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_mslink"))
        .args([
            "bench",
            "local",
            "--quick",
            "--sizes",
            "1,64,4096",
            "--json",
            "--csv",
        ])
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
    }
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
    for f in ["pingpong.csv", "throughput.csv", "callcost.csv"] {
        let text = std::fs::read_to_string(dir.join(f)).expect(f);
        assert!(text.lines().count() > 1, "{f} empty");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
