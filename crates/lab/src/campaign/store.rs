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
//!
//! The Python package shares the store (`mslink._core.run_jobs`): it ships trace files as
//! name -> text, and [`Traces::Texts`] hashes a text's bytes exactly as a file's, so a run made
//! by either is reused by the other. [`Store::get_run`] reads a stored run back whole (every
//! counter, not only what the writer needs), and [`Store::put_run`] renders a run as
//! `output.rs` renders it, so the stored bytes do not depend on who made the run.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use blake2::{Blake2s256, Digest};
use mslink_sim::{RunResult, Scenario};

use crate::TraceFiles;

/// Where the trace files a scenario names are read from, for a run's key.
#[derive(Clone, Copy)]
pub enum Traces<'a> {
    /// Files, relative to the scenario's folder (what `mslink sim` reads).
    Files(&'a TraceFiles),
    /// Texts by the name the scenario gives (what the Python package ships); a name not in
    /// the map is read as a file.
    Texts(&'a BTreeMap<String, String>, &'a TraceFiles),
}

/// A result store folder.
pub struct Store {
    dir: PathBuf,
    /// Each trace file's content hash, computed once per invocation.
    traces: BTreeMap<PathBuf, [u8; 32]>,
}

impl Store {
    /// Opens (creating) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Store> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Store {
            dir: dir.to_path_buf(),
            traces: BTreeMap::new(),
        })
    }

    /// The key of repetition `rep` of the point scenario `sc`, whose trace files are files
    /// `traces` finds.
    pub fn key(&mut self, sc: &Scenario, rep: u32, traces: &TraceFiles) -> Result<String> {
        self.key_of(sc, rep, Traces::Files(traces))
    }

    /// The key of repetition `rep` of the point scenario `sc`, whose trace files `traces`
    /// gives: a text hashes to the key its file's bytes hash to.
    pub fn key_of(&mut self, sc: &Scenario, rep: u32, traces: Traces<'_>) -> Result<String> {
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
            let files = match traces {
                Traces::Texts(texts, _) if texts.contains_key(&f) => {
                    h.update(f.as_bytes());
                    h.update(bytes_hash(texts[&f].as_bytes()));
                    continue;
                }
                Traces::Texts(_, files) | Traces::Files(files) => files,
            };
            let path = files.path(&f);
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

    /// The stored run of `key` as its rendered text, if there is one.
    pub fn get(&self, key: &str) -> Result<Option<String>> {
        let p = self.path(key);
        match std::fs::read_to_string(&p) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }

    /// The stored run of `key` read back whole, if there is one.
    pub fn get_run(&self, key: &str) -> Result<Option<RunResult>> {
        let Some(text) = self.get(key)? else {
            return Ok(None);
        };
        let r = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: a stored run does not read back",
                self.path(key).display()
            )
        })?;
        Ok(Some(r))
    }

    /// Keeps under `key` the rendered run object that lies at `run` in the committed file
    /// `part` (copied from the file, so a run of a million flows is never held in memory).
    pub(crate) fn put(&self, key: &str, part: &Path, run: std::ops::Range<u64>) -> Result<()> {
        self.write(key, |to, tmp| {
            let mut from =
                std::fs::File::open(part).with_context(|| format!("reading {}", part.display()))?;
            from.seek(SeekFrom::Start(run.start))
                .with_context(|| format!("reading {}", part.display()))?;
            let copied = std::io::copy(&mut from.take(run.end - run.start), to)
                .with_context(|| format!("writing {}", tmp.display()))?;
            if copied != run.end - run.start {
                anyhow::bail!(
                    "{}: {} bytes of a run expected at {}, {copied} found",
                    part.display(),
                    run.end - run.start,
                    run.start
                );
            }
            Ok(())
        })
    }

    /// Keeps run `r` under `key`, rendered as `mslink sim` renders it into its part file (the
    /// same bytes [`Self::put`] copies). `r` is lent for the rendering and left as it was.
    pub fn put_run(&self, key: &str, r: &mut RunResult) -> Result<()> {
        self.write(key, |to, tmp| {
            let mut w = std::io::BufWriter::new(to);
            super::output::write_run(&mut w, r, 6)
                .and_then(|()| w.flush().map_err(Into::into))
                .with_context(|| format!("writing {}", tmp.display()))
        })
    }

    /// Writes the run of `key` with `fill` into a temporary file beside it, then renames it
    /// into place, so a reader never sees half a run.
    fn write(
        &self,
        key: &str,
        fill: impl FnOnce(&mut std::fs::File, &Path) -> Result<()>,
    ) -> Result<()> {
        let p = self.path(key);
        let d = p.parent().context("a store path has a folder")?;
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        // Unique to this process and call: threads (Python's) may put the same run at once.
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = p.with_extension(format!("tmp{}-{n}", std::process::id()));
        let mut to =
            std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
        let filled = fill(&mut to, &tmp);
        drop(to);
        if let Err(e) = filled {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))
    }
}

