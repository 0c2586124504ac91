//! The real-time clock of the emulator, as `mslink_link::Instant`.
//!
//! Contract. [`Clock::now`] reads the monotonic clock (`CLOCK_MONOTONIC` through
//! `std::time::Instant`) and returns nanoseconds since the clock was made, so instants start
//! near zero like the simulator's. [`fine_timers`] asks the kernel for 1 ns of timer slack so
//! sleeps end within microseconds of their deadline instead of the default 50 µs slack.

use mslink_link::{Duration, Instant};

/// A monotonic clock whose zero is its creation.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base: std::time::Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    /// A clock starting now.
    pub fn new() -> Self {
        Clock {
            base: std::time::Instant::now(),
        }
    }

    /// Nanoseconds since creation.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.base.elapsed().as_nanos() as u64)
    }

    /// How long from now until `t` (zero if past).
    pub fn until(&self, t: Instant) -> Duration {
        t.saturating_since(self.now())
    }
}

/// Sets this thread's timer slack to 1 ns (prctl PR_SET_TIMERSLACK).
pub fn fine_timers() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer argument and touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_goes_back() {
        let c = Clock::new();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
        assert_eq!(c.until(a), Duration::ZERO);
    }
}
