//! Karn's RLP (004 §III.A, ref. \[10\]): NACK-driven retransmission with keepalives and a retry
//! limit; also the engine behind OOS RLP ([`super::oos_rlp`]) and persistent retransmission
//! ([`super::persistent`]).
//!
//! Contract. A data frame carries only its sequence number (1 byte in 8-bit mode, 004 §III.A).
//! The receiver NACKs every gap in the sequence as soon as it sees one and again every
//! `nack_interval_ms` while the frame is still missing. The sender resends a NACKed frame at
//! most `max_retransmissions` (k) times (004: "by default 3"); a NACK after the last retry makes
//! it *abandon* the frame and send a `Keepalive` whose `base` (oldest frame it still holds)
//! tells the receiver to stop waiting. Both ends share the configuration, so the receiver also
//! knows k: the (k+1)-th NACK of a frame is its last, and the receiver gives the frame up one
//! NACK interval after it, the time the sender's answer to it needs (see `RecvWindow`). Without
//! this a receiver would learn of abandoned frames one at a time (`base` can only pass an
//! abandoned frame once every frame before it is settled), and at high loss its in-order
//! backlog would grow without bound. With it every gap is settled after k + 1 NACK intervals;
//! with `nack_interval_ms` above the round-trip time a frame is lost exactly when all k + 1
//! copies are (residual loss p^(k+1), 003 §3.2.3 Fig. 5). When the sender has nothing new to send but still holds
//! frames, it sends a `Keepalive` every `keepalive_interval_ms`; its `next` field lets the
//! receiver detect a loss just before the idle period, which no later data frame would reveal
//! (004 §III.C: Karn's RLP beats Selective Repeat on short WWW transfers because of this).
//! The receiver also gives up on a gap by itself once it has waited `gap_wait_ms`, so it never
//! stalls even if every keepalive is lost. Delivery is in order (Karn's RLP) or on arrival (OOS
//! RLP), in both cases at most once; frames arriving after their gap was given up are dropped
//! (counted as `duplicates`).
//!
//! How the sender frees its buffer (not spelled out in 004): Karn's RLP keeps no positive
//! acknowledgements on data frames, so the receiver answers each keepalive with an `Ack` (or a
//! `Nack`, which carries the same cumulative acknowledgement) and volunteers an `Ack` each time
//! its cumulative acknowledgement has advanced by half a window. The sender releases frames
//! below that acknowledgement and abandoned frames at the front; it never drops a frame merely
//! because the window is full: it waits, and keepalives poll the receiver while it waits. With a
//! window larger than the bandwidth-delay product the sender therefore never stalls on a
//! loss-free link, and a loss holds the window at most until the frame is repaired, abandoned,
//! or given up by the receiver (004: "delay over the link is bounded and the sender never
//! stalls, given a sufficient window").
//!
//! The window is clamped to `1..=modulus/2 - 1`; the receiver decodes data numbers against the
//! highest number it has seen and infers from a frame `s` that everything up to `s - window`
//! has left the sender's buffer. The link below is assumed to keep frames in order. Frames that
//! make no sense are counted in `malformed` and ignored.

use std::collections::VecDeque;

use super::go_back_n::{clamp_window, put_control, put_data, timer_ms};
use super::queue::SendQueue;
use super::selective_repeat::RecvWindow;
use super::{Delivery, Sdu, Service, ServiceStats};
use crate::time::{Duration, Instant};
use crate::timer::Timers;
use crate::wire::{FragPos, Header, HeaderFormat, SeqSpace};

