//! What a run produces, and how the world's state becomes it.
//!
//! Contract. [`RunResult`] holds one row per flow ([`FlowResult`]: UDP applications and TCP
//! transfers alike), counters per segment and direction, the moving-window throughput series,
//! and the events executed; the world fills it once, at the end of the run.

use mslink_link::link::LinkStats;
use mslink_link::Instant;

use super::{Seg, Sink, World};
use crate::packet::{self, Stamp};
use crate::scenario::{AppKind, SegmentKind};

/// Results of one flow in one run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FlowResult {
    /// Flow name.
    pub flow: String,
    /// Application.
    pub app: String,
    /// Transport: `udp`, or the TCP variant (`reno`, `newreno`, `sack`), with `+cubic`
    /// when `congestion_control = "cubic"` (`sack+cubic`).
    pub transport: String,
    /// Services that carried it on each wireless segment, `/`-separated.
    pub service: String,
    /// Packets sent.
    pub sent: u64,
    /// Distinct packets received.
    pub received: u64,
    /// Extra copies received.
    pub duplicates: u64,
    /// Sent before the run ended and still queued or in the air then (they arrived after it,
    /// `world/settle.rs`): neither received nor lost (UDP; TCP: 0).
    pub unsent: u64,
    /// Bytes received (distinct packets).
    pub bytes: u64,
    /// Seconds from the flow's start to its stop.
    pub duration_s: f64,
    /// Received bits per second over the flow's active time.
    pub throughput_bps: f64,
    /// 1 - received / (sent - unsent).
    pub loss_rate: f64,
    /// Mean one-way delay, seconds (TCP: the sender's SRTT at the end).
    pub delay_mean_s: f64,
    /// Standard deviation of the delay, seconds (TCP: the sender's RTTVAR at the end).
    pub delay_std_s: f64,
    /// Smallest delay of any packet, seconds (UDP; a ping's is its minimum round trip, 001
    /// §III.A; TCP: 0).
    pub delay_min_s: f64,
    /// Median one-way delay, seconds (UDP; within 1%: `world/delays.rs`; an `ftp` flow: the
    /// median of its sender's SRTT read every 100 ms, as iperf3 `-i 0.1` reads the kernel's,
    /// `world/ftp.rs`; WWW: 0).
    pub delay_p50_s: f64,
    /// 95th percentile of the one-way delay, seconds (UDP; `ftp`: of the SRTT, as above).
    pub delay_p95_s: f64,
    /// 99th percentile of the one-way delay, seconds (UDP; `ftp`: of the SRTT, as above).
    pub delay_p99_s: f64,
    /// Interarrival jitter of RFC 3550 §6.4.1 at the end of the run, seconds (UDP; TCP: 0).
    pub jitter_s: f64,
    /// The most the link schedulers on the flow's path add to its delay beyond what it has
    /// alone, when its class's share covers its peak on every wireless hop (`budget.rs`);
    /// none otherwise, and for flows that are not real-time (`cbr`, `ping`).
    pub delay_bound_s: Option<f64>,
    /// Share of the packets sent (less `unsent`) that were lost or arrived after the playback
    /// point (`playback_ms`).
    pub playback_miss_rate: f64,
    /// TCP: segments retransmitted.
    pub retransmits: u64,
    /// TCP: retransmission timeouts.
    pub timeouts: u64,
    /// TCP: whether the last byte arrived before the run ended (UDP: always true).
    pub completed: bool,
    /// TCP: segments that reached an end they did not belong to, or did not parse.
    pub malformed: u64,
    /// WWW: transactions completed within the run (0 for other applications).
    pub transactions: u64,
}

/// How a summarised metric is read from a flow's row.
pub type FlowMetric = fn(&FlowResult) -> f64;

/// The metrics of a flow that `mslink sim`'s stats.csv and the Python `Result.stats()`
/// summarise over repetitions (mean and Student-t 95% interval, `crate::stats`), in order.
pub const SUMMARISED: [(&str, FlowMetric); 11] = [
    ("throughput_bps", |f| f.throughput_bps),
    ("loss_rate", |f| f.loss_rate),
    ("delay_mean_s", |f| f.delay_mean_s),
    ("delay_p50_s", |f| f.delay_p50_s),
    ("delay_p95_s", |f| f.delay_p95_s),
    ("delay_p99_s", |f| f.delay_p99_s),
    ("jitter_s", |f| f.jitter_s),
    ("playback_miss_rate", |f| f.playback_miss_rate),
    ("retransmits", |f| f.retransmits as f64),
    ("timeouts", |f| f.timeouts as f64),
    ("transactions", |f| f.transactions as f64),
];

