//! The tunnel's session layer: one end of an authenticated, encrypted UDP tunnel carrying a
//! [`MultiServiceLink`] end to end (004 §IV: the link layer's classifier, services and
//! scheduler run unchanged; the tunnel is their MAC).
//!
//! Contract. [`Tunnel`] is sans-IO (docs/architecture.md rule 1-2): no clock, no socket, no file; `now`
//! comes in, datagrams and packets go in and out through these calls, in this order per event:
//!
//! * `handle_packet(now, ip_packet)`: a packet from the TUN device goes to the link's
//!   classifier and services; a refusal (too large, queue full) comes back and is counted;
//! * `handle_datagram(now, from, bytes)`: a UDP payload from address `from`; decrypted in
//!   place. A datagram that fails parsing or authentication is counted by cause
//!   ([`Rejected`]) and dropped: it never reaches the link, is never answered, and moves no
//!   state (replay window, peer address, handshake);
//! * `handle_timeout(now)` when `now` reaches `poll_timeout()` (link timers, keepalives,
//!   handshake retries, rekeying, session expiry); a call with nothing due does nothing;
//! * `poll_transmit(now, buf)` until `None`: clears `buf`, writes one datagram, returns where
//!   to send it;
//! * `poll_deliver()` until `None`: IP packets for the TUN device.
//!
//! Sessions (after WireGuard's protocol, with Noise IK or NNpsk0 from [`crate::handshake`]):
//! an end with a peer address and something to send starts a handshake; the responder keeps
//! the new keys as *next* until the first authentic datagram on them (key confirmation), the
//! initiator makes them *current* at once and sends a keepalive to confirm them. The last
//! *previous* session keeps opening datagrams still in flight after a rekey. Rekeying: on
//! sending, the initiator of a session starts a new handshake when it is `rekey_after_secs`
//! old (the responder at the midpoint between that and `reject_after_secs`) or has sealed
//! `rekey_after_datagrams`; an idle tunnel does not rekey; no session is used past `reject_after_secs`. Keepalives: an empty
//! transport datagram when data arrived and nothing went back for `keepalive_ms`, and every
//! `persistent_keepalive_ms` if set. Roaming: the peer's address is the source of the latest
//! authentic datagram. Initiations carry the initiator's timestamp and a responder refuses one
//! not newer than the last it accepted (a replayed initiation is never answered).
//!
//! Recovery (WireGuard's timers, plus link state): when data was sent and nothing authentic
//! came back for `keepalive_ms + handshake_retry_ms` (the peer answers data within
//! `keepalive_ms` while it lives), a new handshake starts, retried every `handshake_retry_ms`
//! for up to [`REKEY_ATTEMPT`]; an end without a usable session that receives a datagram for an
//! unknown session from its peer's address starts one at once. Every handshake carries each
//! end's *incarnation* (random, drawn at start): when the peer's differs from the one this end
//! knew, the peer has restarted, so this end drops the old sessions and starts its link over
//! (`link_resets`), and both ends' recovery services count from zero again.
//!
//! Load (WireGuard's cookies, [`crate::cookie`]): an initiation whose mac1 is wrong is refused
//! before any Diffie-Hellman work; while the budget of initiations per second is spent, only
//! initiations whose mac2 proves their source address are opened, and the others get a cookie
//! reply. State is bounded: at most three sessions and one handshake in progress, a limiter
//! table of at most [`crate::ratelimit::MAX_SOURCES`] addresses, and at most [`MAX_CONTROL`]
//! handshake datagrams waiting to be sent ([`Tunnel::footprint`]).

use crate::ratelimit::InitiationLimiter;
use std::collections::VecDeque;
use std::net::SocketAddr;

