//! `mslink bench`: the end-system benchmark of 000 §IV on today's host — ping-pong round
//! trip vs message size (percentiles and a fitted line like 000's "10 + 0.01·size"),
//! throughput vs message size with per-process CPU from getrusage on each side, and per-call
//! cost tables for socket calls (000 Table 1) and the VI API (000 Table 2).
//!
//! Contract: `server` serves any number of tests on one VI connection; `client` drives
//! them; `local` starts a server child process on this host (this same program, as `mslink
//! bench server`) and runs the client against it. The benchmark itself is
//! `mslink_vi::bench`; this verb turns options into its settings and writes the report.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use mslink_vi::bench::{
    self, BenchBackend, ClientConfig, ServerCommand, ServerConfig, Target, Transport,
};
use mslink_vi::WaitMode;

mod output;

use output::report;

/// Options of `mslink bench`.
#[derive(Args, Debug)]
#[command(after_help = concat!(
    "Examples:\n",
    "  mslink bench local --quick               # both backends, small settings (CI)\n",
    "  mslink bench server --backend tcp --addr 127.0.0.1:7000   # on host A (here: this host)\n",
    "  mslink bench client --backend tcp --addr 127.0.0.1:7000 --quick --json > bench.json"
))]
pub struct BenchArgs {
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand, Debug)]
enum Role {
    /// Run a server and the client on this host (server in a child process).
    #[command(after_help = concat!(
        "Examples:\n",
        "  mslink bench local --quick               # both backends, small settings (CI)\n",
        "  mslink bench local --backend shm --sizes 64 --iters 100000\n",
        "  mslink bench local --backend tcp --mode block --sizes 64,4096 --reps 5   # means ± 95% CI\n",
        "  mslink bench local --backend tcp-batch --backend uring --sizes 65536 --verify --out results/fair\n",
        "  mslink bench local --backend shm --sizes 64 --log results/rtt.csv       # every round trip\n",
        "  mslink bench local --backend shm --mode poll --sizes 64 --cpu 0,1 --floor --quick   # VI vs the C floor\n",
        "  mslink bench local --backend tcp --backend uring --transport tcp --transport udp --sizes 65536 --out results/bench\n",
        "  mslink bench local --netns --backend uring --quick --json -q   # across a veth between two namespaces (root)"
    ))]
    Local(ClientOpts),
    /// Serve tests on one connection at --addr (until the client disconnects).
    #[command(after_help = concat!(
        "Examples:\n",
        "  mslink bench server --backend tcp --addr 127.0.0.1:7000   # then, on the client host:\n",
        "  mslink bench client --backend tcp --addr 127.0.0.1:7000 --quick"
    ))]
    Server(ServerOpts),
    /// Run the tests against a server at --addr.
    #[command(after_help = concat!(
        "Examples:\n",
        "  mslink bench server --backend tcp --addr 127.0.0.1:7000   # first, on the server host\n",
        "  mslink bench client --backend tcp --addr 127.0.0.1:7000 --quick --out results/client"
    ))]
    Client(ClientOpts),
}

