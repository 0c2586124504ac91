//! The emulated wireless hop: two link ends, two one-way channels, every packet accounted for.
//!
//! Contract (sans-IO; the real-time twin of `mslink_link::hop::Hop`). [`Side::Left`] is the
//! left namespace, [`Side::Right`] the right; a side sends on [`Side::sending`] and receives
//! from [`Side::receiving`] (`mslink_link::side`: left to right is direction 0).
//! The driver calls, with non-decreasing `now`:
//!
//! * [`EmulatedHop::handle_packet`]`(now, side, packet)` for each IP packet read on a side;
//! * [`EmulatedHop::handle_timeout`]`(now)` whenever `now` reaches [`EmulatedHop::poll_timeout`]
//!   (a call with nothing due does nothing);
//! * [`EmulatedHop::front_deliver`] then [`EmulatedHop::pop_delivered`] (written) or
//!   [`EmulatedHop::pop_failed`] (not) to write the packets that came out on a side (or
//!   [`EmulatedHop::deliver_queue`] and [`EmulatedHop::count_delivered`] /
//!   [`EmulatedHop::count_write_failed`]); a packet stays at the front until the driver could
//!   write it, which is the back-pressure toward the receiving namespace (a driver that drops
//!   packets for a device that stays full counts them as `write_failed`).
//!
//! Model of one direction, in order (the simulator's wireless segment, crates/sim/src/world.rs,
//! plus a queue and a capacity model; each direction has its own error process, 004 §III.A;
//! each end is 004 §IV's multi-service link): a queue ([`mslink_channel::queue`]: drop-tail,
//! drop-head, CoDel, PIE or FQ-CoDel) in front of the sending link end; when the MAC is idle,
//! and the link is not in an outage ([`mslink_channel::delay::OnOff`]), it takes the end's next
//! frame, feeding the end one packet from the queue when it has none; the frame occupies the
//! MAC for its serialisation time ([`mslink_channel::capacity`]), meets the direction's error
//! model through [`mslink_channel::medium::on_air`] (the same step the simulator takes, so an
//! error trace gives the same per-frame outcomes), and arrives after the delay model's delay
//! ([`mslink_channel::delay::Delay`]: fixed, or with jitter, in order or reordered).
//!
//! Accounting (per direction, [`PacketCounts`]): every packet read is exactly one of refused as
//! malformed (not IPv4/IPv6), dropped by the queue (its [`QueueStats`] say why: tail, head,
//! aqm, overflow), refused by the link end (too large,
//! service queue full), delivered, lost by the error model (a service without recovery lost
//! its frame), abandoned by a service (a recovering service gave up or could not repair it),
//! failed to write, or still in flight. [`EmulatedHop::summary`] checks the identity.
//!
//! Frame tap (`mslink emulate --pcap-link`): after [`EmulatedHop::set_frame_tap`]`(true)`,
//! every frame a link end puts on the air (data, retransmissions, parity, control frames,
//! both directions) is kept as a [`TappedFrame`] (the bytes as the end emitted them, before
//! the error model, with the fate the model gave them) until the driver takes it with
//! [`EmulatedHop::drain_tapped`]. Off (the default), the MAC only tests an `Option`.

use std::collections::VecDeque;

use mslink_channel::capacity::Capacity;
use mslink_channel::delay::{Delay, OnOff};
use mslink_channel::medium::{on_air, FrameCounts};
use mslink_channel::queue::{Queue, QueueConfig, QueueStats};
use mslink_channel::{ErrorModel, Outcome};
use mslink_link::link::{LinkStats, MultiServiceLink, Refused};
use mslink_link::{Direction, Instant, Side};
use rand_chacha::ChaCha8Rng;

/// How one direction is built.
pub struct DirectionSetup {
    /// Capacity model.
    pub capacity: Capacity,
    /// Propagation delay (and jitter).
    pub delay: Delay,
    /// Outages, if any.
    pub onoff: Option<OnOff>,
    /// Error model.
    pub model: Box<dyn ErrorModel>,
    /// The error model's random stream.
    pub rng: ChaCha8Rng,
    /// The queue in front of the sending end.
    pub queue: QueueConfig,
    /// The queue's random stream (PIE's drops, FQ-CoDel's hash perturbation).
    pub queue_rng: ChaCha8Rng,
}

/// What the channel did to a tapped frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameFate {
    /// It arrived intact.
    Delivered,
    /// It never arrived.
    Lost,
    /// Only its first `at` bytes arrived.
    Truncated {
        /// Bytes that arrived.
        at: usize,
    },
    /// It arrived with `bits` bits inverted.
    Corrupted {
        /// Number of inverted bits.
        bits: usize,
    },
}

impl FrameFate {
    fn of(outcome: &Outcome, len: usize) -> FrameFate {
        match outcome {
            Outcome::Delivered => FrameFate::Delivered,
            Outcome::Lost => FrameFate::Lost,
            Outcome::Truncated { at } => FrameFate::Truncated { at: (*at).min(len) },
            Outcome::Corrupted { bits } => FrameFate::Corrupted { bits: bits.len() },
        }
    }
}

