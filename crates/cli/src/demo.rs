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
//! Deterministic for a given seed. The runs and their text are `mslink_sim::demo`'s
//! (`demo::text`); this verb checks the options, shows progress and prints.

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
    } else {
        print!(
            "{}",
            demo::text::report(&cfg, &rows, &multi, iso.as_ref(), &tcp_case)
        );
    }
    Ok(())
}
