//! Every scenario file under `scenarios/`, at every sweep point: it parses, validates, and
//! runs into no note (`Scenario::notes`: a service that segments packets, a window cut by its
//! sequence space, ELF reservations beyond 003 §6.3's admission condition) except the ones it
//! declares with a `# note expected: ...` line. 004's two-HSCSD multi-service file once gave
//! Selective Repeat a 15-frame window that way.

use std::path::{Path, PathBuf};

use mslink_sim::Scenario;

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            toml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
}

#[test]
fn every_scenario_point_validates_without_notes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = Vec::new();
    toml_files(&root, &mut files);
    files.sort();
    assert!(
        files.len() >= 25,
        "found only {} scenario files",
        files.len()
    );
    let mut points = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let sc = Scenario::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let expected: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# note expected:"))
            .map(|e| e.trim().to_string())
            .collect();
        for point in sc.sweep_points().unwrap() {
            let s = sc.with_overrides(&point).unwrap();
            s.validate()
                .unwrap_or_else(|e| panic!("{} {point:?}: {e}", f.display()));
            // A file may expect a note it runs into on purpose (a paper's own configuration),
            // with a line `# note expected: <words of the note>`; any other note is a trap.
            let notes = s.notes();
            for n in &notes {
                assert!(
                    expected.iter().any(|e| n.contains(e.as_str())),
                    "{} {point:?}: unexpected note: {n}",
                    f.display()
                );
            }
            for e in &expected {
                assert!(
                    notes.iter().any(|n| n.contains(e.as_str())),
                    "{} {point:?}: expected a note with `{e}`, got {notes:?}",
                    f.display()
                );
            }
            points += 1;
        }
    }
    eprintln!("{} files, {points} sweep points", files.len());
}
