//! Our own time: [`Instant`] and [`Duration`] as `u64` nanoseconds (docs/architecture.md rule 3).
//!
//! Contract: both types are plain integers, constructible from any value, so a simulator can
//! start at any instant and an emulator can map its monotonic clock onto them. Arithmetic
//! saturates instead of wrapping or panicking: an instant never goes below zero and a
//! duration sum never overflows into the past. Nothing here reads a clock.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// A point in time, in nanoseconds since an origin the driver chooses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Instant {
    /// The origin (time zero).
    pub const ZERO: Instant = Instant(0);
    /// The farthest representable instant; used as "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `ns` nanoseconds after the origin.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    /// An instant `us` microseconds after the origin (saturating).
    pub const fn from_micros(us: u64) -> Self {
        Instant(us.saturating_mul(1_000))
    }
    /// An instant `ms` milliseconds after the origin (saturating).
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms.saturating_mul(1_000_000))
    }
    /// An instant `s` seconds after the origin (saturating).
    pub const fn from_secs(s: u64) -> Self {
        Instant(s.saturating_mul(1_000_000_000))
    }
    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the origin, as a float (for reports only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Time elapsed from `earlier` to `self`; zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    /// `self + d`, saturating at [`Instant::MAX`].
    pub const fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span.
    pub const MAX: Duration = Duration(u64::MAX);

    /// A span of `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    /// A span of `us` microseconds (saturating).
    pub const fn from_micros(us: u64) -> Self {
        Duration(us.saturating_mul(1_000))
    }
    /// A span of `ms` milliseconds (saturating).
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms.saturating_mul(1_000_000))
    }
    /// A span of `s` seconds (saturating).
    pub const fn from_secs(s: u64) -> Self {
        Duration(s.saturating_mul(1_000_000_000))
    }
    /// A span from float seconds, rounded to the nearest nanosecond; negative or NaN gives zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Duration(0)
        } else {
            Duration((s * 1e9).round().min(u64::MAX as f64) as u64)
        }
    }
    /// The time to send `bytes` at `bits_per_second`, rounded up to whole nanoseconds.
    /// A zero rate means an unlimited link and gives zero.
    pub const fn transmission(bytes: u64, bits_per_second: u64) -> Self {
        if bits_per_second == 0 {
            return Duration(0);
        }
        let bits = bytes as u128 * 8 * 1_000_000_000;
        let bps = bits_per_second as u128;
        let ns = bits.div_ceil(bps);
        if ns > u64::MAX as u128 {
            Duration(u64::MAX)
        } else {
            Duration(ns as u64)
        }
    }
    /// Nanoseconds in this span.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds, as a float (for reports only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// `self * k`, saturating.
    pub const fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0.saturating_add(o.0))
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, o: Duration) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
        assert_eq!(
            Instant::from_secs(1) - Instant::from_secs(2),
            Duration::ZERO
        );
        assert_eq!(
            Duration::from_millis(3) - Duration::from_millis(5),
            Duration::ZERO
        );
        assert_eq!(Instant::from_millis(1500).as_nanos(), 1_500_000_000);
    }

    #[test]
    fn transmission_time_rounds_up() {
        // 004 Table I: a 100-byte HSCSD frame at 86.4 kbit/s takes 800/86400 s = 9.259259.. ms.
        assert_eq!(Duration::transmission(100, 86_400).as_nanos(), 9_259_260);
        // A 1000-byte WLAN frame at 5 Mbit/s takes exactly 1.6 ms.
        assert_eq!(
            Duration::transmission(1000, 5_000_000),
            Duration::from_micros(1600)
        );
        assert_eq!(Duration::transmission(1000, 0), Duration::ZERO);
    }

    #[test]
    fn float_seconds_are_clamped() {
        assert_eq!(Duration::from_secs_f64(-1.0), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(f64::NAN), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(0.25), Duration::from_millis(250));
    }
}
