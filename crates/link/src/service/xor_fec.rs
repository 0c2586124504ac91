//! XOR parity FEC (004 §III.A, §III.D): one parity frame per block of `k` data frames.
//!
//! Contract. Data frames go out unmodified behind a one-field data header (1 byte in 8-bit
//! mode). After every `block` data frames the sender emits a parity frame: the XOR of the
//! block's frames, each taken as `[fragment position][length: u16][payload]` zero-padded to the
//! longest, so a rebuilt frame recovers its exact length. When the sender goes silent in the
//! middle of a block, a timer (004: twice the regular packet interval) closes the block early
//! with a parity frame over the frames sent so far. The receiver delivers every data frame the
//! moment it arrives and, when a parity frame finds exactly one frame of its block missing,
//! rebuilds and releases that frame at once (out of order). Two or more losses in a block are
//! not recoverable: the parity frame is then wasted, as 004 observes. Nothing is delivered
//! twice. Parity frames take no sequence number of their own.

use std::collections::VecDeque;

use super::queue::SendQueue;
use super::{Delivery, Sdu, Service, ServiceStats};
use crate::fec::xor::xor_into;
use crate::time::{Duration, Instant};
use crate::timer::Timers;
use crate::wire::{FragPos, Header, HeaderFormat};

/// XOR FEC tuning.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct XorFecConfig {
    /// Data frames per parity frame: 8 for HSCSD, 12 for WLAN in 004 §III.A.
    pub block: usize,
    /// Silence after which an unfinished block is closed with a parity frame, in ms
    /// (004 §III.D: twice the regular packet interval).
    pub block_timeout_ms: f64,
    /// SDUs held waiting for the link before new ones are refused.
    pub queue_limit: usize,
    /// Whether a closed block's parity frame is sent. Off only for the claims ledger's mutant
    /// "XOR FEC with parity dropped" (docs/reproduce.md): the service is then a numbered raw
    /// link that recovers nothing.
    pub parity: bool,
}

impl Default for XorFecConfig {
    fn default() -> Self {
        // WLAN defaults: 12-frame blocks; 1 Mbit/s CBR of 1000-byte packets has an 8 ms interval.
        XorFecConfig {
            block: 12,
            block_timeout_ms: 16.0,
            queue_limit: 1000,
            parity: true,
        }
    }
}

/// Bytes of `[fp][len hi][len lo]` in front of each frame's contribution to the parity.
const PREFIX: usize = 3;
/// Received frames remembered for recovery (a power of two, larger than any block).
const RING: usize = 256;

#[repr(usize)]
enum Timer {
    BlockClose,
}

/// One end of an XOR FEC service.
#[derive(Debug)]
pub struct XorFec {
    format: HeaderFormat,
    block: usize,
    timeout: Duration,
    send_parity: bool,
    // Sender.
    queue: SendQueue,
    next_tx: u64,
    block_first: u64,
    block_count: usize,
    parity: Vec<u8>,
    parity_len: usize,
    parity_pending: bool,
    timers: Timers<1>,
    // Receiver.
    ring: Vec<Option<(u64, FragPos, Vec<u8>)>>,
    next_rx: u64,
    delivered: VecDeque<Delivery>,
    stats: ServiceStats,
}

impl XorFec {
    /// An XOR FEC end. The block is clamped to `1..=min(64, modulus/4)` so a block never spans
    /// an ambiguous stretch of the sequence space.
    pub fn new(config: XorFecConfig, format: HeaderFormat) -> Self {
        let format = HeaderFormat {
            piggyback_ack: false,
            ..format
        };
        let max_block = (format.seq_space().modulus() / 4).clamp(1, 64) as usize;
        XorFec {
            format,
            block: config.block.clamp(1, max_block),
            timeout: Duration::from_secs_f64(config.block_timeout_ms / 1e3),
            send_parity: config.parity,
            queue: SendQueue::with_max_len(config.queue_limit, u16::MAX as usize),
            next_tx: 0,
            block_first: 0,
            block_count: 0,
            parity: Vec::new(),
            parity_len: 0,
            parity_pending: false,
            timers: Timers::default(),
            ring: vec![None; RING],
            next_rx: 0,
            delivered: VecDeque::new(),
            stats: ServiceStats::default(),
        }
    }