/// Karn's RLP (and OOS RLP) tuning. Durations are in milliseconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KarnRlpConfig {
    /// Frames held for retransmission, at most; clamped to `1..=modulus/2 - 1`.
    pub window: u64,
    /// Retransmissions of a frame before the sender abandons it (004: 3 by default; 004 §III.D
    /// uses 1 for continuous media).
    pub max_retransmissions: u32,
    /// Interval between repeated NACKs of a frame still missing (ms); should exceed the
    /// round-trip time so a NACK is not repeated before its retransmission could arrive.
    pub nack_interval_ms: f64,
    /// Interval between keepalives while the sender holds frames but sends no data (ms).
    pub keepalive_interval_ms: f64,
    /// How long the receiver waits for a missing frame before it gives up by itself (ms);
    /// should exceed `(max_retransmissions + 1) * nack_interval_ms`.
    pub gap_wait_ms: f64,
    /// SDUs held waiting for the window before new ones are refused.
    pub queue_limit: usize,
}

impl Default for KarnRlpConfig {
    /// 3 retransmissions as in 004 §III.A; timers suit 004's slowest link (HSCSD, about
    /// 220 ms round trip) and work on WLAN too.
    fn default() -> Self {
        KarnRlpConfig {
            window: 32,
            max_retransmissions: 3,
            nack_interval_ms: 300.0,
            keepalive_interval_ms: 300.0,
            gap_wait_ms: 2000.0,
            queue_limit: 1000,
        }
    }
}

/// The engine's parameters, in the form each scheme's config is turned into.
#[derive(Clone, Debug)]
pub(crate) struct RlpParams {
    /// Scheme name reported by [`Service::name`].
    pub(crate) name: &'static str,
    pub(crate) window: u64,
    /// `None`: retransmit until success (persistent).
    pub(crate) max_retransmissions: Option<u32>,
    pub(crate) nack_interval: Duration,
    pub(crate) keepalive_interval: Duration,
    /// `None`: the receiver waits for a missing frame forever (persistent).
    pub(crate) gap_wait: Option<Duration>,
    pub(crate) queue_limit: usize,
    /// Deliver in sequence (true) or each frame on arrival (OOS RLP).
    pub(crate) in_order: bool,
    /// Poll with the oldest held data frame instead of an empty keepalive once that frame has
    /// been retransmitted, and answer with an `Ack` both a duplicate data frame and a repair
    /// that advances the in-order point (persistent retransmission, see `super::persistent`).
    pub(crate) probe_with_data: bool,
}

impl KarnRlpConfig {
    pub(crate) fn params(&self, name: &'static str, in_order: bool) -> RlpParams {
        RlpParams {
            name,
            window: self.window,
            max_retransmissions: Some(self.max_retransmissions),
            nack_interval: timer_ms(self.nack_interval_ms),
            keepalive_interval: timer_ms(self.keepalive_interval_ms),
            gap_wait: Some(timer_ms(self.gap_wait_ms)),
            queue_limit: self.queue_limit,
            in_order,
            probe_with_data: false,
        }
    }
}

/// A frame held for retransmission.
#[derive(Debug)]
struct Held {
    sdu: Sdu,
    /// Retransmissions sent so far.
    rtx: u32,
    /// In the retransmission queue already.
    queued: bool,
}

/// Timers of an RLP end.
#[repr(usize)]
enum T {
    /// Keepalive while the sender holds frames and sends no data.
    Keepalive,
    /// The receiver's wait for the gap at the front of its window.
    Gap,
}

/// One end of Karn's RLP, OOS RLP or persistent retransmission (see the module docs).
#[derive(Debug)]
pub struct Rlp {
    p: RlpParams,
    format: HeaderFormat,
    space: SeqSpace,
    queue: SendQueue,
    /// Oldest frame still held; `held[i]` is `snd_base + i`, `None` once abandoned.
    snd_base: u64,
    held: VecDeque<Option<Held>>,
    rtx: VecDeque<u64>,
    keepalive_pending: bool,
    rx: RecvWindow,
    ack_pending: bool,
    /// The cumulative acknowledgement last sent (in an `Ack` or a `Nack`).
    last_ack: u64,
    timers: Timers<2>,
    stats: ServiceStats,
}

impl Rlp {
    /// A Karn's RLP end: in-order delivery, retry limit, receiver gap wait.
    pub fn karn(config: &KarnRlpConfig, format: HeaderFormat) -> Self {
        Self::with_params(config.params("karn_rlp", true), format)
    }

