//! Output of `mslink bench`: text tables, CSV files, JSON, the round-trip log.
//!
//! Contract: the same `Report` feeds every format. Every figure is the mean over `--reps` runs;
//! tables print `mean ±half-width` of its Student-t 95% interval when there are two runs or
//! more, CSV files give it in a `<field>_ci95` column (empty for one run), JSON in each row's
//! `ci95` object (`null` for one run). CSV files: pingpong.csv (000 Figs. 5 and 7),
//! throughput.csv (000 Figs. 4 and 6), callcost.csv (000 Tables 1 and 2: `api` socket / vi),
//! rtt_fit.csv (Fig. 7's line per backend and mode with R² and each size's residual) and
//! rtt_hist.csv (each ping-pong point's HDR percentile distribution over all its runs), with a
//! header row each. Beside them (unless `--no-plots`), the PNG and SVG figures of
//! `mslink_plot::bench`. `--log FILE` gets every recorded round trip.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use mslink_vi::bench::{mode_name as mname, BenchBackend, Ci95, Report};

use super::ClientOpts;

pub(super) fn report(rep: &Report, o: &ClientOpts) -> Result<()> {
    if let Some(dir) = &o.out {
        write_csvs(rep, dir)?;
        if !o.no_plots {
            mslink_plot::bench::write_plots(rep, dir)?;
        }
    }
    if let Some(f) = &o.log {
        write_log(rep, f)?;
    }
    if o.json {
        println!("{}", serde_json::to_string_pretty(rep)?);
        return Ok(());
    }
    let reps = o.reps;
    println!(
        "Ping-pong round trip (µs), CPU per side (% of one core, µs per round trip) and runs \
         that ended with both ends on one CPU — 000 Figs. 5 and 7{}",
        if reps > 1 {
            format!("; mean ±95% CI over {reps} runs")
        } else {
            String::new()
        }
    );
    let w = if reps > 1 { 16 } else { 9 };
    println!(
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
    );
    for r in &rep.pingpong {
        let f = |k: &str, v: f64| pm(v, &r.ci95, k, 2);
        println!(
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
        );
    }
    // Each polling row against the floor of its size, when the floor ran (`--floor`).
    for f in rep
        .pingpong
        .iter()
        .filter(|r| r.backend == BenchBackend::Floor)
    {
        for r in rep
            .pingpong
            .iter()
            .filter(|r| r.backend != BenchBackend::Floor && r.mode == f.mode && r.size == f.size)
        {
            println!(
                "  {} {} {} B against the floor (same run, same CPUs): p50 {:.2}x, p90 {:.2}x",
                name(r.backend),
                mname(r.mode),
                r.size,
                r.p50_us / f.p50_us,
                r.p90_us / f.p90_us,
            );
        }
    }
    println!(
        "\nFitted round trip (p50), like 000's Linux line \"10 + 0.01·size\" (Fig. 7); R² of \
         the 1/y²-weighted fit and the largest residual:"
    );
    for f in &rep.rtt_fit {
        let quality = if f.r2.is_finite() {
            format!("R² {:.3}, max residual {:.0}%", f.r2, f.max_residual_pct)
        } else {
            "R² n/a (a line fits any two sizes)".to_string()
        };
        println!(
            "  {:<9} {:<6} RTT ≈ {} µs + {} µs/byte × size   {quality}",
            name(f.backend),
            mname(f.mode),
            pm(f.fixed_us, &f.ci95, "fixed_us", 3),
            pm(f.us_per_byte, &f.ci95, "us_per_byte", 6),
        );
    }
    println!("\nThroughput and CPU per process (getrusage) — 000 Figs. 4 and 6");
    let wt = if reps > 1 { 18 } else { 10 };
    println!(
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
    );
    for r in &rep.throughput {
        println!(
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
        );
    }
    for (api, title) in [
        ("socket", "Socket calls (µs, mean) — 000 Table 1"),
        ("vi", "VI calls (µs, mean) — 000 Table 2"),
    ] {
        println!("\n{title}; CPU per call of the loops timed whole (user / system µs)");
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
            println!(
                "  {:<62} {:>18}   {cpu}",
                r.call,
                pm(r.mean_us, &r.ci95, "mean_us", 3)
            );
        }
    }
    println!(
        "\nsocket send()+recv() pair / VI post+wait total = {:.1}x",
        rep.socket_over_vi_ratio
    );
    Ok(())
}

