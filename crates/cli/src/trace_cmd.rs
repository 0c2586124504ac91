//! `mslink trace`: generate, inspect and convert per-frame error traces.
//!
//! Contract: `gen` writes a trace with given 003 Table 1 figures (or a named environment of that
//! table) from a seed; `stats` prints a trace's figures for a frame length; `convert` rewrites a
//! trace compactly (run-length) or expanded (one line per frame); `capacity` writes a Mahimahi
//! packet-delivery trace (capacity over time) of a constant or wandering rate. Errors name the file and line.
//! `stats` and `convert` stream the file into a packed trace (`mslink_cli::read_error_trace`)
//! and write their output as they go, so a trace of any size costs no more than its packed
//! form.

use anyhow::{bail, Context, Result};
use mslink_channel::generate::{environment, generate, TraceFigures, TraceStats};
use mslink_channel::trace::{write_text, PackedTrace};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::io::Write;

/// Options of `mslink trace`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink trace gen --env walls --frames 100000 --out walls.trace\n  mslink trace stats walls.trace --frame-len 1000\n  mslink trace convert walls.trace --expand --out expanded/walls.trace"
)]
pub struct TraceArgs {
    #[command(subcommand)]
    cmd: TraceCmd,
}

#[derive(clap::Subcommand, Debug)]
enum TraceCmd {
    /// Generate a trace with given loss, truncation, corruption and bit error rate.
    #[command(
        after_help = "Examples:\n  mslink trace gen --env walls --frames 100000 --out walls.trace\n  mslink trace gen --loss 0.05 --corruption 0.2 --ber 1e-4 --out traces/my.trace --json\n  mslink trace gen --env table --frames 1000 > table.trace"
    )]
    Gen(GenArgs),
    /// Generate a Mahimahi packet-delivery trace (link capacity over time, one line per
    /// 1504-byte delivery opportunity), for `capacity_trace` in `mslink emulate` or Mahimahi's
    /// mm-link: a constant rate, or a rate that wanders between two bounds.
    #[command(
        after_help = "Examples:\n  # 12 Mbit/s for a 1 s period (the trace loops)\n  mslink trace capacity --mbps 12 --seconds 1 --out my-12mbps.mahi\n  # a cellular-like link: every 500 ms a new rate between 1 and 20 Mbit/s, 30 s period\n  mslink trace capacity --min-mbps 1 --max-mbps 20 --step-ms 500 --seconds 30 --seed 7 --out my-cell.mahi --json\n  # as root: the trace as the link's capacity, with a per-packet log of the uplink\n  mslink emulate --pair --set capacity_trace=my-12mbps.mahi --uplink-log up.log --right 'iperf3 -s -1 >/dev/null' --left 'sleep 0.5; iperf3 -c $MSLINK_RIGHT -t 1 >/dev/null'"
    )]
    Capacity(CapacityArgs),
    /// Print a trace's figures (003 Table 1's columns).
    #[command(
        after_help = "Examples:\n  mslink trace gen --env walls --out walls.trace && mslink trace stats walls.trace\n  mslink trace stats walls.trace --frame-len 500 --json"
    )]
    Stats {
        /// The trace file.
        file: String,
        /// Frame length in bytes the figures are computed for.
        #[arg(long, default_value_t = 1000)]
        frame_len: usize,
        /// Print the figures as one JSON document.
        #[arg(long)]
        json: bool,
        /// Accepted for the convention; `stats` prints nothing but its result.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Rewrite a trace compactly (run-length, the default) or one frame per line.
    #[command(
        after_help = "Examples:\n  mslink trace convert walls.trace --expand --out expanded/walls.trace\n  mslink trace convert expanded/walls.trace --out walls-rle.trace --json\n  mslink trace convert walls.trace | head"
    )]
    Convert {
        /// The trace file.
        file: String,
        /// One line per frame instead of run-length entries.
        #[arg(long)]
        expand: bool,
        /// Output file, its folder created if missing (default: standard output).
        #[arg(short, long)]
        out: Option<String>,
        /// With --out: print the trace's figures for 1000-byte frames (as `stats --json`) on standard output.
        #[arg(long, requires = "out")]
        json: bool,
        /// Accepted for the convention; `convert` prints nothing but its result.
        #[arg(short, long)]
        quiet: bool,
    },
}

