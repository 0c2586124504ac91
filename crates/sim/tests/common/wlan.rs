//! What the 004 WLAN figure tests share: the TCP link services they sweep (with timers suited
//! to the 5 Mbit/s, 3 ms hop) and 004 Table I's WLAN loss points.

pub const RAW: &str = r#"{ name = "tcp", scheme = "raw" }"#;
pub const GBN: &str = r#"{ name = "tcp", scheme = "go_back_n", timeout_ms = 20 }"#;
pub const SR: &str =
    r#"{ name = "tcp", scheme = "selective_repeat", timeout_ms = 20, nack_interval_ms = 15 }"#;
pub const KARN: &str = r#"{ name = "tcp", scheme = "karn_rlp", max_retransmissions = 3, nack_interval_ms = 15, keepalive_interval_ms = 10, gap_wait_ms = 60 }"#;
pub const SNOOP: &str = r#"{ name = "tcp", scheme = "snoop" }"#;
/// (short name, service table) of every scheme the figures compare.
pub const SCHEMES: [(&str, &str); 5] = [
    ("raw", RAW),
    ("gbn", GBN),
    ("sr", SR),
    ("karn", KARN),
    ("snoop", SNOOP),
];
/// 004 Table I WLAN: frame loss and the mean error interval (bytes) that gives it.
pub const WLAN_LOSS: [(&str, &str); 4] = [
    ("0.8%", "131072"),
    ("1.5%", "65536"),
    ("3%", "32768"),
    ("5.9%", "16384"),
];

/// `sc` with `sets` applied and validated.
pub fn overridden(sc: &mslink_sim::Scenario, sets: &[(&str, &str)]) -> mslink_sim::Scenario {
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let s = sc.with_overrides(&sets).unwrap();
    s.validate().unwrap();
    s
}
