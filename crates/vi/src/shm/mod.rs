//! Shared-memory backend: two processes on one host exchange messages through the rings of
//! `ring.rs` in a file mapped by both, after a rendezvous over a Unix-domain socket.
//!
//! Contract: connect/accept (control path, like the VI kernel agent of 000 §III.A) go
//! through the kernel: the connector creates `/dev/shm/mslink-vi-*`, sends its name over
//! the Unix socket, waits for the acceptor's one-byte ack, then unlinks the file so nothing
//! is left behind. The socket stays open for the life of the connection only as a liveness
//! signal: when the peer process dies the kernel closes it, and the survivor sees a
//! hang-up and reports `PeerGone` (after draining what the peer had already published)
//! instead of waiting forever.
//!
//! One copy per message (000 §III.A: the VI NIC moves data from the sender's registered
//! memory into the receiver's posted buffer with no intermediate copy). A message longer
//! than `inline_max` does not travel through the ring: the ring carries a small record —
//! payload length, immediate data, and the sender's gather list as (region id, offset,
//! length) — and the receiver copies the payload straight from the sender's registered
//! region (a sealed memfd, mapped read-only here) into its posted receive buffers, then
//! advances the direction's `acked` counter; the send completes when the sender sees it (as
//! a VI reliable-delivery send completes once the data reached the remote end), so it needs
//! the receiver's provider to run. A message of at most `inline_max` bytes rides inline
//! behind its record, streamed through the ring (two copies, like verbs' inline sends), and
//! its send completes once it is all in the ring. The first time a region is
//! named on a connection its memfd crosses the Unix socket (`SCM_RIGHTS`, before the record
//! is published, so it is there when the receiver looks); that is the only socket traffic
//! after connect, and a region is mapped once per connection. Records, region ids, offsets
//! and lengths from the peer are untrusted: anything out of range is `Corrupt`, never an
//! out-of-bounds read. A message that finds no receive descriptor is still read into scratch
//! and discarded (counted as `NoRecvDescriptor` by the NIC). A send flushed by a local
//! disconnect may still be delivered if its record was already published.

pub(crate) mod ring;

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::sys::{poll_fd, recv_fd, send_fd, SharedMap};
use crate::wire::{RegionRef, Wire, WireBuf, WireError};
use ring::{mapping_len, Endpoint};

