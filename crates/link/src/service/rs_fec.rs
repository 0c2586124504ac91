//! Reed-Solomon FEC service (003 §4) over persistent in-order retransmission (003 §3).
//!
//! Contract. SDUs are cut into *pieces*, each sent in one frame of 1 to 5 RS blocks of 255
//! bytes (the last block shortened) with a per-frame parity level; the policy (BOLD, LIGHT,
//! ROBUST or FLEX, see [`policy`]) picks blocks and parity for every new frame. The wire
//! layout is in [`frame`]: a header protected by its own RS(12,6) code, then the blocks, with a
//! CRC-32 over header fields and payload inside the last block. The link's CRC must be off for
//! this service (it would refuse exactly the frames RS repairs).
//!
//! The receiver decodes every block. A frame it repairs is accepted (and counted in
//! `recovered`); a frame it cannot repair, or whose CRC fails after repair, or that arrives
//! truncated, is reported back as such and the sender retransmits it. Every received data frame
//! with a readable header is answered by one report (22 bytes, as robust as a header) carrying
//! the cumulative acknowledgement, the frame's outcome, the share of `t` its worst block
//! needed, and the parity it carried: the feedback FLEX adapts from.
//!
//! Retransmission is persistent and in order (003 §3): there is no retry limit, frames are
//! resent lowest sequence first (on a failure report, on a report about a later frame sent
//! after it, or on timeout: RFC 6298 (2)-(5) estimates with Karn's rule and backoff), the
//! receiver buffers up to `window` frames past a gap and releases pieces strictly in sequence,
//! reassembles the pieces of each SDU, and delivers each SDU exactly once. A retransmission
//! keeps its payload but is coded at the policy's *current* parity, so under FLEX a frame
//! first sent large and uncoded may come back spanning more than 5 blocks (at most 23); new
//! frames are always 1 to 5 blocks. Delivered SDUs are numbered consecutively (`Delivery::seq` counts
//! SDUs, not frames, since one SDU may span several frames).
//!
//! Counters: `parity_sent` counts Reed-Solomon parity **bytes** of data blocks (first sends
//! and retransmissions; the fixed header and report codes count as overhead only);
//! `recovered` counts accepted frames that needed correction; `malformed` counts frames whose
//! header could not be read or made no sense. [`RsFecStats`] has the codec's view.

pub mod frame;
pub mod policy;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use self::frame::{
    capacity, check_report, decode_data, emit_data, emit_report, parse_header, Codecs, DataHeader,
    FrameError, Header, Outcome, Report, CRC_LEN, HEADER_LEN, LOAD_MAX, MAX_PAYLOAD,
};
pub use self::policy::{FlexConfig, Policy, PolicyState};
use super::queue::SendQueue;
use super::{Delivery, Sdu, Service, ServiceStats};
use crate::time::{Duration, Instant};
use crate::timer::Timers;
use crate::wire::{FragPos, HeaderFormat, SeqSpace};

/// The service's sequence space: 16 bits on the wire.
const SEQ: SeqSpace = SeqSpace::new(16);

/// Reed-Solomon FEC service tuning.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RsFecConfig {
    /// Error-control policy (003 §4): `"bold"`, `"light"`, `"robust"` or `"flex"`.
    pub policy: Policy,
    /// SDUs held waiting for the link before new ones are refused.
    pub queue_limit: usize,
    /// Frames in flight (sender) and buffered past a gap (receiver); below 32768.
    pub window: u32,
    /// Retransmission timeout before any round-trip sample, in milliseconds.
    pub initial_rto_ms: u64,
    /// Lower bound of the retransmission timeout, in milliseconds.
    pub min_rto_ms: u64,
    /// Upper bound of the retransmission timeout (after backoff), in milliseconds.
    pub max_rto_ms: u64,
    /// Reports waiting to be sent before the oldest is dropped.
    pub report_queue: usize,
    /// FLEX heuristics.
    pub flex: FlexConfig,
}

impl Default for RsFecConfig {
    fn default() -> Self {
        RsFecConfig {
            policy: Policy::Flex,
            queue_limit: 1000,
            window: 32,
            initial_rto_ms: 200,
            min_rto_ms: 10,
            max_rto_ms: 2000,
            report_queue: 64,
            flex: FlexConfig::default(),
        }
    }
}

