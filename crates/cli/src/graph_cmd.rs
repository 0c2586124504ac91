//! `mslink graph`: the throughput and per-packet delay of a link log in Mahimahi's format, as
//! one PNG or SVG figure (Mahimahi's `mm-throughput-graph` and `mm-delay-graph` together).
//!
//! Contract. The verb reads a log (`mslink emulate --uplink-log` / `--downlink-log`, or one
//! written by Mahimahi's `mm-link`) with `mslink_emu::linklog_read`, bins it in `--window`
//! milliseconds (500 by default, as Mahimahi's scripts are usually run), draws it with
//! `mslink_plot::linklog` (the format follows `-o`'s extension), and prints Mahimahi's summary
//! lines on stderr (average capacity, throughput and utilisation, 95th percentile per-packet
//! delay), or one JSON document with `--json`. A malformed line is an error naming the file
//! and the line; a cut last line (and with `--lenient` any malformed line) is skipped and the
//! count said in a note. It never panics on its input.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use mslink_emu::linklog_read::{self, ReadOptions};
use mslink_emu::linklog_summary::LinkLogSummary;
use mslink_plot::linklog::{self as plot, LinkLogFigure};

const EXAMPLES: &str = "Examples:
  # a shipped log: 4 s of TCP over links/cellular.toml, uplink (left to right; traces/README.md)
  mslink graph traces/logs/cellular-uplink.log -o uplink.png
  # 100 ms windows, as SVG, the figures as JSON on standard output
  mslink graph traces/logs/cellular-uplink.log -o out/uplink.svg --window 100 --json
  # a log of your own run, then its figure (as root)
  mslink emulate --pair --link links/wlan.toml --uplink-log up.log \\
      --right 'iperf3 -s -1 >/dev/null' --left 'sleep 0.5; iperf3 -c $MSLINK_RIGHT -t 2 >/dev/null' \\
      && mslink graph up.log -o up.png

The log may also be Mahimahi's own (mm-link --uplink-log=FILE); its `d` lines (queue drops),
which mm-throughput-graph refuses, are counted here.";

/// Options of `mslink graph`.
#[derive(Args, Clone, Debug)]
#[command(after_help = EXAMPLES)]
pub struct GraphArgs {
    /// The link log (Mahimahi format: `mslink emulate --uplink-log`, or mm-link's own).
    #[arg(value_name = "LOG")]
    pub log: PathBuf,
    /// The figure: FILE.png or FILE.svg (its folder is created if missing).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Width of the throughput windows in ms (mm-throughput-graph's MS_PER_BIN).
    #[arg(long, value_name = "MS", default_value_t = 500)]
    pub window: u64,
    /// Skip malformed lines (counted in a note) instead of stopping at the first.
    #[arg(long)]
    pub lenient: bool,
    /// Print the figures as one JSON document on standard output.
    #[arg(long)]
    pub json: bool,
    /// No summary or notes on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `mslink graph`.
pub fn run(args: &GraphArgs) -> Result<()> {
    if args.window == 0 {
        bail!("--window must be at least 1 ms");
    }
    let ext = args
        .output
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if !matches!(ext.as_deref(), Some("png" | "svg")) {
        bail!(
            "-o {}: give a file ending in .png or .svg",
            args.output.display()
        );
    }
    crate::convention::parent_dir(&args.output, "-o")?;
    let name = args.log.display().to_string();
    let file = std::fs::File::open(&args.log).with_context(|| format!("cannot read {name}"))?;
    let data = linklog_read::read(
        std::io::BufReader::with_capacity(1 << 16, file),
        &name,
        ReadOptions {
            window_ms: args.window,
            lenient: args.lenient,
        },
    )?;
    if data.span_ms.is_none() {
        bail!(
            "{name}: no events (a log has lines like `T + BYTES`, `T - BYTES DELAY`, `T # BYTES`)"
        );
    }
    let sum = LinkLogSummary::of(&data);
    let title = format!(
        "{}: throughput",
        args.log
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.clone())
    );
    let fig = LinkLogFigure {
        title,
        window_ms: args.window,
        rates: data.rates_mbps(),
        means: (sum.capacity_mbps, sum.arrivals_mbps, sum.departures_mbps),
        delays: data
            .delays
            .iter()
            .map(|&(t, d)| (t as f64 / 1e3, d as f64))
            .collect(),
        delay_p95_ms: sum.delay_p95_ms.map(|p| p as f64),
    };
    plot::write(&args.output, &fig)?;
    if !args.quiet {
        eprint!("{}", LinkLogSummary::notes(&data, &name));
        eprint!("{}", sum.lines());
        eprintln!("wrote {}", args.output.display());
    }
    if args.json {
        let figure = args.output.display().to_string();
        let v = sum.json(&data, &name, &figure, args.window);
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    Ok(())
}
