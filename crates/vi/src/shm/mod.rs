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
//! the receiver's provider to run. A message of at most `inline_max` bytes whose record fits
//! the ring rides inline, as the body of its record (two copies, like verbs' inline sends),
//! and its send completes once its record is published; the receiver spins on the record's
//! stamp, so a small message moves between the cores as the one or two cache lines that hold
//! it (see `ring.rs`). The first time a region is
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

/// Kind bits of a record (the top byte of its stamp): bit 0 set, the payload is the body;
/// clear, the body is `nseg` (bits 1-3) segment entries naming the sender's regions.
const KIND_INLINE: u8 = 1;
/// Bytes of one segment entry in a by-reference record: region id u32, length u32, offset
/// u64.
const REC_SEG: usize = 16;
/// Bytes of a region announcement on the Unix socket (with its memfd): id u32, length u64.
const ANNOUNCE: usize = 12;
/// Smallest ring: room for the largest by-reference record (head and 4 segment entries,
/// 80 bytes, on two cache lines).
pub(crate) const MIN_RING: usize = 128;

/// A message being received, worked on where it lies (`ShmWire::rx`): its wire header
/// (handed to the NIC first) and where its payload is (the record's body, or the peer's
/// regions named in `ShmWire::rx_segs`). Small, so that taking a record costs no struct
/// copies worth the name.
#[derive(Debug, Clone, Copy)]
struct RxMsg {
    len: usize,
    imm: u32,
    hdr_given: u8,
    /// Segment entries in `ShmWire::rx_segs` (by reference).
    nseg: u8,
    /// The payload is the record's body.
    inline: bool,
    /// Payload bytes handed out so far.
    pos: usize,
}

impl RxMsg {
    /// Bytes of the record's body in the ring.
    fn body(&self) -> usize {
        if self.inline {
            self.len
        } else {
            usize::from(self.nseg) * REC_SEG
        }
    }

    /// The VI wire header: payload length and immediate data, little-endian.
    fn header(&self) -> [u8; crate::HEADER_BYTES] {
        let mut h = [0u8; crate::HEADER_BYTES];
        h[..4].copy_from_slice(&(self.len as u32).to_le_bytes());
        h[4..].copy_from_slice(&self.imm.to_le_bytes());
        h
    }
}

/// One published message the sender waits on: (message number, wire bytes, inline).
#[derive(Debug, Clone, Copy)]
struct Sent {
    k: u64,
    bytes: usize,
    inline: bool,
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
    /// Longest payload sent inline.
    inline_max: usize,
    /// The message being received.
    rx: Option<RxMsg>,
    /// Where its payload lies when it came by reference: (region id, offset, length).
    rx_segs: [(u32, u64, usize); crate::MAX_SEGMENTS],
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
            inline_max,
            rx: None,
            rx_segs: [(0, 0, 0); crate::MAX_SEGMENTS],
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

    /// Take the record at the ring's consumer position into `self.rx`, if its stamp is
    /// there, checked; returns whether there is one.
    fn next_record(&mut self) -> Result<bool, WireError> {
        let Some(h) = self.ep.peek().or_else(Self::corrupt)? else {
            return Ok(false);
        };
        let len = h.words[0] as usize;
        let inline = h.kind & KIND_INLINE != 0;
        let nseg = usize::from(h.kind >> 1);
        if inline {
            // The payload is the body: it must fit a record of this ring.
            if nseg != 0 || ring::record_len(len) > self.ep.capacity() {
                return Err(WireError::Corrupt);
            }
        } else {
            if nseg > crate::MAX_SEGMENTS {
                return Err(WireError::Corrupt);
            }
            let mut raw = [0u8; REC_SEG * crate::MAX_SEGMENTS];
            let raw = &mut raw[..REC_SEG * nseg];
            self.ep.read_body(0, raw).or_else(Self::corrupt)?;
            let mut sum = 0usize;
            for k in 0..nseg {
                let b = &raw[k * REC_SEG..];
                let (id, slen, off) = (le32(b, 0), le32(b, 4) as usize, le64(b, 8));
                self.learn_region(id)?;
                let map_len = self.peer_regions.get(&id).map_or(0, SharedMap::len);
                let end = off.checked_add(slen as u64).ok_or(WireError::Corrupt)?;
                if end > map_len as u64 {
                    return Err(WireError::Corrupt);
                }
                self.rx_segs[k] = (id, off, slen);
                sum += slen;
            }
            if sum != len {
                return Err(WireError::Corrupt);
            }
        }
        self.rx = Some(RxMsg {
            len,
            imm: h.words[1],
            hdr_given: 0,
            nseg: nseg as u8,
            inline,
            pos: 0,
        });
        Ok(true)
    }

