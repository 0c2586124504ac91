//! `mslink emulate`: real programs across an emulated lossy link between network namespaces.
//!
//! Contract. This file is the verb's command line only: [`EmulateArgs`] (options, help and
//! examples) and [`run`], which hands them as plain [`EmulateOptions`] to
//! `mslink_emu::verb::run` and ends the process with the exit code it returns. Everything else
//! (the link configuration from `--link` and `--set`, the checks, the session in network
//! namespaces, the live view, the summary and its JSON) is `mslink_emu::verb`'s.

use std::path::PathBuf;

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;
use mslink_emu::session::{self, Until};
use mslink_emu::verb::{self, EmulateOptions};

const EXAMPLES: &str = "Examples:
  # a shell whose traffic crosses a 10 Mbit/s, 20 ms, 5% loss link (the host is $MSLINK_RIGHT)
  mslink emulate --set rate_bps=10e6 --set delay_ms=20 --loss 0.05 -- bash
  # the command reaches whatever the host reaches (NAT, removed at exit; --no-nat: the host only)
  mslink emulate --set delay_ms=50 -- sh -c 'curl -sI -m 5 https://example.org | head -1; exit 0'
  # live view: per class and direction, Mbit/s, loss, queue delay and retransmissions (on a
  # terminal it redraws in place; --live forces it, as plain lines where stderr is a file)
  mslink emulate --pair --link links/wlan.toml --live \\
      --left 'iperf3 -s -1 >/dev/null & iperf3 -s -p 5202 -1 >/dev/null' \\
      --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -t 2 >/dev/null & iperf3 -c $MSLINK_LEFT -p 5202 -u -b 1M -t 2 >/dev/null; wait'
  # iperf3 between two namespaces over a 5% loss link, raw vs selective repeat
  mslink emulate --pair --loss 0.05 --scheme raw \\
      --left 'iperf3 -s -1' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -t 2'
  mslink emulate --pair --loss 0.05 --scheme selective_repeat \\
      --left 'iperf3 -s -1' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -t 2'
  # bufferbloat: 11 Mbit/s of UDP into a 10 Mbit/s link with 1000 packets of buffer; the
  # summary's R->L 'qdelay p50' is ~240 ms with droptail, ~85 ms with codel, ~15 ms with pie
  mslink emulate --pair --set rate_bps=10e6 --queue droptail --queue-packets 1000 \\
      --left 'iperf3 -s -1 >/dev/null' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -u -b 11M -t 4 >/dev/null'
  mslink emulate --pair --set rate_bps=10e6 --queue codel --queue-packets 1000 \\
      --left 'iperf3 -s -1 >/dev/null' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -u -b 11M -t 4 >/dev/null'
  # 40 ms with 10 ms of normal jitter, in order, and outages of 0.3 s every 1 s on average:
  # iperf3's receiver line shows the jitter; --reorder lets packets overtake
  mslink emulate --pair --set delay_ms=40 --jitter 10 --jitter-dist normal --no-reorder \\
      --onoff 1000,300 --left 'iperf3 -s -1 >/dev/null' \\
      --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -u -b 1M -t 2 | tail -3'
  # 004's WLAN link (links/ has its HSCSD link, 003's cell and a cellular link, each citing
  # its source), live counters, the summary as JSON on standard output (the commands share
  # it: send theirs elsewhere) and in out/summary.json, a pcap
  mslink emulate --pair --link links/wlan.toml \\
      --stats-interval 1 --json --out out --pcap-left out/l.pcap \\
      --left 'iperf3 -s -1 >/dev/null' --right 'sleep 0.5; iperf3 -c 10.0.0.1 -t 2 >out/iperf3.txt'
  # every link frame on the air (data, retransmissions, ACK/NACKs, lost ones marked) in a pcap;
  # read it with the repository's dissector: wireshark -X lua_script:tools/wireshark/mslink.lua link.pcap
  mslink emulate --pair --loss 0.1 --scheme selective_repeat --pcap-link link.pcap \\
      --left 'iperf3 -s -1 >/dev/null' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -u -b 1M -t 1 >/dev/null'
  # a Mahimahi capacity trace (traces/README.md) and per-packet logs in Mahimahi's format (the
  # uplink is left to right), then their throughput and delay as a figure
  mslink emulate --pair --set capacity_trace=traces/12mbps.mahi \\
      --uplink-log up.log --downlink-log down.log \\
      --right 'iperf3 -s -1 >/dev/null' --left 'sleep 0.5; iperf3 -c $MSLINK_RIGHT -t 2 >/dev/null' \\
      && mslink graph up.log -o up.png

