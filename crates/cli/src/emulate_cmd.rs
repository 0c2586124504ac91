//! `mslink emulate`: real programs across an emulated lossy link between network namespaces.
//!
//! Contract. The verb builds the hop from `--link` TOML (shape: `mslink_emu::EmuConfig`) and
//! `--set` overrides, makes its namespaces and TUN devices itself (named `msl<pid>l` and
//! `msl<pid>r`), runs the commands inside, and carries their traffic through an
//! `mslink_emu::EmulatedHop` in real time. Everything it creates lives in unnamed namespaces
//! or on descriptors it holds, so the kernel removes it on exit, on Ctrl-C and after SIGKILL;
//! the commands run in PID namespaces killed with the emulator. At exit it drains the hop,
//! prints a summary (and `--json`), and checks that every packet is accounted for.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use mslink_emu::clock::Clock;
use mslink_emu::netns::{dev_counters, sweep_stale, Netns};
use mslink_emu::runtime::{self, Control};
use mslink_emu::tun::Tun;
use mslink_emu::{EmuConfig, EmulatedHop, Summary};
use mslink_link::{Duration, Instant};
use mslink_sim::overrides;

const EXAMPLES: &str = "Examples:
  # a shell whose traffic crosses a 10 Mbit/s, 20 ms, 5% loss link (the host is $MSLINK_RIGHT)
  mslink emulate --set rate_bps=10e6 --set delay_ms=20 --loss 0.05 -- bash
  # iperf3 between two namespaces over a 5% loss link, raw vs selective repeat
  mslink emulate --pair --loss 0.05 --scheme raw \\
      --left 'iperf3 -s -1' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -t 5'
  mslink emulate --pair --loss 0.05 --scheme selective_repeat \\
      --left 'iperf3 -s -1' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -t 5'
  # a Mahimahi capacity trace, a link file, live counters, a JSON summary and pcaps
  mslink emulate --pair --link wlan.toml --set capacity_trace=traces/12mbps.mahi \\
      --stats-interval 1 --json out.json --pcap-left l.pcap --left 'iperf3 -s -1' \\
      --right 'sleep 0.5; iperf3 -c 10.0.0.1'

Commands run with `sh -c` and see MSLINK_LEFT and MSLINK_RIGHT (the two addresses).
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
#[derive(Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct EmulateArgs {
    /// Link file (TOML): rate_bps, capacity_trace, delay_ms, queue_packets, queue_bytes, mtu,
    /// seed, [error], [error_reverse], [link] (services, rules, scheduler).
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
    /// Print live counters to stderr every SECS seconds.
    #[arg(long, value_name = "SECS")]
    pub stats_interval: Option<f64>,
    /// Write the JSON summary to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Capture the left device's packets (both ways) to a pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap_left: Option<PathBuf>,
    /// Capture the right device's packets (both ways) to a pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap_right: Option<PathBuf>,
    /// Baseline for benchmarks (`--pair`): join the namespaces with a plain veth pair instead
    /// of the emulator.
    #[arg(long, requires = "pair")]
    pub direct: bool,
    /// No summary on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// The command to run (single mode: in the emulated namespace; `--pair`: the right one).
    #[arg(last = true, value_name = "CMD ARGS")]
    pub command: Vec<String>,
}

static STOP: AtomicBool = AtomicBool::new(false);
/// The signal that stopped the run (0: none), for the exit code 128 + signal.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
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
    let mut cfg = toml::Value::Table(table)
        .try_into::<EmuConfig>()
        .with_context(|| format!("{what} (after --set overrides)"))?;
    // Repetitions of a lossy run should not replay one loss pattern: without a seed, each run
    // draws its own, and the summary says which (--seed replays it).
    cfg.seed = match args.seed.or(cfg.seed) {
        Some(s) => Some(s),
        None => Some(fresh_seed()?),
    };
    Ok(cfg)
}

/// A seed from the kernel's entropy pool.
fn fresh_seed() -> Result<u64> {
    use std::io::Read;
    let mut b = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .context("reading /dev/urandom for a fresh seed (give one with --seed)")?;
    Ok(u64::from_le_bytes(b))
}

fn load_relative(
    base: Option<&std::path::Path>,
) -> impl FnMut(&str) -> Result<String, String> + '_ {
    move |f: &str| {
        let p = std::path::Path::new(f);
        let p = match base.and_then(|b| b.parent()) {
            Some(dir) if p.is_relative() && !p.exists() => dir.join(p),
            _ => p.to_path_buf(),
        };
        std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
    }
}

struct Side {
    ns: Netns,
    created: bool,
    addr: std::net::Ipv4Addr,
    dev: String,
}

