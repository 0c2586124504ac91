//! What happened to a tunnel end, handed out as values: handshakes, sessions and their
//! rotation, a peer's move or restart, load, and the datagrams refused.
//!
//! Contract. The session ([`crate::Tunnel`]) queues a [`TunnelEvent`] at the moment each thing
//! happens (the counter of the same name in [`crate::TunnelStats`] goes up with it) and hands
//! them out in order through `Tunnel::poll_event`; two handshakes in one loop turn are two
//! events. Refusals are coalesced: consecutive ones merge into one [`TunnelEvent::Rejected`]
//! with their counts by cause, so a flood costs one queued event per poll. The queue holds at
//! most [`MAX_EVENTS`]; a driver that never polls loses the newest beyond that (the counters
//! still count them). Each event says how much it matters ([`Severity`]) and reads as one log
//! line (`Display`), the words the driver logs.

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;

use crate::session::Rejected;

/// Most events queued between two polls.
pub const MAX_EVENTS: usize = 1024;

/// How much an event matters to whoever reads the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Detail: refused datagrams.
    Debug,
    /// The normal course: handshakes, sessions, moves.
    Info,
    /// Something the operator may want to know: the peer restarted or went silent, load.
    Warn,
}

/// One thing that happened to a tunnel end; `peer` is the peer's address at that moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunnelEvent {
    /// A handshake initiation went out (a retry included).
    HandshakeInitiated {
        /// The peer's address.
        peer: Option<SocketAddr>,
    },
    /// An initiation was answered (as responder).
    HandshakeAnswered {
        /// The peer's address.
        peer: Option<SocketAddr>,
    },
    /// A handshake completed (as initiator).
    HandshakeCompleted {
        /// The peer's address.
        peer: Option<SocketAddr>,
    },
    /// A session became current: the first is established, the others are key rotations.
    SessionStarted {
        /// Sessions started so far, this one included.
        number: u64,
    },
    /// A session was dropped for age (idle past `reject_after_secs`).
    SessionExpired,
    /// The peer's address changed.
    Roamed {
        /// Its new address.
        peer: SocketAddr,
    },
    /// Data went out and nothing authentic came back: a new handshake starts.
    Unanswered {
        /// The peer's address.
        peer: Option<SocketAddr>,
    },
    /// The peer had restarted: this end's link state started over.
    LinkReset {
        /// The peer's address.
        peer: Option<SocketAddr>,
    },
    /// The peer is under load and sent a cookie: the initiation is retried with it.
    CookieReceived {
        /// The peer's address.
        peer: Option<SocketAddr>,
    },
    /// This end came under load: initiations without a cookie get a cookie reply.
    UnderLoad,
    /// Datagrams refused, by cause, since the previous event.
    Rejected(Rejected),
}

impl TunnelEvent {
    /// How much it matters.
    pub fn severity(&self) -> Severity {
        match self {
            TunnelEvent::Unanswered { .. }
            | TunnelEvent::LinkReset { .. }
            | TunnelEvent::UnderLoad => Severity::Warn,
            TunnelEvent::Rejected(_) => Severity::Debug,
            _ => Severity::Info,
        }
    }
}

/// An address, or `?` when there is none yet.
struct Peer(Option<SocketAddr>);

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(p) => write!(f, "{p}"),
            None => f.write_str("?"),
        }
    }
}

impl fmt::Display for TunnelEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TunnelEvent::HandshakeInitiated { peer } => {
                write!(f, "handshake initiation sent to {}", Peer(peer))
            }
            TunnelEvent::HandshakeAnswered { peer } => {
                write!(f, "handshake answered; peer {}", Peer(peer))
            }
            TunnelEvent::HandshakeCompleted { peer } => {
                write!(f, "handshake completed with {}", Peer(peer))
            }
            TunnelEvent::SessionStarted { number: 1 } => f.write_str("session established (#1)"),
            TunnelEvent::SessionStarted { number } => write!(f, "session rekeyed (#{number})"),
            TunnelEvent::SessionExpired => {
                f.write_str("session expired (idle past reject_after_secs)")
            }
            TunnelEvent::Roamed { peer } => write!(f, "peer moved to {peer}"),
            TunnelEvent::Unanswered { peer } => write!(
                f,
                "data to {} got no answer: starting a new handshake",
                Peer(peer)
            ),
            TunnelEvent::LinkReset { peer } => {
                write!(f, "peer {} restarted: link state started over", Peer(peer))
            }
            TunnelEvent::CookieReceived { peer } => write!(
                f,
                "peer {} is under load: retrying with its cookie",
                Peer(peer)
            ),
            TunnelEvent::UnderLoad => f.write_str(
                "under load: initiations without a cookie get a cookie reply (counted as busy)",
            ),
            TunnelEvent::Rejected(r) => write!(
                f,
                "rejected datagrams: forged +{} replayed +{} truncated +{} garbage +{} unknown_session +{} rate_limited +{} busy +{}",
                r.forged, r.replayed, r.truncated, r.garbage, r.unknown_session, r.rate_limited, r.busy
            ),
        }
    }
}