/// `mean ±half` with `prec` decimals, or the mean alone when there is no interval (one run).
fn pm(mean: f64, ci: &Ci95, key: &str, prec: usize) -> String {
    match ci.get(key) {
        Some(h) if h.is_finite() => format!("{mean:.prec$} ±{h:.prec$}"),
        _ => format!("{mean:.prec$}"),
    }
}

/// A CSV cell for an interval half-width: empty when there is none.
fn ci_cell(ci: &Ci95, key: &str) -> String {
    match ci.get(key) {
        Some(h) if h.is_finite() => h.to_string(),
        _ => String::new(),
    }
}

fn name(b: BenchBackend) -> &'static str {
    b.name()
}

/// `fields` values then their `_ci95` columns, comma-separated.
fn with_ci(values: &[(&str, f64)], ci: &Ci95) -> String {
    let mut cells: Vec<String> = values.iter().map(|(_, v)| v.to_string()).collect();
    cells.extend(values.iter().map(|(k, _)| ci_cell(ci, k)));
    cells.join(",")
}

fn header_with_ci(keys: &[&str]) -> String {
    let mut cells: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    cells.extend(keys.iter().map(|k| format!("{k}_ci95")));
    cells.join(",")
}

const PING_KEYS: [&str; 10] = [
    "p50_us",
    "p90_us",
    "p99_us",
    "p999_us",
    "max_us",
    "mean_us",
    "client_cpu_pct",
    "server_cpu_pct",
    "client_cpu_us_per_rtt",
    "server_cpu_us_per_rtt",
];

const TPUT_KEYS: [&str; 11] = [
    "seconds",
    "mbit_s",
    "client_user_s",
    "client_sys_s",
    "server_user_s",
    "server_sys_s",
    "cpu_s_per_gb",
    "client_cpu_ns_per_byte",
    "server_cpu_ns_per_byte",
    "client_cpu_pct",
    "server_cpu_pct",
];

