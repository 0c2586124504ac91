//! The options of `mslink emulate` and the link configuration they make.
//!
//! Contract. [`EmulateOptions`] holds what the command line gave, already parsed but not yet
//! checked against one another. [`config`] turns the link file, the shortcuts (`--loss`,
//! `--scheme`, `--queue`, `--jitter`, `--onoff`, ...) and the `--set` overrides, applied in that
//! order, into an [`EmuConfig`]; errors name the option or override at fault (with the nearest
//! valid name for a misspelt one, `mslink_channel::overrides::explain`). Without a seed from
//! `--seed` or the link file, each call draws a fresh one from the kernel, so repetitions of a
//! lossy run do not replay one loss pattern.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use mslink_channel::overrides;

use crate::session::{self, Until};
use crate::EmuConfig;

/// What `mslink emulate` was asked to do: its command-line options, one field each, declared
/// once here (the CLI parses them with the `clap` feature).
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct EmulateOptions {
    /// Link file (TOML): rate_bps, capacity_trace, delay_ms, jitter_ms, jitter_dist, reorder,
    /// queue, queue_packets, queue_bytes, mtu, seed, [aqm], [onoff], [error], [error_reverse],
    /// [link] (services, rules, scheduler).
    #[cfg_attr(feature = "clap", arg(long, value_name = "LINK.toml"))]
    pub link: Option<PathBuf>,
    /// Override a key of the link file (dotted keys, TOML values), e.g. --set delay_ms=20
    /// --set error.model=independent --set error.loss=0.05. Repeatable.
    #[cfg_attr(feature = "clap", arg(long = "set", value_name = "KEY=VALUE"))]
    pub sets: Vec<String>,
    /// Seed of the error processes, to replay a run exactly (default: the link file's `seed`,
    /// else a fresh one per run, printed in the summary).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub seed: Option<u64>,
    /// Shortcut: independent frame loss with this probability in both directions.
    #[cfg_attr(feature = "clap", arg(long, value_name = "P"))]
    pub loss: Option<f64>,
    /// Queue discipline of both directions: droptail (default), drophead, codel (RFC 8289),
    /// pie (RFC 8033), fq_codel (RFC 8290). Same as --set queue=NAME; parameters under `aqm.`
    /// (--set aqm.target_ms=10).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DISCIPLINE"))]
    pub queue: Option<String>,
    /// Queue limit in packets (--set queue_packets=N).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub queue_packets: Option<usize>,
    /// Queue limit in bytes (--set queue_bytes=N).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub queue_bytes: Option<usize>,
    /// Jitter: deviation of the one-way delay in ms (--set jitter_ms=MS).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "MS", allow_negative_numbers = true)
    )]
    pub jitter: Option<f64>,
    /// Distribution of the jitter: uniform, normal (default), pareto, paretonormal.
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIST"))]
    pub jitter_dist: Option<String>,
    /// With jitter, let a packet overtake one sent earlier (as netem does without a rate).
    #[cfg_attr(feature = "clap", arg(long, overrides_with = "no_reorder"))]
    pub reorder: bool,
    /// With jitter, keep packets in order: a packet never leaves before one sent earlier (the
    /// default).
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_reorder: bool,
    /// On/off outages: ON_MS of service and OFF_MS of outage, alternating, exponentially
    /// distributed with these means (`,fixed` for fixed periods), in both directions (or
    /// `,uplink` / `,downlink` only). Packets arriving while off wait in the queue (`,queue`,
    /// the default) or are dropped and counted (`,drop`, as Mahimahi's mm-onoff).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "ON_MS,OFF_MS[,fixed][,drop][,uplink|downlink]")
    )]
    pub onoff: Option<String>,
    /// Shortcut: one service of this scheme carries everything (raw, selective_repeat,
    /// go_back_n, karn_rlp, oos_rlp, persistent, xor_fec, rs_fec).
    #[cfg_attr(feature = "clap", arg(long, value_name = "SCHEME"))]
    pub scheme: Option<String>,
    /// Two namespaces, left and right of the hop, each running a command.
    #[cfg_attr(feature = "clap", arg(long))]
    pub pair: bool,
    /// Command for the left namespace (`--pair`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "CMD", requires = "pair"))]
    pub left: Option<String>,
    /// Command for the right namespace (`--pair`; also what follows `--`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "CMD", requires = "pair"))]
    pub right: Option<String>,
    /// When a `--pair` run ends (default: right if there is a right command, else left).
    #[cfg_attr(feature = "clap", arg(long, requires = "pair", value_parser = until_parser()))]
    pub until: Option<Until>,
    /// Address of the left side.
    #[cfg_attr(feature = "clap", arg(long, value_name = "IPV4"))]
    pub left_addr: Option<Ipv4Addr>,
    /// Address of the right side.
    #[cfg_attr(feature = "clap", arg(long, value_name = "IPV4"))]
    pub right_addr: Option<Ipv4Addr>,
    /// Live view every SECS seconds (default 1): per direction the counters, per class
    /// (service) and direction the throughput, loss, queue delay and retransmissions. Giving
    /// it turns the view on, as --live does.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SECS"))]
    pub stats_interval: Option<f64>,
    /// Show the live view even where it would be off (standard error not a terminal, an
    /// interactive shell, --quiet): redrawn in place on a terminal, plain lines otherwise.
    /// Without it the view shows when standard error is a terminal and the run is not an
    /// interactive shell.
    #[cfg_attr(feature = "clap", arg(long))]
    pub live: bool,
    /// Single mode: no NAT. By default the command's namespace reaches whatever the host
    /// reaches (the host forwards and masquerades its traffic, nftables table inet
    /// mslink_<pid>, removed at exit); with --no-nat it reaches only the host.
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_nat: bool,
    /// Print the summary at exit as one JSON document on standard output (`--json FILE`, the
    /// former spelling, writes it to FILE; prefer `--out DIR`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-"))]
    pub json: Option<PathBuf>,
    /// Write the summary to DIR/summary.json (DIR created if missing).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub out: Option<PathBuf>,
    /// Capture the left device's packets (both ways) to a pcap file.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub pcap_left: Option<PathBuf>,
    /// Capture the right device's packets (both ways) to a pcap file.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub pcap_right: Option<PathBuf>,
    /// Capture every link-layer frame on the emulated air, both directions (data,
    /// retransmissions, parity, ACK/NACK and other control frames, as the link ends emit them,
    /// before the error model), each behind a 16-byte pseudo-header with its direction and
    /// what the channel did to it, to a pcap file of link type 147 (USER0); open it with
    /// `wireshark -X lua_script:tools/wireshark/mslink.lua FILE`.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub pcap_link: Option<PathBuf>,
    /// Per-packet log of the uplink, left to right (out of the namespace of a single-mode
    /// command; from the left command in --pair), in Mahimahi's format: `T + BYTES` arrivals,
    /// `T - BYTES DELAY` departures, `T # BYTES` capacity, `T d PACKETS BYTES` drops before the air
    /// (`mslink graph FILE`, mm-throughput-graph, mm-delay-graph read it).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub uplink_log: Option<PathBuf>,
    /// Per-packet log of the downlink, right to left (into the namespace of a single-mode
    /// command; to the left command in --pair), in Mahimahi's format.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub downlink_log: Option<PathBuf>,
    /// Packet sizes in the link logs: `ip` (the IP length, what crossed the link) or
    /// `mahimahi` (4 bytes more per packet, as mm-link logs them, so mm-throughput-graph gives
    /// the same figures for the same traffic).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_enum, value_name = "HOW", default_value = "ip")
    )]
    pub log_bytes: crate::linklog::LogBytes,
    /// Baseline for benchmarks (`--pair`): join the namespaces with a plain veth pair instead
    /// of the emulator.
    #[cfg_attr(feature = "clap", arg(long, requires = "pair"))]
    pub direct: bool,
    /// No summary or notes on stderr.
    #[cfg_attr(feature = "clap", arg(long, short))]
    pub quiet: bool,
    /// The command to run (single mode: in the emulated namespace; `--pair`: the right one).
    #[cfg_attr(feature = "clap", arg(last = true, value_name = "CMD ARGS"))]
    pub command: Vec<String>,
    /// The whole command line, as the link logs' headers quote it (not an option).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub command_line: String,
}

