//! Scenarios: what to simulate, as TOML.
//!
//! Contract. A scenario is a path of nodes `0..=N` joined by `N` segments, each wired
//! (rate or capacity trace, delay model, a queue discipline of `mslink_channel::queue`, on/off
//! outages) or wireless (a multi-service link at each end, a MAC of a given rate, optionally
//! 802.11b's DCF, a delay model and an error model per direction), hosts with their network
//! subsystem (001) and XCP routers, plus flows between nodes: UDP applications (CBR, constant,
//! spray, ping), TCP transfers (`ftp`) and WWW browsing; or instead 003's cell (`[cell]`). [`Scenario::parse`] reads the text directly, so a mistake is reported with its line,
//! column and key; [`Scenario::with_overrides`] applies `--set key=value` overrides (dotted
//! paths, array indices as numbers) and [`Scenario::sweep_points`] expands a `[sweep]` grid.
//! Every number is validated before a run starts.
//!
//! ```toml
//! [sim]
//! duration_s = 100
//! seed = 1
//!
//! [[segment]]                    # node 0 (wired host) to node 1 (base station)
//! kind = "wired"
//! rate_bps = 10000000
//! delay_ms = 1
//!
//! [[segment]]                    # node 1 to node 2 (wireless host): 004 Table I WLAN
//! kind = "wireless"
//! preset = "wlan"
//! error = { model = "exponential", mean_bytes = 32768 }
//! [segment.link]
//! seq_bits = 8
//! [[segment.link.service]]
//! name = "cbr"
//! scheme = "oos_rlp"
//!
//! [[flow]]
//! name = "audio"
//! app = "cbr"
//! from = 0
//! to = 2
//! rate_bps = 1000000
//! packet_bytes = 1000
//! ```

use mslink_channel::ErrorModelConfig;
use mslink_link::config::LinkConfig;

use crate::overrides;

/// What validation hands an error model in place of a trace file: the file itself is read (and
/// its entries checked) when a run loads it; validation checks every other setting.
pub(crate) const TRACE_STAND_IN: &str = "ok\n";

/// The whole scenario.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Run control.
    #[serde(default)]
    pub sim: SimConfig,
    /// Segments of the path, node `i` to node `i + 1`.
    #[serde(rename = "segment", default)]
    pub segments: Vec<Segment>,
    /// A centralized poll/response cell (003 §5-7) instead of a path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<crate::cell::CellConfig>,
    /// Traffic.
    #[serde(rename = "flow", default)]
    pub flows: Vec<Flow>,
    /// Network subsystems of end hosts (001 §III.A); hosts without one hand packets to their
    /// device at once.
    #[serde(rename = "host", default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostSpec>,
    /// XCP routers on intermediate nodes' interfaces (001 Fig. 3: the access point's wireless
    /// interface in the download case).
    #[serde(rename = "xcp_router", default, skip_serializing_if = "Vec::is_empty")]
    pub xcp_routers: Vec<XcpRouterSpec>,
    /// Parameter grid: dotted key -> values; each combination is one run (times `reps`).
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub sweep: toml::Table,
}

/// One point of a `[sweep]` grid: the index of its value in each sweep key's array, and the
/// overrides (key, TOML text) that make it.
pub type SweepPoint = (Vec<usize>, Vec<(String, String)>);

/// The network subsystem of one end host.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// The node: an end of the path (0 or the last node).
    pub node: usize,
    /// The model.
    #[serde(flatten)]
    pub config: crate::host::HostConfig,
}

/// An XCP router's control law on one interface of an intermediate node.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XcpRouterSpec {
    /// The node: neither end of the path (an end host's own interface is
    /// `[[host]] xcp_capacity_bps`).
    pub node: usize,
    /// The segment the interface sends onto: `node - 1` (leftward) or `node` (rightward).
    pub segment: usize,
    /// The capacity the router believes the link has, bit/s (001 sweeps it).
    pub capacity_bps: f64,
}

/// Run control.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Name used in result files.
    pub name: String,
    /// Simulated seconds of traffic.
    pub duration_s: f64,
    /// Seconds after the traffic stops during which recovery may still finish.
    pub drain_s: f64,
    /// Scenario seed; repetition 0 uses it, repetition `r` its own independent seed
    /// (`mslink_channel::streams::rep_seed`).
    pub seed: u64,
    /// Repetitions.
    pub reps: u32,
    /// Window of the moving-average throughput in `timeseries.csv`, seconds (0 = none).
    pub timeseries_window_s: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            name: "scenario".into(),
            duration_s: 60.0,
            drain_s: 10.0,
            seed: 1,
            reps: 1,
            timeseries_window_s: 1.0,
        }
    }
}

/// What kind of segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    /// A wired point-to-point link with a drop-tail queue.
    Wired,
    /// A wireless hop carrying a multi-service link.
    Wireless,
}

