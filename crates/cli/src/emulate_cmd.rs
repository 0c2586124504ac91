//! `mslink emulate`: real programs across an emulated lossy link between network namespaces.
//!
//! Contract. The verb builds the hop from `--link` TOML (shape: `mslink_emu::EmuConfig`) and
//! `--set` overrides, makes its namespaces and TUN devices itself (named `msl<pid>l` and
//! `msl<pid>r`, with a PID-namespace tag when nested), runs the commands inside, and carries their traffic through an
//! `mslink_emu::EmulatedHop` in real time. Everything it creates lives in unnamed namespaces
//! or on descriptors it holds, so the kernel removes it on exit, on Ctrl-C and after SIGKILL;
//! the commands run in PID namespaces killed with the emulator. At exit it drains the hop,
//! prints a summary (and `--json`), and checks that every packet is accounted for. The
//! session itself is `mslink_emu::session`; this verb turns options into its `SessionConfig`
//! and prints what it reports.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use mslink_emu::runtime::OffloadCounts;
use mslink_emu::session::{self, Commands, Event, Session, SessionConfig};
use mslink_emu::{EmuConfig, Summary};
use mslink_link::Duration;
use mslink_sim::overrides;

use crate::emulate_view;

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

/// When a `--pair` run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Until {
    /// When the left command exits.
    Left,
    /// When the right command exits.
    Right,
    /// When both have exited.
    Both,
    /// When either has exited.
    Either,
}

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
    #[arg(long, value_enum, requires = "pair")]
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

/// The link configuration from the file, the shortcuts and the overrides.
pub fn config(args: &EmulateArgs) -> Result<EmuConfig> {
    let mut table = match &args.link {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            toml::from_str::<toml::Table>(&text).with_context(|| format!("{}", p.display()))?
        }
        None => toml::Table::new(),
    };
    if let Some(p) = args.loss {
        let mut e = toml::Table::new();
        e.insert("model".into(), "independent".into());
        e.insert("loss".into(), toml::Value::Float(p));
        table.insert("error".into(), toml::Value::Table(e));
    }
    if let Some(s) = &args.scheme {
        let mut svc = toml::Table::new();
        svc.insert("name".into(), s.as_str().into());
        svc.insert("scheme".into(), s.as_str().into());
        let link = table
            .entry("link")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        let toml::Value::Table(link) = link else {
            bail!("`link` must be a table");
        };
        link.insert(
            "service".into(),
            toml::Value::Array(vec![toml::Value::Table(svc)]),
        );
        link.remove("rule");
        link.remove("default_service");
    }
    shortcuts(args, &mut table)?;
    for s in &args.sets {
        let (k, v) = overrides::parse_set(s).with_context(|| format!("--set {s:?}"))?;
        overrides::set_in_table(&mut table, &k, overrides::parse_value(&v))
            .with_context(|| format!("--set {s:?}"))?;
    }
    let what = args
        .link
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "link settings".into());
    // `--scheme` writes the service's scheme: an unknown one is named like a `--set` value.
    let mut sets: Vec<(String, String)> = args
        .sets
        .iter()
        .filter_map(|s| overrides::parse_set(s).ok())
        .collect();
    if let Some(s) = &args.scheme {
        sets.push(("--scheme".into(), s.clone()));
    }
    let mut cfg = toml::Value::Table(table)
        .try_into::<EmuConfig>()
        .map_err(|e| anyhow::anyhow!(overrides::explain(&e.to_string(), &sets)))
        .with_context(|| format!("{what} (after --set overrides)"))?;
    // Repetitions of a lossy run should not replay one loss pattern: without a seed, each run
    // draws its own, and the summary says which (--seed replays it).
    cfg.seed = match args.seed.or(cfg.seed) {
        Some(s) => Some(s),
        None => Some(fresh_seed()?),
    };
    Ok(cfg)
}

