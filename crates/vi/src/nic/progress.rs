//! The provider's engine: moving bytes between work queues and the wire, and completing
//! descriptors (000 §III.A: "after a request is processed, the VI provider marks the
//! descriptors with a status value").
//!
//! Contract: framing is an 8-byte header (length u32 LE, immediate u32 LE) then the payload;
//! a send descriptor completes once its last byte is on the wire, a receive descriptor once
//! its message is in its buffers; a message with no receive posted is a `NoRecvDescriptor`
//! completion and is discarded; any wire failure breaks the VI and flushes every posted
//! descriptor with an error status (and leaves one completion even if none was posted).

use super::{push_cq, Conn, Nic, Posted, Rx, Vi, ViHandle, HEADER_BYTES, RX_IDLE};
use crate::desc::{Completion, Status, WorkQueue, MAX_SEGMENTS};
use crate::wire::{WireBuf, WireError};

/// Most messages in one gathered write (`NicConfig::gather_sends`): io_uring's gathered
/// `SENDMSG` takes as many (`uring.rs`), and 128 × (1 + MAX_SEGMENTS) buffers stay below
/// IOV_MAX (1024).
const GATHER_MAX: usize = 128;

/// Send descriptor `p`, taken off its queue, has all its bytes on the wire: unpin its
/// memory, count it, and complete it successfully.
fn finish_send(
    p: &Posted,
    mem: &mut crate::mem::MemTable,
    stats: &mut crate::ViStats,
    cqs: &mut [Option<super::Cq>],
    send_cq: crate::CqHandle,
    vi: ViHandle,
) {
    let total = p.desc.total_len();
    mem.pin(p.desc.segments(), false);
    stats.sent_msgs += 1;
    stats.sent_bytes += total as u64;
    let c = completed(
        vi,
        WorkQueue::Send,
        p,
        Status::Success,
        total,
        p.desc.immediate,
    );
    push_cq(cqs, send_cq, c);
}

