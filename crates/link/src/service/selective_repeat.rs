//! Selective Repeat (004 §III.A): full recovery, multiple NACKs per loss, in-order delivery.
//!
//! Contract. Each end sends its SDUs as numbered data frames and never abandons one: a frame is
//! resent when the peer NACKs it, or when it is unacknowledged and `timeout_ms` has passed both
//! since its last copy and since the receiver last showed progress (an acknowledgement that
//! advances, or a NACK). The second condition matters because acknowledgements are cumulative:
//! while the receiver is still repairing an earlier gap with repeated NACKs, the frames it
//! already holds behind that gap must not be sent again. The timeout is what catches a loss the
//! receiver cannot see, at the tail of a burst before the link goes idle (004: then "Selective
//! Repeat does not receive any ACKs, resorting to timeouts"). The receiver buffers frames that
//! arrive out of order, releases SDUs strictly in sequence, exactly once, and sends a `Nack`
//! listing every missing frame as soon as a gap appears, then again every `nack_interval_ms`
//! while the frame is still missing (004 uses "a Selective Repeat variant allowing multiple
//! NACKs per loss \[6\]"). Each data frame carries its sequence number and a piggybacked
//! cumulative acknowledgement (2 bytes in 8-bit mode, 004 §III.A); without reverse data an `Ack`
//! goes out alone, after `ack_delay_ms` (0 = at once).
//!
//! Windows are clamped to `1..=modulus/2 - 1` of the header's sequence space, so every sequence
//! number on the wire decodes unambiguously (see [`crate::wire::seq`]). The link below is
//! assumed to keep frames in order (a point-to-point link does); it may lose, duplicate or
//! corrupt them. Frames that make no sense (unparseable, out of window, wrong kind, an
//! acknowledgement of a frame never sent) are counted in `malformed` and ignored.
//!
//! This file also holds the receive window (`RecvWindow`) that Karn's RLP, OOS RLP and
//! persistent retransmission share with Selective Repeat.

use std::collections::VecDeque;

use super::go_back_n::{clamp_window, delay_ms, put_control, put_data, timer_ms};
use super::queue::SendQueue;
use super::{Delivery, Sdu, Service, ServiceStats};
use crate::rto::RtoEstimator;
use crate::time::{Duration, Instant};
use crate::timer::Timers;
use crate::wire::{FragPos, Header, HeaderFormat, SeqSpace};

/// Selective Repeat tuning. Durations are in milliseconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelectiveRepeatConfig {
    /// Frames sent but not yet acknowledged, at most; clamped to `1..=modulus/2 - 1`.
    pub window: u64,
    /// Retransmission timeout of a frame, from its last copy and from the receiver's last sign
    /// of progress (ms); should exceed `nack_interval_ms` plus the round-trip time.
    pub timeout_ms: f64,
    /// Interval between repeated NACKs of a frame still missing (ms); should exceed the
    /// round-trip time so a NACK is not repeated before its retransmission could arrive.
    pub nack_interval_ms: f64,
    /// Delay of a standalone acknowledgement, to give reverse data a chance to carry it (ms).
    pub ack_delay_ms: f64,
    /// SDUs held waiting for the window before new ones are refused.
    pub queue_limit: usize,
}

