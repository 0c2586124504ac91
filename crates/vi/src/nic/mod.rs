//! The VI provider: a NIC (one backend) owning registered memory, VIs with a send and a
//! receive work queue each, and completion queues that may serve several VIs
//! (000 §III.A, Fig. 3).
//!
//! Contract: the provider runs inside the calls of its consumer — posting rings the
//! doorbell (moves what fits of the send queue onto the wire at once unless
//! `deferred_doorbell`), and polling or waiting on a CQ moves bytes for every VI feeding
//! it. Messages are framed on the wire as an 8-byte header (length u32 LE, immediate u32
//! LE) and the payload; a receive copies the payload straight into the posted descriptor's
//! registered buffers. A message with no receive descriptor posted is reported on the
//! receive CQ with `Status::NoRecvDescriptor` and discarded; a lost peer flushes every
//! posted descriptor with an error status and leaves a completion even when nothing was
//! posted, so no waiter hangs.

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::desc::{Completion, DescId, DescState, Descriptor, Status, WorkQueue};
use crate::error::VipError;
use crate::mem::{MemHandle, MemTable, Segment};
use crate::wire::{Carrier, Wire, WireError};
use crate::{shm, sys, tcp, udp, uring};

mod progress;

/// Bytes of the per-message wire header (length, immediate).
pub const HEADER_BYTES: usize = 8;

/// Which transport a NIC drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// Lock-free rings in memory shared by two processes on one host; address is a Unix
    /// socket path used only for the rendezvous.
    SharedMemory,
    /// One TCP connection per VI (the sockets baseline); address is `host:port`.
    Tcp,
    /// One connected UDP socket per VI, one datagram per message (plain sockets); address
    /// is `host:port`; messages of at most [`crate::MAX_UDP_MESSAGE`] bytes.
    Udp,
    /// io_uring over one TCP connection per VI: fixed buffers, fixed file, batched
    /// submission, SEND_ZC (see `uring.rs`).
    UringTcp,
    /// io_uring over one connected UDP socket per VI.
    UringUdp,
}

impl Backend {
    /// Does this backend carry messages as UDP datagrams?
    pub fn is_udp(self) -> bool {
        matches!(self, Self::Udp | Self::UringUdp)
    }

    /// Longest message a descriptor may carry on this backend.
    pub fn max_message(self) -> usize {
        if self.is_udp() {
            crate::udp::MAX_UDP_MESSAGE
        } else {
            u32::MAX as usize
        }
    }
}

/// NIC settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NicConfig {
    /// Shared-memory ring capacity per direction in bytes (power of two).
    pub ring_bytes: usize,
    /// If true, posting only queues the descriptor; `Nic::doorbell` starts the transfer
    /// (lets a consumer batch several posts behind one doorbell).
    pub deferred_doorbell: bool,
    /// io_uring backends: send with `SEND_ZC`/`SENDMSG_ZC` (the kernel may still copy, and
    /// says so); if false, plain `SEND`/`SENDMSG`.
    pub send_zc: bool,
    /// Byte-stream socket backends (TCP, shared memory): hand every queued send to the wire
    /// in one gathered write (one `writev(2)` over up to 128 messages' headers and segments)
    /// instead of one write per message: the batch io_uring's gathered `SENDMSG` takes, so
    /// a benchmark can compare the two at equal batching. Datagram backends ignore it.
    pub gather_sends: bool,
    /// Shared memory: payloads of at most this many bytes are streamed through the ring
    /// (two copies; the send completes once written); longer ones are copied once, by the
    /// receiver, straight out of the sender's registered region (the send completes when
    /// the receiver has them). 0: every message by one copy.
    pub shm_inline_max: usize,
}

impl Default for NicConfig {
    fn default() -> Self {
        Self {
            ring_bytes: 1 << 20,
            deferred_doorbell: false,
            send_zc: true,
            gather_sends: false,
            shm_inline_max: 1024,
        }
    }
}

/// How `Nic::cq_wait` waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum WaitMode {
    /// Spin on the completion queue: no system call while data flows.
    Poll,
    /// Sleep in the kernel (futex / poll) until something may have completed
    /// (000 §III: interrupts only on wait-for-completion).
    Block,
}

