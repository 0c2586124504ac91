//! `mslink stack-bench`: round-trip latency of the mslink-stack protocol graph (002 §5.2,
//! Tables 1-3) on the in-memory wire, per stack (ETH, IP-ETH, UDP-IP-ETH), architecture (LLM,
//! DAA, ILLM) and user data size, and UDP with its checksum on, ILP off vs on.
//!
//! Contract: the measurements are `mslink_stack::bench`'s (a client and a server stack in this
//! process ping-pong `--transactions` times per cell; the mean wall-clock round trip; protocol
//! processing alone on the in-memory wire; checksums off in the latency tables, as in 002
//! §5.2). Output: a table per experiment, printed as its cells are measured, and with `--csv
//! FILE` one row per cell plus, beside FILE (unless `--no-plots`), the PNG and SVG figures of
//! `mslink_plot::stack`: `STEM_rtt_memory` (and `STEM_rtt_veth` with `--veth`; 002 Tables 1-3)
//! and `STEM_fig4` (002 Fig. 4).

use std::io::Write;

use anyhow::{Context, Result};
use mslink_stack::bench::{self, Row, SIZES};

/// Options of `mslink stack-bench`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink stack-bench\n  mslink stack-bench --transactions 100000 --csv stack.csv"
)]
pub struct StackBenchArgs {
    /// Round trips per cell.
    #[arg(long, default_value_t = 10_000)]
    pub transactions: u32,
    /// Repetitions of each cell; the smallest mean is reported (least disturbed by other load).
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Also measure over AF_PACKET sockets on a veth pair between two network namespaces this
    /// command creates and removes (Linux, needs root).
    #[arg(long)]
    pub veth: bool,
    /// Also write one CSV row per cell to this file, and the figures beside it.
    #[arg(long)]
    pub csv: Option<std::path::PathBuf>,
    /// With --csv: do not draw the PNG and SVG figures.
    #[arg(long)]
    pub no_plots: bool,
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
    let n = args.transactions.max(1);
    let mut rows = bench::memory_tables(
        n,
        args.repeat,
        &mut grid("in-memory wire", n, args.repeat, 3),
    )?;
    println!("\n");
    println!("UDP-IP-ETH, checksum on, 1400 bytes: copy then checksum vs copy-and-checksum (ILP)");
    println!(
        "{:<8}{:>12}{:>12}{:>10}",
        "arch", "two-pass", "one-pass", "gain"
    );
    let mut two_pass = 0.0;
    rows.extend(bench::ilp_table(n, args.repeat, &mut |r| {
        if !r.ilp {
            two_pass = r.rtt_us;
        } else {
            let (a, b) = (two_pass, r.rtt_us);
            println!(
                "{:<8}{a:>12.3}{b:>12.3}{:>9.1}%",
                r.architecture,
                100.0 * (a - b) / a
            );
        }
    })?);
    println!("002 Fig. 4: p50 round trip (µs) of a 1-byte flow vs background ping-pong flows, in-memory wire");
    println!(
        "{:<12}{:>14}{:>14}{:>14}{:>14}",
        "background", "UDPDAA(1)", "UDP(1)", "UDPDAA(1000)", "UDP(1000)"
    );
    let mut line = String::new();
    rows.extend(bench::fig4_table(&mut |r| {
        if r.architecture != line {
            if !line.is_empty() {
                println!();
            }
            line.clone_from(&r.architecture);
            print!("{:<12}", &line["fig4-bg".len()..]);
        }
        print!("{:>14.3}", r.rtt_us);
    })?);
    println!("\n");
    if args.veth {
        rows.extend(veth_tables(args)?);
    }
    if let Some(path) = &args.csv {
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
fn veth_tables(args: &StackBenchArgs) -> Result<Vec<Row>> {
    let n = args.transactions.clamp(1, bench::VETH_MAX_TRANSACTIONS);
    let rows = bench::veth_tables(
        n,
        args.repeat,
        &mut grid("AF_PACKET over veth", n, args.repeat, 2),
    )?;
    println!("\n");
    Ok(rows)
}

#[cfg(not(target_os = "linux"))]
fn veth_tables(_: &StackBenchArgs) -> Result<Vec<Row>> {
    anyhow::bail!("--veth needs Linux")
}
