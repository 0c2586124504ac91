//! Per-packet link logs in Mahimahi's format (`mm-link --uplink-log` / `--downlink-log`), so
//! that `mm-throughput-graph`, `mm-delay-graph` and `mslink graph` read what the emulator did.
//!
//! Contract. A [`LinkLog`] records one direction of the hop. It is fed by the driver (the
//! session), never by the sans-IO hop: [`LinkLog::arrival`] for each packet read on the sending
//! side, [`LinkLog::departure`] for each packet written on the receiving side,
//! [`LinkLog::tick`] once per turn of the event loop (the capacity's delivery opportunities up
//! to `now`, the queue's new drops, and forgetting arrivals too old to be matched), and
//! [`LinkLog::finish`] at the end (a `#` trailer with the totals, then a flush). Writes go
//! through a buffer; the first write error is kept and returned by `finish`, and nothing is
//! written after it.
//!
//! The file, as Mahimahi's `LinkQueue` writes it (src/frontend/link_queue.cc): header lines
//! starting with `#` (`# mahimahi mm-link (Uplink) [CAPACITY] > FILE`, `# command line:`,
//! `# queue:`, `# init timestamp: <Unix ms>`, `# base timestamp: <ms>`, then our own `# mslink`
//! lines saying what the events mean here), then one event per line, times in whole
//! milliseconds since the emulator's clock started (the base timestamp is 0):
//!
//! * `T + BYTES`: a packet arrived (read from the sending side);
//! * `T - BYTES DELAY`: a packet left the hop (written to the receiving side) `DELAY` ms after
//!   its arrival (both times truncated to the millisecond, as Mahimahi's are). Unlike
//!   `mm-link`'s, our delay covers the whole hop: queue, serialisation, link-layer recovery and
//!   propagation (`delay_ms`, jitter). A departure is matched to its arrival by the packet's
//!   bytes (a hash of its length and first 64 bytes, FIFO among equal hashes); one whose
//!   arrival was forgotten ([`FORGET`]) is written with delay 0 and counted in the trailer;
//! * `T # BYTES`: capacity. A capacity trace gives Mahimahi's lines, one per opportunity of
//!   1504 bytes; a constant rate gives one line per millisecond with the bytes it carries in
//!   that millisecond; an unlimited link gives none. Outages (`[onoff]`) have no capacity;
//! * `T d PACKETS BYTES`: packets dropped before the air, every cause: the queue's (limit or
//!   AQM; the summary's queue counters say which) and the packets the hop refused (malformed,
//!   over the MTU) or the link end's service queue had no room for. So the log's totals
//!   reconcile with the summary: arrivals = departures + `d` packets + lost on the air +
//!   abandoned + write failures + in flight. Packets lost on the air or given up by the link
//!   layer have an arrival and no departure; the summary counts them by cause.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Write};
use std::sync::Arc;

use mslink_channel::capacity::Capacity;
use mslink_channel::delay::OnOff;
use mslink_channel::mahimahi::{MahimahiTrace, OPPORTUNITY_BYTES};
use mslink_link::{Duration, Instant};

/// Arrivals not matched by a departure within this long are forgotten (a packet lost on the
/// air never departs), so the log's memory stays bounded.
pub const FORGET: Duration = Duration::from_secs(30);

/// The names Mahimahi gives the directions: index 0 is the uplink (left to right: out of the
/// namespace of a single-mode command, toward the host), 1 the downlink.
pub const LINK_NAMES: [&str; 2] = ["Uplink", "Downlink"];

/// What a log's header says.
#[derive(Clone, Debug)]
pub struct LogHeader {
    /// 0: uplink (left to right), 1: downlink (right to left).
    pub direction: usize,
    /// How packet sizes are written.
    pub bytes: LogBytes,
    /// The capacity, as `mm-link` names its trace file: a trace's path, or `12000000 bit/s`.
    pub capacity: String,
    /// The log file's path, as given.
    pub path: String,
    /// The emulator's command line.
    pub command_line: String,
    /// The queue, e.g. `droptail [packets=1000]` or `infinite`.
    pub queue: String,
    /// The Unix time in ms of the clock's zero.
    pub init_unix_ms: u64,
}

/// How a log writes a packet's size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LogBytes {
    /// The IP packet's length (what crossed the link).
    #[default]
    Ip,
    /// The IP packet's length plus the 4 bytes of the packet-information header Mahimahi's
    /// TUN devices carry, as `mm-link` logs it, so Mahimahi's tools and ours agree byte for
    /// byte on logs of the same traffic.
    Mahimahi,
}

