//! Lag bookkeeping for ELF's lag compensation (003 §7, Fig. 12): how far each flow is behind
//! the service its weight entitles it to.
//!
//! Contract. Each flow has a *lag* in bytes: service owed minus service received, where
//! received is delivered bytes and owed depends on the flow's kind (003 §6.3):
//!
//! * a guaranteed flow with `W_i = B_i / B` is owed `W_i` bytes of delivered data for every
//!   byte of air time the link spends while the flow is backlogged (that is `B_i` per second
//!   on a link of rate `B`): its reservation;
//! * a best-effort flow is owed `W_j / sum_k W_k` of every byte the best-effort flows deliver
//!   while it is backlogged (the sum over the backlogged best-effort flows): outcome fairness
//!   among them.
//!
//! The lag stays in `[-limit, limit]`: a flow does not bank unbounded credit while it gets
//! more than its share (e.g. when others are idle) nor an unbounded debt from a long error
//! burst. While a queue is empty its lag is frozen. O(1) per event: owed service is read off
//! two clocks (air bytes; best-effort delivered bytes per unit of backlogged weight) instead
//! of being added to every flow.
//!
//! Outcome reports refer to the last frame the queue sent; a MAC with several frames of one
//! queue in flight (of different lengths) is credited with the last length (ours).

/// Per-flow lag state.
#[derive(Clone, Copy, Debug)]
struct LagFlow {
    /// `W_i` (for a guaranteed flow `B_i / B`).
    weight: f64,
    guaranteed: bool,
    backlogged: bool,
    /// While backlogged: `lag = weight * clock - credit`. While idle: the frozen lag.
    credit: f64,
    /// Length of the last frame sent.
    last_len: f64,
    /// Backlogged best-effort weight when that frame was sent (best-effort flows).
    last_be_weight: f64,
}

/// Lags of all flows of one ELF scheduler.
#[derive(Clone, Debug)]
pub(super) struct Lags {
    limit: f64,
    /// Air time sent so far, in bytes: the clock of guaranteed flows' owed service.
    air: f64,
    /// Best-effort bytes delivered per unit of backlogged best-effort weight: the clock of
    /// best-effort flows' owed service.
    be_clock: f64,
    /// `sum W_k` over backlogged best-effort flows.
    be_weight: f64,
    flows: Vec<LagFlow>,
}

impl Lags {
    /// Flows given as `(W_i, guaranteed)`, all idle with zero lag.
    pub(super) fn new(flows: impl Iterator<Item = (f64, bool)>, limit: f64) -> Self {
        Lags {
            limit,
            air: 0.0,
            be_clock: 0.0,
            be_weight: 0.0,
            flows: flows
                .map(|(weight, guaranteed)| LagFlow {
                    weight,
                    guaranteed,
                    backlogged: false,
                    credit: 0.0,
                    last_len: 0.0,
                    last_be_weight: 0.0,
                })
                .collect(),
        }
    }

    fn clock(&self, q: usize) -> f64 {
        if self.flows[q].guaranteed {
            self.air
        } else {
            self.be_clock
        }
    }

    /// Current lag of queue `q`, in bytes (positive: behind).
    pub(super) fn lag(&self, q: usize) -> f64 {
        let f = &self.flows[q];
        if f.backlogged {
            f.weight * self.clock(q) - f.credit
        } else {
            f.credit
        }
    }

    /// Sets the lag of `q` to `lag`, clamped to `[-limit, limit]`.
    fn set_lag(&mut self, q: usize, lag: f64) {
        let lag = lag.clamp(-self.limit, self.limit);
        let clock = self.clock(q);
        let f = &mut self.flows[q];
        f.credit = if f.backlogged {
            f.weight * clock - lag
        } else {
            lag
        };
    }

    /// Queue `q` was empty and has a frame again: owed service accrues from now.
    pub(super) fn backlogged(&mut self, q: usize) {
        let lag = self.lag(q);
        let f = &mut self.flows[q];
        f.backlogged = true;
        if !f.guaranteed {
            self.be_weight += f.weight;
        }
        self.set_lag(q, lag);
    }

    /// Queue `q` sends a frame of `len` bytes; `emptied` if that was its last. Every
    /// backlogged guaranteed flow, `q` included, is owed its share of this air time.
    pub(super) fn sent(&mut self, q: usize, len: u32, emptied: bool) {
        self.air += f64::from(len);
        let be_weight = self.be_weight;
        let f = &mut self.flows[q];
        f.last_len = f64::from(len);
        f.last_be_weight = be_weight;
        if emptied {
            let lag = self.lag(q);
            let f = &mut self.flows[q];
            f.backlogged = false;
            if !f.guaranteed {
                self.be_weight = (self.be_weight - f.weight).max(0.0);
            }
            self.set_lag(q, lag);
        }
    }

    /// The last frame of `q` was delivered or lost.
    pub(super) fn report(&mut self, q: usize, delivered: bool) {
        if !delivered {
            return;
        }
        let f = self.flows[q];
        if !f.guaranteed && f.last_be_weight > 0.0 {
            // 003 §6.3: the best-effort flows share what the aggregate delivers by weight.
            let per_weight = f.last_len / f.last_be_weight;
            self.be_clock += per_weight;
            if !f.backlogged {
                // `q` was backlogged when it sent this frame but has emptied since, so the
                // clock's advance does not reach its frozen lag: add its own share directly.
                self.flows[q].credit += f.weight * per_weight;
            }
        }
        let lag = self.lag(q) - f.last_len;
        self.set_lag(q, lag);
    }

    /// True when `q` is owed more than one of its frames: it then asks for its full power
    /// (003 §7: "receives throughput beyond its reservation so it can clear its lag").
    pub(super) fn lagging(&self, q: usize) -> bool {
        let f = &self.flows[q];
        self.lag(q) > f.last_len.max(1.0)
    }
}
