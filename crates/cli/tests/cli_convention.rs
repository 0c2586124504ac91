//! The CLI convention of docs/cli.md, checked by walking every verb and subverb of
//! `mslink_cli::command()` (the very clap tree the binary parses with):
//!
//! * every leaf (sub)verb has `--json` and `-q/--quiet`, except the explicit [`EXEMPT`] list,
//!   each with its reason;
//! * every (sub)verb's help (the root's too) ends with an "Examples:" block, and every example
//!   line RUNS (through `sh -c`, the built `mslink` first on PATH, in one scratch folder shared
//!   in help order, so `trace gen` makes the file `trace stats` reads) and exits 0; long jobs
//!   get the short settings of [`SHORTEN`] appended (a repeated option keeps its last value);
//!   an example with `--json` and no redirection prints one JSON document on stdout;
//! * `mslink bench server` examples run in the background and the `bench client` examples
//!   after them talk to that server (port 7000 replaced by the one it picked);
//! * examples that need root (emulate, `tunnel CONFIG`, `bench local --netns`) run when root
//!   is available and fail, not skip, without it under `MSLINK_REQUIRE_ROOT=1`; `tunnel
//!   CONFIG` runs in a private network namespace and must still be running after 2 s;
//! * the first example of each verb that prints text, and its first with `--json` (bench and
//!   root-only ones aside), also runs into `| head -c1`, which closes the pipe after one byte:
//!   it must end quietly (status 0 or 141), never with a panic or an error (a verb writes its
//!   text, or its JSON, through one path whatever its other options, and `main` handles a
//!   closed pipe for every verb, so a second example of the same kind would prove nothing
//!   more; run after every example it doubled the test's time, `reproduce` most of it);
//! * an example of [`RUN_ELSEWHERE`], which another test runs with stronger checks, is parsed
//!   by the clap tree instead of run again, and that test must name each of its options;
//! * completions for bash, zsh and fish, and the man pages, cover every (sub)verb.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// (verb path, flag, why the convention flag does not apply).
const EXEMPT: &[(&str, &str, &str)] = &[
    (
        "completions",
        "--json",
        "prints a shell script; there is nothing else to report",
    ),
    (
        "completions",
        "--quiet",
        "prints a shell script and nothing else",
    ),
    (
        "tunnel genkey",
        "--json",
        "prints one key; the key is the machine-readable output",
    ),
    (
        "tunnel genkey",
        "--quiet",
        "prints one key and nothing else",
    ),
    (
        "tunnel pubkey",
        "--json",
        "prints one key; the key is the machine-readable output",
    ),
    (
        "tunnel pubkey",
        "--quiet",
        "prints one key and nothing else",
    ),
    (
        "tunnel genpsk",
        "--json",
        "prints one key; the key is the machine-readable output",
    ),
    (
        "tunnel genpsk",
        "--quiet",
        "prints one key and nothing else",
    ),
    (
        "tunnel",
        "--json",
        "a daemon; it logs events and counters to stderr (docs/tunnel.md)",
    ),
    (
        "bench server",
        "--json",
        "serves the client's tests; the client reports them",
    ),
];

/// Options appended to an example of a (sub)verb so that it finishes in seconds.
const SHORTEN: &[(&str, &str)] = &[
    ("demo", "--seconds 3"),
    ("reproduce", "--quick"),
    ("validate", "--grid quick --cc reno --reps 2 --seconds 2"),
    ("sim", "--reps 1 --jobs 1 --no-plots --set sim.duration_s=2"),
    ("trace gen", "--frames 2000"),
    ("stack-bench", "--transactions 20 --repeat 1"),
    ("bench local", "--quick --iters 50 --warmup 5"),
    ("bench client", "--quick --iters 50 --warmup 5"),
];

/// (example prefix, test file, test) of examples another test runs in full and checks more
/// closely: `reproduce --quick --mutants` is four minutes of this test otherwise.
const RUN_ELSEWHERE: &[(&str, &str, &str)] = &[(
    "mslink reproduce --quick --mutants",
    "tests/reproduce.rs",
    "quick_run_passes_catches_every_mutant_and_its_report_renders_in_a_browser",
)];

