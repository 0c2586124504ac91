//! Token buckets that bound how many handshake initiations a responder processes.
//!
//! Contract. Every initiation costs the responder the Noise handshake's Diffie-Hellman
//! operations before it can tell a forgery from the peer, so an unauthenticated sender could
//! make it burn CPU at line rate. [`InitiationLimiter::admit`] is asked before that work: it
//! admits at most `per_source` initiations per second from one IP address (burst of the same
//! size) and at most `total` per second from all addresses together; what it refuses is
//! counted by the caller and never opened. When the total budget runs dry the responder is
//! *under load* for [`LOAD_MEMORY`]: then only initiations whose mac2 proves their source
//! address are opened (each held to its source's budget), and the others get a cookie reply
//! ([`crate::cookie`]), so a flood from spoofed addresses can neither burn CPU beyond the
//! total budget nor shut out the peer, which answers the cookie from its real address.
//! The per-source table is bounded ([`MAX_SOURCES`]); when it is full the idle entries go.
//! Time comes in as `now`; nothing here reads a clock.

use std::collections::HashMap;
use std::net::IpAddr;

use mslink_link::{Duration, Instant};

/// Most source addresses tracked at once.
pub const MAX_SOURCES: usize = 4096;

/// One token bucket: `rate` tokens per second, at most `rate` (at least 1) in store.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(rate: f64, now: Instant) -> Self {
        Bucket {
            tokens: rate.max(1.0),
            at: now,
        }
    }

    fn refill(&mut self, now: Instant, rate: f64) {
        let dt = now.saturating_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * rate).min(rate.max(1.0));
        self.at = self.at.max(now);
    }

    fn take(&mut self, now: Instant, rate: f64) -> bool {
        self.refill(now, rate);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// What an initiation shows of its source address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    /// Nothing: it may come from a spoofed address.
    Unproven,
    /// A valid mac2 made with a cookie we sent to its address: the sender receives there.
    Cookie,
}

/// What [`InitiationLimiter::admit`] decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Open it.
    Yes,
    /// Its source spent its budget: drop it.
    SourceLimited,
    /// The responder is under load and the sender has not proven its address: answer with a
    /// cookie reply ([`crate::cookie`]), open nothing.
    Busy,
}

/// How long a responder stays under load after its total budget ran dry.
pub const LOAD_MEMORY: Duration = Duration::from_secs(1);

/// Admission of handshake initiations, per source address and in total.
#[derive(Debug)]
pub struct InitiationLimiter {
    per_source: f64,
    total: f64,
    all: Option<Bucket>,
    busy_until: Option<Instant>,
    sources: HashMap<IpAddr, Bucket>,
}

impl InitiationLimiter {
    /// A limiter admitting `per_source` and `total` initiations per second (0: no limit).
    pub fn new(per_source: f64, total: f64) -> Self {
        InitiationLimiter {
            per_source,
            total,
            all: None,
            busy_until: None,
            sources: HashMap::new(),
        }
    }

    /// Whether the total budget ran dry less than [`LOAD_MEMORY`] ago.
    pub fn under_load(&self, now: Instant) -> bool {
        self.busy_until.is_some_and(|t| now < t)
    }

