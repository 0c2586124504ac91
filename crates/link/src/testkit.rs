//! A deterministic in-memory driver for testing services: two ends joined by a simulated link.
//!
//! Contract. [`Pair`] owns two [`Service`] ends, 0 and 1, and one simulated link direction
//! from each end to the other (direction `d` carries end `d`'s frames to end `1 - d`). Each
//! direction has a rate (bits/s, 0 = unlimited), a propagation delay and a [`Channel`] that
//! decides each frame's [`Fate`]: delivered, lost, duplicated, delayed (so that later frames
//! overtake it), corrupted (dropped and counted, as the CRC check of the link layer below would
//! do), or replaced by arbitrary bytes (to test robustness: those bytes reach `handle_frame` as
//! they are). A direction keeps frames in order unless delayed and sends one at a time; a frame
//! is taken from a service only when its direction is free.
//!
//! Time is virtual: the driver jumps from event to event (a frame arrival, a service timeout, a
//! link becoming free, an SDU offered) and never reads a clock. Events at one instant run in a
//! fixed order (arrivals, timeouts, offered SDUs, transmissions, deliveries; end 0 before end
//! 1), so a run is a pure function of its inputs. Randomness lives in the channels, which the
//! tests build from their own seeded generators.
//!
//! SDUs are offered with [`Pair::offer`]; the driver makes their payloads (an 8-byte id and a
//! filler derived from it), so it can check every delivery byte for byte and record, per SDU,
//! when it was offered, accepted and delivered (each time). A refused SDU waits at the head of
//! its end's source and is offered again at the next event (back-pressure), so nothing offered
//! is lost before the service. [`Pair::check_exactly_once_in_order`] and
//! [`Pair::check_at_most_once`] state the usual delivery properties.
//!
//! The simulator crate will replace this for experiments; it is kept small on purpose.
//!
//! ```
//! use mslink_link::service::{ServiceConfig, selective_repeat::SelectiveRepeatConfig};
//! use mslink_link::testkit::{Fate, LinkParams, Pair};
//! use mslink_link::wire::{HeaderFormat, SeqWidth};
//! use mslink_link::{Duration, Instant};
//!
//! let cfg = ServiceConfig::SelectiveRepeat(SelectiveRepeatConfig::default());
//! let f = HeaderFormat::new(SeqWidth::W8);
//! let link = LinkParams { rate_bps: 86_400, delay: Duration::from_millis(100), frame_overhead: 0 };
//! let mut pair = Pair::new(cfg.build(f), cfg.build(f), link);
//! let mut n = 0u32;
//! pair.set_channel(0, move |_now: Instant, _frame: &[u8]| {
//!     n += 1;
//!     if n % 5 == 0 { Fate::Lose } else { Fate::Deliver }
//! });
//! for i in 0..20 {
//!     pair.offer(0, Instant::from_millis(10 * i), 100);
//! }
//! assert!(pair.run_until_idle(Instant::from_secs(60)));
//! pair.check_exactly_once_in_order(0).unwrap();
//! ```

use std::collections::VecDeque;

use crate::event::EventQueue;
use crate::service::{Sdu, Service};
use crate::time::{Duration, Instant};

/// What the channel does with one frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The frame arrives intact.
    Deliver,
    /// The frame vanishes.
    Lose,
    /// The frame arrives twice, back to back.
    Duplicate,
    /// The frame arrives intact, this much later than it would: frames sent after it may
    /// arrive first (reordering).
    Delay(Duration),
    /// The frame arrives damaged and the link's CRC check drops it (counted, not delivered).
    Corrupt,
    /// These bytes arrive instead of the frame and reach `handle_frame` unchecked.
    Garbage(Vec<u8>),
}

/// Decides the fate of each frame of one direction.
pub trait Channel: Send {
    /// The fate of `frame`, sent at `now`.
    fn fate(&mut self, now: Instant, frame: &[u8]) -> Fate;
}

impl<F: FnMut(Instant, &[u8]) -> Fate + Send> Channel for F {
    fn fate(&mut self, now: Instant, frame: &[u8]) -> Fate {
        self(now, frame)
    }
}

/// Rate and delay of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkParams {
    /// Bits per second; 0 = unlimited (frames take no time to send).
    pub rate_bps: u64,
    /// Propagation delay.
    pub delay: Duration,
    /// Bytes added to each frame for timing only (service tag, CRC, physical framing).
    pub frame_overhead: usize,
}

