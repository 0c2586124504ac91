//! A small table of timers indexed by an enum (docs/architecture.md rule 2).
//!
//! Contract: each state machine names its timers with a `#[repr(usize)]`-like enum and keeps a
//! `Timers<N>`. Arming replaces the previous deadline; [`Timers::next`] is what the machine
//! returns from `poll_timeout`; [`Timers::expired`] clears and reports a timer whose deadline
//! is at or before `now`. No clock is read: `now` always comes from the caller.

use crate::time::Instant;

/// `N` optional deadlines.
#[derive(Clone, Debug)]
pub struct Timers<const N: usize> {
    at: [Option<Instant>; N],
}

impl<const N: usize> Default for Timers<N> {
    fn default() -> Self {
        Timers { at: [None; N] }
    }
}

impl<const N: usize> Timers<N> {
    /// Arms timer `i` for `at` (replacing any earlier deadline).
    pub fn set(&mut self, i: usize, at: Instant) {
        self.at[i] = Some(at);
    }
    /// Arms timer `i` only if it is not armed already.
    pub fn set_if_idle(&mut self, i: usize, at: Instant) {
        if self.at[i].is_none() {
            self.at[i] = Some(at);
        }
    }
    /// Disarms timer `i`.
    pub fn clear(&mut self, i: usize) {
        self.at[i] = None;
    }
    /// The deadline of timer `i`, if armed.
    pub fn get(&self, i: usize) -> Option<Instant> {
        self.at[i]
    }
    /// True (and disarmed) if timer `i` is due at `now`.
    pub fn expired(&mut self, i: usize, now: Instant) -> bool {
        match self.at[i] {
            Some(t) if t <= now => {
                self.at[i] = None;
                true
            }
            _ => false,
        }
    }
    /// The earliest armed deadline.
    pub fn next(&self) -> Option<Instant> {
        self.at.iter().flatten().min().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_deadline_and_expiry() {
        let mut t = Timers::<3>::default();
        assert_eq!(t.next(), None);
        t.set(0, Instant::from_millis(30));
        t.set(2, Instant::from_millis(10));
        t.set_if_idle(2, Instant::from_millis(50));
        assert_eq!(t.next(), Some(Instant::from_millis(10)));
        assert!(!t.expired(0, Instant::from_millis(20)));
        assert!(t.expired(2, Instant::from_millis(20)));
        assert!(!t.expired(2, Instant::from_millis(20)));
        assert_eq!(t.next(), Some(Instant::from_millis(30)));
    }
}
