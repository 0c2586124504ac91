//! Output folders, made before any work starts so that a long job does not fail at its end.
//!
//! Contract: [`out_dir`] creates a folder (and its parents) and its error names the option
//! that gave it and the folder; [`parent_dir`] does the same for the folder a file goes into;
//! [`write_to`] writes a file given by an option, or standard output; [`SharedFile`] is a
//! buffered file a driver can flush on a timer while a writer owns it.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Creates the folder `dir` given by `option` (and its parents).
pub fn out_dir(dir: &Path, option: &str) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "creating the folder {} ({option}); give a folder you may write to",
            dir.display()
        )
    })
}

/// Writes `body` through a buffer to the file `out` given by `option` (its folder created
/// first), or to standard output when there is none; an error names the file.
pub fn write_to(
    out: Option<&Path>,
    option: &str,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    match out {
        Some(path) => {
            parent_dir(path, option)?;
            let what = || format!("writing {}", path.display());
            let f = std::fs::File::create(path).with_context(what)?;
            let mut w = std::io::BufWriter::new(f);
            body(&mut w).and_then(|()| w.flush()).with_context(what)
        }
        None => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            body(&mut w)
                .and_then(|()| w.flush())
                .context("writing to standard output")
        }
    }
}

/// Creates the folder a file given by `option` goes into.
pub fn parent_dir(file: &Path, option: &str) -> Result<()> {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => out_dir(p, option),
        _ => Ok(()),
    }
}

/// A buffered file whose clones write to one buffer, so a writer that owns its output (a pcap
/// writer) can be flushed from outside, on a timer: files of a long run are then readable up
/// to the last flush even if the process is killed (`SIGKILL` runs no destructor). For one
/// thread.
#[derive(Clone, Debug)]
pub struct SharedFile(std::rc::Rc<std::cell::RefCell<std::io::BufWriter<std::fs::File>>>);

impl SharedFile {
    /// Creates (or truncates) `path`, with a buffer of `capacity` bytes.
    pub fn create(path: &Path, capacity: usize) -> std::io::Result<SharedFile> {
        let f = std::fs::File::create(path)?;
        Ok(SharedFile(std::rc::Rc::new(std::cell::RefCell::new(
            std::io::BufWriter::with_capacity(capacity, f),
        ))))
    }
}

impl std::io::Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.borrow_mut().write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.borrow_mut().flush()
    }
}