/// Receive descriptor `p`, taken off its queue, holds a whole message of `len` bytes with
/// immediate data `imm`: unpin its memory, count it, and complete it successfully.
#[allow(clippy::too_many_arguments)]
fn finish_recv(
    p: &Posted,
    len: usize,
    imm: u32,
    mem: &mut crate::mem::MemTable,
    stats: &mut crate::ViStats,
    cqs: &mut [Option<super::Cq>],
    recv_cq: crate::CqHandle,
    vi: ViHandle,
) {
    mem.pin(p.desc.segments(), false);
    stats.recv_msgs += 1;
    stats.recv_bytes += len as u64;
    push_cq(
        cqs,
        recv_cq,
        completed(vi, WorkQueue::Recv, p, Status::Success, len, imm),
    );
}

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

    fn progress_inner(&mut self, i: usize) -> Result<(), WireError> {
        let gather = self.cfg.gather_sends && !self.backend.is_udp();
        let gather_datagrams = self.cfg.gather_sends && self.backend.is_udp();
        let Nic { vis, cqs, mem, .. } = self;
        let Some(Some(v)) = vis.get_mut(i) else {
            return Ok(());
        };
        let vi = ViHandle(i as u32);
        let Some(wire) = v.wire.as_mut() else {
            return Ok(());
        };
        if wire.is_async() {
            // Doorbell of a completion-based backend (io_uring): hand every descriptor not
            // yet handed over to the wire as one batch (submitted by `flush`), then
            // complete, in posting order, those whose bytes the kernel has finished with.
            for p in v.sq.iter_mut().filter(|p| !p.handed) {
                let hdr = header(p);
                let mut bufs = [WireBuf {
                    bytes: &[],
                    region: None,
                }; MAX_SEGMENTS + 1];
                bufs[0].bytes = &hdr;
                for (k, s) in p.desc.segments().iter().enumerate() {
                    bufs[k + 1] = WireBuf {
                        bytes: mem.seg(s),
                        region: mem.region_ref(s.mem),
                    };
                }
                if !wire.submit(&bufs[..p.desc.segments().len() + 1])? {
                    break;
                }
                p.handed = true;
            }
            let mut n = wire.take_sent()?;
            while n > 0 {
                let Some(p) = v.sq.front_mut() else { break };
                let total = p.desc.total_len();
                let k = n.min(total + HEADER_BYTES - p.done);
                p.done += k;
                n -= k;
                if p.done < total + HEADER_BYTES {
                    break;
                }
                let p = v.sq.pop_front().expect("front exists");
                finish_send(&p, mem, &mut v.stats, cqs, v.send_cq, vi);
            }
        }
        // Gathered send over datagrams (`NicConfig::gather_sends` on UDP): every queued
        // message as its own datagram, the batch in one call (sendmmsg).
        while gather_datagrams && !v.sq.is_empty() {
            let m = v.sq.len().min(GATHER_MAX);
            let mut hdrs = [[0u8; HEADER_BYTES]; GATHER_MAX];
            for (h, p) in hdrs.iter_mut().zip(v.sq.iter()) {
                *h = header(p);
            }
            let pieces: Vec<Vec<&[u8]>> =
                v.sq.iter()
                    .take(m)
                    .zip(hdrs.iter())
                    .map(|(p, hdr)| {
                        std::iter::once(&hdr[..])
                            .chain(p.desc.segments().iter().map(|s| mem.seg(s)))
                            .collect()
                    })
                    .collect();
            let msgs: Vec<&[&[u8]]> = pieces.iter().map(Vec::as_slice).collect();
            let n = wire.write_messages(&msgs)?;
            drop(msgs);
            drop(pieces);
            for _ in 0..n {
                let p = v.sq.pop_front().expect("sent messages were queued");
                finish_send(&p, mem, &mut v.stats, cqs, v.send_cq, vi);
            }
            if n < m {
                break;
            }
        }
        // Gathered send (`NicConfig::gather_sends`): the headers and segments of every
        // queued message, from where the front one stopped, in one write.
        while gather && !wire.is_async() && !v.sq.is_empty() {
            let m = v.sq.len().min(GATHER_MAX);
            let mut hdrs = [[0u8; HEADER_BYTES]; GATHER_MAX];
            for (h, p) in hdrs.iter_mut().zip(v.sq.iter()) {
                *h = header(p);
            }
            let mut bufs: Vec<&[u8]> = Vec::with_capacity(m * (MAX_SEGMENTS + 1));
            for (p, hdr) in v.sq.iter().take(m).zip(hdrs.iter()) {
                let mut skip = p.done;
                if skip < HEADER_BYTES {
                    bufs.push(&hdr[skip..]);
                    skip = 0;
                } else {
                    skip -= HEADER_BYTES;
                }
                for s in p.desc.segments() {
                    let b = mem.seg(s);
                    if skip >= b.len() {
                        skip -= b.len();
                        continue;
                    }
                    bufs.push(&b[skip..]);
                    skip = 0;
                }
            }
            let want: usize = bufs.iter().map(|b| b.len()).sum();
            let n = if want == 0 { 0 } else { wire.write(&bufs)? };
            drop(bufs);
            let mut left = n;
            while let Some(p) = v.sq.front_mut() {
                let k = left.min(p.desc.total_len() + HEADER_BYTES - p.done);
                p.done += k;
                left -= k;
                if p.done < p.desc.total_len() + HEADER_BYTES {
                    break;
                }
                let p = v.sq.pop_front().expect("front exists");
                finish_send(&p, mem, &mut v.stats, cqs, v.send_cq, vi);
            }
            if n < want {
                break;
            }
        }
        // Send side: gather header + segments from where the front descriptor stopped.
        while let Some(p) = v.sq.front_mut().filter(|_| !wire.is_async()) {
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
                let b = mem.seg(s);
                if skip >= b.len() {
                    skip -= b.len();
                    continue;
                }
                bufs[k] = &b[skip..];
                skip = 0;
                k += 1;
            }
            let n = if k == 0 { 0 } else { wire.write(&bufs[..k])? };
            p.done += n;
            if p.done < total + HEADER_BYTES {
                break;
            }
            let p = v.sq.pop_front().expect("front exists");
            finish_send(&p, mem, &mut v.stats, cqs, v.send_cq, vi);
        }
        // Receive side. First the short cut: whole messages straight into single-segment
        // receive descriptors, when the wire has them whole (shared memory).
        while matches!(v.rx, Rx::Header { got: 0, .. }) {
            let Some(s) = v.rq.front().and_then(|p| match p.desc.segments() {
                [s] => Some(*s),
                _ => None,
            }) else {
                break;
            };
            let Some((len, imm)) = wire.recv_now(mem.seg_mut(&s))? else {
                break;
            };
            let p = v.rq.pop_front().expect("front exists");
            finish_recv(&p, len, imm, mem, &mut v.stats, cqs, v.recv_cq, vi);
        }
        loop {
            match &mut v.rx {
                Rx::Header { buf, got } => {
                    let n = wire.read(&mut buf[*got..], None)?;
                    *got += n;
                    if *got < HEADER_BYTES {
                        return Ok(());
                    }
                    let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                    let imm = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
                    let deliver = match v.rq.front() {
                        None => {
                            // 000 §III.A / VI: a message needs a posted receive descriptor.
                            v.stats.recv_no_descriptor += 1;
                            push_cq(
                                cqs,
                                v.recv_cq,
                                without_descriptor(
                                    vi,
                                    WorkQueue::Recv,
                                    Status::NoRecvDescriptor,
                                    len,
                                    imm,
                                ),
                            );
                            false
                        }
                        Some(p) if p.desc.total_len() < len => {
                            let p = v.rq.pop_front().expect("front exists");
                            mem.pin(p.desc.segments(), false);
                            v.stats.length_errors += 1;
                            push_cq(
                                cqs,
                                v.recv_cq,
                                completed(vi, WorkQueue::Recv, &p, Status::LengthError, len, imm),
                            );
                            false
                        }
                        Some(_) => true,
                    };
                    v.rx = Rx::Payload {
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
                        let want = *len - *got;
                        let n = if *deliver {
                            let p =
                                v.rq.front_mut()
                                    .expect("delivering into the front descriptor");
                            let mut skip = *got;
                            let mut n = 0;
                            for s in p.desc.segments() {
                                if skip >= s.len {
                                    skip -= s.len;
                                    continue;
                                }
                                let region = mem.region_ref(s.mem);
                                let b = mem.seg_mut(s);
                                let end = b.len().min(skip + want);
                                n = wire.read(&mut b[skip..end], region)?;
                                break;
                            }
                            p.done += n;
                            n
                        } else {
                            let mut scratch = [0u8; 4096];
                            let m = want.min(scratch.len());
                            wire.read(&mut scratch[..m], None)?
                        };
                        *got += n;
                        if n == 0 {
                            return Ok(());
                        }
                        continue;
                    }
                    let (len, imm, deliver) = (*len, *imm, *deliver);
                    if deliver {
                        let p = v.rq.pop_front().expect("front exists");
                        finish_recv(&p, len, imm, mem, &mut v.stats, cqs, v.recv_cq, vi);
                    }
                    v.rx = RX_IDLE;
                }
            }
        }
    }
}
