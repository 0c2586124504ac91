//! Output folders, made before any work starts so that a long job does not fail at its end.
//!
//! Contract: [`out_dir`] creates a folder (and its parents) and its error names the option
//! that gave it and the folder; [`parent_dir`] does the same for the folder a file goes into.

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

/// Creates the folder a file given by `option` goes into.
pub fn parent_dir(file: &Path, option: &str) -> Result<()> {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => out_dir(p, option),
        _ => Ok(()),
    }
}