impl LogBytes {
    /// Bytes added to each packet's IP length.
    pub fn extra(self) -> u64 {
        match self {
            LogBytes::Ip => 0,
            LogBytes::Mahimahi => 4,
        }
    }
}

/// Where the delivery opportunities come from.
enum Opportunities {
    None,
    /// A constant rate: bytes per millisecond, next millisecond to write.
    Rate {
        bps: u64,
        next_ms: u64,
    },
    /// A Mahimahi trace: next opportunity's index.
    Trace {
        trace: Arc<MahimahiTrace>,
        epoch_ms: u64,
        next_k: u64,
    },
}

/// Totals of what a log holds (also written in its trailer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogTotals {
    /// `+` lines and their bytes.
    pub arrivals: u64,
    /// Bytes of the arrivals.
    pub arrival_bytes: u64,
    /// `-` lines.
    pub departures: u64,
    /// Bytes of the departures.
    pub departure_bytes: u64,
    /// Packets in `d` lines.
    pub drops: u64,
    /// Bytes in `d` lines.
    pub drop_bytes: u64,
    /// Bytes in `#` lines.
    pub capacity_bytes: u64,
    /// Departures whose arrival was not found (written with delay 0).
    pub unmatched: u64,
}

/// One direction's log.
pub struct LinkLog<W: Write> {
    w: W,
    /// Added to each packet's IP length ([`LogBytes::extra`]).
    extra: u64,
    error: Option<io::Error>,
    opportunities: Opportunities,
    onoff: Option<OnOff>,
    /// Arrival times (ms) by packet hash, oldest first.
    pending: Pending,
    next_sweep_ms: u64,
    drops_seen: (u64, u64),
    last_ms: u64,
    totals: LogTotals,
}

fn ms(t: Instant) -> u64 {
    t.as_nanos() / 1_000_000
}

/// A hash of a packet's length and first 64 bytes (IP and transport headers, checksums
/// included, so it tells packets apart), eight bytes at a time (FxHash's step, then a
/// finishing mix so every bit of the key counts).
fn packet_hash(p: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = (p.len() as u64).wrapping_mul(K);
    let head = &p[..p.len().min(64)];
    let mut chunks = head.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    // splitmix64's finaliser.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The keys are already hashes: the map uses them as they are.
#[derive(Default, Clone, Copy)]
struct KeyIsHash(u64);

impl std::hash::Hasher for KeyIsHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type Pending = HashMap<u64, Arrivals, std::hash::BuildHasherDefault<KeyIsHash>>;

/// Arrival times (ms) of the packets with one hash, oldest first: almost always one, kept
/// inline (no allocation per packet).
enum Arrivals {
    One(u64),
    Many(VecDeque<u64>),
}

impl Arrivals {
    fn push(&mut self, t: u64) {
        match self {
            Arrivals::One(a) => *self = Arrivals::Many(VecDeque::from([*a, t])),
            Arrivals::Many(q) => q.push_back(t),
        }
    }

    /// Removes the oldest; true if none is left.
    fn pop(&mut self) -> (Option<u64>, bool) {
        match self {
            Arrivals::One(a) => (Some(*a), true),
            Arrivals::Many(q) => {
                let a = q.pop_front();
                (a, q.is_empty())
            }
        }
    }

    /// Forgets arrivals before `horizon`; true if none is left.
    fn forget_before(&mut self, horizon: u64) -> bool {
        match self {
            Arrivals::One(a) => *a < horizon,
            Arrivals::Many(q) => {
                while q.front().is_some_and(|&a| a < horizon) {
                    q.pop_front();
                }
                q.is_empty()
            }
        }
    }
}

/// Writes `v` in decimal into the end of `buf`, returning where it starts.
fn decimal(mut v: u64, buf: &mut [u8; 20]) -> usize {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return i;
        }
    }
}

