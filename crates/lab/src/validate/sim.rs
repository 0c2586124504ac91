//! The simulated side of `mslink validate`: the Linux-like sender of
//! `scenarios/tcp/linux_like.toml` over each link of the grid.
//!
//! Contract. [`scenario`] is that file with the link's rate, one-way delay (half the RTT) and
//! data-frame error model, the control, the length and the buffers set by overrides, so the
//! file stays the one description of a Linux-like sender; the transfer is longer than the link
//! can carry. The flow's `stop_s` is the transfer's length, which ends its measurement as
//! iperf3's receiver ends its own (the end-of-test message queues behind the data already
//! sent: `crates/sim/src/world/ftp.rs`), and the run goes on for [`drain_s`] after it so that
//! message's stand-in can arrive. [`run`] makes every (link, control,
//! repetition) on `jobs` threads, repetition `r` with the kernel's channel seed for `r`
//! ([`super::channel_seed`]); the rows come back in that order whatever `jobs` is.

use std::path::PathBuf;

use anyhow::{Context, Result};
use mslink_sim::Scenario;

use super::{Cc, Link, Options, Row, Side};
use crate::TraceFiles;

/// `scenarios/tcp/linux_like.toml`, built in so the verb runs from any folder.
const LINUX_LIKE: &str = include_str!("../../../../scenarios/tcp/linux_like.toml");

/// How long the run goes on after the transfer's end: the link's queue full
/// (`RawConfig::default().queue_limit` packets of [`super::MTU`] bytes) drained at its rate,
/// two round trips and a second.
pub fn drain_s(link: &Link) -> f64 {
    let queue = mslink_link::service::raw::RawConfig::default().queue_limit as f64;
    queue * f64::from(super::MTU) * 8.0 / link.rate_bps + 2.0 * link.rtt_ms / 1e3 + 1.0
}

