//! The files `mslink bench --out DIR` and `--log FILE` write.
//!
//! Contract: the same [`Report`] feeds every file. Every figure is the mean over the runs; CSV
//! files give the half-width of its Student-t 95% interval in a `<field>_ci95` column (empty
//! for one run). pingpong.csv (000 Figs. 5 and 7), throughput.csv (000 Figs. 4 and 6),
//! callcost.csv (000 Tables 1 and 2: `api` socket / vi), rtt_fit.csv (Fig. 7's line per
//! backend and mode with R² and each size's residual) and rtt_hist.csv (each ping-pong
//! point's HDR percentile distribution over all its runs), with a header row each. The log
//! holds every recorded round trip. Errors name the file.

use std::io::{self, Write};
use std::path::Path;

use super::{mode_name as mname, BenchBackend, Ci95, Report};

/// An I/O error that names the file (and the option that gave it).
fn naming(what: &str, file: &Path) -> impl FnOnce(io::Error) -> io::Error {
    let what = format!("{what} {}", file.display());
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Writes `text` to `dir/file`.
fn write(dir: &Path, file: &str, text: &str) -> io::Result<()> {
    let p = dir.join(file);
    std::fs::write(&p, text).map_err(naming("writing", &p))
}

fn name(b: BenchBackend) -> &'static str {
    b.name()
}

/// A CSV cell for an interval half-width: empty when there is none.
fn ci_cell(ci: &Ci95, key: &str) -> String {
    match ci.get(key) {
        Some(h) if h.is_finite() => h.to_string(),
        _ => String::new(),
    }
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

/// Writes the CSV files of `rep` into `dir` (created if missing).
pub fn write_csvs(rep: &Report, dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir).map_err(naming("creating", dir))?;
    write(dir, "pingpong.csv", &pingpong_csv(rep))?;
    write(dir, "throughput.csv", &throughput_csv(rep))?;
    write(dir, "callcost.csv", &callcost_csv(rep))?;
    write(dir, "rtt_fit.csv", &rtt_fit_csv(rep))?;
    write(dir, "rtt_hist.csv", &rtt_hist_csv(rep))?;
    Ok(())
}

/// pingpong.csv (000 Figs. 5 and 7): one row per ping-pong point.
fn pingpong_csv(rep: &Report) -> String {
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
    s
}

/// throughput.csv (000 Figs. 4 and 6): one row per throughput point.
fn throughput_csv(rep: &Report) -> String {
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
    s
}

/// callcost.csv (000 Tables 1 and 2): one row per call, `table` 1 for sockets, 2 for VI.
fn callcost_csv(rep: &Report) -> String {
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
    s
}

/// rtt_fit.csv (000 Fig. 7): each backend and mode's line, one row per size with its residual.
fn rtt_fit_csv(rep: &Report) -> String {
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
    s
}

/// rtt_hist.csv: each ping-pong point's round-trip distribution over all its runs.
fn rtt_hist_csv(rep: &Report) -> String {
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
    s
}

/// Writes every recorded round trip of `rep` to `file` as CSV.
pub fn write_log(rep: &Report, file: &Path) -> io::Result<()> {
    let f = std::fs::File::create(file).map_err(naming("--log: creating", file))?;
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
    w.flush().map_err(naming("--log: writing", file))?;
    Ok(())
}
