//! PIE (RFC 8033): a drop probability updated every `t_update` from the queue delay and its
//! trend (§4.2), applied to arriving packets (§4.1), with the burst allowance (§4.4).

use super::*;

/// PIE's state (RFC 8033 §5).
#[derive(Clone, Debug)]
pub(super) struct Pie {
    pub(super) drop_prob: f64,
    /// Derandomisation accumulator (RFC 8033 §5.1's `accu_prob`).
    pub(super) accu_prob: f64,
    /// Queue delay at the previous update, s.
    pub(super) qdelay_old: f64,
    /// Burst allowance left, s.
    pub(super) burst_allowance: f64,
    /// The next periodic update.
    pub(super) next_update: Instant,
    pub(super) target: f64,
    pub(super) tupdate: Duration,
    pub(super) alpha: f64,
    pub(super) beta: f64,
    pub(super) max_burst: f64,
    pub(super) mtu: usize,
}

impl Pie {
    pub(super) fn new(c: &QueueConfig) -> Self {
        let a = &c.aqm;
        Pie {
            drop_prob: 0.0,
            accu_prob: 0.0,
            qdelay_old: 0.0,
            burst_allowance: a.max_burst_ms / 1e3,
            next_update: Instant::ZERO + ms(a.tupdate_ms),
            target: c.target().as_secs_f64(),
            tupdate: ms(a.tupdate_ms),
            alpha: a.alpha,
            beta: a.beta,
            max_burst: a.max_burst_ms / 1e3,
            mtu: a.mtu_bytes,
        }
    }

    /// The queue delay at `t`: the sojourn of the head packet so far (RFC 8033 §4.3 allows
    /// timestamps instead of the departure-rate estimate).
    pub(super) fn qdelay<T>(q: &Fifo<T>, t: Instant) -> f64 {
        q.items
            .front()
            .map_or(0.0, |e| t.saturating_since(e.enqueued).as_secs_f64())
    }

    /// Runs the periodic updates due by `now` at their own instants (the queue has not
    /// changed since the previous call, so its head then is its head now).
    pub(super) fn catch_up<T>(&mut self, now: Instant, q: &Fifo<T>) {
        while self.next_update <= now {
            let t = self.next_update;
            let idle = q.items.is_empty() && self.drop_prob == 0.0 && self.qdelay_old == 0.0;
            if idle && self.burst_allowance >= self.max_burst {
                // Nothing would change: skip to the first update after `now`.
                let step = self.tupdate.as_nanos().max(1);
                let k = (now.as_nanos() - t.as_nanos()) / step + 1;
                self.next_update = t + Duration::from_nanos(k * step);
                break;
            }
            self.update(Self::qdelay(q, t));
            self.next_update = t + self.tupdate;
        }
    }

    /// RFC 8033 §4.2 and §5.2 (`calculate_drop_prob`), every `tupdate`.
    pub(super) fn update(&mut self, qdelay: f64) {
        let mut p = self.alpha * (qdelay - self.target) + self.beta * (qdelay - self.qdelay_old);
        // RFC 8033 §4.2: auto-tuning, the smaller the drop probability the smaller the step.
        let dp = self.drop_prob;
        p /= if dp < 0.000001 {
            2048.0
        } else if dp < 0.00001 {
            512.0
        } else if dp < 0.0001 {
            128.0
        } else if dp < 0.001 {
            32.0
        } else if dp < 0.01 {
            8.0
        } else if dp < 0.1 {
            2.0
        } else {
            1.0
        };
        // RFC 8033 §4.2: at most 2% more per update once above 10%.
        if dp >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        // RFC 8033 §4.2: decay exponentially once the delay is well below target.
        if qdelay < self.target / 2.0 && self.qdelay_old < self.target / 2.0 {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.qdelay_old = qdelay;
        self.burst_allowance = (self.burst_allowance - self.tupdate.as_secs_f64()).max(0.0);
    }

    /// RFC 8033 §4.1 and §5.1 (`drop_early`, with the derandomisation of §5.1): whether an
    /// arriving packet is dropped.
    pub(super) fn drop_early<T>(&mut self, q: &Fifo<T>, rng: &mut ChaCha8Rng) -> bool {
        // Work-conserving safeguards (§4.1).
        if (self.qdelay_old < self.target / 2.0 && self.drop_prob < 0.2) || q.bytes <= 2 * self.mtu
        {
            return false;
        }
        if self.drop_prob == 0.0 {
            self.accu_prob = 0.0;
        }
        self.accu_prob += self.drop_prob;
        if self.accu_prob < 0.85 {
            return false;
        }
        if self.accu_prob >= 8.5 {
            return true;
        }
        rng.gen::<f64>() < self.drop_prob
    }
}