impl Default for SelectiveRepeatConfig {
    /// 004 gives no timer values; these suit its slowest link (HSCSD: 100 ms one-way delay,
    /// about 9 ms per 100-byte frame, so a round trip of about 220 ms) and work on WLAN too.
    fn default() -> Self {
        SelectiveRepeatConfig {
            window: 32,
            timeout_ms: 500.0,
            nack_interval_ms: 300.0,
            ack_delay_ms: 0.0,
            queue_limit: 1000,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The receive window, shared with Karn's RLP, OOS RLP and persistent retransmission.

/// One sequence number inside the receive window.
#[derive(Debug)]
enum RxSlot {
    /// Not received; detected missing at `since`, `nacks` NACKs sent (the last at
    /// `last_nack`), the next due at `nack_at`; after its last NACK, `nack_at` is when the
    /// frame is given up.
    Missing {
        since: Instant,
        nack_at: Instant,
        nacks: u32,
        last_nack: Instant,
    },
    /// Given up (counted as abandoned), waiting only to be passed over.
    Lost,
    /// Received, waiting for the frames before it (in-order delivery).
    Held { fp: FragPos, data: Vec<u8> },
    /// Received and already delivered (out-of-order delivery).
    Done,
}

/// The measured NACK repeat interval is at most this many times the configured one.
const MAX_NACK_STRETCH: u64 = 64;

/// The receiving half shared by Selective Repeat and the RLP family: a window of sequence
/// numbers `[base, next)` with, for each, the frame held or the fact that it is missing.
///
/// Invariants: the slot at `base` is always `Missing` (anything else is released at once), the
/// window never holds more than `window` slots, and `nack_ready` is true exactly when some
/// missing frame's NACK is due (`nack_at <= now` at the last update).
///
/// With a `nack_limit` of n, the n-th NACK of a frame is its last: a sender that retransmits at
/// most n - 1 times abandons the frame when it gets that NACK (Karn's RLP) if it has spent its
/// retransmissions, and otherwise sends one (its earlier NACKs were lost). So the receiver
/// gives the frame up a *grace* of one NACK interval after the last NACK, the time a repair
/// answering it needs, instead of as it sends it: a repair answering an earlier NACK that came
/// slowly (waiting for its class's turn beside other classes) or one answering the last NACK
/// still arrives, and a frame is lost only when the sender's k + 1 copies are (003 §3.2.3's
/// p^(k+1)). Each gap is still settled after n NACK intervals. The grace holds from the first
/// loss on, before any repair has been measured: a class whose every repair is slower than its
/// configured interval (beside a backlogged class at a small share) never yields a sample,
/// since each of its frames is NACKed twice, and with no grace until a sample it lost the
/// frames whose repairs were already on their way (an 80 kbit/s voice class on OOS RLP at
/// 0.2 Mbit/s of a WLAN beside TCP: 0.19% lost against 0.0015% alone).
///
/// The NACK repeat interval adapts to the repair time (ours; 004 fixes it per link). A repair
/// takes the NACK's trip, the sender's wait for its turn in the link's scheduler, and the
/// retransmission's trip; beside other traffic classes the wait grows (up to a round of the
/// other classes under SCFQ), and a fixed interval tuned for the link alone then repeats the
/// NACK, and gives the frame up, before the repair can arrive (004 §V.D's promise: the same
/// residual loss as alone). Each repair answering a frame's first NACK is a sample (Karn's
/// rule: none from a frame NACKed twice, nor from a copy taken in the grace). Repairs slower
/// than the interval are caught by the grace rather than learned (timing them from the first
/// NACK made the interval grow with them): a window-limited sender
/// (speech on OOS RLP over two HSCSD links at 10% loss) whose receiver stretched its interval
/// to cover them held its window longer, queued more, and so made its repairs slower still,
/// until it lost half its packets. The interval is the larger of RFC 6298's
/// `SRTT + 4 RTTVAR` ([`crate::rto::RtoEstimator`]) and 9/8 of the longest recent sample
/// (repair times beside other classes are bimodal, and `SRTT + 4 RTTVAR` of a mostly fast
/// series falls below the slow mode), never below the configured one.
///
/// Duplicates are told apart: a copy of a frame the receiver had already received is a
/// *spurious* retransmission (or a copy the channel made); a copy of a frame it had given up is
/// a *late* repair. Given-up numbers are remembered for one window below `base`.
#[derive(Debug)]
pub(crate) struct RecvWindow {
    /// Lowest sequence number not yet delivered nor given up (the cumulative acknowledgement).
    pub(crate) base: u64,
    slots: VecDeque<RxSlot>,
    window: u64,
    nack_rtt: RtoEstimator,
    /// The longest repair time seen lately (decays by 1/1024 per sample).
    repair_max: Duration,
    /// Sequence numbers below `base` that were given up, ascending, within a window of `base`.
    given_up: VecDeque<u64>,
    nack_limit: Option<u32>,
    in_order: bool,
    missing: usize,
    nack_at_min: Option<Instant>,
    nack_ready: bool,
    out: VecDeque<Delivery>,
}

impl RecvWindow {
    /// An empty window of `window` frames; `in_order` false delivers each frame on arrival;
    /// `nack_limit` NACKs per frame at most (`None`: NACK until it arrives).
    pub(crate) fn new(
        window: u64,
        nack_interval: Duration,
        nack_limit: Option<u32>,
        in_order: bool,
    ) -> Self {
        RecvWindow {
            base: 0,
            slots: VecDeque::new(),
            window,
            nack_rtt: RtoEstimator::new(
                Duration::ZERO,
                nack_interval,
                nack_interval.saturating_mul(MAX_NACK_STRETCH),
                nack_interval,
            ),
            given_up: VecDeque::new(),
            repair_max: Duration::ZERO,
            nack_limit,
            in_order,
            missing: 0,
            nack_at_min: None,
            nack_ready: false,
            out: VecDeque::new(),
        }
    }

    /// The current NACK repeat interval: the larger of `SRTT + 4 RTTVAR` of the repair times
    /// and 9/8 of the longest recent one, never below the configured interval.
    pub(crate) fn nack_interval(&self) -> Duration {
        let m = self.repair_max.as_nanos();
        self.nack_rtt
            .rto()
            .max(Duration::from_nanos(m.saturating_add(m / 8)))
    }

    /// One repair time: into RFC 6298's estimator and the decaying maximum.
    fn repair_sample(&mut self, r: Duration) {
        self.nack_rtt.sample(r);
        let m = self.repair_max.as_nanos();
        self.repair_max = r.max(Duration::from_nanos(m - m / 1024));
    }

    /// Counts a data frame `seq` the receiver did not take (below `base`, or refused by
    /// [`Self::accept`]): a duplicate, and either spurious (it had arrived) or late (it had
    /// been given up).
    pub(crate) fn duplicate(&self, seq: u64, st: &mut ServiceStats) {
        st.duplicates += 1;
        let given_up = if seq >= self.base {
            matches!(
                self.slots.get((seq - self.base) as usize),
                Some(RxSlot::Lost)
            )
        } else {
            self.given_up.binary_search(&seq).is_ok()
        };
        if given_up {
            st.late += 1;
        } else {
            st.spurious += 1;
        }
    }

    /// Whether a slot with `nacks` NACKs has had its last under `limit` (it only waits out
    /// the grace).
    fn finished(limit: Option<u32>, nacks: u32) -> bool {
        limit.is_some_and(|n| nacks >= n)
    }

    /// One past the highest sequence number seen (or declared sent by a keepalive).
    pub(crate) fn next(&self) -> u64 {
        self.base + self.slots.len() as u64
    }

    /// Marks every sequence number in `[next, upto)` missing as of `now`; their first NACK is
    /// due at once. The caller keeps `upto - base <= window`.
    pub(crate) fn extend_to(&mut self, now: Instant, upto: u64) {
        if upto <= self.next() {
            return;
        }
        while self.next() < upto {
            self.slots.push_back(RxSlot::Missing {
                since: now,
                nack_at: now,
                nacks: 0,
                last_nack: now,
            });
            self.missing += 1;
        }
        self.nack_at_min = Some(self.nack_at_min.map_or(now, |t| t.min(now)));
        self.nack_ready = true;
    }

    /// Takes data frame `seq`, which the caller has checked lies in `[base, base + window)`.
    /// Returns false if the frame was already received or given up.
    pub(crate) fn accept(
        &mut self,
        now: Instant,
        seq: u64,
        fp: FragPos,
        payload: &[u8],
        st: &mut ServiceStats,
    ) -> bool {
        debug_assert!(seq >= self.base && seq - self.base < self.window);
        let hole = seq < self.next();
        if hole {
            let RxSlot::Missing {
                nacks, last_nack, ..
            } = self.slots[(seq - self.base) as usize]
            else {
                return false;
            };
            if nacks == 1 {
                self.repair_sample(now.saturating_since(last_nack));
            }
            self.missing -= 1;
        } else {
            self.extend_to(now, seq);
            self.slots.push_back(RxSlot::Done);
        }
        let data = payload.to_vec();
        self.slots[(seq - self.base) as usize] = if self.in_order {
            RxSlot::Held { fp, data }
        } else {
            st.delivered += 1;
            self.out.push_back(Delivery { seq, fp, data });
            RxSlot::Done
        };
        if hole {
            self.rescan(now); // a hole was filled: the NACK schedule may have changed
        }
        self.advance(st);
        true
    }

    /// Removes the slot at `base`: delivers a held frame, counts a missing one as abandoned.
    fn release_front(&mut self, st: &mut ServiceStats) {
        while self
            .given_up
            .front()
            .is_some_and(|&s| s + self.window < self.base)
        {
            self.given_up.pop_front();
        }
        match self.slots.pop_front() {
            Some(RxSlot::Missing { .. }) => {
                self.missing -= 1;
                st.abandoned += 1;
                self.given_up.push_back(self.base);
            }
            Some(RxSlot::Lost) => self.given_up.push_back(self.base),
            Some(RxSlot::Held { fp, data }) => {
                st.delivered += 1;
                let seq = self.base;
                self.out.push_back(Delivery { seq, fp, data });
            }
            Some(RxSlot::Done) | None => {}
        }
        self.base += 1;
    }

    /// Releases the received (or given up) frames at the front of the window.
    fn advance(&mut self, st: &mut ServiceStats) {
        while self
            .slots
            .front()
            .is_some_and(|s| !matches!(s, RxSlot::Missing { .. }))
        {
            self.release_front(st);
        }
        if self.missing == 0 {
            self.nack_at_min = None;
            self.nack_ready = false;
        }
    }

    /// Stops waiting for every frame below `seq` (counted as abandoned), releasing what follows.
    pub(crate) fn give_up_below(&mut self, now: Instant, seq: u64, st: &mut ServiceStats) {
        if seq <= self.base {
            return;
        }
        self.extend_to(now, seq);
        while self.base < seq {
            self.release_front(st);
        }
        self.advance(st);
        self.rescan(now);
    }

    /// When the frame at `base` will have been missing for `wait`.
    pub(crate) fn gap_deadline(&self, wait: Duration) -> Option<Instant> {
        match self.slots.front() {
            Some(RxSlot::Missing { since, .. }) => Some(*since + wait),
            _ => None,
        }
    }

    /// Gives up every front gap that has been missing for `wait` or longer at `now`.
    pub(crate) fn give_up_expired(&mut self, now: Instant, wait: Duration, st: &mut ServiceStats) {
        while self.gap_deadline(wait).is_some_and(|t| t <= now) {
            let b = self.base;
            self.give_up_below(now, b + 1, st);
        }
    }

    /// True when a NACK is due.
    pub(crate) fn nack_ready(&self) -> bool {
        self.nack_ready
    }

    /// The next instant a NACK falls due (none while one is already due).
    pub(crate) fn nack_timer(&self) -> Option<Instant> {
        if self.nack_ready {
            None
        } else {
            self.nack_at_min
        }
    }

    /// Timer hook: gives up the frames whose grace after their last NACK is over, and notes
    /// NACKs that fell due at `now`.
    pub(crate) fn on_timeout(&mut self, now: Instant, st: &mut ServiceStats) {
        if self.nack_at_min.is_some_and(|t| t <= now) {
            let limit = self.nack_limit;
            for slot in &mut self.slots {
                if let RxSlot::Missing { nack_at, nacks, .. } = slot {
                    if Self::finished(limit, *nacks) && *nack_at <= now {
                        *slot = RxSlot::Lost;
                        self.missing -= 1;
                        st.abandoned += 1;
                    }
                }
            }
            self.advance(st);
            self.rescan(now);
        }
    }

    /// Recomputes the next timer (a NACK due or a grace over) and whether a NACK is due.
    fn rescan(&mut self, now: Instant) {
        let limit = self.nack_limit;
        let mut next = None::<Instant>;
        let mut ready = false;
        for s in &self.slots {
            if let RxSlot::Missing { nack_at, nacks, .. } = s {
                next = Some(next.map_or(*nack_at, |t| t.min(*nack_at)));
                ready |= *nack_at <= now && !Self::finished(limit, *nacks);
            }
        }
        self.nack_at_min = next;
        self.nack_ready = ready;
    }

    /// The next NACK to send: the cumulative acknowledgement, the first missing frame whose
    /// NACK is due, and a bitmap of the due missing frames among the 32 after it (the `Nack`
    /// header's `more`, bit `i` for `first + 1 + i`). Each one listed is due again
    /// `nack_interval` later (multiple NACKs per loss, 004 §III.A), or, after its last NACK,
    /// given up once the grace is over; the
    /// acknowledgement is the one from before that give-up, so the NACK still reads as one to
    /// the sender.
    pub(crate) fn take_nack(
        &mut self,
        now: Instant,
        st: &mut ServiceStats,
    ) -> Option<(u64, u64, u32)> {
        if !self.nack_ready {
            return None;
        }
        let ack = self.base;
        let again = now + self.nack_interval();
        let grace = self.nack_interval();
        let limit = self.nack_limit;
        let finished = move |nacks: u32| Self::finished(limit, nacks);
        let due = |s: &RxSlot| {
            matches!(s, RxSlot::Missing { nack_at, nacks, .. }
                if *nack_at <= now && !finished(*nacks))
        };
        let first = self.slots.iter().position(due);
        let mut more = 0u32;
        if let Some(i) = first {
            let end = self.slots.len().min(i + 33);
            for j in i..end {
                let slot = &mut self.slots[j];
                let RxSlot::Missing {
                    nack_at,
                    nacks,
                    last_nack,
                    ..
                } = slot
                else {
                    continue;
                };
                if *nack_at > now || finished(*nacks) {
                    continue;
                }
                if j > i {
                    more |= 1 << (j - i - 1);
                }
                *last_nack = now;
                *nacks += 1;
                *nack_at = if finished(*nacks) { now + grace } else { again };
                if finished(*nacks) && grace == Duration::ZERO {
                    *slot = RxSlot::Lost;
                    self.missing -= 1;
                    st.abandoned += 1;
                }
            }
        }
        self.advance(st);
        self.rescan(now);
        first.map(|i| (ack, ack + i as u64, more))
    }

    /// The next SDU for the layer above.
    pub(crate) fn pop_delivery(&mut self) -> Option<Delivery> {
        self.out.pop_front()
    }
}

// ---------------------------------------------------------------------------------------------

/// A frame sent and not yet acknowledged.
#[derive(Debug)]
struct TxSlot {
    sdu: Sdu,
    last_sent: Instant,
    /// In the retransmission queue already.
    queued: bool,
}

/// Timer: the delayed standalone acknowledgement.
const T_ACK: usize = 0;

/// One end of a Selective Repeat service.
#[derive(Debug)]
pub struct SelectiveRepeat {
    format: HeaderFormat,
    space: SeqSpace,
    window: u64,
    timeout: Duration,
    ack_delay: Duration,
    queue: SendQueue,
    /// Oldest unacknowledged sequence number; `slots[i]` holds `snd_una + i`.
    snd_una: u64,
    slots: VecDeque<TxSlot>,
    rtx: VecDeque<u64>,
    /// Retransmission deadlines in the order copies were sent: deadlines never decrease, so the
    /// front is the earliest. An entry is stale once its frame is acknowledged or sent again.
    rto: VecDeque<(Instant, u64)>,
    /// When the receiver last showed progress (an advancing ack or a NACK); no frame times out
    /// within `timeout` of it.
    last_progress: Instant,
    rx: RecvWindow,
    ack_pending: bool,
    timers: Timers<1>,
    stats: ServiceStats,
}

impl SelectiveRepeat {
    /// A Selective Repeat end. The format's `piggyback_ack` is forced on (004: sequence plus
    /// acknowledgement in every data frame).
    pub fn new(config: SelectiveRepeatConfig, format: HeaderFormat) -> Self {
        let format = HeaderFormat {
            piggyback_ack: true,
            ..format
        };
        let space = format.seq_space();
        let window = clamp_window(config.window, space);
        SelectiveRepeat {
            format,
            space,
            window,
            timeout: timer_ms(config.timeout_ms),
            ack_delay: delay_ms(config.ack_delay_ms),
            queue: SendQueue::new(config.queue_limit),
            snd_una: 0,
            slots: VecDeque::new(),
            rtx: VecDeque::new(),
            rto: VecDeque::new(),
            last_progress: Instant::ZERO,
            rx: RecvWindow::new(window, timer_ms(config.nack_interval_ms), None, true),
            ack_pending: false,
            timers: Timers::default(),
            stats: ServiceStats::default(),
        }
    }

    /// The window in use after clamping.
    pub fn window(&self) -> u64 {
        self.window
    }

    fn snd_nxt(&self) -> u64 {
        self.snd_una + self.slots.len() as u64
    }

    /// Applies a cumulative acknowledgement; false if it acknowledges what was never sent.
    fn take_ack(&mut self, now: Instant, wire: u32) -> bool {
        let a = self.space.decode(wire, self.snd_una);
        if a < self.snd_una || a > self.snd_nxt() {
            return false;
        }
        if a > self.snd_una {
            self.last_progress = now;
            self.slots.drain(..(a - self.snd_una) as usize);
            self.snd_una = a;
            self.rtx.retain(|&s| s >= a);
            while self.rto.front().is_some_and(|&(_, s)| s < a) {
                self.rto.pop_front();
            }
        }
        true
    }

    /// Queues the NACKed frames for retransmission; false if one was never sent.
    fn take_nack(&mut self, now: Instant, first: u32, more: u32) -> bool {
        self.last_progress = now;
        let m0 = self.space.decode(first, self.snd_una);
        let mut ok = true;
        for j in 0..=32u64 {
            if j > 0 && more & (1 << (j - 1)) == 0 {
                continue;
            }
            let m = m0 + j;
            if m < self.snd_una || m >= self.snd_nxt() {
                ok = false;
                continue;
            }
            let slot = &mut self.slots[(m - self.snd_una) as usize];
            if !slot.queued {
                slot.queued = true;
                self.rtx.push_back(m);
            }
        }
        ok
    }

    fn schedule_ack(&mut self, now: Instant) {
        if self.ack_delay == Duration::ZERO {
            self.ack_pending = true;
        } else {
            self.timers.set_if_idle(T_ACK, now + self.ack_delay);
        }
    }

    fn ack_sent(&mut self) {
        self.ack_pending = false;
        self.timers.clear(T_ACK);
    }

    fn data_header(&self, seq: u64, fp: FragPos) -> Header {
        Header::Data {
            fp,
            seq: self.space.encode(seq),
            ack: Some(self.space.encode(self.rx.base)),
        }
    }
}

impl Service for SelectiveRepeat {
    fn queued_bytes(&self) -> usize {
        self.queue.bytes()
    }

    fn name(&self) -> &'static str {
        "selective_repeat"
    }

    fn handle_sdu(&mut self, _now: Instant, sdu: Sdu) -> Result<(), Sdu> {
        self.queue.offer(sdu, &mut self.stats)
    }

    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        self.stats.frames_received += 1;
        let Ok((h, off)) = self.format.parse(frame) else {
            self.stats.malformed += 1;
            return;
        };
        let ok = match h {
            Header::Data { fp, seq, ack } => {
                let ack_ok = ack.is_none_or(|a| self.take_ack(now, a));
                let s = self.space.decode(seq, self.rx.base);
                if !ack_ok || s >= self.rx.base + self.window || s + self.window < self.rx.base {
                    false
                } else {
                    if s < self.rx.base
                        || !self.rx.accept(now, s, fp, &frame[off..], &mut self.stats)
                    {
                        self.rx.duplicate(s, &mut self.stats);
                    }
                    self.schedule_ack(now);
                    true
                }
            }
            Header::Ack { ack } => self.take_ack(now, ack),
            Header::Nack { ack, first, more } => {
                self.take_ack(now, ack) && self.take_nack(now, first, more)
            }
            Header::Keepalive { .. } | Header::Parity { .. } | Header::Unknown { .. } => false,
        };
        if !ok {
            self.stats.malformed += 1;
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.timers.expired(T_ACK, now) {
            self.ack_pending = true;
        }
        self.rx.on_timeout(now, &mut self.stats);
        if self.last_progress + self.timeout > now {
            return;
        }
        while let Some(&(t, s)) = self.rto.front() {
            if t > now {
                break;
            }
            self.rto.pop_front();
            if s < self.snd_una || s >= self.snd_nxt() {
                continue;
            }
            let slot = &mut self.slots[(s - self.snd_una) as usize];
            // Only the deadline of the latest copy counts.
            if !slot.queued && slot.last_sent + self.timeout == t {
                slot.queued = true;
                self.rtx.push_back(s);
            }
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if let Some((ack, first, more)) = self.rx.take_nack(now, &mut self.stats) {
            let h = Header::Nack {
                ack: self.space.encode(ack),
                first: self.space.encode(first),
                more,
            };
            put_control(&self.format, &h, buf, &mut self.stats);
            self.ack_sent();
            return true;
        }
        while let Some(s) = self.rtx.pop_front() {
            if s < self.snd_una {
                continue;
            }
            let i = (s - self.snd_una) as usize;
            let h = self.data_header(s, self.slots[i].sdu.fp);
            let slot = &mut self.slots[i];
            slot.queued = false;
            slot.last_sent = now;
            self.rto.push_back((now + self.timeout, s));
            put_data(
                &self.format,
                &h,
                &slot.sdu.data,
                false,
                buf,
                &mut self.stats,
            );
            self.ack_sent();
            return true;
        }
        if (self.slots.len() as u64) < self.window {
            if let Some(sdu) = self.queue.pop_front() {
                let s = self.snd_nxt();
                let h = self.data_header(s, sdu.fp);
                put_data(&self.format, &h, &sdu.data, true, buf, &mut self.stats);
                self.slots.push_back(TxSlot {
                    sdu,
                    last_sent: now,
                    queued: false,
                });
                self.rto.push_back((now + self.timeout, s));
                self.ack_sent();
                return true;
            }
        }
        if self.ack_pending {
            let h = Header::Ack {
                ack: self.space.encode(self.rx.base),
            };
            put_control(&self.format, &h, buf, &mut self.stats);
            self.ack_sent();
            return true;
        }
        false
    }

    fn poll_deliver(&mut self) -> Option<Delivery> {
        self.rx.pop_delivery()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        [
            self.timers.next(),
            self.rx.nack_timer(),
            self.rto
                .front()
                .map(|&(t, _)| t.max(self.last_progress + self.timeout)),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn has_transmit(&self, _now: Instant) -> bool {
        self.rx.nack_ready()
            || !self.rtx.is_empty()
            || ((self.slots.len() as u64) < self.window && !self.queue.is_empty())
            || self.ack_pending
    }

    fn stats(&self) -> &ServiceStats {
        &self.stats
    }

    fn data_overhead(&self) -> usize {
        self.format.data_header_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::SeqWidth;

    fn pair(c: SelectiveRepeatConfig) -> (SelectiveRepeat, SelectiveRepeat) {
        let f = HeaderFormat::new(SeqWidth::W8);
        (
            SelectiveRepeat::new(c.clone(), f),
            SelectiveRepeat::new(c, f),
        )
    }

    fn frames(s: &mut SelectiveRepeat, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while s.poll_transmit(now, &mut buf) {
            out.push(std::mem::take(&mut buf));
        }
        out
    }

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// A receive window of 32 frames, 15 ms NACK interval, NACK limit `limit`, in order.
    fn rx(limit: Option<u32>) -> RecvWindow {
        RecvWindow::new(32, ms(15), limit, true)
    }

    /// Loses frame `seq` (frame `seq + 1` arrives at `t`), sends its first NACK at `t`, and
    /// repairs it `repair` later. Returns the time of the repair.
    fn repair(w: &mut RecvWindow, seq: u64, t: Instant, repair: Duration) -> Instant {
        let mut st = ServiceStats::default();
        assert!(w.accept(t, seq + 1, FragPos::Whole, &[1], &mut st));
        assert_eq!(w.take_nack(t, &mut st).map(|n| n.1), Some(seq));
        let at = t + repair;
        assert!(w.accept(at, seq, FragPos::Whole, &[0], &mut st));
        at
    }

    #[test]
    fn nack_interval_stays_at_the_configured_floor_for_fast_repairs() {
        let mut w = rx(None);
        let mut t = Instant::ZERO;
        for k in 0..20 {
            t = repair(&mut w, 2 * k, t, ms(5)) + ms(1);
        }
        assert_eq!(w.nack_interval(), ms(15));
    }

    #[test]
    fn nack_interval_grows_to_cover_the_slow_repairs_of_a_bimodal_series() {
        // Mostly 8 ms repairs, now and then 20 ms (a frame waiting a round of the scheduler):
        // the interval must exceed the slow mode, or the next slow repair comes too late.
        let mut w = rx(None);
        let mut t = Instant::ZERO;
        for k in 0..200 {
            let r = if k % 25 == 0 { ms(20) } else { ms(8) };
            t = repair(&mut w, 2 * k, t, r) + ms(1);
        }
        assert!(w.nack_interval() > ms(20), "{:?}", w.nack_interval());
        // The maximum decays slowly: bounded by 9/8 of the slowest repair.
        assert!(w.nack_interval() <= Duration::from_micros(22_500));
    }

    #[test]
    fn duplicates_are_spurious_or_late() {
        let mut w = rx(Some(2));
        let mut st = ServiceStats::default();
        let t0 = Instant::ZERO;
        assert!(w.accept(t0, 0, FragPos::Whole, &[0], &mut st));
        // A copy of a frame that arrived (now below the window's base): spurious.
        w.duplicate(0, &mut st);
        assert_eq!((st.spurious, st.late), (1, 0));
        // Frame 1 lost, NACKed twice (the limit); no repair measured yet, and still a grace of
        // one interval after the second NACK before it is given up.
        assert!(w.accept(t0, 2, FragPos::Whole, &[2], &mut st));
        assert!(w.take_nack(t0, &mut st).is_some());
        let t1 = t0 + w.nack_interval();
        w.on_timeout(t1, &mut st);
        assert!(w.take_nack(t1, &mut st).is_some());
        assert_eq!(st.abandoned, 0);
        w.on_timeout(t1 + w.nack_interval(), &mut st);
        assert_eq!(st.abandoned, 1);
        // Its repair then comes late.
        w.duplicate(1, &mut st);
        assert_eq!((st.spurious, st.late, st.duplicates), (1, 1, 2));
    }

    #[test]
    fn a_repair_still_on_its_way_after_the_last_nack_is_awaited() {
        let mut w = rx(Some(2));
        let mut t = Instant::ZERO;
        for k in 0..10 {
            t = repair(&mut w, 2 * k, t, ms(8)) + ms(1);
        }
        assert_eq!(w.nack_interval(), ms(15));
        let mut st = ServiceStats::default();
        // Frame 20 lost; first NACK at t, the last one 15 ms later.
        assert!(w.accept(t, 21, FragPos::Whole, &[1], &mut st));
        assert!(w.take_nack(t, &mut st).is_some());
        let last = t + ms(15);
        w.on_timeout(last, &mut st);
        assert!(w.take_nack(last, &mut st).is_some());
        // Not given up yet: a repair answering either NACK may still come (the sender answers
        // the last one when it never got the first); the timer is set one interval on.
        assert_eq!(st.abandoned, 0);
        assert_eq!(w.nack_timer(), Some(last + ms(15)));
        assert!(!w.nack_ready(), "no third NACK");
        // It comes 9 ms after the last NACK: accepted, not late, and not learned from (the
        // interval stays where the ordinary repairs put it).
        assert!(w.accept(last + ms(9), 20, FragPos::Whole, &[0], &mut st));
        assert_eq!(st.late, 0);
        assert_eq!(w.nack_interval(), ms(15));
        // Another loss whose repair never comes is given up when its grace is over.
        let t = last + ms(10);
        assert!(w.accept(t, 23, FragPos::Whole, &[3], &mut st));
        assert!(w.take_nack(t, &mut st).is_some());
        let last = t + w.nack_interval();
        w.on_timeout(last, &mut st);
        assert!(w.take_nack(last, &mut st).is_some());
        w.on_timeout(last + ms(14), &mut st);
        assert_eq!(st.abandoned, 0);
        w.on_timeout(last + ms(15), &mut st);
        assert_eq!(st.abandoned, 1);
        assert_eq!(w.base, 24);
    }

    #[test]
    fn window_is_clamped_below_half_the_space() {
        let c = SelectiveRepeatConfig {
            window: 1000,
            ..Default::default()
        };
        // 8-bit header, 7-bit sequence: 128 numbers, half is 64.
        assert_eq!(pair(c).0.window(), 63);
    }

    #[test]
    fn loss_is_nacked_and_renacked_until_repaired() {
        let c = SelectiveRepeatConfig::default();
        let (mut a, mut b) = pair(c.clone());
        let t0 = Instant::ZERO;
        for i in 0..3u8 {
            a.handle_sdu(t0, Sdu::whole(vec![i])).unwrap();
        }
        let f = frames(&mut a, t0);
        assert_eq!(f.len(), 3);
        b.handle_frame(t0, &f[0]);
        b.handle_frame(t0, &f[2]); // frame 1 lost
        assert_eq!(b.poll_deliver().unwrap().data, vec![0]);
        assert!(b.poll_deliver().is_none(), "frame 2 waits for frame 1");
        let nack = frames(&mut b, t0);
        assert_eq!(nack.len(), 1);
        let (h, _) = b.format.parse(&nack[0]).unwrap();
        assert_eq!(
            h,
            Header::Nack {
                ack: 1,
                first: 1,
                more: 0
            }
        );
        // The retransmission is lost too: the receiver NACKs again one interval later.
        let t1 = t0 + timer_ms(c.nack_interval_ms);
        assert_eq!(b.poll_timeout(), Some(t1));
        b.handle_timeout(t1);
        let again = frames(&mut b, t1);
        assert_eq!(again.len(), 1);
        assert_eq!(b.format.parse(&again[0]).unwrap().0, h);
        a.handle_frame(t1, &again[0]);
        let rtx = frames(&mut a, t1);
        assert_eq!(rtx.len(), 1);
        assert_eq!(a.stats().retransmissions, 1);
        b.handle_frame(t1, &rtx[0]);
        let got: Vec<u8> = std::iter::from_fn(|| b.poll_deliver())
            .map(|d| d.data[0])
            .collect();
        assert_eq!(got, vec![1, 2]);
        // The ack frees the sender's window.
        for f in frames(&mut b, t1) {
            a.handle_frame(t1, &f);
        }
        assert_eq!(a.snd_una, 3);
        assert_eq!(a.stats().malformed + b.stats().malformed, 0);
    }

    #[test]
    fn timeout_resends_only_the_unacknowledged_frame() {
        let c = SelectiveRepeatConfig::default();
        let (mut a, mut b) = pair(c.clone());
        let t0 = Instant::ZERO;
        a.handle_sdu(t0, Sdu::whole(vec![9])).unwrap();
        let _lost = frames(&mut a, t0);
        let rto = t0 + timer_ms(c.timeout_ms);
        assert_eq!(a.poll_timeout(), Some(rto));
        a.handle_timeout(rto);
        let f = frames(&mut a, rto);
        assert_eq!(f.len(), 1);
        b.handle_frame(rto, &f[0]);
        assert_eq!(b.poll_deliver().unwrap().data, vec![9]);
        assert_eq!(a.stats().retransmissions, 1);
        // Overhead: the first copy's 2-byte header, then the whole 3-byte retransmission.
        assert_eq!(a.stats().overhead_bytes, 2 + 3);
    }

    #[test]
    fn reverse_data_carries_the_ack() {
        let (mut a, mut b) = pair(SelectiveRepeatConfig::default());
        let t0 = Instant::ZERO;
        a.handle_sdu(t0, Sdu::whole(vec![1])).unwrap();
        b.handle_sdu(t0, Sdu::whole(vec![2])).unwrap();
        let fa = frames(&mut a, t0);
        b.handle_frame(t0, &fa[0]);
        let fb = frames(&mut b, t0);
        assert_eq!(fb.len(), 1, "one data frame with the ack piggybacked");
        a.handle_frame(t0, &fb[0]);
        assert!(a.slots.is_empty());
    }

    #[test]
    fn nonsense_is_counted_not_fatal() {
        let (mut a, _) = pair(SelectiveRepeatConfig::default());
        let t0 = Instant::ZERO;
        a.handle_frame(t0, &[]);
        a.handle_frame(t0, &[0x90, 5]); // ack of a frame never sent
        a.handle_frame(t0, &[0xB0, 0, 0]); // keepalive: not part of this scheme
        a.handle_frame(t0, &[100, 0, 1]); // data far outside the window
        assert_eq!(a.stats().malformed, 4);
        assert!(a.poll_deliver().is_none());
    }

    #[test]
    fn full_queue_refuses() {
        let c = SelectiveRepeatConfig {
            queue_limit: 2,
            ..Default::default()
        };
        let (mut a, _) = pair(c);
        for _ in 0..2 {
            a.handle_sdu(Instant::ZERO, Sdu::whole(vec![0])).unwrap();
        }
        assert!(a.handle_sdu(Instant::ZERO, Sdu::whole(vec![0])).is_err());
        assert_eq!(a.stats().sdus_refused, 1);
    }
}
