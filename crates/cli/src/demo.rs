//! `mslink demo`: the engine at work before the simulator exists.
//!
//! Contract: pushes 004 §III.D's continuous-media stream (CBR in exponential talk spurts of
//! 1 s and silences of 1.35 s) through an in-memory WLAN-like hop (004 Table I: 5 Mbit/s, 3 ms,
//! 1000-byte frames) with independent frame loss in both directions, once per recovery
//! scheme, and prints residual loss, delay (mean and mean + standard deviation, 004's metric)
//! and overhead; then runs a greedy bulk flow and the CBR stream together on one multi-service
//! link with an SCFQ scheduler. Deterministic for a given seed. The runs are
//! `mslink_sim::demo`'s; this verb checks the options and prints.

use anyhow::Result;
use mslink_sim::demo::{self, isolation, run_multi, run_scheme, DemoConfig, SCHEMES};

/// Options of `mslink demo`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink demo\n  mslink demo --loss 0.059 --seconds 200 --seed 7\n  mslink demo --schemes raw,oos_rlp --json -q"
)]
pub struct DemoArgs {
    /// Independent frame loss rate in each direction (004 Table I WLAN: 0.008, 0.015, 0.03, 0.059).
    #[arg(long, default_value_t = 0.03)]
    pub loss: f64,
    /// Simulated seconds of traffic per scheme.
    #[arg(long, default_value_t = 300.0)]
    pub seconds: f64,
    /// Seed of every random draw (talk spurts and losses).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only these schemes, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub schemes: Vec<String>,
    /// Print one JSON document on standard output instead of tables.
    #[arg(long)]
    pub json: bool,
    /// No progress bar (shown on a terminal only).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs the demo.
pub fn run(args: &DemoArgs) -> Result<()> {
    anyhow::ensure!(
        (0.0..1.0).contains(&args.loss),
        "--loss must be in [0, 1), got {}",
        args.loss
    );
    anyhow::ensure!(
        args.seconds > 0.0 && args.seconds.is_finite(),
        "--seconds must be positive, got {}",
        args.seconds
    );
    for s in &args.schemes {
        anyhow::ensure!(
            SCHEMES.iter().any(|(n, _)| n == s),
            "unknown scheme {s:?}; expected one of {}",
            SCHEMES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let cfg = DemoConfig {
        loss: args.loss,
        seconds: args.seconds,
        seed: args.seed,
    };
    let chosen = |s: &&str| args.schemes.is_empty() || args.schemes.iter().any(|a| a == s);
    let steps =
        SCHEMES.iter().filter(|(s, _)| chosen(s)).count() + args.schemes.is_empty() as usize;
    let bar = crate::convention::bar(steps as u64, "runs", args.quiet);
    let mut rows: Vec<demo::SchemeRow> = Vec::new();
    for (scheme, extra) in SCHEMES {
        if chosen(scheme) {
            bar.set_message(scheme.to_string());
            rows.push(run_scheme(scheme, extra, &cfg)?);
            bar.inc(1);
        }
    }
    let multi = if args.schemes.is_empty() {
        bar.set_message("multi-service link");
        run_multi(&cfg)?
    } else {
        Vec::new()
    };
    bar.finish_and_clear();
    let iso = rows
        .iter()
        .find(|r| r.scheme == "oos_rlp")
        .zip(multi.first())
        .map(|(a, b)| isolation(a, b));
    if args.json {
        let out = serde_json::json!({ "schemes": rows, "multi_service": multi, "isolation": iso });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "1 Mbit/s CBR in talk spurts over a 5 Mbit/s, 3 ms hop, 1000-byte frames, {:.1}% independent frame loss each way\n\
         (004 §III.D, Table I WLAN); {} s per scheme, seed {}\n",
        args.loss * 100.0,
        args.seconds,
        args.seed
    );
    println!(
        "{:<18}{:>8}{:>11}{:>15}{:>13}{:>15}{:>10}{:>7}{:>11}",
        "scheme",
        "sent",
        "delivered",
        "residual loss",
        "delay mean",
        "mean+std (ms)",
        "overhead",
        "retx",
        "recovered"
    );
    for r in &rows {
        println!(
            "{:<18}{:>8}{:>11}{:>14.3}%{:>11.2}ms{:>15.2}{:>9.1}%{:>7}{:>11}",
            r.scheme,
            r.sent,
            r.delivered,
            r.residual_loss * 100.0,
            r.delay_mean_ms,
            r.delay_mean_ms + r.delay_std_ms,
            r.overhead * 100.0,
            r.retransmissions,
            r.recovered
        );
    }
    if !multi.is_empty() {
        println!(
            "\nOne multi-service link (004 §IV-V): bulk UDP offered at 4.5 Mbit/s on selective_repeat and the CBR\n\
             stream on oos_rlp, classified by UDP port, sharing the hop through SCFQ with static rates 3.5:1.5.\n"
        );
        println!(
            "{:<8}{:<18}{:>9}{:>11}{:>15}{:>13}{:>13}{:>15}",
            "class",
            "scheme",
            "offered",
            "delivered",
            "residual loss",
            "goodput",
            "delay mean",
            "mean+std (ms)"
        );
        for r in &multi {
            println!(
                "{:<8}{:<18}{:>9}{:>11}{:>14.3}%{:>8.2}Mb/s{:>11.2}ms{:>15.2}",
                r.class,
                r.scheme,
                r.offered,
                r.delivered,
                r.residual_loss * 100.0,
                r.throughput_mbps,
                r.delay_mean_ms,
                r.delay_mean_ms + r.delay_std_ms
            );
        }
        println!("\nBulk takes whatever CBR leaves (its delay is its own backlog); CBR keeps a modest delay increase\nnext to it, and its loss:");
        if let Some(i) = &iso {
            println!(
                "CBR on oos_rlp lost {} of {} packets beside bulk and {} alone (above): {} (2 sd = {:.1} packets){}",
                i.lost_beside_bulk,
                i.sent,
                i.lost_alone,
                if i.holds {
                    "the same within the noise"
                } else {
                    "NOT the same within the noise"
                },
                2.0 * i.sd,
                if i.holds { ", as 004 §V.D reports." } else { "." }
            );
        }
    }
    Ok(())
}