/// A link frame as it went on the air (see the module's "Frame tap").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TappedFrame {
    /// When it started on the air.
    pub at: Instant,
    /// Its direction.
    pub dir: Direction,
    /// The index of its service in the link configuration (its tag on a tagged link).
    pub service: usize,
    /// What the channel did to it.
    pub fate: FrameFate,
    /// The frame as the sending end emitted it: tag, service header and payload, CRC.
    pub bytes: Vec<u8>,
}

/// The fate of the packets of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PacketCounts {
    /// Packets read from the sending side.
    pub received: u64,
    /// Bytes of those packets.
    pub received_bytes: u64,
    /// Written to the receiving side.
    pub delivered: u64,
    /// Bytes written.
    pub delivered_bytes: u64,
    /// Refused as malformed (not an IPv4 or IPv6 packet).
    pub refused_malformed: u64,
    /// Refused by the link end: larger than the MTU.
    pub refused_too_large: u64,
    /// Dropped by the queue (limit or AQM; the queue's counters give the cause).
    pub dropped_queue: u64,
    /// Refused by the link end because the service's own queue was full.
    pub dropped_service_queue: u64,
    /// Arrived during an outage of an `[onoff]` in drop mode (as mm-onoff drops them).
    #[serde(default)]
    pub dropped_outage: u64,
    /// Lost by the error model on a service without recovery (raw).
    pub lost_channel: u64,
    /// Lost on a recovering service: it gave up or could not repair the loss.
    pub abandoned: u64,
    /// Delivered by the link but refused by the receiving device.
    pub write_failed: u64,
    /// Still in the queue, in the link, in the air or waiting to be written when counted.
    pub in_flight: u64,
}

impl PacketCounts {
    /// Sum of every fate: equals `received` when the accounting holds.
    pub fn accounted(&self) -> u64 {
        self.delivered
            + self.refused_malformed
            + self.refused_too_large
            + self.dropped_queue
            + self.dropped_service_queue
            + self.dropped_outage
            + self.lost_channel
            + self.abandoned
            + self.write_failed
            + self.in_flight
    }
}

/// Counters of one direction.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DirectionSummary {
    /// Packet fates.
    pub packets: PacketCounts,
    /// Frames on the air, by error-model outcome.
    pub frames: FrameCounts,
    /// The queue: drops by cause and sojourn times.
    pub queue: QueueStats,
    /// True if every packet read is accounted for exactly once.
    pub balanced: bool,
    /// The same fates per class (link service), in tag order: what the live view shows.
    #[serde(default)]
    pub services: Vec<ClassCounts>,
}

/// What became of one class's (link service's) packets in one direction: the sending end's
/// and the receiving end's counters of that service, with the packets the hop has decided
/// lost (raw) or abandoned (recovering schemes) as in [`PacketCounts`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClassCounts {
    /// Service name (`[[link.service]] name`).
    pub name: String,
    /// Its scheme.
    pub scheme: String,
    /// Packets the sending end's service accepted.
    pub accepted: u64,
    /// Packets refused because the service's queue was full.
    pub refused: u64,
    /// Packets the receiving end delivered.
    pub delivered: u64,
    /// Bytes of those packets.
    pub delivered_bytes: u64,
    /// Accepted packets lost on the air with no recovery (raw services).
    pub lost_channel: u64,
    /// Accepted packets a recovering service gave up on.
    pub abandoned: u64,
    /// Accepted packets not delivered and not yet decided lost.
    pub in_flight: u64,
    /// Data frames the sending end sent again.
    pub retransmissions: u64,
}

/// Everything the hop counted.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Left to right, right to left.
    pub directions: [DirectionSummary; 2],
    /// Link-layer counters of the left and right ends.
    pub ends: [LinkStats; 2],
    /// True if nothing was queued, on the air or pending in a link end when counted.
    pub quiet: bool,
}

struct Way {
    /// Packets, stamped with the time they were read.
    queue: Queue<Vec<u8>>,
    capacity: Capacity,
    delay: Delay,
    onoff: Option<OnOff>,
    model: Box<dyn ErrorModel>,
    rng: ChaCha8Rng,
    busy_until: Instant,
    /// Frames on the air, in order of arrival time.
    air: VecDeque<(Instant, Vec<u8>)>,
    frames: FrameCounts,
    packets: PacketCounts,
    /// Packets that came out of this direction, waiting to be written.
    out: VecDeque<Vec<u8>>,
    /// Bytes of the packets refused before the queue or by the link end (malformed, too
    /// large, service queue full, an outage in drop mode), for the link logs' `d` lines.
    refused_bytes: u64,
}

