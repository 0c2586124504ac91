//! `mslink sim --store DIR` (issue 32, "a result store keyed by scenario content, seed and
//! mslink version"): a run is made once and reused by every later invocation that needs it;
//! the files are byte-identical to an invocation without the store; a run whose scenario
//! differs, or whose trace file changed, is made again.

mod common;

use std::path::Path;

use common::{mslink, result_files as files, scratch};

const SCENARIO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scenarios/004/fig7_cbr_one_wlan.toml"
);

/// Runs `mslink sim` on `scenario` into `out`; returns how many runs came from the store
/// (its note) or None without one.
fn sim(scenario: &Path, out: &Path, store: Option<&Path>, args: &[&str]) -> Option<usize> {
    let mut c = mslink();
    c.arg("sim").arg(scenario).args(["--jobs", "2"]).args(args);
    c.arg("--out").arg(out);
    if let Some(s) = store {
        c.arg("--store").arg(s);
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    err.lines()
        .filter(|l| l.contains("runs came from the store"))
        .find_map(|l| l.strip_prefix("mslink: note: "))
        .and_then(|l| l.split(" of ").next())
        .and_then(|n| n.parse().ok())
        .filter(|_| store.is_some())
}

#[test]
fn runs_are_made_once_and_the_files_do_not_change() {
    let d = scratch("store");
    let sc = Path::new(SCENARIO);
    let store = d.join("store");
    let few = ["--reps", "2", "--set", "sim.duration_s=20"];
    let more = ["--reps", "3", "--set", "sim.duration_s=20"];
    assert_eq!(sim(sc, &d.join("a"), Some(&store), &few), Some(0));
    // The same runs again: all from the store, the same files as without it.
    assert_eq!(sim(sc, &d.join("b"), Some(&store), &few), Some(40));
    sim(sc, &d.join("plain"), None, &few);
    assert_eq!(files(&d.join("b")), files(&d.join("plain")));
    assert_eq!(files(&d.join("a")), files(&d.join("plain")));
    // One more repetition per point: only the new ones are made.
    assert_eq!(sim(sc, &d.join("c"), Some(&store), &more), Some(40));
    sim(sc, &d.join("plain3"), None, &more);
    assert_eq!(files(&d.join("c")), files(&d.join("plain3")));
    // Another scenario (a different length): nothing to reuse.
    let other = ["--reps", "2", "--set", "sim.duration_s=21"];
    assert_eq!(sim(sc, &d.join("e"), Some(&store), &other), Some(0));
}

#[test]
fn a_changed_trace_file_is_a_different_run() {
    let d = scratch("store-trace");
    let trace = d.join("t.trace");
    let sc = d.join("s.toml");
    std::fs::write(
        &sc,
        "[sim]\nname = \"t\"\nduration_s = 5\nreps = 2\n\n[[segment]]\nkind = \"wireless\"\nrate_bps = 1000000\ndelay_ms = 5\nframe_bytes = 1000\nerror = { model = \"trace\", file = \"t.trace\" }\n\n[segment.link]\n[[segment.link.service]]\nname = \"u\"\nscheme = \"raw\"\n\n[[flow]]\nname = \"cbr\"\napp = \"cbr\"\nfrom = 0\nto = 1\nrate_bps = 100000\npacket_bytes = 500\n",
    )
    .unwrap();
    let store = d.join("store");
    std::fs::write(&trace, "# mslink error trace\nok * 20\nloss\nok * 20\n").unwrap();
    assert_eq!(sim(&sc, &d.join("a"), Some(&store), &[]), Some(0));
    assert_eq!(sim(&sc, &d.join("b"), Some(&store), &[]), Some(2));
    std::fs::write(&trace, "# mslink error trace\nok * 10\nloss\nok * 30\n").unwrap();
    assert_eq!(sim(&sc, &d.join("c"), Some(&store), &[]), Some(0));
}
