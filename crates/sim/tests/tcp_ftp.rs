//! FTP over TCP through the simulator: the error-free rate, determinism, the loss-rate
//! models of Mathis et al. and Padhye et al. over independent loss.

use mslink_sim::world::FlowResult;
use mslink_sim::{run, Scenario};

fn run_flow(text: &str) -> FlowResult {
    let sc = Scenario::parse(text).unwrap();
    sc.validate().unwrap();
    run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces")))
        .unwrap()
        .flows
        .remove(0)
}

/// One WLAN hop (004 Table I: 5 Mbit/s, 3 ms, 1000-byte frames); `error` is its error model.
fn wlan(error: &str, tcp: &str, size: u64) -> String {
    format!(
        "[sim]\nduration_s = 400\ndrain_s = 0\n\
         [[segment]]\nkind = \"wireless\"\npreset = \"wlan\"\nerror = {error}\n\
         [segment.link]\nmtu = 994\n\
         [[flow]]\nname = \"ftp\"\napp = \"ftp\"\nfrom = 0\nto = 1\nsize_bytes = {size}\n\
         [flow.tcp]\nmss = 954\n{tcp}\n"
    )
}

/// Over an error-free 5 Mbit/s hop, a transfer gets at least 95% of the payload rate: the
/// MAC carries a 994-byte packet (954 payload) in a 998-byte frame (4 bytes of CRC, one Raw
/// service), so the payload rate is 5 Mbit/s * 954 / 998.
#[test]
fn error_free_transfer_reaches_95_percent_of_the_payload_rate() {
    for variant in ["reno", "new_reno", "sack"] {
        for delack in [false, true] {
            let f = run_flow(&wlan(
                "{ model = \"perfect\" }",
                &format!("variant = \"{variant}\"\ndelayed_ack = {delack}"),
                10_000_000,
            ));
            let payload = 5e6 * 954.0 / 998.0;
            assert!(f.completed, "{variant}");
            assert_eq!(f.bytes, 10_000_000);
            assert!(
                f.throughput_bps >= 0.95 * payload && f.throughput_bps <= payload,
                "{variant} delack={delack}: {} vs payload rate {payload}",
                f.throughput_bps
            );
            eprintln!(
                "{variant} delack={delack}: {:.0} bit/s ({:.3} of payload rate), rtx {}",
                f.throughput_bps,
                f.throughput_bps / payload,
                f.retransmits
            );
        }
    }
}

/// Mathis et al. (1997): B = (MSS / RTT) * sqrt(3 / (2 b p)), packets/s with b = 1.
fn mathis(rtt: f64, p: f64) -> f64 {
    (1.5 / p).sqrt() / rtt
}

