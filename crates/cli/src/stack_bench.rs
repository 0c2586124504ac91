//! `mslink stack-bench`: round-trip latency of the mslink-stack protocol graph (002 §5.2,
//! Tables 1-3) on the in-memory wire, per stack (ETH, IP-ETH, UDP-IP-ETH, TCP-IP-ETH), architecture (LLM,
//! DAA, ILLM) and user data size, and UDP with its checksum on, ILP off vs on.
//!
//! Contract: the measurements are `mslink_stack::bench`'s (a client and a server stack in this
//! process ping-pong `--transactions` times per cell; the mean wall-clock round trip; protocol
//! processing alone on the in-memory wire; checksums off in the latency tables, as in 002
//! §5.2). Output: a table per experiment, printed as its cells are measured, and with `--csv
//! FILE` one row per cell plus, beside FILE (unless `--no-plots`), the PNG and SVG figures of
//! `mslink_plot::stack`: `STEM_rtt_memory` (and `STEM_rtt_veth` with `--veth`; 002 Tables 1-3)
//! and `STEM_fig4` (002 Fig. 4; `STEM_fig4_veth` with `--veth`: real receive threads per
//! priority class, `mslink_stack::bench::veth_fig4_table`). Notes (SCHED_FIFO refused, frames
//! dropped at the dispatcher) go to standard error.

use std::io::Write;

use anyhow::{Context, Result};
use mslink_stack::bench::Layer;
use mslink_stack::bench::{self, Row, SIZES};
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
    /// Repetitions of each cell; the smallest mean is reported (least disturbed by other load).
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
        let cells: Vec<_> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "architecture": r.architecture, "stack": r.stack, "frames": r.frames,
                    "demux_per_frame": r.demux_per_frame,
                    "pops_before_last_demux": r.pops_before_last_demux,
                })
            })
            .collect();
        let doc = serde_json::json!({ "transactions": n, "mutant": args.mutant, "counts": cells });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!(
        "per frame the server received ({n} ping-pongs of 1 byte): demultiplexing operations, and state changes made before the last of them"
    );
    println!(
        "{:<6}{:<16}{:>8}{:>8}{:>24}",
        "arch", "stack", "frames", "demux", "pops before last demux"
    );
    for r in &rows {
        println!(
            "{:<6}{:<16}{:>8}{:>8.2}{:>24.2}",
            r.architecture, r.stack, r.frames, r.demux_per_frame, r.pops_before_last_demux
        );
    }
    Ok(())
}