    /// An end with explicit parameters; the format's `piggyback_ack` is forced off (004: only
    /// a sequence number per data frame).
    pub(crate) fn with_params(mut p: RlpParams, format: HeaderFormat) -> Self {
        let format = HeaderFormat {
            piggyback_ack: false,
            ..format
        };
        let space = format.seq_space();
        p.window = clamp_window(p.window, space);
        Rlp {
            format,
            space,
            queue: SendQueue::new(p.queue_limit),
            snd_base: 0,
            held: VecDeque::new(),
            rtx: VecDeque::new(),
            keepalive_pending: false,
            rx: RecvWindow::new(
                p.window,
                p.nack_interval,
                p.max_retransmissions.map(|k| k.saturating_add(1)),
                p.in_order,
            ),
            ack_pending: false,
            last_ack: 0,
            timers: Timers::default(),
            stats: ServiceStats::default(),
            p,
        }
    }

    /// The window in use after clamping.
    pub fn window(&self) -> u64 {
        self.p.window
    }

    fn snd_nxt(&self) -> u64 {
        self.snd_base + self.held.len() as u64
    }

    /// Moves `snd_base` past released frames; true if it moved.
    fn pop_released(&mut self) -> bool {
        let before = self.snd_base;
        while matches!(self.held.front(), Some(None)) {
            self.held.pop_front();
            self.snd_base += 1;
        }
        if self.held.is_empty() {
            self.timers.clear(T::Keepalive as usize);
        }
        self.snd_base != before
    }

    fn take_ack(&mut self, wire: u32) -> bool {
        let a = self.space.decode(wire, self.snd_base);
        if a + self.p.window < self.snd_base || a > self.snd_nxt() {
            return false;
        }
        while self.snd_base < a {
            self.held.pop_front();
            self.snd_base += 1;
        }
        self.rtx.retain(|&s| s >= a);
        self.pop_released();
        true
    }

    fn take_nack(&mut self, first: u32, more: u32) -> bool {
        let m0 = self.space.decode(first, self.snd_base);
        let mut ok = true;
        for j in 0..=32u64 {
            if j > 0 && more & (1 << (j - 1)) == 0 {
                continue;
            }
            let m = m0 + j;
            if m >= self.snd_nxt() || m + self.p.window < self.snd_base {
                ok = false;
            } else if m < self.snd_base {
                // The receiver still waits for a frame we no longer hold: tell it.
                self.keepalive_pending = true;
            } else if let Some(h) = &mut self.held[(m - self.snd_base) as usize] {
                if h.queued {
                    continue;
                }
                if self.p.max_retransmissions.is_some_and(|k| h.rtx >= k) {
                    // 004 §III.A: abandon after the last retry; the keepalive's base tells the
                    // receiver to stop waiting (once the frames before it are settled too).
                    self.held[(m - self.snd_base) as usize] = None;
                    self.stats.abandoned += 1;
                    if self.pop_released() {
                        self.keepalive_pending = true;
                    }
                } else {
                    h.queued = true;
                    self.rtx.push_back(m);
                }
            }
        }
        ok
    }

    fn take_data(&mut self, now: Instant, seq: u32, fp: FragPos, payload: &[u8]) -> bool {
        let w = self.p.window;
        let next = self.rx.next();
        let s = self.space.decode(seq, next);
        if s >= next + w || s + w < next {
            return false;
        }
        if s >= self.rx.base + w {
            // Frame s left the sender's buffer no earlier than everything up to s - window.
            self.rx.give_up_below(now, s + 1 - w, &mut self.stats);
        }
        let base = self.rx.base;
        if s < self.rx.base || !self.rx.accept(now, s, fp, payload, &mut self.stats) {
            self.rx.duplicate(s, &mut self.stats);
            // A data probe the receiver already holds: the sender polls for this answer.
            self.ack_pending |= self.p.probe_with_data;
        } else if self.p.probe_with_data && s < next && self.rx.base > base {
            // A repair that moved the cumulative point: say so at once, or the idle sender's
            // next probe would carry this very frame again (a full frame of airtime).
            self.ack_pending = true;
        }
        true
    }