/// A wireless link type of 004 Table I.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// GSM HSCSD: 86.4 kbit/s, 100 ms, 100-byte frames.
    Hscsd,
    /// IEEE 802.11b as 004 simulated it: 5 Mbit/s, 3 ms, 1000-byte frames.
    Wlan,
}

impl Preset {
    /// (rate bit/s, one-way delay ms, frame bytes) of 004 Table I.
    pub fn figures(self) -> (f64, f64, usize) {
        match self {
            Preset::Hscsd => (86_400.0, 100.0, 100),
            Preset::Wlan => (5_000_000.0, 3.0, 1000),
        }
    }
}

/// One segment of the path.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    /// Wired or wireless.
    pub kind: SegmentKind,
    /// A 004 Table I link type giving rate, delay and frame size (wireless only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<Preset>,
    /// Rate in bit/s (overrides the preset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
    /// One-way propagation delay in ms (overrides the preset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<f64>,
    /// Wireless frame size in bytes, framing included (overrides the preset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_bytes: Option<usize>,
    /// Wired queue limit in packets (ns-2's default is 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<usize>,
    /// Wired only: the queue's discipline (droptail, drophead, codel, pie, fq_codel;
    /// `mslink_channel::queue`, the emulator's too). Default droptail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<mslink_channel::queue::Discipline>,
    /// Wired only: queue limit in bytes (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<usize>,
    /// Wired only: CoDel/PIE/FQ-CoDel parameters (default: the RFCs').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<mslink_channel::queue::AqmParams>,
    /// Deviation of the delay's jitter, ms (`mslink_channel::delay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// Distribution of the jitter (default normal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_dist: Option<mslink_channel::delay::JitterDist>,
    /// Whether jitter may reorder packets (wireless: frames) (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<bool>,
    /// On/off outages of one or both directions (wireless: the MAC waits); packets arriving
    /// during one wait or, in drop mode (Mahimahi's mm-onoff), are dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onoff: Option<mslink_channel::delay::OnOffConfig>,
    /// Error model of both directions (independent processes, same parameters).
    #[serde(default)]
    pub error: ErrorModelConfig,
    /// Error model of the right-to-left direction, if it differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reverse: Option<ErrorModelConfig>,
    /// The multi-service link at both ends (wireless only). Its `frame_size` comes from the
    /// segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkConfig>,
    /// Wireless only: 802.11b DCF timing (001 §III.A). Each frame then occupies the medium for a
    /// whole exchange (DIFS, backoff, preamble, data, SIFS, MAC ACK) and both directions share
    /// one half-duplex medium; `rate_bps` is unused for frame timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dot11b: Option<mslink_channel::airtime::Dot11b>,
}

/// What a flow's source does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppKind {
    /// 004 §III.D continuous media: CBR during exponential talk spurts, silent in between.
    Cbr,
    /// Constant rate, always on.
    Constant,
    /// 003 §4's UDP spray: packets back to back at the line rate of the first segment on the
    /// path (`rate_bps` is ignored), whatever is lost; only arrivals count.
    Spray,
    /// Echo requests at `rate_bps`; the destination answers each one, and the source records
    /// the round-trip time in the flow's delay columns.
    Ping,
    /// A bulk transfer of `size_bytes` over TCP (004 §III.B), tuned by the flow's `[tcp]`
    /// table; throughput is application bytes over the time to the last byte.
    Ftp,
    /// WWW browsing (004 §III.C) between a server (`from`) and a client (`to`): one
    /// transaction at a time, no pauses, sizes from the flow's `[www]` table; throughput is
    /// the server-to-client application bytes over the time to the end of the last completed
    /// transaction.
    Www,
}

/// One UDP flow.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Flow {
    /// Name in results (and the seed stream of its source).
    pub name: String,
    /// Source behaviour.
    pub app: AppKind,
    /// Source node.
    pub from: usize,
    /// Destination node.
    pub to: usize,
    /// Sending rate while on, bit/s of IP packets (not used by `spray`).
    pub rate_bps: f64,
    /// IP packet size in bytes (headers included).
    pub packet_bytes: usize,
    /// Mean talk spurt, seconds (cbr).
    pub talk_s: f64,
    /// Mean silence, seconds (cbr).
    pub silence_s: f64,
    /// Playback point: packets later than this after sending count as missed, ms.
    pub playback_ms: f64,
    /// DS codepoint in the IP header (for classifier rules).
    pub dscp: u8,
    /// UDP destination port (for classifier rules); 0 picks 48000 + flow index
    /// (`packet::APP_PORT_BASE`).
    pub port: u16,
    /// Start, seconds.
    pub start_s: f64,
    /// Stop, seconds (0 = end of the run); `ftp`: the end of the flow's measurement, as
    /// iperf3's receiver ends its own (`world/ftp.rs`).
    pub stop_s: f64,
    /// Independent copies of this flow (named `name#k`, each with its own seed stream).
    pub count: usize,
    /// When the copies start: all at `start_s` when absent, else `start_s` plus a draw from
    /// this distribution per copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<StartDist>,
    /// Application bytes to transfer (`ftp`).
    pub size_bytes: u64,
    /// TCP tuning (`ftp`, `www`): variant, MSS, timers, buffers, delayed ACKs.
    pub tcp: crate::tcp::TcpConfig,
    /// The WWW workload (`www`): request, page and object sizes, objects per page.
    pub www: crate::www_model::WwwModel,
    /// `www`: keep one TCP connection per direction open across transactions (`true`), or
    /// open a new one for every request and every reply (`false`, as HTTP/1.0).
    pub persistent: bool,
}

