//! The provider's engine: moving bytes between work queues and the wire, and completing
//! descriptors (000 §III.A: "after a request is processed, the VI provider marks the
//! descriptors with a status value").
//!
//! Contract: framing is an 8-byte header (length u32 LE, immediate u32 LE) then the payload;
//! a send descriptor completes once its last byte is on the wire, a receive descriptor once
//! its message is in its buffers; a message with no receive posted is a `NoRecvDescriptor`
//! completion and is discarded; any wire failure breaks the VI and flushes every posted
//! descriptor with an error status (and leaves one completion even if none was posted).
//!
//! A progress pass (`Nic::progress`) runs in phases, each a method of `Pass`: the send
//! phases that apply to the wire (asynchronous doorbell, gathered datagrams, gathered stream
//! write, then one descriptor at a time), then the receive phases (whole messages straight
//! into single-segment descriptors, then the byte stream: header, then payload).

use std::collections::VecDeque;

use super::{push_cq, Conn, Cq, Nic, Posted, Rx, Vi, ViHandle, HEADER_BYTES, RX_IDLE};
use crate::desc::{Completion, Status, WorkQueue, MAX_SEGMENTS};
use crate::mem::MemTable;
use crate::wire::{Wire, WireBuf, WireError};
use crate::{CqHandle, ViStats};

/// Most messages in one gathered write (`NicConfig::gather_sends`): io_uring's gathered
/// `SENDMSG` takes as many (`uring.rs`), and 128 × (1 + MAX_SEGMENTS) buffers stay below
/// IOV_MAX (1024).
const GATHER_MAX: usize = 128;

/// The completion of posted descriptor `p`.
fn completed(
    vi: ViHandle,
    queue: WorkQueue,
    p: &Posted,
    status: Status,
    len: usize,
    immediate: u32,
) -> Completion {
    Completion {
        vi,
        queue,
        id: Some(p.id),
        tag: p.desc.tag,
        status,
        len,
        immediate,
    }
}

/// A completion with no descriptor behind it (a message that found no receive descriptor, or
/// a connection lost while nothing was posted).
fn without_descriptor(
    vi: ViHandle,
    queue: WorkQueue,
    status: Status,
    len: usize,
    immediate: u32,
) -> Completion {
    Completion {
        vi,
        queue,
        id: None,
        tag: 0,
        status,
        len,
        immediate,
    }
}

/// The wire header of a send descriptor: payload length and immediate data, little-endian.
fn header(p: &Posted) -> [u8; HEADER_BYTES] {
    let mut hdr = [0u8; HEADER_BYTES];
    hdr[..4].copy_from_slice(&(p.desc.total_len() as u32).to_le_bytes());
    hdr[4..].copy_from_slice(&p.desc.immediate.to_le_bytes());
    hdr
}

impl Nic {
    pub(super) fn fail(&mut self, i: usize, e: WireError) {
        let status = match e {
            WireError::Closed => Status::PeerClosed,
            WireError::PeerGone => Status::PeerGone,
            WireError::Corrupt => Status::ProtocolError,
        };
        if let Some(Some(v)) = self.vis.get_mut(i) {
            v.conn = Conn::Broken;
            v.wire = None;
        }
        self.flush(i, status, true);
    }

    /// Complete every posted descriptor of VI `i` with `status`; if `always_report` and
    /// nothing was posted, leave one descriptor-less completion so a waiter learns.
    pub(super) fn flush(&mut self, i: usize, status: Status, always_report: bool) {
        let Nic { vis, cqs, mem, .. } = self;
        let Some(Some(v)) = vis.get_mut(i) else {
            return;
        };
        let vi = ViHandle(i as u32);
        let mut any = false;
        for (wq, q, cq) in [
            (WorkQueue::Send, &mut v.sq, v.send_cq),
            (WorkQueue::Recv, &mut v.rq, v.recv_cq),
        ] {
            while let Some(p) = q.pop_front() {
                mem.pin(p.desc.segments(), false);
                v.stats.flushed += 1;
                any = true;
                push_cq(cqs, cq, completed(vi, wq, &p, status, 0, 0));
            }
        }
        if always_report && !any {
            push_cq(
                cqs,
                v.recv_cq,
                without_descriptor(vi, WorkQueue::Recv, status, 0, 0),
            );
        }
    }