use mslink_link::config::{LinkConfig, LinkConfigError};
use mslink_link::link::{LinkStats, MultiServiceLink, Refused};
use mslink_link::timer::Timers;
use mslink_link::{Duration, Instant};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::config::SessionConfig;
use crate::cookie::{self, CookieError, MacCheck, NONCE_LEN};
use crate::crypto::{Keypair, OpenError};
use crate::events::{Cause, Events, TunnelEvent};
use crate::handshake::{respond, Credentials, HandshakeError, Initiator, MAX_NOISE_LEN};
use crate::ratelimit::{Admit, Proof};
use crate::wire::{Datagram, DatagramRepr, Kind, WireError, MACS_LEN, TRANSPORT_HEADER_LEN};

/// How long an end keeps retrying a handshake that silence started (WireGuard's 90 s).
pub const REKEY_ATTEMPT: Duration = Duration::from_secs(90);
/// Most handshake datagrams (responses, initiations, cookie replies) waiting to be sent; an
/// initiation that would add one more is counted `rate_limited` and dropped.
pub const MAX_CONTROL: usize = 1024;
/// Cookie replies are sent only while fewer handshake datagrams than this wait (a flood's
/// replies never crowd out the response to a proven initiation); beyond it the initiation is
/// still counted `busy`, and its sender retries.
pub const MAX_COOKIE_BACKLOG: usize = MAX_CONTROL / 2;

/// Datagrams dropped before reaching the link, by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rejected {
    /// Failed authentication (transport tag, handshake message, unknown static key).
    pub forged: u64,
    /// Authentic once, seen again (or older than the replay window; or an initiation whose
    /// timestamp is not newer than the last accepted).
    pub replayed: u64,
    /// Shorter than the fixed part of its kind.
    pub truncated: u64,
    /// Unknown kind or version.
    pub garbage: u64,
    /// A transport or response datagram for a session index we do not have.
    pub unknown_session: u64,
    /// Initiations beyond the rate a responder processes (`ratelimit`), never opened.
    pub rate_limited: u64,
    /// Initiations that arrived while the responder was under load without a cookie proving
    /// their source address: answered with a cookie reply, never opened.
    pub busy: u64,
}

impl Rejected {
    /// All rejected datagrams.
    pub fn total(&self) -> u64 {
        self.forged
            + self.replayed
            + self.truncated
            + self.garbage
            + self.unknown_session
            + self.rate_limited
            + self.busy
    }
}

/// Counters of one tunnel end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TunnelStats {
    /// UDP datagrams handed to `handle_datagram`.
    pub datagrams_received: u64,
    /// Their bytes.
    pub bytes_received: u64,
    /// Datagrams produced by `poll_transmit`.
    pub datagrams_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// Datagrams dropped, by cause.
    pub rejected: Rejected,
    /// Link frames opened and handed to the link.
    pub frames_received: u64,
    /// Link frames sealed and sent.
    pub frames_sent: u64,
    /// Empty keepalives sent.
    pub keepalives_sent: u64,
    /// Empty keepalives received (authentic).
    pub keepalives_received: u64,
    /// Handshake initiations sent (retries included).
    pub handshakes_initiated: u64,
    /// Handshakes completed as initiator.
    pub handshakes_completed: u64,
    /// How long the latest completed one took (µs), from its first initiation to the
    /// response, retries and a cookie round trip included: what a user waits for.
    pub last_handshake_us: u64,
    /// Initiations answered as responder.
    pub handshakes_answered: u64,
    /// Handshakes started because sent data got no answer (the peer may have restarted).
    pub handshakes_after_silence: u64,
    /// Cookie replies sent (as a responder under load).
    pub cookie_replies_sent: u64,
    /// Cookie replies received and opened (as an initiator).
    pub cookies_received: u64,
    /// Times the peer had restarted and this end started its link over.
    pub link_resets: u64,
    /// Sessions that became current (either role); the first one is not a rekey.
    pub sessions_started: u64,
    /// Sessions dropped for age.
    pub sessions_expired: u64,
    /// Times the peer's address changed.
    pub roams: u64,
    /// IP packets taken from above.
    pub packets_in: u64,
    /// IP packets the link refused (too large, queue full).
    pub packets_refused: u64,
    /// IP packets delivered above.
    pub packets_delivered: u64,
}

