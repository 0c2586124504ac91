//! Queue disciplines of a link's transmit queue: drop-tail, drop-head, CoDel, PIE, FQ-CoDel.
//!
//! Contract (sans-IO, deterministic). One [`Queue`] serves the emulator's hop and the
//! simulator's wired segments. The driver calls [`Queue::enqueue`]`(now, packet)` when a
//! packet reaches the queue and [`Queue::dequeue`]`(now)` when the link can send; `now` never
//! goes down. The queue stamps each packet on entry and hands back that stamp with the packet
//! ([`Entry::enqueued`]) so the caller can measure the sojourn. Nothing here reads a clock:
//! PIE's periodic update (RFC 8033 §4.2) runs, at its scheduled instants, inside the next
//! enqueue or dequeue call. Random draws (PIE's drop decision, FQ-CoDel's hash perturbation)
//! come from the generator given to [`Queue::new`], so one seed gives one run.
//!
//! Every packet that leaves other than through `dequeue` is counted in [`QueueStats`] by cause:
//! `tail` (drop-tail: the arriving packet did not fit), `head` (drop-head: the oldest packet
//! made room for the arriving one), `aqm` (CoDel's or PIE's control law chose it), `overflow`
//! (an AQM queue reached its hard limit: CoDel and PIE refuse the arriving packet, FQ-CoDel
//! drops from the head of its fattest flow queue, RFC 8290 §4.1). The identity
//! `arrived = dequeued + dropped + len()` always holds. Limits of `None` mean no limit.

use std::collections::VecDeque;

use mslink_link::{Duration, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::ParamError;

/// Which discipline a queue applies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Discipline {
    /// First in, first out; an arriving packet that does not fit is dropped.
    #[default]
    #[serde(alias = "drop_tail")]
    Droptail,
    /// First in, first out; the oldest packets are dropped to make room for an arriving one.
    #[serde(alias = "drop_head")]
    Drophead,
    /// CoDel (RFC 8289): drops at dequeue when the sojourn time stays above target.
    Codel,
    /// PIE (RFC 8033): drops at enqueue with a probability steered by the queue delay.
    Pie,
    /// FQ-CoDel (RFC 8290): flows hashed into queues served by deficit round robin, each
    /// with its own CoDel.
    #[serde(alias = "fq-codel", alias = "fqcodel")]
    FqCodel,
}

impl Discipline {
    /// The names accepted in configuration files and on the command line.
    pub const NAMES: &'static str = "droptail, drophead, codel, pie, fq_codel";

    /// Parses a name as written in a configuration file.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "droptail" | "drop_tail" => Discipline::Droptail,
            "drophead" | "drop_head" => Discipline::Drophead,
            "codel" => Discipline::Codel,
            "pie" => Discipline::Pie,
            "fq_codel" | "fq-codel" | "fqcodel" => Discipline::FqCodel,
            _ => return None,
        })
    }
}

/// Parameters of the AQM disciplines; every key is optional and defaults to the RFC's value.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AqmParams {
    /// Target queue delay, ms (CoDel and FQ-CoDel: 5, RFC 8289 §4.4; PIE: 15, RFC 8033 §5.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_ms: Option<f64>,
    /// CoDel's interval, ms (100, RFC 8289 §4.3).
    pub interval_ms: f64,
    /// PIE's drop-probability update period, ms (15, RFC 8033 §5.1).
    pub tupdate_ms: f64,
    /// PIE's alpha, Hz (0.125, RFC 8033 §5.1).
    pub alpha: f64,
    /// PIE's beta, Hz (1.25, RFC 8033 §5.1).
    pub beta: f64,
    /// PIE's burst allowance, ms (150, RFC 8033 §5.1).
    pub max_burst_ms: f64,
    /// Largest packet, bytes: CoDel never drops with less than this queued (RFC 8289 §5.3's
    /// MAXPACKET) and PIE never with less than two of them (RFC 8033 §4.1's 2 × MEAN_PKTSIZE).
    pub mtu_bytes: usize,
    /// FQ-CoDel's number of flow queues (1024, RFC 8290 §5.2.3).
    pub flows: usize,
    /// FQ-CoDel's DRR quantum, bytes (1514, RFC 8290 §5.2.2).
    pub quantum: usize,
}

impl Default for AqmParams {
    fn default() -> Self {
        AqmParams {
            target_ms: None,
            interval_ms: 100.0,
            tupdate_ms: 15.0,
            alpha: 0.125,
            beta: 1.25,
            max_burst_ms: 150.0,
            mtu_bytes: 1514,
            flows: 1024,
            quantum: 1514,
        }
    }
}

/// A queue: its discipline, limits and parameters.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// The discipline.
    pub discipline: Discipline,
    /// Limit in packets (`None`: no limit).
    pub packets: Option<usize>,
    /// Limit in bytes (`None`: no limit).
    pub bytes: Option<usize>,
    /// AQM parameters.
    pub aqm: AqmParams,
}

fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1e3)
}