/// BLAKE2s-256 of bytes in memory (a trace file shipped as text).
fn bytes_hash(bytes: &[u8]) -> [u8; 32] {
    Blake2s256::digest(bytes).into()
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

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = "[sim]\nname = \"t\"\nduration_s = 3\nreps = 2\n\n[[segment]]\nkind = \"wireless\"\nrate_bps = 1000000\ndelay_ms = 5\nframe_bytes = 1000\nerror = { model = \"trace\", file = \"t.trace\" }\n\n[segment.link]\n[[segment.link.service]]\nname = \"u\"\nscheme = \"raw\"\n\n[[flow]]\nname = \"cbr\"\napp = \"cbr\"\nfrom = 0\nto = 1\nrate_bps = 100000\npacket_bytes = 500\n";
    const TRACE: &str = "# mslink error trace\r\nok * 20\r\nloss\nok * 20\n";

    #[test]
    fn a_trace_given_as_text_has_the_key_of_its_file() {
        let d = crate::scratch("store-key");
        std::fs::write(d.join("t.trace"), TRACE).unwrap();
        let sc = Scenario::parse(SCENARIO).unwrap();
        let files = TraceFiles::new(d.clone());
        let mut st = Store::open(&d.join("store")).unwrap();
        let texts = BTreeMap::from([("t.trace".to_string(), TRACE.to_string())]);
        let by_path = st.key(&sc, 1, &files).unwrap();
        assert_eq!(
            st.key_of(&sc, 1, Traces::Texts(&texts, &files)).unwrap(),
            by_path
        );
        // A name missing from the texts is read as a file.
        let none = BTreeMap::new();
        assert_eq!(
            st.key_of(&sc, 1, Traces::Texts(&none, &files)).unwrap(),
            by_path
        );
        // Another text, or another repetition, is another run.
        let other = BTreeMap::from([("t.trace".to_string(), TRACE.replace("\r\n", "\n"))]);
        assert_ne!(
            st.key_of(&sc, 1, Traces::Texts(&other, &files)).unwrap(),
            by_path
        );
        assert_ne!(st.key(&sc, 0, &files).unwrap(), by_path);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_run_put_by_the_api_is_what_the_cli_stores_and_reads() {
        let d = crate::scratch("store-put");
        std::fs::write(d.join("t.trace"), TRACE.replace("\r\n", "\n")).unwrap();
        let sc = Scenario::parse(SCENARIO).unwrap();
        let files = TraceFiles::new(d.clone());
        let mut r = mslink_sim::run_with(&sc, 1, &mut &files, None).unwrap();
        let made = r.clone();
        let mut st = Store::open(&d.join("store")).unwrap();
        let key = st.key(&sc, 1, &files).unwrap();
        assert_eq!(st.get_run(&key).unwrap(), None);
        st.put_run(&key, &mut r).unwrap();
        assert_eq!(r, made, "put_run leaves the run as it was");
        // The bytes the CLI's writer renders, as its part file holds them.
        let mut rendered = Vec::new();
        super::super::output::write_run(&mut rendered, &mut r, 6).unwrap();
        let text = st.get(&key).unwrap().unwrap();
        assert_eq!(text.as_bytes(), &rendered[..]);
        // What the CLI reads back of a hit, and the whole run through the new API.
        let cli = super::super::journal::run_from_text(&text).unwrap();
        assert_eq!(
            (cli.flows, cli.timeseries),
            (made.flows.clone(), made.timeseries.clone())
        );
        assert_eq!(st.get_run(&key).unwrap(), Some(made));
        // The CLI's own put (a range of its part file) keeps the same bytes.
        let part = d.join("part");
        let mut bytes = b"    {\n      \"run\": ".to_vec();
        let start = bytes.len() as u64;
        bytes.extend_from_slice(&rendered);
        let end = bytes.len() as u64;
        bytes.extend_from_slice(b"\n    }");
        std::fs::write(&part, &bytes).unwrap();
        let other = Store::open(&d.join("store2")).unwrap();
        other.put(&key, &part, start..end).unwrap();
        assert_eq!(other.get(&key).unwrap().unwrap(), text);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
