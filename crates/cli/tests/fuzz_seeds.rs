//! The committed seed corpora of the cargo-fuzz targets (docs/fuzzing.md, "Seeds").
//!
//! Contract. Every target `fuzz/fuzz_targets/T.rs` keeps its checks in `fuzz/checks/T.rs`
//! (the target is a one-line wrapper) and its seeds in `fuzz/seeds/T/`. This test includes
//! those check modules and
//! * fails if a target has no non-empty seed, or no check module known here, or a seed
//!   directory names no target, or the seeds outgrow their size budget;
//! * runs every committed seed through its target's checks: the very code the fuzzer runs,
//!   so a seed that would crash the target fails here, without nightly or libFuzzer;
//! * regenerates the seeds (`fuzz_seeds/seeds.rs`, from the project's own reprs, emitters
//!   and state machines; each genuine seed asserted to be accepted as what it claims to be)
//!   and fails if the committed files differ, so the seeds never go stale. Run with
//!   `MSLINK_WRITE_FUZZ_SEEDS=1` to write them instead. Files named `found-*` are entries a
//!   fuzzer found (kept after `cargo fuzz cmin`); they are checked but not regenerated.
//!
//! Deterministic: no clock, no randomness but fixed seeds.

#[path = "fuzz_seeds/packets.rs"]
mod packets;
#[path = "fuzz_seeds/seeds.rs"]
mod seeds;

#[path = "../../../fuzz/checks/classifier.rs"]
mod classifier;
#[path = "../../../fuzz/checks/link_frame.rs"]
mod link_frame;
#[path = "../../../fuzz/checks/link_receive.rs"]
mod link_receive;
#[path = "../../../fuzz/checks/rs_decode.rs"]
mod rs_decode;
#[path = "../../../fuzz/checks/service_header.rs"]
mod service_header;
#[path = "../../../fuzz/checks/stack_headers.rs"]
mod stack_headers;
#[path = "../../../fuzz/checks/stack_receive.rs"]
mod stack_receive;
#[path = "../../../fuzz/checks/trace_parse.rs"]
mod trace_parse;
#[path = "../../../fuzz/checks/tun_offload.rs"]
mod tun_offload;
#[path = "../../../fuzz/checks/tunnel_receive.rs"]
mod tunnel_receive;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Largest seed file, and the budget of all seeds together.
const MAX_SEED_BYTES: u64 = 16 * 1024;
const MAX_TOTAL_BYTES: u64 = 256 * 1024;

/// Prefix of the seeds a fuzzer found, which the generator does not make.
const FOUND: &str = "found-";

/// The checks of target `name`, as the fuzzer runs them (panics where the target crashes).
fn check(name: &str) -> Option<fn(&[u8])> {
    Some(match name {
        "classifier" => |d| {
            let _ = classifier::run(d);
        },
        "link_frame" => |d| {
            let _ = link_frame::run(d);
        },
        "link_receive" => |d| {
            let _ = link_receive::run(d);
        },
        "rs_decode" => |d| {
            let _ = rs_decode::run(d);
        },
        "service_header" => |d| {
            let _ = service_header::run(d);
        },
        "stack_headers" => |d| {
            let _ = stack_headers::run(d);
        },
        "stack_receive" => |d| {
            let _ = stack_receive::run(d);
        },
        "trace_parse" => |d| {
            let _ = trace_parse::run(d);
        },
        "tun_offload" => |d| {
            let _ = tun_offload::run(d);
        },
        "tunnel_receive" => |d| {
            let _ = tunnel_receive::run(d);
        },
        _ => return None,
    })
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Names of the files (or directories) directly in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            e.unwrap()
                .file_name()
                .into_string()
                .expect("UTF-8 file name")
        })
        .collect();
    v.sort();
    v
}

/// The fuzz targets: `fuzz/fuzz_targets/*.rs`.
fn targets() -> Vec<String> {
    entries(&fuzz_dir().join("fuzz_targets"))
        .into_iter()
        .filter_map(|f| f.strip_suffix(".rs").map(str::to_string))
        .collect()
}

