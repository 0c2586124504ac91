//! `mslink sim`: run a scenario (every sweep point, every repetition) and write its results.
//!
//! Contract: results are a pure function of the scenario, the overrides and the seeds: runs
//! execute on `--jobs` threads but are written in (sweep point, repetition) order, so the
//! output files are byte-identical at any `--jobs`. Wall-clock figures go to `timing.json`
//! only. Trace files named in the scenario are read relative to the scenario's folder, each
//! once, streamed into a packed trace that every run shares. Errors name the file, the line or
//! key, and what was expected.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use mslink_lab::parallel::parallel_in_order;
use mslink_sim::{overrides, RunResult, Scenario};

use crate::TraceFiles;

mod digest;
mod journal;
mod output;
mod parquet_out;
mod resources;
mod stats_table;
mod store;

pub use resources::mem_available;
pub use stats_table::StatsMode;

/// Options of `mslink sim`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7-30 --reps 30 --jobs 2\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7-s7 --set sim.seed=7 --set segment.1.error.mean_bytes=65536\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7 --json -q > summary.json\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7-pq --format parquet\n  mslink sim scenarios/bench/cbr_1000_flows.toml --estimate --set flow.0.count=50000\n  mslink sim scenarios/bench/cbr_1000_flows.toml --estimate --json > estimate.json\n  mslink sim scenarios/bench/cbr_1000_flows.toml --out results/many --stats summary\n  # after a kill, a timeout or a reboot: make only the runs that are missing\n  #   mslink sim --resume results/fig7-30\n\nBefore running, mslink sim estimates the flows, events, memory and time of the runs; it\nrefuses runs that need more memory than is available (MemAvailable) and warns about runs\nthat take over an hour. --estimate prints the estimate and stops (with --json, as one JSON\ndocument).\n\nResults: flows.csv (one row per flow, sweep point and repetition), timeseries.csv\n(moving-window throughput) (with --format parquet: flows.parquet, timeseries.parquet),\nsummary.json (per flow, segment, link service counters, events),\ntiming.json (wall time), plots/*.png and *.svg (unless --no-plots), stats.csv (each flow's\nmetrics over the repetitions; --stats). Each run is committed as it finishes; progress.json\nsays whether every file is written. See docs/simulator.md."
)]
#[derive(Clone)]
pub struct SimArgs {
    /// The scenario file (TOML).
    #[arg(required_unless_present = "resume")]
    pub scenario: Option<PathBuf>,
    /// Finish the runs an interrupted `mslink sim` left in this folder (killed, timed out,
    /// machine restarted): what was committed is kept, only the missing runs are made, and
    /// the files come out byte-identical to an uninterrupted invocation's. The scenario and
    /// options are read from FOLDER/progress.json.
    #[arg(long, value_name = "FOLDER", conflicts_with_all = ["scenario", "out", "sets", "reps", "estimate", "pcap", "no_plots", "force", "stats", "format", "store"])]
    pub resume: Option<PathBuf>,
    /// Folder for the results (created if missing).
    #[arg(long, required_unless_present_any = ["estimate", "resume"])]
    pub out: Option<PathBuf>,
    /// Runs in parallel (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Repetitions (overrides sim.reps).
    #[arg(long)]
    pub reps: Option<u32>,
    /// Override a scenario key, e.g. --set sim.seed=3 --set flow.0.rate_bps=2e6.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// No progress bar, notes or summary line (warnings and errors still show).
    #[arg(short, long)]
    pub quiet: bool,
    /// Also print summary.json (per flow, segment, link service counters, events) on standard
    /// output, as one JSON document; with --estimate, the estimate instead.
    #[arg(long)]
    pub json: bool,
    /// Print the estimate of the runs (flows, events per simulated second, memory at the peak
    /// and what holds it, run time, memory available) on standard output and stop without
    /// running.
    #[arg(long)]
    pub estimate: bool,
    /// Run even when the estimate says the runs need more memory than is available (the
    /// estimate is an upper bound: full time series, full TCP windows).
    #[arg(long)]
    pub force: bool,
    /// Also write a pcap of the IP packets entering each segment in each direction, per run:
    /// OUT/pcap/p<point>_r<rep>_seg<i>_<ltr|rtl>.pcap (raw IPv4; tshark dissects them).
    #[arg(long)]
    pub pcap: bool,
    /// Format of the tables: csv (flows.csv, timeseries.csv) or parquet (flows.parquet,
    /// timeseries.parquet: the same columns and values, typed).
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    pub format: Format,
    /// A result store: runs already made (by any earlier invocation with the same point
    /// scenario, repetition, trace files and mslink version) are taken from DIR instead of
    /// being made again, and new ones are kept there; the files come out byte-identical
    /// either way (docs/simulator.md, "Result store").
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// What stats.csv holds: `flows` (each flow's metrics over the repetitions, one row per
    /// point, flow and metric), `summary` (one row per point and metric, over the mean of all
    /// flows: for runs of many flows) or `none` (no stats.csv).
    #[arg(long, value_enum, default_value_t = StatsMode::Flows)]
    pub stats: StatsMode,
    /// Do not draw OUT/plots/*.png and *.svg (throughput against time; with a sweep, each
    /// metric against the first numeric sweep key, or against the frame loss measured in the
    /// runs when the sweep sets error models).
    #[arg(long)]
    pub no_plots: bool,
}