    /// Move bytes for VI `i`: send queue onto the wire, wire into receive descriptors.
    pub(super) fn progress(&mut self, i: usize) {
        let r = self.progress_inner(i);
        if let Some(Some(Vi { wire: Some(w), .. })) = self.vis.get_mut(i) {
            w.flush();
        }
        if let Err(e) = r {
            self.fail(i, e);
        }
    }

    /// One progress pass over VI `i`, phase by phase: the send phases that apply to its wire
    /// ([`Pass::send_async`], [`Pass::send_datagrams`], [`Pass::send_gathered`],
    /// [`Pass::send_front`]), then the receive phases ([`Pass::recv_whole`],
    /// [`Pass::recv_stream`]).
    fn progress_inner(&mut self, i: usize) -> Result<(), WireError> {
        let gather = self.cfg.gather_sends && !self.backend.is_udp();
        let gather_datagrams = self.cfg.gather_sends && self.backend.is_udp();
        let Nic { vis, cqs, mem, .. } = self;
        let Some(Some(v)) = vis.get_mut(i) else {
            return Ok(());
        };
        let Vi {
            send_cq,
            recv_cq,
            wire,
            sq,
            rq,
            rx,
            stats,
            ..
        } = v;
        let Some(wire) = wire.as_deref_mut() else {
            return Ok(());
        };
        let mut pass = Pass {
            vi: ViHandle(i as u32),
            wire,
            sq,
            rq,
            stats,
            send_cq: *send_cq,
            recv_cq: *recv_cq,
            mem,
            cqs,
        };
        if pass.wire.is_async() {
            pass.send_async()?;
        }
        if gather_datagrams {
            pass.send_datagrams()?;
        }
        if gather {
            pass.send_gathered()?;
        }
        pass.send_front()?;
        pass.recv_whole(rx)?;
        pass.recv_stream(rx)
    }
}

/// One progress pass over one VI: its wire, work queues and counters, borrowed apart from its
/// receive state (`Rx`, which the receive phases take beside it), with the NIC's memory table
/// and completion queues the pass completes descriptors into.
struct Pass<'a> {
    vi: ViHandle,
    wire: &'a mut dyn Wire,
    sq: &'a mut VecDeque<Posted>,
    rq: &'a mut VecDeque<Posted>,
    stats: &'a mut ViStats,
    send_cq: CqHandle,
    recv_cq: CqHandle,
    mem: &'a mut MemTable,
    cqs: &'a mut [Option<Cq>],
}