/// `--until`'s values: the names of [`Until`], each with its meaning in the help.
#[cfg(feature = "clap")]
fn until_parser() -> impl clap::builder::TypedValueParser<Value = Until> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(Until::ALL.map(|u| PossibleValue::new(u.name()).help(u.about())))
        .map(|s| s.parse::<Until>().expect("one of the possible values"))
}

/// The link configuration from the file, the shortcuts and the overrides.
pub fn config(args: &EmulateOptions) -> Result<EmuConfig> {
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
        scheme(s, &mut table)?;
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

/// `--scheme`: one service of that scheme in place of the file's services and rules.
fn scheme(s: &str, table: &mut toml::Table) -> Result<()> {
    let mut svc = toml::Table::new();
    svc.insert("name".into(), s.into());
    svc.insert("scheme".into(), s.into());
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
    Ok(())
}

/// The queue and delay options, as link-file keys.
fn shortcuts(args: &EmulateOptions, table: &mut toml::Table) -> Result<()> {
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

/// `--onoff ON_MS,OFF_MS[,WORD...]` as an `[onoff]` table; the words, in any order: `fixed` or
/// `exponential` (periods), `queue` or `drop` (mode), `both`, `uplink` or `downlink`.
fn onoff(text: &str) -> Result<toml::Table> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let usage = "give ON_MS,OFF_MS (e.g. --onoff 2000,200), then optionally fixed|exponential, \
                 queue|drop and both|uplink|downlink (e.g. --onoff 2000,200,drop,uplink as \
                 mm-onoff uplink 2 0.2)";
    if parts.len() < 2 {
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
    for word in &parts[2..] {
        let key = match *word {
            "fixed" | "exponential" => "dist",
            "queue" | "drop" => "mode",
            "both" | "uplink" | "downlink" => "direction",
            _ => bail!("--onoff {text:?}: {word:?} is not one of fixed, exponential, queue, drop, both, uplink, downlink; {usage}"),
        };
        if let Some(before) = t.insert(key.into(), (*word).into()) {
            bail!("--onoff {text:?}: {word:?} and {before} both set the {key}");
        }
    }
    Ok(t)
}

/// A seed from the kernel's entropy pool.
fn fresh_seed() -> Result<u64> {
    session::fresh_seed()
        .context("reading the kernel's random generator for a fresh seed (give one with --seed)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_shortcuts_build_the_config() {
        let args = EmulateOptions {
            sets: vec![
                "delay_ms=20".into(),
                "error_reverse.model=pattern".into(),
                "error_reverse.good=3".into(),
                "error_reverse.bad=1".into(),
                "link.service.0.window=64".into(),
            ],
            loss: Some(0.05),
            scheme: Some("selective_repeat".into()),
            quiet: true,
            queue: Some("fq_codel".into()),
            queue_packets: Some(500),
            jitter: Some(3.0),
            jitter_dist: Some("pareto".into()),
            reorder: true,
            onoff: Some("1000,100,drop,fixed,downlink".into()),
            ..Default::default()
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
        use mslink_channel::delay::{OutageDirections, OutageMode, PeriodDist};
        assert_eq!(
            c.onoff
                .as_ref()
                .map(|o| (o.on_ms, o.off_ms, o.dist, o.mode, o.direction)),
            Some((
                1000.0,
                100.0,
                PeriodDist::Fixed,
                OutageMode::Drop,
                OutageDirections::Downlink
            ))
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
        let err = |f: &dyn Fn(&mut EmulateOptions)| {
            let mut a = seeded.clone();
            f(&mut a);
            format!("{:#}", config(&a).unwrap_err())
        };
        assert!(err(&|a| a.queue = Some("red".into())).contains("--queue \"red\""));
        assert!(err(&|a| a.onoff = Some("100".into())).contains("--onoff"));
        assert!(err(&|a| a.onoff = Some("100,x".into())).contains("\"x\""));
        assert!(err(&|a| a.onoff = Some("100,10,lose".into())).contains("\"lose\" is not one of"));
        assert!(err(&|a| a.onoff = Some("100,10,drop,queue".into())).contains("both set the mode"));
        assert!(err(&|a| a.jitter = Some(-1.0)).contains("--jitter must"));
        assert!(err(&|a| a.jitter_dist = Some("cauchy".into())).contains("--jitter-dist"));
        assert!(err(&|a| a.queue_packets = Some(0)).contains("--queue-packets"));
    }

    #[test]
    fn until_reads_its_names() {
        for u in Until::ALL {
            assert_eq!(u.name().parse::<Until>(), Ok(u));
        }
        assert!("neither".parse::<Until>().is_err());
    }
}