/// Prints an architecture's round-trip grid as its cells arrive: a title per architecture, a
/// line per stack, `digits` decimals; the caller ends the last line.
fn grid(what: &str, n: u32, repeat: u32, digits: usize) -> impl FnMut(&Row) + '_ {
    let mut at: Option<(String, String)> = None;
    move |r: &Row| {
        let (arch, stack) = at.get_or_insert_with(Default::default).clone();
        if r.architecture != arch {
            if !arch.is_empty() {
                println!("\n");
            }
            println!("{} protocol stack: mean round trip (µs), {what}, checksum off, best of {repeat} x {n} transactions", r.architecture.to_uppercase());
            print!("{:<16}", "stack");
            for s in SIZES {
                print!("{s:>9}");
            }
            println!();
        } else if r.stack != stack {
            println!();
        }
        if r.architecture != arch || r.stack != stack {
            print!("{:<16}", r.stack);
        }
        print!("{:>9.digits$}", r.rtt_us);
        at = Some((r.architecture.clone(), r.stack.clone()));
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
    let mut memory_grid = grid("in-memory wire", n, args.repeat, 3);
    let mut rows = bench::memory_tables(n, args.repeat, &mut |r| {
        bar.inc(1);
        if tables {
            bar.suspend(|| memory_grid(r));
        }
    })?;
    let say = |text: &str| {
        if tables {
            bar.suspend(|| println!("{text}"));
        }
    };
    say("\n");
    say("UDP-IP-ETH, checksum on, 1400 bytes: copy then checksum vs copy-and-checksum (ILP)");
    say(&format!(
        "{:<8}{:>12}{:>12}{:>10}",
        "arch", "two-pass", "one-pass", "gain"
    ));
    let mut two_pass = 0.0;
    rows.extend(bench::ilp_table(n, args.repeat, &mut |r| {
        bar.inc(1);
        if !r.ilp {
            two_pass = r.rtt_us;
        } else {
            let (a, b) = (two_pass, r.rtt_us);
            say(&format!(
                "{:<8}{a:>12.3}{b:>12.3}{:>9.1}%",
                r.architecture,
                100.0 * (a - b) / a
            ));
        }
    })?);
    say("002 Fig. 4: p50 round trip (µs) of a 1-byte flow vs background ping-pong flows, in-memory wire");
    say(&format!(
        "{:<12}{:>14}{:>14}{:>14}{:>14}",
        "background", "UDPDAA(1)", "UDP(1)", "UDPDAA(1000)", "UDP(1000)"
    ));
    rows.extend(bench::fig4_table(&mut fig4_printer(&bar, tables, 14, 3))?);
    say("\n");
    if args.veth {
        rows.extend(veth_tables(args, &bar, tables)?);
    }
    bar.finish_and_clear();
    if args.json {
        let cells: Vec<_> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "device": r.device, "architecture": r.architecture, "stack": r.stack,
                    "size": r.size, "checksum": r.checksum, "ilp": r.ilp, "rtt_us": r.rtt_us,
                })
            })
            .collect();
        let doc = serde_json::json!({ "transactions": n, "repeat": args.repeat, "cells": cells });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    if let Some(path) = &csv {
        let mut f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        writeln!(f, "device,architecture,stack,size,checksum,ilp,rtt_us")?;
        for r in &rows {
            let (d, a, s, z, c, i, us) = (
                r.device,
                &r.architecture,
                &r.stack,
                r.size,
                r.checksum,
                r.ilp,
                r.rtt_us,
            );
            writeln!(f, "{d},{a},{s},{z},{c},{i},{us:.4}")?;
        }
        if !args.no_plots {
            mslink_plot::stack::write_plots(&rows, path)?;
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn veth_tables(
    args: &StackBenchArgs,
    bar: &indicatif::ProgressBar,
    tables: bool,
) -> Result<Vec<Row>> {
    let n = args.transactions.clamp(1, bench::VETH_MAX_TRANSACTIONS);
    let mut veth_grid = grid("AF_PACKET over veth", n, args.repeat, 2);
    let mut rows = bench::veth_tables(n, args.repeat, &mut |r| {
        bar.inc(1);
        if tables {
            bar.suspend(|| veth_grid(r));
        }
    })?;
    if tables {
        println!("\n");
        println!("002 Fig. 4 over the veth, real receive threads: p50 round trip (µs) of a 1-byte flow vs background ping-pong flows");
        print!("{:<12}", "background");
        for size in [1, 1000] {
            for s in bench::Fig4Server::ALL {
                print!("{:>18}", format!("{}({size})", s.name()));
            }
        }
        println!();
    }
    let (fig4, notes) =
        bench::veth_fig4_table(VETH_FIG4_SAMPLES, &mut fig4_printer(bar, tables, 18, 2))?;
    if tables {
        println!("\n");
    }
    // Notes go to standard error, so --json output stays one document.
    bar.suspend(|| {
        match &notes.fifo_refused {
            Some(why) => eprintln!(
                "note: SCHED_FIFO refused ({why}): every receive thread ran under the default policy, so UDPDAA-prio had no real priority over UDPDAA-equal"
            ),
            None => {
                if let Some((run, period)) = mslink_stack::rt::rt_budget() {
                    eprintln!("note: receive threads ran under SCHED_FIFO (real-time budget {run} of every {period} µs)");
                }
            }
        }
        if notes.unclassified > 0 {
            eprintln!(
                "note: {} frames reached no open DAA path at the dispatcher and were dropped",
                notes.unclassified
            );
        }
        if notes.short_cells > 0 {
            eprintln!(
                "note: {} Fig. 4 cells stopped at the {} s budget with fewer samples",
                notes.short_cells,
                bench::VETH_FIG4_CELL_BUDGET.as_secs()
            );
        }
    });
    rows.extend(fig4);
    Ok(rows)
}

/// Probe round trips per Fig. 4 cell over the veth.
#[cfg(target_os = "linux")]
const VETH_FIG4_SAMPLES: usize = 2001;

#[cfg(not(target_os = "linux"))]
fn veth_tables(_: &StackBenchArgs, _: &indicatif::ProgressBar, _: bool) -> Result<Vec<Row>> {
    anyhow::bail!("--veth needs Linux")
}

/// Counts each Fig. 4 cell on `bar` and, with `tables`, prints it as it comes: one line per
/// background load, one `width`-wide column of `precision` decimals per cell.
fn fig4_printer<'a>(
    bar: &'a indicatif::ProgressBar,
    tables: bool,
    width: usize,
    precision: usize,
) -> impl FnMut(&Row) + 'a {
    let mut line = String::new();
    move |r| {
        bar.inc(1);
        if !tables {
            return;
        }
        bar.suspend(|| {
            if r.architecture != line {
                if !line.is_empty() {
                    println!();
                }
                line.clone_from(&r.architecture);
                print!("{:<12}", &line["fig4-bg".len()..]);
            }
            print!("{:>width$.precision$}", r.rtt_us);
            let _ = std::io::stdout().flush();
        })
    }
}