/// Format of flows and timeseries (`--format`).
#[derive(
    clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// flows.csv, timeseries.csv.
    Csv,
    /// flows.parquet, timeseries.parquet.
    Parquet,
}

type PcapFiles = std::collections::BTreeMap<
    (usize, usize),
    pcap_file::pcap::PcapWriter<std::io::BufWriter<std::fs::File>>,
>;

/// Runs one job, capturing into pcap files when asked.
fn run_job(job: &Job, traces: &TraceFiles, pcap_dir: Option<&Path>) -> Result<RunResult> {
    let mut traces = traces;
    let Some(pdir) = pcap_dir else {
        return Ok(mslink_sim::run_with(
            job.scenario,
            job.rep,
            &mut traces,
            None,
        )?);
    };
    let mut files: PcapFiles = Default::default();
    let mut failure: Option<anyhow::Error> = None;
    let mut capture = |seg: usize, d: usize, at: mslink_link::Instant, p: &[u8]| {
        if failure.is_some() {
            return;
        }
        let w = match files.entry((seg, d)) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let path = pdir.join(format!(
                    "p{}_r{}_seg{}_{}.pcap",
                    job.point,
                    job.rep,
                    seg,
                    ["ltr", "rtl"][d]
                ));
                let opened = std::fs::File::create(&path)
                    .map_err(anyhow::Error::from)
                    .and_then(|f| {
                        let header = pcap_file::pcap::PcapHeader {
                            datalink: pcap_file::DataLink::RAW,
                            ..Default::default()
                        };
                        Ok(pcap_file::pcap::PcapWriter::with_header(
                            std::io::BufWriter::new(f),
                            header,
                        )?)
                    });
                match opened {
                    Ok(w) => v.insert(w),
                    Err(e) => {
                        failure = Some(e.context(format!("creating {}", path.display())));
                        return;
                    }
                }
            }
        };
        let ts = std::time::Duration::from_nanos(at.as_nanos());
        if let Err(e) = w.write_packet(&pcap_file::pcap::PcapPacket::new(ts, p.len() as u32, p)) {
            failure = Some(anyhow::Error::from(e).context("writing a pcap packet"));
        }
    };
    let r = mslink_sim::run_with(job.scenario, job.rep, &mut traces, Some(&mut capture))?;
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(r)
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

/// The options and scenario of an invocation: as given, or, with `--resume`, as the interrupted
/// one recorded them.
struct Given {
    args: SimArgs,
    text: String,
    /// Overrides, `--reps` included as `sim.reps`.
    sets: Vec<(String, String)>,
    /// The folder trace files are read relative to.
    dir: PathBuf,
    resume: Option<journal::Progress>,
}

