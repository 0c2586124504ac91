//! The resource check of `mslink sim`, before any run: `mslink_sim::resources`'s estimate
//! against the memory available.
//!
//! Contract: [`check`] sizes the trace files the scenarios name (and samples how each error
//! trace packs, `mslink_io::error_trace_held`), reads the machine's costs (`calibrate.rs`: the
//! calibration `mslink sim --calibrate` wrote, else the built-in figures) and estimates the
//! runs (flows, events, memory at the peak, wall time), and then
//! * with `--estimate`, returns the estimate and the memory available, for standard output, and
//!   says to stop; with `--json` too, as one JSON document ([`estimate_json`]);
//! * refuses runs whose memory estimate exceeds `MemAvailable` of /proc/meminfo less a
//!   headroom ([`headroom`]: a tenth of the machine's memory, at least 1 GiB), with an error
//!   that carries the estimate and what to change, unless `--force`: the estimate is good to
//!   about 2x and other programs come and go, so a run that needs all but a few hundred MB of
//!   what is free at the moment is refused whatever that moment is;
//! * warns (the caller's [`Progress::warn`], shown even with `--quiet`) when the runs would
//!   take over an hour.
//!
//! A run that fits and is short says nothing here, so ordinary output is unchanged. Without
//! /proc/meminfo (not Linux) memory is not checked. Memory limits of a cgroup are not read.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use mslink_sim::resources::{bytes, duration, estimate, Estimate, TraceFile};
use mslink_sim::Scenario;

use super::SimOptions;
use crate::progress::Progress;
use crate::TraceFiles;

/// Estimated wall time beyond which `mslink sim` warns.
const WARN_AFTER_S: f64 = 3600.0;

/// What to do after the check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run.
    Run,
    /// Stop here, successfully (`--estimate`), printing this.
    Stop(String),
}

/// Estimates the runs of `scenarios` (one per sweep point), `threads` at once; see the module
/// contract.
pub(crate) fn check(
    args: &SimOptions,
    scenarios: &[Scenario],
    threads: usize,
    traces: &TraceFiles,
    progress: &dyn Progress,
) -> Result<Verdict> {
    let mut sizes = BTreeMap::new();
    for sc in scenarios {
        for f in sc.trace_files() {
            if sizes.contains_key(&f) {
                continue;
            }
            // A file that cannot be read counts as empty: its run reports it.
            let path = traces.path(&f);
            if let Ok(m) = std::fs::metadata(&path) {
                let held = mslink_io::error_trace_held(&path).unwrap_or(m.len());
                sizes.insert(
                    f,
                    TraceFile {
                        bytes: m.len(),
                        held,
                    },
                );
            }
        }
    }
    let costs = super::calibrate::costs()?;
    let est = estimate(scenarios, threads, &sizes, &costs);
    let headroom = headroom(mem_total());
    let available = mem_available().map(|a| a.saturating_sub(headroom));
    let name = args
        .scenario
        .as_deref()
        .unwrap_or(std::path::Path::new(""))
        .display();
    let mut printed = String::new();
    if args.estimate && args.json {
        printed = estimate_json(&name.to_string(), &est, available)?;
    } else if args.estimate {
        printed = format!("{name}: {est}\n");
        printed += &match available {
            Some(a) if est.fits(a) => format!("  available {} (MemAvailable less {}): fits", bytes(a), bytes(headroom)),
            Some(a) => format!(
                "  available {} (MemAvailable less {}): does not fit; mslink sim refuses to run it without --force",
                bytes(a),
                bytes(headroom)
            ),
            None => "  available unknown (no /proc/meminfo): memory is not checked".to_string(),
        };
    }
    if est.wall_s > WARN_AFTER_S {
        progress.warn(&format!(
            "warning: scenario {name}: the runs will take about {} ({:.3e} events; costs {}){}",
            duration(est.wall_s),
            est.events,
            est.costs,
            if args.estimate {
                ""
            } else {
                "; `mslink sim --estimate` shows the estimate"
            }
        ));
    }
    if args.estimate {
        return Ok(Verdict::Stop(printed));
    }
    if let Some(a) = available {
        if !est.fits(a) && !args.force {
            bail!(
                "scenario {name}: the runs need about {} of memory and {} is available \
                 (MemAvailable less a headroom of {}). Estimate: {est}\nTo need less: {}; or give --force to run anyway",
                bytes(est.memory.total()),
                bytes(a),
                bytes(headroom),
                est.advice()
            );
        }
    }
    Ok(Verdict::Run)
}

/// The estimate as printed by `--estimate --json`: the fields of
/// [`mslink_sim::resources::Estimate`] (memory in bytes by what holds it, `wall_s` in seconds)
/// and `scenario`, `memory_bytes` (the total at the peak), `available_bytes` (MemAvailable
/// less the headroom, `null` when unknown) and `fits` (`null` when unknown).
fn estimate_json(scenario: &str, est: &Estimate, available: Option<u64>) -> Result<String> {
    let mut v = serde_json::to_value(est)?;
    let o = v
        .as_object_mut()
        .expect("an Estimate serializes as an object");
    o.insert("scenario".into(), scenario.into());
    o.insert("memory_bytes".into(), est.memory.total().into());
    o.insert("available_bytes".into(), available.into());
    o.insert("fits".into(), available.map(|a| est.fits(a)).into());
    Ok(serde_json::to_string_pretty(&v)?)
}

/// `MemAvailable` of /proc/meminfo in bytes, if it can be read.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_field(&text, "MemAvailable")
}

/// `MemTotal` of /proc/meminfo in bytes, if it can be read.
fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_field(&text, "MemTotal")
}

/// The memory a run may not count on (see the module contract): a tenth of the machine's,
/// at least 1 GiB (1 GiB when the total is unknown).
fn headroom(total: Option<u64>) -> u64 {
    (total.unwrap_or(0) / 10).max(1 << 30)
}

fn meminfo_field(meminfo: &str, name: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_available() {
        let m =
            "MemTotal:       24576000 kB\nMemFree:        1000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(meminfo_field(m, "MemAvailable"), Some(20_000_000 * 1024));
        assert_eq!(meminfo_field(m, "MemTotal"), Some(24_576_000 * 1024));
        assert_eq!(meminfo_field("MemTotal: 5 kB\n", "MemAvailable"), None);
        assert_eq!(meminfo_field("MemAvailable: lots\n", "MemAvailable"), None);
    }

    #[test]
    fn the_headroom_is_a_tenth_and_at_least_a_gib() {
        assert_eq!(headroom(Some(24 << 30)), (24 << 30) / 10);
        assert_eq!(headroom(Some(4 << 30)), 1 << 30);
        assert_eq!(headroom(None), 1 << 30);
    }
}