/// Two link ends joined by an emulated wireless hop.
pub struct EmulatedHop {
    ends: [MultiServiceLink; 2],
    dirs: [Way; 2],
    now: Instant,
    /// The time of the previous run: a frame that was not ready then became ready after it.
    prev: Instant,
    buf: Vec<u8>,
    /// Per direction and service: packets missing when the hop last *settled* (quiet, no
    /// timer armed), which nothing can deliver any more. [`Self::live_summary`] reports them
    /// lost or abandoned from then on, so its counters never go down.
    settled_missing: [std::cell::RefCell<Vec<u64>>; 2],
    /// Frames on the air since the driver last took them, when the tap is on.
    tap: Option<Vec<TappedFrame>>,
}

fn is_ip(p: &[u8]) -> bool {
    match p.first().map(|b| b >> 4) {
        Some(4) => p.len() >= 20,
        Some(6) => p.len() >= 40,
        _ => false,
    }
}

impl EmulatedHop {
    /// Joins `ends[0]` (left) and `ends[1]` (right); `dirs[i]` carries side `i`'s packets.
    pub fn new(ends: [MultiServiceLink; 2], dirs: [DirectionSetup; 2]) -> Self {
        let dirs = dirs.map(|d| Way {
            queue: Queue::new(&d.queue, d.queue_rng),
            capacity: d.capacity,
            delay: d.delay,
            onoff: d.onoff,
            model: d.model,
            rng: d.rng,
            busy_until: Instant::ZERO,
            air: VecDeque::new(),
            frames: FrameCounts::default(),
            packets: PacketCounts::default(),
            out: VecDeque::new(),
            refused_bytes: 0,
        });
        EmulatedHop {
            ends,
            dirs,
            now: Instant::ZERO,
            prev: Instant::ZERO,
            buf: Vec::with_capacity(2048),
            settled_missing: Default::default(),
            tap: None,
        }
    }

    /// Turns the frame tap on or off (off drops what was not taken).
    pub fn set_frame_tap(&mut self, on: bool) {
        self.tap = on.then(|| self.tap.take().unwrap_or_default());
    }

    /// Hands `sink` the frames put on the air since the last call, in the order they were
    /// sent (none when the tap is off), and forgets them.
    pub fn drain_tapped(&mut self, sink: &mut dyn FnMut(&TappedFrame)) {
        if let Some(tap) = self.tap.as_mut() {
            for f in tap.drain(..) {
                sink(&f);
            }
        }
    }

    /// A packet read on `side` at `now` enters the hop.
    pub fn handle_packet(&mut self, now: Instant, side: Side, packet: &[u8]) {
        let d = &mut self.dirs[side.sending()];
        d.packets.received += 1;
        d.packets.received_bytes += packet.len() as u64;
        let at = now.max(self.now);
        if !is_ip(packet) {
            d.packets.refused_malformed += 1;
            d.refused_bytes += packet.len() as u64;
        } else if d.onoff.as_mut().is_some_and(|o| o.drops_at(at)) {
            d.packets.dropped_outage += 1;
            d.refused_bytes += packet.len() as u64;
        } else {
            // Drops (now or when the AQM dequeues) are counted by the queue.
            d.queue.enqueue(at, packet.to_vec());
        }
        self.run(now);
    }