/// Counters of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirStats {
    /// Frames taken from the sending service.
    pub frames: u64,
    /// Bytes taken from the sending service.
    pub bytes: u64,
    /// Frames lost.
    pub lost: u64,
    /// Frames duplicated.
    pub duplicated: u64,
    /// Frames delayed (possibly reordered).
    pub delayed: u64,
    /// Frames corrupted (dropped by the CRC check).
    pub corrupted: u64,
    /// Frames replaced by garbage.
    pub garbage: u64,
}

/// What happened to one offered SDU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SduRecord {
    /// The id carried in its first 8 bytes (the index in [`Pair::records`]).
    pub id: u64,
    /// The end it was offered to.
    pub from: usize,
    /// Payload length in bytes.
    pub len: usize,
    /// When it was offered.
    pub offered: Instant,
    /// When the service accepted it (`None` while refused or not yet offered).
    pub accepted: Option<Instant>,
    /// Each time the other end delivered it.
    pub delivered: Vec<Instant>,
}

/// A minimal IPv4/UDP packet of `len` bytes (at least 32) from 10.0.0.1:1000 to
/// 10.0.0.2:2000 carrying `seq`, big-endian, at byte 28 (read it back with [`udp_seq`]); no
/// checksums, which nothing on a link reads.
pub fn ipv4_udp(seq: u32, len: usize) -> Vec<u8> {
    let len = len.max(32);
    let mut p = vec![0u8; len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20..22].copy_from_slice(&1000u16.to_be_bytes());
    p[22..24].copy_from_slice(&2000u16.to_be_bytes());
    p[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
    p[28..32].copy_from_slice(&seq.to_be_bytes());
    p
}

/// The sequence number an [`ipv4_udp`] packet carries.
pub fn udp_seq(p: &[u8]) -> u32 {
    u32::from_be_bytes(p[28..32].try_into().expect("an ipv4_udp packet"))
}

/// The payload of SDU `id` with `len` bytes (at least 8): the id, big-endian, then a filler
/// that depends on the id and the position.
pub fn payload(id: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len.max(8));
    v.extend_from_slice(&id.to_be_bytes());
    let seed = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    v.extend((8..len).map(|i| (seed >> (8 * (i % 8))) as u8 ^ (i as u8).wrapping_mul(31)));
    v
}

/// Two service ends over a simulated link (see the module docs).
pub struct Pair {
    now: Instant,
    ends: [Box<dyn Service>; 2],
    channels: [Box<dyn Channel>; 2],
    link: [LinkParams; 2],
    /// Frames on the wire per direction: (arrival, bytes), arrivals non-decreasing.
    /// Frames on the wire per direction, by arrival time (FIFO at equal times).
    flight: [EventQueue<Vec<u8>>; 2],
    busy_until: [Instant; 2],
    /// SDUs waiting to be offered per end: (time, id).
    sources: [VecDeque<(Instant, u64)>; 2],
    blocked: [bool; 2],
    records: Vec<SduRecord>,
    order: [Vec<u64>; 2],
    bad: [u64; 2],
    stats: [DirStats; 2],
    spins: u32,
}

/// Steps at one instant after which the driver decides a service is looping.
const MAX_SPINS: u32 = 1_000_000;

impl Pair {
    /// Joins ends 0 and 1 with the same link parameters both ways and loss-free channels.
    pub fn new(a: Box<dyn Service>, b: Box<dyn Service>, link: LinkParams) -> Self {
        let perfect = || Box::new(|_: Instant, _: &[u8]| Fate::Deliver) as Box<dyn Channel>;
        Pair {
            now: Instant::ZERO,
            ends: [a, b],
            channels: [perfect(), perfect()],
            link: [link; 2],
            flight: Default::default(),
            busy_until: [Instant::ZERO; 2],
            sources: Default::default(),
            blocked: [false; 2],
            records: Vec::new(),
            order: Default::default(),
            bad: [0; 2],
            stats: Default::default(),
            spins: 0,
        }
    }

    /// Sets the channel of direction `d` (end `d` to end `1 - d`).
    pub fn set_channel(&mut self, d: usize, ch: impl Channel + 'static) {
        self.channels[d] = Box::new(ch);
    }

