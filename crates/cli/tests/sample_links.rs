//! The sample link files and traces the repository ships (`links/`, `traces/`): every link file
//! builds; every path under `links/` or `traces/` that `mslink emulate --help`, `mslink graph
//! --help` or docs/emulator.md names exists and parses (link files build, capacity traces,
//! error traces, period traces and link logs read); and the capacity traces are what the commands in
//! traces/README.md generate, byte for byte.

use std::path::{Path, PathBuf};

use mslink_emu::EmuConfig;
use mslink_link::Instant;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Builds the link file at `path` (files it names resolved beside it, as `mslink emulate`
/// does); returns the link's notes (e.g. that a service segments packets).
fn build_link(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cfg: EmuConfig =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let dir = path.parent().unwrap().to_path_buf();
    cfg.build(Instant::ZERO, &mut |f| std::fs::read_to_string(dir.join(f)))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    cfg.link_config().notes()
}

fn check_path(p: &str, from: &str) {
    let path = repo().join(p);
    assert!(path.exists(), "{from} names {p}, which does not exist");
    if path.is_dir() {
        return;
    }
    let what = format!("{p} (named in {from})");
    match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => {
            build_link(&path);
        }
        Some("mahi") => {
            mslink_channel::mahimahi::MahimahiTrace::parse(
                &std::fs::read_to_string(&path).unwrap(),
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        Some("trace") => {
            mslink_cli::read_error_trace(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        Some("periods") => {
            mslink_cli::read_period_trace(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        Some("log") => {
            let f = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
            let opts = mslink_emu::linklog_read::ReadOptions {
                window_ms: 500,
                lenient: false,
            };
            let d = mslink_emu::linklog_read::read(f, p, opts)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(d.counts.departures > 0 && d.skipped == 0, "{what}");
        }
        _ => {}
    }
}

/// Words of `text` that start with `links/` or `traces/` (after an opening quote, `=` or
/// parenthesis), trailing punctuation removed.
fn repo_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || "`'\"=(),|".contains(c)) {
        let w = word.trim_end_matches(['.', ':', ';', '\\']);
        if (w.starts_with("links/") || w.starts_with("traces/")) && !w.contains('*') {
            out.push(w.to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_sample_link_file_builds() {
    let mut n = 0;
    for e in std::fs::read_dir(repo().join("links")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let notes = build_link(&path);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        // Only the HSCSD link cuts packets into frames (its header says why).
        if name == "hscsd.toml" {
            assert!(
                notes.iter().any(|n| n.contains("segments packets")),
                "{notes:?}"
            );
        } else {
            assert!(notes.is_empty(), "{name}: {notes:?}");
        }
        n += 1;
    }
    assert!(n >= 4, "{n} link files");
}

#[test]
fn paths_in_help_and_docs_exist_and_parse() {
    let mut cmd = mslink_cli::command();
    cmd.build();
    let mut seen = 0;
    for verb in ["emulate", "graph"] {
        let help = cmd
            .find_subcommand_mut(verb)
            .unwrap()
            .render_long_help()
            .to_string();
        let paths = repo_paths(&help);
        assert!(
            !paths.is_empty(),
            "`mslink {verb} --help` names no sample file"
        );
        for p in paths {
            check_path(&p, &format!("`mslink {verb} --help`"));
            seen += 1;
        }
    }
    for doc in ["docs/emulator.md", "links/README.md", "traces/README.md"] {
        let text = std::fs::read_to_string(repo().join(doc)).unwrap();
        for p in repo_paths(&text) {
            check_path(&p, doc);
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} paths");
}

#[test]
fn capacity_traces_are_what_their_commands_generate() {
    let readme = std::fs::read_to_string(repo().join("traces/README.md")).unwrap();
    let dir = std::env::temp_dir().join(format!("mslink-sample-traces-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut n = 0;
    for cmd in readme
        .split('`')
        .filter(|s| s.starts_with("mslink trace capacity "))
    {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let out = words.iter().position(|w| *w == "--out").unwrap() + 1;
        let tmp = dir.join(format!("{n}.mahi"));
        let mut args: Vec<String> = words[1..].iter().map(|s| s.to_string()).collect();
        args[out - 1] = tmp.display().to_string();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_mslink"))
            .args(&args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            std::fs::read(&tmp).unwrap(),
            std::fs::read(repo().join(words[out])).unwrap(),
            "{} is not what `{cmd}` writes",
            words[out]
        );
        n += 1;
    }
    assert!(n >= 3, "{n} commands");
    let _ = std::fs::remove_dir_all(&dir);
}
