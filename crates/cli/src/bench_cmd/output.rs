//! Output of `mslink bench`: text tables, CSV files, JSON.
//!
//! Contract: the same `Report` feeds every format; CSV files are pingpong.csv,
//! throughput.csv and callcost.csv with a header row each. Beside them (unless `--no-plots`),
//! the PNG and SVG figures of `mslink_plot::bench`: `throughput` (000 Fig. 4), `cpu_per_byte`
//! (000 Fig. 6) and `rtt` (000 Figs. 5 and 7).

use std::path::PathBuf;

use anyhow::{Context, Result};

use mslink_vi::bench::{mode_name as mname, BenchBackend, Report};

use super::ClientOpts;

pub(super) fn report(rep: &Report, o: &ClientOpts) -> Result<()> {
    if let Some(dir) = &o.out {
        write_csvs(rep, dir)?;
        if !o.no_plots {
            mslink_plot::bench::write_plots(rep, dir)?;
        }
    }
    if o.json {
        println!("{}", serde_json::to_string_pretty(rep)?);
        return Ok(());
    }
    println!("Ping-pong round trip (µs) — 000 Figs. 5 and 7");
    println!(
        "{:<9} {:<6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "back", "mode", "size", "p50", "p90", "p99", "p99.9", "max"
    );
    for r in &rep.pingpong {
        println!(
            "{:<9} {:<6} {:>8} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            name(r.backend),
            mname(r.mode),
            r.size,
            r.p50_us,
            r.p90_us,
            r.p99_us,
            r.p999_us,
            r.max_us
        );
    }
    println!("\nFitted round trip (p50), like 000's Linux line \"10 + 0.01·size\":");
    for f in &rep.rtt_fit {
        println!(
            "  {:<9} {:<6} RTT ≈ {:.3} µs + {:.6} µs/byte × size",
            name(f.backend),
            mname(f.mode),
            f.fixed_us,
            f.us_per_byte
        );
    }
    println!("\nThroughput and CPU per process (getrusage) — 000 Figs. 4 and 6");
    println!(
        "{:<9} {:<6} {:<8} {:>8} {:>10} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>11}",
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
        "zc copied"
    );
    for r in &rep.throughput {
        println!(
            "{:<9} {:<6} {:<8} {:>8} {:>10.1} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>9.3} {:>9.3} {:>11}",
            name(r.backend),
            mname(r.mode),
            r.path,
            r.size,
            r.mbit_s,
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
            }
        );
    }
    println!("\nPer-call cost (µs, mean) — 000 Tables 1 and 2");
    for r in &rep.callcost {
        println!("  {:<7} {:<62} {:>10.3}", r.api, r.call, r.mean_us);
    }
    println!(
        "\nsocket send()+recv() pair / VI post+wait total = {:.1}x",
        rep.socket_over_vi_ratio
    );
    Ok(())
}

fn name(b: BenchBackend) -> &'static str {
    b.name()
}

fn write_csvs(rep: &Report, dir: &PathBuf) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let mut s =
        String::from("backend,mode,path,size,iters,p50_us,p90_us,p99_us,p999_us,max_us,mean_us\n");
    for r in &rep.pingpong {
        s += &format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            name(r.backend),
            mname(r.mode),
            r.path,
            r.size,
            r.iters,
            r.p50_us,
            r.p90_us,
            r.p99_us,
            r.p999_us,
            r.max_us,
            r.mean_us
        );
    }
    std::fs::write(dir.join("pingpong.csv"), s)?;
    let mut s = String::from("backend,mode,path,size,messages,seconds,mbit_s,client_user_s,client_sys_s,server_user_s,server_sys_s,cpu_s_per_gb,client_cpu_ns_per_byte,server_cpu_ns_per_byte,zc_sends,zc_copied\n");
    for r in &rep.throughput {
        s += &format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            name(r.backend),
            mname(r.mode),
            r.path,
            r.size,
            r.messages,
            r.seconds,
            r.mbit_s,
            r.client_user_s,
            r.client_sys_s,
            r.server_user_s,
            r.server_sys_s,
            r.cpu_s_per_gb,
            r.client_cpu_ns_per_byte,
            r.server_cpu_ns_per_byte,
            r.zc_sends,
            r.zc_copied
        );
    }
    std::fs::write(dir.join("throughput.csv"), s)?;
    let mut s = String::from("api,call,mean_us\n");
    for r in &rep.callcost {
        s += &format!("{},\"{}\",{}\n", r.api, r.call, r.mean_us);
    }
    std::fs::write(dir.join("callcost.csv"), s)?;
    Ok(())
}