#[derive(Args, Debug, Clone)]
struct ServerOpts {
    /// Backend.
    #[arg(long, value_enum, default_value = "shm")]
    backend: BenchBackend,
    /// Listen address: a Unix socket path (shm) or ip:port (tcp).
    #[arg(long)]
    addr: String,
    /// Largest message the server accepts (bytes).
    #[arg(long, default_value_t = 1 << 20)]
    max_size: usize,
    /// io_uring: send with SEND_ZC (zero copy) instead of plain SEND; see `bench local --help`.
    #[arg(long, conflicts_with = "no_zc")]
    zc: bool,
    /// io_uring: plain SEND (the default since SEND_ZC became opt-in; kept for old scripts).
    #[arg(long, hide = true)]
    no_zc: bool,
    /// Do not print the "listening on ADDR" line.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args, Debug, Clone)]
struct ClientOpts {
    /// Backends to measure (`local` may take several: --backend shm --backend tcp
    /// --backend uring); `sockets` is another name for `tcp`.
    #[arg(long, value_enum, default_values = ["shm", "tcp"])]
    backend: Vec<BenchBackend>,
    /// Transport of the sockets and io_uring backends (shm ignores it); may be given twice.
    /// Without it each backend runs over the transport its name says (`udp` is UDP).
    #[arg(long, value_enum)]
    transport: Vec<Transport>,
    /// io_uring: send with SEND_ZC/SENDMSG_ZC (zero copy) instead of plain SEND (client and,
    /// with `local`, server). Off by default: on loopback and across a veth the kernel copies
    /// every zero-copy send anyway (each notification says so; "zc copied" N/N) and the
    /// pinned pages plus the wait for the notification made it the slowest mode here (e.g.
    /// 10 against 33 Gbit/s at 64 KiB, docs/bench.md). Only a real NIC can avoid the copy.
    #[arg(long, conflicts_with = "no_zc")]
    zc: bool,
    /// io_uring: plain SEND (the default now; kept so old scripts run).
    #[arg(long, hide = true)]
    no_zc: bool,
    /// Measure every point this many times: tables, CSV and JSON give the mean over the runs
    /// with the half-width of its Student-t 95% confidence interval (none for one run).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    reps: u64,
    /// Throughput test: the sender fills every message with a seeded pattern (inside the
    /// measured time, from a fresh buffer per message in flight) and the server checks every
    /// byte; a mismatch fails the run naming the message and byte. Costs a fill and a read of
    /// each message, so it is off by default (docs/bench.md has both figures).
    #[arg(long)]
    verify: bool,
    /// Write every recorded round trip to FILE as CSV (backend,mode,path,size,rep,seq,rtt_ns),
    /// its folder created first.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// `local` only: run the server and the client in two fresh network namespaces joined
    /// by a veth pair (msv<pid>a/b, removed afterwards; needs root).
    #[arg(long)]
    netns: bool,
    /// Server address, as the server prints it (client only; required there).
    #[arg(long, default_value = "")]
    addr: String,
    /// Wait modes to measure.
    #[arg(long, value_enum, default_values = ["poll", "block"])]
    mode: Vec<WaitMode>,
    /// Message sizes in bytes (default: powers of two 1 B .. --max-size).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Largest message size (bytes).
    #[arg(long, default_value_t = 1 << 20)]
    max_size: usize,
    /// Round trips per size (after --warmup).
    #[arg(long, default_value_t = 10_000)]
    iters: usize,
    /// Unrecorded round trips per size.
    #[arg(long, default_value_t = 1_000)]
    warmup: usize,
    /// Bytes pushed per throughput point (at least 64 messages).
    #[arg(long, default_value_t = 256 << 20)]
    volume: usize,
    /// Most messages per throughput point.
    #[arg(long, default_value_t = 200_000)]
    max_messages: usize,
    /// Repetitions per call in the call-cost tables.
    #[arg(long, default_value_t = 2_000)]
    calls: usize,
    /// Small settings that finish in seconds (CI).
    #[arg(long)]
    quick: bool,
    /// Pin the server and the client to these CPUs (SERVER,CLIENT; sched_setaffinity, like
    /// sockperf/netperf/iperf3 affinity options); `local` pins its server child, the floor
    /// program and the client; `client` pins the client only (the second number).
    #[arg(long, value_delimiter = ',', value_name = "SERVER,CLIENT")]
    cpu: Vec<usize>,
    /// `local` only: also run the machine's floor, a C two-process spin ping-pong over shared
    /// memory (compiled at run time with $CC or cc), as `floor` rows beside the shm rows.
    #[arg(long)]
    floor: bool,
    /// Write pingpong.csv, throughput.csv, callcost.csv (000 Tables 1 and 2), rtt_fit.csv
    /// (lines, R² and residuals) and rtt_hist.csv (each point's HDR percentile distribution)
    /// into this folder (created if missing), with the figures of 000 Figs. 4-7 as PNG and SVG
    /// beside them (`--csv` is the former name).
    #[arg(long, alias = "csv", value_name = "DIR")]
    out: Option<PathBuf>,
    /// With --out: do not draw the PNG and SVG figures.
    #[arg(long)]
    no_plots: bool,
    /// Print one JSON document on standard output instead of tables.
    #[arg(long)]
    json: bool,
    /// No progress bar (shown on a terminal only).
    #[arg(short, long)]
    quiet: bool,
}

impl ClientOpts {
    fn config(&self) -> Result<ClientConfig> {
        let cpus = match self.cpu[..] {
            [] => None,
            [s, c] => Some((s, c)),
            _ => bail!(
                "--cpu takes two CPU numbers, SERVER,CLIENT (e.g. --cpu 0,1), got {:?}",
                self.cpu
            ),
        };
        Ok(ClientConfig {
            backends: self.backend.clone(),
            transports: self.transport.clone(),
            zc: self.zc,
            modes: self.mode.clone(),
            sizes: self.sizes.clone(),
            max_size: self.max_size,
            iters: self.iters,
            warmup: self.warmup,
            volume: self.volume,
            max_messages: self.max_messages,
            calls: self.calls,
            quick: self.quick,
            reps: self.reps as usize,
            verify: self.verify,
            cpus,
            floor: self.floor,
        })
    }
}

/// Run `mslink bench`.
pub fn run(args: &BenchArgs) -> Result<()> {
    match &args.role {
        Role::Server(o) => {
            let cfg = ServerConfig {
                backend: o.backend,
                addr: o.addr.clone(),
                max_size: o.max_size,
                zc: o.zc,
            };
            let quiet = o.quiet;
            Ok(bench::serve(&cfg, &mut |addr| {
                if quiet {
                    return Ok(());
                }
                println!("listening on {addr}");
                std::io::stdout().flush()
            })?)
        }
        Role::Client(o) => {
            if o.netns {
                bail!("--netns needs `mslink bench local`");
            }
            if o.floor {
                bail!("--floor needs `mslink bench local` (the floor runs on this host)");
            }
            if o.addr.is_empty() {
                bail!(
                    "--addr is required: give the address the server printed (`mslink bench \
                     server --addr IP:PORT` on the other host), e.g. --addr 192.0.2.1:7000"
                );
            }
            let target = Target::Remote(o.addr.clone());
            report(&measure(o, &target)?, o)
        }
        Role::Local(o) => {
            let program = crate::convention::mslink_exe()?;
            let server = ServerCommand {
                program,
                args: vec!["bench".into(), "server".into()],
            };
            if !o.addr.is_empty() {
                bail!("--addr is for `mslink bench client`; `local` picks its own address");
            }
            let target = Target::Local {
                server,
                netns: o.netns,
            };
            report(&measure(o, &target)?, o)
        }
    }
}

/// Runs the client's tests, the output folder made first so a long run cannot fail at its end,
/// with a bar of the measured points and an ETA on a terminal (`run_client_with` reports them).
fn measure(o: &ClientOpts, target: &Target) -> Result<bench::Report> {
    if let Some(dir) = &o.out {
        crate::convention::out_dir(dir, "--out")?;
    }
    if let Some(f) = &o.log {
        crate::convention::parent_dir(f, "--log")?;
    }
    // The total is known once the library has sized the run; it comes with the first step.
    let bar = crate::convention::bar(0, "points", o.quiet);
    bar.set_message(if o.quick {
        "(--quick)"
    } else {
        "(full settings; --quick for seconds)"
    });
    let cfg = o.config()?;
    let r = bench::run_client_with(&cfg, target, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    Ok(r?)
}