fn configure(side: &Side, peer: std::net::Ipv4Addr, mtu: usize, default_route: bool) -> Result<()> {
    let dev = side.dev.as_str();
    // No IPv6 on the device: router solicitations and MLD reports would be traffic nobody asked
    // for (and would disturb exact counts).
    let _ = side
        .ns
        .sysctl(&format!("net/ipv6/conf/{dev}/disable_ipv6"), "1");
    if side.created {
        side.ns.ip(&["link", "set", "lo", "up"])?;
    }
    side.ns.ip(&[
        "link",
        "set",
        "dev",
        dev,
        "mtu",
        &mtu.to_string(),
        "txqueuelen",
        "1000",
        "up",
    ])?;
    side.ns.ip(&[
        "addr",
        "add",
        &side.addr.to_string(),
        "peer",
        &peer.to_string(),
        "dev",
        dev,
    ])?;
    if default_route {
        side.ns.ip(&["route", "add", "default", "dev", dev])?;
    }
    Ok(())
}

type Pcap = pcap_file::pcap::PcapWriter<std::io::BufWriter<std::fs::File>>;

fn pcap(path: &Option<PathBuf>) -> Result<Option<Pcap>> {
    let Some(p) = path else { return Ok(None) };
    let f = std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?;
    let header = pcap_file::pcap::PcapHeader {
        datalink: pcap_file::DataLink::RAW,
        ..Default::default()
    };
    Ok(Some(pcap_file::pcap::PcapWriter::with_header(
        std::io::BufWriter::new(f),
        header,
    )?))
}