/// Counters of one direction of one segment.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DirectionResult {
    /// Frames (wireless) or packets (wired) put on the medium.
    pub sent: u64,
    /// Bytes put on the medium.
    pub bytes: u64,
    /// Lost by the error model.
    pub lost: u64,
    /// Truncated by the error model.
    pub truncated: u64,
    /// Corrupted by the error model.
    pub corrupted: u64,
    /// Packets dropped by a wired queue (limit or AQM; `queue` has the causes).
    pub queue_drops: u64,
    /// The wired queue's counters: drops by cause, sojourn times (default for wireless).
    pub queue: mslink_channel::queue::QueueStats,
    /// Packets the link end refused from above (too large, service queue full).
    pub refused: u64,
    /// Packets that arrived during an outage of an `onoff` in drop mode (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outage_drops: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Results of one segment.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SegmentResult {
    /// Index.
    pub segment: usize,
    /// "wired" or "wireless".
    pub kind: String,
    /// Left to right, right to left.
    pub directions: [DirectionResult; 2],
    /// Link-layer counters of the left and right ends (wireless only).
    pub ends: Vec<LinkStats>,
}

/// One point of the moving-window throughput of a flow.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimePoint {
    /// End of the window, seconds.
    pub time_s: f64,
    /// Flow name.
    pub flow: String,
    /// Received bit/s over the window.
    pub throughput_bps: f64,
}

/// Everything one run produces. It reads back from its JSON (the result store of
/// `mslink-lab` keeps runs so).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    /// Repetition.
    pub rep: u32,
    /// Seed used (`mslink_channel::streams::rep_seed(scenario seed, rep)`).
    pub seed: u64,
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// Per segment.
    pub segments: Vec<SegmentResult>,
    /// Moving-window throughput.
    pub timeseries: Vec<TimePoint>,
    /// Events executed.
    pub events: u64,
    /// Simulated seconds.
    pub simulated_s: f64,
    /// Counters of the hosts that have a network-subsystem model (`[[host]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostResult>,
}

/// Counters of one host's network subsystem.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostResult {
    /// The node.
    pub node: usize,
    /// Its counters.
    #[serde(flatten)]
    pub stats: crate::host::HostStats,
}