Commands run with `sh -c` and see MSLINK_LEFT and MSLINK_RIGHT (the two IPv4 addresses),
MSLINK_LEFT6 and MSLINK_RIGHT6 (IPv6) and MSLINK_PROMPT (the text naming the link, which the
shell of single mode without a command shows in its prompt: [mslink 10Mbit/s 20ms 5% sr]).
See docs/emulator.md.";

/// Options of `mslink emulate`.
#[derive(Args, Clone, Debug)]
#[command(after_help = EXAMPLES)]
pub struct EmulateArgs {
    /// Link file (TOML): rate_bps, capacity_trace, delay_ms, jitter_ms, jitter_dist, reorder,
    /// queue, queue_packets, queue_bytes, mtu, seed, [aqm], [onoff], [error], [error_reverse],
    /// [link] (services, rules, scheduler).
    #[arg(long, value_name = "LINK.toml")]
    pub link: Option<PathBuf>,
    /// Override a key of the link file (dotted keys, TOML values), e.g. --set delay_ms=20
    /// --set error.model=independent --set error.loss=0.05. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Seed of the error processes, to replay a run exactly (default: the link file's `seed`,
    /// else a fresh one per run, printed in the summary).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Shortcut: independent frame loss with this probability in both directions.
    #[arg(long, value_name = "P")]
    pub loss: Option<f64>,
    /// Queue discipline of both directions: droptail (default), drophead, codel (RFC 8289),
    /// pie (RFC 8033), fq_codel (RFC 8290). Same as --set queue=NAME; parameters under `aqm.`
    /// (--set aqm.target_ms=10).
    #[arg(long, value_name = "DISCIPLINE")]
    pub queue: Option<String>,
    /// Queue limit in packets (--set queue_packets=N).
    #[arg(long, value_name = "N")]
    pub queue_packets: Option<usize>,
    /// Queue limit in bytes (--set queue_bytes=N).
    #[arg(long, value_name = "N")]
    pub queue_bytes: Option<usize>,
    /// Jitter: deviation of the one-way delay in ms (--set jitter_ms=MS).
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub jitter: Option<f64>,
    /// Distribution of the jitter: uniform, normal (default), pareto, paretonormal.
    #[arg(long, value_name = "DIST")]
    pub jitter_dist: Option<String>,
    /// With jitter, let a packet overtake one sent earlier (as netem does without a rate).
    #[arg(long, overrides_with = "no_reorder")]
    pub reorder: bool,
    /// With jitter, keep packets in order: a packet never leaves before one sent earlier (the
    /// default).
    #[arg(long)]
    pub no_reorder: bool,
    /// On/off outages of both directions, as Mahimahi's mm-onoff: ON_MS of service and OFF_MS
    /// of outage, alternating, exponentially distributed with these means (`,fixed` for
    /// fixed periods). Packets wait in the queue through an outage.
    #[arg(long, value_name = "ON_MS,OFF_MS[,fixed]")]
    pub onoff: Option<String>,
    /// Shortcut: one service of this scheme carries everything (raw, selective_repeat,
    /// go_back_n, karn_rlp, oos_rlp, persistent, xor_fec, rs_fec).
    #[arg(long, value_name = "SCHEME")]
    pub scheme: Option<String>,
    /// Two namespaces, left and right of the hop, each running a command.
    #[arg(long)]
    pub pair: bool,
    /// Command for the left namespace (`--pair`).
    #[arg(long, value_name = "CMD", requires = "pair")]
    pub left: Option<String>,
    /// Command for the right namespace (`--pair`; also what follows `--`).
    #[arg(long, value_name = "CMD", requires = "pair")]
    pub right: Option<String>,
    /// When a `--pair` run ends (default: right if there is a right command, else left).
    #[arg(long, requires = "pair", value_parser = until_parser())]
    pub until: Option<Until>,
    /// Address of the left side.
    #[arg(long, value_name = "IPV4")]
    pub left_addr: Option<std::net::Ipv4Addr>,
    /// Address of the right side.
    #[arg(long, value_name = "IPV4")]
    pub right_addr: Option<std::net::Ipv4Addr>,
    /// Live view every SECS seconds (default 1): per direction the counters, per class
    /// (service) and direction the throughput, loss, queue delay and retransmissions. Giving
    /// it turns the view on, as --live does.
    #[arg(long, value_name = "SECS")]
    pub stats_interval: Option<f64>,
    /// Show the live view even where it would be off (standard error not a terminal, an
    /// interactive shell, --quiet): redrawn in place on a terminal, plain lines otherwise.
    /// Without it the view shows when standard error is a terminal and the run is not an
    /// interactive shell.
    #[arg(long)]
    pub live: bool,
    /// Single mode: no NAT. By default the command's namespace reaches whatever the host
    /// reaches (the host forwards and masquerades its traffic, nftables table inet
    /// mslink_<pid>, removed at exit); with --no-nat it reaches only the host.
    #[arg(long)]
    pub no_nat: bool,
    /// Print the summary at exit as one JSON document on standard output (`--json FILE`, the
    /// former spelling, writes it to FILE; prefer `--out DIR`).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write the summary to DIR/summary.json (DIR created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Capture the left device's packets (both ways) to a pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap_left: Option<PathBuf>,
    /// Capture the right device's packets (both ways) to a pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap_right: Option<PathBuf>,
    /// Capture every link-layer frame on the emulated air, both directions (data,
    /// retransmissions, parity, ACK/NACK and other control frames, as the link ends emit them,
    /// before the error model), each behind a 16-byte pseudo-header with its direction and
    /// what the channel did to it, to a pcap file of link type 147 (USER0); open it with
    /// `wireshark -X lua_script:tools/wireshark/mslink.lua FILE`.
    #[arg(long, value_name = "FILE")]
    pub pcap_link: Option<PathBuf>,
    /// Per-packet log of the uplink, left to right (out of the namespace of a single-mode
    /// command; from the left command in --pair), in Mahimahi's format: `T + BYTES` arrivals,
    /// `T - BYTES DELAY` departures, `T # BYTES` capacity, `T d PACKETS BYTES` drops before the air
    /// (`mslink graph FILE`, mm-throughput-graph, mm-delay-graph read it).
    #[arg(long, value_name = "FILE")]
    pub uplink_log: Option<PathBuf>,
    /// Per-packet log of the downlink, right to left (into the namespace of a single-mode
    /// command; to the left command in --pair), in Mahimahi's format.
    #[arg(long, value_name = "FILE")]
    pub downlink_log: Option<PathBuf>,
    /// Baseline for benchmarks (`--pair`): join the namespaces with a plain veth pair instead
    /// of the emulator.
    #[arg(long, requires = "pair")]
    pub direct: bool,
    /// No summary or notes on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// The command to run (single mode: in the emulated namespace; `--pair`: the right one).
    #[arg(last = true, value_name = "CMD ARGS")]
    pub command: Vec<String>,
}