/// The queue and delay options, as link-file keys.
fn shortcuts(args: &EmulateArgs, table: &mut toml::Table) -> Result<()> {
    use mslink_channel::delay::JitterDist;
    use mslink_channel::queue::Discipline;
    if let Some(q) = &args.queue {
        if Discipline::parse(q).is_none() {
            bail!(
                "--queue {q:?}: not a queue discipline; use one of {}",
                Discipline::NAMES
            );
        }
        table.insert("queue".into(), q.as_str().into());
    }
    for (key, flag, v) in [
        ("queue_packets", "--queue-packets", args.queue_packets),
        ("queue_bytes", "--queue-bytes", args.queue_bytes),
    ] {
        if let Some(n) = v {
            if n == 0 {
                bail!("{flag} must be at least 1 (leave it out for no limit)");
            }
            table.insert(
                key.into(),
                toml::Value::Integer(n.min(i64::MAX as usize) as i64),
            );
        }
    }
    if let Some(j) = args.jitter {
        if !(j.is_finite() && j >= 0.0) {
            bail!("--jitter must be a number of ms >= 0, got {j}");
        }
        table.insert("jitter_ms".into(), toml::Value::Float(j));
    }
    if let Some(d) = &args.jitter_dist {
        if JitterDist::parse(d).is_none() {
            bail!("--jitter-dist {d:?}: use one of {}", JitterDist::NAMES);
        }
        table.insert("jitter_dist".into(), d.as_str().into());
    }
    if args.reorder || args.no_reorder {
        table.insert("reorder".into(), toml::Value::Boolean(args.reorder));
    }
    if let Some(o) = &args.onoff {
        table.insert("onoff".into(), toml::Value::Table(onoff(o)?));
    }
    Ok(())
}

/// `--onoff ON_MS,OFF_MS[,fixed|exponential]` as an `[onoff]` table.
fn onoff(text: &str) -> Result<toml::Table> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let usage = "give ON_MS,OFF_MS (e.g. --onoff 2000,200), optionally ,fixed or ,exponential";
    if !(2..=3).contains(&parts.len()) {
        bail!("--onoff {text:?}: {usage}");
    }
    let mut t = toml::Table::new();
    for (key, v) in [("on_ms", parts[0]), ("off_ms", parts[1])] {
        let ms: f64 = v
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x > 0.0)
            .with_context(|| {
                format!("--onoff {text:?}: {v:?} is not a positive number of ms; {usage}")
            })?;
        t.insert(key.into(), toml::Value::Float(ms));
    }
    if let Some(d) = parts.get(2) {
        if !matches!(*d, "fixed" | "exponential") {
            bail!("--onoff {text:?}: {d:?} is neither fixed nor exponential");
        }
        t.insert("dist".into(), (*d).into());
    }
    Ok(t)
}

