//! The result store of `mslink sim --store DIR`: runs kept by what decides them, so a later
//! invocation (another sweep, more repetitions, a rerun after a crash) reuses the runs it
//! shares with earlier ones instead of making them again.
//!
//! Contract. A run is a pure function of its sweep point's scenario, its repetition and the
//! trace files the scenario reads (docs/simulator.md: same scenario and seed, byte-identical
//! results at any `--jobs`), and of the simulator's code. [`Store::key`] hashes exactly those
//! (BLAKE2s-256): the point's scenario as TOML with its `[sweep]` table and `sim.reps` taken out
//! (a run does not depend on how many others there are or on the sweep that made its point),
//! the repetition, the content of every trace file it names, and the mslink version. A stored
//! run is its summary entry's `run` object as `output.rs` renders it (six spaces deep), in
//! `DIR/<first two hex digits>/<key>.json`, written to a temporary file and renamed, so a kill
//! never leaves half a run. A hit is replayed as `--resume` replays committed runs
//! (`journal.rs`), so the files of an invocation are byte-identical whether its runs came
//! from the store or not. The store only grows; delete the folder to empty it.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use blake2::{Blake2s256, Digest};
use mslink_sim::Scenario;

use crate::TraceFiles;

/// A result store folder.
pub(crate) struct Store {
    dir: PathBuf,
    /// Each trace file's content hash, computed once per invocation.
    traces: BTreeMap<PathBuf, [u8; 32]>,
}

impl Store {
    /// Opens (creating) the store in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<Store> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Store {
            dir: dir.to_path_buf(),
            traces: BTreeMap::new(),
        })
    }

    /// The key of repetition `rep` of the point scenario `sc`, whose trace files `traces` finds.
    pub(crate) fn key(&mut self, sc: &Scenario, rep: u32, traces: &TraceFiles) -> Result<String> {
        let mut bare = sc.clone();
        bare.sweep = toml::Table::new();
        bare.sim.reps = 1;
        let text = toml::to_string(&bare).context("the scenario as TOML, for the store's key")?;
        let mut h = Blake2s256::new();
        for part in [
            "mslink-sim-run/1",
            env!("CARGO_PKG_VERSION"),
            &text,
            &rep.to_string(),
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        for f in sc.trace_files() {
            let path = traces.path(&f);
            let digest = match self.traces.get(&path) {
                Some(d) => *d,
                None => {
                    let d = file_hash(&path)?;
                    self.traces.insert(path.clone(), d);
                    d
                }
            };
            h.update(f.as_bytes());
            h.update(digest);
        }
        Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(format!("{key}.json"))
    }

    /// The stored run of `key`, if there is one.
    pub(crate) fn get(&self, key: &str) -> Result<Option<String>> {
        let p = self.path(key);
        match std::fs::read_to_string(&p) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }

    /// Keeps under `key` the rendered run object that lies at `run` in the committed file
    /// `part` (copied from the file, so a run of a million flows is never held in memory).
    pub(crate) fn put(&self, key: &str, part: &Path, run: std::ops::Range<u64>) -> Result<()> {
        let p = self.path(key);
        let d = p.parent().context("a store path has a folder")?;
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        let tmp = p.with_extension(format!("tmp{}", std::process::id()));
        let mut from =
            std::fs::File::open(part).with_context(|| format!("reading {}", part.display()))?;
        from.seek(SeekFrom::Start(run.start))
            .with_context(|| format!("reading {}", part.display()))?;
        let mut to =
            std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
        let copied = std::io::copy(&mut from.take(run.end - run.start), &mut to)
            .with_context(|| format!("writing {}", tmp.display()))?;
        if copied != run.end - run.start {
            anyhow::bail!(
                "{}: {} bytes of a run expected at {}, {copied} found",
                part.display(),
                run.end - run.start,
                run.start
            );
        }
        drop(to);
        std::fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))
    }
}

/// BLAKE2s-256 of a file's content.
fn file_hash(path: &Path) -> Result<[u8; 32]> {
    let mut f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut h = Blake2s256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().into())
}