/// `--until`'s values: the names of [`Until`], each with its meaning in the help.
fn until_parser() -> impl TypedValueParser<Value = Until> {
    PossibleValuesParser::new(Until::ALL.map(|u| PossibleValue::new(u.name()).help(u.about())))
        .map(|s| s.parse::<Until>().expect("one of the possible values"))
}

/// Runs `mslink emulate`.
pub fn run(args: &EmulateArgs) -> Result<()> {
    let code = verb::run(&options(args))?;
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// The options as the emulator's library takes them.
fn options(args: &EmulateArgs) -> EmulateOptions {
    let a = args.clone();
    EmulateOptions {
        link: a.link,
        sets: a.sets,
        seed: a.seed,
        loss: a.loss,
        queue: a.queue,
        queue_packets: a.queue_packets,
        queue_bytes: a.queue_bytes,
        jitter: a.jitter,
        jitter_dist: a.jitter_dist,
        reorder: a.reorder,
        no_reorder: a.no_reorder,
        onoff: a.onoff,
        scheme: a.scheme,
        pair: a.pair,
        left: a.left,
        right: a.right,
        until: a.until,
        left_addr: a.left_addr,
        right_addr: a.right_addr,
        stats_interval: a.stats_interval,
        live: a.live,
        no_nat: a.no_nat,
        json: a.json,
        out: a.out,
        pcap_left: a.pcap_left,
        pcap_right: a.pcap_right,
        pcap_link: a.pcap_link,
        uplink_log: a.uplink_log,
        downlink_log: a.downlink_log,
        direct: a.direct,
        quiet: a.quiet,
        command: a.command,
        command_line: std::env::args()
            .map(|a| session::shell_join(&[a]))
            .collect::<Vec<_>>()
            .join(" "),
    }
}
