//! The engine at work on an in-memory hop (what `mslink demo` runs, before any scenario).
//!
//! Contract: [`run_scheme`] pushes 004 §III.D's continuous-media stream (CBR in exponential
//! talk spurts of 1 s and silences of 1.35 s) through an in-memory WLAN-like hop
//! (`mslink_link::hop::Hop`; 004 Table I: 5 Mbit/s, 3 ms, 1000-byte frames) with independent
//! frame loss in both directions, on one service of a recovery scheme ([`SCHEMES`]), and
//! measures residual loss, delay (mean and standard deviation, 004's metric) and overhead;
//! [`run_multi`] runs a greedy bulk flow and the CBR stream together on one multi-service link
//! with an SCFQ scheduler (004 §IV-V); [`isolation`] is 004 §V.D's promise in numbers;
//! [`run_tcp_case`] runs 004's own case (TCP beside the media at SCFQ 4 : 1) in the simulator,
//! for the delay relation as well as the loss one. Deterministic for a given [`DemoConfig`].
//! [`text`] renders the rows as the verb's tables and verdicts; nothing here prints.

use mslink_link::config::{LinkConfig, LinkConfigError};
use mslink_link::hop::{Fate, Hop};
use mslink_link::link::MultiServiceLink;
use mslink_link::{Direction, Duration, Instant, Side};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use crate::packet::Stamp;

pub mod text;

/// What every run of the demo shares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoConfig {
    /// Independent frame loss rate in each direction, in [0, 1).
    pub loss: f64,
    /// Simulated seconds of traffic per run.
    pub seconds: f64,
    /// Seed of every random draw (talk spurts and losses).
    pub seed: u64,
}

/// Why a demo run could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A link configuration does not parse.
    #[error("{what}")]
    Config {
        /// Which configuration.
        what: String,
        /// The parse error.
        source: toml::de::Error,
    },
    /// A link configuration is invalid.
    #[error(transparent)]
    Link(#[from] LinkConfigError),
}

type Result<T> = std::result::Result<T, DemoError>;

const RATE_BPS: u64 = 5_000_000;
const DELAY: Duration = Duration::from_millis(3);
const FRAME: usize = 1000;
/// IP packet size: fits one 1000-byte frame with tag, 2-byte header and CRC.
const PACKET: usize = 990;
const CBR_BPS: f64 = 1_000_000.0;
const CBR_PORT: u16 = 5004;

/// Each scheme (name, extra service settings) as 004 ran it for CBR, with timers tuned to this hop: a frame and its answer
/// take about 8 ms (1.6 ms to send 1000 bytes, 3 ms each way), so timeouts sit at a few round
/// trips instead of the HSCSD-sized defaults (about 220 ms round trip).
pub const SCHEMES: &[(&str, &str)] = &[
    ("raw", ""),
    ("xor_fec", "block = 12\nblock_timeout_ms = 15.84"),
    ("karn_rlp", "max_retransmissions = 1\nnack_interval_ms = 15\nkeepalive_interval_ms = 10\ngap_wait_ms = 60"),
    ("oos_rlp", "max_retransmissions = 1\nnack_interval_ms = 15\nkeepalive_interval_ms = 10\ngap_wait_ms = 60"),
    ("go_back_n", "timeout_ms = 20"),
    ("selective_repeat", "timeout_ms = 20\nnack_interval_ms = 15"),
    ("persistent", "nack_interval_ms = 15\nkeepalive_interval_ms = 10"),
];

/// The CBR stream alone on one scheme.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SchemeRow {
    /// The scheme.
    pub scheme: String,
    /// Packets sent.
    pub sent: u64,
    /// Packets delivered (once each).
    pub delivered: u64,
    /// 1 - delivered / sent.
    pub residual_loss: f64,
    /// Mean delay of the delivered packets.
    pub delay_mean_ms: f64,
    /// Standard deviation of their delay.
    pub delay_std_ms: f64,
    /// Bytes on the wire (both directions) over bytes offered, minus 1.
    pub overhead: f64,
    /// Retransmissions by the sender.
    pub retransmissions: u64,
    /// Packets the receiver recovered.
    pub recovered: u64,
}

