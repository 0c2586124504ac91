//! A campaign: every sweep point and repetition of a scenario run, and its results folder
//! written (what `mslink sim` does, as a library).
//!
//! Contract: results are a pure function of the scenario, the overrides and the seeds: runs
//! execute on `jobs` threads but are written in (sweep point, repetition) order, so the
//! output files are byte-identical at any `jobs`. Wall-clock figures go to `timing.json`
//! only. Trace files named in the scenario are read relative to the scenario's folder, each
//! once, streamed into a packed trace that every run shares. Errors name the file, the line or
//! key, and what was expected. Nothing is printed: notes, warnings and the progress of the
//! runs go to the caller's [`Progress`]; what the caller prints at the end comes back in
//! [`Outcome`]. The results folder is described in `output.rs`, resuming in `journal.rs`, the
//! result store in `store.rs`, the resource check in `resources.rs`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use mslink_sim::{overrides, RunResult, Scenario};

use crate::parallel::parallel_in_order;
use crate::progress::Progress;
use crate::TraceFiles;

pub mod calibrate;
mod digest;
mod journal;
mod output;
mod parquet_out;
mod pcap;
mod resources;
mod stats_table;
mod store;

pub use resources::mem_available;
pub use stats_table::StatsMode;
pub use store::{Store, Traces};

/// What a campaign is given: the options of `mslink sim`, declared once here (the CLI parses
/// them with the `clap` feature).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SimOptions {
    /// The scenario file (TOML).
    #[cfg_attr(feature = "clap", arg(required_unless_present_any = ["resume", "calibrate"]))]
    pub scenario: Option<PathBuf>,
    /// Finish the runs an interrupted `mslink sim` left in this folder (killed, timed out,
    /// machine restarted): what was committed is kept, only the missing runs are made, and
    /// the files come out byte-identical to an uninterrupted invocation's. The scenario and
    /// options are read from FOLDER/progress.json.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FOLDER", conflicts_with_all = ["scenario", "out", "sets", "reps", "estimate", "pcap", "no_plots", "force", "stats", "format", "store"]))]
    pub resume: Option<PathBuf>,
    /// Folder for the results (created if missing).
    #[cfg_attr(feature = "clap", arg(long, required_unless_present_any = ["estimate", "resume", "calibrate"]))]
    pub out: Option<PathBuf>,
    /// Runs in parallel (default: the number of CPUs).
    #[cfg_attr(feature = "clap", arg(long))]
    pub jobs: Option<usize>,
    /// Repetitions (overrides sim.reps).
    #[cfg_attr(feature = "clap", arg(long))]
    pub reps: Option<u32>,
    /// Override a scenario key, e.g. --set sim.seed=3 --set flow.0.rate_bps=2e6.
    #[cfg_attr(feature = "clap", arg(long = "set", value_name = "KEY=VALUE"))]
    pub sets: Vec<String>,
    /// Also print summary.json (per flow, segment, link service counters, events) on standard
    /// output, as one JSON document; with --estimate, the estimate instead.
    #[cfg_attr(feature = "clap", arg(long))]
    pub json: bool,
    /// Print the estimate of the runs (flows, events per simulated second, memory at the peak
    /// and what holds it, run time, memory available) on standard output and stop without
    /// running.
    #[cfg_attr(feature = "clap", arg(long))]
    pub estimate: bool,
    /// Run even when the estimate says the runs need more memory than is available (the
    /// estimate is an upper bound: full time series, full TCP windows).
    #[cfg_attr(feature = "clap", arg(long))]
    pub force: bool,
    /// Also write a pcap of the IP packets entering each segment in each direction, per run:
    /// OUT/pcap/p<point>_r<rep>_seg<i>_<ltr|rtl>.pcap (raw IPv4; tshark dissects them).
    #[cfg_attr(feature = "clap", arg(long))]
    pub pcap: bool,
    /// Format of the tables: csv (flows.csv, timeseries.csv) or parquet (flows.parquet,
    /// timeseries.parquet: the same columns and values, typed).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = Format::Csv))]
    pub format: Format,
    /// A result store: runs already made (by any earlier invocation with the same point
    /// scenario, repetition, trace files and mslink version) are taken from DIR instead of
    /// being made again, and new ones are kept there; the files come out byte-identical
    /// either way (docs/simulator.md, "Result store").
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub store: Option<PathBuf>,
    /// What stats.csv holds: `flows` (each flow's metrics over the repetitions, one row per
    /// point, flow and metric), `summary` (one row per point and metric, over the mean of all
    /// flows: for runs of many flows) or `none` (no stats.csv).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = StatsMode::Flows))]
    pub stats: StatsMode,
    /// Do not draw OUT/plots/*.png and *.svg (throughput against time; with a sweep, each
    /// metric against the first numeric sweep key, or against the frame loss measured in the
    /// runs when the sweep sets error models).
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_plots: bool,
    /// Measure what simulating costs on this machine (a few seconds of probe runs) and keep
    /// the figures for later estimates, in $MSLINK_CALIBRATION, else
    /// $XDG_CACHE_HOME/mslink/calibration.json, else ~/.cache/mslink/calibration.json. Without
    /// one, estimates use figures measured on the developers' machine.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with_all = ["scenario", "resume", "out", "estimate", "store"]))]
    pub calibrate: bool,
}