fn given(args: &SimArgs) -> Result<Given> {
    if let Some(out) = &args.resume {
        let p = journal::Progress::read(out)?;
        if p.state == "complete" {
            bail!(
                "{} holds a complete run ({} runs): nothing to resume",
                out.display(),
                p.runs_total
            );
        }
        let args = SimArgs {
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

/// Runs `mslink sim`.
pub fn run(args: &SimArgs) -> Result<()> {
    let g = given(args)?;
    let args = &g.args;
    let path = args.scenario.as_deref().context("the scenario file")?;
    let text = &g.text;
    let base = Scenario::parse(text).with_context(|| format!("scenario {}", path.display()))?;
    let sets = g.sets.clone();
    let base = if sets.is_empty() {
        base
    } else {
        base.with_overrides(&sets)
            .with_context(|| format!("scenario {}", path.display()))?
    };
    let points = base
        .sweep_points()
        .with_context(|| format!("scenario {}", path.display()))?;
    let mut scenarios = Vec::new();
    let mut notes = std::collections::BTreeSet::new();
    // A --set under a swept key is written over at every point: say so, and how to sweep.
    let path_of = |k: &str| mslink_sim::overrides::parts(k).unwrap_or_default();
    for (k, _) in &sets {
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
        let sc = base
            .with_overrides(point)
            .with_context(|| format!("scenario {}, sweep point {pi}", path.display()))?;
        sc.validate()
            .with_context(|| format!("scenario {}{}", path.display(), describe(point)))?;
        for n in sc.notes() {
            notes.insert(n);
        }
        scenarios.push(sc);
    }
    let stats_rows: usize = scenarios
        .iter()
        .map(|sc| sc.flows.iter().map(|f| f.count).sum::<usize>() * SUMMARISED_METRICS)
        .sum();
    if args.stats == StatsMode::Flows && stats_rows > STATS_ROWS_NOTE {
        notes.insert(format!(
            "stats.csv will hold {stats_rows} rows (one per point, flow and metric); --stats summary writes {} (the mean of all flows), --stats none no file",
            scenarios.len() * SUMMARISED_METRICS
        ));
    }
    if !args.quiet {
        // Once per distinct note, whichever sweep points share it.
        for n in &notes {
            eprintln!("mslink: note: scenario {}: {n}", path.display());
        }
    }
    let traces = TraceFiles::new(g.dir.clone());
    let threads = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // Before anything grows with the flows or the runs.
    if resources::check(args, &scenarios, threads, &traces)? == resources::Verdict::Stop {
        return Ok(());
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
    crate::convention::out_dir(out, "--out")?;
    let replay = out.join("summary.json.part.resume");
    if g.resume.is_some() {
        keep_committed(out, &replay)?;
    }
    let removed = output::clear_previous(out, g.resume.is_some())?;
    if !removed.is_empty() && !args.quiet && g.resume.is_none() {
        eprintln!(
            "mslink: note: replacing the results of an earlier run in {}: {}",
            out.display(),
            removed.join(", ")
        );
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
    let provenance = serde_json::json!({
        "mslink_version": env!("CARGO_PKG_VERSION"),
        "git_commit": mslink_lab::provenance::git_commit(path.parent().unwrap_or(Path::new("."))),
        "scenario_file": path.display().to_string(),
        "scenario_text": text,
        "overrides": sets.iter().map(|(k, v)| serde_json::json!([k, v])).collect::<Vec<_>>(),
        "seed": base.sim.seed,
        "reps": base.sim.reps,
    });
    let mut progress = journal::Progress {
        state: "running".into(),
        note: format!(
            "runs are committed one at a time (flows.csv and timeseries.csv rows, summary.json.part); if no process {} is running, this invocation was interrupted: `mslink sim --resume {}` makes only the runs that are missing",
            std::process::id(),
            out.display()
        ),
        pid: std::process::id(),
        runs_total: jobs.len(),
        scenario_file: path.to_path_buf(),
        scenario_dir: g.dir.clone(),
        scenario_text: text.clone(),
        overrides: sets.clone(),
        format: args.format,
        stats: args.stats,
        pcap: args.pcap,
        no_plots: args.no_plots,
        mslink_version: env!("CARGO_PKG_VERSION").into(),
        store: args.store.clone(),
    };
    progress.write(out)?;
    // Each run is written as it finishes (in job order) and dropped: a sweep's memory does
    // not grow with its runs.
    let mut writer = output::ResultWriter::new(args, out, &base.sim.name, &keys, &points)?;
    // With --resume: the runs the interrupted invocation committed, written again as they were.
    let mut done = 0;
    if g.resume.is_some() && replay.is_file() {
        done = journal::read_committed(&replay, |c| {
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
        if !args.quiet {
            eprintln!(
                "mslink: note: resuming {}: {done} of {} runs were committed; making the other {}",
                out.display(),
                jobs.len(),
                jobs.len() - done
            );
        }
    }
    let rest = &jobs[done..];
    // With --store: each remaining run's key, and the runs taken from the store.
    let mut store = args.store.as_deref().map(store::Store::open).transpose()?;
    let keys: Vec<String> = match store.as_mut() {
        Some(st) => rest
            .iter()
            .map(|j| st.key(j.scenario, j.rep, &traces))
            .collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let reused = std::sync::atomic::AtomicUsize::new(0);
    let bar = crate::convention::bar(rest.len() as u64, "runs", args.quiet);
    let started = std::time::Instant::now();
    parallel_in_order(
        rest.len(),
        threads,
        &|| bar.inc(1),
        |i| {
            if let Some(st) = &store {
                match st.get(&keys[i]) {
                    Ok(Some(run)) => return Ok(Made::Stored(run)),
                    Ok(None) => {}
                    Err(e) => return Err(e),
                }
            }
            run_job(&rest[i], &traces, pcap_dir.as_deref()).map(Made::Ran)
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
                        Some(st) => st.put(&keys[i], &run),
                        None => Ok(()),
                    }
                }
            }
        },
    )?;
    if let (Some(dir), false) = (&args.store, args.quiet) {
        eprintln!(
            "mslink: note: {} of {} runs came from the store {}",
            reused.into_inner(),
            rest.len(),
            dir.display()
        );
    }
    bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    writer.finish(&provenance, wall)?;
    if replay.is_file() {
        std::fs::remove_file(&replay).with_context(|| format!("removing {}", replay.display()))?;
    }
    progress.state = "complete".into();
    progress.note = "every run is written".into();
    progress.write(out)?;
    if args.json {
        // summary.json is streamed to its file; copy it rather than hold a second copy.
        let path = out.join("summary.json");
        let mut f =
            std::fs::File::open(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut stdout = std::io::stdout().lock();
        std::io::copy(&mut f, &mut stdout).context("writing to standard output")?;
        std::io::Write::flush(&mut stdout).context("writing to standard output")?;
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
