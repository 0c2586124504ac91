//! `mslink validate`: the options and the printing; the work is `mslink_lab::validate`.
//!
//! Contract. Parses the options, runs the simulated and (unless `--sim-only`) the real
//! transfers with a progress bar, writes the report into `--out` and prints its table on
//! standard output (`--json`: the summaries as one JSON document instead).

use std::path::PathBuf;

use anyhow::{Context, Result};
use mslink_lab::validate::{self, Cc, Grid, Options};

/// Options of `mslink validate`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink validate --out results/validation     # as root: the held-out link, Reno and CUBIC\n  mslink validate --sim-only --grid full --out results/sim-side   # no root: the simulated half\n  # the table of docs/validation.md (36 links; 936 kernel transfers, about 3.3 hours on a 2-core machine):\n  #   mslink validate --grid full --reps 13 --sim-reps 60 --seconds 10 --out docs/validation\n  # the same, killed and started again (keeps the transfers already made; a larger --reps adds only new ones):\n  #   mslink validate --grid full --reps 13 --sim-reps 60 --seconds 10 --resume --out docs/validation\n  # after a change to the simulator, against the kernel transfers already in docs/validation/real/ (no root):\n  #   mslink validate --grid full --reps 13 --sim-reps 60 --seconds 10 --reuse-real --out docs/validation\n  # two points of the grid with 60-s transfers, in a folder of their own:\n  #   mslink validate --grid full --only \"10 Mbit/s, 200 ms, 2%: reno\" --only \"10 Mbit/s, 200 ms, 2% bursts of 4\" --seconds 60 --out results/long\n\nEach link of the grid is run twice: in the simulator with the Linux-like sender of\nscenarios/tcp/linux_like.toml, and for real with iperf3 between two namespaces joined by\n`mslink emulate` set to the same rate, delay and loss; repetition r of both sides draws its\nlosses from the same seed. OUT/report.md has goodput, retransmissions and timeouts side by\nside with the sim/real ratio over those pairs and its 95% interval (the verdict's) and the\nratio over all transfers; OUT/runs.csv every transfer; OUT/goodput.svg the figure. The real side needs root and iperf3\n(docs/validation.md)."
)]
pub struct ValidateArgs {
    /// Folder for report.md, runs.csv, goodput.{png,svg} and the real side's files (real/).
    #[arg(long)]
    pub out: PathBuf,
    /// The links: `quick` (10 Mbit/s, 20 ms RTT, 1% loss) or `full` (1, 10, 100 Mbit/s x 10,
    /// 50, 200 ms x 0, 0.5%, 2% and 2% in bursts of 4 frames).
    #[arg(long, default_value = "quick", value_parser = ["quick", "full"])]
    pub grid: String,
    /// Congestion controls, comma-separated.
    #[arg(long, default_value = "reno,cubic", value_delimiter = ',')]
    pub cc: Vec<String>,
    /// Transfers per link, control and side.
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
    /// Simulated transfers per link and control, when more than --reps: they cost
    /// milliseconds where a kernel transfer costs seconds, so the simulator's mean is pinned
    /// down by more of them (the ratio's interval keeps the real side's degrees of freedom).
    #[arg(long, value_name = "N")]
    pub sim_reps: Option<u32>,
    /// Length of each transfer, seconds.
    #[arg(long, default_value_t = 20.0)]
    pub seconds: f64,
    /// Threads for the simulated side (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Only the simulated side (no root, no iperf3).
    #[arg(long)]
    pub sim_only: bool,
    /// The real side from an earlier run's files in OUT/real/ (same grid, --cc, --reps and
    /// --seconds) instead of measuring it again: re-checks the simulator after a change, no
    /// root needed. Where OUT/real/ is not on this machine (a clone), the kernel's rows of the
    /// earlier OUT/runs.csv and its OUT/kernel.txt stand in for it.
    #[arg(long, conflicts_with = "sim_only")]
    pub reuse_real: bool,
    /// Keep the real transfers an earlier run left complete in OUT/real/ (same grid, --cc and
    /// --seconds) and measure only the others: a killed run goes on where it stopped, and a
    /// larger --reps adds only the new repetitions.
    #[arg(long, conflicts_with_all = ["sim_only", "reuse_real"])]
    pub resume: bool,
    /// Only this point of the grid: a link as the report labels it, with every --cc
    /// (`"10 Mbit/s, 200 ms, 2%"`), or one control of it (`"10 Mbit/s, 200 ms, 2%: reno"`);
    /// repeat for more. The real side's files keep the whole grid's names, so a few points
    /// can take more or longer transfers in a folder of their own, or resume from a copy of
    /// the grid's.
    #[arg(long, value_name = "LINK[: CC]")]
    pub only: Vec<String>,
    /// No progress bar or notes.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the summaries as one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `mslink validate`.
pub fn run(a: &ValidateArgs) -> Result<()> {
    crate::convention::out_dir(&a.out, "--out")?;
    let grid = if a.grid == "full" {
        Grid::Full
    } else {
        Grid::Quick
    };
    let ccs =
        a.cc.iter()
            .map(|c| Cc::parse(c.trim()))
            .collect::<Result<Vec<_>>>()
            .context("--cc")?;
    if !(a.seconds > 0.0 && a.seconds.is_finite()) || a.reps == 0 {
        anyhow::bail!("--seconds must be positive and --reps at least 1");
    }
    let sim_reps = a.sim_reps.unwrap_or(a.reps);
    if sim_reps < a.reps {
        anyhow::bail!(
            "--sim-reps {sim_reps} is below --reps {}: the simulator runs at least as many transfers as the kernel",
            a.reps
        );
    }
    let links = grid.links();
    let only = if a.only.is_empty() {
        None
    } else {
        let mut points = Vec::new();
        for spec in &a.only {
            points.extend(validate::parse_point(&links, &ccs, spec).context("--only")?);
        }
        Some(points)
    };
    let o = Options {
        links,
        ccs,
        reps: a.reps,
        sim_reps,
        seconds: a.seconds,
        jobs: a
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        exe: if a.sim_only || a.reuse_real {
            None
        } else {
            Some(crate::convention::mslink_exe()?)
        },
        work: a.out.join("real"),
        reuse_real: a.reuse_real,
        resume: a.resume,
        only,
    };
    let progress = crate::convention::Bar::new(a.quiet);
    let (rows, settings) = validate::run(&o, &progress)?;
    let command = format!(
        "mslink validate --grid {}{} --cc {} --reps {}{} --seconds {}{}{} --out {}",
        a.grid,
        a.only
            .iter()
            .map(|p| format!(" --only \"{p}\""))
            .collect::<String>(),
        a.cc.join(","),
        a.reps,
        a.sim_reps
            .map_or(String::new(), |n| format!(" --sim-reps {n}")),
        a.seconds,
        if a.sim_only { " --sim-only" } else { "" },
        if a.reuse_real {
            " --reuse-real"
        } else if a.resume {
            " --resume"
        } else {
            ""
        },
        a.out.display()
    );
    let machine = mslink_lab::provenance::machine();
    let written = validate::report(
        &a.out,
        &o.links,
        &rows,
        o.seconds,
        settings.as_ref(),
        &command,
        &machine,
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&written.json(&o.links))?);
    } else {
        println!("{}", written.table());
    }
    Ok(())
}
