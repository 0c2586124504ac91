//! Two lock-free single-producer/single-consumer record rings in one shared mapping, one
//! per direction, plus per-side wake-up words (futex) and closed flags.
//!
//! Contract: a message travels as one record of whole cache lines (64 bytes). Every line
//! starts with a control word: the first line's is the record's *stamp* (its message
//! number, counted from 1, with the record's kind bits in the top byte), followed by two
//! u32 words the caller gives (VI: length and immediate data) and the first 48 body bytes;
//! each further line's is the continuation mark, followed by 56 body bytes. The producer
//! writes everything else first and the stamp last (Release), and the consumer spins on the
//! control word where the next record must start (Acquire), so the line that signals a
//! message is the line that carries it: there is no separate tail index, whose cache line
//! would be one more to move between the cores per message (000 §III.A: "the doorbell ...
//! requires no operating system involvement"; here not even a separate store). A stale
//! control word can never pass for the expected stamp: it is 0 (never written), a
//! continuation mark, or the stamp of an older record, whose number is smaller. So the
//! consumer never writes to a ring line, and each line's cache line moves one way only.
//!
//! On the data path there is no system call: a copy into or out of the mapping and the
//! stamp store, and once per batch (`flush`) a Release store of the consumer head and
//! message count, a SeqCst fence and one relaxed load of the peer's `waiting` flag. The
//! producer keeps the last consumer head it saw and reads the consumer's line again only
//! when that leaves too little room, so in steady state the index line is written by the
//! consumer and read by the producer once per ring's worth. Only when the peer sleeps in
//! wait-for-completion is a futex wake issued. Everything read from the mapping is
//! untrusted: a peer that corrupts a head, a stamp or a length is reported as [`Corrupt`],
//! never a panic or an out-of-bounds access.
//!
//! Besides the bytes, each direction has a message counter `acked` that only its consumer
//! advances (Release) once it is done with a message, so the producer learns (Acquire) that
//! the memory a message named may be reused.
//!
//! Layout (byte offsets): 0 magic u64, 8 capacity u64; per direction d a head at 256+256d
//! and `acked` at 264+256d (one line, written by the consumer only); per side s an event
//! word at 640+128s and a waiting flag at 644+128s; closed flags at 896+4s; ring data of
//! direction d at 4096 + d*capacity. Direction 0 carries side 0 (connector) to side 1
//! (acceptor).

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::sys::{futex_wait, futex_wake, SharedMap};

/// Bytes of control block before the ring data.
pub(crate) const CTRL_BYTES: usize = 4096;
const MAGIC: u64 = u64::from_le_bytes(*b"mslinkV2");
const OFF_CAP: usize = 8;
/// Records are whole cache lines.
pub(crate) const LINE: usize = 64;
/// Body bytes in a record's first line (after the stamp and the two words).
const FIRST_BODY: usize = LINE - 16;
/// Body bytes in each further line (after the continuation mark).
const MORE_BODY: usize = LINE - 8;
/// The stamp's message number (the low 56 bits); the top byte is the record's kind bits.
const K_MASK: u64 = (1 << 56) - 1;
/// The control word of a record's second and later lines.
const CONT: u64 = 0x80 << 56;
/// Kind bits the caller may give (the top bit is the continuation mark's).
pub(crate) const KIND_BITS: u8 = 0x7f;

fn off_head(dir: usize) -> usize {
    256 + 256 * dir
}
fn off_acked(dir: usize) -> usize {
    264 + 256 * dir
}
fn off_event(side: usize) -> usize {
    640 + 128 * side
}
fn off_waiting(side: usize) -> usize {
    644 + 128 * side
}
fn off_closed(side: usize) -> usize {
    896 + 4 * side
}

/// The ring bytes a record with a body of `body` bytes takes (whole lines).
pub(crate) fn record_len(body: usize) -> usize {
    LINE * (1 + body.saturating_sub(FIRST_BODY).div_ceil(MORE_BODY))
}

