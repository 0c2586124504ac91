//! Axis titles and units of results columns: one source for the CLI's sweep plots and for
//! `mslink.plot` in Python, so the same data get the same labels either way.
//!
//! Contract. [`metric_axis`] gives a per-flow column (`flows.csv`'s names) its axis title and
//! the divisor that turns stored values into the axis unit: rates in kbit/s or Mbit/s by the
//! largest value, shares in percent, seconds in milliseconds. What a column means depends on
//! the flows drawn ([`Flows`]): a TCP flow's `loss_rate` is the share of its segments that
//! were retransmissions and its `delay_mean_s` the sender's smoothed round-trip time, a
//! datagram flow's are its residual loss and one-way delay (docs/transports.md); a chart of
//! both kinds says so. [`key_title`] names a sweep key with the unit its suffix gives.

/// Which kinds of flow a chart draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flows {
    /// Some flow runs over TCP.
    pub tcp: bool,
    /// Some flow sends datagrams (UDP applications, pings).
    pub datagram: bool,
}

impl Flows {
    /// Adds a flow with transport `transport` as `flows.csv` names it: `"udp"` for datagram
    /// flows, the TCP variant otherwise (`"reno"`, `"sack+cubic"`, ...).
    pub fn add(&mut self, transport: &str) {
        if transport == "udp" {
            self.datagram = true;
        } else {
            self.tcp = true;
        }
    }
}

/// An axis: its title with the unit, and what a stored value is divided by to be drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The title, e.g. "residual loss (%)".
    pub title: String,
    /// Drawn value = stored value / `divisor`.
    pub divisor: f64,
}

/// Throughput axis unit for a largest value in bit/s.
pub fn rate_unit(max_bps: f64) -> (&'static str, f64) {
    if max_bps >= 1e7 {
        ("Mbit/s", 1e6)
    } else {
        ("kbit/s", 1e3)
    }
}

/// The title and unit of per-flow column `column` for a chart of `flows` whose largest value
/// is `max` (it picks the rate unit); `None` for a column that is not a metric.
pub fn metric_axis(column: &str, flows: Flows, max: f64) -> Option<Axis> {
    let by_kind = |datagram: &str, tcp: &str| -> String {
        match (flows.tcp, flows.datagram) {
            (true, false) => tcp.to_string(),
            (true, true) => format!("{datagram} (datagram flows) or {tcp} (TCP)"),
            _ => datagram.to_string(),
        }
    };
    let ms = |title: String| Axis {
        title: format!("{title} (ms)"),
        divisor: 1e-3,
    };
    let percent = |title: String| Axis {
        title: format!("{title} (%)"),
        divisor: 1e-2,
    };
    Some(match column {
        "throughput_bps" => {
            let (unit, divisor) = rate_unit(max);
            Axis {
                title: format!("throughput ({unit})"),
                divisor,
            }
        }
        "loss_rate" => percent(by_kind("residual loss", "retransmitted segments")),
        "playback_miss_rate" => percent("playback misses".into()),
        "delay_mean_s" => ms(by_kind("mean delay", "smoothed RTT")),
        "delay_std_s" => ms("delay standard deviation".into()),
        "delay_min_s" => ms("minimum delay".into()),
        "delay_p50_s" => ms("median delay".into()),
        "delay_p95_s" => ms("95th percentile delay".into()),
        "delay_p99_s" => ms("99th percentile delay".into()),
        "jitter_s" => ms("jitter".into()),
        "delay_bound_s" => ms("scheduler delay bound".into()),
        "duration_s" => Axis {
            title: "duration (s)".into(),
            divisor: 1.0,
        },
        "retransmits" | "timeouts" | "transactions" | "sent" | "received" | "duplicates"
        | "unsent" => Axis {
            title: column.to_string(),
            divisor: 1.0,
        },
        "bytes" => Axis {
            title: "bytes".into(),
            divisor: 1.0,
        },
        _ => return None,
    })
}

/// An axis title for a sweep key: its last named component with the unit its suffix gives,
/// after the component before it when the name is one generic word
/// (`segment.1.error.mean_bytes` -> "error mean (bytes)", `host.0.nic_delay_us` -> "nic delay
/// (us)").
pub fn key_title(k: &str) -> String {
    let parts: Vec<&str> = k
        .split('|')
        .next()
        .unwrap_or(k)
        .split('.')
        .filter(|p| p.parse::<usize>().is_err())
        .collect();
    let last = parts.last().copied().unwrap_or(k);
    let (stem, unit) = [
        ("_bytes", "bytes"),
        ("_bps", "bit/s"),
        ("_ms", "ms"),
        ("_us", "us"),
        ("_ns", "ns"),
        ("_s", "s"),
    ]
    .iter()
    .find_map(|(suffix, unit)| last.strip_suffix(suffix).map(|s| (s, Some(*unit))))
    .unwrap_or((last, None));
    // A lone generic word ("mean", "loss") says more with the component before it.
    let mut title = match parts.len() {
        n if n >= 2 && !stem.contains('_') => format!("{} {stem}", parts[n - 2]),
        _ => stem.to_string(),
    }
    .replace('_', " ");
    if let Some(u) = unit {
        title.push_str(&format!(" ({u})"));
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_columns_title_says_what_it_measures_for_the_flows_drawn() {
        let udp = Flows {
            datagram: true,
            ..Flows::default()
        };
        let tcp = Flows {
            tcp: true,
            ..Flows::default()
        };
        let both = Flows {
            tcp: true,
            datagram: true,
        };
        let loss = |f| metric_axis("loss_rate", f, 0.0).unwrap();
        assert_eq!(loss(udp).title, "residual loss (%)");
        assert_eq!(loss(udp).divisor, 0.01);
        assert_eq!(loss(tcp).title, "retransmitted segments (%)");
        assert!(loss(both).title.contains("(TCP)"));
        assert_eq!(
            metric_axis("delay_mean_s", tcp, 0.0).unwrap().title,
            "smoothed RTT (ms)"
        );
        let rate = |max| metric_axis("throughput_bps", udp, max).unwrap();
        assert_eq!(rate(2e6).title, "throughput (kbit/s)");
        assert_eq!(rate(2e7).divisor, 1e6);
        assert_eq!(metric_axis("flow", udp, 0.0), None);
    }

    #[test]
    fn udp_is_a_datagram_flow_and_every_other_transport_a_tcp_variant() {
        let mut f = Flows::default();
        f.add("udp");
        assert_eq!((f.tcp, f.datagram), (false, true));
        f.add("sack+cubic");
        assert_eq!((f.tcp, f.datagram), (true, true));
    }

    #[test]
    fn key_titles_carry_the_unit_of_their_suffix() {
        assert_eq!(
            key_title("segment.1.error.mean_bytes"),
            "error mean (bytes)"
        );
        assert_eq!(
            key_title("segment.0.error.loss|segment.2.error.loss"),
            "error loss"
        );
        assert_eq!(key_title("host.0.nic_delay_us"), "nic delay (us)");
    }
}
