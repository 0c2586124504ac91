//! `mslink trace`: generate, inspect and convert per-frame error traces.
//!
//! Contract: `gen` writes a trace with given 003 Table 1 figures (or a named environment of that
//! table) from a seed; `stats` prints a trace's figures for a frame length; `convert` rewrites a
//! trace compactly (run-length) or expanded (one line per frame). Errors name the file and line.
//! `stats` and `convert` stream the file into a packed trace (`mslink_cli::read_error_trace`)
//! and write their output as they go, so a trace of any size costs no more than its packed
//! form.

use anyhow::{bail, Context, Result};
use mslink_channel::generate::{generate, TraceFigures, TraceStats};
use mslink_channel::trace::{Entry, PackedTrace, TEXT_HEADER};
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

/// 003 Table 1 (loss, truncation, corruption, bit error rate); "trivial" entries are zero.
const ENVIRONMENTS: &[(&str, [f64; 4])] = &[
    ("office", [0.0, 0.0, 0.0, 0.0]),
    ("walking", [0.0, 0.0, 0.05, 1.6e-4]),
    ("adjacent", [0.31, 0.23, 0.0, 0.0]),
    ("table", [0.05, 0.02, 0.94, 4.9e-3]),
    ("walls", [0.01, 0.02, 0.27, 3.8e-4]),
];

fn read(file: &str) -> Result<PackedTrace> {
    crate::read_error_trace(std::path::Path::new(file)).with_context(|| format!("trace {file}"))
}

/// Writes `body` to the file `out`, or to standard output.
fn write_with(
    out: &Option<String>,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    match out {
        Some(path) => {
            crate::convention::parent_dir(std::path::Path::new(path), "--out")?;
            let f = std::fs::File::create(path).with_context(|| format!("writing {path}"))?;
            let mut w = std::io::BufWriter::new(f);
            body(&mut w)
                .and_then(|()| w.flush())
                .with_context(|| format!("writing {path}"))
        }
        None => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            body(&mut w)
                .and_then(|()| w.flush())
                .context("writing to standard output")
        }
    }
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
                Some(name) => match ENVIRONMENTS.iter().find(|(n, _)| n == name) {
                    Some((_, f)) => *f,
                    None => bail!(
                        "unknown environment {name:?}; expected one of {}",
                        ENVIRONMENTS
                            .iter()
                            .map(|(n, _)| *n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
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
                println!("{file} ({frame_len}-byte frames)");
                println!("  frames       {}", s.frames);
                println!("  loss         {:.3}%", s.loss * 100.0);
                println!(
                    "  truncation   {:.3}%  (of frames not lost)",
                    s.truncation * 100.0
                );
                println!(
                    "  corruption   {:.3}%  (of frames neither lost nor truncated)",
                    s.corruption * 100.0
                );
                println!("  bit errors   {:.3e}  (per bit of those frames)", s.ber);
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
            write_with(out, |w| {
                w.write_all(TEXT_HEADER.as_bytes())?;
                for e in t.entries() {
                    if *expand {
                        let one = Entry {
                            outcome: e.outcome,
                            count: 1,
                        };
                        let line = format!("{one}\n");
                        for _ in 0..e.count {
                            w.write_all(line.as_bytes())?;
                        }
                    } else {
                        writeln!(w, "{e}")?;
                    }
                }
                Ok(())
            })
        }
    }
}
