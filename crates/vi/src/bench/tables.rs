//! The text tables `mslink bench` prints: ping-pong round trips and CPU (000 Figs. 5 and 7),
//! throughput and CPU (Figs. 4 and 6), the fitted round-trip lines and the per-call costs
//! (Tables 1 and 2).
//!
//! Contract: [`tables`] renders a [`Report`] as text; every figure is the mean over the runs,
//! printed `mean ±half-width` of its Student-t 95% interval when there are two runs or more.

use std::fmt::Write as _;

use super::{mode_name as mname, BenchBackend, Ci95, Report};

/// The report's tables as text, `reps` runs per point.
pub fn tables(rep: &Report, reps: u64) -> String {
    let mut out = String::new();
    carriers_line(&mut out, rep);
    pingpong_table(&mut out, rep, reps);
    floor_ratios(&mut out, rep);
    fit_lines(&mut out, rep);
    throughput_table(&mut out, rep, reps);
    call_cost_tables(&mut out, rep);
    out
}

/// What carried each backend, as the kernel reported its socket (every one was checked
/// against its name before its rows were kept).
fn carriers_line(out: &mut String, rep: &Report) {
    if rep.carriers.is_empty() {
        return;
    }
    let each: Vec<String> = rep
        .carriers
        .iter()
        .map(|c| format!("{} over {}", c.backend.name(), c.carrier.name()))
        .collect();
    writeln!(
        out,
        "Transports, as the kernel reports each connection's socket: {}\n",
        each.join(", ")
    )
    .unwrap();
}

/// The ping-pong table (000 Figs. 5 and 7): round-trip percentiles, CPU per side, runs on one
/// CPU and checked echoes per backend, mode and size.
fn pingpong_table(out: &mut String, rep: &Report, reps: u64) {
    writeln!(
        out,
        "Ping-pong round trip (µs), CPU per side (% of one core, µs per round trip) and runs \
         that ended with both ends on one CPU — 000 Figs. 5 and 7{}",
        if reps > 1 {
            format!("; mean ±95% CI over {reps} runs")
        } else {
            String::new()
        }
    )
    .unwrap();
    let w = if reps > 1 { 16 } else { 9 };
    writeln!(
            out,
        "{:<9} {:<6} {:>8} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>8} {:>8} {:>8} {:>11}",
        "back",
        "mode",
        "size",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "cli cpu%",
        "srv cpu%",
        "cli/rtt",
        "srv/rtt",
        "same cpu",
        "echoes ok"
    ).unwrap();
    for r in &rep.pingpong {
        let f = |k: &str, v: f64| pm(v, &r.ci95, k, 2);
        writeln!(
            out,
            "{:<9} {:<6} {:>8} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>8.2} {:>8.2} {:>8} {:>11}",
            name(r.backend),
            mname(r.mode),
            r.size,
            f("p50_us", r.p50_us),
            f("p90_us", r.p90_us),
            f("p99_us", r.p99_us),
            f("p999_us", r.p999_us),
            f("max_us", r.max_us),
            pm(r.client_cpu_pct, &r.ci95, "client_cpu_pct", 0),
            pm(r.server_cpu_pct, &r.ci95, "server_cpu_pct", 0),
            r.client_cpu_us_per_rtt,
            r.server_cpu_us_per_rtt,
            format!("{}/{}", r.same_cpu_runs, r.reps),
            if r.echoes_checked == 0 {
                "-".to_string()
            } else {
                format!("{}/{}", r.echoes_checked, r.echoes)
            },
        ).unwrap();
    }
}

/// Each polling row against the floor measured just before and after each of its runs
/// (`--floor`): p50, p99 and p99.9 ratios, and whether the two floors agreed.
fn floor_ratios(out: &mut String, rep: &Report) {
    for r in &rep.pingpong {
        let Some(f) = &r.floor else { continue };
        let steady = if f.unsteady_runs == 0 {
            format!("floors within {:.0}%", f.max_gap_pct)
        } else {
            format!(
                "PLACEMENT CHANGED: floors differed by up to {:.0}% in {} of {} runs \
                 (after {} repeats); these ratios are not to be trusted",
                f.max_gap_pct, f.unsteady_runs, r.reps, f.repeats
            )
        };
        writeln!(
            out,
            "  {} {} {} B against the floor just before and after each run ({} µs): p50 {}x, \
             p99 {}x, p99.9 {}x; {steady}",
            name(r.backend),
            mname(r.mode),
            r.size,
            pm(f.floor_p50_us, &r.ci95, "floor_p50_us", 2),
            pm(f.p50, &r.ci95, "floor_p50_ratio", 2),
            pm(f.p99, &r.ci95, "floor_p99_ratio", 2),
            pm(f.p999, &r.ci95, "floor_p999_ratio", 2),
        )
        .unwrap();
    }
}

