//! The `mslink` command: one binary, one verb per job.
//!
//! Contract: every verb follows the convention of docs/cli.md (`--json` prints one JSON
//! document on standard output, `-q/--quiet` silences progress and notes, `--out` creates its
//! folder, help ends with runnable examples), which `tests/cli_convention.rs` checks by walking
//! [`command`]; errors are reported with context and a non-zero exit status, never a panic.
//!
//! This file is the root of the `mslink_cli` library (so tests and docs walk the same
//! [`command`] tree the binary parses); the `mslink` binary is the thin `src/bin/mslink.rs`.

#![warn(missing_docs)]

mod bench_cmd;
mod convention;
mod demo;
mod emulate_cmd;
mod graph_cmd;
mod meta_cmd;
mod reproduce_cmd;
mod sim_cmd;
mod stack_bench;
mod trace_cmd;
mod tunnel_cmd;
mod validate_cmd;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use mslink_lab::{read_error_trace, read_period_trace, read_trace_file, TraceFiles};

/// mslink: a multi-service link layer for lossy links, and the lab around it.
#[derive(Parser)]
#[command(version, about, long_about = None, after_help = "Examples:\n  mslink demo                              # every recovery scheme over a lossy WLAN-like hop\n  mslink sim scenarios/004/fig7_cbr_one_wlan.toml --out results/fig7\n  mslink trace gen --env walls --out w.trace  # an error trace like 003 Table 1's \"walls\"\n  mslink tunnel genkey > a.key             # keys for the link layer over an encrypted UDP tunnel\n  mslink completions bash > mslink.bash    # shell completions; `mslink man` writes man pages\n  mslink demo --help                       # options of a verb (docs/cli.md: the conventions)")]
pub struct Cli {
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
    /// Run what the claims ledger (claims/*.toml) needs, judge every checkable claim of the five
    /// papers, and write a report (report.html, report.md, claims.json).
    Reproduce(reproduce_cmd::ReproduceArgs),
    /// The simulator's TCP against the kernel's on the same links (iperf3 through `mslink
    /// emulate`): goodput, retransmissions and their ratio (docs/validation.md). Needs root,
    /// except with --sim-only or --reuse-real.
    Validate(validate_cmd::ValidateArgs),
    /// Generate, inspect and convert per-frame error traces (docs/traces.md).
    Trace(trace_cmd::TraceArgs),
    /// Round-trip latency of the LLM, DAA and ILLM protocol stacks (002 Tables 1-3) and the
    /// integrated copy-and-checksum gain, on the in-memory wire (docs/stack.md).
    StackBench(stack_bench::StackBenchArgs),
    /// End-system benchmark: VI-style messaging (shared memory, TCP) vs sockets — round
    /// trip, throughput, CPU per process, per-call cost (docs/bench.md).
    Bench(bench_cmd::BenchArgs),
    /// Run programs across an emulated lossy wireless link between network namespaces, with a
    /// multi-service link at both ends (docs/emulator.md). Needs root.
    Emulate(Box<emulate_cmd::EmulateArgs>),
    /// Draw the throughput and per-packet delay of a link log in Mahimahi's format (`mslink
    /// emulate --uplink-log`, or mm-link's own) as PNG or SVG: mm-throughput-graph and
    /// mm-delay-graph in one figure (docs/emulator.md).
    Graph(graph_cmd::GraphArgs),
    /// Carry the multi-service link layer to a peer over an encrypted UDP tunnel (TUN device,
    /// Noise handshake, ChaCha20-Poly1305); `genkey` / `pubkey` / `genpsk` make keys
    /// (docs/tunnel.md).
    Tunnel(tunnel_cmd::TunnelArgs),
    /// Print the shell completion script of a shell (bash, zsh, fish, ...) on standard output.
    Completions(meta_cmd::CompletionsArgs),
    /// Write the man pages of mslink and every (sub)verb into a folder.
    Man(meta_cmd::ManArgs),
}

/// The clap command tree of `mslink`, as parsed: the derive definitions with, on every
/// (sub)verb, an option given twice keeping its last value (so a later `--seconds 2` shortens
/// an example) and values that start with `-` taken as numbers (`--loss -0.1` reaches the
/// range check, which says why it is refused, instead of clap's "unexpected argument").
pub fn command() -> clap::Command {
    fn convention(c: clap::Command) -> clap::Command {
        let c = c.args_override_self(true).allow_negative_numbers(true);
        let names: Vec<String> = c
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        names
            .into_iter()
            .fold(c, |c, n| c.mut_subcommand(n, convention))
    }
    convention(Cli::command())
}

/// Runs the `mslink` command line `args` (program name first) and returns its exit status:
/// 0 on success, 1 on an error (reported on stderr), 2 on a usage error (`--help` and
/// `--version` print and return 0).
pub fn main_with_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match command()
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code() as u8;
        }
    };
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
        Command::Trace(args) => trace_cmd::run(&args),
        Command::Sim(args) => sim_cmd::run(&args),
        Command::Reproduce(args) => reproduce_cmd::run(&args),
        Command::Validate(args) => validate_cmd::run(&args),
        Command::StackBench(args) => stack_bench::run(&args),
        Command::Bench(args) => bench_cmd::run(&args),
        Command::Emulate(args) => emulate_cmd::run(&args),
        Command::Graph(args) => graph_cmd::run(&args),
        Command::Tunnel(args) => tunnel_cmd::run(&args),
        Command::Completions(args) => meta_cmd::completions(&args),
        Command::Man(args) => meta_cmd::man(&args),
    };
    match result {
        Ok(()) => 0,
        // The reader went away (`| head`): nothing to report.
        Err(e) if broken_pipe_error(&e) => BROKEN_PIPE_STATUS,
        Err(e) => {
            eprintln!("mslink: error: {}", error_chain(&e));
            1
        }
    }
}

/// The exit status of a command whose reader closed the pipe: 128 + SIGPIPE, what a shell
/// reports for a process the signal ended.
pub const BROKEN_PIPE_STATUS: u8 = 141;

/// Whether a panic payload is the standard library's "failed printing to stdout: Broken pipe".
pub fn is_broken_pipe(payload: &(dyn std::any::Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    text.starts_with("failed printing to") && text.contains("Broken pipe")
}

/// Whether an error comes from writing to a reader that closed the pipe.
fn broken_pipe_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `e` and its causes joined by ": ", leaving out a cause whose text the message before it
/// already ends with (an I/O error wrapped by a library error that prints its source would
/// otherwise appear twice).
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
