//! Weighted fair queueing: each frame is stamped with its finish time in an emulated GPS
//! (fluid) system and frames leave in order of finish time (the WFQ family 003 §5 starts from).
//!
//! Contract. Queue `i` has weight `w_i` (normalised to `r_i = w_i / sum w`). On arrival a
//! frame of `len` bytes gets `F = max(V, F_i) + len / r_i`, where `F_i` is the previous finish
//! tag of its queue and `V` is the GPS virtual time; `dequeue` sends the queued frame with the
//! lowest `F` (ties: lower queue id). With every queue backlogged queue `i` gets a byte share
//! `r_i`; idle queues' capacity is shared in proportion to the busy queues' weights.
//!
//! Our approximation of GPS (documented because it is one): the fluid server is clocked by
//! *work*, not by wall time. It serves exactly the bytes the packet system hands the link,
//! `len` bytes at each `dequeue`, and arrivals are stamped with the GPS state after the last
//! dequeue. Between two dequeues `V` advances by `work / sum_{i in B} r_i`, where `B` is the set
//! of sessions still backlogged *in the fluid system* (those with `F_i > V`); a session leaves
//! `B` when `V` reaches its last finish tag, and the computation steps through those departures
//! exactly. This needs no link rate, so it stays right on links whose rate varies (wireless
//! retransmissions, MAC contention); the price is that an arrival during a frame's transmission
//! is stamped as if it came at the end of that transmission (an error of at most one frame's
//! worth of virtual time). `now` is not used. Both systems idle together, so `V` restarts at
//! zero when everything is empty. O(log n) per frame (two heaps); no allocation once grown.

use super::scfq::REBASE_AT;
use super::tag_heap::Head;
use super::{positive_list, QueueId, SchedConfigError, Scheduler};
use crate::time::Instant;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

/// WFQ settings.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WfqConfig {
    /// Weight of each queue (positive; only ratios matter); empty means equal weights.
    pub weights: Vec<f64>,
}

/// Weighted fair queueing scheduler.
#[derive(Clone, Debug)]
pub struct Wfq {
    /// Normalised rates `r_i` (sum 1).
    rates: Vec<f64>,
    /// Per-queue FIFOs of (length, finish tag).
    fifos: Vec<VecDeque<(u32, f64)>>,
    /// Heads of the non-empty packet queues.
    heads: BinaryHeap<Head>,
    frames: usize,
    /// GPS virtual time.
    vtime: f64,
    /// Last finish tag given to each queue.
    last_finish: Vec<f64>,
    /// Queue is backlogged in the fluid system.
    in_gps: Vec<bool>,
    /// Backlogged fluid sessions keyed by their last finish tag; an entry may be stale (lower
    /// than the session's current `last_finish`), which is fixed when it reaches the top.
    gps: BinaryHeap<Head>,
    /// Sum of `r_i` over the fluid-backlogged sessions.
    gps_rate: f64,
}

impl Wfq {
    /// A WFQ scheduler over `queues` queues.
    pub fn new(queues: usize, config: &WfqConfig) -> Result<Self, SchedConfigError> {
        let w = positive_list("weights", &config.weights, queues, 1.0)?;
        let sum: f64 = w.iter().sum();
        Ok(Wfq {
            rates: w.iter().map(|x| x / sum).collect(),
            fifos: vec![VecDeque::new(); queues],
            heads: BinaryHeap::with_capacity(queues),
            frames: 0,
            vtime: 0.0,
            last_finish: vec![0.0; queues],
            in_gps: vec![false; queues],
            gps: BinaryHeap::with_capacity(queues),
            gps_rate: 0.0,
        })
    }

    /// The GPS virtual time `V`.
    pub fn virtual_time(&self) -> f64 {
        self.vtime
    }

    /// Runs the fluid server for `work` bytes.
    fn advance_gps(&mut self, mut work: f64) {
        while work > 0.0 {
            let Some(mut top) = self.gps.peek_mut() else {
                break;
            };
            let q = top.q as usize;
            let f = self.last_finish[q];
            if top.tag < f {
                // Stale entry: the session got more frames since it was pushed.
                top.tag = f;
                continue;
            }
            let need = (f - self.vtime) * self.gps_rate;
            if need <= work {
                // The session's fluid backlog drains within this work: it leaves B.
                work -= need;
                self.vtime = self.vtime.max(f);
                PeekMut::pop(top);
                self.in_gps[q] = false;
                self.gps_rate -= self.rates[q];
                if self.gps.is_empty() {
                    self.gps_rate = 0.0;
                }
            } else {
                self.vtime += work / self.gps_rate;
                work = 0.0;
            }
        }
    }

