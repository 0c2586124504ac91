//! `mslink sim`: the options of a campaign (`mslink_lab::campaign`) and what it prints.
//!
//! Contract: the verb turns its options into `mslink_lab::campaign::SimOptions`, runs the
//! campaign with the CLI's progress bar and notes, and prints what the campaign hands back: the
//! estimate on standard output (`--estimate`), the closing summary on standard error (unless
//! `--quiet`), and summary.json on standard output (`--json`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use mslink_lab::campaign::{self, Format, SimOptions, StatsMode};

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

impl From<&SimArgs> for SimOptions {
    fn from(a: &SimArgs) -> SimOptions {
        SimOptions {
            scenario: a.scenario.clone(),
            resume: a.resume.clone(),
            out: a.out.clone(),
            jobs: a.jobs,
            reps: a.reps,
            sets: a.sets.clone(),
            estimate: a.estimate,
            json: a.json,
            force: a.force,
            pcap: a.pcap,
            format: a.format,
            store: a.store.clone(),
            stats: a.stats,
            no_plots: a.no_plots,
        }
    }
}

/// Runs `mslink sim`.
pub fn run(args: &SimArgs) -> Result<()> {
    let bar = crate::convention::Bar::new(args.quiet);
    let outcome = campaign::run(&SimOptions::from(args), &bar)?;
    if let Some(estimate) = outcome.estimate {
        println!("{estimate}");
        return Ok(());
    }
    if !args.quiet {
        eprint!("{}", outcome.summary);
    }
    if let (true, Some(out)) = (args.json, outcome.out) {
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
