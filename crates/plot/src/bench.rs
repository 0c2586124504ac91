//! The figures of the end-system benchmark (`mslink bench`, [`mslink_vi::bench::Report`]).
//!
//! Contract: [`write_plots`] draws, into `DIR`, `throughput` (Mbit/s vs message size per
//! backend, mode and path; 000 Fig. 4), `cpu_per_byte` (client and server CPU ns/byte vs size;
//! 000 Fig. 6) and `rtt` (p50 and p99 round trip vs size; 000 Figs. 5 and 7), each as PNG and
//! SVG, all with sizes on a log2 axis; a figure without data is left out.

use std::path::{Path, PathBuf};

use mslink_vi::bench::{mode_name, Report};

use crate::chart::{line_chart, LegendAt, Scale};
use crate::{push, PlotError, Series};

/// The three figures of the report, next to the CSVs; returns the files written.
pub fn write_plots(rep: &Report, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let log = Scale {
        log2_x: true,
        log10_y: true,
        legend: LegendAt::UpperRight,
    };
    // Throughput rises with size: its upper left is free.
    let rising = Scale {
        legend: LegendAt::UpperLeft,
        ..log
    };
    let mut files = Vec::new();
    let (mut tput, mut cpu) = (Series::new(), Series::new());
    for r in &rep.throughput {
        let key = format!("{} {} {}", r.backend.name(), mode_name(r.mode), r.path);
        let x = r.size as f64;
        push(&mut tput, key.clone(), x, r.mbit_s);
        push(
            &mut cpu,
            format!("{key} client"),
            x,
            r.client_cpu_ns_per_byte,
        );
        push(
            &mut cpu,
            format!("{key} server"),
            x,
            r.server_cpu_ns_per_byte,
        );
    }
    if !tput.is_empty() {
        files.extend(line_chart(
            &dir.join("throughput"),
            "Throughput vs message size (000 Fig. 4)",
            "message size (bytes)",
            "throughput (Mbit/s)",
            tput,
            rising,
        )?);
        files.extend(line_chart(
            &dir.join("cpu_per_byte"),
            "CPU per byte moved, per process (getrusage user+system; 000 Fig. 6)",
            "message size (bytes)",
            "CPU (ns/byte)",
            cpu,
            log,
        )?);
    }
    let mut rtt = Series::new();
    for r in &rep.pingpong {
        let key = format!("{} {} {}", r.backend.name(), mode_name(r.mode), r.path);
        let x = r.size as f64;
        push(&mut rtt, format!("{key} p50"), x, r.p50_us);
        push(&mut rtt, format!("{key} p99"), x, r.p99_us);
    }
    if !rtt.is_empty() {
        files.extend(line_chart(
            &dir.join("rtt"),
            "Ping-pong round trip vs message size, p50 and p99 (000 Figs. 5 and 7)",
            "message size (bytes)",
            "round trip (µs)",
            rtt,
            log,
        )?);
    }
    Ok(files)
}
