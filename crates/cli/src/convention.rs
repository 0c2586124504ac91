//! The shared pieces of the CLI convention (docs/cli.md): progress bars and output folders.
//!
//! Contract: [`bar`] draws on standard error only when standard error is a terminal and the
//! verb is not `-q/--quiet` (so captured output, pipes and tests never see it), with the
//! elapsed time and an ETA; [`out_dir`] creates an `--out` folder (and its parents) before any
//! work starts, and its error names the option and the folder.

use std::io::IsTerminal;
use std::sync::Mutex;

use mslink_lab::reproduce::Progress;

use anyhow::{Context, Result};

/// A progress bar of `len` steps of `what`, hidden unless standard error is a terminal and
/// `quiet` is off.
pub fn bar(len: u64, what: &str, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} [{{elapsed_precise}}] {{bar:30}} {{pos}}/{{len}} {what}, ETA {{eta}} {{msg}}"
        ))
        .expect("static template"),
    );
    b.enable_steady_tick(std::time::Duration::from_millis(200));
    b
}

/// The progress bar and notes of the CLI convention (docs/cli.md).
pub struct Bar {
    quiet: bool,
    bar: Mutex<Option<indicatif::ProgressBar>>,
}

impl Bar {
    /// A bar shown unless `quiet` or standard error is not a terminal; notes unless `quiet`.
    pub fn new(quiet: bool) -> Bar {
        Bar {
            quiet,
            bar: Mutex::new(None),
        }
    }
}

impl Progress for Bar {
    fn phase(&self, len: u64, what: &str) {
        *self.bar.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar(len, what, self.quiet));
    }
    fn tick(&self) {
        if let Some(b) = &*self.bar.lock().unwrap_or_else(|e| e.into_inner()) {
            b.inc(1);
        }
    }
    fn done(&self) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take() {
            b.finish_and_clear();
        }
    }
    fn note(&self, line: &str) {
        if !self.quiet {
            eprintln!("mslink: {line}");
        }
    }
    fn warn(&self, line: &str) {
        eprintln!("mslink: {line}");
    }
}

pub use mslink_io::files::{out_dir, parent_dir};

/// The mslink executable to start for a child run (`bench local`'s server, `reproduce`'s
/// benchmark runs): `MSLINK_EXE` when set (an override for tests and wrappers), else this process's own
/// executable (the Python package's `mslink` script execs the executable, so this holds there
/// too).
pub fn mslink_exe() -> Result<std::path::PathBuf> {
    match std::env::var_os("MSLINK_EXE") {
        Some(p) => Ok(std::path::PathBuf::from(p)),
        None => std::env::current_exe().context("finding the mslink executable"),
    }
}
