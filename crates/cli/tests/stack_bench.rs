//! `mslink stack-bench` on small settings: every table as CSV rows, and the figures (round
//! trip vs size per architecture and layering; 002 Fig. 4) as PNG and SVG beside the CSV;
//! `--no-plots` leaves the CSV alone.

use std::path::PathBuf;
use std::process::Command;

mod common;
mod figures;

/// A fresh folder, removed again when dropped (also when the test fails).
struct TmpDir(PathBuf);

impl TmpDir {
    fn new(name: &str) -> Self {
        let d =
            std::env::temp_dir().join(format!("mslink-stack-bench-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TmpDir(d)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn stack_bench(csv: &std::path::Path, extra: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_mslink"))
        .args([
            "stack-bench",
            "--transactions",
            "20",
            "--repeat",
            "1",
            "--csv",
        ])
        .arg(csv)
        .args(extra)
        .output()
        .expect("run mslink stack-bench");
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn stack_bench_writes_csv_and_figures() {
    let d = TmpDir::new("plots");
    let csv = d.0.join("stack.csv");
    stack_bench(&csv, &[]);
    let text = std::fs::read_to_string(&csv).unwrap();
    // 3 architectures x 4 stacks x 5 sizes, ILP off/on x 3, Fig. 4: 6 loads x 2 sizes x 2 flows.
    assert_eq!(text.lines().count(), 1 + 60 + 6 + 24);
    for arch in ["llm", "daa", "illm"] {
        let tcp = if arch == "daa" {
            "TCP-IP-ETHDAA"
        } else {
            "TCP-IP-ETH"
        };
        for size in [1, 100, 500, 1000, 1400] {
            let row = format!("memory,{arch},{tcp},{size},false,false,");
            assert!(text.contains(&row), "no row {row}");
        }
    }
    figures::check_figure(
        &d.0.join("stack_rtt_memory"),
        &[
            "llm UDP-IP-ETH",
            "daa ETHDAA",
            "illm IP-ETH",
            "llm TCP-IP-ETH",
            "1400",
        ],
    );
    figures::check_figure(
        &d.0.join("stack_fig4"),
        &["UDPDAA-prio (1 B background)", "UDP (1000 B background)"],
    );
    // No veth run, no veth figure.
    assert!(!d.0.join("stack_rtt_veth.png").exists());
}

#[test]
fn stack_bench_no_plots_writes_only_the_csv() {
    let d = TmpDir::new("noplots");
    let csv = d.0.join("s.csv");
    stack_bench(&csv, &["--no-plots"]);
    let names: Vec<String> = std::fs::read_dir(&d.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["s.csv"]);
}

/// `--veth` (root): the round-trip tables over the veth with the TCP rows, and 002 Fig. 4
/// with real receive threads: every server organisation (prioritised DAA, its equal-priority
/// control, plain UDP) at every load, and its own figure. The values are not checked (wall-clock
/// times); that the cells exist and the run cleans up after itself is.
#[test]
fn stack_bench_veth_has_tcp_rows_and_threaded_fig4() {
    if common::skip_without_root() {
        return;
    }
    let d = TmpDir::new("veth");
    let csv = d.0.join("stack.csv");
    stack_bench(&csv, &["--veth"]);
    let text = std::fs::read_to_string(&csv).unwrap();
    // Memory as above, then veth: 60 round-trip cells and 6 loads x 2 sizes x 3 servers.
    assert_eq!(text.lines().count(), 1 + 60 + 6 + 24 + 60 + 36);
    assert!(text.contains("veth,llm,TCP-IP-ETH,1400,"));
    assert!(text.contains("veth,daa,TCP-IP-ETHDAA,1,"));
    for bg in [0, 2, 4, 8, 12, 16] {
        for server in ["UDPDAA-prio", "UDPDAA-equal", "UDP"] {
            for size in [1, 1000] {
                let row = format!("veth,fig4-bg{bg},{server},{size},");
                assert!(text.contains(&row), "no row {row}");
            }
        }
    }
    figures::check_figure(
        &d.0.join("stack_fig4_veth"),
        &["UDPDAA-equal (1 B background)", "UDP (1000 B background)"],
    );
}