    fn take_keepalive(&mut self, now: Instant, next: u32, base: u32) -> bool {
        let w = self.p.window;
        let rn = self.rx.next();
        let n = self.space.decode(next, rn);
        let b = self.space.decode(base, rn);
        if b > n || n - b > w || n < rn || n > rn + w {
            return false;
        }
        self.rx.give_up_below(now, b, &mut self.stats);
        self.rx.extend_to(now, n); // tail losses before the idle period
        self.ack_pending = true; // the answer the keepalive polls for
        true
    }

    /// Rearms the gap timer and volunteers an ack every half window.
    fn after_rx(&mut self) {
        match (
            self.gap_wait(),
            self.rx.gap_deadline(self.gap_wait().unwrap_or_default()),
        ) {
            (Some(_), Some(t)) => self.timers.set(T::Gap as usize, t),
            _ => self.timers.clear(T::Gap as usize),
        }
        if self.rx.base >= self.last_ack + (self.p.window / 2).max(1) {
            self.ack_pending = true;
        }
    }

    fn data_header(&self, seq: u64, fp: FragPos) -> Header {
        Header::Data {
            fp,
            seq: self.space.encode(seq),
            ack: None,
        }
    }

    /// How long the receiver waits for a gap by itself: the configured wait, stretched in
    /// proportion when the measured NACK interval has grown beyond the configured one (see
    /// `RecvWindow`), so the wait still covers the NACKs the configuration meant it to.
    fn gap_wait(&self) -> Option<Duration> {
        let w = self.p.gap_wait?;
        let (eff, conf) = (self.rx.nack_interval(), self.p.nack_interval);
        if eff <= conf || conf == Duration::ZERO {
            return Some(w);
        }
        let scaled = w.as_nanos() as u128 * eff.as_nanos() as u128 / conf.as_nanos() as u128;
        Some(Duration::from_nanos(scaled.min(u64::MAX as u128) as u64))
    }
}

impl Service for Rlp {
    fn queued_bytes(&self) -> usize {
        self.queue.bytes()
    }

