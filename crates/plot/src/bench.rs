//! The figures of the end-system benchmark (`mslink bench`, [`mslink_vi::bench::Report`]).
//!
//! Contract: [`write_plots`] draws, into `DIR`, `throughput` (Mbit/s vs message size per
//! backend, mode and path: VI against sockets as in 000 Fig. 4, and one VI against another as
//! Fig. 6 compares two platforms), `cpu_per_byte` (client and server CPU ns/byte vs size: the
//! CPU figure of Fig. 4), `rtt` (p50 and p99 round trip vs size; Fig. 5) and `rtt_fit` (p50
//! with the fitted line `a + b·size` per backend and mode, R² in the legend; Fig. 7), each as
//! PNG and SVG, all with sizes on a log2 axis; a figure without data is left out. Points are
//! means over the runs (`--reps`).

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
            "Throughput vs message size (000 Figs. 4 and 6)",
            "message size (bytes)",
            "throughput (Mbit/s)",
            tput,
            rising,
        )?);
        files.extend(line_chart(
            &dir.join("cpu_per_byte"),
            "CPU per byte moved, per process (getrusage user+system; 000 Fig. 4's CPU)",
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
            "Ping-pong round trip vs message size, p50 and p99 (000 Fig. 5)",
            "message size (bytes)",
            "round trip (µs)",
            rtt,
            log,
        )?);
    }
    let mut fit = Series::new();
    for f in rep.rtt_fit.iter().filter(|f| f.residuals.len() >= 2) {
        let key = format!("{} {}", f.backend.name(), mode_name(f.mode));
        for r in &f.residuals {
            push(&mut fit, format!("{key} p50"), r.size as f64, r.p50_us);
            let label = if f.r2.is_finite() {
                format!("{key} fit (R² {:.2})", f.r2)
            } else {
                format!("{key} fit")
            };
            push(&mut fit, label, r.size as f64, r.fit_us);
        }
    }
    if !fit.is_empty() {
        files.extend(line_chart(
            &dir.join("rtt_fit"),
            "Median round trip and the fitted line a + b·size (000 Fig. 7)",
            "message size (bytes)",
            "round trip (µs)",
            fit,
            log,
        )?);
    }
    Ok(files)
}
