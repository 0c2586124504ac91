//! What `mslink graph` says about a link log besides its figure: Mahimahi's summary lines
//! (average capacity, throughput and utilisation, 95th percentile per-packet delay, as
//! `mm-throughput-graph` prints them), the notes about how the log was read, and the same
//! figures as one JSON document.
//!
//! Contract: [`LinkLogSummary::of`] computes the means over the log's duration
//! ([`LinkLogData::mean_mbps`]) and the delay quantiles (nearest rank); a log without capacity
//! lines is an unlimited link (no capacity, no utilisation). Nothing is printed here.

use crate::linklog_read::LinkLogData;

/// The figures of a link log.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkLogSummary {
    /// Mean capacity in Mbit/s (None without `#` lines, or for a log of one instant).
    pub capacity_mbps: Option<f64>,
    /// Mean arrivals in Mbit/s.
    pub arrivals_mbps: f64,
    /// Mean departures (throughput) in Mbit/s.
    pub departures_mbps: f64,
    /// Median per-packet delay in ms.
    pub delay_p50_ms: Option<u64>,
    /// 95th percentile per-packet delay in ms.
    pub delay_p95_ms: Option<u64>,
}

impl LinkLogSummary {
    /// The summary of `data`.
    pub fn of(data: &LinkLogData) -> LinkLogSummary {
        let c = &data.counts;
        LinkLogSummary {
            capacity_mbps: (c.opportunities > 0)
                .then(|| data.mean_mbps(c.capacity_bytes))
                .flatten(),
            arrivals_mbps: data.mean_mbps(c.arrival_bytes).unwrap_or(0.0),
            departures_mbps: data.mean_mbps(c.departure_bytes).unwrap_or(0.0),
            delay_p50_ms: data.delay_quantile_ms(0.5),
            delay_p95_ms: data.delay_quantile_ms(0.95),
        }
    }

    /// The notes on how log `name` was read (no base timestamp, skipped lines), one per line.
    pub fn notes(data: &LinkLogData, name: &str) -> String {
        let mut out = String::new();
        if data.base_ms.is_none() {
            out += &format!(
                "note: {name} has no `# base timestamp:` line; its times are taken as they are\n"
            );
        }
        if data.skipped > 0 {
            let first = data
                .first_skipped
                .as_ref()
                .map(|e| e.to_string())
                .unwrap_or_default();
            out += &format!(
                "note: skipped {} malformed line{} of {name} (the first: {first})\n",
                data.skipped,
                if data.skipped == 1 { "" } else { "s" }
            );
        }
        out
    }

    /// Mahimahi's summary lines, each ending in a newline.
    pub fn lines(&self) -> String {
        let departures = self.departures_mbps;
        let mut out = match self.capacity_mbps {
            Some(cap) => format!(
                "Average capacity: {cap:.2} Mbits/s\nAverage throughput: {departures:.2} Mbits/s ({:.1}% utilization)\n",
                100.0 * departures / cap
            ),
            None => format!(
                "Average throughput: {departures:.2} Mbits/s (no capacity lines: an unlimited link)\n"
            ),
        };
        if let Some(p) = self.delay_p95_ms {
            out += &format!("95th percentile per-packet delay: {p} ms\n");
        }
        out
    }

    /// The JSON document of `mslink graph --json` for log `name` read in windows of
    /// `window_ms`, drawn into `figure`.
    pub fn json(
        &self,
        data: &LinkLogData,
        name: &str,
        figure: &str,
        window_ms: u64,
    ) -> serde_json::Value {
        serde_json::json!({
            "log": name,
            "figure": figure,
            "window_ms": window_ms,
            "duration_s": data.duration_s(),
            "mean_capacity_mbps": self.capacity_mbps,
            "mean_arrivals_mbps": self.arrivals_mbps,
            "mean_departures_mbps": self.departures_mbps,
            "utilization": self.capacity_mbps.map(|c| self.departures_mbps / c),
            "delay_p50_ms": self.delay_p50_ms,
            "delay_p95_ms": self.delay_p95_ms,
            "counts": data.counts,
            "skipped_lines": data.skipped,
            "base_timestamp_ms": data.base_ms,
        })
    }
}