fn write_csvs(rep: &Report, dir: &PathBuf) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let mut s = format!(
        "backend,mode,path,size,iters,reps,same_cpu_runs,echoes,echoes_checked,{}\n",
        header_with_ci(&PING_KEYS)
    );
    for r in &rep.pingpong {
        let v = [
            r.p50_us,
            r.p90_us,
            r.p99_us,
            r.p999_us,
            r.max_us,
            r.mean_us,
            r.client_cpu_pct,
            r.server_cpu_pct,
            r.client_cpu_us_per_rtt,
            r.server_cpu_us_per_rtt,
        ];
        let pairs: Vec<(&str, f64)> = PING_KEYS.iter().copied().zip(v).collect();
        s += &format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            name(r.backend),
            mname(r.mode),
            r.path,
            r.size,
            r.iters,
            r.reps,
            r.same_cpu_runs,
            r.echoes,
            r.echoes_checked,
            with_ci(&pairs, &r.ci95)
        );
    }
    std::fs::write(dir.join("pingpong.csv"), s)?;
    let keys = &TPUT_KEYS;
    let mut s = format!(
        "backend,mode,path,size,messages,reps,zc_sends,zc_copied,verified_messages,{}\n",
        header_with_ci(keys)
    );
    for r in &rep.throughput {
        let v = [
            r.seconds,
            r.mbit_s,
            r.client_user_s,
            r.client_sys_s,
            r.server_user_s,
            r.server_sys_s,
            r.cpu_s_per_gb,
            r.client_cpu_ns_per_byte,
            r.server_cpu_ns_per_byte,
            r.client_cpu_pct,
            r.server_cpu_pct,
        ];
        let pairs: Vec<(&str, f64)> = keys.iter().copied().zip(v).collect();
        s += &format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            name(r.backend),
            mname(r.mode),
            r.path,
            r.size,
            r.messages,
            r.reps,
            r.zc_sends,
            r.zc_copied,
            r.verified_messages,
            with_ci(&pairs, &r.ci95)
        );
    }
    std::fs::write(dir.join("throughput.csv"), s)?;
    let mut s = String::from(
        "table,api,call,reps,mean_us,mean_us_ci95,cpu_usr_us,cpu_usr_us_ci95,cpu_sys_us,cpu_sys_us_ci95\n",
    );
    for r in &rep.callcost {
        let table = if r.api == "socket" { 1 } else { 2 };
        // Calls timed one by one have no CPU figure: empty cells.
        let cell = |x: f64| {
            if x.is_finite() {
                x.to_string()
            } else {
                String::new()
            }
        };
        s += &format!(
            "{table},{},\"{}\",{},{},{},{},{},{},{}\n",
            r.api,
            r.call,
            r.reps,
            r.mean_us,
            ci_cell(&r.ci95, "mean_us"),
            cell(r.cpu_usr_us),
            ci_cell(&r.ci95, "cpu_usr_us"),
            cell(r.cpu_sys_us),
            ci_cell(&r.ci95, "cpu_sys_us"),
        );
    }
    std::fs::write(dir.join("callcost.csv"), s)?;
    let mut s = String::from(
        "backend,mode,fixed_us,fixed_us_ci95,us_per_byte,us_per_byte_ci95,r2,size,p50_us,fit_us,residual_pct\n",
    );
    for f in &rep.rtt_fit {
        for x in &f.residuals {
            s += &format!(
                "{},{},{},{},{},{},{},{},{},{},{}\n",
                name(f.backend),
                mname(f.mode),
                f.fixed_us,
                ci_cell(&f.ci95, "fixed_us"),
                f.us_per_byte,
                ci_cell(&f.ci95, "us_per_byte"),
                if f.r2.is_finite() {
                    f.r2.to_string()
                } else {
                    String::new()
                },
                x.size,
                x.p50_us,
                x.fit_us,
                x.pct
            );
        }
    }
    std::fs::write(dir.join("rtt_fit.csv"), s)?;
    // HdrHistogram's percentile distribution (5 steps per halving of the distance to 100%).
    let mut s = String::from("backend,mode,path,size,percentile,rtt_us,count\n");
    for r in &rep.pingpong {
        let Some(h) = &r.hist else { continue };
        if h.is_empty() {
            continue;
        }
        for v in h.iter_quantiles(5) {
            s += &format!(
                "{},{},{},{},{},{},{}\n",
                name(r.backend),
                mname(r.mode),
                r.path,
                r.size,
                v.quantile_iterated_to() * 100.0,
                h.highest_equivalent(v.value_iterated_to()) as f64 / 1e3,
                v.count_since_last_iteration()
            );
        }
    }
    std::fs::write(dir.join("rtt_hist.csv"), s)?;
    Ok(())
}

/// Every recorded round trip, one line each.
fn write_log(rep: &Report, file: &Path) -> Result<()> {
    let f =
        std::fs::File::create(file).with_context(|| format!("--log: create {}", file.display()))?;
    let mut w = std::io::BufWriter::new(f);
    writeln!(w, "backend,mode,path,size,rep,seq,rtt_ns")?;
    for r in &rep.pingpong {
        for (k, run) in r.runs.iter().enumerate() {
            for (i, ns) in run.iter().enumerate() {
                writeln!(
                    w,
                    "{},{},{},{},{},{},{}",
                    name(r.backend),
                    mname(r.mode),
                    r.path,
                    r.size,
                    k + 1,
                    i,
                    ns
                )?;
            }
        }
    }
    w.flush()
        .with_context(|| format!("--log: write {}", file.display()))?;
    Ok(())
}