impl Default for Flow {
    fn default() -> Self {
        Flow {
            name: String::new(),
            app: AppKind::Cbr,
            from: 0,
            to: 1,
            rate_bps: 1_000_000.0,
            packet_bytes: 1000,
            talk_s: 1.0,
            silence_s: 1.35,
            playback_ms: 250.0,
            dscp: 0,
            port: 0,
            start_s: 0.0,
            stop_s: 0.0,
            count: 1,
            start: None,
            size_bytes: 0,
            tcp: crate::tcp::TcpConfig::default(),
            www: crate::www_model::WwwModel::default(),
            persistent: true,
        }
    }
}

/// How the copies of a flow (`count`) spread their starts after `start_s`. The draws come from
/// the entry's own random stream (`flow[e].start`, from the run's seed), in copy order, so
/// they change with the seed and nothing else.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum StartDist {
    /// Copy `k` starts at `start_s + U_k`, `U_k` uniform on [0, `spread_s`): the copies start
    /// independently within a window (as ns-3 examples start their applications).
    Uniform {
        /// Width of the window, seconds.
        spread_s: f64,
    },
    /// The copies arrive as a Poisson process from `start_s`: copy `k` starts at
    /// `start_s + G_0 + ... + G_k`, gaps `G` exponential with mean `mean_gap_s` (open-loop
    /// flow arrivals).
    Exponential {
        /// Mean time between two copies' starts, seconds.
        mean_gap_s: f64,
    },
}

impl StartDist {
    /// What is wrong with the distribution's parameter, if anything: (field, message).
    fn check(&self) -> Result<(), (&'static str, String)> {
        let (key, v) = match self {
            StartDist::Uniform { spread_s } => ("spread_s", *spread_s),
            StartDist::Exponential { mean_gap_s } => ("mean_gap_s", *mean_gap_s),
        };
        if v > 0.0 && v.is_finite() {
            Ok(())
        } else {
            Err((
                key,
                format!("must be a positive number of seconds, got {v}"),
            ))
        }
    }
}

/// A scenario that cannot run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// The TOML does not parse or does not fit the schema (line, column and key included).
    #[error("{0}")]
    Syntax(String),
    /// A value is out of range.
    #[error("key `{key}`: {what}")]
    Invalid {
        /// Dotted key.
        key: String,
        /// What is wrong and what was expected.
        what: String,
    },
}

impl From<overrides::OverrideError> for ScenarioError {
    fn from(e: overrides::OverrideError) -> Self {
        ScenarioError::Invalid {
            key: e.key,
            what: e.what,
        }
    }
}

fn invalid(key: impl Into<String>, what: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid {
        key: key.into(),
        what: what.into(),
    }
}

impl Scenario {
    /// Every flow with its copies expanded: (name, flow), in scenario order.
    pub fn expanded_flows(&self) -> Vec<(String, &Flow)> {
        let mut out = Vec::with_capacity(self.flows.iter().map(|f| f.count).sum());
        for (i, f) in self.flows.iter().enumerate() {
            let base = if f.name.is_empty() {
                format!("flow{i}")
            } else {
                f.name.clone()
            };
            for k in 0..f.count {
                out.push((
                    if f.count == 1 {
                        base.clone()
                    } else {
                        format!("{base}#{k}")
                    },
                    f,
                ));
            }
        }
        out
    }

    /// The trace files the error models name (segments in order, both directions, then the
    /// cell's stations), each once, as written: relative to the scenario's folder.
    pub fn trace_files(&self) -> Vec<String> {
        let segments = self
            .segments
            .iter()
            .flat_map(|s| std::iter::once(&s.error).chain(s.error_reverse.as_ref()));
        let stations = self
            .cell
            .iter()
            .flat_map(|c| c.stations.iter().map(|s| &s.error));
        let mut out: Vec<String> = Vec::new();
        for model in segments.chain(stations) {
            for f in model.trace_files() {
                if !out.iter().any(|o| o == f) {
                    out.push(f.to_string());
                }
            }
        }
        out
    }