/// The Linux-like transfer over `link` with `cc`, measured for `seconds`, with both socket
/// buffers `buffer` bytes.
pub fn scenario(link: &Link, cc: Cc, seconds: f64, buffer: u64) -> Result<Scenario> {
    let total = seconds + drain_s(link);
    let size = (link.rate_bps * total / 8.0 * 2.0) as u64 + 10_000_000;
    let sets: Vec<(String, String)> = [
        ("sim.name", format!("\"validate-{}\"", cc.name())),
        ("sim.duration_s", total.to_string()),
        ("flow.0.stop_s", seconds.to_string()),
        ("segment.0.rate_bps", link.rate_bps.to_string()),
        ("segment.0.delay_ms", (link.rtt_ms / 2.0).to_string()),
        ("segment.0.error", link.loss.toml()),
        ("flow.0.size_bytes", size.to_string()),
        (
            "flow.0.tcp.congestion_control",
            format!("\"{}\"", cc.name()),
        ),
        ("flow.0.tcp.recv_buffer_bytes", buffer.to_string()),
        ("flow.0.tcp.send_buffer_bytes", buffer.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Scenario::parse(LINUX_LIKE)
        .and_then(|s| s.with_overrides(&sets))
        .with_context(|| format!("the Linux-like scenario over {}", link.label()))
}

/// Repetition `rep` of `scenario`, to be run as its repetition 0 (seeded as written): it
/// meets the losses of the kernel's repetition `rep`, whose link file carries the same seed.
fn repetition(scenario: &Scenario, rep: u32) -> Scenario {
    let mut s = scenario.clone();
    s.sim.seed = super::channel_seed(rep);
    s
}

/// Every simulated transfer of `o`, in (link, control, repetition) order.
pub fn run(
    o: &Options,
    buffer: u64,
    progress: &dyn crate::reproduce::Progress,
) -> Result<Vec<Row>> {
    // One scenario per (link, control); a job names it by index.
    let mut scenarios = Vec::new();
    let mut jobs = Vec::new();
    for (li, cc) in o.points() {
        scenarios.push(scenario(&o.links[li], cc, o.seconds, buffer)?);
        for rep in 0..o.sim_reps {
            jobs.push((li, cc, scenarios.len() - 1, rep));
        }
    }
    let traces = TraceFiles::new(PathBuf::new());
    progress.phase(jobs.len() as u64, "simulated transfers");
    let out = crate::parallel::parallel_ordered(jobs.len(), o.jobs, &|| progress.tick(), |i| {
        let (li, cc, sc, rep) = jobs[i];
        let mut t = &traces;
        let r = mslink_sim::run_with(&repetition(&scenarios[sc], rep), 0, &mut t, None)?;
        let f = r.flows.first().context("the scenario's flow")?;
        Ok::<_, anyhow::Error>(Row {
            link: li,
            cc,
            side: Side::Sim,
            rep,
            goodput_bps: f.throughput_bps,
            retrans_rate: f.retransmits as f64 / (f.sent as f64).max(1.0),
            timeouts: f.timeouts as f64,
            // An ftp flow's delay percentiles are its SRTT's, read every 100 ms.
            srtt_p50_ms: f.delay_p50_s * 1e3,
            srtt_p95_ms: f.delay_p95_s * 1e3,
        })
    });
    progress.done();
    out.into_iter()
        .zip(&jobs)
        .map(|(r, (li, cc, _, rep))| {
            r.with_context(|| {
                format!(
                    "simulating {} with {}, repetition {rep}",
                    o.links[*li].label(),
                    cc.name()
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::Loss;

    #[test]
    fn the_scenario_is_linux_like_with_the_links_values() {
        let link = Link {
            rate_bps: 10e6,
            rtt_ms: 20.0,
            loss: Loss::Independent(0.01),
        };
        let sc = scenario(&link, Cc::Reno, 5.0, 1 << 20).unwrap();
        let t = toml::to_string(&sc).unwrap();
        for want in [
            "rate_bps = 10000000",
            "delay_ms = 10",
            "congestion_control = \"reno\"",
            "byte_counting = true",
            "recv_buffer_bytes = 1048576",
            // 1000 packets of 1500 bytes at 10 Mbit/s, two 20-ms round trips and a second.
            "duration_s = 7.24",
            "stop_s = 5",
        ] {
            assert!(t.contains(want), "{want} not in\n{t}");
        }
        // The emulator's link file gives the kernel's side the scenario's MTU.
        let file: toml::Value = toml::from_str(&super::super::kernel::link_file(&link, 0)).unwrap();
        let mtu = |v: &toml::Value| v["mtu"].as_integer().unwrap();
        assert_eq!(mtu(&file), i64::from(super::super::MTU));
        assert_eq!(mtu(&file["link"]), i64::from(super::super::MTU));
        assert!(t.contains(&format!("mtu = {}", super::super::MTU)), "{t}");
    }

    /// Repetition r of both sides draws from one seed: the simulated transfer's scenario
    /// seed (its repetition 0 is seeded as written) is the one the kernel's link file for r
    /// gives the emulator, and two repetitions differ.
    #[test]
    fn a_repetition_is_seeded_as_the_kernels_link_file_for_it() {
        let link = super::super::Grid::Quick.links()[0];
        let sc = scenario(&link, Cc::Reno, 5.0, 1 << 20).unwrap();
        for rep in [0, 3] {
            let file: toml::Value =
                toml::from_str(&super::super::kernel::link_file(&link, rep)).unwrap();
            let seed = file["seed"].as_integer().unwrap() as u64;
            assert_eq!(repetition(&sc, rep).sim.seed, seed);
            assert_eq!(mslink_channel::streams::rep_seed(seed, 0), seed);
        }
        assert_ne!(repetition(&sc, 0).sim.seed, repetition(&sc, 1).sim.seed);
    }

    /// HyStart (cubic_flavour = "linux"): with no loss at 10 Mbit/s and 200 ms, slow start
    /// ends on the growing delay before the 1000-packet queue overflows, as the kernel's
    /// CUBIC does (0 retransmissions in docs/validation.md); RFC 9438's slow start, without
    /// HyStart++ here, runs into the overflow.
    #[test]
    fn linux_cubic_leaves_slow_start_before_the_queue_overflows() {
        let link = Link {
            rate_bps: 10e6,
            rtt_ms: 200.0,
            loss: Loss::Independent(0.0),
        };
        let retransmits = |flavour: &str| {
            let sc = scenario(&link, Cc::Cubic, 10.0, 3 << 20)
                .unwrap()
                .with_overrides(&[(
                    "flow.0.tcp.cubic_flavour".to_string(),
                    format!("\"{flavour}\""),
                )])
                .unwrap();
            let mut t = &TraceFiles::new(PathBuf::new());
            let r = mslink_sim::run_with(&sc, 0, &mut t, None).unwrap();
            (r.flows[0].retransmits, r.flows[0].throughput_bps)
        };
        let (linux, goodput) = retransmits("linux");
        assert_eq!(linux, 0);
        assert!(goodput > 8e6, "{goodput}");
        assert!(retransmits("rfc9438").0 > 100);
    }
}