/// Packet `seq` of `len` bytes from 10.0.0.1 to 10.0.0.2, UDP port 40000 to `dport`.
fn packet(seq: u32, dport: u16, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let stamp = Stamp {
        flow: 0,
        seq,
        sent_ns: 0,
    };
    crate::packet::build(&mut out, len, 0, 1, 0, dport, stamp);
    out
}

fn seq_of(p: &[u8]) -> usize {
    crate::packet::stamp(p).map_or(0, |s| s.seq as usize)
}

fn lossy(p: f64, seed: u64) -> mslink_link::hop::Channel {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Box::new(move |_, _| {
        if rng.gen_bool(p) {
            Fate::Lose
        } else {
            Fate::Deliver
        }
    })
}

fn hop(config: &LinkConfig, loss: f64, seed: u64) -> Result<Hop> {
    let a = MultiServiceLink::new(config)?;
    let b = MultiServiceLink::new(config)?;
    Ok(Hop::new(
        a,
        b,
        RATE_BPS,
        DELAY,
        lossy(loss, seed ^ 0xA),
        lossy(loss, seed ^ 0xB),
    ))
}

/// CBR send times: isochronous packets during exponential talk spurts (004 §III.D).
fn talk_spurts(seconds: f64, seed: u64) -> Vec<Instant> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Rates are 1 / mean: talk spurts of 1 s, silences of 1.35 s.
    let talk = Exp::new(1.0).expect("positive rate");
    let silence = Exp::new(1.0 / 1.35).expect("positive rate");
    let interval = PACKET as f64 * 8.0 / CBR_BPS;
    let mut times = Vec::new();
    let mut t = 0.0;
    while t < seconds {
        let end = (t + talk.sample(&mut rng)).min(seconds);
        while t < end {
            times.push(Instant::from_nanos((t * 1e9) as u64));
            t += interval;
        }
        t = end + silence.sample(&mut rng);
    }
    times
}

/// The CBR stream alone over the lossy hop on one service of `scheme`, with `extra` settings
/// of that service (TOML lines, as in [`SCHEMES`]).
pub fn run_scheme(scheme: &str, extra: &str, args: &DemoConfig) -> Result<SchemeRow> {
    let text = format!(
        "frame_size = {FRAME}\nmtu = {PACKET}\nseq_bits = 8\n[[service]]\nname = \"cbr\"\nscheme = \"{scheme}\"\n{extra}\n"
    );
    let config: LinkConfig = toml::from_str(&text).map_err(|source| DemoError::Config {
        what: format!("configuring {scheme}"),
        source,
    })?;
    let mut h = hop(&config, args.loss, args.seed)?;
    let times = talk_spurts(args.seconds, args.seed);
    let mut sent_at = Vec::with_capacity(times.len());
    let mut delays = Vec::with_capacity(times.len());
    let mut seen = vec![false; times.len()];
    for (i, &t) in times.iter().enumerate() {
        h.run_until(t);
        sent_at.push(t);
        h.send(Side::Left, &packet(i as u32, CBR_PORT, PACKET)).ok();
        while let Some((at, p)) = h.recv(Side::Right) {
            record(&mut seen, &mut delays, &sent_at, at, &p);
        }
    }
    h.run_idle(h.now() + Duration::from_secs(30));
    while let Some((at, p)) = h.recv(Side::Right) {
        record(&mut seen, &mut delays, &sent_at, at, &p);
    }
    let stats = h.end(Side::Left).stats();
    let svc = &stats.services[0].service;
    let wire =
        h.direction(Direction::LeftToRight).bytes + h.direction(Direction::RightToLeft).bytes;
    let offered = (times.len() * PACKET) as f64;
    let (mean, std) = mean_std(&delays);
    Ok(SchemeRow {
        scheme: scheme.into(),
        sent: times.len() as u64,
        delivered: delays.len() as u64,
        residual_loss: 1.0 - delays.len() as f64 / times.len().max(1) as f64,
        delay_mean_ms: mean * 1e3,
        delay_std_ms: std * 1e3,
        overhead: wire as f64 / offered - 1.0,
        retransmissions: svc.retransmissions,
        recovered: h.end(Side::Right).stats().services[0].service.recovered,
    })
}

