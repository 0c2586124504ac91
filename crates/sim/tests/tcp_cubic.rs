//! CUBIC (RFC 9438, `[flow.tcp] congestion_control = "cubic"`) against Reno's AIMD through the
//! whole simulator, on a long fat path: 100 Mbit/s, 50 ms each way (RTT 100 ms, a BDP of
//! about 860 segments of 1454 bytes), socket buffers far above the BDP.

use mslink_sim::world::RunResult;
use mslink_sim::{run, Scenario};

const LINK_BPS: f64 = 100e6;

/// One SACK transfer of 1454-byte segments over the path for `secs` seconds. With `loss`,
/// the hop is a wireless segment (one Raw service, 1500-byte frames: wired segments have no
/// error model) losing that share of data frames independently (ACKs are not lost); without,
/// it is wired with a drop-tail queue of `queue` packets.
fn long_fat(cc: &str, loss: f64, queue: usize, secs: u32) -> RunResult {
    let hop = if loss > 0.0 {
        format!(
            "kind = \"wireless\"\nframe_bytes = 1500\n\
             error = {{ model = \"independent\", loss = {loss} }}\n\
             error_reverse = {{ model = \"perfect\" }}\n[segment.link]\nmtu = 1494"
        )
    } else {
        format!("kind = \"wired\"\nqueue_packets = {queue}")
    };
    let text = format!(
        "[sim]\nduration_s = {secs}\ndrain_s = 0\ntimeseries_window_s = 1\n\
         [[segment]]\nrate_bps = {LINK_BPS}\ndelay_ms = 50\n{hop}\n\
         [[flow]]\nname = \"ftp\"\napp = \"ftp\"\nfrom = 0\nto = 1\nsize_bytes = 100000000000\n\
         [flow.tcp]\nmss = 1454\nvariant = \"sack\"\ncongestion_control = \"{cc}\"\n\
         initial_window = 10\ngranularity_s = 0.001\nmin_rto_s = 0.2\n\
         send_buffer_bytes = 16777216\nrecv_buffer_bytes = 16777216\n"
    );
    let sc = Scenario::parse(&text).unwrap();
    sc.validate().unwrap();
    run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces"))).unwrap()
}

/// RFC 9438 §5.1's average windows for random loss p, segments: CUBIC's C (3 + beta) /
/// (4 (1 - beta)))^(1/4) (RTT^3 / p^3)^(1/4) and Reno's sqrt(3 / (2 p)).
fn response(rtt: f64, p: f64) -> (f64, f64) {
    let (c, b): (f64, f64) = (0.4, 0.7);
    let cubic =
        (c * (3.0 + b) / (4.0 * (1.0 - b))).powf(0.25) * (rtt.powi(3) / p.powi(3)).powf(0.25);
    (cubic, (1.5 / p).sqrt())
}

/// With 1e-4 random loss the window is loss-bound, far below the BDP: Reno's 1 SMSS per RTT
/// regains a halved window slowly, CUBIC's curve regains 0.7 W_max within K seconds and then
/// probes beyond it, so CUBIC's goodput is well above Reno's (RFC 9438 §5.1 predicts about
/// 1.5x here) and both stay under the link rate. The transport names tell the runs apart.
#[test]
fn cubic_beats_reno_on_a_long_fat_path_with_random_loss() {
    let p = 1e-4;
    let reno = long_fat("reno", p, 0, 300);
    let cubic = long_fat("cubic", p, 0, 300);
    let (r, c) = (&reno.flows[0], &cubic.flows[0]);
    assert_eq!(
        (r.transport.as_str(), c.transport.as_str()),
        ("sack", "sack+cubic")
    );
    let (wc, wr) = response(0.1, p);
    let seg_bps = 1454.0 * 8.0 / 0.1;
    eprintln!(
        "reno {:.2} Mbit/s ({} rtx, {} timeouts), cubic {:.2} Mbit/s ({} rtx, {} timeouts); \
         RFC 9438 §5.1: reno {:.1}, cubic {:.1} Mbit/s",
        r.throughput_bps / 1e6,
        r.retransmits,
        r.timeouts,
        c.throughput_bps / 1e6,
        c.retransmits,
        c.timeouts,
        wr * seg_bps / 1e6,
        wc * seg_bps / 1e6,
    );
    assert!(
        r.retransmits > 100 && c.retransmits > 100,
        "loss-bound runs"
    );
    assert!(
        c.throughput_bps > 1.25 * r.throughput_bps,
        "cubic {} vs reno {}",
        c.throughput_bps,
        r.throughput_bps
    );
    assert!(c.throughput_bps < 0.9 * LINK_BPS);
    // Each within 35% of its RFC 9438 §5.1 response function.
    for (got, model) in [(r.throughput_bps, wr), (c.throughput_bps, wc)] {
        let want = model * seg_bps;
        assert!((got / want - 1.0).abs() < 0.35, "{got} vs model {want}");
    }
}

/// The cubic shape through the simulator: on a clean path whose only losses are drop-tail
/// overflows of a 100-packet queue, each loss cuts CUBIC to 0.7 W_max, still about 80% of the
/// link, and the concave curve is back at the link rate within seconds (W_cubic reaches the
/// BDP about 2.6 s after the loss, K = 8.9 s), then probes convexly into the next overflow
/// soon after K. Reno halves to 56% and climbs 1 SMSS per RTT (about 38 s to refill the
/// pipe). So CUBIC runs at the link rate in many more one-second windows, and moves more data.
#[test]
fn cubic_refills_the_pipe_within_seconds_of_a_loss() {
    let share = |r: &RunResult| {
        let pts: Vec<f64> = r
            .timeseries
            .iter()
            .filter(|p| p.time_s > 30.0)
            .map(|p| p.throughput_bps)
            .collect();
        pts.iter()
            .filter(|&&b| b >= 0.95 * LINK_BPS * 1454.0 / 1500.0)
            .count() as f64
            / pts.len() as f64
    };
    let reno = long_fat("reno", 0.0, 100, 200);
    let cubic = long_fat("cubic", 0.0, 100, 200);
    let (sr, sc) = (share(&reno), share(&cubic));
    eprintln!(
        "seconds at >= 95% of the payload rate after 30 s: reno {sr:.2}, cubic {sc:.2}; \
         goodput reno {:.2}, cubic {:.2} Mbit/s",
        reno.flows[0].throughput_bps / 1e6,
        cubic.flows[0].throughput_bps / 1e6
    );
    for r in [&reno, &cubic] {
        assert!(r.flows[0].retransmits > 0, "the queue overflowed");
    }
    assert!(sc >= 0.5, "cubic {sc}");
    assert!(sr <= sc - 0.2, "reno {sr} vs cubic {sc}");
    let (gr, gc) = (reno.flows[0].throughput_bps, cubic.flows[0].throughput_bps);
    assert!(gc > 1.1 * gr, "cubic {gc} vs reno {gr}");
}