    /// Runs everything due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.run(now);
    }

    /// The earliest instant at which something is due, if anything is pending.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut consider = |x: Instant| t = Some(t.map_or(x, |y| y.min(x)));
        for (i, d) in self.dirs.iter().enumerate() {
            if let Some((at, _)) = d.air.front() {
                consider(*at);
            }
            if d.busy_until > self.now
                && (!d.queue.is_empty() || self.ends[i].has_transmit(d.busy_until))
            {
                consider(d.busy_until);
            }
        }
        for e in &self.ends {
            if let Some(at) = e.poll_timeout() {
                consider(at);
            }
        }
        t
    }

    /// The next packet to write on `side`, if any.
    pub fn front_deliver(&self, side: Side) -> Option<&[u8]> {
        self.dirs[side.receiving()]
            .out
            .front()
            .map(|p| p.as_slice())
    }

    /// The packets waiting to be written on `side`, front first.
    pub fn pending(&self, side: Side) -> impl Iterator<Item = &[u8]> + '_ {
        self.dirs[side.receiving()].out.iter().map(|p| p.as_slice())
    }

    /// Removes the front packet of `side`, which the driver wrote (counted as `delivered`).
    pub fn pop_delivered(&mut self, side: Side) {
        if let Some(p) = self.dirs[side.receiving()].out.pop_front() {
            self.count_delivered(side, p.len());
        }
    }

    /// Removes the front packet of `side`, which the device refused for good (counted as
    /// `write_failed`).
    pub fn pop_failed(&mut self, side: Side) {
        if self.dirs[side.receiving()].out.pop_front().is_some() {
            self.count_write_failed(side);
        }
    }

    /// The packets waiting to be written on `side`, for a driver that takes them off the
    /// front itself and reports each with [`Self::count_delivered`] or
    /// [`Self::count_write_failed`].
    pub fn deliver_queue(&mut self, side: Side) -> &mut VecDeque<Vec<u8>> {
        &mut self.dirs[side.receiving()].out
    }

    /// Counts a packet of `len` bytes that left `side`'s queue and was written to the device.
    pub fn count_delivered(&mut self, side: Side, len: usize) {
        let c = &mut self.dirs[side.receiving()].packets;
        c.delivered += 1;
        c.delivered_bytes += len as u64;
    }

    /// Counts a packet that left `side`'s queue without being written (refused by the device,
    /// or dropped while it stayed full): `write_failed`.
    pub fn count_write_failed(&mut self, side: Side) {
        self.dirs[side.receiving()].packets.write_failed += 1;
    }

    /// The capacity model of direction `dir` (for logs of its delivery opportunities).
    pub fn capacity(&self, dir: Direction) -> &Capacity {
        &self.dirs[dir].capacity
    }

    /// The outage process of direction `dir`, if it has one (a clone replays its periods).
    pub fn onoff(&self, dir: Direction) -> Option<&OnOff> {
        self.dirs[dir].onoff.as_ref()
    }

    /// Packets and bytes the queue of direction `dir` has dropped so far, every cause.
    pub fn queue_drops(&self, dir: Direction) -> (u64, u64) {
        let s = self.dirs[dir].queue.stats();
        (s.dropped, s.dropped_bytes)
    }

    /// Packets and bytes of direction `dir` dropped before the air so far, every cause: the
    /// queue's drops ([`Self::queue_drops`]) and the packets refused as malformed, as too large
    /// or for a full service queue, and those an outage dropped (the link logs' `d` lines).
    pub fn drops_before_air(&self, dir: Direction) -> (u64, u64) {
        let d = &self.dirs[dir];
        let (q, qb) = self.queue_drops(dir);
        let p = &d.packets;
        (
            q + p.refused_malformed
                + p.refused_too_large
                + p.dropped_service_queue
                + p.dropped_outage,
            qb + d.refused_bytes,
        )
    }

    /// Packets waiting to be written on `side`.
    pub fn pending_deliver(&self, side: Side) -> usize {
        self.dirs[side.receiving()].out.len()
    }

    /// True when no packet is queued, on the air or waiting to be written, and no link end
    /// has a frame to send.
    pub fn quiet(&self) -> bool {
        self.dirs
            .iter()
            .all(|d| d.queue.is_empty() && d.air.is_empty() && d.out.is_empty())
            && self.ends.iter().all(|e| !e.has_transmit(Instant::MAX))
    }

    /// True if a link end has a timer armed (a retransmission or NACK that may still come).
    pub fn timers_pending(&self) -> bool {
        self.ends.iter().any(|e| e.poll_timeout().is_some())
    }

    /// Packets accepted by a link end and not yet delivered by the other, per direction.
    pub fn unresolved(&self) -> [u64; 2] {
        let s = [self.ends[0].stats(), self.ends[1].stats()];
        [0, 1].map(|i| {
            s[i].services
                .iter()
                .zip(&s[1 - i].services)
                .map(|(tx, rx)| {
                    (tx.packets_in - tx.packets_refused).saturating_sub(rx.packets_delivered)
                })
                .sum()
        })
    }

    /// The counters, with every packet's fate. Packets a link end accepted and the other has
    /// not delivered are lost (raw services: by the error model; others: abandoned) once the
    /// hop is [quiet](Self::quiet), and in flight before.
    pub fn summary(&self) -> Summary {
        self.summarize(false)
    }

    /// The counters while the hop runs: packets missing when it last settled (quiet with no
    /// timer armed, so nothing can deliver them any more) are lost or abandoned, every other
    /// missing packet is in flight. Unlike [`Self::summary`] taken at a momentarily quiet
    /// instant (which counts packets still under recovery as lost), no counter ever goes down.
    pub fn live_summary(&self) -> Summary {
        self.summarize(true)
    }

    fn summarize(&self, live: bool) -> Summary {
        let ends = [self.ends[0].stats(), self.ends[1].stats()];
        let quiet = self.quiet();
        let settled = quiet && !self.timers_pending();
        let directions = [0, 1].map(|i| {
            let d = &self.dirs[i];
            let mut p = d.packets;
            p.dropped_queue = d.queue.stats().dropped;
            p.in_flight = d.queue.len() as u64 + d.out.len() as u64;
            let mut classes = Vec::with_capacity(ends[i].services.len());
            let mut known = self.settled_missing[i].borrow_mut();
            known.resize(ends[i].services.len(), 0);
            for (s, (tx, rx)) in ends[i]
                .services
                .iter()
                .zip(&ends[1 - i].services)
                .enumerate()
            {
                let accepted = tx.packets_in - tx.packets_refused;
                let missing = accepted.saturating_sub(rx.packets_delivered);
                if settled {
                    known[s] = known[s].max(missing);
                }
                let decided = match (live, quiet) {
                    (true, _) => known[s].min(missing),
                    (false, true) => missing,
                    (false, false) => 0,
                };
                p.in_flight += missing - decided;
                let raw = tx.scheme == "raw";
                if raw {
                    p.lost_channel += decided;
                } else {
                    p.abandoned += decided;
                }
                classes.push(ClassCounts {
                    name: tx.name.clone(),
                    scheme: tx.scheme.clone(),
                    accepted,
                    refused: tx.packets_refused,
                    delivered: rx.packets_delivered,
                    delivered_bytes: rx.bytes_delivered,
                    lost_channel: if raw { decided } else { 0 },
                    abandoned: if raw { 0 } else { decided },
                    in_flight: missing - decided,
                    retransmissions: tx.service.retransmissions,
                });
            }
            DirectionSummary {
                packets: p,
                frames: d.frames,
                queue: d.queue.stats().clone(),
                balanced: p.accounted() == p.received,
                services: classes,
            }
        });
        Summary {
            directions,
            ends,
            quiet,
        }
    }

    fn run(&mut self, now: Instant) {
        self.now = self.now.max(now);
        let now = self.now;
        loop {
            let mut progress = false;
            for i in 0..2 {
                while self.dirs[i].air.front().is_some_and(|(at, _)| *at <= now) {
                    let (_, frame) = self.dirs[i].air.pop_front().expect("checked");
                    self.ends[1 - i].handle_frame(now, &frame);
                    progress = true;
                }
            }
            for e in 0..2 {
                if self.ends[e].poll_timeout().is_some_and(|t| t <= now) {
                    self.ends[e].handle_timeout(now);
                }
                // End `e` delivers what direction `1 - e` carried.
                while let Some(p) = self.ends[e].poll_deliver() {
                    self.dirs[1 - e].out.push_back(p);
                }
            }
            for i in 0..2 {
                progress |= self.mac(now, i);
            }
            if !progress {
                break;
            }
        }
        self.prev = now;
    }

    /// Lets the MAC of direction `i` send while it is idle; true if it sent anything. A frame
    /// starts when both the MAC and the frame were ready (never later than `now`).
    fn mac(&mut self, now: Instant, i: usize) -> bool {
        let mut sent = false;
        let mut fed = false;
        // When the frame became ready: a driver in real time runs a little after the MAC
        // became free, and the frame must start when it could have, or every wake-up's
        // lateness would be lost capacity (a trace's opportunities, a rate's bits).
        let mut ready = self.prev;
        while self.dirs[i].busy_until <= now {
            let d = &mut self.dirs[i];
            if let Some(o) = d.onoff.as_mut() {
                // In an outage: nothing starts before it ends (frames wait in the queue).
                let on = o.available_at(d.busy_until.max(self.prev).min(now));
                if on > now {
                    d.busy_until = on;
                    break;
                }
            }
            self.buf.clear();
            let tx = match self.ends[i].poll_transmit(now, &mut self.buf) {
                Some(tx) => tx,
                None => {
                    // Feed the end one packet when it has nothing to send; if that still gives
                    // no frame (a window is full), wait for the next event.
                    if fed {
                        break;
                    }
                    let Some(e) = self.dirs[i].queue.dequeue(now) else {
                        break;
                    };
                    let p = e.item;
                    fed = true;
                    ready = e.enqueued;
                    let d = &mut self.dirs[i];
                    match self.ends[i].handle_packet(now, &p) {
                        Ok(_) => {}
                        Err(Refused::TooLarge { .. }) => {
                            d.packets.refused_too_large += 1;
                            d.refused_bytes += p.len() as u64;
                        }
                        Err(Refused::QueueFull { .. }) => {
                            d.packets.dropped_service_queue += 1;
                            d.refused_bytes += p.len() as u64;
                        }
                    }
                    continue;
                }
            };
            fed = false;
            sent = true;
            let d = &mut self.dirs[i];
            let mut start = d.busy_until.max(ready).min(now);
            if let Some(o) = d.onoff.as_mut() {
                start = o.available_at(start);
            }
            ready = self.prev;
            let done = d.capacity.transmit(start, tx.len);
            d.busy_until = done;
            let (outcome, arrives) = on_air(
                &mut self.ends[i],
                tx,
                &self.buf,
                &mut *d.model,
                &mut d.rng,
                now,
            );
            d.frames.record(tx.len, &outcome);
            if let Some(tap) = self.tap.as_mut() {
                tap.push(TappedFrame {
                    at: start,
                    dir: Direction::BOTH[i],
                    service: tx.service,
                    fate: FrameFate::of(&outcome, tx.len),
                    bytes: self.buf[..tx.len].to_vec(),
                });
            }
            if let Some(bytes) = arrives {
                let at = d.delay.arrival(done);
                // Jitter with reordering may put a frame before others already on the air.
                let pos = d.air.partition_point(|(t, _)| *t <= at);
                d.air.insert(pos, (at, bytes));
            }
        }
        sent
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::EmuConfig;
    use mslink_link::Duration;

    /// An IPv4/UDP packet of `len` bytes carrying `seq` at byte 28 (the link's test kit's).
    pub(crate) fn udp(len: usize, seq: u32) -> Vec<u8> {
        mslink_link::testkit::ipv4_udp(seq, len)
    }

    /// A hop built from a link file's text.
    pub(crate) fn hop(toml_text: &str) -> EmulatedHop {
        let c: EmuConfig = toml::from_str(toml_text).unwrap();
        c.build(Instant::ZERO, &mut |_| {
            Err(std::io::Error::other("no files"))
        })
        .unwrap()
    }

    /// Runs the hop to `until` in virtual time, writing everything out.
    fn drive(h: &mut EmulatedHop, until: Instant) -> Vec<(usize, Instant, Vec<u8>)> {
        let mut out = Vec::new();
        loop {
            for side in Side::BOTH {
                while let Some(p) = h.front_deliver(side) {
                    out.push((side.index(), h.now, p.to_vec()));
                    h.pop_delivered(side);
                }
            }
            match h.poll_timeout() {
                Some(t) if t <= until => h.handle_timeout(t.max(h.now)),
                _ => break,
            }
        }
        out
    }

    #[test]
    fn rate_and_delay_shape_arrivals() {
        // 8 Mbit/s, 10 ms: a 1000-byte packet (1004 on the air with the CRC) leaves after
        // 1.004 ms and arrives 10 ms later; the second waits for the first.
        let mut h = hop("rate_bps = 8e6\ndelay_ms = 10");
        h.handle_packet(Instant::ZERO, Side::Left, &udp(1000, 0));
        h.handle_packet(Instant::ZERO, Side::Left, &udp(1000, 1));
        let out = drive(&mut h, Instant::from_millis(100));
        let t: Vec<u64> = out.iter().map(|o| o.1.as_nanos()).collect();
        assert_eq!(t, [11_004_000, 12_008_000]);
        assert!(out.iter().all(|o| o.0 == 1));
        let s = h.summary();
        assert!(s.quiet && s.directions[0].balanced);
        assert_eq!(s.directions[0].packets.delivered, 2);
    }

    #[test]
    fn late_wake_ups_lose_no_trace_capacity() {
        // Ten 1504-byte opportunities every millisecond; a driver that always wakes 30 µs late
        // must still carry ten 1500-byte packets (1504-byte frames) per millisecond.
        let trace: String = (1..=100)
            .flat_map(|ms| std::iter::repeat_n(ms, 10))
            .map(|ms| format!("{ms}\n"))
            .collect();
        let c: EmuConfig = toml::from_str("capacity_trace = 't'").unwrap();
        let mut h = c.build(Instant::ZERO, &mut |_| Ok(trace.clone())).unwrap();
        for k in 0..1000 {
            h.handle_packet(Instant::ZERO, Side::Left, &udp(1500, k));
        }
        let mut delivered = 0;
        while let Some(t) = h.poll_timeout() {
            h.handle_timeout(t + Duration::from_micros(30));
            while h.front_deliver(Side::Right).is_some() {
                h.pop_delivered(Side::Right);
                delivered += 1;
            }
            if h.now >= Instant::from_millis(50) {
                break;
            }
        }
        // Opportunities at 1..=50 ms: 500 frames (the driver stops just after 50 ms).
        assert_eq!(delivered, 500);
    }

    #[test]
    fn every_packet_is_accounted_for() {
        let mut h = hop(
            "rate_bps = 1e6\nqueue_packets = 5\n[error]\nmodel = 'pattern'\ngood = 3\nbad = 1\n",
        );
        for k in 0..20 {
            h.handle_packet(Instant::ZERO, Side::Left, &udp(500, k));
        }
        h.handle_packet(Instant::ZERO, Side::Left, &[0x00, 1, 2]);
        h.handle_packet(Instant::ZERO, Side::Right, &udp(1600, 99));
        let s = h.summary();
        assert!(!s.quiet);
        for d in &s.directions {
            assert!(d.balanced, "{d:?}");
        }
        drive(&mut h, Instant::from_millis(1000));
        let s = h.summary();
        assert!(s.quiet);
        let p = s.directions[0].packets;
        // One fed to the link at once, five queued; the other fourteen dropped by the queue.
        assert_eq!(p.received, 21);
        assert_eq!(p.refused_malformed, 1);
        assert_eq!(p.dropped_queue, 14);
        // Six frames sent; the pattern loses the fourth.
        assert_eq!((p.delivered, p.lost_channel), (5, 1));
        assert_eq!(s.directions[1].packets.refused_too_large, 1);
        assert!(s.directions.iter().all(|d| d.balanced));
        // Before the air: fourteen queue drops of 500 bytes and the 3-byte malformed packet;
        // the other way, the 1600-byte packet over the MTU.
        assert_eq!(
            h.drops_before_air(Direction::LeftToRight),
            (15, 14 * 500 + 3)
        );
        assert_eq!(h.drops_before_air(Direction::RightToLeft), (1, 1600));
        // The one class carries what the link carried: its row is the direction's.
        let c = &s.directions[0].services[0];
        assert_eq!(
            (
                c.accepted,
                c.delivered,
                c.lost_channel,
                c.abandoned,
                c.in_flight
            ),
            (6, 5, 1, 0, 0)
        );
        assert_eq!(c.delivered_bytes, 5 * 500);
    }

    #[test]
    fn a_full_service_queue_is_a_drop_before_the_air() {
        // Selective repeat with a window of 2 and room for 2 more, on a 20 ms hop: a burst of
        // 10 packets fills both; the link end refuses the rest.
        let mut h = hop(
            "delay_ms = 20\n[[link.service]]\nname = 'x'\nscheme = 'selective_repeat'\nwindow = 2\nqueue_limit = 2\n",
        );
        for k in 0..10 {
            h.handle_packet(Instant::ZERO, Side::Left, &udp(300, k));
        }
        drive(&mut h, Instant::from_millis(1));
        let p = h.summary().directions[0].packets;
        assert!(p.dropped_service_queue > 0, "{p:?}");
        assert_eq!(p.dropped_queue, 0);
        assert_eq!(
            h.drops_before_air(Direction::LeftToRight),
            (p.dropped_service_queue, 300 * p.dropped_service_queue)
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Whatever arrives, in any order and size, every packet is accounted for at every
        /// moment, and once drained nothing is left in flight.
        #[test]
        fn accounting_always_balances(
            scheme in proptest::sample::select(vec!["raw", "selective_repeat", "oos_rlp", "go_back_n", "xor_fec"]),
            queue in 1usize..20,
            loss in 0.0f64..0.5,
            steps in proptest::collection::vec((0usize..2, 0usize..1700, 0u64..3000), 1..120),
        ) {
            let mut h = hop(&format!(
                "rate_bps = 5e6\ndelay_ms = 2\nqueue_packets = {queue}\n[error]\nmodel = 'independent'\nloss = {loss}\n[[link.service]]\nname = 'x'\nscheme = '{scheme}'\n"
            ));
            let mut now = Instant::ZERO;
            // The live counters (issue 16): balanced too, and never going down.
            let mut before = [(0u64, 0u64, 0u64); 2];
            let mut live_ok = |h: &EmulatedHop| -> Result<(), proptest::test_runner::TestCaseError> {
                for (i, d) in h.live_summary().directions.iter().enumerate() {
                    proptest::prop_assert!(d.balanced, "{:?}", d);
                    let p = d.packets;
                    // The per-class rows split the direction's decided losses.
                    let classes: (u64, u64) = d.services.iter().fold((0, 0), |a, c| (a.0 + c.lost_channel, a.1 + c.abandoned));
                    proptest::prop_assert_eq!(classes, (p.lost_channel, p.abandoned));
                    let now = (p.delivered, p.lost_channel, p.abandoned);
                    let b = before[i];
                    proptest::prop_assert!(
                        now.0 >= b.0 && now.1 >= b.1 && now.2 >= b.2,
                        "live counters went down: {:?} -> {:?}", b, now
                    );
                    before[i] = now;
                }
                Ok(())
            };
            for (k, (side, len, dt_us)) in steps.into_iter().enumerate() {
                now += Duration::from_micros(dt_us);
                let p = if len < 32 { vec![0u8; len] } else { udp(len, k as u32) };
                h.handle_packet(now, Side::BOTH[side], &p);
                drive(&mut h, now);
                for d in &h.summary().directions {
                    proptest::prop_assert!(d.balanced, "{:?}", d);
                }
                live_ok(&h)?;
            }
            drive(&mut h, now + Duration::from_secs_f64(30.0));
            live_ok(&h)?;
            let s = h.summary();
            for d in &s.directions {
                proptest::prop_assert!(d.balanced, "{:?}", d);
                if s.quiet {
                    proptest::prop_assert_eq!(d.packets.in_flight, 0);
                }
            }
            if s.quiet && !h.timers_pending() {
                // Settled: the live view has decided every packet as the final one does.
                let live = h.live_summary();
                for i in 0..2 {
                    proptest::prop_assert_eq!(live.directions[i].packets, s.directions[i].packets);
                }
            }
        }
    }

    /// Offers UDP at 11 Mbit/s for 10 s to a 10 Mbit/s hop with the given queue settings.
    fn overload(queue: &str) -> Summary {
        let mut h = hop(&format!(
            "rate_bps = 10e6\ndelay_ms = 5\nqueue_packets = 2000\n{queue}"
        ));
        let mut now = Instant::ZERO;
        // 1000-byte packets every 727 µs: 11 Mbit/s.
        for k in 0..13_750 {
            h.handle_packet(now, Side::Left, &udp(1000, k));
            drive(&mut h, now);
            now += Duration::from_micros(727);
        }
        drive(&mut h, now + Duration::from_secs(10));
        h.summary()
    }

    #[test]
    fn aqm_keeps_the_queue_delay_near_target_where_drop_tail_fills_the_buffer() {
        let tail = overload("queue = 'droptail'");
        let codel = overload("queue = 'codel'");
        let pie = overload("queue = 'pie'");
        let fq = overload("queue = 'fq_codel'");
        for s in [&tail, &codel, &pie, &fq] {
            assert!(s.quiet && s.directions.iter().all(|d| d.balanced), "{s:?}");
            let d = &s.directions[0];
            // Every queue drop is counted by cause.
            let q = &d.queue;
            assert_eq!(d.packets.dropped_queue, q.dropped);
            assert_eq!(
                q.dropped,
                q.dropped_tail + q.dropped_head + q.dropped_aqm + q.dropped_overflow
            );
        }
        let median = |s: &Summary| s.directions[0].queue.sojourn.quantile_s(0.5);
        // Drop-tail: 10% excess for 10 s builds up to a second of queue (under the limit).
        assert!(median(&tail) > 0.3, "drop-tail median {}", median(&tail));
        assert_eq!(tail.directions[0].queue.dropped, 0);
        // Unresponsive traffic is CoDel's hardest case: its drop rate climbs by the sqrt law
        // (measured: median 60 ms against drop-tail's 480 ms); PIE's drop probability tracks
        // the load directly (15 ms, its target).
        for (name, s) in [("codel", &codel), ("fq_codel", &fq)] {
            assert!(median(s) < 0.1, "{name} median {}", median(s));
            assert!(median(s) < median(&tail) / 4.0, "{name}");
        }
        assert!(median(&pie) < 0.04, "pie median {}", median(&pie));
        assert!(codel.directions[0].queue.dropped_aqm > 0);
        assert!(pie.directions[0].queue.dropped_aqm > 0);
    }

    #[test]
    fn jitter_spreads_delay_and_keeps_order_unless_reordering() {
        let run = |reorder: bool| {
            let mut h = hop(&format!(
                "delay_ms = 20\njitter_ms = 5\njitter_dist = 'uniform'\nreorder = {reorder}\nseed = 3"
            ));
            let mut now = Instant::ZERO;
            let mut sent = Vec::new();
            let mut out = Vec::new();
            for k in 0..500u32 {
                h.handle_packet(now, Side::Left, &udp(200, k));
                sent.push(now);
                out.extend(drive(&mut h, now));
                now += Duration::from_millis(1);
            }
            out.extend(drive(&mut h, now + Duration::from_secs(1)));
            let seqs: Vec<u32> = out
                .iter()
                .map(|o| u32::from_be_bytes(o.2[28..32].try_into().unwrap()))
                .collect();
            let delays: Vec<u64> = out
                .iter()
                .zip(&seqs)
                .map(|(o, &k)| o.1.saturating_since(sent[k as usize]).as_nanos())
                .collect();
            (seqs, delays)
        };
        let (in_order, d) = run(false);
        assert_eq!(in_order.len(), 500);
        assert!(in_order.windows(2).all(|w| w[0] < w[1]), "order kept");
        let spread = d.iter().max().unwrap() - d.iter().min().unwrap();
        assert!(spread > 5_000_000, "spread {spread} ns");
        let (mixed, d) = run(true);
        assert_eq!(mixed.len(), 500);
        assert!(mixed.windows(2).any(|w| w[0] > w[1]), "reordered");
        // Uniform ±√3·5 ms around 20 ms.
        assert!(
            d.iter().all(|&x| (11_000_000..=29_000_000).contains(&x)),
            "{d:?}"
        );
    }

    #[test]
    fn outages_hold_frames_until_the_link_is_back() {
        let mut h = hop("delay_ms = 1\n[onoff]\non_ms = 100\noff_ms = 50\ndist = 'fixed'");
        // Sent at 120 ms, in the first outage (100..150 ms): leaves at 150 ms, arrives at 151.
        h.handle_packet(Instant::from_millis(10), Side::Left, &udp(200, 0));
        let mut out = drive(&mut h, Instant::from_millis(100));
        h.handle_packet(Instant::from_millis(120), Side::Left, &udp(200, 1));
        out.extend(drive(&mut h, Instant::from_millis(500)));
        let t: Vec<u64> = out.iter().map(|o| o.1.as_nanos() / 1_000_000).collect();
        assert_eq!(t, [11, 151]);
        assert!(h.summary().directions[0].balanced);
    }

    #[test]
    fn selective_repeat_recovers_what_raw_loses() {
        let run = |scheme: &str| {
            let mut h = hop(&format!(
                "rate_bps = 10e6\ndelay_ms = 5\n[error]\nmodel = 'independent'\nloss = 0.2\n[[link.service]]\nname = 'x'\nscheme = '{scheme}'\n"
            ));
            let mut now = Instant::ZERO;
            for k in 0..200 {
                h.handle_packet(now, Side::Left, &udp(1000, k));
                drive(&mut h, now);
                now += Duration::from_millis(2);
            }
            drive(&mut h, now + Duration::from_secs_f64(5.0));
            let s = h.summary();
            assert!(s.quiet && s.directions.iter().all(|d| d.balanced), "{s:?}");
            s.directions[0].packets
        };
        let raw = run("raw");
        let sr = run("selective_repeat");
        assert!(raw.lost_channel > 20, "{raw:?}");
        assert_eq!(sr.delivered, 200, "{sr:?}");
    }
}
