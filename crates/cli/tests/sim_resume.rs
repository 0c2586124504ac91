//! A killed `mslink sim` loses nothing it finished, and `--resume` completes it (issue 32,
//! "campaigns that survive"): a sweep is killed with SIGKILL once some runs are committed; the
//! committed rows are readable in flows.csv, progress.json says the invocation was running;
//! `mslink sim --resume` makes only the missing runs, and every result file (tables, stats,
//! summary.json, plots) is byte-identical to an uninterrupted invocation's, in CSV and in
//! Parquet. A complete folder is refused. Nothing is asserted on how long anything took: the
//! kill waits for committed runs, not for a time.

mod common;

use std::path::Path;
use std::process::Stdio;

use common::{mslink, result_files as files, scratch};

const SCENARIO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scenarios/004/fig7_cbr_one_wlan.toml"
);

/// Entries committed to the part file so far.
fn committed(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("summary.json.part"))
        .map(|t| {
            t.lines()
                .filter(|l| *l == "    }" || *l == "    },")
                .count()
        })
        .unwrap_or(0)
}

fn sim(args: &[&str], out: &Path) -> std::process::Command {
    let mut c = mslink();
    c.args(["sim", SCENARIO, "-q", "--jobs", "2"])
        .args(args)
        .arg("--out")
        .arg(out);
    c
}

fn killed_then_resumed(format: &str, reps: &str) {
    let d = scratch(&format!("resume-{format}"));
    let args = ["--reps", reps, "--format", format];
    let whole = d.join("whole");
    let o = sim(&args, &whole).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let cut = d.join("cut");
    let mut child = sim(&args, &cut).stderr(Stdio::null()).spawn().unwrap();
    // Wait for a few committed runs (or the end, which the asserts below then report).
    while committed(&cut) < 5 && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let n = committed(&cut);
    assert!(
        !cut.join("summary.json").exists(),
        "the sweep ended before the kill"
    );
    let progress = std::fs::read_to_string(cut.join("progress.json")).unwrap();
    assert!(progress.contains("\"state\": \"running\""), "{progress}");
    assert!(progress.contains("--resume"), "{progress}");
    if format == "csv" {
        // Every committed run's rows are there to read: one flow per run in this scenario,
        // plus the header.
        let rows = std::fs::read_to_string(cut.join("flows.csv")).unwrap();
        assert!(
            rows.lines().count() > n,
            "{n} runs committed, flows.csv:\n{rows}"
        );
    }

    let o = mslink()
        .args(["sim", "--jobs", "1", "--resume"])
        .arg(&cut)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("runs were committed"), "{err}");
    let (a, b) = (files(&whole), files(&cut));
    assert_eq!(
        a.iter().map(|f| &f.0).collect::<Vec<_>>(),
        b.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(
            x == y,
            "{name} differs after --resume ({n} runs were committed)"
        );
    }
    assert!(!cut.join("summary.json.part.resume").exists());

    // A complete folder has nothing to resume.
    let o = mslink()
        .args(["sim", "--resume"])
        .arg(&cut)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("nothing to resume"), "{err}");
}

#[test]
fn a_killed_csv_sweep_resumes_to_the_same_files() {
    killed_then_resumed("csv", "20");
}

#[test]
fn a_killed_parquet_sweep_resumes_to_the_same_files() {
    killed_then_resumed("parquet", "10");
}