/// Handle of a VI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ViHandle(pub u32);

/// Handle of a completion queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CqHandle(u32);

/// Handle of a listening endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListenerHandle(u32);

/// Per-VI counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViStats {
    /// Messages sent in full.
    pub sent_msgs: u64,
    /// Payload bytes sent in full messages.
    pub sent_bytes: u64,
    /// Messages received into descriptors.
    pub recv_msgs: u64,
    /// Payload bytes received.
    pub recv_bytes: u64,
    /// Messages that found no receive descriptor.
    pub recv_no_descriptor: u64,
    /// Messages longer than their receive descriptor.
    pub length_errors: u64,
    /// Descriptors completed with an error by disconnect or connection loss.
    pub flushed: u64,
    /// io_uring: zero-copy sends whose notification arrived.
    pub zc_sends: u64,
    /// io_uring: of those, sends the kernel copied after all (IORING_NOTIF_USAGE_ZC_COPIED).
    pub zc_copied: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conn {
    Idle,
    Connected,
    Broken,
}

#[derive(Debug)]
struct Posted {
    id: DescId,
    desc: Descriptor,
    /// Bytes moved so far (send: including the header).
    done: usize,
    /// Handed to an asynchronous (io_uring) wire, which now owns its bytes until done.
    handed: bool,
}

#[derive(Debug, Clone, Copy)]
enum Rx {
    Header {
        buf: [u8; HEADER_BYTES],
        got: usize,
    },
    Payload {
        len: usize,
        got: usize,
        imm: u32,
        deliver: bool,
    },
}

const RX_IDLE: Rx = Rx::Header {
    buf: [0; HEADER_BYTES],
    got: 0,
};

struct Vi {
    send_cq: CqHandle,
    recv_cq: CqHandle,
    conn: Conn,
    wire: Option<Box<dyn Wire>>,
    sq: VecDeque<Posted>,
    rq: VecDeque<Posted>,
    next_id: [u64; 2],
    rx: Rx,
    stats: ViStats,
}

impl Vi {
    /// Nothing queued to send, no message part-way in, and a wire with nothing to report:
    /// a progress pass would do nothing (checked before each pass of a polling wait).
    fn quiet(&self) -> bool {
        self.sq.is_empty()
            && matches!(self.rx, Rx::Header { got: 0, .. })
            && self.wire.as_ref().is_some_and(|w| w.quiet())
    }
}

#[derive(Debug, Default)]
struct Cq {
    q: VecDeque<Completion>,
    users: u32,
}

enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
    Udp(UdpSocket),
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// An open NIC (VipOpenNic): the root of every VI object.
pub struct Nic {
    backend: Backend,
    cfg: NicConfig,
    mem: MemTable,
    vis: Vec<Option<Vi>>,
    cqs: Vec<Option<Cq>>,
    listeners: Vec<Option<Listener>>,
}

fn get<T>(v: &[Option<T>], i: u32) -> Result<&T, VipError> {
    v.get(i as usize)
        .and_then(Option::as_ref)
        .ok_or(VipError::InvalidHandle)
}

fn get_mut<T>(v: &mut [Option<T>], i: u32) -> Result<&mut T, VipError> {
    v.get_mut(i as usize)
        .and_then(Option::as_mut)
        .ok_or(VipError::InvalidHandle)
}

fn push_cq(cqs: &mut [Option<Cq>], cq: CqHandle, c: Completion) {
    if let Some(Some(q)) = cqs.get_mut(cq.0 as usize) {
        q.q.push_back(c);
    }
}

impl Nic {
    /// Open a NIC on `backend` (VipOpenNic).
    pub fn open(backend: Backend, cfg: NicConfig) -> Result<Self, VipError> {
        if backend == Backend::SharedMemory
            && (!cfg.ring_bytes.is_power_of_two() || cfg.ring_bytes < shm::MIN_RING)
        {
            return Err(VipError::Backend(
                "ring_bytes must be a power of two >= 128",
            ));
        }
        Ok(Self {
            backend,
            cfg,
            mem: MemTable::default(),
            vis: Vec::new(),
            cqs: Vec::new(),
            listeners: Vec::new(),
        })
    }