/// If `line` is one of [`RUN_ELSEWHERE`]: checks that it parses and that the test which runs
/// it names each of its options, and says so.
fn run_elsewhere(line: &str) -> bool {
    let Some((_, file, test)) = RUN_ELSEWHERE.iter().find(|(p, _, _)| line.starts_with(p)) else {
        return false;
    };
    let words: Vec<&str> = line[..first_command_end(line)].split_whitespace().collect();
    if let Err(e) = mslink_cli::command().try_get_matches_from(&words) {
        panic!("`{line}` does not parse: {e}");
    }
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    assert!(
        text.contains(&format!("fn {test}()")),
        "{file} has no test {test}"
    );
    for opt in words
        .iter()
        .filter(|w| w.starts_with("--") && **w != "--out")
    {
        assert!(
            text.contains(&format!("\"{opt}\"")),
            "`{line}` is left to {file}, which never passes {opt}"
        );
    }
    true
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() == 0 };
    assert!(
        root || std::env::var("MSLINK_REQUIRE_ROOT").as_deref() != Ok("1"),
        "MSLINK_REQUIRE_ROOT=1 but not running as root: examples of emulate, tunnel and \
         bench --netns need it"
    );
    root
}

/// Every (sub)verb: (path without "mslink", command), depth first in help order.
fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((path.to_string(), cmd.clone()));
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        let p = if path.is_empty() {
            sub.get_name().to_string()
        } else {
            format!("{path} {}", sub.get_name())
        };
        walk(sub, &p, out);
    }
}

fn verbs() -> Vec<(String, clap::Command)> {
    let mut cmd = mslink_cli::command();
    cmd.build();
    let mut v = Vec::new();
    walk(&cmd, "", &mut v);
    v
}

/// The example lines of a help text: the block after "Examples:" up to the first blank
/// line, `\` continuations joined, comment-only lines dropped.
fn examples(help: &str) -> Vec<String> {
    let block = help.split("Examples:\n").nth(1).unwrap_or("");
    let mut lines = Vec::new();
    let mut cur = String::new();
    for l in block.lines() {
        if l.trim().is_empty() {
            break;
        }
        let t = l.trim();
        if t.starts_with('#') {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
        } else {
            cur.push_str(t);
            lines.push(std::mem::take(&mut cur));
        }
    }
    lines
}

/// The byte offset where the first simple command of `line` ends: a shell operator or a
/// comment outside quotes.
fn first_command_end(line: &str) -> usize {
    let (mut single, mut double) = (false, false);
    let b = line.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'|' | b'>' | b'<' | b'&' | b';' if !single && !double => return i,
            b'#' if !single && !double && i > 0 && b[i - 1] == b' ' => return i,
            _ => {}
        }
    }
    line.len()
}

/// Whether the first command of `line` asks for JSON (`--json`).
fn asks_json(line: &str) -> bool {
    line[..first_command_end(line)].contains(" --json")
}

/// The verb path an example line runs (the subcommand names after `mslink`).
fn verb_of(line: &str, all: &[(String, clap::Command)]) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some(start) = words.iter().position(|w| *w == "mslink") else {
        return String::new();
    };
    let mut path = String::new();
    for w in &words[start + 1..] {
        let p = if path.is_empty() {
            w.to_string()
        } else {
            format!("{path} {w}")
        };
        if all.iter().any(|(q, _)| *q == p) {
            path = p;
        } else {
            break;
        }
    }
    path
}

fn shortened(line: &str, verb: &str) -> String {
    let Some((_, extra)) = SHORTEN.iter().find(|(v, _)| *v == verb) else {
        return line.to_string();
    };
    if line.contains("--estimate") {
        return line.to_string();
    }
    let end = first_command_end(line);
    format!("{} {extra} {}", line[..end].trim_end(), &line[end..])
}

fn sh(line: &str, dir: &Path) -> Command {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_mslink"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", path)
        // `mslink sim --calibrate` keeps its figures here, not in the user's cache.
        .env("MSLINK_CALIBRATION", dir.join("calibration.json"))
        .stdin(Stdio::null());
    c
}

/// Runs one example to completion (a minute at most) and checks it.
fn run_example(verb: &str, line: &str, dir: &Path) {
    let mut child = sh(line, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut so, mut se) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut v).unwrap();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut v).unwrap();
        v
    });
    let status = child.wait().unwrap();
    let (out, err) = (t_out.join().unwrap(), t_err.join().unwrap());
    assert!(
        status.success(),
        "`mslink {verb}` example failed ({status}): {line}\nstderr: {}",
        String::from_utf8_lossy(&err)
    );
    let end = first_command_end(line);
    let redirected = !line[end..].is_empty() && !line[end..].starts_with('#');
    if asks_json(line) && !redirected {
        let v: Result<serde_json::Value, _> = serde_json::from_slice(&out);
        assert!(
            v.is_ok(),
            "`{line}`: --json must print one JSON document on stdout, got: {}",
            String::from_utf8_lossy(&out)
        );
    }
}