/// A number without trailing zeros: 10, 86.4, 0.059.
fn short_number(x: f64) -> String {
    let t = format!("{x:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The bracket text naming the link in a shell's prompt (`MSLINK_PROMPT`), as Mahimahi's
/// `[delay 20 ms]`: the link file's stem, else the capacity (trace stem or rate) and the
/// one-way delay; the loss (independent: its percentage; other models: their name); the
/// services' schemes, abbreviated as 004's tables do (SR, GBN, ...) in lower case, joined
/// by `+`. E.g. `[mslink wlan exponential sr+oos]`, `[mslink 10Mbit/s 20ms 5% sr]`.
pub fn prompt_text(link: Option<&std::path::Path>, cfg: &EmuConfig) -> String {
    let mut words = vec!["mslink".to_string()];
    let stem = |p: &std::path::Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    match link {
        Some(file) => words.push(stem(file)),
        None => {
            if let Some(trace) = &cfg.capacity_trace {
                words.push(stem(std::path::Path::new(trace)));
            } else if cfg.rate_bps > 0.0 {
                let (div, unit) = match cfg.rate_bps {
                    r if r >= 1e9 => (1e9, "Gbit/s"),
                    r if r >= 1e6 => (1e6, "Mbit/s"),
                    r if r >= 1e3 => (1e3, "kbit/s"),
                    _ => (1.0, "bit/s"),
                };
                words.push(format!("{}{unit}", short_number(cfg.rate_bps / div)));
            }
            if cfg.delay_ms > 0.0 {
                words.push(format!("{}ms", short_number(cfg.delay_ms)));
            }
        }
    }
    use mslink_channel::ErrorModelConfig as E;
    match &cfg.error {
        E::Perfect => {}
        E::Independent { loss } => words.push(format!("{}%", short_number(loss * 100.0))),
        other => {
            let name = serde_json::to_value(other)
                .ok()
                .and_then(|v| v["model"].as_str().map(str::to_string));
            words.extend(name);
        }
    }
    let schemes: Vec<&str> = cfg
        .link
        .services
        .iter()
        .map(|s| match s.config.scheme() {
            "selective_repeat" => "sr",
            "go_back_n" => "gbn",
            "karn_rlp" => "karn",
            "oos_rlp" => "oos",
            "persistent" => "parq",
            "xor_fec" => "xor",
            "rs_fec" => "rs",
            other => other,
        })
        .collect();
    words.push(schemes.join("+"));
    // Only what a prompt shows literally: bash and zsh expand `\`, `$`, `!`, backquotes.
    let text: String = words
        .join(" ")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || " ._+-%/".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("[{}]", text.trim())
}

/// A seed from the kernel's entropy pool.
fn fresh_seed() -> Result<u64> {
    session::fresh_seed().context("reading /dev/urandom for a fresh seed (give one with --seed)")
}

fn load_relative(
    base: Option<&std::path::Path>,
) -> impl FnMut(&str) -> std::io::Result<String> + '_ {
    move |f: &str| {
        let p = std::path::Path::new(f);
        let p = match base.and_then(|b| b.parent()) {
            Some(dir) if p.is_relative() && !p.exists() => dir.join(p),
            _ => p.to_path_buf(),
        };
        crate::read_trace_file(&p)
    }
}

fn log_json(t: mslink_emu::linklog::LogTotals) -> serde_json::Value {
    serde_json::json!({
        "arrivals": t.arrivals,
        "arrival_bytes": t.arrival_bytes,
        "departures": t.departures,
        "departure_bytes": t.departure_bytes,
        "drops": t.drops,
        "drop_bytes": t.drop_bytes,
        "capacity_bytes": t.capacity_bytes,
        "unmatched_departures": t.unmatched,
    })
}

fn line(s: &Summary) -> String {
    emulate_view::counters_line(s)
}

/// Runs `mslink emulate`.
pub fn run(args: &EmulateArgs) -> Result<()> {
    let code = run_inner(args)?;
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

fn run_inner(args: &EmulateArgs) -> Result<i32> {
    let cfg = config(args)?;
    if !args.quiet {
        let reverse = cfg.error_reverse.iter().map(|m| ("error_reverse", m));
        for (key, model) in std::iter::once(("error", &cfg.error)).chain(reverse) {
            for n in model.notes() {
                eprintln!("mslink: note: {key}: {n}");
            }
        }
    }
    // Before the session, so a run cannot fail at its end for want of a folder.
    if let Some(dir) = &args.out {
        crate::convention::out_dir(dir, "--out")?;
    }
    if args.direct && (args.uplink_log.is_some() || args.downlink_log.is_some()) {
        bail!("--uplink-log and --downlink-log log the emulated hop; --direct has none");
    }
    if args.direct && args.pcap_link.is_some() {
        bail!("--pcap-link captures the emulated hop's frames; --direct has none");
    }
    for (file, option) in [
        (&args.pcap_left, "--pcap-left"),
        (&args.pcap_right, "--pcap-right"),
        (&args.pcap_link, "--pcap-link"),
        (&args.uplink_log, "--uplink-log"),
        (&args.downlink_log, "--downlink-log"),
    ] {
        if let Some(f) = file {
            crate::convention::parent_dir(f, option)?;
        }
    }
    if let Some(s) = args.stats_interval {
        if !(s.is_finite() && s >= 0.01) {
            bail!("--stats-interval {s}: give a number of seconds, at least 0.01");
        }
    }
    if args.no_nat && args.pair {
        bail!("--no-nat is for single mode: --pair sets up no NAT");
    }
    // The live view: asked for, or a terminal watching a run that is not an interactive
    // shell (which owns the terminal).
    let stderr_tty = std::io::stderr().is_terminal();
    let interactive = !args.pair && args.command.is_empty();
    let view = if args.live || args.stats_interval.is_some() {
        Some(args.stats_interval.unwrap_or(1.0))
    } else if stderr_tty && !interactive && !args.quiet && !args.direct {
        Some(1.0)
    } else {
        None
    };
    let mut drawing = emulate_view::View::new(stderr_tty);
    let commands = if args.pair {
        let trailing = (!args.command.is_empty()).then(|| session::shell_join(&args.command));
        if args.right.is_some() && trailing.is_some() {
            bail!("give the right command either with --right or after --, not both");
        }
        let (left, right) = (args.left.clone(), args.right.clone().or(trailing));
        if left.is_none() && right.is_none() {
            bail!("--pair needs --left CMD and/or --right CMD");
        }
        let until = args.until.map(|u| match u {
            Until::Left => session::Until::Left,
            Until::Right => session::Until::Right,
            Until::Both => session::Until::Both,
            Until::Either => session::Until::Either,
        });
        Commands::Pair { left, right, until }
    } else {
        Commands::Single(args.command.clone())
    };
    let config = SessionConfig {
        emu: cfg.clone(),
        commands,
        left_addr: args.left_addr,
        right_addr: args.right_addr,
        stats_interval: view.map(Duration::from_secs_f64),
        pcap: [args.pcap_left.clone(), args.pcap_right.clone()],
        pcap_link: args.pcap_link.clone(),
        direct: args.direct,
        link_logs: [args.uplink_log.clone(), args.downlink_log.clone()],
        command_line: std::env::args()
            .map(|a| session::shell_join(&[a]))
            .collect::<Vec<_>>()
            .join(" "),
        nat: !args.no_nat,
        prompt: Some(prompt_text(args.link.as_deref(), &cfg)),
    };
    let mut load = load_relative(args.link.as_deref());
    let end = Session::new(config, &mut load)?.run(&mut |event| match event {
        Event::StaleDeviceRemoved(name) => {
            eprintln!("mslink emulate: removed stale device {name}")
        }
        Event::Ready {
            left: (la, ld),
            right: (ra, rd),
            direct,
        } if !args.quiet => eprintln!(
            "mslink emulate: left {la} ({ld}) <-> right {ra} ({rd}){}; ready",
            if direct { " over a plain veth" } else { "" }
        ),
        Event::Ready { .. } => {}
        Event::Nat { table, uplinks } if !args.quiet => eprintln!(
            "mslink emulate: NAT to the outside (nftables table inet {table}{})",
            if uplinks.is_empty() {
                String::new()
            } else {
                format!("; forwarding on for replies on {}", uplinks.join(", "))
            }
        ),
        Event::Nat { .. } => {}
        Event::NatUnavailable(e) => {
            eprintln!("mslink emulate: warning: no NAT to the outside ({e}); the command reaches only the host (--no-nat silences this)")
        }
        Event::StaleNatRemoved(table) => {
            eprintln!("mslink emulate: removed the stale NAT table inet {table}")
        }
        Event::Stats { now, live } => {
            let _ = drawing.draw(&mut std::io::stderr().lock(), now.as_nanos() as f64 / 1e9, live);
        }
    })?;
    let [left, right] = &end.sides;
    let mut devices = BTreeMap::new();
    for (name, side) in [("left", left), ("right", right)] {
        if let Some(c) = side.counters {
            devices.insert(
                name,
                serde_json::json!({"device": side.device, "rx_packets": c[0], "rx_dropped": c[1], "tx_packets": c[2], "tx_dropped": c[3]}),
            );
        }
    }
    let (summary, offload) = (&end.summary, &end.offload);
    let json = serde_json::json!({
        "mode": if args.direct { "direct" } else if args.pair { "pair" } else { "single" },
        "left": {"addr": left.addr.to_string(), "addr6": left.addr6.map(|a| a.to_string()), "device": left.device, "exit_status": left.exit_status},
        "right": {"addr": right.addr.to_string(), "addr6": right.addr6.map(|a| a.to_string()), "device": right.device, "exit_status": right.exit_status},
        "wall_s": end.wall.as_secs_f64(),
        "drained": end.drained,
        "balanced": end.balanced(),
        "left_to_right": summary.directions[0],
        "right_to_left": summary.directions[1],
        "ends": {"left": summary.ends[0], "right": summary.ends[1]},
        "devices": devices,
        "offload": {
            "enabled": end.offload_enabled,
            "udp_segmentation": end.udp_segmentation,
            "coalesce": cfg.tun_coalesce,
            "left": offload[0],
            "right": offload[1],
        },
        "config": cfg,
        "link_logs": {
            "uplink": end.logs[0].map(log_json),
            "downlink": end.logs[1].map(log_json),
        },
    });
    let text = serde_json::to_string_pretty(&json)? + "\n";
    if let Some(path) = &args.json {
        if path.as_os_str() == "-" {
            print!("{text}");
        } else {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    if let Some(dir) = &args.out {
        let path = dir.join("summary.json");
        std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    if !args.quiet && !args.direct {
        eprintln!(
            "mslink emulate: {} | seed {}",
            line(summary),
            cfg.seed.unwrap_or(1)
        );
        if end.offload_enabled {
            let o = |f: fn(&OffloadCounts) -> u64| f(&offload[0]) + f(&offload[1]);
            eprintln!(
                "mslink emulate: offloads: {} super-packets read as {} packets, {} written as {} super-packets, {} offload errors",
                o(|c| c.gso_reads),
                o(|c| c.gso_segments),
                o(|c| c.coalesced_packets),
                o(|c| c.coalesced_writes),
                o(|c| c.offload_errors + c.coalesce_errors),
            );
        }
        if !end.drained {
            eprintln!("mslink emulate: the hop did not drain in time; packets still in flight are reported as such");
        }
    }
    if !args.direct && !end.balanced() {
        bail!(
            "packet accounting does not add up (a bug): {}",
            line(summary)
        );
    }
    Ok(end.exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_shortcuts_build_the_config() {
        let args = EmulateArgs {
            link: None,
            sets: vec![
                "delay_ms=20".into(),
                "error_reverse.model=pattern".into(),
                "error_reverse.good=3".into(),
                "error_reverse.bad=1".into(),
                "link.service.0.window=64".into(),
            ],
            seed: None,
            loss: Some(0.05),
            scheme: Some("selective_repeat".into()),
            pair: false,
            left: None,
            right: None,
            until: None,
            left_addr: None,
            right_addr: None,
            stats_interval: None,
            live: false,
            no_nat: false,
            json: None,
            out: None,
            pcap_left: None,
            pcap_right: None,
            pcap_link: None,
            uplink_log: None,
            downlink_log: None,
            direct: false,
            quiet: true,
            command: vec![],
            queue: Some("fq_codel".into()),
            queue_packets: Some(500),
            queue_bytes: None,
            jitter: Some(3.0),
            jitter_dist: Some("pareto".into()),
            reorder: true,
            no_reorder: false,
            onoff: Some("1000,100,fixed".into()),
        };
        let c = config(&args).unwrap();
        assert_eq!(c.delay_ms, 20.0);
        assert_eq!(c.link.services[0].config.scheme(), "selective_repeat");
        assert!(
            matches!(c.error, mslink_channel::ErrorModelConfig::Independent { loss } if loss == 0.05)
        );
        assert!(c.error_reverse.is_some());
        assert_eq!(c.queue, mslink_channel::queue::Discipline::FqCodel);
        assert_eq!(
            (c.queue_packets, c.jitter_ms, c.reorder),
            (Some(500), 3.0, true)
        );
        assert_eq!(c.jitter_dist, mslink_channel::delay::JitterDist::Pareto);
        assert_eq!(
            c.onoff.as_ref().map(|o| (o.on_ms, o.off_ms)),
            Some((1000.0, 100.0))
        );
        let text = toml::to_string(&c.link).unwrap();
        assert!(text.contains("window = 64"), "{text}");
        // No seed anywhere: a fresh one per call; --seed wins over the file's.
        assert!(c.seed.is_some());
        assert_ne!(c.seed, config(&args).unwrap().seed);
        let mut seeded = args;
        seeded.seed = Some(42);
        seeded.sets.push("seed=7".into());
        assert_eq!(config(&seeded).unwrap().seed, Some(42));
        seeded.seed = None;
        assert_eq!(config(&seeded).unwrap().seed, Some(7));
        let err = |f: &dyn Fn(&mut EmulateArgs)| {
            let mut a = seeded.clone();
            f(&mut a);
            format!("{:#}", config(&a).unwrap_err())
        };
        assert!(err(&|a| a.queue = Some("red".into())).contains("--queue \"red\""));
        assert!(err(&|a| a.onoff = Some("100".into())).contains("--onoff"));
        assert!(err(&|a| a.onoff = Some("100,x".into())).contains("\"x\""));
        assert!(err(&|a| a.jitter = Some(-1.0)).contains("--jitter must"));
        assert!(err(&|a| a.jitter_dist = Some("cauchy".into())).contains("--jitter-dist"));
        assert!(err(&|a| a.queue_packets = Some(0)).contains("--queue-packets"));
    }

    #[test]
    fn the_prompt_names_the_link() {
        let cfg = |text: &str| toml::from_str::<EmuConfig>(text).unwrap();
        let c = cfg(
            "rate_bps = 10e6\ndelay_ms = 20\n[error]\nmodel = 'independent'\nloss = 0.05\n\
                     [[link.service]]\nname = 'tcp'\nscheme = 'selective_repeat'\n",
        );
        assert_eq!(prompt_text(None, &c), "[mslink 10Mbit/s 20ms 5% sr]");
        // The file's stem stands for its rate and delay; every service is named.
        let wlan = concat!(env!("CARGO_MANIFEST_DIR"), "/../../links/wlan.toml");
        let c = cfg(&std::fs::read_to_string(wlan).unwrap());
        assert_eq!(
            prompt_text(Some(std::path::Path::new(wlan)), &c),
            "[mslink wlan exponential sr+oos]"
        );
        // Defaults: an unlimited, perfect link with one raw service.
        assert_eq!(prompt_text(None, &cfg("")), "[mslink raw]");
        let c = cfg(
            "rate_bps = 86400\ndelay_ms = 100\ncapacity_trace = 'traces/12mbps.mahi'\n\
                     [error]\nmodel = 'independent'\nloss = 0.059\n",
        );
        assert_eq!(prompt_text(None, &c), "[mslink 12mbps 100ms 5.9% raw]");
        // Nothing a shell would expand gets into it.
        let odd = prompt_text(Some(std::path::Path::new("$(rm -rf x)`.toml")), &cfg(""));
        assert!(!odd.contains(['$', '`', '(', '\\']), "{odd}");
    }
}