/// The committed seeds of `target`: (file name, bytes).
fn committed(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = fuzz_dir().join("seeds").join(target);
    if !dir.is_dir() {
        return Vec::new();
    }
    entries(&dir)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(dir.join(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

#[test]
fn every_fuzz_target_has_seeds_and_a_check() {
    let targets = targets();
    assert!(targets.len() >= 10, "fuzz targets: {targets:?}");
    let mut total = 0u64;
    for t in &targets {
        assert!(
            check(t).is_some(),
            "fuzz target {t} has no check known to crates/cli/tests/fuzz_seeds.rs: move its body \
             into fuzz/checks/{t}.rs, include it there and give it a seed generator"
        );
        let seeds = committed(t);
        assert!(
            seeds.iter().any(|(_, b)| !b.is_empty()),
            "fuzz/seeds/{t}/ has no non-empty seed (MSLINK_WRITE_FUZZ_SEEDS=1 cargo test -p \
             mslink-cli --test fuzz_seeds writes the generated ones)"
        );
        for (f, b) in &seeds {
            assert!(
                b.len() as u64 <= MAX_SEED_BYTES,
                "fuzz/seeds/{t}/{f} is {} bytes",
                b.len()
            );
            total += b.len() as u64;
        }
    }
    assert!(total <= MAX_TOTAL_BYTES, "fuzz/seeds holds {total} bytes");
    for d in entries(&fuzz_dir().join("seeds")) {
        assert!(
            targets.contains(&d),
            "fuzz/seeds/{d} belongs to no fuzz target"
        );
    }
    let generated: BTreeSet<&str> = seeds::all().iter().map(|(t, _)| *t).collect();
    let targets: BTreeSet<&str> = targets.iter().map(String::as_str).collect();
    assert_eq!(generated, targets, "every target has a seed generator");
}

#[test]
fn every_seed_passes_its_targets_checks() {
    for t in targets() {
        let Some(run) = check(&t) else { continue };
        for (f, bytes) in committed(&t) {
            let outcome = std::panic::catch_unwind(|| run(&bytes));
            assert!(
                outcome.is_ok(),
                "seed fuzz/seeds/{t}/{f} fails the checks of fuzz target {t}"
            );
        }
    }
}

#[test]
fn committed_seeds_are_what_the_generator_writes() {
    let write = std::env::var_os("MSLINK_WRITE_FUZZ_SEEDS").is_some_and(|v| v == "1");
    let mut problems = Vec::new();
    for (target, seeds) in seeds::all() {
        let dir = fuzz_dir().join("seeds").join(target);
        let names: BTreeSet<&str> = seeds.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names.len(), seeds.len(), "{target}: seed names repeat");
        let on_disk = committed(target);
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            for (f, _) in &on_disk {
                if !f.starts_with(FOUND) && !names.contains(f.as_str()) {
                    std::fs::remove_file(dir.join(f)).unwrap();
                }
            }
            for s in &seeds {
                std::fs::write(dir.join(&s.name), &s.bytes).unwrap();
            }
            eprintln!("wrote {} seeds to {}", seeds.len(), dir.display());
            continue;
        }
        for s in &seeds {
            match on_disk.iter().find(|(f, _)| *f == s.name) {
                None => problems.push(format!("fuzz/seeds/{target}/{} is missing", s.name)),
                Some((_, b)) if *b != s.bytes => {
                    problems.push(format!("fuzz/seeds/{target}/{} differs", s.name))
                }
                Some(_) => {}
            }
        }
        for (f, _) in &on_disk {
            if !f.starts_with(FOUND) && !names.contains(f.as_str()) {
                problems.push(format!(
                    "fuzz/seeds/{target}/{f} is neither generated nor named {FOUND}*"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the committed seeds are stale; rewrite them with \
         `MSLINK_WRITE_FUZZ_SEEDS=1 cargo test -p mslink-cli --test fuzz_seeds`:\n{}",
        problems.join("\n")
    );
}