    /// Parses scenario text.
    pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        toml::from_str(text).map_err(|e| ScenarioError::Syntax(e.to_string()))
    }

    /// This scenario with `key=value` overrides applied, under the rules of
    /// [`crate::overrides`] (dotted keys; array elements by index; values in TOML syntax, bare
    /// words taken as strings).
    pub fn with_overrides(&self, sets: &[(String, String)]) -> Result<Scenario, ScenarioError> {
        let mut v =
            toml::Value::try_from(self).map_err(|e| ScenarioError::Syntax(e.to_string()))?;
        for (k, val) in sets {
            overrides::set_path(&mut v, k, overrides::parse_value(val))?;
        }
        v.try_into().map_err(|e: toml::de::Error| {
            ScenarioError::Syntax(format!(
                "after overrides: {}",
                overrides::explain(&e.to_string(), sets)
            ))
        })
    }

    /// The override sets of every point of the `[sweep]` grid (one empty set without a grid),
    /// in a fixed order: keys sorted, the last key varying fastest. A key may name several
    /// paths separated by `|` (e.g. both wireless segments of a path), all set to each value.
    pub fn sweep_points(&self) -> Result<Vec<Vec<(String, String)>>, ScenarioError> {
        Ok(self.sweep_grid()?.into_iter().map(|(_, p)| p).collect())
    }

    /// [`Scenario::sweep_points`] with, for each point, the index of its value in each sweep
    /// key's array (keys in `sweep`'s order), so a caller can name a point by its values.
    pub fn sweep_grid(&self) -> Result<Vec<SweepPoint>, ScenarioError> {
        let mut points: Vec<SweepPoint> = vec![(Vec::new(), Vec::new())];
        for (key, values) in &self.sweep {
            let toml::Value::Array(values) = values else {
                return Err(invalid(
                    format!("sweep.{key}"),
                    "expected an array of values",
                ));
            };
            if values.is_empty() {
                return Err(invalid(format!("sweep.{key}"), "needs at least one value"));
            }
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.iter().enumerate().map(move |(i, v)| {
                        let mut q = p.clone();
                        q.0.push(i);
                        // One key may name several paths, `a|b`, set to the same value.
                        for path in key.split('|') {
                            q.1.push((path.trim().to_string(), v.to_string()));
                        }
                        q
                    })
                })
                .collect();
        }
        Ok(points)
    }

    /// Consequences of a valid scenario a user may not expect (a service that segments
    /// packets, a window clamped by its sequence space, ELF reservations beyond 003 §6.3's
    /// admission condition; see `LinkConfig::notes`; a real-time class whose peak load on the
    /// air exceeds its scheduler share, `budget.rs`; an error model that never leaves a state,
    /// `ErrorModelConfig::notes`; a flow that starts after the traffic ends), each naming its
    /// segment, flow or the cell.
    pub fn notes(&self) -> Vec<String> {
        let cell = self.cell.iter().flat_map(|c| {
            c.scheduler
                .notes()
                .into_iter()
                .map(|n| format!("cell.scheduler: {n}"))
        });
        let errors = self.segments.iter().enumerate().flat_map(|(i, seg)| {
            [
                ("error", Some(&seg.error)),
                ("error_reverse", seg.error_reverse.as_ref()),
            ]
            .into_iter()
            .filter_map(|(k, m)| Some((k, m?)))
            .flat_map(move |(k, m)| {
                m.notes()
                    .into_iter()
                    .map(move |n| format!("segment[{i}].{k}: {n}"))
            })
        });
        self.segments
            .iter()
            .enumerate()
            .filter(|(_, seg)| seg.kind == SegmentKind::Wireless)
            .flat_map(|(i, seg)| {
                seg.link_config()
                    .notes()
                    .into_iter()
                    .map(move |n| format!("segment[{i}].link: {n}"))
            })
            .chain(errors)
            .chain(self.idle_flow_notes())
            .chain(cell)
            .chain(self.budget_notes())
            .collect()
    }

    /// A flow that starts at or after the end of the traffic (`sim.duration_s`) sends nothing:
    /// worth a word, since it is more often a slip than a way to leave a flow out.
    fn idle_flow_notes(&self) -> Vec<String> {
        let end = self.sim.duration_s;
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.start.is_none() && f.start_s >= end)
            .map(|(i, f)| {
                let name = if f.name.is_empty() { format!("flow{i}") } else { f.name.clone() };
                format!(
                    "flow[{i}] `{name}` starts at {} s, not before the run's {end} s of traffic end: \
                     it sends nothing",
                    f.start_s
                )
            })
            .collect()
    }

    /// Checks every value a run needs.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.validate_sim()?;
        if let Some(cell) = &self.cell {
            if !self.segments.is_empty() || !self.flows.is_empty() {
                return Err(invalid(
                    "cell",
                    "a cell scenario has its flows in [[cell.flow]] and no [[segment]] or [[flow]]",
                ));
            }
            return cell.validate();
        }
        if self.segments.is_empty() {
            return Err(invalid(
                "segment",
                "a scenario needs at least one [[segment]] (or a [cell])",
            ));
        }
        for (i, seg) in self.segments.iter().enumerate() {
            Self::validate_segment(i, seg)?;
        }
        let nodes = self.segments.len() + 1;
        if nodes > crate::packet::MAX_NODES {
            return Err(invalid(
                "segment",
                format!(
                    "{} segments make {nodes} nodes; at most {} nodes ({} segments) fit the \
                     simulator's addresses (node n is 10.x.y.(n+1))",
                    self.segments.len(),
                    crate::packet::MAX_NODES,
                    crate::packet::MAX_NODES - 1
                ),
            ));
        }
        for (i, seg) in self.segments.iter().enumerate() {
            if let Some(d) = &seg.dot11b {
                if seg.kind != SegmentKind::Wireless {
                    return Err(invalid(
                        format!("segment[{i}].dot11b"),
                        "802.11b timing needs kind = \"wireless\"",
                    ));
                }
                d.validate()
                    .map_err(|e| invalid(format!("segment[{i}].dot11b"), e.to_string()))?;
            }
        }
        self.validate_hosts(nodes)?;
        self.validate_xcp_routers(nodes)?;
        self.validate_flows(nodes)
    }

    /// Checks `[sim]`.
    fn validate_sim(&self) -> Result<(), ScenarioError> {
        let s = &self.sim;
        if !(s.duration_s > 0.0 && s.duration_s.is_finite()) {
            return Err(invalid(
                "sim.duration_s",
                format!("must be a positive number of seconds, got {}", s.duration_s),
            ));
        }
        if !(s.drain_s >= 0.0 && s.drain_s.is_finite()) {
            return Err(invalid(
                "sim.drain_s",
                format!("must be zero or more seconds, got {}", s.drain_s),
            ));
        }
        // The clock counts u64 nanoseconds: a longer run would stop the clock at its end
        // (issue 16: `duration_s = 1e12` ran silently).
        let max = crate::resources::MAX_SIMULATED_S;
        if s.duration_s + s.drain_s > max {
            // Named after the larger of the two, the one to lower.
            let key = if s.drain_s > s.duration_s {
                "sim.drain_s"
            } else {
                "sim.duration_s"
            };
            return Err(invalid(
                key,
                format!(
                    "{} s of traffic and {} s of drain are beyond the simulator's clock, which \
                     counts 64-bit nanoseconds: at most {max:.4e} s (584 years) in all",
                    s.duration_s, s.drain_s
                ),
            ));
        }
        if s.reps == 0 {
            return Err(invalid("sim.reps", "must be at least 1"));
        }
        Ok(())
    }

    /// Checks segment `i`.
    fn validate_segment(i: usize, seg: &Segment) -> Result<(), ScenarioError> {
        let k = |f: &str| format!("segment[{i}].{f}");
        let rate = seg.rate();
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(invalid(
                k("rate_bps"),
                format!("must be a positive rate in bit/s, got {rate}"),
            ));
        }
        let delay = seg.delay_ms();
        if !(delay >= 0.0 && delay.is_finite()) {
            return Err(invalid(
                k("delay_ms"),
                format!("must be zero or more, got {delay}"),
            ));
        }
        match seg.kind {
            SegmentKind::Wired => {
                if seg.link.is_some() || seg.preset.is_some() {
                    return Err(invalid(
                        k("link"),
                        "a wired segment has no link layer or preset; use kind = \"wireless\"",
                    ));
                }
                if seg.queue_packets == Some(0) {
                    return Err(invalid(k("queue_packets"), "must be at least 1"));
                }
                // A wired segment has no frames to corrupt: an error model there would
                // be silently ignored, so it is refused.
                for (key, m) in [
                    ("error", Some(&seg.error)),
                    ("error_reverse", seg.error_reverse.as_ref()),
                ] {
                    if m.is_some_and(|m| *m != ErrorModelConfig::Perfect) {
                        return Err(invalid(
                            k(key),
                            "a wired segment loses packets only in its queue; error models \
                             apply to wireless segments (kind = \"wireless\", e.g. with one \
                             raw service)",
                        ));
                    }
                }
                seg.queue_config()
                    .validate()
                    .map_err(|e| invalid(k(&e.key), e.what))?;
            }
            SegmentKind::Wireless => {
                let wired_only = [
                    ("queue", seg.queue.is_some()),
                    ("queue_bytes", seg.queue_bytes.is_some()),
                    ("aqm", seg.aqm.is_some()),
                ];
                if let Some((key, _)) = wired_only.iter().find(|(_, set)| *set) {
                    return Err(invalid(
                        k(key),
                        "queue disciplines apply to wired segments; a wireless segment's \
                         queues are its link ends' services",
                    ));
                }
                seg.link_config()
                    .validate()
                    .map_err(|e| invalid(k("link"), e.to_string()))?;
            }
        }
        if let Some(j) = seg.jitter_ms {
            if !(j.is_finite() && j >= 0.0) {
                return Err(invalid(
                    k("jitter_ms"),
                    format!("must be zero or more, got {j}"),
                ));
            }
        }
        if let Some(o) = &seg.onoff {
            o.validate("")
                .map_err(|e| invalid(k(&format!("onoff.{}", e.key)), e.what))?;
        }
        seg.error
            .build(&mut |_| Ok(TRACE_STAND_IN.into()))
            .map_err(|e| invalid(k("error"), e.to_string()))?;
        Ok(())
    }

    /// Checks the `[[host]]` tables of a path of `nodes` nodes.
    fn validate_hosts(&self, nodes: usize) -> Result<(), ScenarioError> {
        for (i, h) in self.hosts.iter().enumerate() {
            if h.node != 0 && h.node != nodes - 1 {
                return Err(invalid(
                    format!("host[{i}].node"),
                    format!(
                        "{} is not an end host; the path's hosts are nodes 0 and {}",
                        h.node,
                        nodes - 1
                    ),
                ));
            }
            if self.hosts[..i].iter().any(|o| o.node == h.node) {
                return Err(invalid(
                    format!("host[{i}].node"),
                    format!("node {} has two [[host]] tables", h.node),
                ));
            }
            h.config
                .validate()
                .map_err(|e| invalid(format!("host[{i}]"), e.to_string()))?;
        }
        Ok(())
    }

    /// Checks the `[[xcp_router]]` tables of a path of `nodes` nodes.
    fn validate_xcp_routers(&self, nodes: usize) -> Result<(), ScenarioError> {
        for (i, r) in self.xcp_routers.iter().enumerate() {
            let k = |x: &str| format!("xcp_router[{i}].{x}");
            if r.node == 0 || r.node >= nodes - 1 {
                return Err(invalid(
                    k("node"),
                    format!(
                        "{} is not an intermediate node (1 to {}); an end host's own interface \
                         takes `xcp_capacity_bps` in its [[host]] table",
                        r.node,
                        nodes.saturating_sub(2)
                    ),
                ));
            }
            if r.segment != r.node && r.segment + 1 != r.node {
                return Err(invalid(
                    k("segment"),
                    format!(
                        "node {} sends onto segment {} or {}, not {}",
                        r.node,
                        r.node - 1,
                        r.node,
                        r.segment
                    ),
                ));
            }
            if !(r.capacity_bps.is_finite() && r.capacity_bps > 0.0) {
                return Err(invalid(
                    k("capacity_bps"),
                    format!("must be a positive rate, got {}", r.capacity_bps),
                ));
            }
            if self.xcp_routers[..i]
                .iter()
                .any(|o| (o.node, o.segment) == (r.node, r.segment))
            {
                return Err(invalid(
                    k("segment"),
                    format!(
                        "node {} has two XCP routers toward segment {}",
                        r.node, r.segment
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the flows of a path of `nodes` nodes, and their number.
    fn validate_flows(&self, nodes: usize) -> Result<(), ScenarioError> {
        let mut total = 0usize;
        for (i, f) in self.flows.iter().enumerate() {
            self.validate_flow(i, f, nodes, &mut total)?;
        }
        Ok(())
    }

    /// Checks flow `i` of a path of `nodes` nodes; `total` counts the flows up to it.
    fn validate_flow(
        &self,
        i: usize,
        f: &Flow,
        nodes: usize,
        total: &mut usize,
    ) -> Result<(), ScenarioError> {
        let k = |x: &str| format!("flow[{i}].{x}");
        if f.from >= nodes || f.to >= nodes || f.from == f.to {
            return Err(invalid(
                k("to"),
                format!(
                    "from = {} and to = {} must be two different nodes among 0..={}",
                    f.from,
                    f.to,
                    nodes - 1
                ),
            ));
        }
        if !(f.rate_bps > 0.0 && f.rate_bps.is_finite()) {
            return Err(invalid(
                k("rate_bps"),
                format!("must be a positive rate, got {}", f.rate_bps),
            ));
        }
        if f.packet_bytes < crate::packet::MIN_PACKET || f.packet_bytes > 65_535 {
            return Err(invalid(
                k("packet_bytes"),
                format!(
                    "must be {}..=65535 (IP and UDP headers plus our 16-byte stamp), got {}",
                    crate::packet::MIN_PACKET,
                    f.packet_bytes
                ),
            ));
        }
        // The clock counts nanoseconds: a packet interval that rounds to zero would send
        // forever at one instant (issue 16: `rate_bps = 1e13` spun with no message).
        let interval_s = f.packet_bytes as f64 * 8.0 / f.rate_bps;
        if matches!(f.app, AppKind::Cbr | AppKind::Constant | AppKind::Ping) && interval_s < 1e-9 {
            return Err(invalid(
                k("rate_bps"),
                format!(
                    "{} bit/s sends a {}-byte packet every {interval_s:.3e} s, below the \
                     simulator's 1 ns clock: at most {:.3e} bit/s for this packet size",
                    f.rate_bps,
                    f.packet_bytes,
                    f.packet_bytes as f64 * 8.0 * 1e9
                ),
            ));
        }
        if f.app == AppKind::Cbr && !(f.talk_s > 0.0 && f.silence_s > 0.0) {
            return Err(invalid(
                k("talk_s"),
                "talk_s and silence_s must be positive for app = \"cbr\"",
            ));
        }
        if f.playback_ms.is_nan() || f.playback_ms <= 0.0 {
            return Err(invalid(
                k("playback_ms"),
                format!("must be positive, got {}", f.playback_ms),
            ));
        }
        if f.count == 0 {
            return Err(invalid(k("count"), "must be at least 1"));
        }
        *total = total.saturating_add(f.count);
        if *total > crate::packet::MAX_FLOWS {
            return Err(invalid(
                k("count"),
                format!(
                    "the flows up to this one number {total}; a scenario has at most {} \
                     (each flow has an address and port pair of its own)",
                    crate::packet::MAX_FLOWS
                ),
            ));
        }
        if let Some(d) = &f.start {
            d.check()
                .map_err(|(key, what)| invalid(k(&format!("start.{key}")), what))?;
        }
        if f.dscp > 63 {
            return Err(invalid(k("dscp"), format!("{} is outside 0-63", f.dscp)));
        }
        if f.app == AppKind::Ftp {
            self.validate_tcp(i, f)?;
        }
        if f.app == AppKind::Www {
            f.www
                .validate()
                .map_err(|e| invalid(k("www"), e.to_string()))?;
            self.validate_tcp_path(i, f)?;
            if f.persistent && f.tcp.variant == crate::tcp::Variant::Sack {
                return Err(invalid(
                    k("persistent"),
                    "persistent WWW connections need tcp.variant = \"reno\" or \"newreno\" (the SACK scoreboard assumes MSS-aligned segments); set persistent = false for SACK",
                ));
            }
        }
        Ok(())
    }
}

impl Scenario {
    fn validate_tcp(&self, i: usize, f: &Flow) -> Result<(), ScenarioError> {
        let k = |x: &str| format!("flow[{i}].{x}");
        if f.size_bytes == 0 {
            return Err(invalid(
                k("size_bytes"),
                "app = \"ftp\" needs the bytes to transfer (e.g. size_bytes = 2000000)",
            ));
        }
        self.validate_tcp_path(i, f)
    }

    /// The flow's TCP settings, and its segments fit the mtu of every wireless segment.
    fn validate_tcp_path(&self, i: usize, f: &Flow) -> Result<(), ScenarioError> {
        let k = |x: &str| format!("flow[{i}].{x}");
        f.tcp
            .validate()
            .map_err(|(key, what)| invalid(k(&format!("tcp.{key}")), what))?;
        let (lo, hi) = (f.from.min(f.to), f.from.max(f.to));
        for (j, seg) in self.segments[lo..hi].iter().enumerate() {
            if seg.kind == SegmentKind::Wireless {
                let mtu = seg.link_config().mtu;
                // XCP's congestion header is a 16-byte TCP option (with its two NOPs), the
                // timestamps one 12 bytes (RFC 7323 Appendix A).
                let headers = f.tcp.data_headers() as usize;
                let need = f.tcp.mss as usize + headers;
                if need > mtu {
                    return Err(invalid(
                        k("tcp.mss"),
                        format!(
                            "segments of {} bytes plus {headers} bytes of IPv4/TCP headers exceed the mtu {} of segment[{}]; use mss <= {}",
                            f.tcp.mss,
                            mtu,
                            lo + j,
                            mtu.saturating_sub(headers)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Segment {
    /// The queue of a wired segment (each direction has one).
    pub fn queue_config(&self) -> mslink_channel::queue::QueueConfig {
        mslink_channel::queue::QueueConfig {
            discipline: self.queue.unwrap_or_default(),
            packets: Some(self.queue_packets.unwrap_or(50)),
            bytes: self.queue_bytes,
            aqm: self.aqm.clone().unwrap_or_default(),
        }
    }

    /// The delay model of the segment's directions.
    pub fn delay_config(&self) -> mslink_channel::delay::DelayConfig {
        mslink_channel::delay::DelayConfig {
            base: mslink_link::Duration::from_secs_f64(self.delay_ms() / 1e3),
            jitter_ms: self.jitter_ms.unwrap_or(0.0),
            dist: self.jitter_dist.unwrap_or_default(),
            reorder: self.reorder.unwrap_or(false),
        }
    }

    /// Rate in bit/s.
    pub fn rate(&self) -> f64 {
        self.rate_bps
            .or(self.preset.map(|p| p.figures().0))
            .unwrap_or(10_000_000.0)
    }
    /// One-way delay in ms.
    pub fn delay_ms(&self) -> f64 {
        self.delay_ms
            .or(self.preset.map(|p| p.figures().1))
            .unwrap_or(1.0)
    }
    /// Wireless frame size in bytes.
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes
            .or(self.preset.map(|p| p.figures().2))
            .unwrap_or(1500)
    }
    /// The link configuration with the segment's frame size.
    pub fn link_config(&self) -> LinkConfig {
        let mut c = self.link.clone().unwrap_or_default();
        c.frame_size = self.frame_bytes();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_example() -> String {
        mslink_link::testkit::doc_toml_example(include_str!("scenario.rs"))
    }

    #[test]
    fn documented_example_is_valid() {
        let s = Scenario::parse(&doc_example()).unwrap();
        s.validate().unwrap();
        assert_eq!(s.segments[1].frame_bytes(), 1000);
        assert_eq!(s.segments[1].link_config().frame_size, 1000);
    }

    #[test]
    fn overrides_and_sweeps() {
        let s = Scenario::parse(&doc_example()).unwrap();
        let o = s
            .with_overrides(&[
                ("sim.seed".into(), "7".into()),
                ("segment.1.link.service.0.scheme".into(), "karn_rlp".into()),
                ("flow.0.rate_bps".into(), "2e6".into()),
            ])
            .unwrap();
        assert_eq!(o.sim.seed, 7);
        assert_eq!(o.flows[0].rate_bps, 2e6);
        assert_eq!(
            o.segments[1].link.as_ref().unwrap().services[0]
                .config
                .scheme(),
            "karn_rlp"
        );
        let e = s
            .with_overrides(&[("flow.3.rate_bps".into(), "1".into())])
            .unwrap_err();
        assert!(e.to_string().contains("flow.3"), "{e}");
        let mut g = s.clone();
        g.sweep.insert(
            "sim.seed".into(),
            toml::Value::Array(vec![1.into(), 2.into()]),
        );
        g.sweep.insert(
            "flow.0.packet_bytes".into(),
            toml::Value::Array(vec![500.into(), 1000.into(), 1500.into()]),
        );
        let pts = g.sweep_points().unwrap();
        assert_eq!(pts.len(), 6);
        let mut two = s.clone();
        two.sweep.insert(
            "flow.0.dscp|flow.0.port".into(),
            toml::Value::Array(vec![7.into()]),
        );
        assert_eq!(
            two.sweep_points().unwrap()[0],
            vec![
                ("flow.0.dscp".into(), "7".into()),
                ("flow.0.port".into(), "7".into())
            ]
        );
        assert_eq!(
            pts[0],
            vec![
                ("flow.0.packet_bytes".into(), "500".into()),
                ("sim.seed".into(), "1".into())
            ]
        );
    }

    #[test]
    fn errors_name_line_and_key() {
        let bad = |t: &str| {
            Scenario::parse(t)
                .and_then(|s| s.validate().map(|_| s))
                .unwrap_err()
                .to_string()
        };
        let base = doc_example();
        let e = bad(&base.replace("delay_ms = 1", "delay_ms = 1\nspeed = 3"));
        assert!(e.contains("line") && e.contains("speed"), "{e}");
        let e = bad(&base.replace("rate_bps = 10000000", "rate_bps = \"fast\""));
        assert!(e.contains("line") && e.contains("rate_bps"), "{e}");
        let e = bad(&base.replace("rate_bps = 10000000", "rate_bps = -5"));
        assert!(e.contains("segment[0].rate_bps"), "{e}");
        // A packet interval below the 1 ns clock would never let time advance.
        let e = bad(&base.replace("rate_bps = 1000000\n", "rate_bps = 1e13\n"));
        assert!(
            e.contains("flow[0].rate_bps") && e.contains("1 ns clock"),
            "{e}"
        );
        let e = bad(&base.replace("to = 2", "to = 9"));
        assert!(e.contains("flow[0].to"), "{e}");
        let e = bad(&base.replace("scheme = \"oos_rlp\"", "scheme = \"oos\""));
        assert!(e.contains("oos"), "{e}");
        let e = bad(&base.replace("mean_bytes = 32768", "mean_bytes = 0"));
        assert!(e.contains("segment[1].error"), "{e}");
        // An error model on a wired segment would be ignored: refused, naming the key.
        let e = bad(&base.replace(
            "delay_ms = 1\n",
            "delay_ms = 1\nerror = { model = \"independent\", loss = 0.01 }\n",
        ));
        assert!(
            e.contains("segment[0].error") && e.contains("wireless"),
            "{e}"
        );
    }
}