/// Counters specific to the Reed-Solomon service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RsFecStats {
    /// Blocks the receiver had to correct (in accepted frames).
    pub blocks_corrected: u64,
    /// Symbols the receiver corrected (in accepted frames).
    pub symbols_corrected: u64,
    /// Frames that failed to decode or failed the CRC after decoding.
    pub frames_failed: u64,
    /// Frames shorter than their header said.
    pub frames_truncated: u64,
    /// Frames whose protected header could not be repaired.
    pub headers_unreadable: u64,
    /// Reports sent.
    pub reports_sent: u64,
    /// Reports received and accepted.
    pub reports_received: u64,
    /// Reports dropped because the report queue was full.
    pub reports_dropped: u64,
    /// Frames presumed lost because a later frame's report arrived first.
    pub losses_inferred: u64,
    /// Frames resent because their retransmission timer expired.
    pub timeouts: u64,
}

/// A frame the sender holds until the receiver has it.
#[derive(Debug)]
struct TxFrame {
    fp: FragPos,
    piece: FragPos,
    payload: Vec<u8>,
    last_sent: Instant,
    sends: u32,
    acked: bool,
    retx: bool,
    deadline: Instant,
}

/// A piece accepted by the receiver, waiting for its turn.
#[derive(Debug)]
struct RxPiece {
    fp: FragPos,
    piece: FragPos,
    data: Vec<u8>,
}

#[derive(Clone, Copy)]
enum Timer {
    Retransmit = 0,
}

/// One end of a Reed-Solomon FEC service.
#[derive(Debug)]
pub struct RsFec {
    config: RsFecConfig,
    policy: PolicyState,
    codecs: Codecs,
    // Sender.
    queue: SendQueue,
    cursor: usize,
    inflight: VecDeque<TxFrame>,
    base: u64,
    next_seq: u64,
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    timers: Timers<1>,
    // Receiver.
    expected: u64,
    rx: VecDeque<Option<RxPiece>>,
    partial: Option<(FragPos, Vec<u8>)>,
    sdus_delivered: u64,
    delivered: VecDeque<Delivery>,
    reports: VecDeque<Report>,
    scratch: Vec<u8>,
    payload: Vec<u8>,
    stats: ServiceStats,
    rs_stats: RsFecStats,
}

impl RsFec {
    /// A service end. The header format is not used: this service has its own protected
    /// header with a 16-bit sequence number and always carries fragment positions.
    pub fn new(config: RsFecConfig, _format: HeaderFormat) -> Self {
        let mut config = config;
        config.window = config.window.clamp(1, (SEQ.max_window() - 1) as u32);
        let policy = PolicyState::new(config.policy, config.flex.clone());
        let rto = Duration::from_millis(config.initial_rto_ms);
        let queue = SendQueue::new(config.queue_limit);
        RsFec {
            config,
            policy,
            codecs: Codecs::default(),
            queue,
            cursor: 0,
            inflight: VecDeque::new(),
            base: 0,
            next_seq: 0,
            srtt: None,
            rttvar: Duration::ZERO,
            rto,
            timers: Timers::default(),
            expected: 0,
            rx: VecDeque::new(),
            partial: None,
            sdus_delivered: 0,
            delivered: VecDeque::new(),
            reports: VecDeque::new(),
            scratch: Vec::new(),
            payload: Vec::new(),
            stats: ServiceStats::default(),
            rs_stats: RsFecStats::default(),
        }
    }

    /// Counters specific to this service.
    pub fn rs_stats(&self) -> &RsFecStats {
        &self.rs_stats
    }

    /// The policy and its current parameters (blocks and parity of the next new frame).
    pub fn policy(&self) -> &PolicyState {
        &self.policy
    }

    /// The current retransmission timeout.
    pub fn rto(&self) -> Duration {
        self.rto
    }

    fn window_open(&self) -> bool {
        self.next_seq - self.base < self.config.window as u64
    }

    fn rearm(&mut self) {
        let next = self
            .inflight
            .iter()
            .filter(|f| !f.acked && !f.retx)
            .map(|f| f.deadline)
            .min();
        match next {
            Some(t) => self.timers.set(Timer::Retransmit as usize, t),
            None => self.timers.clear(Timer::Retransmit as usize),
        }
    }