    /// Copy payload bytes of `m` from `m.pos` into `out`: inline ones out of the ring, the
    /// others straight out of the peer's regions (the one copy); returns bytes copied. A free
    /// function of the fields it needs, so the message is worked on where it lies.
    fn copy_payload(
        ep: &Endpoint,
        peer_regions: &HashMap<u32, SharedMap>,
        segs: &[(u32, u64, usize)],
        m: &mut RxMsg,
        out: &mut [u8],
    ) -> Result<usize, WireError> {
        if m.inline {
            let n = out.len().min(m.len - m.pos);
            ep.read_body(m.pos, &mut out[..n]).or_else(Self::corrupt)?;
            m.pos += n;
            return Ok(n);
        }
        let mut done = 0;
        let mut skip = m.pos;
        for &(id, off, len) in &segs[..usize::from(m.nseg)] {
            if done == out.len() {
                break;
            }
            if skip >= len {
                skip -= len;
                continue;
            }
            let Some(map) = peer_regions.get(&id) else {
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

    /// Done with the current message: free its record and tell the sender its memory is
    /// free.
    fn finish_rx(&mut self) -> Result<(), WireError> {
        if let Some(m) = self.rx.take() {
            self.ep.consume(m.body()).or_else(Self::corrupt)?;
            self.ep.ack_one();
        }
        Ok(())
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
        let Some((hdr, segs)) = msg.split_first() else {
            return Ok(true);
        };
        if hdr.bytes.len() != crate::HEADER_BYTES || segs.len() > crate::MAX_SEGMENTS {
            return Err(WireError::Corrupt);
        }
        let words = [le32(hdr.bytes, 0), le32(hdr.bytes, 4)];
        let bytes: usize = msg.iter().map(|b| b.bytes.len()).sum();
        let payload = bytes - crate::HEADER_BYTES;
        let inline_len = ring::record_len(payload);
        if payload <= self.inline_max && inline_len <= self.ep.capacity() {
            // Inline: the payload is the record's body, complete once published.
            if !self.ep.tx_fits(inline_len).or_else(Self::corrupt)? {
                self.blocked = inline_len;
                return Ok(false);
            }
            let mut body: [&[u8]; crate::MAX_SEGMENTS] = [&[]; crate::MAX_SEGMENTS];
            for (b, s) in body.iter_mut().zip(segs) {
                *b = s.bytes;
            }
            let k = self.ep.publish(KIND_INLINE, words, &body[..segs.len()]);
            self.blocked = 0;
            self.inflight.push_back(Sent {
                k,
                bytes,
                inline: true,
            });
            return Ok(true);
        }
        let mut table = [0u8; REC_SEG * crate::MAX_SEGMENTS];
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
            let at = n * REC_SEG;
            table[at..at + 4].copy_from_slice(&r.id.to_le_bytes());
            table[at + 4..at + 8].copy_from_slice(&(b.bytes.len() as u32).to_le_bytes());
            table[at + 8..at + 16].copy_from_slice(&(off as u64).to_le_bytes());
            n += 1;
        }
        let table = &table[..n * REC_SEG];
        let len = ring::record_len(table.len());
        if !self.ep.tx_fits(len).or_else(Self::corrupt)? {
            self.blocked = len;
            return Ok(false);
        }
        let k = self.ep.publish((n as u8) << 1, words, &[table]);
        self.blocked = 0;
        self.inflight.push_back(Sent {
            k,
            bytes,
            inline: false,
        });
        Ok(true)
    }

    fn take_sent(&mut self) -> Result<usize, WireError> {
        // Inline messages are done once published; by-reference ones once the peer acked
        // (its counter is read only when one of them is at the front).
        let mut acked = None;
        let mut n = 0;
        while let Some(&s) = self.inflight.front() {
            if !s.inline {
                let a = *acked.get_or_insert_with(|| self.ep.acked());
                if a > self.ep.published() {
                    return Err(WireError::Corrupt);
                }
                if a < s.k {
                    break;
                }
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
        if self.rx.is_none() && !self.next_record()? {
            if !self.ep.peer_closed() {
                return Ok(0);
            }
            // The closed flag is set after the peer's last record: re-check.
            if !self.next_record()? {
                return Err(WireError::Closed);
            }
        }
        // The message is worked on in place: moving it in and out of the Option on every
        // call was most of this path's cost.
        let Some(m) = self.rx.as_mut() else {
            return Ok(0);
        };
        let n = if usize::from(m.hdr_given) < crate::HEADER_BYTES {
            let given = usize::from(m.hdr_given);
            let n = out.len().min(crate::HEADER_BYTES - given);
            out[..n].copy_from_slice(&m.header()[given..given + n]);
            m.hdr_given += n as u8;
            n
        } else {
            Self::copy_payload(&self.ep, &self.peer_regions, &self.rx_segs, m, out)?
        };
        if usize::from(m.hdr_given) == crate::HEADER_BYTES && m.pos == m.len {
            self.finish_rx()?;
        }
        Ok(n)
    }

    fn wait(&mut self, _want_write: bool, timeout: Duration) -> Result<(), WireError> {
        let (waiting_ack, blocked) = (
            self.inflight.iter().find(|s| !s.inline).map(|s| s.k),
            self.blocked,
        );
        let mid_message = self.rx.as_ref().is_some_and(|m| !m.inline);
        self.ep
            .wait_until(timeout.min(WAIT_SLICE), |ep| {
                Ok(mid_message
                    || ep.peek()?.is_some()
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
            && self.ep.peek().or_else(Self::corrupt)?.is_none()
        {
            return Err(WireError::PeerGone);
        }
        Ok(())
    }

    fn sends_now(&self) -> bool {
        true
    }

    fn send_now(&mut self, words: [u32; 2], payload: &[&[u8]]) -> Result<bool, WireError> {
        let len = words[0] as usize;
        // Inline sends complete once published; by-reference ones wait for the receiver.
        if len > self.inline_max
            || !self.inflight.is_empty()
            || payload.len() > crate::MAX_SEGMENTS
            || self.ep.peer_closed()
        {
            return Ok(false);
        }
        let rec = ring::record_len(len);
        if rec > self.ep.capacity() || !self.ep.tx_fits(rec).or_else(Self::corrupt)? {
            return Ok(false);
        }
        self.ep.publish(KIND_INLINE, words, payload);
        Ok(true)
    }

    fn recv_now(&mut self, dst: &mut [u8]) -> Result<Option<(usize, u32)>, WireError> {
        if self.rx.is_some() || !self.next_record()? {
            return Ok(None);
        }
        let Some(m) = self.rx.as_mut() else {
            return Ok(None);
        };
        if m.len > dst.len() {
            return Ok(None);
        }
        let (len, imm) = (m.len, m.imm);
        m.hdr_given = crate::HEADER_BYTES as u8;
        let n = Self::copy_payload(
            &self.ep,
            &self.peer_regions,
            &self.rx_segs,
            m,
            &mut dst[..len],
        )?;
        if n != len {
            return Err(WireError::Corrupt);
        }
        self.finish_rx()?;
        Ok(Some((len, imm)))
    }

    fn quiet(&self) -> bool {
        self.rx.is_none()
            && self.inflight.is_empty()
            && self.blocked == 0
            && !self.ep.owes_flush()
            && matches!(self.ep.peek(), Ok(None))
            && !self.ep.peer_closed()
    }

    fn flush(&mut self) {
        self.ep.flush();
    }

    fn carrier(&self) -> std::io::Result<crate::wire::Carrier> {
        use std::os::fd::AsRawFd;
        // The rings are mapped memory; the only socket is the Unix one for wake-ups.
        match crate::wire::socket_kind(self.ctrl.as_raw_fd())? {
            (libc::AF_UNIX, _, _) => Ok(crate::wire::Carrier::SharedMemory),
            (d, t, p) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("shared-memory control socket of domain {d}, type {t}, protocol {p}"),
            )),
        }
    }

    fn close(&mut self) {
        self.ep.flush();
        self.ep.set_closed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const T: Duration = Duration::from_secs(5);

    /// A connected pair in this process: (connector, acceptor), rings of `cap` bytes.
    fn wire_pair(cap: usize) -> (ShmWire, ShmWire) {
        let path = format!("{}.sock", unique_name("/tmp/mslink-shm-test-"));
        let l = UnixListener::bind(&path).unwrap();
        let t = std::thread::spawn(move || accept(&l, 1024, T).unwrap());
        let a = connect(&path, cap, 1024, T).unwrap();
        let b = t.join().unwrap();
        std::fs::remove_file(&path).unwrap();
        (a, b)
    }

    /// Read until a message is whole, an error, or nothing more comes.
    fn read_all(w: &mut ShmWire, out_piece: usize) -> Result<Vec<u8>, WireError> {
        let mut got = Vec::new();
        let mut buf = vec![0u8; out_piece.max(1)];
        for _ in 0..10_000 {
            match w.read(&mut buf, None)? {
                0 => break,
                n => got.extend_from_slice(&buf[..n]),
            }
        }
        Ok(got)
    }

    /// Records a peer may forge: an inline body longer than a ring, more segment entries
    /// than a descriptor has, a region never announced. Each is `Corrupt`, not a panic or a
    /// read out of bounds.
    #[test]
    fn forged_records_are_corrupt() {
        let cases: [(u8, [u32; 2], &[u8]); 3] = [
            (KIND_INLINE, [1 << 20, 0], &[]),
            (7 << 1, [0, 0], &[0u8; 112]),
            (
                1 << 1,
                [8, 0],
                &[9, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ),
        ];
        for (kind, words, body) in cases {
            let (mut a, mut b) = wire_pair(256);
            a.ep.publish(kind, words, &[body]);
            a.flush();
            assert_eq!(
                read_all(&mut b, 64),
                Err(WireError::Corrupt),
                "{kind} {words:?}"
            );
        }
    }

    /// Random records from a hostile producer never panic the receiver; the well-formed
    /// inline ones among them arrive as sent (header, then payload), in pieces of any size.
    #[test]
    fn random_records_never_panic_and_good_ones_arrive() {
        let mut rng = ChaCha8Rng::seed_from_u64(20);
        let mut good = 0;
        for _ in 0..200 {
            let (mut a, mut b) = wire_pair(512);
            let len = rng.gen_range(0..=300usize);
            let body: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let well_formed = rng.gen_bool(0.5);
            let (kind, words) = if well_formed {
                (KIND_INLINE, [len as u32, rng.gen()])
            } else {
                (rng.gen::<u8>() & ring::KIND_BITS, [rng.gen(), rng.gen()])
            };
            if !a.ep.tx_fits(ring::record_len(len)).unwrap() {
                continue;
            }
            a.ep.publish(kind, words, &[&body]);
            a.flush();
            let r = read_all(&mut b, rng.gen_range(1..=100));
            if well_formed {
                let mut want = words[0].to_le_bytes().to_vec();
                want.extend_from_slice(&words[1].to_le_bytes());
                want.extend_from_slice(&body);
                assert_eq!(r, Ok(want));
                good += 1;
            }
        }
        assert!(good > 50, "{good}");
    }
}