    /// The block size in use (after clamping).
    pub fn block(&self) -> usize {
        self.block
    }

    fn add_to_parity(&mut self, fp: FragPos, data: &[u8]) {
        let need = PREFIX + data.len();
        if self.parity.len() < need {
            self.parity.resize(need, 0);
        }
        self.parity_len = self.parity_len.max(need);
        let len = data.len() as u16;
        xor_into(
            &mut self.parity[..PREFIX],
            &[fp as u8, (len >> 8) as u8, len as u8],
        );
        xor_into(&mut self.parity[PREFIX..], data);
    }

    /// Starts a new block: the parity of the closed one is sent or dropped.
    fn close_block(&mut self) {
        self.parity[..self.parity_len].fill(0);
        self.parity_len = 0;
        self.parity_pending = false;
        self.block_count = 0;
        self.block_first = self.next_tx;
        self.timers.clear(Timer::BlockClose as usize);
    }

    fn emit_parity(&mut self, buf: &mut Vec<u8>) {
        let start = buf.len();
        let h = Header::Parity {
            first: self.format.seq_space().encode(self.block_first),
            count: self.block_count as u8,
        };
        let hl = self.format.header_len(&h);
        buf.resize(start + hl, 0);
        self.format.emit(&h, &mut buf[start..]);
        buf.extend_from_slice(&self.parity[..self.parity_len]);
        self.close_block();
        let n = (buf.len() - start) as u64;
        self.stats.parity_sent += 1;
        self.stats.frames_sent += 1;
        self.stats.bytes_sent += n;
        self.stats.overhead_bytes += n;
    }

    fn accept(&mut self, seq: u64, fp: FragPos, data: &[u8]) {
        let slot = &mut self.ring[seq as usize % RING];
        if matches!(slot, Some((s, _, _)) if *s == seq) {
            self.stats.duplicates += 1;
            return;
        }
        // A seq more than a ring behind the newest frame is too old to place.
        if seq + RING as u64 <= self.next_rx {
            self.stats.malformed += 1;
            return;
        }
        *slot = Some((seq, fp, data.to_vec()));
        self.next_rx = self.next_rx.max(seq + 1);
        self.stats.delivered += 1;
        self.delivered.push_back(Delivery {
            seq,
            fp,
            data: data.to_vec(),
        });
    }

    fn recover(&mut self, first: u64, count: usize, parity: &[u8]) {
        let present = |s: u64| matches!(&self.ring[s as usize % RING], Some((q, _, _)) if *q == s);
        let mut missing = (first..first + count as u64).filter(|&s| !present(s));
        let (Some(lost), None) = (missing.next(), missing.next()) else {
            return;
        };
        let mut acc = parity.to_vec();
        for s in first..first + count as u64 {
            if let Some((_, fp, data)) = &self.ring[s as usize % RING] {
                if s == lost {
                    continue;
                }
                if acc.len() < PREFIX + data.len() {
                    // A frame longer than the parity cannot belong to this block.
                    self.stats.malformed += 1;
                    return;
                }
                let len = data.len() as u16;
                xor_into(
                    &mut acc[..PREFIX],
                    &[*fp as u8, (len >> 8) as u8, len as u8],
                );
                xor_into(&mut acc[PREFIX..], data);
            }
        }
        if acc.len() < PREFIX || acc[0] > 3 {
            self.stats.malformed += 1;
            return;
        }
        let len = u16::from_be_bytes([acc[1], acc[2]]) as usize;
        if PREFIX + len > acc.len() {
            self.stats.malformed += 1;
            return;
        }
        let fp = [
            FragPos::Whole,
            FragPos::First,
            FragPos::Middle,
            FragPos::Last,
        ][acc[0] as usize];
        self.stats.recovered += 1;
        self.accept(lost, fp, &acc[PREFIX..PREFIX + len]);
    }
}

