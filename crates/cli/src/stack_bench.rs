//! `mslink stack-bench`: round-trip latency of the mslink-stack protocol graph (002 §5.2,
//! Tables 1-3) on the in-memory wire, per stack (ETH, IP-ETH, UDP-IP-ETH, TCP-IP-ETH), architecture (LLM,
//! DAA, ILLM) and user data size, and UDP with its checksum on, ILP off vs on.
//!
//! Contract: the measurements are `mslink_stack::bench`'s (a client and a server stack in this
//! process ping-pong `--transactions` times per cell; the mean wall-clock round trip; protocol
//! processing alone on the in-memory wire; checksums off in the latency tables, as in 002
//! §5.2; the architectures of a cell interleaved over `--repeat` repetitions, reported as the
//! mean with its Student-t 95% interval and DAA's and ILLM's paired ratios to LLM with a
//! verdict: `mslink_stack::bench::interleave`). Output: a table per experiment, printed as its cells are measured, and with `--csv
//! FILE` one row per cell plus, beside FILE (unless `--no-plots`), the PNG and SVG figures of
//! `mslink_plot::stack`: `STEM_rtt_memory` (and `STEM_rtt_veth` with `--veth`; 002 Tables 1-3)
//! and `STEM_fig4` (002 Fig. 4; `STEM_fig4_veth` with `--veth`: real receive threads per
//! priority class, `mslink_stack::bench::veth_fig4_table`). Notes (SCHED_FIFO refused, frames
//! dropped at the dispatcher) go to standard error. The tables' text, the JSON documents and
//! the CSV are `mslink_stack::bench`'s (`text`, `json`, `files`); this verb chooses the files,
//! shows progress and prints each cell's text as it comes.

use std::io::Write;

use anyhow::Result;
use mslink_stack::bench::text::{Fig4Line, Grid};
use mslink_stack::bench::{self, json, text, Layer, Row, SIZES};
use mslink_stack::Architecture;

/// Options of `mslink stack-bench`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink stack-bench\n  mslink stack-bench --count             # demultiplexing operations per frame: counted, not timed\n  mslink stack-bench --transactions 100000 --out results/stack   # stack.csv and figures\n  mslink stack-bench --transactions 1000 --repeat 1 --json -q > stack.json"
)]
pub struct StackBenchArgs {
    /// Round trips per cell.
    #[arg(long, default_value_t = 10_000)]
    pub transactions: u32,
    /// Repetitions of each cell, its architectures measured interleaved (alternating order);
    /// the mean over the repetitions is reported with a Student-t 95% interval, and DAA's and
    /// ILLM's paired ratios to LLM with theirs and a verdict (faster, slower, inconclusive).
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Also measure over AF_PACKET sockets on a veth pair between two network namespaces this
    /// command creates and removes (Linux, needs root): the round-trip tables, and 002 Fig. 4
    /// with real receive threads, SCHED_FIFO where the kernel allows it (a note says if not).
    #[arg(long)]
    pub veth: bool,
    /// Write stack.csv (one row per cell) and the figures into this folder (created if
    /// missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Write the CSV to this file instead (its folder created if missing), the figures beside
    /// it.
    #[arg(long, value_name = "FILE", conflicts_with = "out")]
    pub csv: Option<std::path::PathBuf>,
    /// With --out or --csv: do not draw the PNG and SVG figures.
    #[arg(long)]
    pub no_plots: bool,
    /// Print the cells as one JSON document on standard output instead of tables.
    #[arg(long)]
    pub json: bool,
    /// No progress bar (shown on a terminal only).
    #[arg(short, long)]
    pub quiet: bool,
    /// Instead of timing: count, per frame the server receives, the demultiplexing operations
    /// and the state changes made before the last of them, per architecture (002 §3-4; the
    /// same on any machine). With --json: `{"counts": [{architecture, stack, frames,
    /// demux_per_frame, pops_before_last_demux}]}`.
    #[arg(long)]
    pub count: bool,
    /// A deliberately broken stack for the claims ledger's mutants (docs/reproduce.md):
    /// `daa-layered-demux` (DAA demultiplexes at every layer again). With --count only.
    #[arg(long, hide = true, requires = "count")]
    pub mutant: Option<String>,
}

/// `--count`: the demultiplexing counts of every architecture.
fn counts(args: &StackBenchArgs) -> Result<()> {
    let mutant = match args.mutant.as_deref() {
        None => false,
        Some("daa-layered-demux") => true,
        Some(other) => {
            anyhow::bail!("--mutant {other}: the only stack mutant is daa-layered-demux")
        }
    };
    let n = args.transactions.clamp(1, 10_000);
    let rows = bench::count_table(n, mutant)?;
    if args.json {
        let doc = json::counts(n, args.mutant.as_deref(), &rows);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", text::counts(n, &rows));
    }
    Ok(())
}