fn stop_child(c: &mut Child) {
    if matches!(c.try_wait(), Ok(None)) {
        // unshare --kill-child takes its command (the PID namespace's init) down with it.
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
        }
        for _ in 0..100 {
            if !matches!(c.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = c.kill();
    }
    let _ = c.wait();
}

fn line(s: &Summary) -> String {
    let d = |i: usize| {
        let p = &s.directions[i].packets;
        format!(
            "in {} out {} lost {} abandoned {} qdrop {} inflight {}",
            p.received,
            p.delivered,
            p.lost_channel,
            p.abandoned,
            p.dropped_queue + p.dropped_service_queue,
            p.in_flight
        )
    };
    format!("L->R {} | R->L {}", d(0), d(1))
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
    let pid = std::process::id();
    let clock = Clock::new();
    let mut load = load_relative(args.link.as_deref());
    let mut hop = cfg
        .build(clock.now(), &mut load)
        .with_context(|| "invalid link settings")?;
    for name in sweep_stale() {
        eprintln!("mslink emulate: removed stale device {name}");
    }
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(s, on_signal as *const () as libc::sighandler_t);
        }
    }
    let (left_cmd, right_cmd) = if args.pair {
        let trailing = (!args.command.is_empty()).then(|| shell_join(&args.command));
        if args.right.is_some() && trailing.is_some() {
            bail!("give the right command either with --right or after --, not both");
        }
        (args.left.clone(), args.right.clone().or(trailing))
    } else if args.command.is_empty() {
        (Some("exec ${SHELL:-sh}".to_string()), None)
    } else {
        (Some(shell_join(&args.command)), None)
    };
    if args.pair && left_cmd.is_none() && right_cmd.is_none() {
        bail!("--pair needs --left CMD and/or --right CMD");
    }
    let (la, ra) = if args.pair {
        ([10, 0, 0, 1].into(), [10, 0, 0, 2].into())
    } else {
        // 100.64.0.0/10 (shared address space), one /30 per emulator process.
        let base = 0x6440_0000u32 | ((pid & 0xf_ffff) << 2);
        ((base + 1).into(), (base + 2).into())
    };
    let la = args.left_addr.unwrap_or(la);
    let ra = args.right_addr.unwrap_or(ra);
    let left = Side {
        ns: Netns::create().context("creating the left network namespace")?,
        created: true,
        addr: la,
        dev: format!("msl{pid}l"),
    };
    let right = Side {
        ns: if args.pair {
            Netns::create().context("creating the right network namespace")?
        } else {
            Netns::current()?
        },
        created: args.pair,
        addr: ra,
        dev: format!("msl{pid}r"),
    };
    let mtu = cfg.mtu;
    let tuns = if args.direct {
        // Baseline: a veth pair, no emulator. Move the right end into the right namespace
        // through a placeholder process living there.
        let mut holder = right.ns.command("sleep").arg("1000").spawn()?;
        let r = left.ns.ip(&[
            "link",
            "add",
            &left.dev,
            "type",
            "veth",
            "peer",
            "name",
            &right.dev,
            "netns",
            &holder.id().to_string(),
        ]);
        let _ = holder.kill();
        let _ = holder.wait();
        r?;
        None
    } else {
        let create = |dev: &str| {
            if cfg.tun_offload {
                // A kernel without the offloads gets a plain device (the JSON summary says
                // `offload.enabled: false`).
                Tun::create_with_offloads(dev).or_else(|_| Tun::create(dev))
            } else {
                Tun::create(dev)
            }
        };
        let l = left
            .ns
            .run(|| create(&left.dev))?
            .context("creating the left TUN")?;
        let r = right
            .ns
            .run(|| create(&right.dev))?
            .context("creating the right TUN")?;
        Some([l, r])
    };
    configure(&left, ra, mtu, true)?;
    configure(&right, la, mtu, args.pair)?;
    let env = vec![
        ("MSLINK_LEFT".to_string(), la.to_string()),
        ("MSLINK_RIGHT".to_string(), ra.to_string()),
    ];
    if !args.quiet {
        eprintln!(
            "mslink emulate: left {la} ({}) <-> right {ra} ({}){}; ready",
            left.dev,
            right.dev,
            if args.direct {
                " over a plain veth"
            } else {
                ""
            }
        );
    }
    let interactive = !args.pair && args.command.is_empty();
    let spawn = |side: &Side, cmd: &Option<String>| -> Result<Option<Child>> {
        match cmd {
            None => Ok(None),
            Some(c) => {
                let mut env = env.clone();
                env.push((
                    "MSLINK_SIDE".into(),
                    if side.addr == la { "left" } else { "right" }.into(),
                ));
                Ok(Some(
                    side.ns
                        .spawn(c, &env, !interactive)
                        .with_context(|| format!("starting {c:?}"))?,
                ))
            }
        }
    };
    let mut lc = spawn(&left, &left_cmd)?;
    let mut rc = spawn(&right, &right_cmd)?;
    let until = args.until.unwrap_or(if rc.is_some() {
        Until::Right
    } else {
        Until::Left
    });
    let mut status: [Option<i32>; 2] = [None, None];
    let started = std::time::Instant::now();
    let mut pcaps = [pcap(&args.pcap_left)?, pcap(&args.pcap_right)?];
    let mut pcap_error: Option<anyhow::Error> = None;
    let mut next_check = Instant::ZERO;
    let stats_every = args.stats_interval.map(Duration::from_secs_f64);
    let mut next_stats = stats_every.map(|d| clock.now() + d);
    let poll_children =
        |status: &mut [Option<i32>; 2], lc: &mut Option<Child>, rc: &mut Option<Child>| {
            for (i, c) in [lc, rc].into_iter().enumerate() {
                if let (Some(ch), None) = (c.as_mut(), status[i]) {
                    if let Ok(Some(st)) = ch.try_wait() {
                        status[i] = Some(st.code().unwrap_or(128 + signal_of(&st)));
                    }
                }
            }
        };
    let finished = |status: &[Option<i32>; 2]| -> bool {
        let has = [left_cmd.is_some(), right_cmd.is_some()];
        let done = |i: usize| !has[i] || status[i].is_some();
        match until {
            Until::Left => done(0),
            Until::Right => done(1),
            Until::Both => done(0) && done(1),
            Until::Either => (has[0] && status[0].is_some()) || (has[1] && status[1].is_some()),
        }
    };
    let mut drained = true;
    let mut offload = [runtime::OffloadCounts::default(); 2];
    if let Some(tuns) = &tuns {
        let mut tick = |now: Instant, hop: &EmulatedHop| -> Control {
            if let (Some(t), Some(every)) = (next_stats, stats_every) {
                if now >= t {
                    eprintln!(
                        "[{:8.3}s] {}",
                        now.as_nanos() as f64 / 1e9,
                        line(&hop.live_summary())
                    );
                    next_stats = Some(t + every);
                }
            }
            if STOP.load(Ordering::SeqCst) {
                return Control::Interrupt;
            }
            if now >= next_check {
                next_check = now + Duration::from_millis(5);
                poll_children(&mut status, &mut lc, &mut rc);
                if finished(&status) {
                    return Control::Stop;
                }
            }
            Control::Continue
        };
        let has_pcap = pcaps.iter().any(|p| p.is_some());
        let mut capture = |side: usize, _inbound: bool, _t: Instant, p: &[u8]| {
            if let Some(w) = pcaps[side].as_mut() {
                let ts = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                if let Err(e) =
                    w.write_packet(&pcap_file::pcap::PcapPacket::new(ts, p.len() as u32, p))
                {
                    pcap_error.get_or_insert(e.into());
                }
            }
        };
        let end = runtime::run(
            &mut hop,
            [&tuns[0], &tuns[1]],
            &clock,
            cfg.tun_coalesce,
            cfg.delay().max(Duration::ZERO) + Duration::from_secs_f64(cfg.drain_ms / 1e3),
            &mut tick,
            if has_pcap { Some(&mut capture) } else { None },
        )?;
        drained = end.drained;
        offload = end.offload;
    } else {
        while !finished(&status) && !STOP.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(5));
            poll_children(&mut status, &mut lc, &mut rc);
        }
    }
    for c in [&mut lc, &mut rc].into_iter().flatten() {
        stop_child(c);
    }
    poll_children(&mut status, &mut lc, &mut rc);
    if let Some(e) = pcap_error {
        return Err(e.context("writing a pcap file"));
    }
    for w in pcaps.into_iter().flatten() {
        use std::io::Write;
        w.into_writer().flush().context("writing a pcap file")?;
    }
    let summary = hop.summary();
    let mut devices = BTreeMap::new();
    for (name, side) in [("left", &left), ("right", &right)] {
        if let Some(c) = side
            .ns
            .net_dev()
            .ok()
            .and_then(|t| dev_counters(&t, &side.dev))
        {
            devices.insert(
                name,
                serde_json::json!({"device": side.dev, "rx_packets": c[0], "rx_dropped": c[1], "tx_packets": c[2], "tx_dropped": c[3]}),
            );
        }
    }
    let balanced = summary.directions.iter().all(|d| d.balanced);
    let json = serde_json::json!({
        "mode": if args.direct { "direct" } else if args.pair { "pair" } else { "single" },
        "left": {"addr": la.to_string(), "device": left.dev, "exit_status": status[0]},
        "right": {"addr": ra.to_string(), "device": right.dev, "exit_status": status[1]},
        "wall_s": started.elapsed().as_secs_f64(),
        "drained": drained,
        "balanced": balanced,
        "left_to_right": summary.directions[0],
        "right_to_left": summary.directions[1],
        "ends": {"left": summary.ends[0], "right": summary.ends[1]},
        "devices": devices,
        "offload": {
            "enabled": tuns.as_ref().is_some_and(|t| t[0].has_vnet_hdr()),
            "udp_segmentation": tuns.as_ref().is_some_and(|t| t[0].has_uso()),
            "coalesce": cfg.tun_coalesce,
            "left": offload[0],
            "right": offload[1],
        },
        "config": cfg,
    });
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&json)? + "\n";
        if path.as_os_str() == "-" {
            print!("{text}");
        } else {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    if !args.quiet && !args.direct {
        eprintln!(
            "mslink emulate: {} | seed {}",
            line(&summary),
            cfg.seed.unwrap_or(1)
        );
        if tuns.as_ref().is_some_and(|t| t[0].has_vnet_hdr()) {
            let o = |f: fn(&runtime::OffloadCounts) -> u64| f(&offload[0]) + f(&offload[1]);
            eprintln!(
                "mslink emulate: offloads: {} super-packets read as {} packets, {} written as {} super-packets, {} offload errors",
                o(|c| c.gso_reads),
                o(|c| c.gso_segments),
                o(|c| c.coalesced_packets),
                o(|c| c.coalesced_writes),
                o(|c| c.offload_errors + c.coalesce_errors),
            );
        }
        if !drained {
            eprintln!("mslink emulate: the hop did not drain in time; packets still in flight are reported as such");
        }
    }
    if !args.direct && !balanced {
        bail!(
            "packet accounting does not add up (a bug): {}",
            line(&summary)
        );
    }
    // Stopped by a signal: the shell's convention, 128 + its number (130 for Ctrl-C, 143 for
    // SIGTERM), not the status of the commands the emulator then stopped.
    let sig = SIGNAL.load(Ordering::SeqCst);
    if sig != 0 {
        return Ok(128 + sig);
    }
    let main = match until {
        Until::Left => status[0],
        Until::Right => status[1],
        Until::Both | Until::Either => status[0].filter(|&c| c != 0).or(status[1]).or(status[0]),
    };
    Ok(main.unwrap_or(0))
}

fn signal_of(st: &std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.signal().unwrap_or(0)
}

/// Quotes words for `sh -c`.
fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
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
            json: None,
            pcap_left: None,
            pcap_right: None,
            direct: false,
            quiet: true,
            command: vec![],
        };
        let c = config(&args).unwrap();
        assert_eq!(c.delay_ms, 20.0);
        assert_eq!(c.link.services[0].config.scheme(), "selective_repeat");
        assert!(
            matches!(c.error, mslink_channel::ErrorModelConfig::Independent { loss } if loss == 0.05)
        );
        assert!(c.error_reverse.is_some());
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
    }

    #[test]
    fn shell_join_quotes() {
        assert_eq!(
            shell_join(&["echo".into(), "a b".into(), "it's".into()]),
            "echo 'a b' 'it'\\''s'"
        );
    }
}