const SHM_PREFIX: &str = "/dev/shm/mslink-vi-";
/// Longest slice of a blocking wait before the peer's liveness is checked again.
const WAIT_SLICE: Duration = Duration::from_millis(20);

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name no other caller in this process (and no other live process) gets:
/// `{stem}{pid}-{n}` with `n` counting up per process. Two threads (parallel tests, a
/// benchmark server and its call-cost table) that each need a rendezvous socket or mapping
/// never collide, as they did with the pid alone.
pub(crate) fn unique_name(stem: &str) -> String {
    format!(
        "{stem}{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// Bytes of a message record before its segments: payload length u32, immediate u32,
/// segment count u32, kind u32 (0: by reference, segments follow; 1: inline, the payload
/// follows), little-endian.
const REC_HEAD: usize = 16;
/// Bytes of one segment in a record: region id u32, length u32, offset u64.
const REC_SEG: usize = 16;
/// Bytes of a region announcement on the Unix socket (with its memfd): id u32, length u64.
const ANNOUNCE: usize = 12;
/// Smallest ring: room for the largest record (4 segments, 80 bytes).
pub(crate) const MIN_RING: usize = 128;

/// A message being received: its wire header (handed to the NIC first) and where its
/// payload lies in the peer's regions.
#[derive(Debug)]
struct RxMsg {
    hdr: [u8; crate::HEADER_BYTES],
    hdr_given: usize,
    len: usize,
    /// Payload bytes handed out so far.
    pos: usize,
    segs: [(u32, u64, usize); crate::MAX_SEGMENTS],
    nseg: usize,
    /// The payload follows in the ring.
    inline: bool,
}

/// One published message the sender waits on: (message number, wire bytes, inline, all of
/// it in the ring).
#[derive(Debug, Clone, Copy)]
struct Sent {
    k: u64,
    bytes: usize,
    inline: bool,
    written: bool,
}

/// The rest of an inline message that did not fit the ring yet: pieces of registered memory
/// (pinned until the send completes, as for io_uring) and how much of them is written.
#[derive(Debug)]
struct Pending {
    parts: [(usize, usize); crate::MAX_SEGMENTS],
    nparts: usize,
    done: usize,
}

/// A connected shared-memory pipe.
#[derive(Debug)]
pub(crate) struct ShmWire {
    ep: Endpoint,
    ctrl: UnixStream,
    /// Our regions whose memfd the peer has.
    announced: HashSet<u32>,
    /// The peer's regions, mapped read-only here.
    peer_regions: HashMap<u32, SharedMap>,
    /// Sent messages not yet reported to the NIC, in order.
    inflight: VecDeque<Sent>,
    /// An inline message still being streamed into the ring.
    pending: Option<Pending>,
    /// Longest payload sent inline.
    inline_max: usize,
    /// Messages published so far.
    published: u64,
    /// The message being received.
    rx: Option<RxMsg>,
    /// Ring space a refused submit needs (0: none refused).
    blocked: usize,
}

/// Connect to the acceptor listening on the Unix socket `path`, with rings of `cap` bytes
/// per direction (a power of two), sending payloads of at most `inline_max` bytes inline.
pub(crate) fn connect(
    path: &str,
    cap: usize,
    inline_max: usize,
    timeout: Duration,
) -> io::Result<ShmWire> {
    if !cap.is_power_of_two() || cap < MIN_RING {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "ring size must be a power of two >= 128",
        ));
    }
    let mut ctrl = UnixStream::connect(path)?;
    ctrl.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{}-{nanos}", unique_name(SHM_PREFIX));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&name)?;
    let result = (|| {
        file.set_len(mapping_len(cap) as u64)?;
        let map = SharedMap::map(&file, mapping_len(cap))?;
        let ep = Endpoint::create(map, cap).ok_or_else(|| invalid("bad ring geometry"))?;
        let len = u16::try_from(name.len()).map_err(|_| invalid("name too long"))?;
        ctrl.write_all(&len.to_le_bytes())?;
        ctrl.write_all(name.as_bytes())?;
        let mut ack = [0u8; 1];
        ctrl.read_exact(&mut ack)?;
        if ack[0] != 1 {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "acceptor refused the mapping",
            ));
        }
        ctrl.set_nonblocking(true)?;
        Ok(ShmWire::new(ep, ctrl, inline_max))
    })();
    let _ = std::fs::remove_file(&name);
    result
}

/// Accept one connection on `listener`, waiting at most `timeout`, sending payloads of at
/// most `inline_max` bytes inline.
pub(crate) fn accept(
    listener: &UnixListener,
    inline_max: usize,
    timeout: Duration,
) -> io::Result<ShmWire> {
    let ev = poll_fd(listener.as_raw_fd(), false, timeout)?;
    if !ev.readable {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no connect request",
        ));
    }
    let (mut ctrl, _) = listener.accept()?;
    ctrl.set_nonblocking(false)?;
    ctrl.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    let mut len = [0u8; 2];
    ctrl.read_exact(&mut len)?;
    let mut name = vec![0u8; u16::from_le_bytes(len) as usize];
    ctrl.read_exact(&mut name)?;
    let name = String::from_utf8(name).map_err(|_| invalid("mapping name not UTF-8"))?;
    if !name.starts_with(SHM_PREFIX) || name.contains("..") {
        let _ = ctrl.write_all(&[0]);
        return Err(invalid("unexpected mapping name"));
    }
    // No symlinks: /dev/shm is world-writable, the name comes from the peer.
    let file: File = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&name)?;
    if !file.metadata()?.file_type().is_file() {
        let _ = ctrl.write_all(&[0]);
        return Err(invalid("mapping is not a regular file"));
    }
    let len = usize::try_from(file.metadata()?.len()).map_err(|_| invalid("mapping too big"))?;
    let map = SharedMap::map(&file, len)?;
    let Some(ep) = Endpoint::attach(map) else {
        let _ = ctrl.write_all(&[0]);
        return Err(invalid("shared mapping header invalid"));
    };
    ctrl.write_all(&[1])?;
    ctrl.set_nonblocking(true)?;
    Ok(ShmWire::new(ep, ctrl, inline_max))
}