impl Service for XorFec {
    fn queued_bytes(&self) -> usize {
        self.queue.bytes()
    }

    fn name(&self) -> &'static str {
        "xor_fec"
    }

    fn handle_sdu(&mut self, _now: Instant, sdu: Sdu) -> Result<(), Sdu> {
        self.queue.offer(sdu, &mut self.stats)
    }

    fn handle_frame(&mut self, _now: Instant, frame: &[u8]) {
        self.stats.frames_received += 1;
        match self.format.parse(frame) {
            Ok((Header::Data { fp, seq, .. }, off)) => {
                let seq = self.format.seq_space().decode(seq, self.next_rx);
                self.accept(seq, fp, &frame[off..]);
            }
            Ok((Header::Parity { first, count }, off))
                if count >= 1 && count as usize <= RING / 4 =>
            {
                let first = self.format.seq_space().decode(first, self.next_rx);
                self.recover(first, count as usize, &frame[off..]);
            }
            _ => self.stats.malformed += 1,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.timers.expired(Timer::BlockClose as usize, now) && self.block_count > 0 {
            self.parity_pending = true;
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if self.parity_pending {
            if self.send_parity {
                self.emit_parity(buf);
                return true;
            }
            self.close_block();
        }
        let Some(sdu) = self.queue.pop_front() else {
            return false;
        };
        let start = buf.len();
        let h = Header::Data {
            fp: sdu.fp,
            seq: self.format.seq_space().encode(self.next_tx),
            ack: None,
        };
        let hl = self.format.header_len(&h);
        buf.resize(start + hl, 0);
        self.format.emit(&h, &mut buf[start..]);
        buf.extend_from_slice(&sdu.data);
        if self.block_count == 0 {
            self.block_first = self.next_tx;
        }
        self.add_to_parity(sdu.fp, &sdu.data);
        self.next_tx += 1;
        self.block_count += 1;
        if self.block_count >= self.block {
            self.parity_pending = true;
        } else {
            // 004 §III.D: close the block if the sender falls silent.
            self.timers
                .set(Timer::BlockClose as usize, now + self.timeout);
        }
        self.stats.frames_sent += 1;
        self.stats.bytes_sent += (buf.len() - start) as u64;
        self.stats.overhead_bytes += hl as u64;
        true
    }

    fn poll_deliver(&mut self) -> Option<Delivery> {
        self.delivered.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    fn has_transmit(&self, _now: Instant) -> bool {
        self.parity_pending || !self.queue.is_empty()
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

    fn pair(block: usize) -> (XorFec, XorFec) {
        let c = XorFecConfig {
            block,
            block_timeout_ms: 10.0,
            queue_limit: 100,
            parity: true,
        };
        let f = HeaderFormat {
            width: SeqWidth::W8,
            segmented: true,
            piggyback_ack: false,
        };
        (XorFec::new(c.clone(), f), XorFec::new(c, f))
    }

    fn frames(a: &mut XorFec, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while a.poll_transmit(now, &mut buf) {
            out.push(std::mem::take(&mut buf));
        }
        out
    }

    #[test]
    fn one_loss_per_block_is_rebuilt_exactly() {
        let (mut a, mut b) = pair(4);
        let t = Instant::ZERO;
        let sdus: Vec<Sdu> = (0..4u8)
            .map(|i| Sdu {
                fp: [
                    FragPos::First,
                    FragPos::Middle,
                    FragPos::Middle,
                    FragPos::Last,
                ][i as usize],
                data: vec![i; 1 + 3 * i as usize],
            })
            .collect();
        for s in &sdus {
            a.handle_sdu(t, s.clone()).unwrap();
        }
        let f = frames(&mut a, t);
        assert_eq!(f.len(), 5, "four data frames and one parity");
        for (i, fr) in f.iter().enumerate() {
            if i != 2 {
                b.handle_frame(t, fr);
            }
        }
        let got: Vec<Delivery> = std::iter::from_fn(|| b.poll_deliver()).collect();
        assert_eq!(got.len(), 4);
        let rebuilt = got.iter().find(|d| d.seq == 2).unwrap();
        assert_eq!((rebuilt.fp, &rebuilt.data), (sdus[2].fp, &sdus[2].data));
        assert_eq!(b.stats().recovered, 1);
        assert_eq!(a.stats().parity_sent, 1);
    }

    #[test]
    fn without_parity_nothing_is_rebuilt() {
        // The claims ledger's mutant: the same blocks, their parity dropped.
        let (mut a, mut b) = pair(4);
        a.send_parity = false;
        let t = Instant::ZERO;
        for i in 0..8u8 {
            a.handle_sdu(t, Sdu::whole(vec![i; 10])).unwrap();
        }
        let f = frames(&mut a, t);
        assert_eq!(f.len(), 8, "data frames only");
        assert_eq!(a.stats().parity_sent, 0);
        for (i, fr) in f.iter().enumerate() {
            if i != 1 {
                b.handle_frame(t, fr);
            }
        }
        assert_eq!(std::iter::from_fn(|| b.poll_deliver()).count(), 7);
        assert_eq!(b.stats().recovered, 0);
        let later = t + Duration::from_millis(50);
        a.handle_timeout(later);
        assert!(
            frames(&mut a, later).is_empty(),
            "no parity after a silence either"
        );
    }

    #[test]
    fn two_losses_in_a_block_waste_the_parity() {
        let (mut a, mut b) = pair(4);
        let t = Instant::ZERO;
        for i in 0..4u8 {
            a.handle_sdu(t, Sdu::whole(vec![i; 10])).unwrap();
        }
        for (i, fr) in frames(&mut a, t).iter().enumerate() {
            if i != 0 && i != 3 {
                b.handle_frame(t, fr);
            }
        }
        assert_eq!(std::iter::from_fn(|| b.poll_deliver()).count(), 2);
        assert_eq!(b.stats().recovered, 0);
    }

    #[test]
    fn silence_closes_the_block_with_a_timeout() {
        let (mut a, mut b) = pair(8);
        let t0 = Instant::ZERO;
        a.handle_sdu(t0, Sdu::whole(vec![1, 2, 3])).unwrap();
        a.handle_sdu(t0, Sdu::whole(vec![4])).unwrap();
        let data = frames(&mut a, t0);
        assert_eq!(data.len(), 2);
        assert_eq!(a.poll_timeout(), Some(t0 + Duration::from_millis(10)));
        a.handle_timeout(t0 + Duration::from_millis(5));
        assert!(!a.has_transmit(t0));
        let t1 = t0 + Duration::from_millis(10);
        a.handle_timeout(t1);
        let parity = frames(&mut a, t1);
        assert_eq!(parity.len(), 1);
        b.handle_frame(t1, &data[1]);
        b.handle_frame(t1, &parity[0]);
        let got: Vec<Delivery> = std::iter::from_fn(|| b.poll_deliver()).collect();
        assert_eq!(got[1].data, vec![1, 2, 3]);
        // The next block starts after the closed one.
        a.handle_sdu(t1, Sdu::whole(vec![9])).unwrap();
        let f = frames(&mut a, t1);
        b.handle_frame(t1, &f[0]);
        assert_eq!(b.poll_deliver().unwrap().seq, 2);
    }

    #[test]
    fn duplicates_and_garbage_are_counted_not_delivered() {
        let (mut a, mut b) = pair(4);
        let t = Instant::ZERO;
        a.handle_sdu(t, Sdu::whole(vec![5])).unwrap();
        let f = frames(&mut a, t);
        b.handle_frame(t, &f[0]);
        b.handle_frame(t, &f[0]);
        b.handle_frame(t, &[]);
        b.handle_frame(t, &[0xC0, 0, 0, 1, 2]); // parity of count 0
        assert_eq!(std::iter::from_fn(|| b.poll_deliver()).count(), 1);
        assert_eq!(b.stats().duplicates, 1);
        assert_eq!(b.stats().malformed, 2);
    }
}