#[derive(clap::Args, Debug)]
struct GenArgs {
    /// A named environment of 003 Table 1: office, walking, adjacent, table, walls.
    #[arg(long)]
    env: Option<String>,
    /// Lost frames / all frames.
    #[arg(long)]
    loss: Option<f64>,
    /// Truncated frames / frames not lost.
    #[arg(long)]
    truncation: Option<f64>,
    /// Corrupted frames / frames neither lost nor truncated.
    #[arg(long)]
    corruption: Option<f64>,
    /// Inverted bits / bits of frames neither lost nor truncated.
    #[arg(long)]
    ber: Option<f64>,
    /// Frames in the trace.
    #[arg(long, default_value_t = 100_000)]
    frames: u64,
    /// Frame length in bytes the figures refer to.
    #[arg(long, default_value_t = 1000)]
    frame_len: usize,
    /// Width in bits of the window the bit errors of one frame fall in.
    #[arg(long, default_value_t = 64)]
    burst_bits: u32,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output file, its folder created if missing (default: standard output).
    #[arg(short, long)]
    out: Option<String>,
    /// With --out: print the generated trace's figures (as `stats --json`) on standard output.
    #[arg(long, requires = "out")]
    json: bool,
    /// Accepted for the convention; `gen` prints nothing but its result.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(clap::Args, Debug)]
struct CapacityArgs {
    /// A constant rate in Mbit/s (or give --min-mbps and --max-mbps).
    #[arg(long, conflicts_with_all = ["min_mbps", "max_mbps"])]
    mbps: Option<f64>,
    /// Lowest rate of a wandering link, Mbit/s.
    #[arg(long, requires = "max_mbps")]
    min_mbps: Option<f64>,
    /// Highest rate of a wandering link, Mbit/s.
    #[arg(long, requires = "min_mbps")]
    max_mbps: Option<f64>,
    /// A wandering link draws a new rate this often: the last one plus a uniform step of up to
    /// a quarter of the range either way, kept within the bounds.
    #[arg(long, default_value_t = 500)]
    step_ms: u64,
    /// Length of the trace (its period: emulators loop it), in seconds.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Seed of a wandering link.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output file, its folder created if missing (default: standard output).
    #[arg(short, long)]
    out: Option<String>,
    /// With --out: print the trace's figures (opportunities, mean, min and max rate per step) as
    /// one JSON document on standard output.
    #[arg(long, requires = "out")]
    json: bool,
    /// Accepted for the convention; `capacity` prints nothing but its result.
    #[arg(short, long)]
    quiet: bool,
}

fn capacity(c: &CapacityArgs) -> Result<()> {
    let positive = |v: f64, flag: &str| -> Result<f64> {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            bail!("{flag} must be a positive number of Mbit/s, got {v}")
        }
    };
    if !(c.seconds.is_finite() && c.seconds >= 0.001 && c.seconds <= 86_400.0) {
        bail!(
            "--seconds must be between 0.001 and 86400, got {}",
            c.seconds
        );
    }
    if c.step_ms == 0 {
        bail!("--step-ms must be at least 1");
    }
    let ms = (c.seconds * 1000.0).round() as u64;
    let steps: Vec<f64> = match (c.mbps, c.min_mbps, c.max_mbps) {
        (Some(r), _, _) => vec![positive(r, "--mbps")?],
        (None, Some(lo), Some(hi)) => {
            let (lo, hi) = (positive(lo, "--min-mbps")?, positive(hi, "--max-mbps")?);
            if hi < lo {
                bail!("--max-mbps {hi} is below --min-mbps {lo}");
            }
            mslink_channel::mahimahi::wandering_rates(lo, hi, ms.div_ceil(c.step_ms), c.seed)
        }
        _ => bail!("give --mbps RATE, or --min-mbps and --max-mbps"),
    };
    let step = c.step_ms;
    let times = mslink_channel::mahimahi::opportunities(ms, |m| {
        steps[((m / step) as usize).min(steps.len() - 1)] * 1e6
    });
    write_with(&c.out, |w| {
        for t in &times {
            writeln!(w, "{t}")?;
        }
        Ok(())
    })?;
    if c.json {
        let mean = times.len() as f64 * (mslink_channel::mahimahi::OPPORTUNITY_BYTES * 8) as f64
            / c.seconds
            / 1e6;
        let v = serde_json::json!({
            "opportunities": times.len(),
            "period_ms": ms,
            "mean_mbps": mean,
            "min_step_mbps": steps.iter().copied().fold(f64::INFINITY, f64::min),
            "max_step_mbps": steps.iter().copied().fold(0.0, f64::max),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    Ok(())
}

fn read(file: &str) -> Result<PackedTrace> {
    crate::read_error_trace(std::path::Path::new(file)).with_context(|| format!("trace {file}"))
}

/// Writes `body` to the file `out` (`--out`), or to standard output.
fn write_with(
    out: &Option<String>,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    mslink_io::files::write_to(out.as_deref().map(std::path::Path::new), "--out", body)
}

fn write(out: &Option<String>, text: &str) -> Result<()> {
    write_with(out, |w| w.write_all(text.as_bytes()))
}

/// Runs `mslink trace`.
pub fn run(args: &TraceArgs) -> Result<()> {
    match &args.cmd {
        TraceCmd::Gen(g) => {
            let base = match &g.env {
                None => [0.0; 4],
                Some(name) => environment(name)?.figures(),
            };
            let fig = TraceFigures {
                loss: g.loss.unwrap_or(base[0]),
                truncation: g.truncation.unwrap_or(base[1]),
                corruption: g.corruption.unwrap_or(base[2]),
                ber: g.ber.unwrap_or(base[3]),
            };
            let mut rng = ChaCha8Rng::seed_from_u64(g.seed);
            let trace = generate(fig, g.frames, g.frame_len, g.burst_bits, &mut rng)
                .context("generating the trace")?;
            let mut text = format!(
                "# generated by mslink trace gen: loss {} truncation {} corruption {} ber {} frames {} frame_len {} seed {}\n",
                fig.loss, fig.truncation, fig.corruption, fig.ber, g.frames, g.frame_len, g.seed
            );
            text.push_str(&trace.to_text());
            write(&g.out, &text)?;
            if g.json {
                let s = TraceStats::of(&trace, g.frame_len);
                println!("{}", serde_json::to_string_pretty(&s)?);
            }
            Ok(())
        }
        TraceCmd::Capacity(c) => capacity(c),
        TraceCmd::Stats {
            file,
            frame_len,
            json,
            quiet: _,
        } => {
            let s = TraceStats::of_entries(read(file)?.entries(), *frame_len);
            if *json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print!("{file} ({frame_len}-byte frames)\n{s}");
            }
            Ok(())
        }
        TraceCmd::Convert {
            file,
            expand,
            out,
            json,
            quiet: _,
        } => {
            // Packing already merges consecutive entries with the same outcome.
            let t = read(file)?;
            if *json {
                let s = TraceStats::of_entries(t.entries(), 1000);
                println!("{}", serde_json::to_string_pretty(&s)?);
            }
            write_with(out, |w| write_text(w, t.entries(), *expand))
        }
    }
}