/// A tunnel end that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum TunnelError {
    /// The link configuration is wrong.
    #[error(transparent)]
    Link(#[from] LinkConfigError),
}

#[derive(Clone, Copy)]
#[repr(usize)]
enum T {
    Retry,
    Keepalive,
    Persistent,
    Expire,
    Unanswered,
}
const TIMERS: usize = 5;

struct Pending {
    init: Initiator,
    local_index: u32,
    /// Its mac2 carried a cookie.
    with_cookie: bool,
}

/// What one tunnel end holds, for checking that it stays bounded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Sessions held (current, previous, next): at most 3.
    pub sessions: usize,
    /// Handshakes in progress as initiator: at most 1.
    pub pending: usize,
    /// Source addresses in the initiation limiter.
    pub sources: usize,
    /// Handshake datagrams waiting to be sent: at most [`MAX_CONTROL`].
    pub control: usize,
}

/// One end of the tunnel (see the module contract).
pub struct Tunnel {
    cfg: SessionConfig,
    creds: Credentials,
    rng: ChaCha20Rng,
    link_cfg: LinkConfig,
    link: MultiServiceLink,
    /// Whether the link has carried a frame since it was made.
    link_used: bool,
    incarnation: u64,
    peer_incarnation: Option<u64>,
    /// A handshake is wanted since then (silence after data).
    want_handshake: Option<Instant>,
    cookie_in: cookie::Responder,
    cookie_out: cookie::Initiator,
    current: Option<Keypair>,
    previous: Option<Keypair>,
    next: Option<Keypair>,
    pending: Option<Pending>,
    /// When the first initiation of the handshake under way was sent.
    attempt_since: Option<Instant>,
    last_stamp: Option<u64>,
    last_sent_stamp: u64,
    endpoint: Option<SocketAddr>,
    control: VecDeque<(SocketAddr, Vec<u8>)>,
    keepalive_due: bool,
    timers: Timers<TIMERS>,
    stats: TunnelStats,
    /// What happened, not yet handed out (`poll_event`).
    events: Events,
    limiter: InitiationLimiter,
}

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

impl Tunnel {
    /// One tunnel end. `seed` seeds every random draw (session indices, ephemeral keys): the
    /// driver passes fresh OS entropy, tests a fixed value. `peer` is the configured peer
    /// address, if any.
    pub fn new(
        cfg: &SessionConfig,
        creds: Credentials,
        link: &LinkConfig,
        peer: Option<SocketAddr>,
        seed: [u8; 32],
    ) -> Result<Tunnel, TunnelError> {
        let mut timers = Timers::default();
        if cfg.persistent_keepalive_ms > 0 {
            // Due at once: the first handle_timeout starts the handshake that keeps it alive.
            timers.set(T::Persistent as usize, Instant::ZERO);
        }
        let mut rng = ChaCha20Rng::from_seed(seed);
        let incarnation = rng.next_u64();
        Ok(Tunnel {
            cfg: cfg.clone(),
            cookie_in: cookie::Responder::new(&creds),
            cookie_out: cookie::Initiator::new(&creds),
            creds,
            rng,
            link_cfg: link.clone(),
            link: MultiServiceLink::new(link)?,
            link_used: false,
            incarnation,
            peer_incarnation: None,
            want_handshake: None,
            current: None,
            previous: None,
            next: None,
            pending: None,
            attempt_since: None,
            last_stamp: None,
            last_sent_stamp: 0,
            endpoint: peer,
            control: VecDeque::new(),
            keepalive_due: false,
            timers,
            stats: TunnelStats::default(),
            events: Events::default(),
            limiter: InitiationLimiter::new(
                cfg.initiations_per_source_per_sec,
                cfg.initiations_per_sec,
            ),
        })
    }