impl Drop for ShmWire {
    /// A connection dropped without `disconnect` still closes in order (the peer sees
    /// `PeerClosed`); only a process that dies without running this reads as `PeerGone`.
    fn drop(&mut self) {
        self.ep.flush();
        self.ep.set_closed();
    }
}

fn le32(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

impl ShmWire {
    fn new(ep: Endpoint, ctrl: UnixStream, inline_max: usize) -> Self {
        Self {
            ep,
            ctrl,
            announced: HashSet::new(),
            peer_regions: HashMap::new(),
            inflight: VecDeque::new(),
            pending: None,
            inline_max,
            published: 0,
            rx: None,
            blocked: 0,
        }
    }

    fn corrupt<T>(_: ring::Corrupt) -> Result<T, WireError> {
        Err(WireError::Corrupt)
    }

    /// Give the peer region `r`'s memfd, once per connection. `Ok(false)`: the socket is
    /// full, try again later.
    fn announce(&mut self, r: &RegionRef) -> Result<bool, WireError> {
        if self.announced.contains(&r.id) {
            return Ok(true);
        }
        // Only shareable (memfd) regions can be named; a shared-memory NIC makes no others.
        let (fd, map_len) = r.fd.ok_or(WireError::Corrupt)?;
        let mut msg = [0u8; ANNOUNCE];
        msg[..4].copy_from_slice(&r.id.to_le_bytes());
        msg[4..].copy_from_slice(&(map_len as u64).to_le_bytes());
        match send_fd(self.ctrl.as_raw_fd(), &msg, fd) {
            Ok(ANNOUNCE) => {
                self.announced.insert(r.id);
                Ok(true)
            }
            // A partial send of 12 bytes on a Unix stream does not happen short of a full
            // buffer, which returns WouldBlock before sending anything.
            Ok(_) => Err(WireError::PeerGone),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(_) => Err(WireError::PeerGone),
        }
    }

    /// Map announced peer regions until `want` is among them; `Corrupt` if the peer names a
    /// region it never announced.
    fn learn_region(&mut self, want: u32) -> Result<(), WireError> {
        while !self.peer_regions.contains_key(&want) {
            let mut msg = [0u8; ANNOUNCE];
            let (n, fd) = match recv_fd(self.ctrl.as_raw_fd(), &mut msg) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(WireError::Corrupt),
                Err(_) => return Err(WireError::PeerGone),
            };
            if n == 0 {
                return Err(WireError::PeerGone);
            }
            let (Some(fd), ANNOUNCE) = (fd, n) else {
                return Err(WireError::Corrupt);
            };
            let id = le32(&msg, 0);
            let len = usize::try_from(le64(&msg, 4)).map_err(|_| WireError::Corrupt)?;
            // The mapping must not outgrow the file (a read past its end would fault): the
            // sender sealed it against shrinking, so its size now is its size for good.
            let file = File::from(fd);
            let size = file.metadata().map_err(|_| WireError::Corrupt)?.len();
            // SAFETY of F_GET_SEALS: fcntl on a descriptor we own.
            let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
            if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 || (len as u64) > size || len == 0 {
                return Err(WireError::Corrupt);
            }
            let map = SharedMap::map_readonly(&std::os::fd::OwnedFd::from(file), len)
                .map_err(|_| WireError::Corrupt)?;
            self.peer_regions.insert(id, map);
        }
        Ok(())
    }

    /// Take the next record off the ring, if one is there, and check it.
    fn next_record(&mut self) -> Result<Option<RxMsg>, WireError> {
        let avail = self.ep.rx_available().or_else(Self::corrupt)?;
        if avail == 0 {
            return Ok(None);
        }
        let mut head = [0u8; REC_HEAD];
        if avail < REC_HEAD || self.ep.read(&mut head).or_else(Self::corrupt)? != REC_HEAD {
            return Err(WireError::Corrupt);
        }
        let len = le32(&head, 0) as usize;
        let nseg = le32(&head, 8) as usize;
        let inline = match le32(&head, 12) {
            0 => false,
            1 if nseg == 0 => true,
            _ => return Err(WireError::Corrupt),
        };
        if nseg > crate::MAX_SEGMENTS {
            return Err(WireError::Corrupt);
        }
        let mut segs = [(0u32, 0u64, 0usize); crate::MAX_SEGMENTS];
        let mut raw = [0u8; REC_SEG * crate::MAX_SEGMENTS];
        let raw = &mut raw[..REC_SEG * nseg];
        if self.ep.read(raw).or_else(Self::corrupt)? != raw.len() {
            return Err(WireError::Corrupt);
        }
        let mut sum = 0usize;
        for (k, seg) in segs.iter_mut().take(nseg).enumerate() {
            let b = &raw[k * REC_SEG..];
            let (id, slen, off) = (le32(b, 0), le32(b, 4) as usize, le64(b, 8));
            self.learn_region(id)?;
            let map_len = self.peer_regions.get(&id).map_or(0, SharedMap::len);
            let end = off.checked_add(slen as u64).ok_or(WireError::Corrupt)?;
            if end > map_len as u64 {
                return Err(WireError::Corrupt);
            }
            *seg = (id, off, slen);
            sum += slen;
        }
        if sum != len && !inline {
            return Err(WireError::Corrupt);
        }
        let mut hdr = [0u8; crate::HEADER_BYTES];
        hdr.copy_from_slice(&head[..crate::HEADER_BYTES]);
        Ok(Some(RxMsg {
            hdr,
            hdr_given: 0,
            len,
            pos: 0,
            segs,
            nseg,
            inline,
        }))
    }

    /// Copy payload bytes of `m` from `m.pos` into `out` straight out of the peer's regions
    /// (the one copy); returns bytes copied.
    fn copy_payload(&mut self, m: &mut RxMsg, out: &mut [u8]) -> Result<usize, WireError> {
        if m.inline {
            let want = out.len().min(m.len - m.pos);
            let n = self.ep.read(&mut out[..want]).or_else(Self::corrupt)?;
            m.pos += n;
            return Ok(n);
        }
        let mut done = 0;
        let mut skip = m.pos;
        for &(id, off, len) in &m.segs[..m.nseg] {
            if done == out.len() {
                break;
            }
            if skip >= len {
                skip -= len;
                continue;
            }
            let Some(map) = self.peer_regions.get(&id) else {
                break;
            };
            let n = (len - skip).min(out.len() - done);
            // SAFETY: off + len <= map.len() was checked against the read-only mapping when
            // the record arrived, and skip + n <= len; `out` is our own buffer.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    map.ptr().add(off as usize + skip),
                    out.as_mut_ptr().add(done),
                    n,
                );
            }
            done += n;
            skip = 0;
        }
        m.pos += done;
        Ok(done)
    }

    /// Stream more of the pending inline message into the ring.
    fn pump(&mut self) -> Result<(), WireError> {
        let Some(p) = self.pending.as_mut() else {
            return Ok(());
        };
        let mut bufs: [&[u8]; crate::MAX_SEGMENTS] = [&[]; crate::MAX_SEGMENTS];
        let mut k = 0;
        let mut skip = p.done;
        for &(ptr, len) in &p.parts[..p.nparts] {
            if skip >= len {
                skip -= len;
                continue;
            }
            // SAFETY: (ptr, len) is a segment of registered memory named by a posted send
            // descriptor; the NIC keeps it registered and untouched until the send completes,
            // which take_sent reports only after this message is entirely in the ring.
            bufs[k] = unsafe { std::slice::from_raw_parts((ptr + skip) as *const u8, len - skip) };
            skip = 0;
            k += 1;
        }
        let n = self.ep.write(&bufs[..k]).or_else(Self::corrupt)?;
        p.done += n;
        if k == 0 || bufs[..k].iter().map(|b| b.len()).sum::<usize>() == n {
            self.pending = None;
            if let Some(last) = self.inflight.back_mut() {
                last.written = true;
            }
        }
        Ok(())
    }

    /// Done with the current message: tell the sender its memory is free.
    fn finish_rx(&mut self) {
        self.rx = None;
        self.ep.ack_one();
    }
}

