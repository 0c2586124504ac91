//! Where results come from: the git commit of the checkout that holds a scenario or ledger.
//!
//! Contract. [`git_commit`] asks git (when installed) for the short commit of the checkout
//! holding a folder, marked `+dirty` when tracked files have uncommitted changes, so a report
//! made from a modified tree says so; outside a checkout, or without git, there is no commit.

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
