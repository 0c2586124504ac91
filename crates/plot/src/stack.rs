//! The figures of the protocol-stack benchmark (`mslink stack-bench`, rows of
//! [`mslink_stack::bench`]).
//!
//! Contract: [`write_plots`] draws, beside the CSV file `STEM.csv`, `STEM_rtt_memory` (and
//! `STEM_rtt_veth` when there are veth rows): round trip vs user data size per architecture and
//! layering, checksum off (002 Tables 1-3); `STEM_fig4` (in-memory rows) and `STEM_fig4_veth`
//! (veth rows, real receive threads): p50 round trip of the prioritised UDP-DAA flow (and its
//! equal-priority control over the veth) and of plain UDP vs the number of background flows, at
//! both background sizes (002 Fig. 4); each as PNG and SVG. A figure without rows is left out.

use std::path::{Path, PathBuf};

use mslink_stack::bench::Row;

use crate::chart::{line_chart, LegendAt, Scale};
use crate::{push, PlotError, Series};

/// The figures of `rows`, named after the CSV file `csv` and written beside it.
pub fn write_plots(rows: &[Row], csv: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let stem = csv
        .file_stem()
        .map_or("stack".into(), |s| s.to_string_lossy().into_owned());
    let at = |name: &str| csv.with_file_name(format!("{stem}_{name}"));
    let mut files = Vec::new();
    for device in ["memory", "veth"] {
        let mut series = Series::new();
        for r in rows {
            if r.device == device && !r.checksum && !r.architecture.starts_with("fig4") {
                let label = format!("{} {}", r.architecture, r.stack);
                push(&mut series, label, r.size as f64, r.rtt_us);
            }
        }
        if series.is_empty() {
            continue;
        }
        let wire = if device == "memory" {
            "in-memory wire"
        } else {
            "AF_PACKET over veth"
        };
        files.extend(line_chart(
            &at(&format!("rtt_{device}")),
            &format!("Round trip vs user data size, {wire}, checksum off (002 Tables 1-3)"),
            "user data (bytes)",
            "mean round trip (µs)",
            series,
            // The y axis starts at 0, below every round trip: room at the bottom.
            Scale {
                legend: LegendAt::LowerRight,
                ..Scale::default()
            },
        )?);
    }
    for (device, name, how) in [
        ("memory", "fig4", "in-memory wire, one server loop"),
        (
            "veth",
            "fig4_veth",
            "veth, receive threads per priority class",
        ),
    ] {
        let mut fig4 = Series::new();
        for r in rows.iter().filter(|r| r.device == device) {
            if let Some(bg) = (r.architecture.strip_prefix("fig4-bg")).and_then(|b| b.parse().ok())
            {
                let label = format!("{} ({} B background)", r.stack, r.size);
                push(&mut fig4, label, bg, r.rtt_us);
            }
        }
        if fig4.is_empty() {
            continue;
        }
        files.extend(line_chart(
            &at(name),
            &format!(
                "1-byte flow round trip, prioritised UDP-DAA vs plain UDP, {how} (002 Fig. 4)"
            ),
            "background ping-pong flows",
            "p50 round trip (µs)",
            fig4,
            // Plain UDP climbs to the upper right; the prioritised flow stays low.
            Scale {
                legend: LegendAt::UpperLeft,
                ..Scale::default()
            },
        )?);
    }
    Ok(files)
}