/// Runs an example again with its output read by `head -c1`, which closes the pipe after one
/// byte: the command must end quietly (status 0, or 141 as for SIGPIPE), never with a panic or
/// an error message.
fn run_into_closed_pipe(verb: &str, line: &str, dir: &Path) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_mslink"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; (\n{line}\n) | head -c1 > /dev/null"
        ))
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 141))
            && !err.contains("panicked")
            && !err.contains("Broken pipe"),
        "`mslink {verb}` example into a closed pipe ended with {}: {line}\nstderr: {err}",
        out.status
    );
}

/// A bench server example started in the background; returns it and the address it printed.
fn start_server(line: &str, dir: &Path) -> (std::process::Child, String) {
    let line = line.replace("127.0.0.1:7000", "127.0.0.1:0");
    let mut child = sh(&format!("exec {}", &line[..first_command_end(&line)]), dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("`{line}` printed {first:?}"))
        .to_string();
    (child, addr)
}

/// `mslink tunnel CONFIG`: a daemon, in a private network namespace; still running after 2 s.
fn run_daemon(line: &str, dir: &Path) {
    let mut child = Command::new("unshare")
        .arg("--net")
        .arg("sh")
        .arg("-c")
        .arg(format!("ip link set lo up && exec {line}"))
        .current_dir(dir)
        .env(
            "PATH",
            format!(
                "{}:{}",
                PathBuf::from(env!("CARGO_BIN_EXE_mslink"))
                    .parent()
                    .unwrap()
                    .display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let early = child.try_wait().unwrap();
    // SAFETY: kill has no memory preconditions; the pid is our own child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(
        early.is_none(),
        "`{line}` exited early ({early:?}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "`{line}` did not stop cleanly on SIGTERM: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn needs_root(verb: &str, line: &str) -> bool {
    verb == "emulate"
        || line.contains("--netns")
        || is_daemon(verb, line)
        || verb == "validate" && !line.contains("--sim-only") && !line.contains("--reuse-real")
}

fn is_daemon(verb: &str, line: &str) -> bool {
    verb == "tunnel" && line.contains(".toml")
}

/// The files the examples name: the repository's scenarios, sample link files and traces,
/// and a tunnel configuration with its pre-shared key.
fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("mslink-convention-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("traces")).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for shared in ["scenarios", "claims", "links"] {
        std::os::unix::fs::symlink(repo.join(shared).canonicalize().unwrap(), d.join(shared))
            .unwrap();
    }
    // The shipped traces, each linked into a folder of the scratch's own, so that examples
    // writing into traces/ write there and not into the repository.
    for e in std::fs::read_dir(repo.join("traces")).unwrap() {
        let e = e.unwrap();
        std::os::unix::fs::symlink(
            e.path().canonicalize().unwrap(),
            d.join("traces").join(e.file_name()),
        )
        .unwrap();
    }
    let psk = Command::new(env!("CARGO_BIN_EXE_mslink"))
        .args(["tunnel", "genpsk"])
        .output()
        .unwrap();
    std::fs::write(d.join("psk"), &psk.stdout).unwrap();
    std::fs::write(
        d.join("a.toml"),
        "listen = '127.0.0.1:51900'\npsk_file = 'psk'\n[tun]\nname = 'mslconv0'\naddress = '10.189.0.1/24'\n",
    )
    .unwrap();
    d
}

#[test]
fn every_verb_has_the_convention_flags_or_a_stated_exemption() {
    let all = verbs();
    let mut problems = Vec::new();
    for (path, cmd) in &all {
        let leaf = cmd.get_subcommands().all(|s| s.get_name() == "help") || path == "tunnel"; // `tunnel CONFIG` runs; its subcommands are the key tools
        if !leaf || path.is_empty() {
            continue;
        }
        let has = |long: &str| cmd.get_arguments().any(|a| a.get_long() == Some(long));
        let exempt = |flag: &str| EXEMPT.iter().any(|(p, f, _)| p == path && *f == flag);
        if !has("json") && !exempt("--json") {
            problems.push(format!("mslink {path}: no --json"));
        }
        let quiet = cmd.get_arguments().find(|a| a.get_long() == Some("quiet"));
        match quiet {
            Some(q) if q.get_short() != Some('q') => {
                problems.push(format!("mslink {path}: --quiet without -q"))
            }
            None if !exempt("--quiet") => problems.push(format!("mslink {path}: no -q/--quiet")),
            _ => {}
        }
        if has("json") && exempt("--json") || quiet.is_some() && exempt("--quiet") {
            problems.push(format!("mslink {path}: exempt from a flag it has"));
        }
    }
    for (p, _, _) in EXEMPT {
        assert!(
            all.iter().any(|(q, _)| q == p),
            "exemption for unknown verb {p}"
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_help_ends_with_examples_that_run() {
    let all = verbs();
    let root = root();
    let dir = scratch();
    // The verbs whose text (0) or JSON (1) output has met a closed pipe.
    let mut piped = std::collections::HashSet::new();
    for (path, cmd) in &all {
        let mut cmd = cmd.clone();
        let help = cmd.render_long_help().to_string();
        let lines = examples(&help);
        assert!(
            !lines.is_empty(),
            "`mslink {path} --help` has no Examples: block"
        );
        let mut server: Option<(std::process::Child, String)> = None;
        for line in &lines {
            let verb = verb_of(line, &all);
            assert!(
                line.contains("mslink"),
                "`mslink {path}` example runs no mslink: {line}"
            );
            if needs_root(&verb, line) && !root {
                eprintln!("skipped (not root): {line}");
                continue;
            }
            if run_elsewhere(line) {
                continue;
            }
            if verb == "bench server" {
                server = Some(start_server(line, &dir));
                continue;
            }
            let mut run = shortened(line, &verb);
            if verb == "bench client" {
                let (_, addr) = server
                    .as_ref()
                    .unwrap_or_else(|| panic!("`{line}`: no bench server example before it"));
                run = run.replace("127.0.0.1:7000", addr);
            }
            if is_daemon(&verb, line) {
                run_daemon(&run, &dir);
            } else {
                run_example(&verb, &run, &dir);
                let kind = usize::from(asks_json(&run));
                if !verb.starts_with("bench")
                    && !needs_root(&verb, line)
                    && piped.insert((verb.clone(), kind))
                {
                    run_into_closed_pipe(&verb, &run, &dir);
                }
            }
        }
        if let Some((mut s, _)) = server {
            let st = s.wait().unwrap();
            assert!(
                st.success(),
                "`mslink {path}`: the bench server exited with {st}"
            );
        }
    }
    // `--out` folders were created by the examples that name nested ones.
    assert!(dir.join("results/fig7").is_dir());
    assert!(dir.join("expanded/walls.trace").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn completions_and_man_pages_cover_every_verb() {
    let all = verbs();
    for shell in ["bash", "zsh", "fish"] {
        let o = Command::new(env!("CARGO_BIN_EXE_mslink"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(o.status.success());
        let text = String::from_utf8(o.stdout).unwrap();
        for (path, _) in &all {
            if let Some(last) = path.split(' ').next_back().filter(|s| !s.is_empty()) {
                assert!(text.contains(last), "{shell} completions lack {path}");
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("mslink-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_mslink"))
        .args(["man", "--json", "--out"])
        .arg(dir.join("new/man1"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["pages"].as_array().unwrap().len(), all.len());
    for (path, _) in &all {
        let name = if path.is_empty() {
            "mslink.1".to_string()
        } else {
            format!("mslink-{}.1", path.replace(' ', "-"))
        };
        let page = std::fs::read_to_string(dir.join("new/man1").join(&name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(page.contains(".TH"), "{name} is not a man page");
        assert!(page.contains("Examples:"), "{name} lacks the examples");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Errors name the option and the fix; negative numbers reach the range checks.
#[test]
fn errors_name_the_option_and_the_fix() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_mslink"))
            .args(args)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = run(&["demo", "--loss", "-0.1"]);
    assert!(e.contains("--loss must be in [0, 1)"), "{e}");
    let e = run(&["bench", "client", "--backend", "tcp"]);
    assert!(e.contains("--addr is required"), "{e}");
    // A refused connection says so once.
    let e = run(&[
        "bench",
        "client",
        "--backend",
        "tcp",
        "--addr",
        "127.0.0.1:1",
        "--quick",
    ]);
    assert_eq!(e.matches("refused").count(), 1, "{e}");
    // A misspelt key or name keeps the override's array indices and gets the nearest valid one.
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/004/fig2_ftp_one_wlan.toml");
    let scenario = scenario.to_str().unwrap();
    let out = std::env::temp_dir().join("mslink-misspelt");
    let e = run(&[
        "sim",
        scenario,
        "--out",
        out.to_str().unwrap(),
        "--set",
        "segment.1.rate_bp=2e6",
    ]);
    assert!(
        e.contains("key `segment.1.rate_bp`: unknown field `rate_bp` (did you mean `rate_bps`?)"),
        "{e}"
    );
    let e = run(&["emulate", "--scheme", "selective_repat"]);
    assert!(
        e.contains(
            "--scheme: unknown variant `selective_repat` (did you mean `selective_repeat`?)"
        ),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&out);
}