    /// Shifts every tag down by `V` (rare: only on links that never idle).
    #[cold]
    fn rebase(&mut self) {
        let base = self.vtime;
        for f in &mut self.fifos {
            for (_, tag) in f.iter_mut() {
                *tag -= base;
            }
        }
        for f in &mut self.last_finish {
            *f = (*f - base).max(0.0);
        }
        let mut heads = std::mem::take(&mut self.heads).into_vec();
        heads.iter_mut().for_each(|h| h.tag -= base);
        self.heads = BinaryHeap::from(heads);
        let mut gps = std::mem::take(&mut self.gps).into_vec();
        gps.iter_mut().for_each(|h| h.tag = (h.tag - base).max(0.0));
        self.gps = BinaryHeap::from(gps);
        self.vtime = 0.0;
    }
}

impl Scheduler for Wfq {
    fn name(&self) -> &'static str {
        "wfq"
    }
    fn queues(&self) -> usize {
        self.rates.len()
    }
    fn enqueue(&mut self, _now: Instant, q: QueueId, len: u32) {
        let start = self.vtime.max(self.last_finish[q]);
        let tag = start + f64::from(len) / self.rates[q];
        self.last_finish[q] = tag;
        if !self.in_gps[q] {
            self.in_gps[q] = true;
            self.gps_rate += self.rates[q];
            self.gps.push(Head { tag, q: q as u32 });
        }
        if self.fifos[q].is_empty() {
            self.heads.push(Head { tag, q: q as u32 });
        }
        self.fifos[q].push_back((len, tag));
        self.frames += 1;
    }
    fn dequeue(&mut self, _now: Instant) -> Option<QueueId> {
        let (q, len) = {
            let mut top = self.heads.peek_mut()?;
            let q = top.q as usize;
            let (len, _) = self.fifos[q].pop_front().expect("head of an empty queue");
            match self.fifos[q].front() {
                Some(&(_, next)) => top.tag = next,
                None => {
                    PeekMut::pop(top);
                }
            }
            (q, len)
        };
        self.frames -= 1;
        self.advance_gps(f64::from(len));
        if self.frames == 0 {
            // Both systems are idle (the fluid one has served the same bytes): restart.
            for q in self.gps.drain() {
                self.in_gps[q.q as usize] = false;
            }
            self.gps_rate = 0.0;
            self.vtime = 0.0;
            self.last_finish.fill(0.0);
        } else if self.vtime > REBASE_AT {
            self.rebase();
        }
        Some(q)
    }
    fn len(&self) -> usize {
        self.frames
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{check_deterministic, op_strategy, Op};
    use super::*;
    use proptest::prelude::*;

    /// Naive WFQ: per-frame tags, GPS departures found by linear scans over the sessions.
    /// (The backlogged rate sum is kept by the same additions and subtractions as in the
    /// implementation, so both round identically and the traces must agree exactly.)
    struct Naive {
        r: Vec<f64>,
        frames: Vec<VecDeque<(u32, f64)>>,
        last: Vec<f64>,
        active: Vec<bool>,
        sum: f64,
        v: f64,
    }

    impl Naive {
        fn enqueue(&mut self, q: usize, len: u32) {
            let tag = self.v.max(self.last[q]) + f64::from(len) / self.r[q];
            self.last[q] = tag;
            if !self.active[q] {
                self.active[q] = true;
                self.sum += self.r[q];
            }
            self.frames[q].push_back((len, tag));
        }
        fn dequeue(&mut self) -> Option<usize> {
            let mut best: Option<(f64, usize)> = None;
            for (q, f) in self.frames.iter().enumerate() {
                if let Some(&(_, t)) = f.front() {
                    if best.is_none_or(|(b, _)| t < b) {
                        best = Some((t, q));
                    }
                }
            }
            let (_, q) = best?;
            let (len, _) = self.frames[q].pop_front().unwrap();
            // Fluid service of `len` bytes, departure by departure.
            let mut work = f64::from(len);
            while work > 0.0 {
                let Some(next) = (0..self.r.len())
                    .filter(|&i| self.active[i])
                    .min_by(|&a, &b| self.last[a].total_cmp(&self.last[b]).then(a.cmp(&b)))
                else {
                    break;
                };
                let need = (self.last[next] - self.v) * self.sum;
                if need <= work {
                    work -= need;
                    self.v = self.v.max(self.last[next]);
                    self.active[next] = false;
                    self.sum -= self.r[next];
                    if !self.active.iter().any(|&a| a) {
                        self.sum = 0.0;
                    }
                } else {
                    self.v += work / self.sum;
                    work = 0.0;
                }
            }
            if self.frames.iter().all(|f| f.is_empty()) {
                self.v = 0.0;
                self.last.fill(0.0);
                self.active.fill(false);
                self.sum = 0.0;
            }
            Some(q)
        }
    }

    proptest! {
        #[test]
        fn wfq_keeps_the_invariants_and_matches_naive_gps(
            w in proptest::collection::vec(
                prop_oneof![Just(1.0), Just(3.0), 0.05f64..5.0], 5),
            ops in proptest::collection::vec(op_strategy(5, 1500), 0..300),
        ) {
            let cfg = WfqConfig { weights: w.clone() };
            let trace = check_deterministic(|| Box::new(Wfq::new(5, &cfg).unwrap()), 5, &ops);
            let sum: f64 = w.iter().sum();
            let mut m = Naive {
                r: w.iter().map(|x| x / sum).collect(),
                frames: vec![VecDeque::new(); 5],
                last: vec![0.0; 5],
                active: vec![false; 5],
                sum: 0.0,
                v: 0.0,
            };
            let mut want = Vec::new();
            for op in &ops {
                match *op {
                    Op::Enqueue(q, len) => m.enqueue(q, len),
                    Op::Dequeue => want.push(m.dequeue()),
                    _ => {}
                }
            }
            while let Some(q) = m.dequeue() {
                want.push(Some(q));
            }
            prop_assert_eq!(trace, want);
        }
    }

    #[test]
    fn gps_virtual_time_follows_the_fluid_server() {
        // Two sessions, rates 1/4 and 3/4. Each gets one 300-byte frame at V = 0:
        // F_0 = 1200, F_1 = 400, and a 30-byte second frame of session 1 gets
        // F = 400 + 30 / (3/4) = 440. Sending F_1's frame (300 bytes of work) with both
        // backlogged (rate sum 1) moves V to 300; the 30-byte frame then moves it to 330.
        // Session 0's 300 bytes: 110 reach V = 440 (session 1 leaves), the remaining 190 at
        // rate sum 1/4 reach 1200, where session 0 leaves too.
        let cfg = WfqConfig {
            weights: vec![1.0, 3.0],
        };
        let mut s = Wfq::new(2, &cfg).unwrap();
        let t = Instant::ZERO;
        s.enqueue(t, 0, 300);
        s.enqueue(t, 1, 300);
        s.enqueue(t, 1, 30); // keeps the packet system busy after both
        assert_eq!(s.dequeue(t), Some(1));
        assert!((s.virtual_time() - 300.0).abs() < 1e-9);
        // Frame 2 of session 1: F = 400 + 40 = 440 < 1200, so it goes before session 0.
        assert_eq!(s.dequeue(t), Some(1));
        assert!((s.virtual_time() - 330.0).abs() < 1e-9);
        assert_eq!(s.dequeue(t), Some(0));
        assert_eq!(s.virtual_time(), 0.0, "restarts when idle");
    }

    #[test]
    fn rebase_keeps_the_order() {
        // Two tiny-weight queues alone: V moves ~1e12 per frame and passes REBASE_AT often;
        // equal weights and lengths must still alternate.
        let cfg = WfqConfig {
            weights: vec![1e-9, 1e-9, 1.0],
        };
        let mut s = Wfq::new(3, &cfg).unwrap();
        let t = Instant::ZERO;
        for _ in 0..3 {
            s.enqueue(t, 0, 1000);
            s.enqueue(t, 1, 1000);
        }
        let mut got = Vec::new();
        for _ in 0..2_000 {
            let q = s.dequeue(t).unwrap();
            got.push(q);
            s.enqueue(t, q, 1000);
            assert!(s.virtual_time() <= REBASE_AT);
        }
        assert!(got.chunks(2).all(|c| c == [0, 1]), "{got:?}");
    }

    #[test]
    fn backlogged_byte_shares_follow_weights() {
        let cfg = WfqConfig {
            weights: vec![1.0, 2.0, 5.0],
        };
        let mut s = Wfq::new(3, &cfg).unwrap();
        let t = Instant::ZERO;
        let len = |q: usize, k: u64| 100 + ((k * 7919 + q as u64 * 104_729) % 1400) as u32;
        let mut queued: Vec<VecDeque<u32>> = vec![VecDeque::new(); 3];
        let mut k = 0;
        for (q, fifo) in queued.iter_mut().enumerate() {
            for _ in 0..3 {
                k += 1;
                s.enqueue(t, q, len(q, k));
                fifo.push_back(len(q, k));
            }
        }
        let mut bytes = [0u64; 3];
        for _ in 0..50_000 {
            let q = s.dequeue(t).unwrap();
            bytes[q] += u64::from(queued[q].pop_front().unwrap());
            k += 1;
            s.enqueue(t, q, len(q, k));
            queued[q].push_back(len(q, k));
        }
        let total: u64 = bytes.iter().sum();
        for (q, want) in [0.125, 0.25, 0.625].into_iter().enumerate() {
            let got = bytes[q] as f64 / total as f64;
            assert!((got - want).abs() < 0.002, "queue {q}: {got} vs {want}");
        }
    }
}