/// With `tables`, prints `text` above `bar` (inside its suspend, so the bar does not cut it).
fn print_above(bar: &indicatif::ProgressBar, tables: bool, text: &str) {
    if tables && !text.is_empty() {
        bar.suspend(|| {
            print!("{text}");
            let _ = std::io::stdout().flush();
        });
    }
}

/// Runs the verb.
pub fn run(args: &StackBenchArgs) -> Result<()> {
    if args.count {
        return counts(args);
    }
    // Where the CSV goes, its folder made before the (long) measurements.
    let csv = match (&args.out, &args.csv) {
        (Some(dir), _) => {
            crate::convention::out_dir(dir, "--out")?;
            Some(dir.join("stack.csv"))
        }
        (None, Some(file)) => {
            crate::convention::parent_dir(file, "--csv")?;
            Some(file.clone())
        }
        (None, None) => None,
    };
    let n = args.transactions.max(1);
    let tables = !args.json;
    let cells = Architecture::ALL.len() * Layer::ALL.len() * SIZES.len()
        + 2 * Architecture::ALL.len()
        + 4 * bench::FIG4_BACKGROUND.len()
        + if args.veth {
            Architecture::ALL.len() * Layer::ALL.len() * SIZES.len()
                + 2 * bench::Fig4Server::ALL.len() * bench::FIG4_BACKGROUND.len()
        } else {
            0
        };
    let bar = crate::convention::bar(cells as u64, "cells", args.quiet);
    let show = |text: &str| print_above(&bar, tables, text);
    let mut grid = Grid::new("in-memory wire", n, args.repeat, 3);
    let mut rows = bench::memory_tables(n, args.repeat, &mut |cell| {
        bar.inc(cell.len() as u64);
        show(&grid.cell(cell));
    })?;
    show(grid.finish());
    show(&text::ilp_header());
    rows.extend(bench::ilp_table(n, args.repeat, &mut |cell| {
        bar.inc(cell.len() as u64);
        show(&text::ilp_lines(cell));
    })?);
    show("\n");
    show(&text::fig4_header());
    let mut fig4 = Fig4Line::new(14, 3);
    rows.extend(bench::fig4_table(&mut |r| {
        bar.inc(1);
        show(&fig4.cell(r));
    })?);
    show(fig4.finish());
    if args.veth {
        rows.extend(veth_tables(args, &bar, tables)?);
    }
    bar.finish_and_clear();
    if args.json {
        let doc = json::cells(n, args.repeat, &rows);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    if let Some(path) = &csv {
        bench::files::write_csv(&rows, path)?;
        if !args.no_plots {
            mslink_plot::stack::write_plots(&rows, path)?;
        }
    }
    Ok(())
}

/// The round-trip tables and 002 Fig. 4 over the veth, each cell counted on `bar` and, with
/// `tables`, printed as it comes; the run's notes to standard error.
#[cfg(target_os = "linux")]
fn veth_tables(
    args: &StackBenchArgs,
    bar: &indicatif::ProgressBar,
    tables: bool,
) -> Result<Vec<Row>> {
    let show = |text: &str| print_above(bar, tables, text);
    let n = args.transactions.clamp(1, bench::VETH_MAX_TRANSACTIONS);
    let mut grid = Grid::new("AF_PACKET over veth", n, args.repeat, 2);
    let mut rows = bench::veth_tables(n, args.repeat, &mut |cell| {
        bar.inc(cell.len() as u64);
        show(&grid.cell(cell));
    })?;
    show(grid.finish());
    show(&text::veth_fig4_header());
    let mut fig4 = Fig4Line::new(18, 2);
    let (fig4_rows, notes) = bench::veth_fig4_table(VETH_FIG4_SAMPLES, &mut |r| {
        bar.inc(1);
        show(&fig4.cell(r));
    })?;
    show(fig4.finish());
    // Notes go to standard error, so --json output stays one document.
    bar.suspend(|| eprint!("{}", text::veth_notes(&notes)));
    rows.extend(fig4_rows);
    Ok(rows)
}

/// Probe round trips per Fig. 4 cell over the veth.
#[cfg(target_os = "linux")]
const VETH_FIG4_SAMPLES: usize = 2001;

#[cfg(not(target_os = "linux"))]
fn veth_tables(_: &StackBenchArgs, _: &indicatif::ProgressBar, _: bool) -> Result<Vec<Row>> {
    anyhow::bail!("--veth needs Linux")
}
