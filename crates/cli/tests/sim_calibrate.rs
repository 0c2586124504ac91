//! `mslink sim --calibrate` (issue 32): the probes write this machine's costs where
//! `MSLINK_CALIBRATION` says, later estimates apply exactly those costs, and a calibration that
//! cannot be used is an error naming the file.

use std::path::{Path, PathBuf};
use std::process::Command;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mslink-calib-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn mslink(calibration: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mslink"));
    c.env("MSLINK_CALIBRATION", calibration);
    c
}

/// One 1 Mbit/s flow in talk spurts over a wired and a WLAN hop for 5 s.
const ONE_FLOW: &str = "[sim]\nduration_s = 5\n[[segment]]\nkind = \"wired\"\n[[segment]]\nkind = \"wireless\"\npreset = \"wlan\"\n[[flow]]\nname = \"a\"\nfrom = 0\nto = 2\n";

/// `--estimate --json` of `scenario` with the calibration at `calibration`: exit code, the
/// document (or null) and standard error.
fn estimate(dir: &Path, calibration: &Path, scenario: &str) -> (i32, serde_json::Value, String) {
    let f = dir.join("s.toml");
    std::fs::write(&f, scenario).unwrap();
    let out = mslink(calibration)
        .args(["sim", "--quiet", "--estimate", "--json", "--jobs", "1"])
        .arg(&f)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Seconds per event at `flows` flows, as the calibration file's pairs give it (below the first
/// count, the first figure).
fn first_event_s(costs: &serde_json::Value) -> f64 {
    costs["event_s"][0][1].as_f64().unwrap()
}

#[test]
fn calibrating_writes_the_costs_that_later_estimates_apply() {
    let dir = tmp("run");
    let file = dir.join("cache/calibration.json");
    let out = mslink(&file)
        .args(["sim", "--calibrate", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&file.display().to_string()), "{stdout}");
    let costs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let pairs = costs["event_s"].as_array().unwrap();
    assert_eq!(pairs.len(), 3, "{costs}");
    let flows: Vec<f64> = pairs.iter().map(|p| p[0].as_f64().unwrap()).collect();
    assert_eq!(flows, [2.0, 2000.0, 100000.0]);
    for k in ["flow_s", "run_s", "trace_byte_s"] {
        assert!(costs[k].as_f64().unwrap() > 0.0, "{k}: {costs}");
    }
    assert!(
        pairs.iter().all(|p| p[1].as_f64().unwrap() > 0.0),
        "{costs}"
    );
    assert!(
        costs["source"]
            .as_str()
            .unwrap()
            .starts_with("calibrated on "),
        "{costs}"
    );
    // The estimate of one run of one flow is the file's run, flow and event costs.
    let (code, e, err) = estimate(&dir, &file, ONE_FLOW);
    assert_eq!(code, 0, "{err}");
    assert_eq!(e["costs"], costs["source"], "{e}");
    let want = costs["run_s"].as_f64().unwrap()
        + costs["flow_s"].as_f64().unwrap()
        + e["run_events"].as_f64().unwrap() * first_event_s(&costs);
    let wall = e["wall_s"].as_f64().unwrap();
    assert!(
        (wall - want).abs() <= 1e-12 * want.max(1.0),
        "{wall} vs {want}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_calibration_that_cannot_be_used_is_an_error_naming_it() {
    let dir = tmp("bad");
    // Twice the costs: twice the time.
    let file = dir.join("calibration.json");
    let costs = serde_json::json!({
        "event_s": [[1.0, 1e-7]], "flow_s": 1e-5, "run_s": 1e-4, "trace_byte_s": 1e-8,
        "source": "by hand"
    });
    let double = serde_json::json!({
        "event_s": [[1.0, 2e-7]], "flow_s": 2e-5, "run_s": 2e-4, "trace_byte_s": 2e-8,
        "source": "by hand, twice"
    });
    std::fs::write(&file, costs.to_string()).unwrap();
    let (_, one, _) = estimate(&dir, &file, ONE_FLOW);
    std::fs::write(&file, double.to_string()).unwrap();
    let (_, two, _) = estimate(&dir, &file, ONE_FLOW);
    let (a, b) = (
        one["wall_s"].as_f64().unwrap(),
        two["wall_s"].as_f64().unwrap(),
    );
    assert!((b - 2.0 * a).abs() < 1e-12, "{a} {b}");
    assert_eq!(two["costs"], "by hand, twice");
    // No file: the built-in figures.
    let (code, e, _) = estimate(&dir, &dir.join("none.json"), ONE_FLOW);
    assert_eq!(code, 0);
    assert!(e["costs"].as_str().unwrap().starts_with("built in"), "{e}");
    // A broken file is never replaced by the built-in figures silently.
    std::fs::write(&file, "{\"event_s\": [], \"flow_s\": 1").unwrap();
    let (code, _, err) = estimate(&dir, &file, ONE_FLOW);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&file.display().to_string()) && err.contains("--calibrate"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