    /// The backend this NIC drives.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Register a buffer (VipRegisterMem): the NIC pins a copy of it in RAM (`mlock`) and
    /// owns it until deregistered. Fails with [`VipError::MemLock`] when RLIMIT_MEMLOCK
    /// does not cover it.
    pub fn register_mem(&mut self, buf: Vec<u8>) -> Result<MemHandle, VipError> {
        self.mem
            .register(buf, self.backend == Backend::SharedMemory)
    }

    /// Deregister a region and get its buffer back (VipDeregisterMem); refused while a
    /// posted descriptor references it.
    pub fn deregister_mem(&mut self, h: MemHandle) -> Result<Vec<u8>, VipError> {
        self.mem.deregister(h)
    }

    /// Read a registered region.
    pub fn mem(&self, h: MemHandle) -> Result<&[u8], VipError> {
        self.mem.bytes(h)
    }

    /// Write a registered region (do not rely on bytes of a region a posted receive
    /// descriptor covers until it completes).
    pub fn mem_mut(&mut self, h: MemHandle) -> Result<&mut [u8], VipError> {
        self.mem.bytes_mut(h)
    }

    /// A segment of a region, bounds-checked.
    pub fn segment(&self, mem: MemHandle, offset: usize, len: usize) -> Result<Segment, VipError> {
        let s = Segment { mem, offset, len };
        self.mem.check(&s)?;
        Ok(s)
    }

    /// Create a completion queue (VipCreateCQ).
    pub fn create_cq(&mut self) -> CqHandle {
        self.cqs.push(Some(Cq::default()));
        CqHandle((self.cqs.len() - 1) as u32)
    }

    /// Destroy a completion queue no VI uses (VipDestroyCQ).
    pub fn destroy_cq(&mut self, cq: CqHandle) -> Result<(), VipError> {
        if get(&self.cqs, cq.0)?.users > 0 {
            return Err(VipError::Busy);
        }
        self.cqs[cq.0 as usize] = None;
        Ok(())
    }

    /// Create a VI whose send and receive queues complete on the given CQs (VipCreateVi).
    pub fn create_vi(
        &mut self,
        send_cq: CqHandle,
        recv_cq: CqHandle,
    ) -> Result<ViHandle, VipError> {
        get(&self.cqs, send_cq.0)?;
        get(&self.cqs, recv_cq.0)?;
        get_mut(&mut self.cqs, send_cq.0)?.users += 1;
        get_mut(&mut self.cqs, recv_cq.0)?.users += 1;
        self.vis.push(Some(Vi {
            send_cq,
            recv_cq,
            conn: Conn::Idle,
            wire: None,
            sq: VecDeque::new(),
            rq: VecDeque::new(),
            next_id: [0; 2],
            rx: RX_IDLE,
            stats: ViStats::default(),
        }));
        Ok(ViHandle((self.vis.len() - 1) as u32))
    }

    /// Destroy an unconnected VI with empty work queues (VipDestroyVi).
    pub fn destroy_vi(&mut self, vi: ViHandle) -> Result<(), VipError> {
        let v = get(&self.vis, vi.0)?;
        if v.conn != Conn::Idle || !v.sq.is_empty() || !v.rq.is_empty() {
            return Err(VipError::Busy);
        }
        let (s, r) = (v.send_cq, v.recv_cq);
        for cq in [s, r] {
            if let Ok(q) = get_mut(&mut self.cqs, cq.0) {
                q.users = q.users.saturating_sub(1);
            }
        }
        self.vis[vi.0 as usize] = None;
        Ok(())
    }

