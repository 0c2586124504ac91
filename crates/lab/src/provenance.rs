//! Where results come from: the git commit of the checkout that holds a scenario or ledger,
//! and the machine that made them.
//!
//! Contract. [`git_commit`] asks git (when installed) for the short commit of the checkout
//! holding a folder, marked `+dirty` when tracked files have uncommitted changes, so a report
//! made from a modified tree says so; outside a checkout, or without git, there is no commit.
//! [`machine`] names the CPU, its count and the SIMD flags that change what mslink measures,
//! from `/proc/cpuinfo` ("unknown CPU" where there is none).

use std::path::Path;

/// The commit of the git checkout holding `dir` (12 hex digits), `+dirty` when tracked files
/// have changes; None outside git or without git. For the provenance of results.
pub fn git_commit(dir: &Path) -> Option<String> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    let commit = String::from_utf8_lossy(&git(&["rev-parse", "--short=12", "HEAD"])?.stdout)
        .trim()
        .to_string();
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|o| !o.stdout.is_empty());
    Some(if dirty {
        format!("{commit}+dirty")
    } else {
        commit
    })
}

/// `AMD EPYC 7B13, 2 CPUs (avx2 avx512f gfni)`: the CPU model, the number of CPUs and which
/// of the flags mslink dispatches on it has.
pub fn machine() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let model = field("model name").unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let flags = field("flags").unwrap_or_default();
    let have: Vec<&str> = ["avx2", "avx512f", "gfni", "asimd"]
        .into_iter()
        .filter(|f| flags.split_whitespace().any(|x| x == *f))
        .collect();
    format!("{model}, {cpus} CPUs ({})", have.join(" "))
}
