//! io_uring backend: a VI over one TCP connection or one connected UDP socket, driven
//! through an io_uring submission/completion queue pair — today's closest kernel analogue of
//! the VI's work queues, doorbell and completion queue (000 §III.A, Fig. 3).
//!
//! Contract:
//! - **Registered memory → fixed buffers.** The first time a registered region (000 §III.A)
//!   carries a transfer, it is registered with the ring as a fixed buffer (a sparse table of
//!   [`FIXED_SLOTS`]; slot 0 is the provider's own staging buffer). Payload receives into a
//!   region use `READ_FIXED`; zero-copy sends name the region by its slot. When the table
//!   is full the region is used unregistered (plain `RECV`/`SEND_ZC`), never refused.
//! - **Fixed file.** The socket is registered once (`register_files`) and every operation
//!   names it by index, saving the per-operation file reference.
//! - **Doorbell = one submission of a batch.** `submit` only queues messages; `flush` —
//!   called once at the end of each provider pass — submits everything queued (sends and the
//!   armed receive) with one `io_uring_enter`. Without zero-copy, the TCP messages of a
//!   batch become one gathered `SENDMSG` over all their headers and segments (`MSG_WAITALL`,
//!   at most `GATHER_MAX` messages per operation); with zero-copy a TCP message is a linked
//!   chain (header `SEND` with `MSG_MORE`, then one `SEND_ZC` per segment naming its fixed
//!   buffer); a UDP message is one `SENDMSG(_ZC)` of header + segments, so it stays one
//!   datagram. The operations of a batch are linked in order, and a new batch goes out only
//!   once the previous one has completed: io_uring orders only linked requests and a link
//!   cannot reach into an earlier submission, so the stream never reorders. Over UDP the
//!   receive is linked behind the batch's sends (no waiter on the socket while the burst's
//!   buffers are freed); over TCP it is not (a send waiting for the peer must never hold
//!   back our receive).
//! - **SEND_ZC where the kernel offers it** (`NicConfig::send_zc`): a send descriptor
//!   completes only after the zero-copy notification (the kernel has let go of the pages);
//!   with `IORING_SEND_ZC_REPORT_USAGE` the notification says whether the kernel copied
//!   after all (`IORING_NOTIF_USAGE_ZC_COPIED`, e.g. always on loopback); both counts are in
//!   `ViStats::zc_sends`/`zc_copied`. UDP datagrams above [`UDP_ZC_MAX`] go by plain
//!   SENDMSG (the kernel refuses them zero-copy).
//! - **Receive.** One receive is in flight at a time: small reads (headers, small payloads)
//!   go through the staging buffer, TCP payloads of [`DIRECT_MIN`] bytes or more go straight
//!   into the posted descriptor's region. UDP always receives whole datagrams into staging,
//!   so a datagram is read (and, with no descriptor posted, reported) even when no receive is
//!   posted, and its length is checked against its header; a waiting UDP end sends liveness
//!   probes (`udp.rs`), so a dead peer process shows as `PeerGone`.
//! - **Teardown** shuts the socket down and waits for every operation to finish before the
//!   ring and the buffers go, so the kernel never writes into memory the consumer got back.