    /// Sets the rate and delay of direction `d`.
    pub fn set_link(&mut self, d: usize, link: LinkParams) {
        self.link[d] = link;
    }

    /// Schedules an SDU of `len` bytes (at least 8) to be offered to end `from` at `at` (not
    /// before the current time; offers to one end must come in time order). Returns its id.
    pub fn offer(&mut self, from: usize, at: Instant, len: usize) -> u64 {
        let id = self.records.len() as u64;
        let at = at.max(self.now);
        self.records.push(SduRecord {
            id,
            from,
            len: len.max(8),
            offered: at,
            accepted: None,
            delivered: Vec::new(),
        });
        self.sources[from].push_back((at, id));
        id
    }

    /// Hands `bytes` to end `to` as a received frame, now.
    pub fn inject(&mut self, to: usize, bytes: &[u8]) {
        self.ends[to].handle_frame(self.now, bytes);
        self.collect(to);
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// End `i`.
    pub fn end(&self, i: usize) -> &dyn Service {
        &*self.ends[i]
    }

    /// End `i`, mutably (to call it directly between steps).
    pub fn end_mut(&mut self, i: usize) -> &mut dyn Service {
        &mut *self.ends[i]
    }

    /// Every SDU offered so far, indexed by id.
    pub fn records(&self) -> &[SduRecord] {
        &self.records
    }

    /// Ids delivered at end `to`, in delivery order.
    pub fn delivered_order(&self, to: usize) -> &[u64] {
        &self.order[to]
    }

    /// Deliveries at end `to` whose bytes were not an SDU offered at the other end.
    pub fn bad_deliveries(&self, to: usize) -> u64 {
        self.bad[to]
    }

    /// Counters of direction `d`.
    pub fn dir_stats(&self, d: usize) -> &DirStats {
        &self.stats[d]
    }

    /// True when nothing is left to happen: no SDU waiting, no frame on the wire, no timer
    /// armed and no frame ready at either end.
    pub fn is_idle(&self) -> bool {
        (0..2).all(|i| {
            self.sources[i].is_empty()
                && self.flight[i].is_empty()
                && self.ends[i].poll_timeout().is_none()
                && !self.ends[i].has_transmit(self.now)
        })
    }

    /// Runs every event up to and including `limit`, then sets the time to `limit`.
    pub fn run_until(&mut self, limit: Instant) {
        while self.step(limit) {}
        self.now = self.now.max(limit);
    }

    /// Runs until [`Pair::is_idle`] or past `limit`; true if idle.
    pub fn run_until_idle(&mut self, limit: Instant) -> bool {
        loop {
            if self.is_idle() {
                return true;
            }
            if !self.step(limit) {
                return self.is_idle();
            }
        }
    }

    /// Checks that every SDU offered to end `from` was delivered exactly once, intact, and in
    /// the order offered.
    pub fn check_exactly_once_in_order(&self, from: usize) -> Result<(), String> {
        self.check_at_most_once(from)?;
        if let Some(r) = self.mine(from).find(|r| r.delivered.len() != 1) {
            return Err(format!(
                "SDU {} delivered {} times",
                r.id,
                r.delivered.len()
            ));
        }
        let order = &self.order[1 - from];
        if let Some(w) = order.windows(2).find(|w| w[0] >= w[1]) {
            return Err(format!("SDU {} delivered after SDU {}", w[1], w[0]));
        }
        Ok(())
    }

    /// Checks that no SDU offered to end `from` was delivered twice or damaged.
    pub fn check_at_most_once(&self, from: usize) -> Result<(), String> {
        if self.bad[1 - from] > 0 {
            return Err(format!("{} damaged deliveries", self.bad[1 - from]));
        }
        match self.mine(from).find(|r| r.delivered.len() > 1) {
            Some(r) => Err(format!(
                "SDU {} delivered {} times",
                r.id,
                r.delivered.len()
            )),
            None => Ok(()),
        }
    }

    fn mine(&self, from: usize) -> impl Iterator<Item = &SduRecord> {
        self.records.iter().filter(move |r| r.from == from)
    }

    /// The earliest pending event.
    fn next_event(&self) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut consider = |x: Instant| t = Some(t.map_or(x, |t| t.min(x)));
        for i in 0..2 {
            if let Some(at) = self.flight[i].peek_time() {
                consider(at);
            }
            if let Some(at) = self.ends[i].poll_timeout() {
                consider(at);
            }
            if let (Some(&(at, _)), false) = (self.sources[i].front(), self.blocked[i]) {
                consider(at);
            }
            let free = self.busy_until[i].max(self.now);
            if self.ends[i].has_transmit(free) {
                consider(free);
            }
        }
        t
    }

