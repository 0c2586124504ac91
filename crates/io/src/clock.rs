//! The real-time clock of the emulator, as `mslink_link::Instant`.
//!
//! Contract. [`Clock::now`] reads the monotonic clock (`CLOCK_MONOTONIC` through
//! `std::time::Instant`) and returns nanoseconds since the clock's zero: its creation
//! ([`Clock::new`], so instants start near zero like the simulator's), or the Unix epoch as
//! the wall clock said at creation ([`Clock::from_unix_epoch`], for protocols whose timestamps
//! must keep growing across restarts, such as the tunnel's handshake). Either way it never
//! goes back, whatever happens to the wall clock later. One clock for every real-time driver. [`fine_timers`] asks the kernel for 1 ns of timer slack so
//! sleeps end within microseconds of their deadline instead of the default 50 µs slack.

use mslink_link::{Duration, Instant};

/// A monotonic clock whose zero is its creation.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base: std::time::Instant,
    /// Nanoseconds from the clock's zero to `base`.
    offset_ns: u64,
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
            offset_ns: 0,
        }
    }

    /// A clock whose zero is the Unix epoch, read once from the wall clock (0 if the wall
    /// clock is before 1970).
    pub fn from_unix_epoch() -> Self {
        let offset_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Clock {
            base: std::time::Instant::now(),
            offset_ns,
        }
    }

    /// Nanoseconds since the clock's zero.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.offset_ns + self.base.elapsed().as_nanos() as u64)
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
        let u = Clock::from_unix_epoch();
        let (x, y) = (u.now(), u.now());
        assert!(y >= x);
        // 2020-01-01 in ns since the epoch: a wall-clock zero is far from a creation zero.
        assert!(x.as_nanos() > 1_577_836_800_000_000_000, "{x:?}");
    }
}