    /// RFC 6298 (2.2)-(2.3): smoothed round-trip time and variation from one sample.
    fn rtt_sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration::from_nanos(r.as_nanos() / 2);
            }
            Some(s) => {
                let diff = s.as_nanos().abs_diff(r.as_nanos());
                self.rttvar = Duration::from_nanos((3 * self.rttvar.as_nanos() + diff) / 4);
                self.srtt = Some(Duration::from_nanos((7 * s.as_nanos() + r.as_nanos()) / 8));
            }
        }
        let rto = self.srtt.unwrap_or(r) + self.rttvar.saturating_mul(4);
        self.rto = self.clamp_rto(rto);
    }

    fn clamp_rto(&self, rto: Duration) -> Duration {
        let lo = Duration::from_millis(self.config.min_rto_ms);
        let hi = Duration::from_millis(self.config.max_rto_ms.max(self.config.min_rto_ms));
        rto.max(lo).min(hi)
    }

    fn push_report(&mut self, r: Report) {
        if self.reports.len() >= self.config.report_queue.max(1) {
            self.reports.pop_front();
            self.rs_stats.reports_dropped += 1;
        }
        self.reports.push_back(r);
    }

    /// Receiver: a data frame with a readable header.
    fn on_data(&mut self, h: DataHeader, info: [u8; frame::HEADER_INFO], body: &[u8]) {
        let seq = SEQ.decode(h.seq as u32, self.expected);
        if seq >= self.expected + self.config.window as u64 {
            // No sender of ours runs this far ahead: a miscorrected header or a peer's error.
            self.stats.malformed += 1;
            return;
        }
        let res = decode_data(
            &mut self.codecs,
            &h,
            &info,
            body,
            &mut self.scratch,
            &mut self.payload,
        );
        let (outcome, worst) = match res {
            Ok(st) => {
                let o = if st.blocks_corrected > 0 {
                    Outcome::Corrected
                } else {
                    Outcome::Clean
                };
                (o, st)
            }
            Err((FrameError::Truncated, st)) => {
                self.rs_stats.frames_truncated += 1;
                (Outcome::Truncated, st)
            }
            Err((e, st)) => {
                if e != FrameError::Failed {
                    self.stats.malformed += 1;
                }
                self.rs_stats.frames_failed += 1;
                (Outcome::Failed, st)
            }
        };
        if outcome.received() {
            let idx = seq.checked_sub(self.expected).map(|i| i as usize);
            match idx {
                Some(i) if self.rx.get(i).is_none_or(|slot| slot.is_none()) => {
                    if self.rx.len() <= i {
                        self.rx.resize_with(i + 1, || None);
                    }
                    self.rx[i] = Some(RxPiece {
                        fp: h.fp,
                        piece: h.piece,
                        data: std::mem::take(&mut self.payload),
                    });
                    self.rs_stats.blocks_corrected += worst.blocks_corrected as u64;
                    self.rs_stats.symbols_corrected += worst.symbols_corrected as u64;
                    if outcome == Outcome::Corrected {
                        self.stats.recovered += 1;
                    }
                    self.release();
                }
                _ => {
                    // Persistent: nothing is given up, so every copy it had is spurious.
                    self.stats.duplicates += 1;
                    self.stats.spurious += 1;
                }
            }
        }
        let t = h.nsym as u32 / 2;
        let load = if t == 0 {
            0
        } else {
            (LOAD_MAX as u32 * worst.worst_block)
                .div_ceil(t)
                .min(LOAD_MAX as u32) as u8
        };
        self.push_report(Report {
            outcome,
            load,
            ack: SEQ.encode(self.expected) as u16,
            about: h.seq,
            nsym: h.nsym,
        });
    }

    /// Receiver: releases pieces in sequence and reassembles SDUs (003 §3: never reorder).
    fn release(&mut self) {
        while matches!(self.rx.front(), Some(Some(_))) {
            let Some(Some(p)) = self.rx.pop_front() else {
                break;
            };
            self.expected += 1;
            match p.piece {
                FragPos::Whole | FragPos::First => {
                    if self.partial.take().is_some() {
                        self.stats.malformed += 1; // an SDU whose last piece never came
                    }
                    if p.piece == FragPos::Whole {
                        self.deliver(p.fp, p.data);
                    } else {
                        self.partial = Some((p.fp, p.data));
                    }
                }
                FragPos::Middle | FragPos::Last => match self.partial.take() {
                    Some((fp, mut data)) => {
                        data.extend_from_slice(&p.data);
                        if p.piece == FragPos::Last {
                            self.deliver(fp, data);
                        } else {
                            self.partial = Some((fp, data));
                        }
                    }
                    None => self.stats.malformed += 1,
                },
            }
        }
    }

    fn deliver(&mut self, fp: FragPos, data: Vec<u8>) {
        self.stats.delivered += 1;
        self.delivered.push_back(Delivery {
            seq: self.sdus_delivered,
            fp,
            data,
        });
        self.sdus_delivered += 1;
    }

    /// Sender: a report from the peer's receiver.
    fn on_report(&mut self, now: Instant, r: Report) {
        let ack = SEQ.decode(r.ack as u32, self.base);
        let about = SEQ.decode(r.about as u32, self.base);
        if ack > self.next_seq || about >= self.next_seq {
            self.stats.malformed += 1;
            return;
        }
        self.rs_stats.reports_received += 1;
        // FLEX learns from every report, including those about frames already acknowledged.
        self.policy.on_report(r.outcome, r.load, r.nsym);
        for f in self
            .inflight
            .iter_mut()
            .take(ack.saturating_sub(self.base) as usize)
        {
            f.acked = true;
        }
        if about >= self.base {
            let idx = (about - self.base) as usize;
            let sent = self.inflight[idx].last_sent;
            let f = &mut self.inflight[idx];
            if r.outcome.received() {
                if f.sends == 1 && !f.acked {
                    // Karn: only frames sent once give unambiguous samples.
                    let sample = now.saturating_since(f.last_sent);
                    f.acked = true;
                    self.rtt_sample(sample);
                } else {
                    f.acked = true;
                }
            } else if !f.acked {
                f.retx = true; // the receiver's NACK: resend now
            }
            // Frames sent before this one and still unanswered did not arrive (FIFO link).
            let mut lost = 0;
            for g in self.inflight.iter_mut().take(idx) {
                if !g.acked && !g.retx && g.last_sent <= sent {
                    g.retx = true;
                    lost += 1;
                }
            }
            for _ in 0..lost {
                self.rs_stats.losses_inferred += 1;
                self.policy.on_loss();
            }
        }
        while self.inflight.front().is_some_and(|f| f.acked) {
            self.inflight.pop_front();
            self.base += 1;
        }
        self.rearm();
    }

    /// Sender: cuts the next piece off the head SDU at the policy's current frame size.
    fn next_piece(&mut self) -> Option<(FragPos, FragPos, Vec<u8>)> {
        let sdu = self.queue.front()?;
        let cap = capacity(self.policy.blocks() as usize, self.policy.nsym() as usize)
            .clamp(1, MAX_PAYLOAD);
        let start = self.cursor;
        let end = (start + cap).min(sdu.data.len());
        let piece = match (start == 0, end == sdu.data.len()) {
            (true, true) => FragPos::Whole,
            (true, false) => FragPos::First,
            (false, true) => FragPos::Last,
            (false, false) => FragPos::Middle,
        };
        let out = (sdu.fp, piece, sdu.data[start..end].to_vec());
        if end == sdu.data.len() {
            self.queue.pop_front();
            self.cursor = 0;
        } else {
            self.cursor = end;
        }
        Some(out)
    }

    /// Emits the data frame at `idx` of the window into `buf`; returns (frame, parity) bytes.
    fn emit_frame(&mut self, idx: usize, buf: &mut Vec<u8>) -> (usize, usize) {
        let nsym = self.policy.nsym();
        let f = &self.inflight[idx];
        let h = DataHeader {
            fp: f.fp,
            piece: f.piece,
            len: f.payload.len() as u16,
            nsym,
            seq: SEQ.encode(self.base + idx as u64) as u16,
        };
        let start = buf.len();
        emit_data(&mut self.codecs, &h, &f.payload, buf);
        let n = buf.len() - start;
        let data_len = f.payload.len() + CRC_LEN;
        (
            n,
            frame::blocks_for(data_len, nsym as usize) * nsym as usize,
        )
    }

    fn count_sent(&mut self, n: usize) {
        self.stats.frames_sent += 1;
        self.stats.bytes_sent += n as u64;
    }
}