    /// Runs the events of the next instant if it is not after `limit`; false if there is none.
    fn step(&mut self, limit: Instant) -> bool {
        let Some(t) = self.next_event().filter(|&t| t <= limit) else {
            return false;
        };
        if t <= self.now {
            self.spins += 1;
            assert!(
                self.spins < MAX_SPINS,
                "a service keeps asking for work at {t}"
            );
        } else {
            self.spins = 0;
        }
        let now = t.max(self.now);
        self.now = now;
        for d in 0..2 {
            while let Some((_, bytes)) = self.flight[d].pop_until(now) {
                self.ends[1 - d].handle_frame(now, &bytes);
            }
        }
        for i in 0..2 {
            if self.ends[i].poll_timeout().is_some_and(|at| at <= now) {
                self.ends[i].handle_timeout(now);
            }
            self.blocked[i] = false;
            while let Some(&(at, id)) = self.sources[i].front() {
                if at > now {
                    break;
                }
                let data = payload(id, self.records[id as usize].len);
                if self.ends[i].handle_sdu(now, Sdu::whole(data)).is_err() {
                    self.blocked[i] = true;
                    break;
                }
                self.records[id as usize].accepted = Some(now);
                self.sources[i].pop_front();
            }
        }
        for d in 0..2 {
            self.transmit(d);
        }
        for i in 0..2 {
            self.collect(i);
        }
        true
    }

    /// Sends what end `d` has while its direction is free.
    fn transmit(&mut self, d: usize) {
        let now = self.now;
        let mut buf = Vec::new();
        let mut sent = 0u32;
        while self.busy_until[d] <= now && self.ends[d].has_transmit(now) {
            buf.clear();
            if !self.ends[d].poll_transmit(now, &mut buf) {
                break;
            }
            sent += 1;
            assert!(
                sent < MAX_SPINS,
                "a service never stops transmitting at {now}"
            );
            let link = self.link[d];
            let tx =
                Duration::transmission((buf.len() + link.frame_overhead) as u64, link.rate_bps);
            self.busy_until[d] = now + tx;
            let arrive = now + tx + link.delay;
            let st = &mut self.stats[d];
            st.frames += 1;
            st.bytes += buf.len() as u64;
            match self.channels[d].fate(now, &buf) {
                Fate::Deliver => self.flight[d].schedule(arrive, buf.clone()),
                Fate::Lose => st.lost += 1,
                Fate::Duplicate => {
                    st.duplicated += 1;
                    self.flight[d].schedule(arrive, buf.clone());
                    self.flight[d].schedule(arrive, buf.clone());
                }
                Fate::Delay(extra) => {
                    st.delayed += 1;
                    let at = arrive + extra;
                    self.flight[d].schedule(at, buf.clone());
                }
                Fate::Corrupt => st.corrupted += 1,
                Fate::Garbage(g) => {
                    st.garbage += 1;
                    self.flight[d].schedule(arrive, g);
                }
            }
        }
    }

    /// Takes end `to`'s deliveries, checks their bytes and records them.
    fn collect(&mut self, to: usize) {
        while let Some(d) = self.ends[to].poll_deliver() {
            let id = d
                .data
                .get(..8)
                .map(|b| u64::from_be_bytes(b.try_into().unwrap_or_default()));
            let rec = id.and_then(|id| self.records.get_mut(id as usize));
            match rec {
                Some(r) if r.from != to && d.data == payload(r.id, r.len) => {
                    r.delivered.push(self.now);
                    self.order[to].push(r.id);
                }
                _ => self.bad[to] += 1,
            }
        }
    }
}

/// Whether `tshark` runs here. When it does not, tests that need it skip with a note on
/// stderr — unless `MSLINK_REQUIRE_TSHARK` is set (as `./dev test` and CI do), which makes a
/// missing tshark a failure, so no check is skipped silently there.
pub fn tshark_present() -> bool {
    let have = std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var_os("MSLINK_REQUIRE_TSHARK").is_none(),
            "tshark is required (./dev test installs it)"
        );
        eprintln!("tshark not installed: skipping (./dev test installs it)");
    }
    have
}