/// Where body byte `off` of a record lies, as (line, byte within the line), and how many
/// body bytes follow it on that line.
fn body_at(off: usize) -> (usize, usize, usize) {
    if off < FIRST_BODY {
        (0, 16 + off, FIRST_BODY - off)
    } else {
        let o = off - FIRST_BODY;
        (
            1 + o / MORE_BODY,
            8 + o % MORE_BODY,
            MORE_BODY - o % MORE_BODY,
        )
    }
}

/// The message number after `k` (0 is skipped: a stamp word of 0 means "no record").
fn next_k(k: u64) -> u64 {
    match (k + 1) & K_MASK {
        0 => 1,
        n => n,
    }
}

/// The peer broke the ring protocol (counters, stamps or lengths out of range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt;

/// Total mapping length for a ring capacity per direction.
pub(crate) fn mapping_len(cap: usize) -> usize {
    CTRL_BYTES + 2 * cap
}

/// The head of the record at the consumer's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecHead {
    /// The kind bits the producer gave.
    pub(crate) kind: u8,
    /// The two words the producer gave (VI: payload length and immediate data).
    pub(crate) words: [u32; 2],
}

/// One side's view of the shared rings: it produces into direction `side` and consumes
/// direction `1 - side`.
#[derive(Debug)]
pub(crate) struct Endpoint {
    map: SharedMap,
    cap: usize,
    side: usize,
    /// Something was published since the last `flush` (the peer may need a wake-up).
    dirty: bool,
    /// Where our next record starts (running byte count) and its message number.
    tx_pos: u64,
    tx_k: u64,
    /// The consumer head of our transmit direction as last read: the producer reloads it
    /// (a cache line the consumer writes) only when this says the ring is too full.
    head_seen: u64,
    /// Where the peer's next record starts, and the number its stamp must carry.
    rx_pos: u64,
    rx_k: u64,
    /// Our consumer head and message count of the receive direction as published to the
    /// peer at `flush` (one store pair per batch, not one per record).
    rx_head: u64,
    rx_acked: u64,
    rx_dirty: bool,
}

impl Endpoint {
    fn new(map: SharedMap, cap: usize, side: usize) -> Self {
        Self {
            map,
            cap,
            side,
            dirty: false,
            tx_pos: 0,
            tx_k: 1,
            head_seen: 0,
            rx_pos: 0,
            rx_k: 1,
            rx_head: 0,
            rx_acked: 0,
            rx_dirty: false,
        }
    }

    /// Initialise a freshly created, zero-filled mapping as side 0 (connector).
    pub(crate) fn create(map: SharedMap, cap: usize) -> Option<Self> {
        if !cap.is_power_of_two() || cap < LINE || map.len() != mapping_len(cap) {
            return None;
        }
        let ep = Self::new(map, cap, 0);
        ep.u64_at(OFF_CAP).store(cap as u64, Ordering::Relaxed);
        ep.u64_at(0).store(MAGIC, Ordering::Release);
        Some(ep)
    }

    /// Attach to a mapping made by the connector, as side 1 (acceptor); checks the header.
    pub(crate) fn attach(map: SharedMap) -> Option<Self> {
        if map.len() < CTRL_BYTES {
            return None;
        }
        let probe = Self::new(map, 0, 1);
        if probe.u64_at(0).load(Ordering::Acquire) != MAGIC {
            return None;
        }
        let cap = usize::try_from(probe.u64_at(OFF_CAP).load(Ordering::Relaxed)).ok()?;
        if !cap.is_power_of_two() || cap < LINE || probe.map.len() != mapping_len(cap) {
            return None;
        }
        Some(Self { cap, ..probe })
    }