/// Padhye et al. (1998), eq. (32): B = min(Wmax / RTT, 1 / (RTT sqrt(2bp/3)
/// + T0 min(1, 3 sqrt(3bp/8)) p (1 + 32 p^2))), packets/s with b = 1.
fn padhye(rtt: f64, t0: f64, p: f64, wmax: f64) -> f64 {
    let d = rtt * (2.0 * p / 3.0).sqrt()
        + t0 * (3.0 * (3.0 * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    (wmax / rtt).min(1.0 / d)
}

/// Reno over independent data-packet loss p = 0.5%..5% on a 5 Mbit/s hop with a 40 ms
/// one-way delay (so the models, not the link, bound the rate; ACKs are not lost, as the
/// models assume). The measured throughput lies between Padhye's model (which counts
/// timeouts) and Mathis's (which does not), each computed here from the run's own smoothed
/// RTT and its RTO (RFC 6298 from SRTT and RTTVAR with this flow's 10 ms clock and 200 ms
/// floor), with 15% slack either side for the models' approximations.
#[test]
fn reno_lies_in_the_mathis_padhye_band() {
    let mss = 954.0;
    for p in [0.005, 0.01, 0.02, 0.03, 0.05] {
        let packets = (300.0 / p) as u64;
        let text = format!(
            "[sim]\nduration_s = 4000\ndrain_s = 0\n\
             [[segment]]\nkind = \"wireless\"\nrate_bps = 5000000\ndelay_ms = 40\nframe_bytes = 1000\n\
             error = {{ model = \"independent\", loss = {p} }}\nerror_reverse = {{ model = \"perfect\" }}\n\
             [segment.link]\nmtu = 994\n\
             [[flow]]\nname = \"ftp\"\napp = \"ftp\"\nfrom = 0\nto = 1\nsize_bytes = {}\n\
             [flow.tcp]\nmss = 954\nvariant = \"reno\"\ngranularity_s = 0.01\nmin_rto_s = 0.2\n\
             recv_buffer_bytes = 131072\nsend_buffer_bytes = 131072\n",
            packets * 954
        );
        let f = run_flow(&text);
        assert!(f.completed);
        let rtt = f.delay_mean_s;
        let g = 0.01;
        let t0 = (((rtt + (4.0 * f.delay_std_s).max(g)) / g).ceil() * g).max(0.2);
        let got = f.throughput_bps / (mss * 8.0);
        let hi = mathis(rtt, p);
        let lo = padhye(rtt, t0, p, 131072.0 / mss);
        eprintln!(
            "p = {p}: {got:.1} pkt/s, Padhye {lo:.1}, Mathis {hi:.1} (rtt {:.1} ms, T0 {t0:.2} s, {} timeouts, {} rtx)",
            rtt * 1e3, f.timeouts, f.retransmits
        );
        assert!(
            got >= 0.85 * lo && got <= 1.15 * hi,
            "p = {p}: {got} pkt/s outside [{lo}, {hi}]"
        );
    }
}

/// Same scenario, seed and repetition: identical results, field for field; another
/// repetition draws other errors.
#[test]
fn runs_are_deterministic() {
    let sc = Scenario::parse(&wlan(
        "{ model = \"exponential\", mean_bytes = 65536 }",
        "variant = \"sack\"\ndelayed_ack = true",
        3_000_000,
    ))
    .unwrap();
    let go = |rep| run(&sc, rep, &mut |_| Err(std::io::Error::other("no traces"))).unwrap();
    let (a, b, c) = (go(0), go(0), go(1));
    assert_eq!(a, b);
    assert!(a.flows[0].retransmits > 0);
    assert_ne!(a.flows[0].duration_s, c.flows[0].duration_s);
}

/// Mistakes in an FTP flow are reported with the key that holds them.
#[test]
fn ftp_errors_name_the_key() {
    let bad = |text: String| {
        Scenario::parse(&text)
            .and_then(|s| s.validate().map(|_| s))
            .unwrap_err()
            .to_string()
    };
    let ok = wlan("{ model = \"perfect\" }", "", 1000);
    assert!(Scenario::parse(&ok).unwrap().validate().is_ok());
    let e = bad(ok.replace("size_bytes = 1000", "size_bytes = 0"));
    assert!(e.contains("flow[0].size_bytes"), "{e}");
    let e = bad(ok.replace("mss = 954", "mss = 955"));
    assert!(
        e.contains("flow[0].tcp.mss") && e.contains("mss <= 954"),
        "{e}"
    );
    let e = bad(ok.replace("mss = 954", "mss = 954\nwindow = 3"));
    assert!(e.contains("window") && e.contains("line"), "{e}");
    let e = bad(ok.replace("mss = 954", "mss = 954\nvariant = \"vegas\""));
    assert!(e.contains("vegas"), "{e}");
    let e = bad(ok.replace("mss = 954", "mss = 954\nmin_rto_s = -1"));
    assert!(e.contains("flow[0].tcp.min_rto_s"), "{e}");
    let e = bad(ok.replace("mss = 954", "mss = 954\nrecv_buffer_bytes = 100"));
    assert!(e.contains("flow[0].tcp.recv_buffer_bytes"), "{e}");
}

/// Two Reno transfers through a 2 Mbit/s drop-tail bottleneck (queue 20 packets) find their
/// losses in the queue, fill the link between them and share it fairly.
#[test]
fn two_transfers_share_a_congested_bottleneck() {
    let sc = Scenario::parse(
        "[sim]\nduration_s = 1000\ndrain_s = 0\n\
         [[segment]]\nkind = \"wired\"\nrate_bps = 100000000\ndelay_ms = 1\n\
         [[segment]]\nkind = \"wired\"\nrate_bps = 2000000\ndelay_ms = 20\nqueue_packets = 20\n\
         [[flow]]\nname = \"a\"\napp = \"ftp\"\nfrom = 0\nto = 2\nsize_bytes = 5000000\n\
         [flow.tcp]\ngranularity_s = 0.01\nmin_rto_s = 0.2\n\
         [[flow]]\nname = \"b\"\napp = \"ftp\"\nfrom = 0\nto = 2\nsize_bytes = 5000000\nstart_s = 0.5\n\
         [flow.tcp]\ngranularity_s = 0.01\nmin_rto_s = 0.2\n",
    )
    .unwrap();
    sc.validate().unwrap();
    let r = run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces"))).unwrap();
    let drops = r.segments[1].directions[0].queue_drops;
    assert!(drops > 0, "the queue overflowed");
    let (a, b) = (&r.flows[0], &r.flows[1]);
    assert!(a.completed && b.completed && a.retransmits > 0 && b.retransmits > 0);
    // While both run, together they carry the payload rate of the bottleneck: 10 MB in
    // about 10 MB / (2 Mbit/s * 1460 / 1500) seconds, plus the start-up.
    let payload = 2e6 * 1460.0 / 1500.0;
    let last = (a.duration_s).max(b.duration_s + 0.5);
    assert!(10e6 * 8.0 / last >= 0.85 * payload, "{} s for both", last);
    // Jain's fairness index of the two throughputs.
    let (x, y) = (a.throughput_bps, b.throughput_bps);
    let jain = (x + y).powi(2) / (2.0 * (x * x + y * y));
    assert!(jain >= 0.9, "{x} vs {y}: {jain}");
}

/// A 10 Mbit/s hop of 25 ms each way (1500-byte packets, one Raw service) carrying a
/// Linux-like transfer for `secs` seconds with both socket buffers `buffer` bytes.
fn srtt_run(buffer: u64, secs: f64, cc: &str) -> FlowResult {
    run_flow(&format!(
        "[sim]\nduration_s = {secs}\ndrain_s = 0\n\
         [[segment]]\nkind = \"wireless\"\nrate_bps = 10000000\ndelay_ms = 25\nframe_bytes = 1504\n\
         error = {{ model = \"perfect\" }}\n\
         [segment.link]\nmtu = 1500\n[[segment.link.service]]\nname = \"tcp\"\nscheme = \"raw\"\n\
         [[flow]]\nname = \"ftp\"\napp = \"ftp\"\nfrom = 0\nto = 1\nsize_bytes = 1000000000\n\
         [flow.tcp]\nvariant = \"sack\"\ncongestion_control = \"{cc}\"\nrecv_buffer_bytes = {buffer}\n\
         send_buffer_bytes = {buffer}\n"
    ))
}

/// An `ftp` flow's delay percentiles are those of its SRTT read every 100 ms. With a window
/// (16 KB) below the path's bandwidth-delay product (62.5 KB) no queue builds, so every
/// reading is the 50 ms propagation plus a segment's and an ACK's transmission time (1.2 ms
/// and 0.04 ms) plus at most a delayed ACK's 40 ms wait. With a window of 4 MB Reno slow
/// starts into the 1000-packet queue (1.2 s at 10 Mbit/s): the SRTT follows the queue as it
/// fills and drains, so the readings spread (95th percentile 1.5 times the median or more),
/// all above the propagation time. A run shorter than the first reading reports none.
#[test]
fn an_ftp_flows_delay_percentiles_are_its_srtt_read_every_100_ms() {
    let f = srtt_run(16_384, 10.0, "reno");
    let (p50, p95, p99) = (f.delay_p50_s, f.delay_p95_s, f.delay_p99_s);
    eprintln!("window-limited: p50 {p50} p95 {p95} p99 {p99}");
    assert!((0.0512..=0.0512 * 1.02 + 0.040).contains(&p50), "{p50}");
    assert!(
        p50 <= p95 && p95 <= p99 && p99 <= (0.0512 + 0.040) * 1.02,
        "{p95} {p99}"
    );

    let f = srtt_run(4 << 20, 10.0, "reno");
    let (p50, p95) = (f.delay_p50_s, f.delay_p95_s);
    eprintln!("queue-filling: p50 {p50} p95 {p95}");
    assert!(p50 > 0.1 && p95 > 1.5 * p50, "{p50} {p95}");

    let f = srtt_run(16_384, 0.09, "reno");
    assert_eq!(
        (f.delay_p50_s, f.delay_p95_s, f.delay_p99_s),
        (0.0, 0.0, 0.0)
    );
}

/// `stop_s` ends an `ftp` flow's measurement as iperf3's receiver ends its own: at 1 Mbit/s
/// with a 1000-packet queue (12 s) and no loss, Reno's slow start fills seconds of queue by
/// the 10-s stop, and what was sent before the stop keeps arriving until the first segment
/// sent after it does. So the flow is measured past 10 s, over a link busy all along (the
/// bytes are the payload rate times that time), never past what was sent by the stop; its
/// counters are those at the stop, below the whole run's (25 s).
#[test]
fn stop_s_ends_an_ftp_flows_measurement_when_the_first_segment_sent_after_it_arrives() {
    let text = |stop: &str| {
        format!(
            "[sim]\nduration_s = 25\ndrain_s = 0\n\
             [[segment]]\nkind = \"wireless\"\nrate_bps = 1000000\ndelay_ms = 5\nframe_bytes = 1504\n\
             error = {{ model = \"perfect\" }}\n\
             [segment.link]\nmtu = 1500\n[[segment.link.service]]\nname = \"tcp\"\nscheme = \"raw\"\n\
             [[flow]]\nname = \"ftp\"\napp = \"ftp\"\nfrom = 0\nto = 1\nsize_bytes = 1000000000\n{stop}\n\
             [flow.tcp]\nvariant = \"sack\"\nmss = 1448\ntimestamps = true\nrecv_buffer_bytes = 4194304\n\
             send_buffer_bytes = 4194304\n"
        )
    };
    let f = run_flow(&text("stop_s = 10"));
    let whole = run_flow(&text(""));
    eprintln!(
        "stopped: {} s, {} bytes, {} segments; whole run: {} s, {} segments",
        f.duration_s, f.bytes, f.sent, whole.duration_s, whole.sent
    );
    assert!(
        f.duration_s > 12.0 && f.duration_s < 25.0,
        "{}",
        f.duration_s
    );
    // 1448 payload bytes of every 1504-byte frame at 1 Mbit/s.
    let payload = 1e6 * 1448.0 / 1504.0;
    assert!(
        (f.throughput_bps / payload - 1.0).abs() < 0.02,
        "{} vs {payload}",
        f.throughput_bps
    );
    assert!(
        f.bytes <= f.sent * 1448 && f.sent < whole.sent,
        "{} {}",
        f.bytes,
        f.sent
    );
    assert_eq!(whole.duration_s, 25.0);
}