impl Pass<'_> {
    /// Send descriptor `p`, taken off its queue, has all its bytes on the wire: unpin its
    /// memory, count it, and complete it successfully.
    fn finish_send(&mut self, p: &Posted) {
        let total = p.desc.total_len();
        self.mem.pin(p.desc.segments(), false);
        self.stats.sent_msgs += 1;
        self.stats.sent_bytes += total as u64;
        let c = completed(
            self.vi,
            WorkQueue::Send,
            p,
            Status::Success,
            total,
            p.desc.immediate,
        );
        push_cq(self.cqs, self.send_cq, c);
    }

    /// Receive descriptor `p`, taken off its queue, holds a whole message of `len` bytes with
    /// immediate data `imm`: unpin its memory, count it, and complete it successfully.
    fn finish_recv(&mut self, p: &Posted, len: usize, imm: u32) {
        self.mem.pin(p.desc.segments(), false);
        self.stats.recv_msgs += 1;
        self.stats.recv_bytes += len as u64;
        push_cq(
            self.cqs,
            self.recv_cq,
            completed(self.vi, WorkQueue::Recv, p, Status::Success, len, imm),
        );
    }

    /// Doorbell of a completion-based backend (io_uring): hand every descriptor not yet
    /// handed over to the wire as one batch (submitted by `flush`), then complete, in posting
    /// order, those whose bytes the kernel has finished with.
    fn send_async(&mut self) -> Result<(), WireError> {
        for p in self.sq.iter_mut().filter(|p| !p.handed) {
            let hdr = header(p);
            let mut bufs = [WireBuf {
                bytes: &[],
                region: None,
            }; MAX_SEGMENTS + 1];
            bufs[0].bytes = &hdr;
            for (k, s) in p.desc.segments().iter().enumerate() {
                bufs[k + 1] = WireBuf {
                    bytes: self.mem.seg(s),
                    region: self.mem.region_ref(s.mem),
                };
            }
            if !self.wire.submit(&bufs[..p.desc.segments().len() + 1])? {
                break;
            }
            p.handed = true;
        }
        let mut n = self.wire.take_sent()?;
        while n > 0 {
            let Some(p) = self.sq.front_mut() else { break };
            let total = p.desc.total_len();
            let k = n.min(total + HEADER_BYTES - p.done);
            p.done += k;
            n -= k;
            if p.done < total + HEADER_BYTES {
                break;
            }
            let p = self.sq.pop_front().expect("front exists");
            self.finish_send(&p);
        }
        Ok(())
    }

    /// Gathered send over datagrams (`NicConfig::gather_sends` on UDP): every queued message
    /// as its own datagram, the batch in one call (sendmmsg).
    fn send_datagrams(&mut self) -> Result<(), WireError> {
        while !self.sq.is_empty() {
            let m = self.sq.len().min(GATHER_MAX);
            let mut hdrs = [[0u8; HEADER_BYTES]; GATHER_MAX];
            for (h, p) in hdrs.iter_mut().zip(self.sq.iter()) {
                *h = header(p);
            }
            let mem = &*self.mem;
            let pieces: Vec<Vec<&[u8]>> = self
                .sq
                .iter()
                .take(m)
                .zip(hdrs.iter())
                .map(|(p, hdr)| {
                    std::iter::once(&hdr[..])
                        .chain(p.desc.segments().iter().map(|s| mem.seg(s)))
                        .collect()
                })
                .collect();
            let msgs: Vec<&[&[u8]]> = pieces.iter().map(Vec::as_slice).collect();
            let n = self.wire.write_messages(&msgs)?;
            drop(msgs);
            drop(pieces);
            for _ in 0..n {
                let p = self.sq.pop_front().expect("sent messages were queued");
                self.finish_send(&p);
            }
            if n < m {
                break;
            }
        }
        Ok(())
    }

    /// Gathered send (`NicConfig::gather_sends`): the headers and segments of every queued
    /// message, from where the front one stopped, in one write (not on an asynchronous wire).
    fn send_gathered(&mut self) -> Result<(), WireError> {
        while !self.wire.is_async() && !self.sq.is_empty() {
            let m = self.sq.len().min(GATHER_MAX);
            let mut hdrs = [[0u8; HEADER_BYTES]; GATHER_MAX];
            for (h, p) in hdrs.iter_mut().zip(self.sq.iter()) {
                *h = header(p);
            }
            let mut bufs: Vec<&[u8]> = Vec::with_capacity(m * (MAX_SEGMENTS + 1));
            for (p, hdr) in self.sq.iter().take(m).zip(hdrs.iter()) {
                let mut skip = p.done;
                if skip < HEADER_BYTES {
                    bufs.push(&hdr[skip..]);
                    skip = 0;
                } else {
                    skip -= HEADER_BYTES;
                }
                for s in p.desc.segments() {
                    let b = self.mem.seg(s);
                    if skip >= b.len() {
                        skip -= b.len();
                        continue;
                    }
                    bufs.push(&b[skip..]);
                    skip = 0;
                }
            }
            let want: usize = bufs.iter().map(|b| b.len()).sum();
            let n = if want == 0 {
                0
            } else {
                self.wire.write(&bufs)?
            };
            drop(bufs);
            let mut left = n;
            while let Some(p) = self.sq.front_mut() {
                let k = left.min(p.desc.total_len() + HEADER_BYTES - p.done);
                p.done += k;
                left -= k;
                if p.done < p.desc.total_len() + HEADER_BYTES {
                    break;
                }
                let p = self.sq.pop_front().expect("front exists");
                self.finish_send(&p);
            }
            if n < want {
                break;
            }
        }
        Ok(())
    }

    /// Send side, one descriptor at a time (not on an asynchronous wire): gather header +
    /// segments from where the front descriptor stopped.
    fn send_front(&mut self) -> Result<(), WireError> {
        while let Some(p) = self.sq.front_mut().filter(|_| !self.wire.is_async()) {
            let total = p.desc.total_len();
            let hdr = header(p);
            let mut bufs: [&[u8]; MAX_SEGMENTS + 1] = [&[]; MAX_SEGMENTS + 1];
            let mut k = 0;
            let mut skip = p.done;
            if skip < HEADER_BYTES {
                bufs[0] = &hdr[skip..];
                k = 1;
                skip = 0;
            } else {
                skip -= HEADER_BYTES;
            }
            for s in p.desc.segments() {
                let b = self.mem.seg(s);
                if skip >= b.len() {
                    skip -= b.len();
                    continue;
                }
                bufs[k] = &b[skip..];
                skip = 0;
                k += 1;
            }
            let n = if k == 0 {
                0
            } else {
                self.wire.write(&bufs[..k])?
            };
            p.done += n;
            if p.done < total + HEADER_BYTES {
                break;
            }
            let p = self.sq.pop_front().expect("front exists");
            self.finish_send(&p);
        }
        Ok(())
    }

    /// Receive side, the short cut: whole messages straight into single-segment receive
    /// descriptors, when the wire has them whole (shared memory) and no message is part-way
    /// in (`rx`).
    fn recv_whole(&mut self, rx: &Rx) -> Result<(), WireError> {
        if !matches!(rx, Rx::Header { got: 0, .. }) {
            return Ok(());
        }
        while let Some(s) = self.rq.front().and_then(|p| match p.desc.segments() {
            [s] => Some(*s),
            _ => None,
        }) {
            let Some((len, imm)) = self.wire.recv_now(self.mem.seg_mut(&s))? else {
                break;
            };
            let p = self.rq.pop_front().expect("front exists");
            self.finish_recv(&p, len, imm);
        }
        Ok(())
    }

    /// Receive side, from the byte stream: the header into `rx`, then the payload into the
    /// front receive descriptor (or discarded), until the wire has no more bytes.
    fn recv_stream(&mut self, rx: &mut Rx) -> Result<(), WireError> {
        loop {
            match rx {
                Rx::Header { buf, got } => {
                    let n = self.wire.read(&mut buf[*got..], None)?;
                    *got += n;
                    if *got < HEADER_BYTES {
                        return Ok(());
                    }
                    let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                    let imm = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
                    let deliver = self.admit(len, imm);
                    *rx = Rx::Payload {
                        len,
                        got: 0,
                        imm,
                        deliver,
                    };
                }
                Rx::Payload {
                    len,
                    got,
                    imm,
                    deliver,
                } => {
                    if *got < *len {
                        let n = self.read_payload(*got, *len - *got, *deliver)?;
                        *got += n;
                        if n == 0 {
                            return Ok(());
                        }
                        continue;
                    }
                    let (len, imm, deliver) = (*len, *imm, *deliver);
                    if deliver {
                        let p = self.rq.pop_front().expect("front exists");
                        self.finish_recv(&p, len, imm);
                    }
                    *rx = RX_IDLE;
                }
            }
        }
    }

    /// A header announced a message of `len` bytes with immediate data `imm`: whether the
    /// front receive descriptor takes it. With none posted it is a `NoRecvDescriptor`
    /// completion, with one too short a `LengthError` completion; either way the payload is
    /// then discarded.
    fn admit(&mut self, len: usize, imm: u32) -> bool {
        match self.rq.front() {
            None => {
                // 000 §III.A / VI: a message needs a posted receive descriptor.
                self.stats.recv_no_descriptor += 1;
                push_cq(
                    self.cqs,
                    self.recv_cq,
                    without_descriptor(
                        self.vi,
                        WorkQueue::Recv,
                        Status::NoRecvDescriptor,
                        len,
                        imm,
                    ),
                );
                false
            }
            Some(p) if p.desc.total_len() < len => {
                let p = self.rq.pop_front().expect("front exists");
                self.mem.pin(p.desc.segments(), false);
                self.stats.length_errors += 1;
                push_cq(
                    self.cqs,
                    self.recv_cq,
                    completed(self.vi, WorkQueue::Recv, &p, Status::LengthError, len, imm),
                );
                false
            }
            Some(_) => true,
        }
    }

    /// Up to `want` payload bytes, `got` of the message already in: into the front receive
    /// descriptor's segment holding byte `got` when `deliver`, else read and discarded.
    /// Returns the bytes read (0: the wire has none now).
    fn read_payload(&mut self, got: usize, want: usize, deliver: bool) -> Result<usize, WireError> {
        if !deliver {
            let mut scratch = [0u8; 4096];
            let m = want.min(scratch.len());
            return self.wire.read(&mut scratch[..m], None);
        }
        let p = self
            .rq
            .front_mut()
            .expect("delivering into the front descriptor");
        let mut skip = got;
        let mut n = 0;
        for s in p.desc.segments() {
            if skip >= s.len {
                skip -= s.len;
                continue;
            }
            let region = self.mem.region_ref(s.mem);
            let b = self.mem.seg_mut(s);
            let end = b.len().min(skip + want);
            n = self.wire.read(&mut b[skip..end], region)?;
            break;
        }
        p.done += n;
        Ok(n)
    }
}
