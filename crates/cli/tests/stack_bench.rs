//! `mslink stack-bench` on small settings: every table as CSV rows, and the figures (round
//! trip vs size per architecture and layering; 002 Fig. 4) as PNG and SVG beside the CSV;
//! `--no-plots` leaves the CSV alone.

use std::path::PathBuf;
use std::process::Command;

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
    // 3 architectures x 3 stacks x 5 sizes, ILP off/on x 3, Fig. 4: 6 loads x 2 sizes x 2 flows.
    assert_eq!(text.lines().count(), 1 + 45 + 6 + 24);
    figures::check_figure(
        &d.0.join("stack_rtt_memory"),
        &["llm UDP-IP-ETH", "daa ETHDAA", "illm IP-ETH", "1400"],
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
