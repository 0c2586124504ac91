//! What lets a killed `mslink sim` be finished later: `progress.json`, and reading the runs an
//! interrupted invocation committed back out of `summary.json.part`.
//!
//! Contract. While `mslink sim` runs, `OUT/progress.json` ([`Progress`]) holds everything the
//! invocation was given that decides its results (the scenario's text and folder, the
//! overrides, the output options, the mslink version) and says `"state": "running"`; it says
//! `"complete"` once every file is written. Each run is committed as it is handed to the
//! writer: its rows are flushed to the tables and its entry to `summary.json.part`, so a kill
//! leaves every finished run readable. `mslink sim --resume OUT` reads the progress file back,
//! replays the committed entries of the part file ([`read_committed`]) through a fresh writer,
//! and runs only the rest: since runs are deterministic and the writer is a pure function of
//! the runs in order, the files are byte-identical to an uninterrupted invocation's.
//!
//! The part file is written by `output.rs` as the pretty printer lays out summary.json's
//! `runs`: entries four spaces deep, each from a line `    {` to a line `    }` (a following
//! entry's separating comma ends that line). Lines inside an entry are deeper, and JSON strings
//! hold no raw newline, so those two lines delimit the entries; an entry cut short by the kill
//! has no closing line and is dropped. Only what the writer needs of a run is read back (its
//! flows, time series and the frame counters of each segment direction); the entry's text is
//! copied as it was, so summary.json keeps every counter.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use mslink_sim::world::{DirectionResult, FlowResult, SegmentResult, TimePoint};
use mslink_sim::RunResult;

/// The progress file in the results folder.
pub(crate) const FILE: &str = "progress.json";

/// What an invocation was given, and how far it got.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Progress {
    /// `running` while runs are being written, `complete` when every file is.
    pub state: String,
    /// What to do if the state says running and no `mslink sim` is writing here.
    pub note: String,
    /// The process that writes this folder.
    pub pid: u32,
    /// Runs in the invocation.
    pub runs_total: usize,
    /// The scenario file as given, and its folder made absolute (trace files are read
    /// relative to it).
    pub scenario_file: PathBuf,
    pub scenario_dir: PathBuf,
    /// The scenario's text when the invocation began.
    pub scenario_text: String,
    /// `--set` overrides, with `--reps` as `sim.reps`, in order.
    pub overrides: Vec<(String, String)>,
    /// `--format`, `--stats`, `--pcap`, `--no-plots`.
    pub format: super::Format,
    pub stats: super::StatsMode,
    pub pcap: bool,
    pub no_plots: bool,
    /// The mslink that wrote the runs: another version could give other results.
    pub mslink_version: String,
    /// `--store`, if given.
    #[serde(default)]
    pub store: Option<PathBuf>,
}

impl Progress {
    /// The record of invocation `g` of scenario file `path`, `runs_total` runs, as it starts.
    pub(crate) fn begin(g: &super::Given, path: &Path, runs_total: usize) -> Progress {
        let args = &g.args;
        Progress {
            state: "running".into(),
            note: format!(
                "runs are committed one at a time (flows.csv and timeseries.csv rows, summary.json.part); if no process {} is running, this invocation was interrupted: `mslink sim --resume {}` makes only the runs that are missing",
                std::process::id(),
                args.out.as_deref().unwrap_or(Path::new(".")).display()
            ),
            pid: std::process::id(),
            runs_total,
            scenario_file: path.to_path_buf(),
            scenario_dir: g.dir.clone(),
            scenario_text: g.text.clone(),
            overrides: g.sets.clone(),
            format: args.format,
            stats: args.stats,
            pcap: args.pcap,
            no_plots: args.no_plots,
            mslink_version: env!("CARGO_PKG_VERSION").into(),
            store: args.store.clone(),
        }
    }