impl QueueConfig {
    /// The target delay of the discipline: the configured one, else the RFC's.
    pub fn target(&self) -> Duration {
        ms(self.aqm.target_ms.unwrap_or(match self.discipline {
            Discipline::Pie => 15.0,
            _ => 5.0,
        }))
    }

    /// Checks every value; the error names the key (`queue_packets`, `aqm.target_ms`, ...).
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.packets == Some(0) || self.bytes == Some(0) {
            return Err(ParamError::new(
                if self.packets == Some(0) {
                    "queue_packets"
                } else {
                    "queue_bytes"
                },
                "a limit of 0 would drop everything; leave the key out for no limit",
            ));
        }
        let a = &self.aqm;
        let positive = [
            ("aqm.target_ms", a.target_ms.unwrap_or(1.0)),
            ("aqm.interval_ms", a.interval_ms),
            ("aqm.tupdate_ms", a.tupdate_ms),
        ];
        for (k, v) in positive {
            if !(v.is_finite() && v > 0.0 && v <= 60_000.0) {
                return Err(ParamError::new(
                    k,
                    format!("must be a time in (0, 60000] ms, got {v}"),
                ));
            }
        }
        for (k, v) in [
            ("aqm.alpha", a.alpha),
            ("aqm.beta", a.beta),
            ("aqm.max_burst_ms", a.max_burst_ms),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ParamError::new(k, format!("must be >= 0, got {v}")));
            }
        }
        if a.mtu_bytes == 0 || a.quantum == 0 {
            return Err(ParamError::new(
                if a.mtu_bytes == 0 {
                    "aqm.mtu_bytes"
                } else {
                    "aqm.quantum"
                },
                "must be at least 1 byte",
            ));
        }
        if !(1..=65536).contains(&a.flows) {
            return Err(ParamError::new(
                "aqm.flows",
                format!("must be in 1..=65536, got {}", a.flows),
            ));
        }
        Ok(())
    }
}

mod codel;
mod fifo;
mod fq_codel;
mod pie;
mod stats;
#[cfg(test)]
mod tests;

use codel::*;
use fifo::*;
use fq_codel::*;
use pie::*;

pub use fq_codel::flow_hash;
pub use stats::{DropCause, QueueStats, SojournStats, SOJOURN_BUCKETS};

/// A packet in a queue, with the instant it entered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<T> {
    /// The packet.
    pub item: T,
    /// Its length in bytes.
    pub len: usize,
    /// When it entered the queue.
    pub enqueued: Instant,
}

enum Kind<T> {
    Fifo { q: Fifo<T>, head: bool },
    Codel { q: Fifo<T>, codel: Codel },
    Pie { q: Fifo<T>, pie: Box<Pie> },
    FqCodel(Box<FqCodel<T>>),
}

/// A link's transmit queue under one [`Discipline`].
pub struct Queue<T> {
    kind: Kind<T>,
    max_packets: Option<usize>,
    max_bytes: Option<usize>,
    codel: CodelParams,
    rng: ChaCha8Rng,
    packets: usize,
    bytes: usize,
    stats: QueueStats,
}

/// True if `packets` and `bytes` exceed either limit.
fn exceeds(
    max_packets: Option<usize>,
    max_bytes: Option<usize>,
    packets: usize,
    bytes: usize,
) -> bool {
    max_packets.is_some_and(|m| packets > m) || max_bytes.is_some_and(|m| bytes > m)
}

impl<T: AsRef<[u8]>> Queue<T> {
    /// A queue per `config` (validate it first), drawing from `rng` (PIE's drops, FQ-CoDel's
    /// perturbation).
    pub fn new(config: &QueueConfig, mut rng: ChaCha8Rng) -> Self {
        let kind = match config.discipline {
            Discipline::Droptail => Kind::Fifo {
                q: Fifo::default(),
                head: false,
            },
            Discipline::Drophead => Kind::Fifo {
                q: Fifo::default(),
                head: true,
            },
            Discipline::Codel => Kind::Codel {
                q: Fifo::default(),
                codel: Codel::default(),
            },
            Discipline::Pie => Kind::Pie {
                q: Fifo::default(),
                pie: Box::new(Pie::new(config)),
            },
            Discipline::FqCodel => Kind::FqCodel(Box::new(FqCodel {
                flows: (0..config.aqm.flows.max(1))
                    .map(|_| Flow {
                        q: Fifo::default(),
                        codel: Codel::default(),
                        deficit: 0,
                        list: List::None,
                    })
                    .collect(),
                new_flows: VecDeque::new(),
                old_flows: VecDeque::new(),
                quantum: config.aqm.quantum as i64,
                perturbation: rng.gen(),
            })),
        };
        Queue {
            kind,
            max_packets: config.packets,
            max_bytes: config.bytes,
            codel: CodelParams {
                target: config.target(),
                interval: ms(config.aqm.interval_ms),
                mtu: config.aqm.mtu_bytes,
            },
            rng,
            packets: 0,
            bytes: 0,
            stats: QueueStats::default(),
        }
    }