    fn name(&self) -> &'static str {
        self.p.name
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
            Header::Data { fp, seq, .. } => self.take_data(now, seq, fp, &frame[off..]),
            Header::Ack { ack } => self.take_ack(ack),
            Header::Nack { ack, first, more } => self.take_ack(ack) && self.take_nack(first, more),
            Header::Keepalive { next, base } => self.take_keepalive(now, next, base),
            Header::Parity { .. } | Header::Unknown { .. } => false,
        };
        if !ok {
            self.stats.malformed += 1;
        }
        self.after_rx();
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.timers.expired(T::Keepalive as usize, now) && !self.held.is_empty() {
            self.keepalive_pending = true;
        }
        if self.timers.expired(T::Gap as usize, now) {
            if let Some(wait) = self.gap_wait() {
                self.rx.give_up_expired(now, wait, &mut self.stats);
            }
        }
        self.rx.on_timeout(now, &mut self.stats);
        self.after_rx();
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        let ka = now + self.p.keepalive_interval;
        if let Some((ack, first, more)) = self.rx.take_nack(now, &mut self.stats) {
            let h = Header::Nack {
                ack: self.space.encode(ack),
                first: self.space.encode(first),
                more,
            };
            put_control(&self.format, &h, buf, &mut self.stats);
            self.ack_pending = false;
            self.last_ack = ack;
            self.after_rx(); // the last NACK of a frame gives it up: timers may change
            return true;
        }
        if self.ack_pending {
            let h = Header::Ack {
                ack: self.space.encode(self.rx.base),
            };
            put_control(&self.format, &h, buf, &mut self.stats);
            self.ack_pending = false;
            self.last_ack = self.rx.base;
            return true;
        }
        while let Some(s) = self.rtx.pop_front() {
            let Some(i) = s.checked_sub(self.snd_base).map(|i| i as usize) else {
                continue;
            };
            let Some(Some(h)) = self.held.get_mut(i) else {
                continue;
            };
            h.queued = false;
            h.rtx += 1;
            let hdr = Header::Data {
                fp: h.sdu.fp,
                seq: self.space.encode(s),
                ack: None,
            };
            put_data(&self.format, &hdr, &h.sdu.data, false, buf, &mut self.stats);
            self.timers.set(T::Keepalive as usize, ka);
            return true;
        }
        if self.keepalive_pending && self.p.probe_with_data {
            let oldest = self
                .held
                .iter_mut()
                .enumerate()
                .find_map(|(i, h)| h.as_mut().map(|h| (i, h)));
            if let Some((i, h)) = oldest.filter(|(_, h)| h.rtx > 0) {
                // The probe carries the oldest frame the receiver has not acknowledged: if
                // the receiver lacks it, the probe is the repair; if not, it answers with an
                // `Ack` that frees the buffer, and the next probe carries the next frame.
                self.keepalive_pending = false;
                h.rtx += 1;
                let hdr = Header::Data {
                    fp: h.sdu.fp,
                    seq: self.space.encode(self.snd_base + i as u64),
                    ack: None,
                };
                put_data(&self.format, &hdr, &h.sdu.data, false, buf, &mut self.stats);
                self.timers.set(T::Keepalive as usize, ka);
                return true;
            }
        }
        if self.keepalive_pending {
            self.keepalive_pending = false;
            let h = Header::Keepalive {
                next: self.space.encode(self.snd_nxt()),
                base: self.space.encode(self.snd_base),
            };
            put_control(&self.format, &h, buf, &mut self.stats);
            if !self.held.is_empty() {
                self.timers.set(T::Keepalive as usize, ka);
            }
            return true;
        }
        if (self.held.len() as u64) < self.p.window {
            if let Some(sdu) = self.queue.pop_front() {
                let h = self.data_header(self.snd_nxt(), sdu.fp);
                put_data(&self.format, &h, &sdu.data, true, buf, &mut self.stats);
                self.held.push_back(Some(Held {
                    sdu,
                    rtx: 0,
                    queued: false,
                }));
                self.timers.set(T::Keepalive as usize, ka);
                return true;
            }
        }
        false
    }

    fn poll_deliver(&mut self) -> Option<Delivery> {
        self.rx.pop_delivery()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        [self.timers.next(), self.rx.nack_timer()]
            .into_iter()
            .flatten()
            .min()
    }

    fn has_transmit(&self, _now: Instant) -> bool {
        self.rx.nack_ready()
            || self.ack_pending
            || !self.rtx.is_empty()
            || self.keepalive_pending
            || ((self.held.len() as u64) < self.p.window && !self.queue.is_empty())
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

    fn end(c: &KarnRlpConfig) -> Rlp {
        Rlp::karn(c, HeaderFormat::new(SeqWidth::W8))
    }

    fn frames(s: &mut Rlp, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while s.poll_transmit(now, &mut buf) {
            out.push(std::mem::take(&mut buf));
        }
        out
    }

    fn parse(s: &Rlp, f: &[u8]) -> Header {
        s.format.parse(f).unwrap().0
    }

    fn drain(s: &mut Rlp) -> Vec<u8> {
        std::iter::from_fn(|| s.poll_deliver())
            .map(|d| d.data[0])
            .collect()
    }

    #[test]
    fn data_frames_carry_one_byte_of_sequence() {
        let mut a = end(&KarnRlpConfig::default());
        a.handle_sdu(Instant::ZERO, Sdu::whole(vec![1, 2, 3]))
            .unwrap();
        let f = frames(&mut a, Instant::ZERO);
        assert_eq!(f, vec![vec![0, 1, 2, 3]]);
        assert_eq!(a.data_overhead(), 1);
    }

    #[test]
    fn keepalive_detects_a_tail_loss_before_idle() {
        let c = KarnRlpConfig::default();
        let (mut a, mut b) = (end(&c), end(&c));
        let t0 = Instant::ZERO;
        for i in 0..3u8 {
            a.handle_sdu(t0, Sdu::whole(vec![i])).unwrap();
        }
        let f = frames(&mut a, t0);
        b.handle_frame(t0, &f[0]);
        b.handle_frame(t0, &f[1]); // frame 2, the last before idle, is lost
        assert_eq!(drain(&mut b), [0, 1]);
        assert!(!b.has_transmit(t0), "no gap visible yet");
        // The sender goes idle: a keepalive follows one interval after the last data frame.
        let t1 = t0 + timer_ms(c.keepalive_interval_ms);
        assert_eq!(a.poll_timeout(), Some(t1));
        a.handle_timeout(t1);
        let ka = frames(&mut a, t1);
        assert_eq!(parse(&a, &ka[0]), Header::Keepalive { next: 3, base: 0 });
        b.handle_frame(t1, &ka[0]);
        let nack = frames(&mut b, t1);
        assert_eq!(
            parse(&b, &nack[0]),
            Header::Nack {
                ack: 2,
                first: 2,
                more: 0
            }
        );
        a.handle_frame(t1, &nack[0]);
        let rtx = frames(&mut a, t1);
        assert_eq!(rtx.len(), 1);
        b.handle_frame(t1, &rtx[0]);
        assert_eq!(drain(&mut b), [2]);
        assert_eq!(a.stats().retransmissions, 1);
        // The next keepalive is answered by an ack that empties the sender's buffer.
        let t2 = t1 + timer_ms(c.keepalive_interval_ms);
        a.handle_timeout(t2);
        for f in frames(&mut a, t2) {
            b.handle_frame(t2, &f);
        }
        for f in frames(&mut b, t2) {
            a.handle_frame(t2, &f);
        }
        assert!(a.held.is_empty());
        assert_eq!(
            a.poll_timeout(),
            None,
            "no keepalives once everything is settled"
        );
    }

    #[test]
    fn abandonment_after_n_retransmissions_tells_the_receiver() {
        // The sender gives up after 2 retransmissions; this receiver would NACK 6 times, so
        // only the sender's keepalive can stop it waiting.
        let ca = KarnRlpConfig {
            max_retransmissions: 2,
            ..Default::default()
        };
        let cb = KarnRlpConfig {
            max_retransmissions: 5,
            ..Default::default()
        };
        let (mut a, mut b) = (end(&ca), end(&cb));
        let mut now = Instant::ZERO;
        for i in 0..2u8 {
            a.handle_sdu(now, Sdu::whole(vec![i])).unwrap();
        }
        let f = frames(&mut a, now);
        b.handle_frame(now, &f[1]); // frame 0 lost
        let step = timer_ms(ca.nack_interval_ms);
        for round in 0..3 {
            let nack = frames(&mut b, now);
            assert_eq!(nack.len(), 1, "round {round}");
            a.handle_frame(now, &nack[0]);
            let out = frames(&mut a, now);
            assert_eq!(out.len(), 1);
            if round < 2 {
                // A retransmission, lost as well.
                assert!(matches!(parse(&a, &out[0]), Header::Data { seq: 0, .. }));
            } else {
                // Third NACK: the sender abandons frame 0 and says so.
                assert_eq!(a.stats().abandoned, 1);
                assert_eq!(parse(&a, &out[0]), Header::Keepalive { next: 2, base: 1 });
                assert!(drain(&mut b).is_empty(), "still waiting for frame 0");
                b.handle_frame(now, &out[0]);
            }
            now += step;
            b.handle_timeout(now);
        }
        assert_eq!(a.stats().retransmissions, 2);
        assert_eq!(
            drain(&mut b),
            [1],
            "the keepalive stopped the wait for frame 0"
        );
        assert_eq!(b.stats().abandoned, 1);
    }

    #[test]
    fn matched_ends_settle_a_gap_after_k_nack_intervals() {
        let c = KarnRlpConfig {
            max_retransmissions: 2,
            ..Default::default()
        };
        let (mut a, mut b) = (end(&c), end(&c));
        let mut now = Instant::ZERO;
        for i in 0..2u8 {
            a.handle_sdu(now, Sdu::whole(vec![i])).unwrap();
        }
        let f = frames(&mut a, now);
        b.handle_frame(now, &f[1]); // frame 0 lost, and every retransmission of it too
        for _ in 0..2 {
            for n in frames(&mut b, now) {
                a.handle_frame(now, &n);
            }
            assert_eq!(frames(&mut a, now).len(), 1);
            now = b.poll_timeout().unwrap();
            b.handle_timeout(now);
        }
        assert!(drain(&mut b).is_empty());
        // Its third NACK is its last: the sender, reading it, abandons the frame instead of
        // sending a third copy ...
        let last = frames(&mut b, now);
        let interval = timer_ms(c.nack_interval_ms);
        assert_eq!(now, Instant::ZERO + interval.saturating_mul(2));
        a.handle_frame(now, &last[0]);
        assert_eq!(a.stats().abandoned, 1);
        assert_eq!(a.stats().retransmissions, 2);
        // ... and the receiver gives frame 0 up one interval later (the grace a repair
        // answering the last NACK would need): three intervals after the first.
        assert!(drain(&mut b).is_empty());
        now = b.poll_timeout().unwrap();
        assert_eq!(now, Instant::ZERO + interval.saturating_mul(3));
        b.handle_timeout(now);
        assert_eq!(drain(&mut b), [1]);
        assert_eq!(b.stats().abandoned, 1);
    }

    #[test]
    fn receiver_gives_up_by_itself_after_the_gap_wait() {
        // A retry limit so high that only the gap wait can end the wait.
        let c = KarnRlpConfig {
            max_retransmissions: 100,
            ..Default::default()
        };
        let (mut a, mut b) = (end(&c), end(&c));
        let t0 = Instant::ZERO;
        for i in 0..2u8 {
            a.handle_sdu(t0, Sdu::whole(vec![i])).unwrap();
        }
        let f = frames(&mut a, t0);
        b.handle_frame(t0, &f[1]);
        let _nack_lost = frames(&mut b, t0);
        let mut now = t0;
        while let Some(t) = b.poll_timeout() {
            now = t;
            b.handle_timeout(now);
            let _ = frames(&mut b, now); // every NACK lost
            if b.stats().abandoned > 0 {
                break;
            }
        }
        assert_eq!(now, t0 + timer_ms(c.gap_wait_ms));
        assert_eq!(drain(&mut b), [1]);
    }

    #[test]
    fn half_window_acks_keep_a_loss_free_sender_moving() {
        let c = KarnRlpConfig {
            window: 8,
            ..Default::default()
        };
        let (mut a, mut b) = (end(&c), end(&c));
        let t0 = Instant::ZERO;
        for i in 0..40u8 {
            a.handle_sdu(t0, Sdu::whole(vec![i])).unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..20 {
            for f in frames(&mut a, t0) {
                b.handle_frame(t0, &f);
            }
            got.extend(drain(&mut b));
            for f in frames(&mut b, t0) {
                a.handle_frame(t0, &f);
            }
        }
        assert_eq!(got, (0..40).collect::<Vec<u8>>());
        assert_eq!(a.stats().retransmissions, 0);
    }

    #[test]
    fn nonsense_is_counted() {
        let mut a = end(&KarnRlpConfig::default());
        let t0 = Instant::ZERO;
        a.handle_frame(t0, &[]);
        a.handle_frame(t0, &[0x90, 9]); // ack of frames never sent
        a.handle_frame(t0, &[0xC0, 0, 1]); // parity: not part of this scheme
        a.handle_frame(t0, &[0xB0, 1, 2]); // keepalive with base after next
        a.handle_frame(t0, &[100]); // data far ahead of anything possible
        assert_eq!(a.stats().malformed, 5);
    }
}