/// The queue of events a session has not handed out yet (see the module contract).
#[derive(Debug, Default)]
pub(crate) struct Events(VecDeque<TunnelEvent>);

impl Events {
    /// Queues `e`, merging refusals into a refusal at the back.
    pub(crate) fn push(&mut self, e: TunnelEvent) {
        if let (TunnelEvent::Rejected(new), Some(TunnelEvent::Rejected(back))) =
            (e, self.0.back_mut())
        {
            back.add(&new);
            return;
        }
        if self.0.len() < MAX_EVENTS {
            self.0.push_back(e);
        }
    }

    /// The oldest event.
    pub(crate) fn pop(&mut self) -> Option<TunnelEvent> {
        self.0.pop_front()
    }
}

/// Why a datagram was refused (one of [`Rejected`]'s counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Failed authentication.
    Forged,
    /// Seen before, or too old.
    Replayed,
    /// Shorter than its kind.
    Truncated,
    /// Unknown kind or version.
    Garbage,
    /// No such session.
    UnknownSession,
    /// Beyond the rate of initiations a responder processes.
    RateLimited,
    /// Under load without a cookie.
    Busy,
}

impl Rejected {
    /// Counts one datagram refused for `cause`.
    pub fn count(&mut self, cause: Cause) {
        let c = match cause {
            Cause::Forged => &mut self.forged,
            Cause::Replayed => &mut self.replayed,
            Cause::Truncated => &mut self.truncated,
            Cause::Garbage => &mut self.garbage,
            Cause::UnknownSession => &mut self.unknown_session,
            Cause::RateLimited => &mut self.rate_limited,
            Cause::Busy => &mut self.busy,
        };
        *c += 1;
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Rejected) {
        self.forged += other.forged;
        self.replayed += other.replayed;
        self.truncated += other.truncated;
        self.garbage += other.garbage;
        self.unknown_session += other.unknown_session;
        self.rate_limited += other.rate_limited;
        self.busy += other.busy;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_as_the_log_lines_and_say_how_much_they_matter() {
        let p: SocketAddr = "192.0.2.1:51820".parse().unwrap();
        let e = TunnelEvent::HandshakeCompleted { peer: Some(p) };
        assert_eq!(e.to_string(), "handshake completed with 192.0.2.1:51820");
        assert_eq!(e.severity(), Severity::Info);
        assert_eq!(
            TunnelEvent::SessionStarted { number: 1 }.to_string(),
            "session established (#1)"
        );
        assert_eq!(
            TunnelEvent::SessionStarted { number: 3 }.to_string(),
            "session rekeyed (#3)"
        );
        let w = TunnelEvent::Unanswered { peer: None };
        assert_eq!(
            w.to_string(),
            "data to ? got no answer: starting a new handshake"
        );
        assert_eq!(w.severity(), Severity::Warn);
        let mut r = Rejected::default();
        r.count(Cause::Forged);
        r.count(Cause::Forged);
        r.count(Cause::Busy);
        let e = TunnelEvent::Rejected(r);
        assert_eq!(e.severity(), Severity::Debug);
        assert!(e.to_string().contains("forged +2") && e.to_string().contains("busy +1"));
    }

    #[test]
    fn refusals_merge_and_the_queue_is_bounded() {
        let mut q = Events::default();
        let one = |c| {
            let mut r = Rejected::default();
            r.count(c);
            TunnelEvent::Rejected(r)
        };
        q.push(TunnelEvent::UnderLoad);
        for _ in 0..5000 {
            q.push(one(Cause::Busy));
        }
        q.push(TunnelEvent::SessionExpired);
        q.push(one(Cause::Forged));
        assert_eq!(q.pop(), Some(TunnelEvent::UnderLoad));
        match q.pop() {
            Some(TunnelEvent::Rejected(r)) => assert_eq!((r.busy, r.total()), (5000, 5000)),
            other => panic!("{other:?}"),
        }
        assert_eq!(q.pop(), Some(TunnelEvent::SessionExpired));
        assert!(matches!(q.pop(), Some(TunnelEvent::Rejected(r)) if r.forged == 1));
        assert_eq!(q.pop(), None);
        for _ in 0..MAX_EVENTS + 10 {
            q.push(TunnelEvent::SessionExpired);
        }
        let mut n = 0;
        while q.pop().is_some() {
            n += 1;
        }
        assert_eq!(n, MAX_EVENTS);
    }
}