impl Service for RsFec {
    fn queued_bytes(&self) -> usize {
        self.queue.bytes()
    }

    fn name(&self) -> &'static str {
        "rs_fec"
    }

    fn handle_sdu(&mut self, _now: Instant, sdu: Sdu) -> Result<(), Sdu> {
        self.queue.offer(sdu, &mut self.stats)
    }

    fn handle_frame(&mut self, now: Instant, bytes: &[u8]) {
        self.stats.frames_received += 1;
        let (h, info) = match parse_header(&mut self.codecs, bytes) {
            Ok(x) => x,
            Err(e) => {
                if e == FrameError::Header {
                    self.rs_stats.headers_unreadable += 1;
                }
                self.stats.malformed += 1;
                return;
            }
        };
        let body = &bytes[HEADER_LEN..];
        match h {
            Header::Data(d) => self.on_data(d, info, body),
            Header::Report(r) => {
                if check_report(&mut self.codecs, &info, body) {
                    self.on_report(now, r);
                } else {
                    self.stats.malformed += 1;
                }
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if !self.timers.expired(Timer::Retransmit as usize, now) {
            return;
        }
        let mut fired = 0;
        for f in self.inflight.iter_mut() {
            if !f.acked && !f.retx && f.deadline <= now {
                f.retx = true;
                fired += 1;
            }
        }
        if fired > 0 {
            // RFC 6298 (5.5): back off.
            self.rto = self.clamp_rto(self.rto.saturating_mul(2));
            for _ in 0..fired {
                self.rs_stats.timeouts += 1;
                self.policy.on_loss();
            }
        }
        self.rearm();
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if let Some(r) = self.reports.pop_front() {
            let start = buf.len();
            emit_report(&mut self.codecs, &r, buf);
            let n = buf.len() - start;
            self.count_sent(n);
            self.stats.overhead_bytes += n as u64;
            self.rs_stats.reports_sent += 1;
            return true;
        }
        // 003 §3: retransmissions first, lowest sequence first: the receiver is waiting on them.
        if let Some(idx) = self.inflight.iter().position(|f| f.retx && !f.acked) {
            let (n, parity) = self.emit_frame(idx, buf);
            let rto = self.rto;
            let f = &mut self.inflight[idx];
            f.retx = false;
            f.sends += 1;
            f.last_sent = now;
            f.deadline = now + rto;
            self.count_sent(n);
            self.stats.retransmissions += 1;
            self.stats.parity_sent += parity as u64;
            self.stats.overhead_bytes += n as u64;
            self.rearm();
            return true;
        }
        if !self.window_open() {
            return false;
        }
        let Some((fp, piece, payload)) = self.next_piece() else {
            return false;
        };
        let len = payload.len();
        self.inflight.push_back(TxFrame {
            fp,
            piece,
            payload,
            last_sent: now,
            sends: 1,
            acked: false,
            retx: false,
            deadline: now + self.rto,
        });
        self.next_seq += 1;
        let idx = self.inflight.len() - 1;
        let (n, parity) = self.emit_frame(idx, buf);
        self.count_sent(n);
        self.stats.parity_sent += parity as u64;
        self.stats.overhead_bytes += (n - len) as u64;
        self.rearm();
        true
    }

    fn poll_deliver(&mut self) -> Option<Delivery> {
        self.delivered.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    fn has_transmit(&self, _now: Instant) -> bool {
        !self.reports.is_empty()
            || self.inflight.iter().any(|f| f.retx && !f.acked)
            || (self.window_open() && !self.queue.is_empty())
    }

    fn stats(&self) -> &ServiceStats {
        &self.stats
    }

    fn data_overhead(&self) -> usize {
        // Fixed part only: the parity depends on the policy's level and the payload length.
        HEADER_LEN + CRC_LEN
    }

    /// Packets go in whole: the service cuts them into pieces that fit the policy's current
    /// frame of 1 to 5 RS blocks (003 §4), so the link's frame size does not apply.
    fn max_sdu(&self, _frame_budget: usize) -> usize {
        usize::MAX
    }

    /// The link's CRC would refuse exactly the frames Reed-Solomon repairs; the service checks
    /// its own CRC-32 after decoding.
    fn uses_link_crc(&self) -> bool {
        false
    }
}