impl Wire for ShmWire {
    fn write(&mut self, _bufs: &[&[u8]]) -> Result<usize, WireError> {
        // Messages go by `submit` (is_async): the ring carries records, not bytes.
        Ok(0)
    }

    fn is_async(&self) -> bool {
        true
    }

    fn submit(&mut self, msg: &[WireBuf<'_>]) -> Result<bool, WireError> {
        if self.ep.peer_closed() {
            return Err(WireError::Closed);
        }
        if self.pending.is_some() {
            return Ok(false);
        }
        let Some((hdr, segs)) = msg.split_first() else {
            return Ok(true);
        };
        let mut rec = [0u8; REC_HEAD + REC_SEG * crate::MAX_SEGMENTS];
        if hdr.bytes.len() != crate::HEADER_BYTES || segs.len() > crate::MAX_SEGMENTS {
            return Err(WireError::Corrupt);
        }
        rec[..crate::HEADER_BYTES].copy_from_slice(hdr.bytes);
        let bytes: usize = msg.iter().map(|b| b.bytes.len()).sum();
        let payload = bytes - crate::HEADER_BYTES;
        if payload <= self.inline_max {
            // Inline: the record head, then the payload streamed behind it.
            if self.ep.tx_free(REC_HEAD).or_else(Self::corrupt)? < REC_HEAD {
                self.blocked = REC_HEAD;
                return Ok(false);
            }
            rec[12..16].copy_from_slice(&1u32.to_le_bytes());
            let mut parts = [(0usize, 0usize); crate::MAX_SEGMENTS];
            let mut bufs: [&[u8]; crate::MAX_SEGMENTS + 1] = [&[]; crate::MAX_SEGMENTS + 1];
            bufs[0] = &rec[..REC_HEAD];
            for (k, b) in segs.iter().enumerate() {
                parts[k] = (b.bytes.as_ptr() as usize, b.bytes.len());
                bufs[k + 1] = b.bytes;
            }
            let n = self
                .ep
                .write(&bufs[..segs.len() + 1])
                .or_else(Self::corrupt)?;
            self.blocked = 0;
            self.published += 1;
            let written = n == REC_HEAD + payload;
            self.inflight.push_back(Sent {
                k: self.published,
                bytes,
                inline: true,
                written,
            });
            if !written {
                self.pending = Some(Pending {
                    parts,
                    nparts: segs.len(),
                    done: n - REC_HEAD,
                });
            }
            return Ok(true);
        }
        let mut n = 0usize;
        for b in segs.iter().filter(|b| !b.bytes.is_empty()) {
            let r = b.region.ok_or(WireError::Corrupt)?;
            let off = (b.bytes.as_ptr() as usize)
                .checked_sub(r.base)
                .filter(|o| o + b.bytes.len() <= r.len)
                .ok_or(WireError::Corrupt)?;
            if !self.announce(&r)? {
                return Ok(false);
            }
            let at = REC_HEAD + n * REC_SEG;
            rec[at..at + 4].copy_from_slice(&r.id.to_le_bytes());
            rec[at + 4..at + 8].copy_from_slice(&(b.bytes.len() as u32).to_le_bytes());
            rec[at + 8..at + 16].copy_from_slice(&(off as u64).to_le_bytes());
            n += 1;
        }
        rec[8..12].copy_from_slice(&(n as u32).to_le_bytes());
        let rec = &rec[..REC_HEAD + n * REC_SEG];
        if self.ep.tx_free(rec.len()).or_else(Self::corrupt)? < rec.len() {
            self.blocked = rec.len();
            return Ok(false);
        }
        if self.ep.write(&[rec]).or_else(Self::corrupt)? != rec.len() {
            return Err(WireError::Corrupt);
        }
        self.blocked = 0;
        self.published += 1;
        self.inflight.push_back(Sent {
            k: self.published,
            bytes,
            inline: false,
            written: true,
        });
        Ok(true)
    }

    fn take_sent(&mut self) -> Result<usize, WireError> {
        self.pump()?;
        let Some(front) = self.inflight.front() else {
            return Ok(0);
        };
        // Inline messages are done once written; by-reference ones once the peer acked.
        let acked = if front.inline && front.written && self.inflight.len() == 1 {
            0
        } else {
            self.ep.acked()
        };
        if acked > self.published {
            return Err(WireError::Corrupt);
        }
        let mut n = 0;
        while let Some(&s) = self.inflight.front() {
            if !(s.written && (s.inline || s.k <= acked)) {
                break;
            }
            n += s.bytes;
            self.inflight.pop_front();
        }
        Ok(n)
    }

    fn read(&mut self, out: &mut [u8], _region: Option<RegionRef>) -> Result<usize, WireError> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.rx.is_none() {
            self.rx = self.next_record()?;
            if self.rx.is_none() {
                if self.ep.peer_closed() {
                    // The closed flag is set after the peer's last record: re-check.
                    self.rx = self.next_record()?;
                    if self.rx.is_none() {
                        return Err(WireError::Closed);
                    }
                } else {
                    return Ok(0);
                }
            }
        }
        let Some(mut m) = self.rx.take() else {
            return Ok(0);
        };
        let n = if m.hdr_given < crate::HEADER_BYTES {
            let n = out.len().min(crate::HEADER_BYTES - m.hdr_given);
            out[..n].copy_from_slice(&m.hdr[m.hdr_given..m.hdr_given + n]);
            m.hdr_given += n;
            n
        } else {
            match self.copy_payload(&mut m, out) {
                Ok(n) => n,
                Err(e) => {
                    self.rx = Some(m);
                    return Err(e);
                }
            }
        };
        let complete = m.hdr_given == crate::HEADER_BYTES && m.pos == m.len;
        self.rx = Some(m);
        if complete {
            self.finish_rx();
        }
        Ok(n)
    }