/// The fitted round-trip lines (000 Fig. 7's "10 + 0.01·size"), with their fit quality.
fn fit_lines(out: &mut String, rep: &Report) {
    writeln!(
        out,
        "\nFitted round trip (p50), like 000's Linux line \"10 + 0.01·size\" (Fig. 7); R² of \
         the 1/y²-weighted fit and the largest residual:"
    )
    .unwrap();
    for f in &rep.rtt_fit {
        let quality = if f.r2.is_finite() {
            format!("R² {:.3}, max residual {:.0}%", f.r2, f.max_residual_pct)
        } else {
            "R² n/a (a line fits any two sizes)".to_string()
        };
        writeln!(
            out,
            "  {:<9} {:<6} RTT ≈ {} µs + {} µs/byte × size   {quality}",
            name(f.backend),
            mname(f.mode),
            pm(f.fixed_us, &f.ci95, "fixed_us", 3),
            pm(f.us_per_byte, &f.ci95, "us_per_byte", 6),
        )
        .unwrap();
    }
}

/// The throughput table (000 Figs. 4 and 6): Mbit/s and CPU per process per backend, mode,
/// path and size.
fn throughput_table(out: &mut String, rep: &Report, reps: u64) {
    writeln!(
        out,
        "\nThroughput and CPU per process (getrusage) — 000 Figs. 4 and 6"
    )
    .unwrap();
    let wt = if reps > 1 { 18 } else { 10 };
    writeln!(
        out,
        "{:<9} {:<6} {:<8} {:>8} {:>wt$} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>11} {:>9}",
        "back",
        "mode",
        "path",
        "size",
        "Mbit/s",
        "cli usr",
        "cli sys",
        "srv usr",
        "srv sys",
        "cli ns/B",
        "srv ns/B",
        "zc copied",
        "verified"
    )
    .unwrap();
    for r in &rep.throughput {
        writeln!(
            out,
            "{:<9} {:<6} {:<8} {:>8} {:>wt$} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>9.3} {:>9.3} {:>11} {:>9}",
            name(r.backend),
            mname(r.mode),
            r.path,
            r.size,
            pm(r.mbit_s, &r.ci95, "mbit_s", 1),
            r.client_user_s,
            r.client_sys_s,
            r.server_user_s,
            r.server_sys_s,
            r.client_cpu_ns_per_byte,
            r.server_cpu_ns_per_byte,
            if r.zc_sends > 0 {
                format!("{}/{}", r.zc_copied, r.zc_sends)
            } else {
                "-".to_string()
            },
            if r.verified_messages > 0 {
                r.verified_messages.to_string()
            } else {
                "-".to_string()
            }
        ).unwrap();
    }
}

/// The per-call cost tables (000 Tables 1 and 2) and the socket-over-VI ratio.
fn call_cost_tables(out: &mut String, rep: &Report) {
    for (api, title) in [
        ("socket", "Socket calls (µs, mean) — 000 Table 1"),
        ("vi", "VI calls (µs, mean) — 000 Table 2"),
    ] {
        writeln!(
            out,
            "\n{title}; CPU per call of the loops timed whole (user / system µs)"
        )
        .unwrap();
        for r in rep.callcost.iter().filter(|r| r.api == api) {
            let cpu = if r.cpu_usr_us.is_finite() {
                format!(
                    "{} / {}",
                    pm(r.cpu_usr_us, &r.ci95, "cpu_usr_us", 3),
                    pm(r.cpu_sys_us, &r.ci95, "cpu_sys_us", 3)
                )
            } else {
                String::new()
            };
            writeln!(
                out,
                "  {:<62} {:>18}   {cpu}",
                r.call,
                pm(r.mean_us, &r.ci95, "mean_us", 3)
            )
            .unwrap();
        }
    }
    writeln!(
        out,
        "\nsocket send()+recv() pair / VI post+wait total = {:.1}x",
        rep.socket_over_vi_ratio
    )
    .unwrap();
}

/// `mean ±half` with `prec` decimals, or the mean alone when there is no interval (one run).
fn pm(mean: f64, ci: &Ci95, key: &str, prec: usize) -> String {
    match ci.get(key) {
        Some(h) if h.is_finite() => format!("{mean:.prec$} ±{h:.prec$}"),
        _ => format!("{mean:.prec$}"),
    }
}

fn name(b: BenchBackend) -> &'static str {
    b.name()
}