fn record(seen: &mut [bool], delays: &mut Vec<f64>, sent_at: &[Instant], at: Instant, p: &[u8]) {
    let i = seq_of(p);
    if !std::mem::replace(&mut seen[i], true) {
        delays.push((at - sent_at[i]).as_secs_f64());
    }
}

fn mean_std(x: &[f64]) -> (f64, f64) {
    if x.is_empty() {
        return (0.0, 0.0);
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// One class of traffic on the shared multi-service link.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClassRow {
    /// "cbr" or "bulk".
    pub class: String,
    /// The scheme of its service.
    pub scheme: String,
    /// Packets offered.
    pub offered: u64,
    /// Packets delivered (once each).
    pub delivered: u64,
    /// 1 - delivered / offered.
    pub residual_loss: f64,
    /// Goodput.
    pub throughput_mbps: f64,
    /// Mean delay of the delivered packets.
    pub delay_mean_ms: f64,
    /// Standard deviation of their delay.
    pub delay_std_ms: f64,
}

/// The multi-service promise in numbers (004 §V.D): the CBR stream's losses on OOS RLP beside
/// bulk against its losses alone over the same channel, and whether they agree within two
/// standard deviations of their difference (binomial counts).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Isolation {
    /// CBR packets sent (in each run).
    pub sent: u64,
    /// Lost on OOS RLP alone.
    pub lost_alone: u64,
    /// Lost on OOS RLP beside bulk.
    pub lost_beside_bulk: u64,
    /// Standard deviation of the difference, in packets (at least 1).
    pub sd: f64,
    /// Both runs sent the same packets and their losses differ by at most `2 * sd`.
    pub holds: bool,
}

/// The isolation verdict from the CBR stream alone on OOS RLP (`alone`) and beside bulk
/// (`beside`, the "cbr" row of [`run_multi`]).
pub fn isolation(alone: &SchemeRow, beside: &ClassRow) -> Isolation {
    let n = alone.sent as f64;
    let (la, lb) = (
        alone.sent - alone.delivered,
        beside.offered - beside.delivered,
    );
    let var = |l: u64| l as f64 * (1.0 - l as f64 / n.max(1.0));
    let sd = (var(la) + var(lb)).sqrt().max(1.0);
    Isolation {
        sent: alone.sent,
        lost_alone: la,
        lost_beside_bulk: lb,
        sd,
        holds: alone.sent == beside.offered && (la as f64 - lb as f64).abs() <= 2.0 * sd,
    }
}

/// 004 §V: bulk data on Selective Repeat and the CBR stream on OOS RLP share one link; SCFQ
/// rates are static (§V.A), giving the CBR class its 1 Mbit/s peak plus room for its recovery
/// overhead (1.5 of 5 Mbit/s; without the headroom its queue grows during talk spurts and
/// retransmissions arrive after the receiver gave up).
const MULTI: &str = r#"
frame_size = 1000
mtu = 990
seq_bits = 16
default_service = "bulk"
[scheduler]
policy = "scfq"
rates = [3.5, 1.5]
[[service]]
name = "bulk"
scheme = "selective_repeat"
timeout_ms = 20
nack_interval_ms = 15
[[service]]
name = "cbr"
scheme = "oos_rlp"
max_retransmissions = 1
nack_interval_ms = 15
keepalive_interval_ms = 10
gap_wait_ms = 60
[[rule]]
service = "cbr"
protocol = "udp"
dst_port = 5004
"#;

/// Bulk UDP offered at 4.5 Mbit/s: more than its share, so its queue stays busy.
const BULK_BPS: f64 = 4_500_000.0;
const BULK_PORT: u16 = 9000;

