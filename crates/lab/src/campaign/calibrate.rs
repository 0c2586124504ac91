//! `mslink sim --calibrate`: what simulating costs on this machine, measured by short probe
//! runs, for the estimate's time (`mslink_sim::resources::Costs`).
//!
//! Contract. [`calibrate`] writes probe scenarios into a temporary folder and runs each
//! through the whole campaign ([`super::run`]: tables, summary.json, stats.csv and plots, as
//! `mslink sim` runs a scenario by default), one thread, timing each:
//! * many flows and almost no events: seconds per flow (its state, its rows, its plots);
//! * a 500-point sweep of runs of two flows and a few events: seconds per run;
//! * about two million events at 2, 2,000 and 100,000 flows: seconds per event at each,
//!   less the flows' and the run's own cost (an event costs more when the flows' state leaves
//!   the caches);
//! * an 8 MB error trace read once: seconds per byte.
//!
//! It takes a few seconds, keeps the figures in a JSON file ([`path`]) that later estimates
//! read ([`costs`]) and removes its folder. Without a calibration the estimate uses
//! `Costs::builtin` (the developers' machine). A calibration that cannot be read is an
//! error naming the file, never silently replaced by the built-in figures. Timing a probe is
//! the one place the campaign reads the clock for a figure it keeps; nothing here is a result.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use mslink_sim::resources::Costs;

use super::{SimOptions, StatsMode};
use crate::progress::{Progress, Silent};

/// The environment variable that names the calibration file (else [`path`]'s default).
pub const CALIBRATION_ENV: &str = "MSLINK_CALIBRATION";

/// The calibration file: `$MSLINK_CALIBRATION`, else `$XDG_CACHE_HOME/mslink/calibration.json`,
/// else `$HOME/.cache/mslink/calibration.json`; `None` when none of them is set.
pub fn path() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var(CALIBRATION_ENV) {
        return Some(p);
    }
    let cache = var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?;
    Some(cache.join("mslink").join("calibration.json"))
}