impl<W: Write> LinkLog<W> {
    /// Starts a log on `w`: writes the header; `capacity` and `onoff` are the direction's
    /// models as the hop has them (the outage process is cloned, so the log replays the very
    /// periods the hop meets).
    pub fn new(
        w: W,
        header: &LogHeader,
        capacity: &Capacity,
        onoff: Option<&OnOff>,
    ) -> io::Result<Self> {
        let opportunities = match capacity {
            Capacity::Unlimited => Opportunities::None,
            Capacity::Rate { bps } => Opportunities::Rate {
                bps: *bps,
                next_ms: 0,
            },
            Capacity::Trace(c) => {
                let epoch_ms = ms(c.epoch());
                Opportunities::Trace {
                    trace: c.trace().clone(),
                    epoch_ms,
                    next_k: 0,
                }
            }
        };
        let mut log = LinkLog {
            w,
            extra: header.bytes.extra(),
            error: None,
            opportunities,
            onoff: onoff.cloned(),
            pending: Pending::default(),
            next_sweep_ms: 1000,
            drops_seen: (0, 0),
            last_ms: 0,
            totals: LogTotals::default(),
        };
        let name = LINK_NAMES[header.direction.min(1)];
        let (from, to) = if header.direction == 0 {
            ("left", "right")
        } else {
            ("right", "left")
        };
        let text = format!(
            "# mahimahi mm-link ({name}) [{}] > {}\n\
             # command line: {}\n\
             # queue: {}\n\
             # init timestamp: {}\n\
             # base timestamp: 0\n\
             # mslink emulate: {name} = {from} to {to}; times in ms since the emulator's clock started; \
             '-' = written to the {to} side, delay = queue + serialisation + link-layer recovery + propagation; \
             '#' = capacity ({}); 'd' = drops before the air (queue, refused, service queue full, outage); \
             packet sizes: {}\n",
            header.capacity,
            header.path,
            header.command_line,
            header.queue,
            header.init_unix_ms,
            match capacity {
                Capacity::Unlimited => "unlimited: none".to_string(),
                Capacity::Rate { .. } => "bytes per ms of the rate".to_string(),
                Capacity::Trace(_) => format!("one line per {OPPORTUNITY_BYTES}-byte opportunity"),
            },
            match header.bytes {
                LogBytes::Ip => "IP length",
                LogBytes::Mahimahi => "IP length + 4, as mm-link counts them",
            }
        );
        log.w.write_all(text.as_bytes())?;
        Ok(log)
    }

    /// Writes `T KIND A[ B]\n` without the formatting machinery (the event loop writes one
    /// per packet).
    fn event(&mut self, t: u64, kind: u8, a: u64, b: Option<u64>) {
        if self.error.is_some() {
            return;
        }
        let mut line = [0u8; 72];
        let mut n = 0;
        let mut digits = [0u8; 20];
        let mut put = |bytes: &[u8], n: &mut usize| {
            line[*n..*n + bytes.len()].copy_from_slice(bytes);
            *n += bytes.len();
        };
        let i = decimal(t, &mut digits);
        put(&digits[i..], &mut n);
        put(&[b' ', kind, b' '], &mut n);
        let i = decimal(a, &mut digits);
        put(&digits[i..], &mut n);
        if let Some(b) = b {
            put(b" ", &mut n);
            let i = decimal(b, &mut digits);
            put(&digits[i..], &mut n);
        }
        put(b"\n", &mut n);
        if let Err(e) = self.w.write_all(&line[..n]) {
            self.error = Some(e);
        }
    }

    fn line(&mut self, args: std::fmt::Arguments<'_>) {
        if self.error.is_none() {
            if let Err(e) = self.w.write_fmt(args) {
                self.error = Some(e);
            }
        }
    }

    fn on_at(&mut self, t_ms: u64) -> bool {
        match self.onoff.as_mut() {
            None => true,
            Some(o) => o.is_on(Instant::from_millis(t_ms)),
        }
    }

    /// Writes the capacity up to `now`: a trace's opportunities at or before it, a rate's
    /// milliseconds that are over.
    fn capacity_until(&mut self, now: Instant) {
        let now_ms = ms(now);
        loop {
            let (t, bytes) = match &mut self.opportunities {
                Opportunities::None => return,
                Opportunities::Rate { bps, next_ms } => {
                    if *next_ms >= now_ms {
                        return;
                    }
                    let m = *next_ms;
                    *next_ms += 1;
                    let (b, m128) = (u128::from(*bps), u128::from(m));
                    (m, ((m128 + 1) * b / 8000 - m128 * b / 8000) as u64)
                }
                Opportunities::Trace {
                    trace,
                    epoch_ms,
                    next_k,
                } => {
                    let t = *epoch_ms + trace.at_ms(*next_k);
                    if t > now_ms {
                        return;
                    }
                    *next_k += 1;
                    (t, OPPORTUNITY_BYTES as u64)
                }
            };
            if bytes > 0 && self.on_at(t) {
                self.totals.capacity_bytes += bytes;
                self.event(t, b'#', bytes, None);
            }
        }
    }

