//! Go-Back-N (004 §III.A): a sliding window with cumulative positive acknowledgements.
//!
//! Contract. The sender keeps up to `window` frames outstanding. The receiver accepts only the
//! frame it expects next, delivers it at once (so delivery is in order and exactly once), and
//! drops everything else: frames ahead of it and duplicates behind it. Every data frame it
//! receives calls for a cumulative acknowledgement, piggybacked on reverse data when there is
//! some (each data frame carries sequence and acknowledgement: 2 bytes in 8-bit mode, 004
//! §III.A), or sent alone as an `Ack` after `ack_delay_ms` (0 = at once). When the oldest
//! outstanding frame has gone `timeout_ms` without being acknowledged the sender resends *all*
//! outstanding frames, oldest first (004: "after a timeout the sender must retransmit all
//! outstanding frames"). There are no NACKs and the sender never gives up.
//!
//! Classic Go-Back-N may use a window of `modulus - 1`; ours is clamped to `modulus/2 - 1`
//! because both ends decode wire numbers as the nearest full number to their own reference
//! (see [`crate::wire::seq`]), which also rejects stale or forged numbers far from it. The link
//! below is assumed to keep frames in order. Frames that make no sense are counted in
//! `malformed` and ignored.
//!
//! This file also holds the small pieces every ARQ service uses: config durations as timers,
//! window clamping, and frame emission with stats accounting.

use std::collections::VecDeque;

use super::queue::SendQueue;
use super::{Delivery, Sdu, Service, ServiceStats};
use crate::time::{Duration, Instant};
use crate::timer::Timers;
use crate::wire::{Header, HeaderFormat, SeqSpace};

/// Go-Back-N tuning. Durations are in milliseconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GoBackNConfig {
    /// Frames sent but not yet acknowledged, at most; clamped to `1..=modulus/2 - 1`.
    pub window: u64,
    /// Time the oldest outstanding frame waits for its acknowledgement before everything
    /// outstanding is sent again (ms).
    pub timeout_ms: f64,
    /// Delay of a standalone acknowledgement, to give reverse data a chance to carry it (ms).
    pub ack_delay_ms: f64,
    /// SDUs held waiting for the window before new ones are refused.
    pub queue_limit: usize,
}