    /// Ring bytes per direction.
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off + 8 <= CTRL_BYTES && off % 8 == 0);
        // SAFETY: off is a constant 8-aligned offset inside the control block, which lies in
        // the live mapping (len >= CTRL_BYTES, page-aligned base); AtomicU64 has the layout
        // of u64 and every access to this word, from either process, is atomic.
        unsafe { &*(self.map.ptr().add(off) as *const AtomicU64) }
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off + 4 <= CTRL_BYTES && off % 4 == 0);
        // SAFETY: as in u64_at, for a 4-aligned u32 word.
        unsafe { &*(self.map.ptr().add(off) as *const AtomicU32) }
    }

    fn data(&self, dir: usize) -> *mut u8 {
        // SAFETY: CTRL_BYTES + dir*cap (+cap) is within the mapping (len = CTRL + 2*cap).
        unsafe { self.map.ptr().add(CTRL_BYTES + dir * self.cap) }
    }

    fn peer(&self) -> usize {
        1 - self.side
    }

    /// Bytes free in the transmit ring, from the consumer's head as it is now.
    pub(crate) fn tx_space(&self) -> Result<usize, Corrupt> {
        let head = self.u64_at(off_head(self.side)).load(Ordering::Acquire);
        let used = self.tx_pos.wrapping_sub(head);
        if used > self.cap as u64 {
            return Err(Corrupt);
        }
        Ok(self.cap - used as usize)
    }

    /// Is there room for a record of `len` ring bytes (see [`record_len`])? Re-reads the
    /// consumer's head only when the last value seen leaves too little.
    pub(crate) fn tx_fits(&mut self, len: usize) -> Result<bool, Corrupt> {
        let used = self.tx_pos.wrapping_sub(self.head_seen);
        if used > self.cap as u64 || self.cap - (used as usize) < len {
            self.head_seen = self.u64_at(off_head(self.side)).load(Ordering::Acquire);
            let used = self.tx_pos.wrapping_sub(self.head_seen);
            if used > self.cap as u64 {
                return Err(Corrupt);
            }
            return Ok(self.cap - used as usize >= len);
        }
        Ok(true)
    }

    /// Line `line` of the record at running position `rec` of direction `dir`: a pointer
    /// to its first byte. Lines never straddle the ring's end (the capacity is a multiple
    /// of LINE and records start on a line).
    fn line(&self, dir: usize, rec: u64, line: usize) -> *mut u8 {
        let at = (rec as usize).wrapping_add(line * LINE) & (self.cap - 1);
        // SAFETY: at < cap is a multiple of LINE, so [at, at+LINE) lies in this direction's
        // ring data.
        unsafe { self.data(dir).add(at) }
    }

    /// The control word of line `line` of the record at `rec` in direction `dir`.
    fn control(&self, dir: usize, rec: u64, line: usize) -> &AtomicU64 {
        // SAFETY: a line starts 64-aligned inside the mapping (whose data starts on a
        // page), so the word is aligned and in bounds; both processes access control words
        // only atomically.
        unsafe { &*(self.line(dir, rec, line) as *const AtomicU64) }
    }

    /// Publish one record: its two words and the bytes of `body` (gathered, in order),
    /// then its stamp. The caller checked [`Endpoint::tx_fits`] for
    /// `record_len(body length)`. Returns the record's message number.
    pub(crate) fn publish(&mut self, kind: u8, words: [u32; 2], body: &[&[u8]]) -> u64 {
        let (at, d) = (self.tx_pos, self.side);
        let total: usize = body.iter().map(|b| b.len()).sum();
        let len = record_len(total);
        for line in 1..len / LINE {
            self.control(d, at, line).store(CONT, Ordering::Relaxed);
        }
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&words[0].to_le_bytes());
        head[4..].copy_from_slice(&words[1].to_le_bytes());
        // SAFETY: bytes 8..16 of the record's first line, in our ring data; the consumer
        // reads them only after the stamp below.
        unsafe { std::ptr::copy_nonoverlapping(head.as_ptr(), self.line(d, at, 0).add(8), 8) };
        let mut off = 0;
        for b in body {
            let mut b: &[u8] = b;
            while !b.is_empty() {
                let (line, byte, room) = body_at(off);
                let n = room.min(b.len());
                // SAFETY: byte + n <= LINE, so the piece lies in one line of this record,
                // which is ours to write until the stamp publishes it; `b` is a distinct
                // buffer of the caller's.
                unsafe {
                    std::ptr::copy_nonoverlapping(b.as_ptr(), self.line(d, at, line).add(byte), n)
                };
                off += n;
                b = &b[n..];
            }
        }
        let k = self.tx_k;
        self.control(d, at, 0)
            .store(k | u64::from(kind & KIND_BITS) << 56, Ordering::Release);
        self.tx_k = next_k(k);
        self.tx_pos = at + len as u64;
        self.dirty = true;
        k
    }

    /// The head of the record at the consumer's position, once its stamp is there
    /// (Acquire: the lines written before it are visible). A stale control word (0, a
    /// continuation mark, an older stamp) is "not yet"; a stamp from the future is
    /// `Corrupt`.
    pub(crate) fn peek(&self) -> Result<Option<RecHead>, Corrupt> {
        let d = self.peer();
        let stamp = self.control(d, self.rx_pos, 0).load(Ordering::Acquire);
        let k = stamp & K_MASK;
        if k != self.rx_k {
            // Older numbers are behind rx_k by less than half the number space.
            let behind = self.rx_k.wrapping_sub(k) & K_MASK;
            return if stamp == 0 || stamp & CONT != 0 || behind < 1 << 55 {
                Ok(None)
            } else {
                Err(Corrupt)
            };
        }
        // The record's second line, if it has one, is the next cache miss: start it now,
        // under the work of taking the head.
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is only a hint; the address lies in our ring data.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(self.line(
                d,
                self.rx_pos,
                1,
            )
                as *const i8)
        };
        let mut w = [0u8; 8];
        // SAFETY: bytes 8..16 of the record's first line, published by the stamp.
        unsafe {
            std::ptr::copy_nonoverlapping(self.line(d, self.rx_pos, 0).add(8), w.as_mut_ptr(), 8)
        };
        Ok(Some(RecHead {
            kind: (stamp >> 56) as u8,
            words: [
                u32::from_le_bytes([w[0], w[1], w[2], w[3]]),
                u32::from_le_bytes([w[4], w[5], w[6], w[7]]),
            ],
        }))
    }

    /// Copy body bytes `[at, at + out.len())` of the record at the consumer's position into
    /// `out`; `Corrupt` if that range is not inside a record that fits the ring.
    pub(crate) fn read_body(&self, at: usize, out: &mut [u8]) -> Result<(), Corrupt> {
        let end = at.checked_add(out.len()).ok_or(Corrupt)?;
        if record_len(end) > self.cap {
            return Err(Corrupt);
        }
        let d = self.peer();
        let (mut off, mut done) = (at, 0);
        while done < out.len() {
            let (line, byte, room) = body_at(off);
            let n = room.min(out.len() - done);
            // SAFETY: the piece lies in one line of a record that fits the ring (checked
            // above), published by its stamp and not rewritten before we free it; `out` is
            // a distinct buffer of ours.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.line(d, self.rx_pos, line).add(byte),
                    out.as_mut_ptr().add(done),
                    n,
                )
            };
            off += n;
            done += n;
        }
        Ok(())
    }

    /// Done with the record at the consumer's position, whose body is `body` bytes: step
    /// past it (the space is freed to the producer at `flush`).
    pub(crate) fn consume(&mut self, body: usize) -> Result<(), Corrupt> {
        let len = record_len(body);
        if len > self.cap {
            return Err(Corrupt);
        }
        self.rx_pos += len as u64;
        self.rx_k = next_k(self.rx_k);
        self.rx_head = self.rx_pos;
        self.rx_dirty = true;
        Ok(())
    }

    /// Records published so far in our transmit direction.
    pub(crate) fn published(&self) -> u64 {
        self.tx_k - 1
    }

    /// Messages of our transmit direction the peer has finished with (Acquire: its reads of
    /// the memory they named happened before).
    pub(crate) fn acked(&self) -> u64 {
        self.u64_at(off_acked(self.side)).load(Ordering::Acquire)
    }

    /// Tell the peer we are done with one more of its messages (and wake it at `flush`).
    pub(crate) fn ack_one(&mut self) {
        self.rx_acked = self.rx_acked.wrapping_add(1);
        self.rx_dirty = true;
    }

    /// Is a `flush` owed (something published or consumed since the last one)?
    pub(crate) fn owes_flush(&self) -> bool {
        self.dirty || self.rx_dirty
    }

    /// After a batch of `publish`/`consume` calls: publish the receive head and message
    /// count (Release: our reads of the records and of the memory they named, and the
    /// cleared stamps, happened before), then wake the peer if it sleeps (one fence per
    /// batch instead of one per call). Must run before this side blocks.
    pub(crate) fn flush(&mut self) {
        if self.rx_dirty {
            self.rx_dirty = false;
            let d = self.peer();
            self.u64_at(off_head(d))
                .store(self.rx_head, Ordering::Release);
            self.u64_at(off_acked(d))
                .store(self.rx_acked, Ordering::Release);
            self.dirty = true;
        }
        if self.dirty {
            self.dirty = false;
            self.notify(self.peer());
        }
    }

    /// Wake `side` if it sleeps in [`Endpoint::wait`]; no system call otherwise.
    fn notify(&self, side: usize) {
        fence(Ordering::SeqCst);
        if self.u32_at(off_waiting(side)).load(Ordering::Relaxed) != 0 {
            self.u32_at(off_event(side)).fetch_add(1, Ordering::SeqCst);
            futex_wake(self.u32_at(off_event(side)));
        }
    }

    /// Mark this side closed (orderly disconnect) and wake the peer.
    pub(crate) fn set_closed(&self) {
        self.u32_at(off_closed(self.side))
            .store(1, Ordering::SeqCst);
        self.u32_at(off_event(self.peer()))
            .fetch_add(1, Ordering::SeqCst);
        futex_wake(self.u32_at(off_event(self.peer())));
    }

    /// Has the peer disconnected in order?
    pub(crate) fn peer_closed(&self) -> bool {
        self.u32_at(off_closed(self.peer())).load(Ordering::SeqCst) != 0
    }

    /// Sleep until `ready` holds, the peer closes, or `timeout`. The Dekker-style handshake
    /// with `notify` (flag store, SeqCst fence, then `ready` evaluated) means a wake-up
    /// cannot be lost: any change the peer publishes (and then `flush`es) after that either
    /// makes `ready` true or wakes us. A spurious early return is allowed.
    pub(crate) fn wait_until(
        &mut self,
        timeout: Duration,
        ready: impl Fn(&Self) -> Result<bool, Corrupt>,
    ) -> Result<(), Corrupt> {
        self.flush();
        let me = self.side;
        self.u32_at(off_waiting(me)).store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let e = self.u32_at(off_event(me)).load(Ordering::SeqCst);
        let ready = ready(self)? || self.peer_closed();
        if !ready {
            futex_wait(self.u32_at(off_event(me)), e, timeout);
        }
        self.u32_at(off_waiting(me)).store(0, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::fs::OpenOptions;

    /// Two endpoints over two mappings of one file, as two processes would have.
    fn pair(cap: usize, name: &str) -> (Endpoint, Endpoint) {
        let path = std::env::temp_dir().join(format!("mslink-ring-{}-{name}", std::process::id()));
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.set_len(mapping_len(cap) as u64).unwrap();
        let a = Endpoint::create(SharedMap::map(&f, mapping_len(cap)).unwrap(), cap).unwrap();
        let b = Endpoint::attach(SharedMap::map(&f, mapping_len(cap)).unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        (a, b)
    }

    /// Records of random sizes (empty to a whole ring) and contents arrive whole and in
    /// order across many wraps, read back in random pieces, with the producer refused
    /// exactly while the ring lacks room and the consumer frees space in random batches.
    #[test]
    fn random_records_arrive_whole_and_in_order_across_wraps() {
        let cap = 256;
        let (mut a, mut b) = pair(cap, "records");
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut sent: std::collections::VecDeque<(u8, [u32; 2], Vec<u8>)> = Default::default();
        let (mut published, mut received) = (0u64, 0u64);
        while received < 5_000 {
            if rng.gen_bool(0.5) {
                let len = rng.gen_range(0..=FIRST_BODY + 3 * MORE_BODY);
                let body: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                let (kind, words) = (rng.gen::<u8>() & KIND_BITS, [len as u32, rng.gen()]);
                let room = a.tx_space().unwrap() >= record_len(len);
                assert_eq!(a.tx_fits(record_len(len)).unwrap(), room);
                if room {
                    let (x, y) = body.split_at(rng.gen_range(0..=len));
                    published += 1;
                    assert_eq!(a.publish(kind, words, &[x, y]), published);
                    sent.push_back((kind, words, body));
                }
                if rng.gen_bool(0.3) {
                    a.flush();
                }
            } else if let Some(h) = b.peek().unwrap() {
                let (kind, words, body) = sent.pop_front().expect("a record was sent");
                assert_eq!((h.kind, h.words), (kind, words));
                let mut got = vec![0u8; body.len()];
                let cut = rng.gen_range(0..=body.len());
                b.read_body(0, &mut got[..cut]).unwrap();
                b.read_body(cut, &mut got[cut..]).unwrap();
                assert_eq!(got, body);
                b.consume(body.len()).unwrap();
                b.ack_one();
                received += 1;
                if rng.gen_bool(0.5) {
                    b.flush();
                }
            } else {
                assert!(sent.is_empty(), "a published record must be visible");
                b.flush();
            }
        }
        b.flush();
        assert_eq!(a.acked(), received);
    }

    /// A full ring refuses a record; a peer that moves its head past our position, stamps a
    /// record with the wrong number, or names a body longer than a ring is caught, not
    /// trusted.
    #[test]
    fn full_ring_refuses_and_corrupt_peers_are_reported() {
        let (mut a, mut b) = pair(256, "full");
        assert!(a.tx_fits(256).unwrap());
        assert!(!a.tx_fits(257).unwrap());
        a.publish(0, [0, 0], &[&[1u8; 200]]);
        assert!(!a.tx_fits(64).unwrap());
        assert_eq!(b.peek().unwrap().map(|h| h.words), Some([0, 0]));
        assert_eq!(b.read_body(200, &mut [0u8; 41]), Err(Corrupt));
        b.consume(200).unwrap();
        b.flush();
        assert!(a.tx_fits(256).unwrap());
        assert_eq!(b.consume(241), Err(Corrupt));
        b.u64_at(off_head(0)).store(1_000, Ordering::Relaxed);
        assert_eq!(a.tx_space(), Err(Corrupt));
        // (The producer re-reads the head only when its last view leaves too little room.)
        assert_eq!(a.tx_fits(257), Err(Corrupt));
        // Stale control words are "not yet"; a stamp from the future is corrupt.
        for stale in [0, CONT | 7, 1] {
            a.control(0, a.tx_pos, 0).store(stale, Ordering::Release);
            assert_eq!(b.peek(), Ok(None));
        }
        a.control(0, a.tx_pos, 0).store(5, Ordering::Release);
        assert_eq!(b.peek(), Err(Corrupt));
        // Header checks: a mapping with the wrong length is refused.
        assert!(Endpoint::attach(SharedMap::map(&tmp(100), 100).unwrap()).is_none());
    }

    /// The consumer never writes to a ring line: reading and freeing records leaves the
    /// direction's bytes as the producer wrote them, so each line moves one way only. (A
    /// consumer that cleared stamps, as a first version did, fails this.)
    #[test]
    fn the_consumer_only_reads_ring_lines() {
        let cap = 1024;
        let (mut a, mut b) = pair(cap, "readonly");
        let ring = |e: &Endpoint| {
            // SAFETY: direction 0's ring data, cap bytes inside the mapping; only this
            // thread touches the mapping during the test.
            unsafe { std::slice::from_raw_parts(e.data(0), cap) }.to_vec()
        };
        for round in 0..40u8 {
            let body = vec![round; usize::from(round) * 7];
            assert!(a.tx_fits(record_len(body.len())).unwrap());
            a.publish(KIND_BITS & round, [body.len() as u32, 0], &[&body]);
            a.flush();
            let before = ring(&a);
            let h = b.peek().unwrap().expect("published");
            let mut got = vec![0u8; h.words[0] as usize];
            b.read_body(0, &mut got).unwrap();
            b.consume(got.len()).unwrap();
            b.flush();
            assert_eq!(got, body);
            assert!(
                ring(&a) == before,
                "round {round}: the consumer wrote to the ring"
            );
        }
    }

    fn tmp(len: u64) -> std::fs::File {
        let path = std::env::temp_dir().join(format!("mslink-ring-{}-tmp", std::process::id()));
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.set_len(len).unwrap();
        std::fs::remove_file(&path).unwrap();
        f
    }
}
