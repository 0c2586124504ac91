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

/// What `mslink emulate` was asked to do (its command-line options, one field each).
#[derive(Clone, Debug, Default)]
pub struct EmulateOptions {
    /// Link file (TOML, the shape of [`EmuConfig`]).
    pub link: Option<PathBuf>,
    /// `KEY=VALUE` overrides of the link file (dotted keys, TOML values), in order.
    pub sets: Vec<String>,
    /// Seed of the error processes (default: the link file's, else a fresh one).
    pub seed: Option<u64>,
    /// Independent frame loss with this probability in both directions.
    pub loss: Option<f64>,
    /// Queue discipline of both directions, by name.
    pub queue: Option<String>,
    /// Queue limit in packets.
    pub queue_packets: Option<usize>,
    /// Queue limit in bytes.
    pub queue_bytes: Option<usize>,
    /// Jitter of the one-way delay in ms.
    pub jitter: Option<f64>,
    /// Distribution of the jitter, by name.
    pub jitter_dist: Option<String>,
    /// With jitter, let packets overtake.
    pub reorder: bool,
    /// With jitter, keep packets in order.
    pub no_reorder: bool,
    /// On/off outages: `ON_MS,OFF_MS[,fixed|exponential]`.
    pub onoff: Option<String>,
    /// One service of this scheme carries everything.
    pub scheme: Option<String>,
    /// Two namespaces, left and right of the hop.
    pub pair: bool,
    /// Command of the left namespace (pair mode).
    pub left: Option<String>,
    /// Command of the right namespace (pair mode).
    pub right: Option<String>,
    /// When a pair run ends.
    pub until: Option<Until>,
    /// Address of the left side.
    pub left_addr: Option<Ipv4Addr>,
    /// Address of the right side.
    pub right_addr: Option<Ipv4Addr>,
    /// Live view every this many seconds (turns the view on).
    pub stats_interval: Option<f64>,
    /// Show the live view even where it would be off.
    pub live: bool,
    /// Single mode: no NAT to the outside.
    pub no_nat: bool,
    /// Where the summary JSON goes: `-` for standard output, else a file.
    pub json: Option<PathBuf>,
    /// Folder for `summary.json` (created if missing).
    pub out: Option<PathBuf>,
    /// pcap of the left device's packets.
    pub pcap_left: Option<PathBuf>,
    /// pcap of the right device's packets.
    pub pcap_right: Option<PathBuf>,
    /// pcap of every link frame on the emulated air.
    pub pcap_link: Option<PathBuf>,
    /// Per-packet log of the uplink (left to right), Mahimahi's format.
    pub uplink_log: Option<PathBuf>,
    /// Per-packet log of the downlink (right to left), Mahimahi's format.
    pub downlink_log: Option<PathBuf>,
    /// Pair mode: a plain veth pair instead of the emulator.
    pub direct: bool,
    /// No summary or notes on standard error.
    pub quiet: bool,
    /// The command to run (single mode), or the right one (pair mode).
    pub command: Vec<String>,
    /// The whole command line, as the link logs' headers quote it.
    pub command_line: String,
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

/// A seed from the kernel's entropy pool.
fn fresh_seed() -> Result<u64> {
    session::fresh_seed().context("reading /dev/urandom for a fresh seed (give one with --seed)")
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
            onoff: Some("1000,100,fixed".into()),
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
        let err = |f: &dyn Fn(&mut EmulateOptions)| {
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
    fn until_reads_its_names() {
        for u in Until::ALL {
            assert_eq!(u.name().parse::<Until>(), Ok(u));
        }
        assert!("neither".parse::<Until>().is_err());
    }
}