    /// A packet of direction's sending side arrived at `now`.
    pub fn arrival(&mut self, now: Instant, packet: &[u8]) {
        self.capacity_until(now);
        let t = ms(now);
        self.last_ms = self.last_ms.max(t);
        let len = packet.len() as u64 + self.extra;
        self.totals.arrivals += 1;
        self.totals.arrival_bytes += len;
        match self.pending.entry(packet_hash(packet)) {
            std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().push(t),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(Arrivals::One(t));
            }
        }
        self.event(t, b'+', len, None);
    }

    /// A packet left the hop (was written to the receiving side) at `now`.
    pub fn departure(&mut self, now: Instant, packet: &[u8]) {
        self.capacity_until(now);
        let t = ms(now);
        self.last_ms = self.last_ms.max(t);
        let h = packet_hash(packet);
        let arrived = match self.pending.get_mut(&h) {
            Some(q) => {
                let (a, empty) = q.pop();
                if empty {
                    self.pending.remove(&h);
                }
                a
            }
            None => None,
        };
        let delay = match arrived {
            Some(a) => t.saturating_sub(a),
            None => {
                self.totals.unmatched += 1;
                0
            }
        };
        let len = packet.len() as u64 + self.extra;
        self.totals.departures += 1;
        self.totals.departure_bytes += len;
        self.event(t, b'-', len, Some(delay));
    }

    /// Once per turn of the event loop: capacity up to `now`, the drops before the air so far
    /// (`drops`: packets and bytes, cumulative, [`crate::hop::EmulatedHop::drops_before_air`]),
    /// and forgetting stale arrivals.
    pub fn tick(&mut self, now: Instant, drops: (u64, u64)) {
        self.capacity_until(now);
        let t = ms(now).max(self.last_ms);
        if drops.0 > self.drops_seen.0 {
            let n = drops.0 - self.drops_seen.0;
            let b = drops.1.saturating_sub(self.drops_seen.1) + n * self.extra;
            self.drops_seen = drops;
            self.totals.drops += n;
            self.totals.drop_bytes += b;
            self.last_ms = t;
            self.event(t, b'd', n, Some(b));
        }
        if t >= self.next_sweep_ms {
            self.next_sweep_ms = t + 1000;
            let horizon = t.saturating_sub(FORGET.as_nanos() / 1_000_000);
            self.pending.retain(|_, q| !q.forget_before(horizon));
        }
    }

    /// Writes what the log holds so far to its writer's destination (the emulator does it
    /// every second, so a log is readable after SIGKILL); an error is kept for [`Self::finish`].
    pub fn flush(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.w.flush() {
                self.error = Some(e);
            }
        }
    }

    /// The totals so far.
    pub fn totals(&self) -> LogTotals {
        self.totals
    }

    /// Ends the log at `now`: the last opportunities and drops, a `#` trailer with the totals,
    /// and a flush. Returns the writer and the totals, or the first write error.
    pub fn finish(mut self, now: Instant, drops: (u64, u64)) -> io::Result<(W, LogTotals)> {
        self.tick(now, drops);
        let t = self.totals;
        self.line(format_args!(
            "# mslink totals: {} arrivals ({} bytes), {} departures ({} bytes), {} dropped ({} bytes), capacity {} bytes, {} departures without a matching arrival (delay written as 0)\n",
            t.arrivals, t.arrival_bytes, t.departures, t.departure_bytes, t.drops, t.drop_bytes, t.capacity_bytes, t.unmatched
        ));
        if let Some(e) = self.error {
            return Err(e);
        }
        self.w.flush()?;
        Ok((self.w, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(direction: usize) -> LogHeader {
        LogHeader {
            direction,
            capacity: "8000000 bit/s".into(),
            path: "up.log".into(),
            command_line: "mslink emulate --uplink-log up.log".into(),
            queue: "infinite".into(),
            init_unix_ms: 1_700_000_000_000,
            bytes: LogBytes::Ip,
        }
    }

    #[test]
    fn mahimahi_sizes_add_the_packet_information_header_to_every_event() {
        let cap = Capacity::Unlimited;
        let h = LogHeader {
            bytes: LogBytes::Mahimahi,
            ..header(0)
        };
        let mut log = LinkLog::new(Vec::new(), &h, &cap, None).unwrap();
        let p = vec![0x45u8; 1000];
        log.arrival(Instant::from_millis(1), &p);
        log.departure(Instant::from_millis(3), &p);
        log.tick(Instant::from_millis(4), (2, 3000));
        let t = text(log, Instant::from_millis(5));
        let events: Vec<&str> = t.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(events, ["1 + 1004", "3 - 1004 2", "4 d 2 3008"], "{t}");
        assert!(t.contains("packet sizes: IP length + 4"), "{t}");
    }

    fn text(log: LinkLog<Vec<u8>>, now: Instant) -> String {
        String::from_utf8(log.finish(now, (0, 0)).unwrap().0).unwrap()
    }

    #[test]
    fn events_in_mahimahi_syntax() {
        let cap = Capacity::rate(8_000_000);
        let mut log = LinkLog::new(Vec::new(), &header(0), &cap, None).unwrap();
        let p = vec![0x45u8; 1000];
        log.arrival(Instant::from_micros(500), &p);
        log.departure(Instant::from_micros(12_700), &p);
        log.tick(Instant::from_millis(13), (2, 3000));
        let t = text(log, Instant::from_millis(13));
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("# mahimahi mm-link (Uplink) [8000000 bit/s] > up.log"));
        assert_eq!(lines[3], "# init timestamp: 1700000000000");
        assert_eq!(lines[4], "# base timestamp: 0");
        let events: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| !l.starts_with('#'))
            .collect();
        // 8 Mbit/s: 1000 bytes per millisecond, milliseconds 0..12 written once over.
        assert_eq!(events[0], "0 + 1000");
        assert_eq!(events[1], "0 # 1000");
        assert!(events.contains(&"12 - 1000 12"), "{events:?}");
        assert_eq!(events.iter().filter(|l| l.contains(" # ")).count(), 13);
        assert_eq!(*events.last().unwrap(), "13 d 2 3000");
        assert!(t.ends_with("0 departures without a matching arrival (delay written as 0)\n"));
    }

    #[test]
    fn trace_opportunities_and_outages() {
        let trace = Arc::new(MahimahiTrace::parse("1\n1\n3\n").unwrap());
        let cap = Capacity::trace(trace, Instant::ZERO);
        let log = LinkLog::new(Vec::new(), &header(1), &cap, None).unwrap();
        let t = text(log, Instant::from_millis(7));
        let ops: Vec<&str> = t.lines().filter(|l| l.contains(" # ")).collect();
        // Period 3: 1, 1, 3, then 4, 4, 6, then 7, 7.
        assert_eq!(
            ops,
            [
                "1 # 1504", "1 # 1504", "3 # 1504", "4 # 1504", "4 # 1504", "6 # 1504", "7 # 1504",
                "7 # 1504"
            ]
        );
        assert!(t.starts_with("# mahimahi mm-link (Downlink)"));
        // Off from 2 ms to 5 ms (fixed periods): no capacity then.
        let onoff = OnOff::new(
            mslink_channel::delay::OnOffConfig {
                on_ms: 2.0,
                off_ms: 3.0,
                dist: mslink_channel::delay::PeriodDist::Fixed,
                ..Default::default()
            },
            mslink_channel::streams::stream(1, "x"),
        );
        let cap = Capacity::rate(8_000_000);
        let log = LinkLog::new(Vec::new(), &header(0), &cap, Some(&onoff)).unwrap();
        let t = text(log, Instant::from_millis(8));
        let at: Vec<&str> = t
            .lines()
            .filter(|l| l.contains(" # "))
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        assert_eq!(at, ["0", "1", "5", "6"]);
    }

    #[test]
    fn departures_match_their_arrivals() {
        let cap = Capacity::Unlimited;
        let mut log = LinkLog::new(Vec::new(), &header(0), &cap, None).unwrap();
        let a = vec![1u8; 100];
        let b = vec![2u8; 100];
        log.arrival(Instant::from_millis(1), &a);
        log.arrival(Instant::from_millis(2), &b);
        log.arrival(Instant::from_millis(3), &a);
        // Overtaking and repeats: b first, then the two a's in order.
        log.departure(Instant::from_millis(10), &b);
        log.departure(Instant::from_millis(11), &a);
        log.departure(Instant::from_millis(12), &a);
        log.departure(Instant::from_millis(13), &a);
        let totals = log.totals();
        let t = text(log, Instant::from_millis(13));
        let deps: Vec<&str> = t.lines().filter(|l| l.contains(" - ")).collect();
        assert_eq!(
            deps,
            ["10 - 100 8", "11 - 100 10", "12 - 100 9", "13 - 100 0"]
        );
        assert_eq!(totals.unmatched, 1);
        assert_eq!((totals.arrivals, totals.departures), (3, 4));
        assert!(
            !t.contains(" # "),
            "an unlimited link has no capacity lines"
        );
    }

    #[test]
    fn stale_arrivals_are_forgotten() {
        let mut log = LinkLog::new(Vec::new(), &header(0), &Capacity::Unlimited, None).unwrap();
        for k in 0..100u32 {
            log.arrival(Instant::from_millis(u64::from(k)), &k.to_le_bytes());
        }
        log.tick(Instant::from_secs(10), (0, 0));
        assert_eq!(log.pending.len(), 100);
        log.tick(Instant::from_secs(31), (0, 0));
        assert!(log.pending.is_empty());
    }
}