    /// A packet reaches the queue at `now`; it is queued or dropped (and counted).
    pub fn enqueue(&mut self, now: Instant, item: T) {
        let len = item.as_ref().len();
        self.stats.arrived += 1;
        let e = Entry {
            item,
            len,
            enqueued: now,
        };
        let (mp, mb) = (self.max_packets, self.max_bytes);
        let fits = !exceeds(mp, mb, self.packets + 1, self.bytes + len);
        let refused = match self.kind {
            Kind::Fifo { .. } => DropCause::Tail,
            _ => DropCause::Overflow,
        };
        match &mut self.kind {
            Kind::Fifo { q, head: false } | Kind::Codel { q, .. } => {
                if !fits {
                    self.stats.drop(refused, len);
                    return;
                }
                q.push(e);
            }
            Kind::Fifo { q, head: true } => {
                // Drop-head: the oldest packets go until the arriving one fits.
                if mb.is_some_and(|m| len > m) {
                    // Larger than the byte limit on its own: refused, nothing evicted for it.
                    self.stats.drop(DropCause::Tail, len);
                    return;
                }
                while exceeds(mp, mb, q.items.len() + 1, q.bytes + len) {
                    let Some(old) = q.pop() else { break };
                    self.stats.drop(DropCause::Head, old.len);
                    self.packets -= 1;
                    self.bytes -= old.len;
                }
                q.push(e);
            }
            Kind::Pie { q, pie } => {
                pie.catch_up(now, q);
                if !fits {
                    self.stats.drop(DropCause::Overflow, len);
                    return;
                }
                let qdelay = Pie::qdelay(q, now);
                let dropped = pie.burst_allowance <= 0.0 && pie.drop_early(q, &mut self.rng);
                // RFC 8033 §5.1: the burst allowance is restored once the queue is calm.
                if pie.drop_prob == 0.0
                    && qdelay < pie.target / 2.0
                    && pie.qdelay_old < pie.target / 2.0
                {
                    pie.burst_allowance = pie.max_burst;
                }
                if dropped {
                    pie.accu_prob = 0.0;
                    self.stats.drop(DropCause::Aqm, len);
                    return;
                }
                q.push(e);
            }
            Kind::FqCodel(fq) => {
                let n = fq.flows.len() as u64;
                let idx = (flow_hash(e.item.as_ref(), fq.perturbation) % n) as usize;
                let f = &mut fq.flows[idx];
                f.q.push(e);
                // RFC 8290 §4.1: a queue not on a list joins the new flows with a full quantum.
                if f.list == List::None {
                    f.list = List::New;
                    f.deficit = fq.quantum;
                    fq.new_flows.push_back(idx);
                }
                self.packets += 1;
                self.bytes += len;
                // RFC 8290 §4.1: over the limit, drop from the head of the fattest queue.
                while exceeds(mp, mb, self.packets, self.bytes) {
                    let fat = (0..fq.flows.len())
                        .max_by_key(|&i| (fq.flows[i].q.bytes, std::cmp::Reverse(i)))
                        .expect("at least one flow");
                    let Some(old) = fq.flows[fat].q.pop() else {
                        break;
                    };
                    self.stats.drop(DropCause::Overflow, old.len);
                    self.packets -= 1;
                    self.bytes -= old.len;
                }
                return;
            }
        }
        self.packets += 1;
        self.bytes += len;
    }

    /// The packet to send at `now`, if any (AQM drops made on the way are counted).
    pub fn dequeue(&mut self, now: Instant) -> Option<Entry<T>> {
        let mut dropped = Dropped::default();
        let p = self.codel;
        let r = match &mut self.kind {
            Kind::Fifo { q, .. } => q.pop(),
            Kind::Codel { q, codel } => codel.dequeue(now, q, p, &mut self.stats, &mut dropped),
            Kind::Pie { q, pie } => {
                pie.catch_up(now, q);
                q.pop()
            }
            Kind::FqCodel(fq) => fq.dequeue(now, p, &mut self.stats, &mut dropped),
        };
        self.packets -= dropped.packets;
        self.bytes -= dropped.bytes;
        if let Some(e) = &r {
            self.packets -= 1;
            self.bytes -= e.len;
            self.stats.dequeued += 1;
            self.stats.sojourn.record(now.saturating_since(e.enqueued));
        }
        r
    }
}

impl<T> Queue<T> {
    /// Packets waiting.
    pub fn len(&self) -> usize {
        self.packets
    }

    /// True if nothing waits.
    pub fn is_empty(&self) -> bool {
        self.packets == 0
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Counters.
    pub fn stats(&self) -> &QueueStats {
        &self.stats
    }

    /// PIE's current drop probability (0 for the other disciplines).
    pub fn drop_probability(&self) -> f64 {
        match &self.kind {
            Kind::Pie { pie, .. } => pie.drop_prob,
            _ => 0.0,
        }
    }
}
