//! `mslink sim`: the options of a campaign (`mslink_lab::campaign`) and what it prints.
//!
//! Contract: the verb turns its options into `mslink_lab::campaign::SimOptions`, runs the
//! campaign with the CLI's progress bar and notes, and prints what the campaign hands back: the
//! estimate on standard output (`--estimate`), the closing summary on standard error (unless
//! `--quiet`), and summary.json on standard output (`--json`).

use anyhow::{Context, Result};
use mslink_lab::campaign::{self, SimOptions};

/// Options of `mslink sim`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7-30 --reps 30 --jobs 2\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7-s7 --set sim.seed=7 --set segment.1.error.mean_bytes=65536\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7 --json -q > summary.json\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7-pq --format parquet\n  mslink sim scenarios/bench/cbr_1000_flows.toml --estimate --set flow.0.count=50000\n  mslink sim scenarios/bench/cbr_1000_flows.toml --estimate --json > estimate.json\n  mslink sim scenarios/bench/cbr_1000_flows.toml --out results/many --stats summary\n  mslink sim --calibrate                   # this machine's costs, for the time estimates\n  # after a kill, a timeout or a reboot: make only the runs that are missing\n  #   mslink sim --resume results/fig7-30\n\nBefore running, mslink sim estimates the flows, events, memory and time of the runs; it\nrefuses runs that need more memory than is available (MemAvailable less a tenth of the\nmachine's memory) and warns about runs that take over an hour; the time comes from this\nmachine's costs once --calibrate has measured them. --estimate prints the estimate and stops (with --json, as one JSON\ndocument).\n\nResults: flows.csv (one row per flow, sweep point and repetition), timeseries.csv\n(moving-window throughput) (with --format parquet: flows.parquet, timeseries.parquet),\nsummary.json (per flow, segment, link service counters, events),\ntiming.json (wall time), plots/*.png and *.svg (unless --no-plots), stats.csv (each flow's\nmetrics over the repetitions; --stats). Each run is committed as it finishes; progress.json\nsays whether every file is written. See docs/simulator.md."
)]
#[derive(Clone)]
pub struct SimArgs {
    #[command(flatten)]
    opts: SimOptions,
    /// No progress bar, notes or summary line (warnings and errors still show).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs `mslink sim`.
pub fn run(args: &SimArgs) -> Result<()> {
    let bar = crate::convention::Bar::new(args.quiet);
    let outcome = campaign::run(&args.opts, &bar)?;
    if let Some(estimate) = outcome.estimate {
        println!("{estimate}");
        return Ok(());
    }
    if !args.quiet {
        eprint!("{}", outcome.summary);
    }
    if let (true, Some(out)) = (args.opts.json, outcome.out) {
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
