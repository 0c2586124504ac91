//! An in-memory wireless hop between two [`MultiServiceLink`] ends, in virtual time.
//!
//! Contract. A `Hop` is a small deterministic driver for tests, benchmarks and the engine
//! demo (the simulator crate is the full one). Each direction is a MAC that sends one frame at
//! a time at `rate_bps` (0: no serialisation delay), then the frame arrives after `delay`
//! unless the direction's channel says otherwise. The channel is a caller-supplied function
//! of (now, frame) — randomness lives with the caller, seeded — returning a [`Fate`]. Events
//! run in time order; at equal times, arrivals come before timers before transmissions, and
//! direction 0 before direction 1, so a run is a pure function of its inputs. Nothing reads a
//! clock.

use std::collections::VecDeque;

use crate::event::EventQueue;
use crate::link::{MultiServiceLink, Refused};
use crate::side::{Direction, Side};
use crate::time::{Duration, Instant};

/// What the channel does to one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Arrives intact.
    Deliver,
    /// Never arrives.
    Lose,
    /// Arrives with bit `bit % (8 * len)` inverted.
    Corrupt {
        /// Which bit to invert.
        bit: usize,
    },
    /// Arrives twice.
    Duplicate,
}

/// A channel: the fate of each frame sent in one direction.
pub type Channel = Box<dyn FnMut(Instant, &[u8]) -> Fate + Send>;

/// Counters of one direction of the hop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DirectionStats {
    /// Frames the MAC sent.
    pub frames: u64,
    /// Bytes the MAC sent.
    pub bytes: u64,
    /// Frames the channel lost.
    pub lost: u64,
    /// Frames the channel corrupted.
    pub corrupted: u64,
    /// Frames the channel duplicated.
    pub duplicated: u64,
}

struct Way {
    rate_bps: u64,
    delay: Duration,
    channel: Channel,
    busy_until: Instant,
    /// Frames on the wire, by arrival time ([`EventQueue`]: FIFO at equal times).
    in_flight: EventQueue<Vec<u8>>,
    stats: DirectionStats,
}

/// Two link ends joined by two one-way channels.
pub struct Hop {
    ends: [MultiServiceLink; 2],
    dirs: [Way; 2],
    now: Instant,
    delivered: [VecDeque<(Instant, Vec<u8>)>; 2],
    buf: Vec<u8>,
    events: u64,
}

impl Hop {
    /// Joins `a` (end 0) and `b` (end 1); `ab` decides the fate of frames from 0 to 1, `ba` the
    /// other way.
    pub fn new(
        a: MultiServiceLink,
        b: MultiServiceLink,
        rate_bps: u64,
        delay: Duration,
        ab: Channel,
        ba: Channel,
    ) -> Self {
        let dir = |channel| Way {
            rate_bps,
            delay,
            channel,
            busy_until: Instant::ZERO,
            in_flight: EventQueue::default(),
            stats: DirectionStats::default(),
        };
        Hop {
            ends: [a, b],
            dirs: [dir(ab), dir(ba)],
            now: Instant::ZERO,
            delivered: Default::default(),
            buf: Vec::new(),
            events: 0,
        }
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Events processed so far (arrivals, timer runs, transmissions).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// One end.
    pub fn end(&self, side: Side) -> &MultiServiceLink {
        &self.ends[side]
    }

    /// Counters of one direction.
    pub fn direction(&self, dir: Direction) -> DirectionStats {
        self.dirs[dir].stats
    }

    /// Hands a packet to the end on `side` at the current time.
    pub fn send(&mut self, side: Side, packet: &[u8]) -> Result<usize, Refused> {
        let r = self.ends[side].handle_packet(self.now, packet);
        self.transmit();
        r
    }

    /// The next packet the end on `side` delivered above, with its delivery time.
    pub fn recv(&mut self, side: Side) -> Option<(Instant, Vec<u8>)> {
        self.delivered[side].pop_front()
    }

    /// The earliest pending event, if any.
    pub fn next_event(&self) -> Option<Instant> {
        let mut t = None::<Instant>;
        let mut consider = |x: Instant| t = Some(t.map_or(x, |y| y.min(x)));
        for (i, d) in self.dirs.iter().enumerate() {
            if let Some(at) = d.in_flight.peek_time() {
                consider(at);
            }
            if d.busy_until > self.now && self.ends[i].has_transmit(d.busy_until) {
                consider(d.busy_until);
            }
        }
        for e in &self.ends {
            if let Some(at) = e.poll_timeout() {
                consider(at.max(self.now));
            }
        }
        t
    }

    /// Runs every event up to and including `t`, then sets the clock to `t`.
    pub fn run_until(&mut self, t: Instant) {
        self.transmit();
        while let Some(next) = self.next_event() {
            if next > t {
                break;
            }
            self.now = next;
            for i in 0..2 {
                while let Some((_, frame)) = self.dirs[i].in_flight.pop_until(next) {
                    self.events += 1;
                    let to = 1 - i;
                    self.ends[to].handle_frame(next, &frame);
                    self.collect(to);
                }
            }
            for i in 0..2 {
                if self.ends[i].poll_timeout().is_some_and(|at| at <= next) {
                    self.events += 1;
                    self.ends[i].handle_timeout(next);
                    self.collect(i);
                }
            }
            self.transmit();
        }
        self.now = self.now.max(t);
        self.transmit();
    }

    /// Runs until nothing is pending or `limit` is reached; returns the time it stopped.
    pub fn run_idle(&mut self, limit: Instant) -> Instant {
        while let Some(next) = self.next_event() {
            if next > limit {
                break;
            }
            self.run_until(next);
        }
        self.now
    }

    fn collect(&mut self, i: usize) {
        while let Some(p) = self.ends[i].poll_deliver() {
            self.delivered[i].push_back((self.now, p));
        }
    }

    /// Lets each idle MAC send what its end has.
    fn transmit(&mut self) {
        for i in 0..2 {
            while self.dirs[i].busy_until <= self.now {
                self.buf.clear();
                let Some(tx) = self.ends[i].poll_transmit(self.now, &mut self.buf) else {
                    break;
                };
                self.events += 1;
                let d = &mut self.dirs[i];
                let done = self.now + Duration::transmission(tx.len as u64, d.rate_bps);
                d.busy_until = done;
                d.stats.frames += 1;
                d.stats.bytes += tx.len as u64;
                let arrive = done + d.delay;
                match (d.channel)(self.now, &self.buf) {
                    Fate::Deliver => d.in_flight.schedule(arrive, self.buf.clone()),
                    Fate::Lose => d.stats.lost += 1,
                    Fate::Corrupt { bit } => {
                        d.stats.corrupted += 1;
                        let mut f = self.buf.clone();
                        if !f.is_empty() {
                            let b = bit % (f.len() * 8);
                            f[b / 8] ^= 1 << (b % 8);
                        }
                        d.in_flight.schedule(arrive, f);
                    }
                    Fate::Duplicate => {
                        d.stats.duplicated += 1;
                        d.in_flight.schedule(arrive, self.buf.clone());
                        d.in_flight.schedule(arrive, self.buf.clone());
                    }
                }
                if d.rate_bps != 0 {
                    break;
                }
            }
        }
    }
}
