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
    let f = run(&sc, 0, &mut |_| Err("no traces".into()))
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