    /// Listen for connection requests at `addr` (Unix socket path for shared memory,
    /// `host:port` for TCP; port 0 picks one, see [`Nic::listener_addr`]).
    pub fn listen(&mut self, addr: &str) -> Result<ListenerHandle, VipError> {
        let l = match self.backend {
            Backend::SharedMemory => {
                let path = PathBuf::from(addr);
                // Replace a stale socket left by a dead listener, never any other file.
                if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_socket()) {
                    let _ = std::fs::remove_file(&path);
                }
                let l = UnixListener::bind(&path)?;
                Listener::Unix(l, path)
            }
            Backend::Tcp | Backend::UringTcp => Listener::Tcp(TcpListener::bind(addr)?),
            Backend::Udp | Backend::UringUdp => Listener::Udp(UdpSocket::bind(addr)?),
        };
        self.listeners.push(Some(l));
        Ok(ListenerHandle((self.listeners.len() - 1) as u32))
    }

    /// The address a listener is bound to.
    pub fn listener_addr(&self, l: ListenerHandle) -> Result<String, VipError> {
        Ok(match get(&self.listeners, l.0)? {
            Listener::Unix(_, p) => p.display().to_string(),
            Listener::Tcp(t) => t.local_addr()?.to_string(),
            Listener::Udp(u) => u.local_addr()?.to_string(),
        })
    }

    /// Stop listening.
    pub fn close_listener(&mut self, l: ListenerHandle) -> Result<(), VipError> {
        get(&self.listeners, l.0)?;
        self.listeners[l.0 as usize] = None;
        Ok(())
    }

    fn check_idle(&self, vi: ViHandle) -> Result<(), VipError> {
        match get(&self.vis, vi.0)?.conn {
            Conn::Idle => Ok(()),
            _ => Err(VipError::AlreadyConnected),
        }
    }

    fn attach(&mut self, vi: ViHandle, wire: Box<dyn Wire>) -> Result<(), VipError> {
        let v = get_mut(&mut self.vis, vi.0)?;
        v.wire = Some(wire);
        v.conn = Conn::Connected;
        v.rx = RX_IDLE;
        self.progress(vi.0 as usize);
        Ok(())
    }

    /// Wait for a connection request on `l` and accept it on `vi` (VipConnectWait +
    /// VipConnectAccept).
    pub fn accept(
        &mut self,
        l: ListenerHandle,
        vi: ViHandle,
        timeout: Duration,
    ) -> Result<(), VipError> {
        self.check_idle(vi)?;
        let (backend, zc) = (self.backend, self.cfg.send_zc);
        let wire: Box<dyn Wire> = match get(&self.listeners, l.0)? {
            Listener::Unix(u, _) => Box::new(shm::accept(u, self.cfg.shm_inline_max, timeout)?),
            Listener::Tcp(t) => {
                let ev = sys::poll_fd(t.as_raw_fd(), false, timeout)?;
                if !ev.readable {
                    return Err(VipError::Timeout);
                }
                let (s, _) = t.accept()?;
                if backend == Backend::UringTcp {
                    Box::new(uring::UringWire::tcp(s, zc)?)
                } else {
                    Box::new(tcp::TcpWire::new(s)?)
                }
            }
            Listener::Udp(u) => {
                let s = udp::accept(u, timeout)?;
                if backend == Backend::UringUdp {
                    Box::new(uring::UringWire::udp(s, zc)?)
                } else {
                    Box::new(udp::UdpWire::new(s)?)
                }
            }
        };
        self.attach(vi, wire)
    }

    /// Connect `vi` to a listener at `addr` (VipConnectRequest).
    pub fn connect(&mut self, vi: ViHandle, addr: &str, timeout: Duration) -> Result<(), VipError> {
        self.check_idle(vi)?;
        // A signal arriving during connect(2) interrupts it (EINTR); try again until the
        // timeout, as a blocking connect without signals would have waited.
        let deadline = std::time::Instant::now() + timeout;
        let wire = loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.open_wire(addr, left) {
                Err(VipError::Io(e))
                    if e.kind() == std::io::ErrorKind::Interrupted && !left.is_zero() => {}
                r => break r?,
            }
        };
        self.attach(vi, wire)
    }

    /// The wire of one connection attempt to `addr`.
    fn open_wire(&self, addr: &str, timeout: Duration) -> Result<Box<dyn Wire>, VipError> {
        Ok(match self.backend {
            Backend::SharedMemory => Box::new(shm::connect(
                addr,
                self.cfg.ring_bytes,
                self.cfg.shm_inline_max,
                timeout,
            )?),
            b => {
                let sa: SocketAddr = addr
                    .parse()
                    .map_err(|_| VipError::Backend("address must be ip:port"))?;
                let zc = self.cfg.send_zc;
                match b {
                    Backend::Udp => Box::new(udp::UdpWire::new(udp::connect(sa, timeout)?)?),
                    Backend::UringUdp => {
                        Box::new(uring::UringWire::udp(udp::connect(sa, timeout)?, zc)?)
                    }
                    _ => {
                        let s = TcpStream::connect_timeout(&sa, timeout)?;
                        if b == Backend::UringTcp {
                            Box::new(uring::UringWire::tcp(s, zc)?)
                        } else {
                            Box::new(tcp::TcpWire::new(s)?)
                        }
                    }
                }
            }
        })
    }

    fn post(&mut self, vi: ViHandle, wq: WorkQueue, desc: &Descriptor) -> Result<DescId, VipError> {
        for s in desc.segments() {
            self.mem.check(s)?;
        }
        if desc.total_len() > self.backend.max_message() {
            return Err(VipError::TooLong);
        }
        let v = get_mut(&mut self.vis, vi.0)?;
        if v.conn == Conn::Broken {
            return Err(VipError::NotConnected);
        }
        let k = wq as usize;
        let id = DescId(v.next_id[k]);
        v.next_id[k] += 1;
        let p = Posted {
            id,
            desc: *desc,
            done: 0,
            handed: false,
        };
        match wq {
            WorkQueue::Send => v.sq.push_back(p),
            WorkQueue::Recv => v.rq.push_back(p),
        }
        self.mem.pin(desc.segments(), true);
        Ok(id)
    }

    /// Post a send descriptor (VipPostSend) and ring the doorbell (unless deferred). May be
    /// posted before the VI is connected; it is sent once connected.
    pub fn post_send(&mut self, vi: ViHandle, desc: &Descriptor) -> Result<DescId, VipError> {
        if let Some(id) = self.send_now(vi, desc)? {
            return Ok(id);
        }
        let id = self.post(vi, WorkQueue::Send, desc)?;
        if !self.cfg.deferred_doorbell {
            self.progress(vi.0 as usize);
        }
        Ok(id)
    }

    /// The doorbell's short cut: a send with nothing queued ahead of it that the wire takes
    /// whole and completes at once (a shared-memory inline record) completes here, without
    /// passing through the send queue. `None`: post it the usual way (which also reports
    /// any error the wire met).
    fn send_now(&mut self, vi: ViHandle, desc: &Descriptor) -> Result<Option<DescId>, VipError> {
        // Only a connected wire that takes sends whole, with nothing queued ahead; anything
        // else (and any refusal below) goes the usual way, which checks and reports.
        let eligible = !self.cfg.deferred_doorbell
            && get(&self.vis, vi.0).is_ok_and(|v| {
                v.conn == Conn::Connected
                    && v.sq.is_empty()
                    && v.wire.as_ref().is_some_and(|w| w.sends_now())
            });
        if !eligible {
            return Ok(None);
        }
        for s in desc.segments() {
            self.mem.check(s)?;
        }
        let total = desc.total_len();
        if total > self.backend.max_message() {
            return Err(VipError::TooLong);
        }
        let Nic { vis, cqs, mem, .. } = self;
        let v = get_mut(vis, vi.0)?;
        let Some(w) = v.wire.as_mut() else {
            return Ok(None);
        };
        let mut bufs: [&[u8]; crate::MAX_SEGMENTS] = [&[]; crate::MAX_SEGMENTS];
        for (b, s) in bufs.iter_mut().zip(desc.segments()) {
            *b = mem.seg(s);
        }
        let n = desc.segments().len();
        if !matches!(
            w.send_now([total as u32, desc.immediate], &bufs[..n]),
            Ok(true)
        ) {
            return Ok(None);
        }
        w.flush();
        let id = DescId(v.next_id[WorkQueue::Send as usize]);
        v.next_id[WorkQueue::Send as usize] += 1;
        v.stats.sent_msgs += 1;
        v.stats.sent_bytes += total as u64;
        push_cq(
            cqs,
            v.send_cq,
            Completion {
                vi,
                queue: WorkQueue::Send,
                id: Some(id),
                tag: desc.tag,
                status: Status::Success,
                len: total,
                immediate: desc.immediate,
            },
        );
        Ok(Some(id))
    }

    /// Post a send descriptor without ringing the doorbell, whatever the NIC's
    /// `deferred_doorbell` says: the transfer starts at the next [`Nic::doorbell`] (or the
    /// next poll or wait on its CQ).
    pub fn post_send_deferred(
        &mut self,
        vi: ViHandle,
        desc: &Descriptor,
    ) -> Result<DescId, VipError> {
        self.post(vi, WorkQueue::Send, desc)
    }

    /// Post a receive descriptor (VipPostRecv). Post receives before the peer can send:
    /// a message that finds none is an error.
    pub fn post_recv(&mut self, vi: ViHandle, desc: &Descriptor) -> Result<DescId, VipError> {
        self.post(vi, WorkQueue::Recv, desc)
    }

    /// Ring the doorbell: start moving whatever is posted on `vi`.
    pub fn doorbell(&mut self, vi: ViHandle) -> Result<(), VipError> {
        get(&self.vis, vi.0)?;
        self.progress(vi.0 as usize);
        Ok(())
    }

    /// State of a descriptor: `Posted`/`InProgress` while queued, `Done`/`Error` while its
    /// completion waits on the CQ, `None` once reaped (or never posted).
    pub fn desc_state(&self, vi: ViHandle, wq: WorkQueue, id: DescId) -> Option<DescState> {
        let v = get(&self.vis, vi.0).ok()?;
        let (q, cq) = match wq {
            WorkQueue::Send => (&v.sq, v.send_cq),
            WorkQueue::Recv => (&v.rq, v.recv_cq),
        };
        if let Some(p) = q.iter().find(|p| p.id == id) {
            let started = p.done > 0
                || p.handed
                || (wq == WorkQueue::Recv
                    && q.front().map(|f| f.id) == Some(id)
                    && matches!(v.rx, Rx::Payload { deliver: true, .. }));
            return Some(if started {
                DescState::InProgress
            } else {
                DescState::Posted
            });
        }
        let c = get(&self.cqs, cq.0)
            .ok()?
            .q
            .iter()
            .find(|c| c.vi == vi && c.queue == wq && c.id == Some(id))?;
        Some(if c.is_ok() {
            DescState::Done
        } else {
            DescState::Error(c.status)
        })
    }

    /// Counters of a VI.
    pub fn vi_stats(&self, vi: ViHandle) -> Result<ViStats, VipError> {
        let v = get(&self.vis, vi.0)?;
        let mut st = v.stats;
        if let Some(w) = &v.wire {
            (st.zc_sends, st.zc_copied) = w.zc_counts();
        }
        Ok(st)
    }

    /// What carries the VI's connection, as the kernel reports its socket ([`Carrier`]);
    /// `None` while it is not connected.
    pub fn carrier(&self, vi: ViHandle) -> Result<Option<Carrier>, VipError> {
        let v = get(&self.vis, vi.0)?;
        match &v.wire {
            None => Ok(None),
            Some(w) => Ok(Some(w.carrier().map_err(VipError::Io)?)),
        }
    }

    /// Is the VI connected and healthy?
    pub fn is_connected(&self, vi: ViHandle) -> bool {
        get(&self.vis, vi.0).is_ok_and(|v| v.conn == Conn::Connected)
    }

    /// Take one completion if any, after moving bytes for every VI on this CQ (VipCQDone).
    pub fn cq_poll(&mut self, cq: CqHandle) -> Result<Option<Completion>, VipError> {
        if let Some(c) = get_mut(&mut self.cqs, cq.0)?.q.pop_front() {
            return Ok(Some(c));
        }
        for i in 0..self.vis.len() {
            if self.vis[i].as_ref().is_some_and(|v| {
                v.conn == Conn::Connected && (v.send_cq == cq || v.recv_cq == cq) && !v.quiet()
            }) {
                self.progress(i);
            }
        }
        Ok(get_mut(&mut self.cqs, cq.0)?.q.pop_front())
    }

    /// Wait up to `timeout` for a completion on `cq` (VipCQWait), spinning or sleeping.
    pub fn cq_wait(
        &mut self,
        cq: CqHandle,
        timeout: Duration,
        mode: WaitMode,
    ) -> Result<Completion, VipError> {
        if let Some(c) = self.cq_poll(cq)? {
            return Ok(c);
        }
        let start = Instant::now();
        let mut last_alive = start;
        let mut spins = 0u32;
        loop {
            if let Some(c) = self.cq_poll(cq)? {
                return Ok(c);
            }
            match mode {
                WaitMode::Poll => {
                    // No pause instruction between passes: on the CPUs measured it was the
                    // largest single cost of the shared-memory round trip (docs/bench.md,
                    // "The floor"), and a polling wait burns its core by design. One pause
                    // per 64 passes, with the clock checks.
                    spins = spins.wrapping_add(1);
                    if spins % 64 != 0 {
                        continue;
                    }
                    std::hint::spin_loop();
                    let now = Instant::now();
                    if now.duration_since(start) >= timeout {
                        return Err(VipError::Timeout);
                    }
                    if now.duration_since(last_alive) >= Duration::from_millis(1) {
                        last_alive = now;
                        for i in self.cq_users(cq) {
                            self.wire_op(i, |w, _| w.check_alive());
                        }
                    }
                }
                WaitMode::Block => {
                    let users = self.cq_users(cq);
                    let elapsed = start.elapsed();
                    if elapsed >= timeout {
                        return Err(VipError::Timeout);
                    }
                    let left = timeout - elapsed;
                    let slice = if users.len() == 1 {
                        left
                    } else {
                        left.min(Duration::from_millis(1))
                    };
                    if users.is_empty() {
                        std::thread::sleep(slice.min(Duration::from_millis(1)));
                    }
                    for i in users {
                        self.wire_op(i, |w, want_write| w.wait(want_write, slice));
                    }
                }
            }
        }
    }

    /// Indices of the connected VIs feeding `cq`.
    fn cq_users(&self, cq: CqHandle) -> Vec<usize> {
        (0..self.vis.len())
            .filter(|&i| {
                self.vis[i].as_ref().is_some_and(|v| {
                    v.conn == Conn::Connected && (v.send_cq == cq || v.recv_cq == cq)
                })
            })
            .collect()
    }

    /// Run a wire operation on VI `i`; a failure breaks the connection.
    fn wire_op(&mut self, i: usize, f: impl FnOnce(&mut dyn Wire, bool) -> Result<(), WireError>) {
        let Some(Some(v)) = self.vis.get_mut(i) else {
            return;
        };
        let want_write = !v.sq.is_empty();
        let r = match v.wire.as_mut() {
            Some(w) => f(w.as_mut(), want_write),
            None => Ok(()),
        };
        if let Err(e) = r {
            self.fail(i, e);
        }
    }

    /// Disconnect (VipDisconnect): every posted descriptor completes with `Flushed`; the VI
    /// returns to idle and may connect again.
    pub fn disconnect(&mut self, vi: ViHandle) -> Result<(), VipError> {
        let v = get_mut(&mut self.vis, vi.0)?;
        if v.conn == Conn::Idle && v.sq.is_empty() && v.rq.is_empty() {
            return Err(VipError::NotConnected);
        }
        if let Some(mut w) = v.wire.take() {
            w.close();
        }
        self.flush(vi.0 as usize, Status::Flushed, false);
        if let Some(Some(v)) = self.vis.get_mut(vi.0 as usize) {
            v.conn = Conn::Idle;
            v.rx = RX_IDLE;
        }
        Ok(())
    }

    /// Close the NIC (VipCloseNic): disconnects every VI.
    pub fn close(mut self) {
        for i in 0..self.vis.len() {
            if self.vis[i]
                .as_ref()
                .is_some_and(|v| v.conn == Conn::Connected)
            {
                let _ = self.disconnect(ViHandle(i as u32));
            }
        }
    }
}
