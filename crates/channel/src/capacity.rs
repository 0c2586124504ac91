//! Capacity models: when a frame that starts at `now` has left the sender.
//!
//! Contract (sans-IO). A MAC that is idle at `now` calls [`Capacity::transmit`] with the
//! frame length and stays busy until the instant returned; the model keeps whatever state it
//! needs between frames. Three models:
//!
//! * [`Capacity::Unlimited`]: no serialisation delay;
//! * [`Capacity::Rate`]: a constant rate, `len * 8 / rate` (rounded up to the nanosecond, as
//!   the simulator's wired and wireless segments do);
//! * [`Capacity::Trace`]: a Mahimahi packet-delivery trace. Each opportunity carries
//!   [`OPPORTUNITY_BYTES`]; a frame uses the opportunities at or after `now` until its bytes
//!   are all carried and leaves at the time of the last one it used. What a frame leaves of an
//!   opportunity serves the next frame only if that frame is ready by then; otherwise it is
//!   wasted, as in Mahimahi's `mm-link`. Trace time starts at the `epoch` given on creation.

use std::sync::Arc;

use mslink_link::{Duration, Instant};

use crate::mahimahi::{MahimahiTrace, OPPORTUNITY_BYTES};

/// Where a trace-driven link stands: the next opportunity with bytes left.
#[derive(Clone, Debug)]
pub struct TraceCursor {
    trace: Arc<MahimahiTrace>,
    epoch: Instant,
    /// Index of the opportunity in use or next (across loops).
    k: u64,
    /// Bytes left in opportunity `k`.
    left: usize,
}

impl TraceCursor {
    /// A link following `trace`, whose millisecond 0 is `epoch`.
    pub fn new(trace: Arc<MahimahiTrace>, epoch: Instant) -> Self {
        TraceCursor {
            trace,
            epoch,
            k: 0,
            left: OPPORTUNITY_BYTES,
        }
    }

    /// The trace followed.
    pub fn trace(&self) -> &Arc<MahimahiTrace> {
        &self.trace
    }

    /// The instant of the trace's millisecond 0.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    fn time(&self, k: u64) -> Instant {
        self.epoch + Duration::from_millis(self.trace.at_ms(k))
    }

    fn transmit(&mut self, now: Instant, len: usize) -> Instant {
        if self.time(self.k) < now {
            // Opportunities that passed while the queue was empty are gone.
            let since = now.saturating_since(self.epoch).as_nanos();
            let ms = since.div_ceil(1_000_000);
            self.k = self.k.max(self.trace.first_at_or_after_ms(ms));
            self.left = OPPORTUNITY_BYTES;
        }
        let mut remaining = len.max(1);
        loop {
            let take = remaining.min(self.left);
            remaining -= take;
            self.left -= take;
            let at = self.time(self.k);
            if self.left == 0 {
                self.k += 1;
                self.left = OPPORTUNITY_BYTES;
            }
            if remaining == 0 {
                return at;
            }
        }
    }
}

/// How fast a direction of a link carries frames.
#[derive(Clone, Debug)]
pub enum Capacity {
    /// No serialisation delay at all.
    Unlimited,
    /// A constant rate in bits per second.
    Rate {
        /// Bits per second (positive).
        bps: u64,
    },
    /// A Mahimahi packet-delivery trace.
    Trace(TraceCursor),
}

impl Capacity {
    /// A constant `bps`; 0 means unlimited.
    pub fn rate(bps: u64) -> Self {
        if bps == 0 {
            Capacity::Unlimited
        } else {
            Capacity::Rate { bps }
        }
    }

    /// A trace-driven link whose trace time 0 is `epoch`.
    pub fn trace(trace: Arc<MahimahiTrace>, epoch: Instant) -> Self {
        Capacity::Trace(TraceCursor::new(trace, epoch))
    }

    /// The MAC, idle at `now`, sends a frame of `len` bytes: the instant its last byte leaves.
    pub fn transmit(&mut self, now: Instant, len: usize) -> Instant {
        match self {
            Capacity::Unlimited => now,
            Capacity::Rate { bps } => now + Duration::transmission(len as u64, *bps),
            Capacity::Trace(c) => c.transmit(now, len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(x)
    }

    #[test]
    fn constant_rate_serialises() {
        let mut c = Capacity::rate(8_000_000);
        // 1000 bytes at 8 Mbit/s: 1 ms.
        assert_eq!(c.transmit(ms(5), 1000), ms(6));
        assert_eq!(Capacity::rate(0).transmit(ms(5), 1000), ms(5));
    }

    #[test]
    fn trace_frames_share_and_waste_opportunities() {
        // Two opportunities at ms 1, one at ms 3, period 3.
        let t = Arc::new(MahimahiTrace::parse("1\n1\n3\n").unwrap());
        let mut c = Capacity::trace(t, Instant::ZERO);
        // A full-size frame takes the first opportunity at 1 ms.
        assert_eq!(c.transmit(ms(0), 1504), ms(1));
        // Two 752-byte frames share the second one.
        assert_eq!(c.transmit(ms(1), 752), ms(1));
        assert_eq!(c.transmit(ms(1), 752), ms(1));
        // A frame of two opportunities' worth uses ms 3 and the next lap's ms 4.
        assert_eq!(c.transmit(ms(1), 3008), ms(4));
        // Ready at 5 ms: the next opportunity is at 6 ms (lap 1's "3").
        assert_eq!(c.transmit(ms(5), 100), ms(6));
        // The 1404 bytes left at ms 6 are wasted when the next frame comes at 6.5 ms.
        let late = ms(6) + Duration::from_micros(500);
        assert_eq!(c.transmit(late, 100), ms(7));
        // Idle for a long time: the next frame waits for the next opportunity only.
        assert_eq!(c.transmit(ms(3001), 10), ms(3001));
        assert_eq!(c.transmit(ms(3001), 1504), ms(3001));
        assert_eq!(c.transmit(ms(3001), 1504), ms(3003));
    }

    #[test]
    fn trace_capacity_matches_bytes_carried() {
        // Closed form: a saturated link carries opportunities × 1504 bytes per period.
        let t = Arc::new(MahimahiTrace::parse("0\n2\n2\n5\n9\n10\n").unwrap());
        let mut c = Capacity::trace(t.clone(), Instant::ZERO);
        let mut now = Instant::ZERO;
        let mut frames = 0u64;
        while now < ms(1000) {
            now = c.transmit(now, 1504);
            frames += 1;
        }
        // 6 opportunities per 10 ms lap: 599 fall before 1000 ms (lap 99's last one is at
        // 1000 ms), and the loop stops after the frame that leaves at 1000 ms.
        assert_eq!(frames, 6 * 100);
    }
}