impl World<'_, '_> {
    pub(super) fn service_names(&self, i: usize) -> String {
        let f = &self.sources[i];
        let mut p = Vec::new();
        if let Some(t) = &self.tcp[i] {
            p = t.probe();
        } else if let Some(w) = &self.www[i] {
            p = w.probe();
        } else {
            packet::build(
                &mut p,
                f.len,
                f.from,
                f.to,
                f.dscp,
                f.port,
                Stamp {
                    flow: i as u32,
                    seq: 0,
                    sent_ns: 0,
                },
            );
        }
        let (lo, hi) = (f.from.min(f.to), f.from.max(f.to));
        self.sc.segments[lo..hi]
            .iter()
            .filter(|s| s.kind == SegmentKind::Wireless)
            .map(|s| {
                let c = s.link_config();
                let default = c.default_index().unwrap_or(0);
                let names = c.service_names();
                let cl = mslink_link::classifier::Classifier::new(&c.rules, &names, default)
                    .expect("validated");
                names[cl.classify(&p).service].to_string()
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    pub(super) fn push_series(&self, out: &mut Vec<TimePoint>, flow: &str, s: &Sink) {
        let win = self.window.as_secs_f64();
        for (b, bytes) in s.window_bytes.iter().enumerate() {
            out.push(TimePoint {
                time_s: (b + 1) as f64 * win,
                flow: flow.to_string(),
                throughput_bps: *bytes as f64 * 8.0 / win,
            });
        }
    }

    /// The TCP and WWW flows' results at `end`, kept while datagram flows drain after a run
    /// that ended early; datagram sources stop sending.
    pub(super) fn freeze_tcp(&mut self, end: Instant) {
        self.frozen = (0..self.flows.len())
            .map(|i| self.tcp_result(i, end))
            .collect();
        for s in &mut self.sources {
            s.stop = s.stop.min(end);
        }
    }

    fn tcp_result(&self, i: usize, end: Instant) -> Option<FlowResult> {
        let name = &self.flows[i].0;
        if let Some(t) = &self.tcp[i] {
            return Some(t.result(name, self.service_names(i), end));
        }
        self.www[i]
            .as_ref()
            .map(|w| w.result(name, self.service_names(i), end))
    }

    pub(super) fn finish(mut self, rep: u32, seed: u64, end: Instant) -> RunResult {
        let mut flows = Vec::with_capacity(self.flows.len());
        let mut timeseries = Vec::new();
        let frozen = std::mem::take(&mut self.frozen);
        // Per flow entry; the expanded flows follow the entries in order, `count` each.
        let entry_bounds = self.sc.delay_bounds();
        let mut bounds = Vec::with_capacity(self.flows.len());
        for (e, f) in self.sc.flows.iter().enumerate() {
            bounds.extend(std::iter::repeat_n(
                entry_bounds.get(e).copied().flatten(),
                f.count,
            ));
        }
        for (i, (name, f)) in self.flows.iter().enumerate() {
            let s = &self.sinks[i];
            let tcp = match frozen.get(i) {
                Some(r) => r.clone(),
                None => self.tcp_result(i, end),
            };
            if let Some(r) = tcp {
                flows.push(r);
                self.push_series(&mut timeseries, &flows[i].flow, s);
                continue;
            }
            let sent = self.sent[i];
            let d = s.delays.summary();
            // A run that ended early (its transfers done, 004 §V) ends every flow with it.
            let cap = self.sc.sim.duration_s.min(end.as_secs_f64());
            let stop = if f.stop_s > 0.0 {
                f.stop_s.min(cap)
            } else {
                cap
            };
            let duration = (stop - self.sources[i].start_s).max(0.0);
            flows.push(FlowResult {
                flow: name.clone(),
                app: match f.app {
                    AppKind::Cbr => "cbr",
                    AppKind::Constant => "constant",
                    AppKind::Spray => "spray",
                    AppKind::Ping => "ping",
                    AppKind::Ftp => "ftp",
                    AppKind::Www => "www",
                }
                .into(),
                transport: "udp".into(),
                service: self.service_names(i),
                sent,
                received: s.received,
                duplicates: s.duplicates,
                bytes: s.bytes,
                duration_s: duration,
                throughput_bps: if duration > 0.0 {
                    s.bytes as f64 * 8.0 / duration
                } else {
                    0.0
                },
                // `loss_rate` and `playback_miss_rate`: by `settle`, which knows what was
                // still queued at the end.
                delay_mean_s: d.mean_s,
                delay_std_s: d.std_s,
                delay_min_s: d.min_s,
                delay_p50_s: d.p50_s,
                delay_p95_s: d.p95_s,
                delay_p99_s: d.p99_s,
                jitter_s: d.jitter_s,
                delay_bound_s: bounds.get(i).copied().flatten(),
                completed: true,
                ..FlowResult::default()
            });
            self.push_series(&mut timeseries, &flows[i].flow, s);
        }
        let segments = self.segment_results();
        let mut r = RunResult {
            rep,
            seed,
            flows: Vec::new(),
            segments,
            timeseries,
            events: self.q.executed(),
            simulated_s: end.as_secs_f64(),
            hosts: self
                .hosts
                .iter()
                .enumerate()
                .filter_map(|(node, h)| {
                    h.as_ref().map(|h| HostResult {
                        node,
                        stats: h.stats(),
                    })
                })
                .collect(),
        };
        self.settle(end, &mut flows);
        r.flows = flows;
        r
    }

    /// Each segment's counters: per direction (with a wired segment's queue), and per link
    /// end of a wireless one.
    fn segment_results(&self) -> Vec<SegmentResult> {
        self.segs
            .iter()
            .enumerate()
            .map(|(i, s)| SegmentResult {
                segment: i,
                kind: match s {
                    Seg::Wired(_) => "wired",
                    Seg::Wireless(_) => "wireless",
                }
                .into(),
                directions: {
                    let mut d = self.dirs[i].clone();
                    if let Seg::Wired(wd) = s {
                        for (dir, r) in d.iter_mut().enumerate() {
                            r.queue = wd.queue[dir].stats().clone();
                            r.queue_drops = r.queue.dropped;
                        }
                    }
                    d
                },
                ends: match s {
                    Seg::Wired(_) => Vec::new(),
                    Seg::Wireless(wl) => wl.ends.iter().map(|e| e.stats()).collect(),
                },
            })
            .collect()
    }
}