/// Bulk UDP at 4.5 Mbit/s on selective_repeat and the CBR stream on oos_rlp, classified by
/// UDP port, sharing one multi-service link through SCFQ with static rates 3.5:1.5; returns
/// the "cbr" row, then the "bulk" row.
pub fn run_multi(args: &DemoConfig) -> Result<Vec<ClassRow>> {
    let config: LinkConfig = toml::from_str(MULTI).map_err(|source| DemoError::Config {
        what: "the multi-service demo configuration".into(),
        source,
    })?;
    let mut h = hop(&config, args.loss, args.seed)?;
    let cbr = talk_spurts(args.seconds, args.seed);
    let bulk_interval = PACKET as f64 * 8.0 / BULK_BPS;
    let bulk: Vec<Instant> = (0..)
        .map(|i| i as f64 * bulk_interval)
        .take_while(|&t| t < args.seconds)
        .map(|t| Instant::from_nanos((t * 1e9) as u64))
        .collect();
    // Merge both sources in time order; ties go to CBR first.
    let mut events: Vec<(Instant, usize, usize)> =
        cbr.iter().enumerate().map(|(i, &t)| (t, 0, i)).collect();
    events.extend(bulk.iter().enumerate().map(|(i, &t)| (t, 1, i)));
    events.sort();
    let sizes = [cbr.len(), bulk.len()];
    let mut seen: Vec<Vec<bool>> = sizes.iter().map(|&n| vec![false; n]).collect();
    let mut delays: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
    let sent_at = [cbr.clone(), bulk.clone()];
    let mut collect = |h: &mut Hop| {
        while let Some((at, p)) = h.recv(Side::Right) {
            let class = usize::from(u16::from_be_bytes([p[22], p[23]]) == BULK_PORT);
            record(
                &mut seen[class],
                &mut delays[class],
                &sent_at[class],
                at,
                &p,
            );
        }
    };
    for (t, class, i) in events {
        h.run_until(t);
        let port = [CBR_PORT, BULK_PORT][class];
        h.send(Side::Left, &packet(i as u32, port, PACKET)).ok();
        collect(&mut h);
    }
    let end = h.now();
    h.run_idle(end + Duration::from_secs(30));
    collect(&mut h);
    let stats = h.end(Side::Left).stats();
    Ok([("cbr", 0usize, 1usize), ("bulk", 1, 0)]
        .into_iter()
        .map(|(name, class, svc)| {
            let (mean, std) = mean_std(&delays[class]);
            let n = delays[class].len() as u64;
            ClassRow {
                class: name.into(),
                scheme: stats.services[svc].scheme.clone(),
                offered: sizes[class] as u64,
                delivered: n,
                residual_loss: 1.0 - n as f64 / sizes[class].max(1) as f64,
                throughput_mbps: (n * PACKET as u64 * 8) as f64 / args.seconds / 1e6,
                delay_mean_ms: mean * 1e3,
                delay_std_ms: std * 1e3,
            }
        })
        .collect())
}

/// One run of [`run_tcp_case`]: the media alone or beside a TCP file transfer.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TcpCaseRow {
    /// What ran: "media alone", or the SCFQ rates beside TCP.
    pub case: String,
    /// Media packets sent (less those still queued when the run ended).
    pub sent: u64,
    /// Media packets lost.
    pub lost: u64,
    /// The media's residual loss.
    pub residual_loss: f64,
    /// Mean one-way delay, ms.
    pub delay_mean_ms: f64,
    /// 95th percentile of the delay, ms.
    pub delay_p95_ms: f64,
    /// Share of packets lost or later than the 250 ms playback point.
    pub playback_miss_rate: f64,
    /// The schedulers' delay bound for the media (ms), when its share covers its peak.
    pub delay_bound_ms: Option<f64>,
    /// The scenario's notes (a share below the media's peak on the air says so).
    pub notes: Vec<String>,
    /// TCP's goodput, Mbit/s (0 alone).
    pub tcp_mbps: f64,
}