/// Format of flows and timeseries (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// flows.csv, timeseries.csv.
    Csv,
    /// flows.parquet, timeseries.parquet.
    Parquet,
}

/// What a campaign leaves for its caller to print.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The estimate (`estimate`), for standard output.
    pub estimate: Option<String>,
    /// The closing lines (runs, events, rate, folder, and the digest table of the results).
    pub summary: String,
    /// The results folder, once every file is written.
    pub out: Option<PathBuf>,
}

/// A run made now, or taken from the store (its rendered run object).
enum Made {
    Ran(RunResult),
    Stored(String),
}

struct Job<'a> {
    point: usize,
    rep: u32,
    scenario: &'a Scenario,
}

fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>> {
    sets.iter()
        .map(|s| overrides::parse_set(s).with_context(|| format!("--set {s:?}")))
        .collect()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Metrics per flow in stats.csv.
const SUMMARISED_METRICS: usize = mslink_sim::world::SUMMARISED.len();
/// Above this many stats.csv rows, a note points at `--stats summary`.
const STATS_ROWS_NOTE: usize = 1_000_000;

/// The options and scenario of an invocation: as given, or, with `resume`, as the interrupted
/// one recorded them.
struct Given {
    args: SimOptions,
    text: String,
    /// Overrides, `--reps` included as `sim.reps`.
    sets: Vec<(String, String)>,
    /// The folder trace files are read relative to.
    dir: PathBuf,
    resume: Option<journal::Progress>,
}

fn given(args: &SimOptions) -> Result<Given> {
    if let Some(out) = &args.resume {
        let p = journal::Progress::read(out)?;
        if p.state == "complete" {
            bail!(
                "{} holds a complete run ({} runs): nothing to resume",
                out.display(),
                p.runs_total
            );
        }
        let args = SimOptions {
            scenario: Some(p.scenario_file.clone()),
            out: Some(out.clone()),
            sets: Vec::new(),
            reps: None,
            format: p.format,
            stats: p.stats,
            store: p.store.clone(),
            pcap: p.pcap,
            no_plots: p.no_plots,
            ..args.clone()
        };
        return Ok(Given {
            args,
            text: p.scenario_text.clone(),
            sets: p.overrides.clone(),
            dir: p.scenario_dir.clone(),
            resume: Some(p),
        });
    }
    let path = args
        .scenario
        .as_deref()
        .context("a scenario file is needed (or --resume FOLDER)")?;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading scenario {}", path.display()))?;
    let mut sets = parse_sets(&args.sets)?;
    if let Some(r) = args.reps {
        if r == 0 {
            bail!("--reps must be at least 1");
        }
        sets.push(("sim.reps".into(), r.to_string()));
    }
    let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = std::path::absolute(&parent).unwrap_or(parent);
    Ok(Given {
        args: args.clone(),
        text,
        sets,
        dir,
        resume: None,
    })
}

/// The scenario of every sweep point, validated, and the notes about them.
struct Plan {
    base: Scenario,
    points: Vec<Vec<(String, String)>>,
    scenarios: Vec<Scenario>,
}

fn plan(g: &Given, path: &Path, progress: &dyn Progress) -> Result<Plan> {
    let base = Scenario::parse(&g.text).with_context(|| format!("scenario {}", path.display()))?;
    let sets = &g.sets;
    let base = if sets.is_empty() {
        base
    } else {
        base.with_overrides(sets)
            .with_context(|| format!("scenario {}", path.display()))?
    };
    let points = base
        .sweep_points()
        .with_context(|| format!("scenario {}", path.display()))?;
    let mut scenarios = Vec::new();
    let mut notes = std::collections::BTreeSet::new();
    // A --set under a swept key is written over at every point: say so, and how to sweep.
    let path_of = |k: &str| mslink_sim::overrides::parts(k).unwrap_or_default();
    for (k, _) in sets {
        let set = path_of(k);
        for swept in base.sweep.keys() {
            for alt in swept.split('|') {
                let alt_path = path_of(alt);
                if !alt_path.is_empty() && set.starts_with(&alt_path) {
                    notes.insert(format!(
                        "--set {k} is written over at every sweep point by the sweep's \
                         `{swept}`; to change the swept values, --set 'sweep.\"{swept}\"=[...]'"
                    ));
                }
            }
        }
    }
    for (pi, point) in points.iter().enumerate() {
        let mut sc = base
            .with_overrides(point)
            .with_context(|| format!("scenario {}, sweep point {pi}", path.display()))?;
        sc.validate()
            .with_context(|| format!("scenario {}{}", path.display(), describe(point)))?;
        for n in sc.notes() {
            notes.insert(n);
        }
        // A point is one run's scenario: it does not keep the grid, which would make a
        // sweep's memory grow with the square of its points (3.2 GB for 10^4 values of one key).
        sc.sweep = toml::Table::new();
        scenarios.push(sc);
    }
    let stats_rows: usize = scenarios
        .iter()
        .map(|sc| sc.flows.iter().map(|f| f.count).sum::<usize>() * SUMMARISED_METRICS)
        .sum();
    if g.args.stats == StatsMode::Flows && stats_rows > STATS_ROWS_NOTE {
        notes.insert(format!(
            "stats.csv will hold {stats_rows} rows (one per point, flow and metric); --stats summary writes {} (the mean of all flows), --stats none no file",
            scenarios.len() * SUMMARISED_METRICS
        ));
    }
    // Once per distinct note, whichever sweep points share it.
    for n in &notes {
        progress.note(&format!("note: scenario {}: {n}", path.display()));
    }
    Ok(Plan {
        base,
        points,
        scenarios,
    })
}

/// Runs a campaign (`mslink sim`): see the module contract.
pub fn run(args: &SimOptions, progress: &dyn Progress) -> Result<Outcome> {
    if args.calibrate {
        let (costs, file) = calibrate::calibrate(progress)?;
        return Ok(Outcome {
            estimate: Some(format!(
                "{}\nwritten to {} (later estimates read it)",
                serde_json::to_string_pretty(&costs)?,
                file.display()
            )),
            ..Outcome::default()
        });
    }
    let g = given(args)?;
    let args = &g.args;
    let path = args.scenario.as_deref().context("the scenario file")?;
    let Plan {
        base,
        points,
        scenarios,
    } = plan(&g, path, progress)?;
    let traces = TraceFiles::new(g.dir.clone());
    let threads = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // Before anything grows with the flows or the runs.
    if let resources::Verdict::Stop(estimate) =
        resources::check(args, &scenarios, threads, &traces, progress)?
    {
        return Ok(Outcome {
            estimate: Some(estimate),
            ..Outcome::default()
        });
    }
    let out = args
        .out
        .as_deref()
        .context("--out is needed to run (--estimate alone only estimates)")?;
    let jobs: Vec<Job> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(point, sc)| {
            (0..sc.sim.reps).map(move |rep| Job {
                point,
                rep,
                scenario: sc,
            })
        })
        .collect();
    crate::files::out_dir(out, "--out")?;
    let replay = out.join("summary.json.part.resume");
    if g.resume.is_some() {
        keep_committed(out, &replay)?;
    }
    let removed = output::clear_previous(out, g.resume.is_some())?;
    if !removed.is_empty() && g.resume.is_none() {
        progress.note(&format!(
            "note: replacing the results of an earlier run in {}: {}",
            out.display(),
            removed.join(", ")
        ));
    }
    let pcap_dir = if args.pcap {
        let p = out.join("pcap");
        std::fs::create_dir_all(&p).with_context(|| format!("creating {}", p.display()))?;
        Some(p)
    } else {
        None
    };
    let keys: Vec<String> = points
        .first()
        .map(|p| p.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    let mut journal = journal::Progress::begin(&g, path, jobs.len());
    journal.write(out)?;
    // Each run is written as it finishes (in job order) and dropped: a sweep's memory does
    // not grow with its runs.
    let mut writer = output::ResultWriter::new(args, out, &base.sim.name, &keys, &points)?;
    // With resume: the runs the interrupted invocation committed, written again as they were.
    let done = if g.resume.is_some() && replay.is_file() {
        replay_committed(&replay, &jobs, &mut writer, out, progress)?
    } else {
        0
    };
    let rest = &jobs[done..];
    let started = std::time::Instant::now();
    run_rest(
        args,
        rest,
        done,
        &traces,
        pcap_dir.as_deref(),
        threads,
        &mut writer,
        progress,
    )?;
    let wall = started.elapsed().as_secs_f64();
    let provenance = provenance(path, &g, &base);
    let summary = writer.finish(&provenance, wall)?;
    if replay.is_file() {
        std::fs::remove_file(&replay).with_context(|| format!("removing {}", replay.display()))?;
    }
    journal.state = "complete".into();
    journal.note = "every run is written".into();
    journal.write(out)?;
    Ok(Outcome {
        estimate: None,
        summary,
        out: Some(out.to_path_buf()),
    })
}

/// summary.json's `provenance`: what made the results.
fn provenance(path: &Path, g: &Given, base: &Scenario) -> serde_json::Value {
    serde_json::json!({
        "mslink_version": env!("CARGO_PKG_VERSION"),
        "git_commit": crate::provenance::git_commit(path.parent().unwrap_or(Path::new("."))),
        "scenario_file": path.display().to_string(),
        "scenario_text": g.text,
        "overrides": g.sets.iter().map(|(k, v)| serde_json::json!([k, v])).collect::<Vec<_>>(),
        "seed": base.sim.seed,
        "reps": base.sim.reps,
    })
}

/// Writes again the runs an interrupted invocation committed (`replay`); returns how many.
fn replay_committed(
    replay: &Path,
    jobs: &[Job],
    writer: &mut output::ResultWriter,
    out: &Path,
    progress: &dyn Progress,
) -> Result<usize> {
    let mut done = 0;
    journal::read_committed(replay, |c| {
        let i = done;
        let Some(job) = jobs
            .get(i)
            .filter(|j| j.point == c.point && j.rep == c.run.rep)
        else {
            bail!(
                "{}: committed run {i} (point {}, repetition {}) is not this scenario's run {i}; run the scenario again without --resume",
                replay.display(),
                c.point,
                c.run.rep
            );
        };
        writer.replay(job, &c)?;
        done += 1;
        Ok(())
    })?;
    progress.note(&format!(
        "note: resuming {}: {done} of {} runs were committed; making the other {}",
        out.display(),
        jobs.len(),
        jobs.len() - done
    ));
    Ok(done)
}

/// Makes (or, with a store, takes) the runs `rest`, which follow `done` committed ones, on
/// `threads` threads, and hands each to `writer` in order.
#[allow(clippy::too_many_arguments)]
fn run_rest(
    args: &SimOptions,
    rest: &[Job],
    done: usize,
    traces: &TraceFiles,
    pcap_dir: Option<&Path>,
    threads: usize,
    writer: &mut output::ResultWriter,
    progress: &dyn Progress,
) -> Result<()> {
    // With a store: each remaining run's key, and the runs taken from the store.
    let mut store = args.store.as_deref().map(store::Store::open).transpose()?;
    let keys: Vec<String> = match store.as_mut() {
        Some(st) => rest
            .iter()
            .map(|j| st.key(j.scenario, j.rep, traces))
            .collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let reused = std::sync::atomic::AtomicUsize::new(0);
    progress.phase(rest.len() as u64, "runs");
    let made = parallel_in_order(
        rest.len(),
        threads,
        &|| progress.tick(),
        |i| {
            if let Some(st) = &store {
                if let Some(run) = st.get(&keys[i])? {
                    return Ok(Made::Stored(run));
                }
            }
            pcap::run_job(&rest[i], traces, pcap_dir).map(Made::Ran)
        },
        |i, r| {
            let r = r.with_context(|| format!("run {} (rep {})", done + i, rest[i].rep))?;
            match r {
                Made::Stored(run) => {
                    reused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    writer.push_stored(&rest[i], &run)
                }
                Made::Ran(r) => {
                    let run = writer.push(&rest[i], r)?;
                    match &store {
                        Some(st) => st.put(&keys[i], writer.part_path(), run),
                        None => Ok(()),
                    }
                }
            }
        },
    );
    progress.done();
    made?;
    if let Some(dir) = &args.store {
        progress.note(&format!(
            "note: {} of {} runs came from the store {}",
            reused.into_inner(),
            rest.len(),
            dir.display()
        ));
    }
    Ok(())
}

/// Before a resume: the interrupted invocation's part file becomes `replay`, the list of runs
/// to write again. If an earlier resume was itself interrupted, both exist; the new part file
/// begins with a copy of the old one's runs, so the longer of the two holds the most.
fn keep_committed(out: &Path, replay: &Path) -> Result<()> {
    let part = out.join("summary.json.part");
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).ok();
    match (len(&part), len(replay)) {
        (Some(a), Some(b)) if a <= b => std::fs::remove_file(&part),
        (Some(_), _) => std::fs::rename(&part, replay),
        (None, _) => Ok(()),
    }
    .with_context(|| format!("keeping the committed runs of {}", part.display()))
}

fn describe(point: &[(String, String)]) -> String {
    if point.is_empty() {
        String::new()
    } else {
        format!(
            " at {}",
            point
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