/// A classic pcap file (microsecond timestamps) of `packets` with link type `linktype`
/// (1: Ethernet, 101: raw IP).
pub fn classic_pcap(linktype: u32, packets: &[(Instant, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&linktype.to_le_bytes());
    for (t, p) in packets {
        let us = t.as_nanos() / 1000;
        out.extend_from_slice(&((us / 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((us % 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// The first ```` ```toml ```` block of a module's `//!` documentation, given the module's
/// source text (`include_str!`), so tests can check that documented examples still parse.
pub fn doc_toml_example(module_source: &str) -> String {
    let start = module_source
        .find("//! ```toml")
        .expect("the module documents a ```toml example");
    let end = module_source[start + 10..]
        .find("//! ```")
        .expect("the example is closed")
        + start
        + 10;
    module_source[start..end]
        .lines()
        .skip(1)
        .map(|l| l.trim_start_matches("//!").trim_start())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::raw::RawConfig;
    use crate::service::ServiceConfig;
    use crate::wire::{HeaderFormat, SeqWidth};

    fn raw_pair(link: LinkParams) -> Pair {
        let c = ServiceConfig::Raw(RawConfig::default());
        let f = HeaderFormat::new(SeqWidth::W8);
        Pair::new(c.build(f), c.build(f), link)
    }

    #[test]
    fn timing_follows_rate_and_delay() {
        // 004 Table I, HSCSD: a 100-byte frame takes 800/86400 s, plus 100 ms of delay.
        let link = LinkParams {
            rate_bps: 86_400,
            delay: Duration::from_millis(100),
            frame_overhead: 0,
        };
        let mut p = raw_pair(link);
        p.offer(0, Instant::ZERO, 100);
        p.offer(0, Instant::ZERO, 100);
        assert!(p.run_until_idle(Instant::from_secs(10)));
        let tx = Duration::transmission(100, 86_400);
        let r = p.records();
        assert_eq!(r[0].delivered, [Instant::ZERO + tx + link.delay]);
        assert_eq!(r[1].delivered, [Instant::ZERO + tx + tx + link.delay]);
        p.check_exactly_once_in_order(0).unwrap();
    }

    #[test]
    fn a_delayed_frame_is_overtaken_by_later_ones() {
        let link = LinkParams {
            rate_bps: 1_000_000,
            delay: Duration::from_millis(1),
            frame_overhead: 0,
        };
        let mut p = raw_pair(link);
        let mut k = 0;
        p.set_channel(0, move |_: Instant, _: &[u8]| {
            k += 1;
            if k == 1 {
                Fate::Delay(Duration::from_millis(50))
            } else {
                Fate::Deliver
            }
        });
        for _ in 0..3 {
            p.offer(0, Instant::ZERO, 100);
        }
        assert!(p.run_until_idle(Instant::from_secs(1)));
        // Raw delivers in arrival order: the two later frames first, unhindered by the first.
        assert_eq!(p.delivered_order(1), [1, 2, 0]);
        let tx = Duration::transmission(100, 1_000_000);
        assert_eq!(
            p.records()[1].delivered,
            [Instant::ZERO + tx + tx + link.delay]
        );
        assert_eq!(p.dir_stats(0).delayed, 1);
    }

    #[test]
    fn fates_are_applied_and_counted() {
        let mut p = raw_pair(LinkParams::default());
        let mut k = 0;
        p.set_channel(0, move |_: Instant, _: &[u8]| {
            k += 1;
            match k {
                1 => Fate::Lose,
                2 => Fate::Duplicate,
                3 => Fate::Corrupt,
                4 => Fate::Garbage(vec![1, 2, 3]),
                _ => Fate::Deliver,
            }
        });
        for _ in 0..5 {
            p.offer(0, Instant::ZERO, 20);
        }
        assert!(p.run_until_idle(Instant::from_secs(1)));
        let s = *p.dir_stats(0);
        assert_eq!(
            (s.frames, s.lost, s.duplicated, s.corrupted, s.garbage),
            (5, 1, 1, 1, 1)
        );
        assert_eq!(p.records()[1].delivered.len(), 2);
        assert_eq!(p.bad_deliveries(1), 1, "raw hands the garbage up");
        assert!(p.check_at_most_once(0).is_err());
        assert_eq!(p.delivered_order(1), [1, 1, 4]);
    }
}
