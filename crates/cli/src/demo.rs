//! `mslink demo`: the engine at work before the simulator exists.
//!
//! Contract: pushes 004 §III.D's continuous-media stream (CBR in exponential talk spurts of
//! 1 s and silences of 1.35 s) through an in-memory WLAN-like hop (004 Table I: 5 Mbit/s, 3 ms,
//! 1000-byte frames) with independent frame loss in both directions, once per recovery
//! scheme, and prints residual loss, delay (mean and mean + standard deviation, 004's metric)
//! and overhead; then runs a greedy bulk flow and the CBR stream together on one multi-service
//! link with an SCFQ scheduler; then 004's own case in the simulator: the media beside a TCP
//! file transfer at SCFQ 4 : 1 and at a share that covers its overhead, against the media
//! alone, with loss, delay, the schedulers' delay bound and the playback miss rate.
//! Deterministic for a given seed. The runs are
//! `mslink_sim::demo`'s; this verb checks the options and prints.

use anyhow::Result;
use mslink_sim::demo::{self, isolation, run_multi, run_scheme, run_tcp_case, DemoConfig, SCHEMES};

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
        SCHEMES.iter().filter(|(s, _)| chosen(s)).count() + 2 * args.schemes.is_empty() as usize;
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
    let tcp_case = if args.schemes.is_empty() {
        bar.set_message("beside TCP (simulator)");
        let rows = run_tcp_case(&cfg)?;
        bar.inc(1);
        rows
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
        let out = serde_json::json!({ "schemes": rows, "multi_service": multi, "isolation": iso, "beside_tcp": tcp_case });
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
    if !tcp_case.is_empty() {
        print_tcp_case(&tcp_case);
    }
    Ok(())
}

/// The simulator's run of 004's own case: loss and delay of the media alone and beside TCP.
fn print_tcp_case(rows: &[demo::TcpCaseRow]) {
    println!(
        "\n004's own case in the simulator (§V): the media on oos_rlp beside a TCP Reno file transfer on\n\
         selective_repeat, through SCFQ at 004's rates 4:1 (the media's share is its 1 Mbit/s peak before\n\
         link overhead) and at 3.9:1.1 (a share that covers the overhead), against the media alone.\n"
    );
    println!(
        "{:<31}{:>14}{:>13}{:>12}{:>15}{:>16}{:>10}",
        "media", "residual loss", "delay mean", "p95 delay", "sched. bound", "playback miss", "TCP"
    );
    for r in rows {
        println!(
            "{:<31}{:>13.3}%{:>11.1}ms{:>10.1}ms{:>15}{:>15.2}%{:>5.2}Mb/s",
            r.case,
            r.residual_loss * 100.0,
            r.delay_mean_ms,
            r.delay_p95_ms,
            if r.tcp_mbps == 0.0 {
                "-".to_string()
            } else {
                r.delay_bound_ms
                    .map_or("none".to_string(), |b| format!("+{b:.1} ms"))
            },
            r.playback_miss_rate * 100.0,
            r.tcp_mbps
        );
    }
    let alone = &rows[0];
    for r in &rows[1..] {
        let ratio = r.delay_mean_ms / alone.delay_mean_ms.max(1e-9);
        let counts = format!(
            "{} lost against {} alone, of about {} packets",
            r.lost, alone.lost, r.sent
        );
        let loss = if demo::same_loss(alone, r) {
            format!("loss as alone ({counts}, within the noise)")
        } else if r.lost < alone.lost {
            format!("loss below alone's ({counts})")
        } else {
            format!("loss NOT as alone ({counts})")
        };
        match r.delay_bound_ms {
            None => println!(
                "{}: {loss};\n  but the mean delay is {ratio:.1} x alone and nothing bounds it: the media needs more than its\n  \
                 share on the air (playback miss at 250 ms: {:.2}% against {:.2}% alone).",
                r.case,
                r.playback_miss_rate * 100.0,
                alone.playback_miss_rate * 100.0
            ),
            Some(b) => println!(
                "{}: {loss};\n  mean delay {ratio:.1} x alone, {:.1} ms more: {} the schedulers' bound of {b:.1} ms.",
                r.case,
                r.delay_mean_ms - alone.delay_mean_ms,
                if r.delay_mean_ms - alone.delay_mean_ms <= b { "within" } else { "BEYOND" }
            ),
        }
    }
    if let Some(n) = rows.iter().flat_map(|r| &r.notes).next() {
        println!("The simulator's note for 004's rates: {n}");
    }
}