    /// Reads `out/progress.json`.
    pub(crate) fn read(out: &Path) -> Result<Progress> {
        let p = out.join(FILE);
        let text = std::fs::read_to_string(&p).with_context(|| {
            format!(
                "reading {} (--resume needs the folder of an earlier `mslink sim`)",
                p.display()
            )
        })?;
        let pr: Progress =
            serde_json::from_str(&text).with_context(|| format!("reading {}", p.display()))?;
        let ours = env!("CARGO_PKG_VERSION");
        if pr.mslink_version != ours {
            bail!(
                "{} was written by mslink {}, this is {ours}: its runs may differ from this version's; run the scenario again without --resume",
                p.display(),
                pr.mslink_version
            );
        }
        Ok(pr)
    }

    /// Writes `out/progress.json` (through a temporary file, so a kill never leaves half of
    /// it).
    pub(crate) fn write(&self, out: &Path) -> Result<()> {
        let p = out.join(FILE);
        let tmp = out.join("progress.json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(self)? + "\n")
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))
    }
}

/// One committed run: its entry's text (from `    {` to `    }`) and what the writer needs of
/// it.
pub(crate) struct Committed {
    pub point: usize,
    pub text: String,
    pub run: RunResult,
}

/// The parts of a summary entry the writer reads back.
#[derive(serde::Deserialize)]
struct Entry {
    point: usize,
    run: RunView,
}

#[derive(serde::Deserialize)]
struct RunView {
    rep: u32,
    seed: u64,
    events: u64,
    simulated_s: f64,
    flows: Vec<FlowResult>,
    timeseries: Vec<TimePoint>,
    segments: Vec<SegmentView>,
}

#[derive(serde::Deserialize)]
struct SegmentView {
    segment: usize,
    kind: String,
    directions: [DirectionView; 2],
}

#[derive(serde::Deserialize)]
struct DirectionView {
    sent: u64,
    bytes: u64,
    lost: u64,
    truncated: u64,
    corrupted: u64,
    queue_drops: u64,
    refused: u64,
}

impl RunView {
    /// The run the writer is given: these parts, the rest empty.
    fn into_run(self) -> RunResult {
        RunResult {
            rep: self.rep,
            seed: self.seed,
            events: self.events,
            simulated_s: self.simulated_s,
            flows: self.flows,
            timeseries: self.timeseries,
            segments: self
                .segments
                .into_iter()
                .map(|s| {
                    let [a, b] = s.directions;
                    SegmentResult {
                        segment: s.segment,
                        kind: s.kind,
                        directions: [a.into(), b.into()],
                        ends: Vec::new(),
                    }
                })
                .collect(),
            hosts: Vec::new(),
        }
    }
}

/// What the writer needs of a run rendered as summary.json's `run` object (`store.rs`).
pub(crate) fn run_from_text(text: &str) -> Result<RunResult> {
    let v: RunView = serde_json::from_str(text).context("a stored run does not read back")?;
    Ok(v.into_run())
}

impl From<DirectionView> for DirectionResult {
    fn from(d: DirectionView) -> Self {
        DirectionResult {
            sent: d.sent,
            bytes: d.bytes,
            lost: d.lost,
            truncated: d.truncated,
            corrupted: d.corrupted,
            queue_drops: d.queue_drops,
            refused: d.refused,
            ..DirectionResult::default()
        }
    }
}

/// Calls `each` with every run committed in the part file `path`, in order; an entry the kill
/// cut short ends the list. Returns how many there were.
pub(crate) fn read_committed(
    path: &Path,
    mut each: impl FnMut(Committed) -> Result<()>,
) -> Result<usize> {
    let f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let lines = std::io::BufReader::new(f).lines();
    let mut n = 0;
    let mut text = String::new();
    let mut inside = false;
    for line in lines {
        let Ok(line) = line else {
            break; // A torn last line (not UTF-8 where it was cut): nothing after it counts.
        };
        if !inside {
            if line == "    {" {
                inside = true;
                text.clear();
                text.push_str(&line);
            }
            continue;
        }
        text.push('\n');
        let end = line == "    }" || line == "    },";
        text.push_str(if end { "    }" } else { &line });
        if !end {
            continue;
        }
        inside = false;
        let e: Entry = serde_json::from_str(&text)
            .with_context(|| format!("{}: run {n} does not read back as a run", path.display()))?;
        let run = e.run.into_run();
        each(Committed {
            point: e.point,
            text: std::mem::take(&mut text),
            run,
        })?;
        n += 1;
    }
    Ok(n)
}