/// The costs the estimate uses: the calibration file's when there is one, else the built-in
/// figures. A file that exists but cannot be used is an error that names it.
pub fn costs() -> Result<Costs> {
    let Some(p) = path() else {
        return Ok(Costs::builtin());
    };
    match std::fs::read_to_string(&p) {
        Ok(text) => Costs::from_json(&text).with_context(|| {
            format!(
                "calibration {}: run `mslink sim --calibrate` again, or remove the file to use the built-in figures",
                p.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Costs::builtin()),
        Err(e) => Err(e).with_context(|| format!("reading the calibration {}", p.display())),
    }
}

/// The probes' scenario: a wired and a wireless hop (the base station of
/// scenarios/bench/cbr_1m_flows.toml) and two entries of talk-spurt flows whose counts, rates,
/// duration and error model the probes set.
const PROBE: &str = r#"[sim]
name = "calibrate"
duration_s = 1
drain_s = 0
seed = 1
timeseries_window_s = 0

[[segment]]
kind = "wired"
rate_bps = 1000000000
delay_ms = 1
queue_packets = 1000

[[segment]]
kind = "wireless"
rate_bps = 200000000
delay_ms = 2
frame_bytes = 1500
error = { model = "exponential", mean_bytes = 65536 }
[segment.link]
seq_bits = 16
mtu = 1400
[segment.link.scheduler]
policy = "scfq"
[[segment.link.service]]
name = "best_effort"
scheme = "raw"
[[segment.link.service]]
name = "voice"
scheme = "oos_rlp"
max_retransmissions = 1
nack_interval_ms = 10
keepalive_interval_ms = 10
gap_wait_ms = 50
[[segment.link.rule]]
service = "voice"
dscp = 46

[[flow]]
name = "voice"
app = "cbr"
count = 1
from = 0
to = 2
rate_bps = 256
packet_bytes = 160
talk_s = 1
silence_s = 9
dscp = 46
start = { dist = "uniform", spread_s = 10 }

[[flow]]
name = "data"
app = "cbr"
count = 1
from = 0
to = 2
rate_bps = 256
packet_bytes = 160
talk_s = 1
silence_s = 9
start = { dist = "uniform", spread_s = 10 }
"#;

/// Bytes of the probe's error trace.
const TRACE_BYTES: usize = 8 << 20;

/// Flows per run in the event probes; each offers the hops about 3,000 packets a second.
const EVENT_FLOWS: [usize; 3] = [2, 2_000, 100_000];

/// What one probe took.
struct Timed {
    wall_s: f64,
    events: f64,
}

/// The probes' folder and options.
struct Lab {
    dir: PathBuf,
    scenario: PathBuf,
}

impl Lab {
    /// Runs the probe scenario with `sets` (`KEY=VALUE`) into a fresh folder; its wall time and
    /// events (timing.json).
    fn run(&self, what: &str, sets: &[String]) -> Result<Timed> {
        let out = self.dir.join("out");
        if out.exists() {
            std::fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
        }
        let opts = SimOptions {
            scenario: Some(self.scenario.clone()),
            resume: None,
            out: Some(out.clone()),
            jobs: Some(1),
            reps: None,
            sets: sets.to_vec(),
            json: false,
            estimate: false,
            force: true,
            pcap: false,
            format: super::Format::Csv,
            store: None,
            stats: StatsMode::Flows,
            no_plots: false,
            calibrate: false,
        };
        let start = Instant::now();
        super::run(&opts, &Silent).with_context(|| format!("calibration probe: {what}"))?;
        let wall_s = start.elapsed().as_secs_f64();
        let timing = out.join("timing.json");
        let text = std::fs::read_to_string(&timing)
            .with_context(|| format!("reading {}", timing.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)?;
        let events = v["events"].as_f64().context("timing.json has no events")?;
        Ok(Timed { wall_s, events })
    }
}

/// `--set`s for `flows` flows (half in each entry) of `rate_bps` each for `duration_s`.
fn flows(flows: usize, rate_bps: f64, duration_s: f64) -> Vec<String> {
    let half = (flows / 2).max(1);
    vec![
        format!("flow.0.count={half}"),
        format!("flow.1.count={half}"),
        format!("flow.0.rate_bps={rate_bps}"),
        format!("flow.1.rate_bps={rate_bps}"),
        format!("sim.duration_s={duration_s}"),
    ]
}

/// An error trace of about `bytes` bytes: frames delivered, lost, truncated and corrupted in a
/// fixed pattern (a mix like 003's traces).
fn trace_text(bytes: usize) -> String {
    const BLOCK: &str = "ok * 37\nbits 12 95 310 2047 5000\nloss\nok * 5\ntrunc 400\nok\nbits 7\n";
    let mut t = String::from("# mslink error trace (mslink sim --calibrate)\n");
    while t.len() < bytes {
        t.push_str(BLOCK);
    }
    t
}

/// Runs the probes (see the module contract) and writes the calibration to [`path`]; returns
/// the costs and where they went. `progress` hears one note per probe.
pub fn calibrate(progress: &dyn Progress) -> Result<(Costs, PathBuf)> {
    let file = path().with_context(|| {
        format!("no place for the calibration: set {CALIBRATION_ENV}, XDG_CACHE_HOME or HOME")
    })?;
    let dir = std::env::temp_dir().join(format!("mslink-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = probe(&dir, progress);
    let _ = std::fs::remove_dir_all(&dir);
    let costs = result?;
    if let Some(d) = file.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let text = serde_json::to_string_pretty(&costs)? + "\n";
    std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    Ok((costs, file))
}

/// The probes, in `dir`.
fn probe(dir: &Path, progress: &dyn Progress) -> Result<Costs> {
    let scenario = dir.join("probe.toml");
    std::fs::write(&scenario, PROBE).with_context(|| format!("writing {}", scenario.display()))?;
    let trace = dir.join("probe.trace");
    std::fs::write(&trace, trace_text(TRACE_BYTES))
        .with_context(|| format!("writing {}", trace.display()))?;
    let lab = Lab {
        dir: dir.to_path_buf(),
        scenario,
    };
    // Per flow: 50,000 flows for a millisecond (about one event each).
    let n = 50_000.0;
    let t = lab.run("flows", &flows(n as usize, 256.0, 0.001))?;
    let flow_s = t.wall_s / n;
    progress.note(&format!(
        "calibrate: {} flows, {:.0} events: {:.2} s, {:.2} µs per flow",
        n,
        t.events,
        t.wall_s,
        flow_s * 1e6
    ));
    // Per run: 500 runs of two flows for 0.1 s.
    let runs = 500.0;
    let mut sets = flows(2, 256.0, 0.1);
    sets.push(format!(
        "sweep.\"sim.seed\"=[{}]",
        (1..=runs as usize)
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(",")
    ));
    let t = lab.run("runs", &sets)?;
    let run_s = ((t.wall_s - runs * 2.0 * flow_s) / runs).max(1e-6);
    progress.note(&format!(
        "calibrate: {runs} runs: {:.2} s, {:.0} µs per run",
        t.wall_s,
        run_s * 1e6
    ));
    // Per event, at each flow count: about 3,000 packets a second for 107 s in all.
    let mut event_s = Vec::new();
    for n in EVENT_FLOWS {
        let rate = 40e6 / n as f64;
        let t = lab.run(&format!("events at {n} flows"), &flows(n, rate, 107.0))?;
        let own = run_s + n as f64 * flow_s;
        if t.events < 1e5 {
            bail!(
                "calibration probe at {n} flows made only {} events",
                t.events
            );
        }
        let per = ((t.wall_s - own) / t.events).max(1e-9);
        progress.note(&format!(
            "calibrate: {n} flows, {:.0} events: {:.2} s, {:.0} ns per event",
            t.events,
            t.wall_s,
            per * 1e9
        ));
        event_s.push([n as f64, per]);
    }
    // Per trace byte: two flows for a second over the trace.
    let mut sets = flows(2, 256.0, 1.0);
    sets.push("segment.1.error={ model = \"trace\", file = \"probe.trace\" }".to_string());
    let t = lab.run("trace", &sets)?;
    let bytes = std::fs::metadata(&trace)?.len() as f64;
    let costs_so_far = Costs {
        event_s: event_s.clone(),
        flow_s,
        run_s,
        trace_byte_s: 1.0,
        source: String::new(),
    };
    let trace_byte_s = ((t.wall_s - costs_so_far.run_time(2.0, t.events)) / bytes).max(1e-12);
    progress.note(&format!(
        "calibrate: {:.1} MB of trace: {:.2} s, {:.1} ns per byte",
        bytes / 1e6,
        t.wall_s,
        trace_byte_s * 1e9
    ));
    let costs = Costs {
        trace_byte_s,
        source: format!(
            "calibrated on {} ({}, mslink {})",
            crate::provenance::machine(),
            today(),
            env!("CARGO_PKG_VERSION")
        ),
        ..costs_so_far
    };
    costs.check()?;
    Ok(costs)
}

/// Today's date (UTC) as YYYY-MM-DD, for the calibration's source.
fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_trace_is_an_error_trace_of_the_size_asked() {
        let t = trace_text(1 << 16);
        assert!(t.len() >= 1 << 16 && t.len() < (1 << 16) + 100);
        let parsed = mslink_channel::trace::Trace::parse(&t).expect("an error trace");
        assert!(parsed.frames() > 1000);
    }

    #[test]
    fn the_probe_scenario_takes_every_set_the_probes_make() {
        let sc = mslink_sim::Scenario::parse(PROBE).unwrap();
        let mut sets = flows(100_000, 400.0, 107.0);
        sets.push("segment.1.error={ model = \"trace\", file = \"probe.trace\" }".to_string());
        let sets: Vec<(String, String)> = sets
            .iter()
            .map(|s| {
                let (k, v) = s.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect();
        let sc = sc.with_overrides(&sets).unwrap();
        sc.validate().unwrap();
        assert_eq!(sc.flows[0].count + sc.flows[1].count, 100_000);
    }
}
