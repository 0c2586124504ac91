//! What `mslink emulate` reports when a run ends: the summary as JSON and on standard error.
//!
//! Contract. [`summary_json`] is the one JSON document of a run (mode, both sides' addresses,
//! devices and exit statuses, wall time, whether the hop drained and balanced, the per
//! direction and per end counters, device and offload counters, the configuration with its
//! seed, the link logs' totals). [`write_json`] prints it on standard output (`--json`) or
//! writes it to a file and to `DIR/summary.json` (`--out`). [`print_summary`] writes the
//! closing lines on standard error (counters and seed, offloads, an undrained hop) unless the
//! run is quiet or direct. [`check_balance`] fails when the emulated hop's packet accounting
//! does not add up, which is a bug.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::{counters_line, EmulateOptions};
use crate::linklog::LogTotals;
use crate::runtime::DeviceCounts;
use crate::session::SessionEnd;
use crate::EmuConfig;

/// The totals of a link log, as the summary's `link_logs` hold them.
fn log_json(t: LogTotals) -> serde_json::Value {
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

/// The summary of a run as one JSON document.
pub fn summary_json(args: &EmulateOptions, cfg: &EmuConfig, end: &SessionEnd) -> serde_json::Value {
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
    serde_json::json!({
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
        "dns_relay": end.dns,
    })
}

/// Prints the summary on standard output (`--json` without a file), or writes it to the
/// `--json` file, and to `summary.json` in the `--out` folder.
pub fn write_json(args: &EmulateOptions, json: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(json)? + "\n";
    if let Some(path) = &args.json {
        if path.as_os_str() == "-" {
            print!("{text}");
        } else {
            write(path, &text)?;
        }
    }
    if let Some(dir) = &args.out {
        write(&dir.join("summary.json"), &text)?;
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The closing lines on standard error: counters and seed, offloads, an undrained hop.
pub fn print_summary(args: &EmulateOptions, cfg: &EmuConfig, end: &SessionEnd) {
    if args.quiet || args.direct {
        return;
    }
    eprintln!(
        "mslink emulate: {} | seed {}",
        counters_line(&end.summary),
        cfg.seed.unwrap_or(1)
    );
    if end.offload_enabled {
        let offload = &end.offload;
        let o = |f: fn(&DeviceCounts) -> u64| f(&offload[0]) + f(&offload[1]);
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

/// Fails when the emulated hop's packets do not add up (never checked with `--direct`).
pub fn check_balance(args: &EmulateOptions, end: &SessionEnd) -> Result<()> {
    if !args.direct && !end.balanced() {
        bail!(
            "packet accounting does not add up (a bug): {}",
            counters_line(&end.summary)
        );
    }
    Ok(())
}
