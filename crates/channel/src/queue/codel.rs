//! CoDel (RFC 8289): the control law that drops from the head while the sojourn time stays
//! above `target` for an `interval`, at intervals shrinking as 1/sqrt(count); also each flow
//! queue's law inside FQ-CoDel.

use super::*;

/// Packets and bytes a discipline dropped inside one call, for the totals.
#[derive(Default)]
pub(super) struct Dropped {
    pub(super) packets: usize,
    pub(super) bytes: usize,
}

/// CoDel's state (RFC 8289 §5: the `codel_queue_t` variables).
#[derive(Clone, Debug, Default)]
pub(super) struct Codel {
    /// When the sojourn went above target and, if it stays there, dropping may start.
    pub(super) first_above: Option<Instant>,
    /// When the next drop is due in the dropping state.
    pub(super) drop_next: Instant,
    /// Drops since entering the dropping state.
    pub(super) count: u32,
    /// `count` when the previous dropping state began.
    pub(super) lastcount: u32,
    pub(super) dropping: bool,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct CodelParams {
    pub(super) target: Duration,
    pub(super) interval: Duration,
    pub(super) mtu: usize,
}

impl Codel {
    /// RFC 8289 §5.5: the next drop is `interval / sqrt(count)` after `t`.
    pub(super) fn control_law(t: Instant, count: u32, interval: Duration) -> Instant {
        t + Duration::from_nanos((interval.as_nanos() as f64 / (count.max(1) as f64).sqrt()) as u64)
    }

    /// RFC 8289 §5.3 (`dodequeue`): the head packet and whether the sojourn has been above
    /// target for at least an interval (with more than a packet's worth still queued).
    pub(super) fn dodequeue<T>(
        &mut self,
        now: Instant,
        q: &mut Fifo<T>,
        p: CodelParams,
    ) -> (Option<Entry<T>>, bool) {
        let Some(e) = q.pop() else {
            self.first_above = None;
            return (None, false);
        };
        let sojourn = now.saturating_since(e.enqueued);
        let mut ok_to_drop = false;
        if sojourn < p.target || q.bytes <= p.mtu {
            self.first_above = None;
        } else {
            match self.first_above {
                None => self.first_above = Some(now + p.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        (Some(e), ok_to_drop)
    }

    /// RFC 8289 §5.4 (`dequeue`): the packet to send, dropping from the head per the control
    /// law while in the dropping state.
    pub(super) fn dequeue<T>(
        &mut self,
        now: Instant,
        q: &mut Fifo<T>,
        p: CodelParams,
        stats: &mut QueueStats,
        dropped: &mut Dropped,
    ) -> Option<Entry<T>> {
        let mut drop = |e: Entry<T>, stats: &mut QueueStats| {
            stats.drop(DropCause::Aqm, e.len);
            dropped.packets += 1;
            dropped.bytes += e.len;
        };
        let (mut r, mut ok) = self.dodequeue(now, q, p);
        if self.dropping {
            if !ok {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                if let Some(e) = r.take() {
                    drop(e, stats);
                }
                self.count += 1;
                (r, ok) = self.dodequeue(now, q, p);
                if ok {
                    self.drop_next = Self::control_law(self.drop_next, self.count, p.interval);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok {
            if let Some(e) = r.take() {
                drop(e, stats);
            }
            (r, _) = self.dodequeue(now, q, p);
            self.dropping = true;
            // RFC 8289 §5.4: restart near the previous drop rate if dropping resumes soon
            // after it stopped (within 16 intervals of the last scheduled drop).
            let delta = self.count.wrapping_sub(self.lastcount);
            let recent = now < self.drop_next
                || now.saturating_since(self.drop_next) < p.interval.saturating_mul(16);
            self.count = if delta > 1 && delta < u32::MAX / 2 && recent {
                delta
            } else {
                1
            };
            self.drop_next = Self::control_law(now, self.count, p.interval);
            self.lastcount = self.count;
        }
        r
    }
}