    /// The oldest thing that happened and was not handed out yet: handshakes, sessions, a
    /// peer's move or restart, load, refusals (`events.rs`). A driver polls it after each
    /// call that handles input or time, and logs what it gets.
    pub fn poll_event(&mut self) -> Option<TunnelEvent> {
        self.events.pop()
    }

    fn event(&mut self, e: TunnelEvent) {
        self.events.push(e);
    }

    /// Counts a datagram refused for `cause`, and says so as an event (the first refusal for
    /// load also as [`TunnelEvent::UnderLoad`]).
    fn reject(&mut self, cause: Cause) {
        if cause == Cause::Busy && self.stats.rejected.busy == 0 {
            self.event(TunnelEvent::UnderLoad);
        }
        self.stats.rejected.count(cause);
        let mut one = Rejected::default();
        one.count(cause);
        self.event(TunnelEvent::Rejected(one));
    }

    /// Counters of the session layer.
    pub fn stats(&self) -> TunnelStats {
        self.stats
    }

    /// Counters of the link carried inside.
    pub fn link_stats(&self) -> LinkStats {
        self.link.stats()
    }

    /// The peer's current address.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.endpoint
    }

    /// The index the peer uses to reach our current session, if one is established.
    pub fn session_index(&self) -> Option<u32> {
        self.current.as_ref().map(|k| k.local_index)
    }

    /// What this end holds (sessions, handshakes, tables, queues); bounded whatever arrives.
    pub fn footprint(&self) -> Footprint {
        Footprint {
            sessions: [&self.current, &self.previous, &self.next]
                .iter()
                .filter(|k| k.is_some())
                .count(),
            pending: usize::from(self.pending.is_some()),
            sources: self.limiter.tracked(),
            control: self.control.len(),
        }
    }

    /// Takes an IP packet from above.
    pub fn handle_packet(&mut self, now: Instant, packet: &[u8]) -> Result<usize, Refused> {
        self.stats.packets_in += 1;
        let r = self.link.handle_packet(now, packet);
        if r.is_err() {
            self.stats.packets_refused += 1;
        }
        self.maybe_initiate(now, false);
        r
    }

    /// Takes a UDP payload that came from `from`; `datagram` is decrypted in place.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &mut [u8]) {
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += datagram.len() as u64;
        let view = match Datagram::new_checked(&*datagram) {
            Ok(v) => v,
            Err(WireError::Truncated { .. }) => return self.reject(Cause::Truncated),
            Err(WireError::Unknown { .. }) => return self.reject(Cause::Garbage),
        };
        match view.kind() {
            Kind::Transport => {
                let (receiver, counter) = (view.index(), view.counter());
                self.on_transport(now, from, receiver, counter, datagram)
            }
            Kind::Initiation | Kind::Response | Kind::CookieReply => {
                match DatagramRepr::parse(&view).expect("checked above") {
                    DatagramRepr::Initiation { sender, noise, .. } => {
                        let noise = noise.to_vec();
                        self.on_initiation(now, from, sender, &noise, datagram)
                    }
                    DatagramRepr::CookieReply {
                        receiver,
                        nonce,
                        sealed,
                    } => self.on_cookie_reply(now, receiver, &nonce, &sealed),
                    DatagramRepr::Response {
                        sender,
                        receiver,
                        noise,
                    } => {
                        let noise = noise.to_vec();
                        self.on_response(now, from, sender, receiver, &noise)
                    }
                    DatagramRepr::Transport { .. } => unreachable!("kind checked"),
                }
            }
            Kind::Unknown(_) => self.reject(Cause::Garbage),
        }
    }

    fn roam(&mut self, from: SocketAddr) {
        if self.endpoint != Some(from) {
            if self.endpoint.is_some() {
                self.stats.roams += 1;
                self.event(TunnelEvent::Roamed { peer: from });
            }
            self.endpoint = Some(from);
        }
    }

    fn fresh_index(&mut self) -> u32 {
        loop {
            let i = self.rng.next_u32();
            let used = [&self.current, &self.previous, &self.next]
                .iter()
                .any(|k| k.as_ref().is_some_and(|k| k.local_index == i))
                || self.pending.as_ref().is_some_and(|p| p.local_index == i);
            if !used {
                return i;
            }
        }
    }

    fn seed(&mut self) -> [u8; 32] {
        let mut s = [0u8; 32];
        self.rng.fill_bytes(&mut s);
        s
    }

    fn on_initiation(
        &mut self,
        now: Instant,
        from: SocketAddr,
        sender: u32,
        noise: &[u8],
        whole: &[u8],
    ) {
        if self.control.len() >= MAX_CONTROL {
            return self.reject(Cause::RateLimited);
        }
        let check = self.cookie_in.check(now, whole, from);
        if check == MacCheck::Bad {
            // Not even mac1: the sender does not know who we are. No Diffie-Hellman for it.
            return self.reject(Cause::Forged);
        }
        let proof = if check == MacCheck::Mac2 {
            Proof::Cookie
        } else {
            Proof::Unproven
        };
        match self.limiter.admit(now, from.ip(), proof) {
            Admit::Yes => {}
            Admit::SourceLimited => return self.reject(Cause::RateLimited),
            Admit::Busy => {
                self.send_cookie(now, from, sender, whole);
                return self.reject(Cause::Busy);
            }
        }
        let seed = self.seed();
        let mut msg = [0u8; MAX_NOISE_LEN];
        let r = match respond(&self.creds, seed, noise, self.incarnation, &mut msg) {
            Ok(x) => x,
            Err(
                HandshakeError::Forged | HandshakeError::UnknownPeer | HandshakeError::Malformed,
            ) => return self.reject(Cause::Forged),
        };
        if self.last_stamp.is_some_and(|last| r.stamp <= last) {
            return self.reject(Cause::Replayed);
        }
        self.last_stamp = Some(r.stamp);
        self.meet(r.incarnation);
        let local = self.fresh_index();
        self.next = Some(Keypair::new(&r.keys, local, sender, now, false));
        let repr = DatagramRepr::Response {
            sender: local,
            receiver: sender,
            noise: &msg[..r.len],
        };
        let mut d = vec![0; repr.buffer_len()];
        repr.emit(&mut d);
        self.control.push_back((from, d));
        self.stats.handshakes_answered += 1;
        self.event(TunnelEvent::HandshakeAnswered {
            peer: self.endpoint,
        });
        self.roam(from);
        self.arm_expiry();
    }

    /// Answers an initiation with a cookie reply (we are under load), unless the backlog of
    /// handshake datagrams is already long.
    fn send_cookie(&mut self, now: Instant, from: SocketAddr, sender: u32, whole: &[u8]) {
        if self.control.len() >= MAX_COOKIE_BACKLOG {
            return;
        }
        if self.cookie_in.needs_secret(now) {
            let secret = self.seed();
            self.cookie_in.rotate(now, secret);
        }
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill_bytes(&mut nonce);
        let repr = DatagramRepr::CookieReply {
            receiver: sender,
            nonce,
            sealed: self.cookie_in.seal_cookie(whole, from, nonce),
        };
        let mut d = vec![0; repr.buffer_len()];
        repr.emit(&mut d);
        self.control.push_back((from, d));
        self.stats.cookie_replies_sent += 1;
    }

    fn on_cookie_reply(&mut self, now: Instant, receiver: u32, nonce: &[u8], sealed: &[u8]) {
        let Some(p) = self.pending.as_ref().filter(|p| p.local_index == receiver) else {
            return self.reject(Cause::UnknownSession);
        };
        let had_cookie = p.with_cookie;
        match self.cookie_out.take_cookie(now, nonce, sealed) {
            Ok(()) => {
                self.stats.cookies_received += 1;
                self.event(TunnelEvent::CookieReceived {
                    peer: self.endpoint,
                });
            }
            Err(CookieError::Unexpected) => return self.reject(Cause::UnknownSession),
            Err(CookieError::Forged) => return self.reject(Cause::Forged),
        }
        // Try again at once with the cookie, unless this attempt already carried one (then
        // the retry timer paces us): at most one extra initiation per attempt.
        if !had_cookie {
            if let Some(to) = self.endpoint {
                self.pending = None;
                self.initiate(now, to);
            }
        }
    }

    /// Notes the peer's incarnation from an authentic handshake; if it changed, the peer
    /// restarted: its sessions and link state are gone, so ours go too.
    fn meet(&mut self, incarnation: u64) {
        if self
            .peer_incarnation
            .is_some_and(|known| known != incarnation)
        {
            self.current = None;
            self.previous = None;
            self.next = None;
            if self.link_used {
                self.link = MultiServiceLink::new(&self.link_cfg)
                    .expect("the same configuration built the first link");
                self.link_used = false;
            }
            self.stats.link_resets += 1;
            self.event(TunnelEvent::LinkReset {
                peer: self.endpoint,
            });
            self.arm_expiry();
        }
        self.peer_incarnation = Some(incarnation);
    }

    fn on_response(
        &mut self,
        now: Instant,
        from: SocketAddr,
        sender: u32,
        receiver: u32,
        noise: &[u8],
    ) {
        let Some(p) = self.pending.as_mut().filter(|p| p.local_index == receiver) else {
            return self.reject(Cause::UnknownSession);
        };
        let (keys, theirs) = match p.init.finish(noise) {
            Ok(k) => k,
            Err(_) => return self.reject(Cause::Forged),
        };
        self.pending = None;
        self.timers.clear(T::Retry as usize);
        self.timers.clear(T::Unanswered as usize);
        self.meet(theirs);
        let kp = Keypair::new(&keys, receiver, sender, now, true);
        self.install(kp);
        self.stats.handshakes_completed += 1;
        if let Some(since) = self.attempt_since.take() {
            self.stats.last_handshake_us = now.saturating_since(since).as_nanos() / 1_000;
        }
        self.event(TunnelEvent::HandshakeCompleted {
            peer: self.endpoint,
        });
        // Key confirmation for the responder, even if no data is waiting.
        self.keepalive_due = true;
        self.roam(from);
    }

    /// Makes `kp` the current session; the current one becomes previous.
    fn install(&mut self, kp: Keypair) {
        self.previous = self.current.replace(kp);
        self.stats.sessions_started += 1;
        self.event(TunnelEvent::SessionStarted {
            number: self.stats.sessions_started,
        });
        self.want_handshake = None;
        self.arm_expiry();
    }

    fn arm_expiry(&mut self) {
        let reject = Duration::from_secs(self.cfg.reject_after_secs);
        let t = [&self.current, &self.previous, &self.next]
            .iter()
            .filter_map(|k| k.as_ref().map(|k| k.created + reject))
            .min();
        match t {
            Some(t) => self.timers.set(T::Expire as usize, t),
            None => self.timers.clear(T::Expire as usize),
        }
    }

    fn on_transport(
        &mut self,
        now: Instant,
        from: SocketAddr,
        receiver: u32,
        counter: u64,
        datagram: &mut [u8],
    ) {
        let is = |k: &Option<Keypair>| k.as_ref().is_some_and(|k| k.local_index == receiver);
        let slot = if is(&self.current) {
            &mut self.current
        } else if is(&self.next) {
            &mut self.next
        } else if is(&self.previous) {
            &mut self.previous
        } else {
            // A peer that still sends on a session we do not have (we restarted, or it did
            // not hear our last handshake): if we know where it is and have no session, start
            // one now rather than waiting for our own data. At most one at a time.
            if self.endpoint == Some(from)
                && !self.usable(now)
                && self.pending.is_none()
                && !self.awaiting_confirmation(now)
            {
                self.initiate(now, from);
            }
            return self.reject(Cause::UnknownSession);
        };
        let kp = slot.as_mut().expect("matched above");
        let (header, sealed) = datagram.split_at_mut(TRANSPORT_HEADER_LEN);
        let n = match kp.open(counter, header, sealed) {
            Ok(n) => n,
            Err(OpenError::Replayed) => return self.reject(Cause::Replayed),
            Err(OpenError::Forged) => return self.reject(Cause::Forged),
        };
        if is(&self.next) {
            // Key confirmation (responder): the initiator uses the new session.
            let kp = self.next.take().expect("matched");
            if self
                .current
                .as_ref()
                .is_some_and(|c| c.created > kp.created)
            {
                self.previous = Some(kp);
            } else {
                self.install(kp);
            }
        }
        self.roam(from);
        self.timers.clear(T::Unanswered as usize);
        if n == 0 {
            self.stats.keepalives_received += 1;
        } else {
            self.stats.frames_received += 1;
            self.link_used = true;
            self.link.handle_frame(now, &sealed[..n]);
            self.timers
                .set_if_idle(T::Keepalive as usize, now + ms(self.cfg.keepalive_ms));
        }
    }

    /// Whether the current session may still seal datagrams.
    fn usable(&self, now: Instant) -> bool {
        self.current.as_ref().is_some_and(|k| {
            now.saturating_since(k.created) < Duration::from_secs(self.cfg.reject_after_secs)
        })
    }

    /// Whether we answered an initiation less than a retry interval ago and its initiator has
    /// not yet confirmed the session. It will (its first datagram on the new session), or it
    /// retries if our response was lost: a handshake of our own now would only start a
    /// second session. WireGuard's responder likewise counts its response as a handshake
    /// sent (REKEY_TIMEOUT).
    fn awaiting_confirmation(&self, now: Instant) -> bool {
        self.next
            .as_ref()
            .is_some_and(|k| now.saturating_since(k.created) < ms(self.cfg.handshake_retry_ms))
    }

    /// Starts a handshake if one is needed and none is under way: no usable session while
    /// something waits to be sent, or (`sent` is true just after sealing a datagram) the
    /// current session is due for rekeying. As in WireGuard, an idle tunnel never rekeys.
    fn maybe_initiate(&mut self, now: Instant, sent: bool) {
        if self.pending.is_some() || self.awaiting_confirmation(now) {
            return;
        }
        let Some(to) = self.endpoint else { return };
        let need = match &self.current {
            Some(k) if self.usable(now) => {
                let after = if k.initiator {
                    self.cfg.rekey_after_secs
                } else {
                    // The responder waits longer, so both ends do not rekey at once.
                    (self.cfg.rekey_after_secs + self.cfg.reject_after_secs) / 2
                };
                sent && (now.saturating_since(k.created) >= Duration::from_secs(after)
                    || k.sent() >= self.cfg.rekey_after_datagrams)
            }
            _ => self.link.has_transmit(now) || self.cfg.persistent_keepalive_ms > 0,
        };
        let wanted = match self.want_handshake {
            Some(since) if now.saturating_since(since) < REKEY_ATTEMPT => true,
            Some(_) => {
                self.want_handshake = None;
                self.attempt_since = None;
                false
            }
            None => false,
        };
        if need || wanted {
            self.initiate(now, to);
        }
    }

    fn initiate(&mut self, now: Instant, to: SocketAddr) {
        let seed = self.seed();
        let local = self.fresh_index();
        let mut msg = [0u8; MAX_NOISE_LEN];
        // Strictly increasing even when two handshakes start at the same instant.
        let stamp = now.as_nanos().max(self.last_sent_stamp.wrapping_add(1));
        self.last_sent_stamp = stamp;
        let (init, n) = Initiator::start(&self.creds, seed, stamp, self.incarnation, &mut msg);
        let repr = DatagramRepr::Initiation {
            sender: local,
            noise: &msg[..n],
            macs: [0; MACS_LEN],
        };
        let mut d = vec![0; repr.buffer_len()];
        repr.emit(&mut d);
        self.cookie_out.stamp(now, &mut d);
        self.control.push_back((to, d));
        self.pending = Some(Pending {
            init,
            local_index: local,
            with_cookie: self.cookie_out.has_cookie(now),
        });
        self.timers
            .set(T::Retry as usize, now + ms(self.cfg.handshake_retry_ms));
        self.attempt_since.get_or_insert(now);
        self.stats.handshakes_initiated += 1;
        self.event(TunnelEvent::HandshakeInitiated {
            peer: self.endpoint,
        });
    }

    /// Runs whatever is due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.link.handle_timeout(now);
        if self.timers.expired(T::Expire as usize, now) {
            let reject = Duration::from_secs(self.cfg.reject_after_secs);
            for k in [&mut self.current, &mut self.previous, &mut self.next] {
                if k.as_ref().is_some_and(|k| k.created + reject <= now) {
                    *k = None;
                    self.stats.sessions_expired += 1;
                    self.events.push(TunnelEvent::SessionExpired);
                }
            }
            self.arm_expiry();
        }
        if self.timers.expired(T::Retry as usize, now) {
            // No response: forget this attempt; a new one starts below if still needed.
            self.pending = None;
        }
        if self.timers.expired(T::Keepalive as usize, now) && self.current.is_some() {
            self.keepalive_due = true;
        }
        if self.timers.expired(T::Persistent as usize, now) {
            self.keepalive_due = true;
        }
        if self.timers.expired(T::Unanswered as usize, now) && self.want_handshake.is_none() {
            // Data went out and nothing authentic came back: the peer may have restarted.
            self.want_handshake = Some(now);
            self.stats.handshakes_after_silence += 1;
            self.event(TunnelEvent::Unanswered {
                peer: self.endpoint,
            });
        }
        self.maybe_initiate(now, false);
    }

    /// The earliest instant `handle_timeout` has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.timers.next(), self.link.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Writes the next datagram into `buf` (cleared first) and returns its destination.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        buf.clear();
        if let Some((to, d)) = self.control.pop_front() {
            buf.extend_from_slice(&d);
            self.count_sent(buf.len());
            return Some(to);
        }
        let to = self.endpoint?;
        if !self.usable(now) {
            return None;
        }
        buf.resize(TRANSPORT_HEADER_LEN, 0);
        let data = self.link.poll_transmit(now, buf).is_some();
        if !data && !self.keepalive_due {
            buf.clear();
            return None;
        }
        let kp = self.current.as_mut().expect("usable");
        kp.seal(buf);
        if data {
            self.stats.frames_sent += 1;
            self.link_used = true;
            self.timers.set_if_idle(
                T::Unanswered as usize,
                now + ms(self.cfg.keepalive_ms + self.cfg.handshake_retry_ms),
            );
        } else {
            self.stats.keepalives_sent += 1;
        }
        self.keepalive_due = false;
        self.timers.clear(T::Keepalive as usize);
        if self.cfg.persistent_keepalive_ms > 0 {
            self.timers.set(
                T::Persistent as usize,
                now + ms(self.cfg.persistent_keepalive_ms),
            );
        }
        self.count_sent(buf.len());
        self.maybe_initiate(now, true);
        Some(to)
    }

    fn count_sent(&mut self, n: usize) {
        self.stats.datagrams_sent += 1;
        self.stats.bytes_sent += n as u64;
    }

    /// The next IP packet for the layer above.
    pub fn poll_deliver(&mut self) -> Option<Vec<u8>> {
        let p = self.link.poll_deliver()?;
        self.stats.packets_delivered += 1;
        Some(p)
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