impl Default for GoBackNConfig {
    /// 004 gives no timer values; these suit its slowest link (HSCSD, about 220 ms round trip).
    fn default() -> Self {
        GoBackNConfig {
            window: 32,
            timeout_ms: 500.0,
            ack_delay_ms: 0.0,
            queue_limit: 1000,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pieces shared by the ARQ services (selective_repeat, karn_rlp, oos_rlp, persistent).

/// Shortest timer any ARQ service arms: a zero or negative duration in a config would make a
/// timer fire again at the same instant forever.
pub(crate) const MIN_TIMER: Duration = Duration::from_micros(1);

/// A config duration in milliseconds as a timer length (at least [`MIN_TIMER`]).
pub(crate) fn timer_ms(ms: f64) -> Duration {
    Duration::from_secs_f64(ms / 1e3).max(MIN_TIMER)
}

/// A config delay in milliseconds that may be zero (negative or NaN give zero).
pub(crate) fn delay_ms(ms: f64) -> Duration {
    Duration::from_secs_f64(ms / 1e3)
}

/// A window clamped below half the sequence space (`1..=modulus/2 - 1`), so that a number
/// decoded against either end's reference is never ambiguous.
pub(crate) fn clamp_window(window: u64, space: SeqSpace) -> u64 {
    window.clamp(1, (space.max_window() - 1).max(1))
}

/// Appends control frame `h` to `buf` and counts it (all of it is overhead).
pub(crate) fn put_control(f: &HeaderFormat, h: &Header, buf: &mut Vec<u8>, st: &mut ServiceStats) {
    let start = buf.len();
    let n = f.header_len(h);
    buf.resize(start + n, 0);
    f.emit(h, &mut buf[start..]);
    st.frames_sent += 1;
    st.bytes_sent += n as u64;
    st.overhead_bytes += n as u64;
}

/// Appends a data frame (header `h`, then `payload`) to `buf` and counts it: for a first copy
/// only the header is overhead, a retransmission is overhead whole.
pub(crate) fn put_data(
    f: &HeaderFormat,
    h: &Header,
    payload: &[u8],
    first_copy: bool,
    buf: &mut Vec<u8>,
    st: &mut ServiceStats,
) {
    let start = buf.len();
    let hl = f.data_header_len();
    buf.resize(start + hl, 0);
    f.emit(h, &mut buf[start..]);
    buf.extend_from_slice(payload);
    let n = (hl + payload.len()) as u64;
    st.frames_sent += 1;
    st.bytes_sent += n;
    if first_copy {
        st.overhead_bytes += hl as u64;
    } else {
        st.overhead_bytes += n;
        st.retransmissions += 1;
    }
}

// ---------------------------------------------------------------------------------------------

/// Timers of a Go-Back-N end.
#[repr(usize)]
enum T {
    /// Retransmission timeout of the oldest outstanding frame.
    Rto,
    /// Delayed standalone acknowledgement.
    Ack,
}

/// One end of a Go-Back-N service.
#[derive(Debug)]
pub struct GoBackN {
    format: HeaderFormat,
    space: SeqSpace,
    window: u64,
    timeout: Duration,
    ack_delay: Duration,
    queue: SendQueue,
    /// Oldest unacknowledged sequence number; `outstanding[i]` holds `snd_una + i`.
    snd_una: u64,
    outstanding: VecDeque<Sdu>,
    /// Next outstanding frame to send again after a timeout (`snd_nxt` when not going back).
    resend: u64,
    rcv_next: u64,
    out: VecDeque<Delivery>,
    ack_pending: bool,
    timers: Timers<2>,
    stats: ServiceStats,
}

impl GoBackN {
    /// A Go-Back-N end. The format's `piggyback_ack` is forced on.
    pub fn new(config: GoBackNConfig, format: HeaderFormat) -> Self {
        let format = HeaderFormat {
            piggyback_ack: true,
            ..format
        };
        let space = format.seq_space();
        GoBackN {
            format,
            space,
            window: clamp_window(config.window, space),
            timeout: timer_ms(config.timeout_ms),
            ack_delay: delay_ms(config.ack_delay_ms),
            queue: SendQueue::new(config.queue_limit),
            snd_una: 0,
            outstanding: VecDeque::new(),
            resend: 0,
            rcv_next: 0,
            out: VecDeque::new(),
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
        self.snd_una + self.outstanding.len() as u64
    }

    fn take_ack(&mut self, now: Instant, wire: u32) -> bool {
        let a = self.space.decode(wire, self.snd_una);
        if a < self.snd_una || a > self.snd_nxt() {
            return false;
        }
        if a > self.snd_una {
            self.outstanding.drain(..(a - self.snd_una) as usize);
            self.snd_una = a;
            self.resend = self.resend.max(a);
            if self.outstanding.is_empty() {
                self.timers.clear(T::Rto as usize);
            } else {
                self.timers.set(T::Rto as usize, now + self.timeout);
            }
        }
        true
    }

    fn ack_sent(&mut self) {
        self.ack_pending = false;
        self.timers.clear(T::Ack as usize);
    }

    /// Sends frame `seq` (outstanding or the next new one) and does the bookkeeping.
    fn send(&mut self, now: Instant, seq: u64, first_copy: bool, buf: &mut Vec<u8>) {
        let sdu = &self.outstanding[(seq - self.snd_una) as usize];
        let h = Header::Data {
            fp: sdu.fp,
            seq: self.space.encode(seq),
            ack: Some(self.space.encode(self.rcv_next)),
        };
        put_data(
            &self.format,
            &h,
            &sdu.data,
            first_copy,
            buf,
            &mut self.stats,
        );
        if seq == self.snd_una {
            self.timers.set(T::Rto as usize, now + self.timeout);
        }
        self.resend = seq + 1;
        self.ack_sent();
    }
}

impl Service for GoBackN {
    fn queued_bytes(&self) -> usize {
        self.queue.bytes()
    }

    fn name(&self) -> &'static str {
        "go_back_n"
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
                let s = self.space.decode(seq, self.rcv_next);
                if !ack_ok || s >= self.rcv_next + self.window || s + self.window < self.rcv_next {
                    false
                } else {
                    if s == self.rcv_next {
                        self.rcv_next += 1;
                        self.stats.delivered += 1;
                        self.out.push_back(Delivery {
                            seq: s,
                            fp,
                            data: frame[off..].to_vec(),
                        });
                    } else if s < self.rcv_next {
                        // Already delivered: the copy was not needed (the receiver never
                        // gives a frame up, so every duplicate is spurious).
                        self.stats.duplicates += 1;
                        self.stats.spurious += 1;
                    } // else: ahead of the expected frame, dropped (004: "drops everything else")
                    if self.ack_delay == Duration::ZERO {
                        self.ack_pending = true;
                    } else {
                        self.timers
                            .set_if_idle(T::Ack as usize, now + self.ack_delay);
                    }
                    true
                }
            }
            Header::Ack { ack } => self.take_ack(now, ack),
            Header::Nack { .. }
            | Header::Keepalive { .. }
            | Header::Parity { .. }
            | Header::Unknown { .. } => false,
        };
        if !ok {
            self.stats.malformed += 1;
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.timers.expired(T::Ack as usize, now) {
            self.ack_pending = true;
        }
        if self.timers.expired(T::Rto as usize, now) && !self.outstanding.is_empty() {
            // Go back: everything outstanding goes again, oldest first. The timer restarts
            // when the oldest frame actually leaves.
            self.resend = self.snd_una;
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if self.resend < self.snd_nxt() {
            self.send(now, self.resend, false, buf);
            return true;
        }
        if (self.outstanding.len() as u64) < self.window {
            if let Some(sdu) = self.queue.pop_front() {
                let s = self.snd_nxt();
                self.outstanding.push_back(sdu);
                self.send(now, s, true, buf);
                return true;
            }
        }
        if self.ack_pending {
            let h = Header::Ack {
                ack: self.space.encode(self.rcv_next),
            };
            put_control(&self.format, &h, buf, &mut self.stats);
            self.ack_sent();
            return true;
        }
        false
    }

    fn poll_deliver(&mut self) -> Option<Delivery> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    fn has_transmit(&self, _now: Instant) -> bool {
        self.resend < self.snd_nxt()
            || ((self.outstanding.len() as u64) < self.window && !self.queue.is_empty())
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

    fn end(c: &GoBackNConfig) -> GoBackN {
        GoBackN::new(c.clone(), HeaderFormat::new(SeqWidth::W8))
    }

    fn frames(s: &mut GoBackN, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while s.poll_transmit(now, &mut buf) {
            out.push(std::mem::take(&mut buf));
        }
        out
    }

    fn seq_of(s: &GoBackN, f: &[u8]) -> u32 {
        match s.format.parse(f).unwrap().0 {
            Header::Data { seq, .. } => seq,
            h => panic!("not data: {h:?}"),
        }
    }

    #[test]
    fn timeout_resends_all_outstanding() {
        let c = GoBackNConfig {
            window: 4,
            ..Default::default()
        };
        let mut a = end(&c);
        let mut b = end(&c);
        let t0 = Instant::ZERO;
        for i in 0..6u8 {
            a.handle_sdu(t0, Sdu::whole(vec![i])).unwrap();
        }
        let first = frames(&mut a, t0);
        assert_eq!(first.len(), 4, "window of 4");
        // Frame 1 is lost; the receiver takes 0 and drops 2 and 3.
        b.handle_frame(t0, &first[0]);
        b.handle_frame(t0, &first[2]);
        b.handle_frame(t0, &first[3]);
        assert_eq!(b.poll_deliver().unwrap().data, vec![0]);
        assert!(b.poll_deliver().is_none());
        let acks = frames(&mut b, t0);
        assert_eq!(acks.len(), 1, "one cumulative ack");
        a.handle_frame(t0, &acks[0]);
        assert_eq!(a.snd_una, 1);
        // The window slid by one: frame 4 goes.
        let f4 = frames(&mut a, t0);
        assert_eq!(f4.iter().map(|f| seq_of(&a, f)).collect::<Vec<_>>(), [4]);
        let rto = t0 + timer_ms(c.timeout_ms);
        assert_eq!(a.poll_timeout(), Some(rto));
        a.handle_timeout(rto);
        let again = frames(&mut a, rto);
        assert_eq!(
            again.iter().map(|f| seq_of(&a, f)).collect::<Vec<_>>(),
            [1, 2, 3, 4],
            "every outstanding frame goes again"
        );
        assert_eq!(a.stats().retransmissions, 4);
        for f in &again {
            b.handle_frame(rto, f);
        }
        let got: Vec<u8> = std::iter::from_fn(|| b.poll_deliver())
            .map(|d| d.data[0])
            .collect();
        assert_eq!(got, [1, 2, 3, 4]);
        assert_eq!(b.stats().delivered, 5);
    }

    #[test]
    fn duplicates_are_counted_and_acked() {
        let c = GoBackNConfig::default();
        let mut a = end(&c);
        let mut b = end(&c);
        let t0 = Instant::ZERO;
        a.handle_sdu(t0, Sdu::whole(vec![7])).unwrap();
        let f = frames(&mut a, t0);
        b.handle_frame(t0, &f[0]);
        b.handle_frame(t0, &f[0]);
        assert_eq!(b.stats().duplicates, 1);
        assert_eq!(b.stats().delivered, 1);
        assert_eq!(frames(&mut b, t0).len(), 1);
    }

    #[test]
    fn delayed_ack_rides_on_reverse_data() {
        let c = GoBackNConfig {
            ack_delay_ms: 10.0,
            ..Default::default()
        };
        let mut a = end(&c);
        let mut b = end(&c);
        let t0 = Instant::ZERO;
        a.handle_sdu(t0, Sdu::whole(vec![1])).unwrap();
        let f = frames(&mut a, t0);
        b.handle_frame(t0, &f[0]);
        assert!(!b.has_transmit(t0), "the ack waits");
        let t1 = t0 + Duration::from_millis(5);
        b.handle_sdu(t1, Sdu::whole(vec![2])).unwrap();
        let r = frames(&mut b, t1);
        assert_eq!(r.len(), 1);
        a.handle_frame(t1, &r[0]);
        assert!(a.outstanding.is_empty());
        assert_eq!(
            b.timers.get(T::Ack as usize),
            None,
            "the piggybacked ack cancelled the ack timer"
        );
        // Without reverse data the ack goes alone when the delay is over.
        a.handle_sdu(t1, Sdu::whole(vec![3])).unwrap();
        let f = frames(&mut a, t1);
        b.handle_frame(t1, &f[0]);
        let t2 = t1 + Duration::from_millis(10);
        b.handle_timeout(t2);
        assert_eq!(frames(&mut b, t2).len(), 1);
    }

    #[test]
    fn nonsense_is_counted() {
        let mut a = end(&GoBackNConfig::default());
        let t0 = Instant::ZERO;
        a.handle_frame(t0, &[]);
        a.handle_frame(t0, &[5]); // data frame shorter than its 2-byte header
        a.handle_frame(t0, &[0xA0, 0, 0, 0, 0, 0, 0]); // NACK: not part of Go-Back-N
        a.handle_frame(t0, &[0x90, 3]); // ack of frames never sent
        assert_eq!(a.stats().malformed, 4);
    }
}