use std::collections::VecDeque;
use std::io;
use std::net::{TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::desc::MAX_SEGMENTS;
use crate::udp::{check_datagram, Datagram, Prober, BYE, DATAGRAM_BUF};
use crate::wire::{RegionRef, Wire, WireBuf, WireError};
use crate::HEADER_BYTES;

/// Size of the fixed-buffer table (slot 0: staging).
pub const FIXED_SLOTS: u32 = 64;
/// TCP payload reads at least this long go straight into the registered region.
pub const DIRECT_MIN: usize = 16 * 1024;
/// Largest UDP payload sent zero-copy: a zero-copy datagram must fit the socket buffer's
/// page fragments (MAX_SKB_FRAGS = 17 on x86-64; the kernel answers EMSGSIZE beyond): one
/// for the header, one for a misaligned start, 15 whole pages. Longer datagrams are sent
/// with plain SENDMSG (copied).
pub const UDP_ZC_MAX: usize = 15 * 4096;
/// SQ entries of the ring.
const RING_ENTRIES: u32 = 256;
/// Most messages gathered into one `SENDMSG` (each brings at most 1 + MAX_SEGMENTS iovecs;
/// the kernel takes at most UIO_MAXIOV = 1024).
const GATHER_MAX: usize = 128;
/// `IORING_SEND_ZC_REPORT_USAGE` (include/uapi/linux/io_uring.h): ask the notification to
/// say whether the kernel had to copy.
const SEND_ZC_REPORT_USAGE: u16 = 1 << 3;
/// `IORING_NOTIF_USAGE_ZC_COPIED`: set in a notification's result when the data was copied.
const NOTIF_USAGE_ZC_COPIED: u32 = 1 << 31;
/// user_data of the receive; sends carry `seq << 2`.
const UD_RECV: u64 = 1;
const UD_CANCEL: u64 = 2;
/// How long teardown waits for the kernel to finish in-flight operations.
const TEARDOWN: Duration = Duration::from_secs(2);

/// Stable storage of one in-flight message (its address goes to the kernel).
struct MsgStore {
    hdr: [u8; HEADER_BYTES],
    iov: [libc::iovec; MAX_SEGMENTS + 1],
    msg: libc::msghdr,
}

/// Stable storage of a gathered TCP send: the messages' own stores (their headers) and one
/// iovec array over all of them.
struct GatherStore {
    // Boxed so the headers the iovecs point at never move.
    #[allow(clippy::vec_box)]
    _parts: Vec<Box<MsgStore>>,
    iov: Vec<libc::iovec>,
    msg: libc::msghdr,
}

/// What an in-flight send keeps alive for the kernel (held, never read back).
enum Store {
    One(Box<MsgStore>),
    #[allow(dead_code)]
    Gather(Box<GatherStore>),
}

struct Msg {
    /// Header + payload bytes.
    len: usize,
    /// CQEs still expected (SQEs without a final CQE, plus zero-copy notifications).
    pending: u32,
    /// SQEs whose data completion has not arrived yet (notifications not counted).
    main_pending: u32,
    /// Bytes the kernel reported sent.
    sent: usize,
    /// Handed to the kernel (not just queued in the SQ).
    submitted: bool,
    /// A TCP message waiting to be gathered into its batch's one `SENDMSG` (no SQE yet).
    gather: bool,
    store: Store,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RxOp {
    None,
    Stage,
    Direct { ptr: usize, len: usize },
}

/// A VI byte pipe (TCP) or message pipe (UDP) over io_uring.
pub(crate) struct UringWire {
    ring: IoUring,
    fd: OwnedFd,
    udp: bool,
    zc: bool,
    /// Region id held by each fixed-buffer slot (slot 0: staging).
    slots: Vec<Option<u32>>,
    stage: Box<[u8]>,
    at: usize,
    len: usize,
    rx: RxOp,
    /// A finished direct receive: (target address, result).
    rx_done: Option<(usize, i32)>,
    rx_closed: bool,
    msgs: VecDeque<Msg>,
    /// Sequence number of `msgs.front()`.
    front_seq: u64,
    sent_ready: usize,
    /// Send SQEs of the batch being built (pushed, linked, by `stage_queued`).
    queued: Vec<squeue::Entry>,
    /// The armed receive, not yet pushed.
    recv_sqe: Option<squeue::Entry>,
    err: Option<WireError>,
    zc_sends: u64,
    zc_copied: u64,
    /// UDP: liveness probes while waiting (see `udp.rs`).
    probe: Prober,
}

// SAFETY: the raw pointers inside `MsgStore` point into the same message's own boxed
// storage or into registered regions the NIC keeps alive; the wire is used by one thread at
// a time (it moves with its NIC).
unsafe impl Send for UringWire {}

impl UringWire {
    /// A wire over a connected TCP stream (left blocking: io_uring waits by poll).
    pub(crate) fn tcp(s: TcpStream, zc: bool) -> io::Result<Self> {
        s.set_nodelay(true)?;
        s.set_nonblocking(false)?;
        Self::new(OwnedFd::from(s), false, zc, DIRECT_MIN)
    }

    /// A wire over a connected UDP socket.
    pub(crate) fn udp(s: UdpSocket, zc: bool) -> io::Result<Self> {
        s.set_nonblocking(false)?;
        Self::new(OwnedFd::from(s), true, zc, DATAGRAM_BUF)
    }

    fn new(fd: OwnedFd, udp: bool, zc: bool, stage_len: usize) -> io::Result<Self> {
        // Cooperative task running with the TASKRUN flag: completions are not pushed at
        // us by interrupting the thread; a spinning poller sees IORING_SQ_TASKRUN and enters
        // the kernel once to collect them (see `reap`).
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .build(RING_ENTRIES)?;
        ring.submitter().register_files(&[fd.as_raw_fd()])?;
        ring.submitter().register_buffers_sparse(FIXED_SLOTS)?;
        let mut stage = vec![0u8; stage_len].into_boxed_slice();
        let iov = libc::iovec {
            iov_base: stage.as_mut_ptr().cast(),
            iov_len: stage.len(),
        };
        // SAFETY: the staging buffer is owned by the wire and outlives the ring (the ring is
        // dropped first, see Drop, after every operation has finished).
        unsafe { ring.submitter().register_buffers_update(0, &[iov], None)? };
        let mut slots = vec![None; FIXED_SLOTS as usize];
        slots[0] = Some(u32::MAX);
        Ok(Self {
            ring,
            fd,
            udp,
            zc,
            slots,
            stage,
            at: 0,
            len: 0,
            rx: RxOp::None,
            rx_done: None,
            rx_closed: false,
            msgs: VecDeque::new(),
            front_seq: 0,
            sent_ready: 0,
            queued: Vec::new(),
            recv_sqe: None,
            err: None,
            zc_sends: 0,
            zc_copied: 0,
            probe: Prober::new(),
        })
    }

    /// Fixed-buffer slot of a region, registering it on first use; `None` when the table is
    /// full or registration failed (the region is then used unregistered).
    fn slot_for(&mut self, r: RegionRef) -> Option<u16> {
        if let Some(i) = self.slots.iter().position(|s| *s == Some(r.id)) {
            return Some(i as u16);
        }
        let free = self.slots.iter().position(Option::is_none)?;
        let iov = libc::iovec {
            iov_base: r.base as *mut libc::c_void,
            iov_len: r.len,
        };
        // SAFETY: a registered region's buffer is never moved or resized while the NIC holds
        // it; operations on it happen only while a posted descriptor pins it.
        let ok = unsafe {
            self.ring
                .submitter()
                .register_buffers_update(free as u32, &[iov], None)
        }
        .is_ok();
        ok.then(|| {
            self.slots[free] = Some(r.id);
            free as u16
        })
    }

    fn push(&mut self, e: squeue::Entry) -> bool {
        // SAFETY: every address in `e` stays valid until its CQE (boxed message storage,
        // the staging buffer, or a pinned registered region).
        unsafe { self.ring.submission().push(&e).is_ok() }
    }

    /// Reap every available completion (entering the kernel only if it flagged pending
    /// completion work, IORING_SQ_TASKRUN).
    fn reap(&mut self) {
        if self.ring.completion().is_empty() && self.ring.submission().taskrun() {
            self.stage_queued();
            let _ = self.ring.submit();
        }
        let cqes: Vec<(u64, i32, u32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result(), c.flags()))
            .collect();
        for (ud, res, flags) in cqes {
            match ud {
                UD_RECV => self.on_recv(res),
                UD_CANCEL => {}
                _ => self.on_send(ud >> 2, res, flags),
            }
        }
        while self.msgs.front().is_some_and(|m| m.pending == 0) {
            let m = self.msgs.pop_front().expect("front exists");
            self.front_seq += 1;
            if m.sent != m.len && self.err.is_none() {
                self.err = Some(WireError::PeerGone);
            }
            self.sent_ready += m.len;
        }
    }

    fn on_send(&mut self, seq: u64, res: i32, flags: u32) {
        let Some(m) = seq
            .checked_sub(self.front_seq)
            .and_then(|i| self.msgs.get_mut(i as usize))
        else {
            return;
        };
        m.pending = m.pending.saturating_sub(1);
        if cqueue::notif(flags) {
            self.zc_sends += 1;
            if res as u32 & NOTIF_USAGE_ZC_COPIED != 0 {
                self.zc_copied += 1;
            }
            return;
        }
        m.main_pending = m.main_pending.saturating_sub(1);
        if cqueue::more(flags) {
            m.pending += 1;
        }
        if res < 0 {
            if self.err.is_none() {
                self.err = Some(WireError::PeerGone);
            }
        } else {
            m.sent += res as usize;
        }
    }

    fn on_recv(&mut self, res: i32) {
        let op = std::mem::replace(&mut self.rx, RxOp::None);
        if res == -libc::ECANCELED {
            return;
        }
        if res < 0 {
            self.err.get_or_insert(WireError::PeerGone);
            return;
        }
        let n = res as usize;
        match op {
            RxOp::Direct { ptr, .. } => self.rx_done = Some((ptr, res)),
            RxOp::Stage if self.udp => {
                self.probe.heard();
                match check_datagram(&self.stage, n) {
                    Ok(Datagram::Message) => (self.at, self.len) = (0, n),
                    Ok(Datagram::Bye) => self.rx_closed = true,
                    // Dropped; the next `read` arms the receive again.
                    Ok(Datagram::Probe) => {}
                    Err(e) => {
                        self.err.get_or_insert(e);
                    }
                }
            }
            RxOp::Stage if n == 0 => self.rx_closed = true,
            RxOp::Stage => (self.at, self.len) = (0, n),
            RxOp::None => {}
        }
    }

    fn in_flight(&self) -> bool {
        self.rx != RxOp::None || !self.msgs.is_empty()
    }

    fn arm_recv(&mut self, out: &mut [u8], region: Option<RegionRef>) {
        let fd = types::Fixed(0);
        let e = match region {
            Some(r) if !self.udp && out.len() >= DIRECT_MIN => {
                let (ptr, len) = (out.as_mut_ptr(), out.len());
                self.rx = RxOp::Direct {
                    ptr: ptr as usize,
                    len,
                };
                match self.slot_for(r) {
                    Some(slot) => opcode::ReadFixed::new(fd, ptr, len as u32, slot)
                        .offset(u64::MAX)
                        .build(),
                    None => opcode::Recv::new(fd, ptr, len as u32)
                        .flags(libc::MSG_WAITALL)
                        .build(),
                }
            }
            _ => {
                self.rx = RxOp::Stage;
                opcode::ReadFixed::new(fd, self.stage.as_mut_ptr(), self.stage.len() as u32, 0)
                    .offset(u64::MAX)
                    .build()
            }
        };
        self.recv_sqe = Some(e.user_data(UD_RECV));
    }

    /// TCP without zero-copy: turn the messages queued since the last submission into one
    /// `SENDMSG` over all their headers and segments (per [`GATHER_MAX`] messages), so a batch
    /// behind one doorbell is one operation and one pass through `tcp_sendmsg`, not a chain.
    fn gather_queued(&mut self) {
        let k = self.msgs.iter().rev().take_while(|m| m.gather).count();
        if k == 0 {
            return;
        }
        let mut batch: Vec<Msg> = self.msgs.drain(self.msgs.len() - k..).collect();
        while !batch.is_empty() {
            let rest = batch.split_off(batch.len().min(GATHER_MAX));
            let group = std::mem::replace(&mut batch, rest);
            let seq = self.front_seq + self.msgs.len() as u64;
            let fd = types::Fixed(0);
            let len = group.iter().map(|m| m.len).sum();
            let store = if group.len() == 1 {
                let mut m = group.into_iter().next().expect("one message");
                m.gather = false;
                let Store::One(st) = &m.store else {
                    unreachable!("ungathered messages own one store")
                };
                let e = opcode::SendMsg::new(fd, &st.msg)
                    .flags(libc::MSG_WAITALL as u32)
                    .build();
                self.queued.push(e.user_data(seq << 2));
                self.msgs.push_back(m);
                continue;
            } else {
                let mut parts = Vec::with_capacity(group.len());
                let mut iov = Vec::with_capacity(group.len() * (MAX_SEGMENTS + 1));
                for m in group {
                    let Store::One(st) = m.store else {
                        unreachable!("ungathered messages own one store")
                    };
                    // msg_iovlen is usize on glibc, c_int on musl.
                    #[allow(clippy::unnecessary_cast)]
                    let niov = st.msg.msg_iovlen as usize;
                    iov.extend_from_slice(&st.iov[..niov]);
                    parts.push(st);
                }
                let mut g = Box::new(GatherStore {
                    _parts: parts,
                    iov,
                    // SAFETY: msghdr is plain old data; all-zero is a valid empty header.
                    msg: unsafe { std::mem::zeroed() },
                });
                g.msg.msg_iov = g.iov.as_mut_ptr();
                g.msg.msg_iovlen = g.iov.len() as _;
                g
            };
            let e = opcode::SendMsg::new(fd, &store.msg)
                .flags(libc::MSG_WAITALL as u32)
                .build();
            self.queued.push(e.user_data(seq << 2));
            self.msgs.push_back(Msg {
                len,
                pending: 1,
                main_pending: 1,
                sent: 0,
                submitted: false,
                gather: false,
                store: Store::Gather(store),
            });
        }
    }

    /// Move the batch into the SQ: the send SQEs linked in order (so the kernel issues each
    /// only after the previous finished and the stream cannot reorder), the last one
    /// unlinked, then the receive. Over UDP the receive is linked behind the sends: it is
    /// armed once the burst is out, so the socket has no waiter while the burst's buffers
    /// are freed (a UDP socket wakes its waiters for every freed send buffer, one per IP
    /// fragment). Over TCP it stays unlinked: a send that waits for the peer to read must
    /// never hold back our own receive.
    fn stage_queued(&mut self) {
        self.gather_queued();
        let n = self.queued.len();
        let link_recv = self.udp && self.recv_sqe.is_some();
        let queued = std::mem::take(&mut self.queued);
        for (k, e) in queued.into_iter().enumerate() {
            let e = if k + 1 < n || link_recv {
                e.flags(squeue::Flags::IO_LINK)
            } else {
                e
            };
            if !self.push(e) {
                self.err.get_or_insert(WireError::Corrupt);
            }
        }
        if let Some(e) = self.recv_sqe.take() {
            if !self.push(e) {
                self.rx = RxOp::None;
            }
        }
        for m in &mut self.msgs {
            m.submitted = true;
        }
    }

    fn submit_now(&mut self) {
        self.stage_queued();
        if !self.ring.submission().is_empty() {
            let _ = self.ring.submit();
        }
    }
}

impl Wire for UringWire {
    fn write(&mut self, _bufs: &[&[u8]]) -> Result<usize, WireError> {
        // Sends go through `submit`/`take_sent` (is_async).
        Ok(0)
    }

    fn is_async(&self) -> bool {
        true
    }

    fn submit(&mut self, msg: &[WireBuf<'_>]) -> Result<bool, WireError> {
        if let Some(e) = self.err {
            return Err(e);
        }
        // A new batch goes out only when the previous one's data is in the socket (its
        // zero-copy notifications may still be due): the byte stream stays in order.
        self.reap();
        if self.msgs.iter().any(|m| m.submitted && m.main_pending > 0) {
            return Ok(false);
        }
        let segs: Vec<WireBuf<'_>> = msg[1..]
            .iter()
            .copied()
            .filter(|b| !b.bytes.is_empty())
            .collect();
        // One SENDMSG of header + segments for UDP (one datagram) and for TCP without
        // zero-copy (one operation instead of a chain); a chain of SEND + SEND_ZC per segment
        // for zero-copy TCP (fixed buffers are named per operation).
        let one_msg = self.udp || !self.zc;
        let need = if one_msg { 1 } else { 1 + segs.len() };
        let gathered = self.msgs.iter().filter(|m| m.gather).count() / GATHER_MAX + 1;
        if self.queued.len() + gathered + need + 1 > RING_ENTRIES as usize {
            return Ok(false);
        }
        let mut store = Box::new(MsgStore {
            hdr: [0; HEADER_BYTES],
            iov: [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; MAX_SEGMENTS + 1],
            // SAFETY: msghdr is plain old data; all-zero is a valid empty header.
            msg: unsafe { std::mem::zeroed() },
        });
        store.hdr.copy_from_slice(&msg[0].bytes[..HEADER_BYTES]);
        let len = HEADER_BYTES + segs.iter().map(|b| b.bytes.len()).sum::<usize>();
        let seq = self.front_seq + self.msgs.len() as u64;
        let ud = seq << 2;
        let fd = types::Fixed(0);
        let mut entries = Vec::with_capacity(need);
        if one_msg {
            store.iov[0] = libc::iovec {
                iov_base: store.hdr.as_mut_ptr().cast(),
                iov_len: HEADER_BYTES,
            };
            for (k, b) in segs.iter().enumerate() {
                store.iov[k + 1] = libc::iovec {
                    iov_base: b.bytes.as_ptr() as *mut libc::c_void,
                    iov_len: b.bytes.len(),
                };
            }
            store.msg.msg_iov = store.iov.as_mut_ptr();
            store.msg.msg_iovlen = (segs.len() + 1) as _;
            let e = if self.zc && len - HEADER_BYTES <= UDP_ZC_MAX {
                opcode::SendMsgZc::new(fd, &store.msg)
                    .ioprio(SEND_ZC_REPORT_USAGE)
                    .build()
            } else {
                opcode::SendMsg::new(fd, &store.msg)
                    .flags(if self.udp {
                        0
                    } else {
                        libc::MSG_WAITALL as u32
                    })
                    .build()
            };
            entries.push(e);
        } else {
            let more = if segs.is_empty() { 0 } else { libc::MSG_MORE };
            entries.push(
                opcode::Send::new(fd, store.hdr.as_ptr(), HEADER_BYTES as u32)
                    .flags(libc::MSG_WAITALL | more)
                    .build(),
            );
            for (k, b) in segs.iter().enumerate() {
                let more = if k + 1 < segs.len() {
                    libc::MSG_MORE
                } else {
                    0
                };
                let flags = libc::MSG_WAITALL | more;
                let (p, n) = (b.bytes.as_ptr(), b.bytes.len() as u32);
                let e = if self.zc {
                    let slot = b.region.and_then(|r| self.slot_for(r));
                    opcode::SendZc::new(fd, p, n)
                        .buf_index(slot)
                        .flags(flags)
                        .zc_flags(SEND_ZC_REPORT_USAGE)
                        .build()
                } else {
                    opcode::Send::new(fd, p, n).flags(flags).build()
                };
                entries.push(e);
            }
        }
        // TCP without zero-copy: no SQE yet, `gather_queued` makes one for the whole batch.
        let gather = !self.udp && !self.zc;
        let pending = if gather { 1 } else { entries.len() as u32 };
        if !gather {
            self.queued
                .extend(entries.into_iter().map(|e| e.user_data(ud)));
        }
        self.msgs.push_back(Msg {
            len,
            pending,
            main_pending: pending,
            sent: 0,
            submitted: false,
            gather,
            store: Store::One(store),
        });
        Ok(true)
    }

    fn take_sent(&mut self) -> Result<usize, WireError> {
        self.reap();
        if let Some(e) = self.err {
            return Err(e);
        }
        Ok(std::mem::take(&mut self.sent_ready))
    }

    fn zc_counts(&self) -> (u64, u64) {
        (self.zc_sends, self.zc_copied)
    }

    fn read(&mut self, out: &mut [u8], region: Option<RegionRef>) -> Result<usize, WireError> {
        if out.is_empty() {
            return Ok(0);
        }
        self.reap();
        if self.at < self.len {
            let n = out.len().min(self.len - self.at);
            out[..n].copy_from_slice(&self.stage[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        if let Some((ptr, res)) = self.rx_done.take() {
            if ptr != out.as_ptr() as usize {
                return Err(WireError::Corrupt);
            }
            if res == 0 {
                self.rx_closed = true;
            } else {
                return Ok(res as usize);
            }
        }
        if let Some(e) = self.err {
            return Err(e);
        }
        if self.rx_closed {
            return Err(WireError::Closed);
        }
        if self.rx == RxOp::None {
            self.arm_recv(out, region);
        }
        Ok(0)
    }

    fn wait(&mut self, _want_write: bool, timeout: Duration) -> Result<(), WireError> {
        self.reap();
        if self.at < self.len || self.rx_done.is_some() || self.sent_ready > 0 {
            return Ok(());
        }
        if let Some(e) = self.err {
            return Err(e);
        }
        if !self.in_flight() {
            return Ok(());
        }
        let timeout = if self.udp {
            timeout.min(self.probe.tick(self.fd.as_raw_fd())?)
        } else {
            timeout
        };
        self.stage_queued();
        let ts = types::Timespec::from(timeout);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => Ok(()),
            Err(_) => Err(WireError::PeerGone),
        }
    }

    fn check_alive(&mut self) -> Result<(), WireError> {
        self.reap();
        if let Some(e) = self.err {
            return Err(e);
        }
        if self.udp {
            self.probe.tick(self.fd.as_raw_fd())?;
        }
        Ok(())
    }

    fn flush(&mut self) {
        self.submit_now();
    }

    fn carrier(&self) -> std::io::Result<crate::wire::Carrier> {
        use std::os::fd::AsRawFd;
        crate::wire::ip_carrier(self.fd.as_raw_fd())
    }

    fn close(&mut self) {
        if self.udp {
            // SAFETY: send(2) of 8 bytes from a stack array on our own socket.
            unsafe {
                libc::send(self.fd.as_raw_fd(), BYE.as_ptr().cast(), BYE.len(), 0);
            }
        } else {
            // SAFETY: shutdown(2) on our own socket.
            unsafe {
                libc::shutdown(self.fd.as_raw_fd(), libc::SHUT_WR);
            }
        }
    }
}

impl Drop for UringWire {
    fn drop(&mut self) {
        // Stop the socket, cancel the receive, and wait for the kernel to let go of every
        // buffer before they (and the consumer's regions) can be freed.
        // SAFETY: shutdown(2) on our own socket.
        unsafe {
            libc::shutdown(self.fd.as_raw_fd(), libc::SHUT_RDWR);
        }
        self.queued.clear();
        self.msgs.retain(|m| m.submitted);
        if self.recv_sqe.take().is_some() {
            self.rx = RxOp::None;
        }
        if self.rx != RxOp::None {
            let _ = self.push(
                opcode::AsyncCancel::new(UD_RECV)
                    .build()
                    .user_data(UD_CANCEL),
            );
        }
        let start = Instant::now();
        while self.in_flight() && start.elapsed() < TEARDOWN {
            let ts = types::Timespec::from(Duration::from_millis(50));
            let args = types::SubmitArgs::new().timespec(&ts);
            let _ = self.ring.submitter().submit_with_args(1, &args);
            self.reap();
            if self.err.is_some() {
                // Failed sends still owe their final CQEs; keep reaping until none is due.
                self.err = None;
            }
        }
        if self.in_flight() {
            // The kernel still holds buffers: leak them rather than free memory it may write.
            let stage = std::mem::take(&mut self.stage);
            std::mem::forget(stage);
            let msgs = std::mem::take(&mut self.msgs);
            std::mem::forget(msgs);
        }
    }
}