/// 004's own multi-service case in the simulator (004 §V): the media (1 Mbit/s in talk spurts,
/// OOS RLP) beside a TCP Reno file transfer (Selective Repeat) on the WLAN hop through SCFQ, at
/// 004's rates 4 : 1 (the media's share is its peak before link overhead) and at 3.9 : 1.1 (a
/// share that covers the overhead), against the media alone; the same independent frame loss
/// each way as the rest of the demo. Shows the loss relation (the same beside as alone) and the
/// delay relation (bounded only when the share covers what the media puts on the air).
pub fn run_tcp_case(
    args: &DemoConfig,
) -> std::result::Result<Vec<TcpCaseRow>, crate::ScenarioError> {
    let base = |rates: &str, tcp: bool| {
        let ftp = if tcp {
            "[[flow]]\nname = \"ftp\"\napp = \"ftp\"\nfrom = 0\nto = 2\nsize_bytes = 10000000000\n\
             [flow.tcp]\nvariant = \"reno\"\ngranularity_s = 0.5\nmin_rto_s = 1.0\nmss = 953\n\
             recv_buffer_bytes = 19060\nsend_buffer_bytes = 65536\n"
        } else {
            ""
        };
        format!(
            "[sim]\nduration_s = {}\ndrain_s = 10\nseed = {}\ntimeseries_window_s = 0\n\
             [[segment]]\nkind = \"wired\"\nrate_bps = 10000000\ndelay_ms = 1\n\
             [[segment]]\nkind = \"wireless\"\npreset = \"wlan\"\n\
             error = {{ model = \"independent\", loss = {} }}\n\
             [segment.link]\nseq_bits = 8\nmtu = 993\n\
             [segment.link.scheduler]\npolicy = \"scfq\"\nrates = {rates}\n\
             [[segment.link.service]]\nname = \"tcp\"\nscheme = \"selective_repeat\"\ntimeout_ms = 20\nnack_interval_ms = 15\n\
             [[segment.link.service]]\nname = \"cbr\"\nscheme = \"oos_rlp\"\nmax_retransmissions = 1\n\
             nack_interval_ms = 15\nkeepalive_interval_ms = 10\ngap_wait_ms = 60\n\
             [[segment.link.rule]]\nservice = \"tcp\"\nprotocol = \"tcp\"\n\
             [[segment.link.rule]]\nservice = \"cbr\"\nprotocol = \"udp\"\n\
             [[flow]]\nname = \"media\"\napp = \"cbr\"\nfrom = 0\nto = 2\nrate_bps = 1000000\n\
             packet_bytes = 993\ntalk_s = 1.0\nsilence_s = 1.35\n{ftp}",
            args.seconds, args.seed, args.loss
        )
    };
    let mut rows = Vec::new();
    for (case, rates, tcp) in [
        ("media alone", "[4.0, 1.0]", false),
        ("beside TCP, SCFQ 4 : 1 (004)", "[4.0, 1.0]", true),
        ("beside TCP, SCFQ 3.9 : 1.1", "[3.9, 1.1]", true),
    ] {
        let sc = crate::Scenario::parse(&base(rates, tcp))?;
        sc.validate()?;
        let r = crate::run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces")))?;
        let media = r.flows.iter().find(|f| f.flow == "media");
        let tcp_mbps = r
            .flows
            .iter()
            .find(|f| f.flow == "ftp")
            .map_or(0.0, |f| f.throughput_bps / 1e6);
        if let Some(m) = media {
            rows.push(TcpCaseRow {
                case: case.into(),
                sent: m.sent - m.unsent,
                lost: m.sent - m.unsent - m.received,
                residual_loss: m.loss_rate,
                delay_mean_ms: m.delay_mean_s * 1e3,
                delay_p95_ms: m.delay_p95_s * 1e3,
                playback_miss_rate: m.playback_miss_rate,
                delay_bound_ms: m.delay_bound_s.map(|b| b * 1e3),
                notes: sc.notes(),
                tcp_mbps,
            });
        }
    }
    Ok(rows)
}

/// Whether `beside` lost the same share of its packets as `alone`, within two standard
/// deviations of the difference of two binomial counts (one loss as a floor), as [`isolation`].
pub fn same_loss(alone: &TcpCaseRow, beside: &TcpCaseRow) -> bool {
    let rate = |r: &TcpCaseRow| r.lost as f64 / r.sent.max(1) as f64;
    let (pa, pb) = (rate(alone), rate(beside));
    let var =
        pa * (1.0 - pa) / alone.sent.max(1) as f64 + pb * (1.0 - pb) / beside.sent.max(1) as f64;
    let floor = 1.0 / alone.sent.max(1) as f64;
    (pa - pb).abs() <= 2.0 * var.sqrt().max(floor)
}