    fn wait(&mut self, _want_write: bool, timeout: Duration) -> Result<(), WireError> {
        let (waiting_ack, blocked) = (
            self.inflight.iter().find(|s| !s.inline).map(|s| s.k),
            if self.pending.is_some() {
                1
            } else {
                self.blocked
            },
        );
        let mid_message = self.rx.as_ref().is_some_and(|m| !m.inline);
        self.ep
            .wait_until(timeout.min(WAIT_SLICE), |ep| {
                Ok(mid_message
                    || ep.rx_available()? > 0
                    || waiting_ack.is_some_and(|k| ep.acked() >= k)
                    || (blocked > 0 && ep.tx_space()? >= blocked))
            })
            .or_else(Self::corrupt)?;
        self.check_alive()
    }

    fn check_alive(&mut self) -> Result<(), WireError> {
        let ev = poll_fd(self.ctrl.as_raw_fd(), false, Duration::ZERO)
            .map_err(|_| WireError::PeerGone)?;
        // Readable alone is a region announcement waiting to be read; a dead peer hangs up.
        if ev.hangup
            && !self.ep.peer_closed()
            && self.rx.is_none()
            && self.ep.rx_available().or_else(Self::corrupt)? == 0
        {
            return Err(WireError::PeerGone);
        }
        Ok(())
    }

    fn flush(&mut self) {
        self.ep.flush();
    }

    fn close(&mut self) {
        self.ep.flush();
        self.ep.set_closed();
    }
}