    /// Whether an initiation from `from` may be opened now (and spends its tokens if so).
    /// [`Proof::Cookie`]: its mac2 shows the sender receives at `from`, so it is held only to
    /// its source's budget and a flood from spoofed addresses cannot shut it out. An
    /// [`Proof::Unproven`] one spends from the total too, and gets [`Admit::Busy`] while the
    /// responder is under load.
    pub fn admit(&mut self, now: Instant, from: IpAddr, proof: Proof) -> Admit {
        let proven = proof == Proof::Cookie;
        if !proven && self.under_load(now) {
            return Admit::Busy;
        }
        if self.per_source > 0.0 {
            if self.sources.len() >= MAX_SOURCES && !self.sources.contains_key(&from) {
                let rate = self.per_source;
                // Forget addresses whose bucket has refilled: they lose nothing by it.
                self.sources.retain(|_, b| {
                    b.refill(now, rate);
                    b.tokens < rate.max(1.0)
                });
                if self.sources.len() >= MAX_SOURCES {
                    return if proven {
                        Admit::SourceLimited
                    } else {
                        Admit::Busy
                    };
                }
            }
            let rate = self.per_source;
            let b = self
                .sources
                .entry(from)
                .or_insert_with(|| Bucket::full(rate, now));
            // Check without spending, so a source refused by the total keeps its token.
            b.refill(now, rate);
            if b.tokens < 1.0 {
                return Admit::SourceLimited;
            }
        }
        if self.total > 0.0 && !proven {
            let rate = self.total;
            let all = self.all.get_or_insert_with(|| Bucket::full(rate, now));
            if !all.take(now, rate) {
                self.busy_until = Some(now + LOAD_MEMORY);
                return Admit::Busy;
            }
        }
        if let Some(b) = self.sources.get_mut(&from) {
            b.tokens -= 1.0;
        }
        Admit::Yes
    }

    /// Source addresses currently tracked.
    pub fn tracked(&self) -> usize {
        self.sources.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))
    }

    #[test]
    fn one_source_gets_its_rate_and_no_more() {
        let mut l = InitiationLimiter::new(2.0, 0.0);
        let t0 = Instant::ZERO;
        assert!(l.admit(t0, ip(1), Proof::Unproven) == Admit::Yes);
        assert!(l.admit(t0, ip(1), Proof::Unproven) == Admit::Yes);
        assert!(
            l.admit(t0, ip(1), Proof::Unproven) == Admit::SourceLimited,
            "burst of 2 spent"
        );
        assert!(
            l.admit(t0, ip(2), Proof::Unproven) == Admit::Yes,
            "another source has its own bucket"
        );
        // Over ten seconds at 2 per second: 20 more, whatever the offered load.
        let mut admitted = 0;
        for ms in (1..=10_001).step_by(10) {
            admitted += (l.admit(t0 + Duration::from_millis(ms), ip(1), Proof::Unproven)
                == Admit::Yes) as u32;
        }
        assert_eq!(admitted, 20);
    }

    #[test]
    fn the_total_bounds_a_flood_from_many_sources() {
        let mut l = InitiationLimiter::new(5.0, 10.0);
        let t0 = Instant::ZERO;
        let mut admitted = 0;
        for i in 0..1000u32 {
            admitted += (l.admit(
                t0 + Duration::from_millis(u64::from(i)),
                ip(i),
                Proof::Unproven,
            ) == Admit::Yes) as u32;
        }
        // 10 in store, then under load: nothing unproven until a second after it ran dry.
        assert_eq!(admitted, 10);
        assert!(l.under_load(t0 + Duration::from_millis(999)));
        // A proven sender is held to its own budget only.
        assert_eq!(
            l.admit(t0 + Duration::from_millis(999), ip(5000), Proof::Cookie),
            Admit::Yes
        );
        // A refused source kept its token: once the total refills it is admitted at once.
        assert_eq!(
            l.admit(t0 + Duration::from_secs(5), ip(999), Proof::Unproven),
            Admit::Yes
        );
    }

    #[test]
    fn the_source_table_stays_bounded() {
        let mut l = InitiationLimiter::new(1.0, 0.0);
        let t0 = Instant::ZERO;
        for i in 0..(MAX_SOURCES as u32 + 10) {
            l.admit(t0, ip(i), Proof::Unproven);
        }
        assert!(l.tracked() <= MAX_SOURCES);
        // After the buckets refill, new sources evict the idle ones and are admitted.
        let later = t0 + Duration::from_secs(2);
        assert_eq!(l.admit(later, ip(1 << 20), Proof::Unproven), Admit::Yes);
        assert!(l.tracked() <= MAX_SOURCES);
    }

    #[test]
    fn zero_means_unlimited() {
        let mut l = InitiationLimiter::new(0.0, 0.0);
        assert!((0..10_000).all(|_| l.admit(Instant::ZERO, ip(1), Proof::Unproven) == Admit::Yes));
        assert_eq!(l.tracked(), 0);
    }
}
