//! Two lock-free single-producer/single-consumer byte rings in one shared mapping, one per
//! direction, plus per-side wake-up words (futex) and closed flags.
//!
//! Contract: on the data path (`write`, `read`) there is no system call: a copy into or out
//! of the mapping, a Release store of the producer tail (the doorbell, 000 §III.A: "the
//! doorbell ... requires no operating system involvement"), and once per batch (`flush`) a
//! Release store of the consumer head and message count, a SeqCst fence and one relaxed
//! load of the peer's `waiting` flag. The producer keeps the last consumer head it saw and
//! reads the consumer's line again only when that leaves too little room, so in steady
//! state each index line is written by one side and only read by the other. Only when the peer sleeps in
//! wait-for-completion is a futex wake issued. Counters read from the mapping are
//! untrusted: a peer that corrupts them is reported as [`Corrupt`], never a panic or an
//! out-of-bounds access.
//!
//! Besides the bytes, each direction has a message counter `acked` that only its consumer
//! advances (Release) once it is done with a message, so the producer learns (Acquire) that
//! the memory a message named may be reused.
//!
//! Layout (byte offsets): 0 magic u64, 8 capacity u64; per direction d a tail at 128+256d
//! and a head at 256+256d (each on its own cache line; `acked` at 264+256d shares the head's
//! line: both are written by the consumer only); per side s an event word at
//! 640+128s and a waiting flag at 644+128s; closed flags at 896+4s; ring data of direction
//! d at 4096 + d*capacity. Direction 0 carries side 0 (connector) to side 1 (acceptor).

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::sys::{futex_wait, futex_wake, SharedMap};

/// Bytes of control block before the ring data.
pub(crate) const CTRL_BYTES: usize = 4096;
const MAGIC: u64 = u64::from_le_bytes(*b"mslinkVI");
const OFF_CAP: usize = 8;

fn off_tail(dir: usize) -> usize {
    128 + 256 * dir
}
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

/// The peer broke the ring protocol (counters out of range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt;

/// Total mapping length for a ring capacity per direction.
pub(crate) fn mapping_len(cap: usize) -> usize {
    CTRL_BYTES + 2 * cap
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
    /// The consumer head of our transmit direction as last read: the producer reloads it
    /// (a cache line the consumer writes) only when this says the ring is too full.
    head_seen: u64,
    /// Our consumer head and message count of the receive direction, published to the
    /// peer at `flush` (one store pair per batch, not one per read).
    rx_head: u64,
    rx_acked: u64,
    rx_dirty: bool,
}

impl Endpoint {
    /// Initialise a freshly created, zero-filled mapping as side 0 (connector).
    pub(crate) fn create(map: SharedMap, cap: usize) -> Option<Self> {
        if !cap.is_power_of_two() || map.len() != mapping_len(cap) {
            return None;
        }
        let ep = Self {
            map,
            cap,
            side: 0,
            dirty: false,
            head_seen: 0,
            rx_head: 0,
            rx_acked: 0,
            rx_dirty: false,
        };
        ep.u64_at(OFF_CAP).store(cap as u64, Ordering::Relaxed);
        ep.u64_at(0).store(MAGIC, Ordering::Release);
        Some(ep)
    }

