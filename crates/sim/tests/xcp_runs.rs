//! 001 Fig. 1 through the simulator: TCP and XCP over one 802.11b link as the XCP router's
//! capacity estimate varies, for a fast and a slow NIC (scenarios/001/fig1_tcp_xcp.toml).

use mslink_sim::{run, Scenario};

fn throughput(xcp: bool, estimate_bps: u64, nic_delay_us: u64) -> f64 {
    let sc = Scenario::parse(include_str!("../../../scenarios/001/fig1_tcp_xcp.toml")).unwrap();
    let sets: Vec<(String, String)> = [
        ("flow.0.tcp.xcp", xcp.to_string()),
        ("host.0.xcp_capacity_bps", estimate_bps.to_string()),
        ("host.0.nic_delay_us", nic_delay_us.to_string()),
        ("host.1.nic_delay_us", nic_delay_us.to_string()),
        ("flow.0.size_bytes", "4000000".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let sc = sc.with_overrides(&sets).unwrap();
    sc.validate().unwrap();
    let f = run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces")))
        .unwrap()
        .flows
        .remove(0);
    assert!(
        f.completed,
        "xcp={xcp} estimate={estimate_bps} nic={nic_delay_us}"
    );
    f.throughput_bps
}

#[test]
fn xcp_follows_the_estimate_and_the_nic_decides_who_wins() {
    const NIC1: u64 = 0;
    // A slow NIC: 750 µs at each host. (The scenario's NIC_3, 375 µs at each host, is mostly
    // hidden under the 802.11 DCF: a host answering after the MAC ACK skips the backoff that
    // NIC_1's immediate answers pay; docs/transports.md.)
    const NIC3: u64 = 750;
    // TCP ignores the estimate.
    let tcp3 = throughput(false, 1_000_000, NIC3);
    assert_eq!(tcp3, throughput(false, 11_000_000, NIC3));
    let tcp1 = throughput(false, 5_000_000, NIC1);
    assert!(
        tcp3 < 0.9 * tcp1,
        "the slower NIC costs TCP: {tcp1} vs {tcp3}"
    );
    // Underestimating: XCP holds its window near one segment. With the fast NIC one segment
    // per round trip nearly fills the link (001: NIC_1 peaks in this region) ...
    let xcp1_low = throughput(true, 1_000_000, NIC1);
    assert!(xcp1_low > 0.9 * tcp1, "NIC_1: XCP {xcp1_low} vs TCP {tcp1}");
    // ... with the slow NIC's longer round trip it does not, and XCP falls clearly below TCP:
    // the reversal 001 reports.
    let xcp3_low = throughput(true, 1_000_000, NIC3);
    assert!(xcp3_low < 0.9 * tcp3, "NIC_3: XCP {xcp3_low} vs TCP {tcp3}");
    // An estimate at or above the link's real rate lets the window open.
    let xcp3_high = throughput(true, 11_000_000, NIC3);
    assert!(
        xcp3_high > 1.1 * xcp3_low,
        "NIC_3: {xcp3_low} -> {xcp3_high}"
    );
}

/// An XCP router on an intermediate node's interface (`[[xcp_router]]`, 001 Fig. 3's access
/// point) governs a flow it forwards: over a 10 Mbit/s bottleneck behind a 100 Mbit/s access
/// link (40 ms round trip, so the window is many segments and not pinned at one), XCP's
/// efficiency controller holds the input rate to the router's capacity estimate, while TCP,
/// and XCP with no router on the path, fill the link.
#[test]
fn an_xcp_router_at_an_intermediate_node_holds_the_flow_to_its_estimate() {
    let base = r#"
[sim]
duration_s = 300
drain_s = 0
timeseries_window_s = 0

[[segment]]
kind = "wired"
rate_bps = 100000000
delay_ms = 5
queue_packets = 1000

[[segment]]
kind = "wired"
rate_bps = 10000000
delay_ms = 15
queue_packets = 1000

[[xcp_router]]
node = 1
segment = 1
capacity_bps = 4000000

[[flow]]
name = "bulk"
app = "ftp"
from = 0
to = 2
size_bytes = 5000000

[flow.tcp]
variant = "newreno"
mss = 1444
send_buffer_bytes = 1048576
recv_buffer_bytes = 1048576
delayed_ack = false
"#;
    let rate = |sets: &[(&str, &str)]| {
        let sets: Vec<(String, String)> = sets
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let sc = Scenario::parse(base)
            .unwrap()
            .with_overrides(&sets)
            .unwrap();
        sc.validate().unwrap();
        let f = run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces")))
            .unwrap()
            .flows
            .remove(0);
        assert!(f.completed, "{sets:?}");
        f.throughput_bps
    };
    let tcp = rate(&[]);
    assert!(tcp > 8e6, "TCP fills the 10 Mbit/s link: {tcp}");
    for estimate in [2e6, 4e6, 7e6] {
        let e = estimate.to_string();
        let x = rate(&[
            ("flow.0.tcp.xcp", "true"),
            ("xcp_router.0.capacity_bps", &e),
        ]);
        eprintln!("estimate {estimate}: XCP {x}");
        assert!(
            (x - estimate).abs() <= 0.15 * estimate,
            "XCP {x} against an estimate of {estimate}"
        );
    }
    // The control: the same XCP flow with the router's estimate above the link runs as fast
    // as TCP, so the limits above are the router's doing.
    let open = rate(&[
        ("flow.0.tcp.xcp", "true"),
        ("xcp_router.0.capacity_bps", "50000000"),
    ]);
    assert!(open > 8e6, "{open}");
}

/// `[[xcp_router]]` names a real intermediate node and one of its two segments.
#[test]
fn xcp_router_tables_are_checked() {
    let sc = Scenario::parse(include_str!(
        "../../../scenarios/001/fig3_socket_buffers.toml"
    ))
    .unwrap();
    for (key, value, want) in [
        ("xcp_router.0.node", "0", "xcp_router[0].node"),
        ("xcp_router.0.segment", "2", "xcp_router[0].segment"),
        (
            "xcp_router.0.capacity_bps",
            "0",
            "xcp_router[0].capacity_bps",
        ),
    ] {
        let bad = sc
            .with_overrides(&[(key.to_string(), value.to_string())])
            .unwrap();
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains(want), "{key} = {value}: {err}");
    }
}
