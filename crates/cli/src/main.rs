//! The `mslink` command: one binary, one verb per job.
//!
//! Contract: every verb has `--help` with an example; errors are reported with context and a
//! non-zero exit status, never a panic.

mod bench_cmd;
mod demo;
mod plot;
mod sim_cmd;
mod stack_bench;
mod trace_cmd;

use clap::{Parser, Subcommand};

/// mslink: a multi-service link layer for lossy links, and the lab around it.
#[derive(Parser)]
#[command(version, about, long_about = None, after_help = "Examples:\n  mslink demo                              # every recovery scheme over a lossy WLAN-like hop\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7\n  mslink trace gen --env walls -o w.trace  # an error trace like 003 Table 1's \"walls\"\n  mslink VERB --help                       # options of a verb")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Push a CBR packet stream through a lossy in-memory hop with each recovery service, then
    /// run them side by side on one multi-service link, and print what each achieves.
    Demo(demo::DemoArgs),
    /// Run a simulation scenario (every sweep point and repetition) and write its results.
    Sim(sim_cmd::SimArgs),
    /// Generate, inspect and convert per-frame error traces (docs/traces.md).
    Trace(trace_cmd::TraceArgs),
    /// Round-trip latency of the LLM, DAA and ILLM protocol stacks (002 Tables 1-3) and the
    /// integrated copy-and-checksum gain, on the in-memory wire (docs/stack.md).
    StackBench(stack_bench::StackBenchArgs),
    /// End-system benchmark: VI-style messaging (shared memory, TCP) vs sockets — round
    /// trip, throughput, CPU per process, per-call cost (docs/bench.md).
    Bench(bench_cmd::BenchArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
        Command::Trace(args) => trace_cmd::run(&args),
        Command::Sim(args) => sim_cmd::run(&args),
        Command::StackBench(args) => stack_bench::run(&args),
        Command::Bench(args) => bench_cmd::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mslink: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