    /// Attach to a mapping made by the connector, as side 1 (acceptor); checks the header.
    pub(crate) fn attach(map: SharedMap) -> Option<Self> {
        if map.len() < CTRL_BYTES {
            return None;
        }
        let probe = Self {
            map,
            cap: 0,
            side: 1,
            dirty: false,
            head_seen: 0,
            rx_head: 0,
            rx_acked: 0,
            rx_dirty: false,
        };
        if probe.u64_at(0).load(Ordering::Acquire) != MAGIC {
            return None;
        }
        let cap = usize::try_from(probe.u64_at(OFF_CAP).load(Ordering::Relaxed)).ok()?;
        if !cap.is_power_of_two() || probe.map.len() != mapping_len(cap) {
            return None;
        }
        Some(Self { cap, ..probe })
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

    /// Bytes free in the transmit ring.
    pub(crate) fn tx_space(&self) -> Result<usize, Corrupt> {
        let d = self.side;
        let head = self.u64_at(off_head(d)).load(Ordering::Acquire);
        let tail = self.u64_at(off_tail(d)).load(Ordering::Relaxed);
        let used = tail.wrapping_sub(head);
        if used > self.cap as u64 {
            return Err(Corrupt);
        }
        Ok(self.cap - used as usize)
    }

    /// Bytes free in the transmit ring, at least as many as `want` if there are (re-reads
    /// the consumer's head only when the last value seen leaves less than `want`).
    pub(crate) fn tx_free(&mut self, want: usize) -> Result<usize, Corrupt> {
        let d = self.side;
        let tail = self.u64_at(off_tail(d)).load(Ordering::Relaxed);
        let mut used = tail.wrapping_sub(self.head_seen);
        if used > self.cap as u64 || self.cap - (used as usize) < want {
            self.head_seen = self.u64_at(off_head(d)).load(Ordering::Acquire);
            used = tail.wrapping_sub(self.head_seen);
            if used > self.cap as u64 {
                return Err(Corrupt);
            }
        }
        Ok(self.cap - used as usize)
    }

    /// Bytes waiting in the receive ring.
    pub(crate) fn rx_available(&self) -> Result<usize, Corrupt> {
        let d = self.peer();
        let tail = self.u64_at(off_tail(d)).load(Ordering::Acquire);
        let avail = tail.wrapping_sub(self.rx_head);
        if avail > self.cap as u64 {
            return Err(Corrupt);
        }
        Ok(avail as usize)
    }

    /// Copy as much of `bufs` (in order) as fits into the transmit ring and publish it.
    /// Returns the number of bytes written (0 when the ring is full).
    pub(crate) fn write(&mut self, bufs: &[&[u8]]) -> Result<usize, Corrupt> {
        let space = self.tx_free(bufs.iter().map(|b| b.len()).sum())?;
        let d = self.side;
        let tail = self.u64_at(off_tail(d)).load(Ordering::Relaxed);
        let mask = self.cap - 1;
        let base = self.data(d);
        let mut written = 0usize;
        for b in bufs {
            if written == space {
                break;
            }
            let n = b.len().min(space - written);
            let start = (tail as usize).wrapping_add(written) & mask;
            let first = n.min(self.cap - start);
            // SAFETY: [start, start+first) and [0, n-first) lie inside this direction's ring
            // data (start < cap, first <= cap-start, n-first < cap); the consumer does not
            // touch bytes between head and head+cap not yet published, and `b` is a
            // distinct local buffer, so the ranges do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(b.as_ptr(), base.add(start), first);
                std::ptr::copy_nonoverlapping(b.as_ptr().add(first), base, n - first);
            }
            written += n;
        }
        if written > 0 {
            self.u64_at(off_tail(d))
                .store(tail.wrapping_add(written as u64), Ordering::Release);
            self.dirty = true;
        }
        Ok(written)
    }

    /// Copy up to `out.len()` published bytes out of the receive ring and free them.
    pub(crate) fn read(&mut self, out: &mut [u8]) -> Result<usize, Corrupt> {
        let avail = self.rx_available()?;
        let n = avail.min(out.len());
        if n == 0 {
            return Ok(0);
        }
        let d = self.peer();
        let head = self.rx_head;
        let mask = self.cap - 1;
        let start = head as usize & mask;
        let first = n.min(self.cap - start);
        let base = self.data(d);
        // SAFETY: the n bytes from head were published by the producer (Acquire load of its
        // tail in rx_available) and stay untouched until we advance head; both pieces lie in
        // the ring data; `out` is a distinct local buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(base.add(start), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(base, out.as_mut_ptr().add(first), n - first);
        }
        self.rx_head = head.wrapping_add(n as u64);
        self.rx_dirty = true;
        Ok(n)
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

    /// After a batch of `write`/`read` calls: publish the receive head and message count
    /// (Release: our reads of the bytes and of the memory they named happened before), then
    /// wake the peer if it sleeps (one fence per batch instead of one per call). Must run
    /// before this side blocks.
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

    #[test]
    fn random_chunks_arrive_in_order_across_wraps() {
        let (mut a, mut b) = pair(64, "chunks");
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let sent: Vec<u8> = (0..10_000).map(|_| rng.gen()).collect();
        let (mut w, mut got) = (0usize, Vec::new());
        while got.len() < sent.len() {
            let k = rng.gen_range(0..=100).min(sent.len() - w);
            let (x, y) = sent[w..w + k].split_at(k / 2);
            w += a.write(&[x, y]).unwrap();
            a.flush();
            let mut buf = vec![0u8; rng.gen_range(1..=100)];
            let n = b.read(&mut buf).unwrap();
            b.flush();
            got.extend_from_slice(&buf[..n]);
            assert!(a.tx_space().unwrap() + b.rx_available().unwrap() == 64);
        }
        assert_eq!(got, sent);
    }

    #[test]
    fn full_ring_takes_nothing_and_corrupt_counters_are_reported() {
        let (mut a, b) = pair(64, "full");
        assert_eq!(a.write(&[&[1u8; 100]]).unwrap(), 64);
        assert_eq!(a.write(&[&[1u8; 1]]).unwrap(), 0);
        // A peer that moves its head past our tail, or its tail past a ring's worth, is
        // caught, not trusted.
        b.u64_at(off_head(0)).store(1_000, Ordering::Relaxed);
        assert_eq!(a.tx_space(), Err(Corrupt));
        assert_eq!(a.tx_free(1), Err(Corrupt));
        a.u64_at(off_tail(0)).store(1_000, Ordering::Relaxed);
        assert_eq!(b.rx_available(), Err(Corrupt));
        // Header checks: a mapping with the wrong length is refused.
        assert!(Endpoint::attach(SharedMap::map(&tmp(100), 100).unwrap()).is_none());
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
