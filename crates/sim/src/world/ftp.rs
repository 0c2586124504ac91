//! FTP bulk transfers over TCP in the world (004 §III.B).
//!
//! Contract. An `ftp` flow is a TCP sender at node `from` with `size_bytes` to send and a
//! receiver at node `to`. Both are the sans-IO machines of [`crate::tcp`]; this file only
//! carries their segments as real IPv4/TCP packets (data from the flow's source endpoint,
//! `packet::address` and `packet::source_port`, to the flow's port, ACKs back), finds the flow
//! of each arriving packet from its endpoints (`tcp_arrive`, for WWW flows too), arms one
//! timer event per end, and keeps the application's count:
//! bytes delivered in order and the time of the last one. Throughput in the results is
//! application bytes over the time from the flow's start to its last byte (retransmissions
//! not counted); a transfer that does not finish reports what it delivered by the end of the
//! run. Packet buffers are recycled through the world's pool, so a steady transfer allocates
//! nothing per packet on wired paths.
//!
//! With `tcp.handshake` the sender's SYN and FIN go to the receiver and the receiver's
//! SYN-ACK and FIN to the sender: a packet is routed by the node it reaches, not by whether it
//! carries data. The flow still completes when its last byte arrives (the time reported); a
//! run of transfers waits for each connection to close as well (both FINs acknowledged), so
//! the close is on the capture and in the sender's `closed` counter.
//!
//! The sender's smoothed RTT is read every [`SRTT_TICK`] from the flow's start to its last
//! byte (or the run's end), as iperf3 `-i 0.1` reads the kernel's `tcpi_rtt` at the end of
//! each interval: the value at tick t is the SRTT after the last ACK before t (ticks before
//! the first RTT sample have none and are skipped). The results give its 50th, 95th and 99th
//! percentiles in the delay percentile columns (`mslink validate` sets them beside the
//! kernel's), in memory that does not grow with the run (`delays.rs`).
//!
//! A `stop_s` ends an `ftp` flow's measurement as iperf3's receiver ends its own: iperf3's
//! client stops writing at the end of its test and sends its end-of-test message on another
//! connection, which queues behind the data already sent, and the server counts what it read
//! until that message arrives. So the flow's bytes are those delivered in order when the
//! first data segment sent at or after `stop_s` reaches the receiver (by its RFC 7323 TSval,
//! or without timestamps the first new data sent after `stop_s`), over the time from the
//! flow's start to then; its segments, retransmissions and timeouts and its SRTT readings
//! are those up to `stop_s` (what iperf3 reads from `TCP_INFO` when its test ends). The
//! connection goes on sending, as a kernel sender empties its socket buffer; a flow whose
//! marker has not arrived when the run ends reports what it delivered by then.

use mslink_link::{Duration, Instant};

use super::delays::Delays;
use super::{Ev, FlowResult, World};
use crate::packet;
use crate::tcp::segment::{self, Endpoints, WireSegment};
use crate::tcp::{Receiver, Segment, Sender};

/// One TCP connection and its application counters.
pub(super) struct TcpFlow {
    sender: Sender,
    receiver: Receiver,
    /// Endpoints of data segments (ACKs use the reverse).
    data: Endpoints,
    from: usize,
    to: usize,
    total: u64,
    start: Instant,
    done_at: Option<Instant>,
    /// Earliest pending timer event of the sender (0) and the receiver (1).
    armed: [Option<Instant>; 2],
    malformed: u64,
    /// The transport name in results (`TcpConfig::transport_name`).
    transport: &'static str,
    handshake: bool,
    /// Whether this flow has been counted off `tcp_left`.
    finished: bool,
    /// The sender's SRTT at each [`SRTT_TICK`] so far, and the next tick.
    srtt: Delays,
    next_tick: Instant,
    /// `stop_s`: when the measurement ends (see the module contract).
    stop: Option<Instant>,
    /// At the first look at or after `stop`: the sender's highest sequence sent and its
    /// segments, retransmissions and timeouts then.
    at_stop: Option<AtStop>,
    /// When the first segment sent at or after `stop` arrived, and the bytes delivered in
    /// order before it.
    measured: Option<(Instant, u64)>,
}

/// The sender at the end of the measurement (`stop_s`).
#[derive(Clone, Copy)]
struct AtStop {
    snd_max: u64,
    segments: u64,
    retransmits: u64,
    timeouts: u64,
}

/// How often a flow's SRTT is read for its percentiles (iperf3's shortest interval).
pub(crate) const SRTT_TICK: Duration = Duration::from_millis(100);

impl TcpFlow {
    /// The connection of flow `i`.
    pub(super) fn new(i: usize, f: &crate::scenario::Flow, start: Instant) -> TcpFlow {
        TcpFlow {
            sender: Sender::new(&f.tcp, f.size_bytes),
            receiver: Receiver::new(&f.tcp),
            data: Endpoints {
                src: packet::address(f.from, i),
                dst: packet::address(f.to, i),
                sport: packet::source_port(i),
                dport: if f.port == 0 {
                    packet::app_port(i)
                } else {
                    f.port
                },
                dscp: f.dscp,
                shift: f.tcp.window_shift(),
            },
            from: f.from,
            to: f.to,
            total: f.size_bytes,
            start,
            done_at: None,
            transport: f.tcp.transport_name(),
            armed: [None; 2],
            malformed: 0,
            handshake: f.tcp.handshake,
            finished: false,
            srtt: Delays::default(),
            next_tick: start + SRTT_TICK,
            stop: (f.stop_s > 0.0).then(|| Instant::ZERO + Duration::from_secs_f64(f.stop_s)),
            at_stop: None,
            measured: None,
        }
    }

    /// Notes the sender's state at the first look at or after `stop` (nothing is sent between
    /// two looks, so it is the state at `stop`).
    fn look(&mut self, now: Instant) {
        if self.at_stop.is_none() && self.stop.is_some_and(|s| s <= now) {
            let s = self.sender.stats();
            self.at_stop = Some(AtStop {
                snd_max: self.sender.snd_max(),
                segments: s.segments,
                retransmits: s.retransmits,
                timeouts: s.timeouts,
            });
        }
    }

    /// Whether data segment `seg` was sent at or after `stop` (see the module contract).
    fn sent_after_stop(&self, seg: &Segment) -> bool {
        let (Some(stop), Some(at)) = (self.stop, self.at_stop) else {
            return false;
        };
        match seg.ts {
            Some(t) => (t.val.wrapping_sub(crate::tcp::timestamps::tsval(stop)) as i32) >= 0,
            None => seg.seq >= at.snd_max,
        }
    }

    /// The end of the SRTT readings: `until`, or `stop` if earlier.
    fn readings_until(&self, until: Instant) -> Instant {
        self.stop.map_or(until, |s| s.min(until))
    }

    /// Reads the sender's SRTT into `into` at every tick up to and including `now` (before
    /// an ACK that arrives at `now` changes it).
    fn read_srtt(sender: &Sender, next_tick: &mut Instant, into: &mut Delays, now: Instant) {
        let srtt = sender.rto().srtt().map(|d| d.as_secs_f64());
        while *next_tick <= now {
            if let Some(s) = srtt {
                into.add(s);
            }
            *next_tick += SRTT_TICK;
        }
    }

    /// Whether a TCP packet from `src` to `dst` belongs to this connection, either way.
    fn owns(&self, src: [u8; 4], dst: [u8; 4], w: &WireSegment) -> bool {
        let d = &self.data;
        ((src, w.sport), (dst, w.dport)) == ((d.src, d.sport), (d.dst, d.dport))
            || ((src, w.sport), (dst, w.dport)) == ((d.dst, d.dport), (d.src, d.sport))
    }

    fn acks(&self) -> Endpoints {
        Endpoints {
            src: self.data.dst,
            dst: self.data.src,
            sport: self.data.dport,
            dport: self.data.sport,
            ..self.data
        }
    }

    /// A first data segment as a packet, for classifying the flow.
    pub(super) fn probe(&self) -> Vec<u8> {
        let mut p = Vec::new();
        let s = Segment {
            len: self.total.min(1) as u32,
            flags: segment::ACK,
            ..Segment::default()
        };
        segment::emit(&s, &self.data, &mut p);
        p
    }

    /// The flow's row of results; `end` is when the run stopped.
    pub(super) fn result(&self, name: &str, service: String, end: Instant) -> FlowResult {
        let s = self.sender.stats();
        let r = self.receiver.stats();
        let done = self.done_at.unwrap_or(end);
        // With `stop_s`, the measurement ends when the first segment sent after it arrives.
        let (last, bytes) = match self.measured {
            Some((at, bytes)) if at < done => (at, bytes),
            _ => (done, self.receiver.rcv_nxt()),
        };
        let duration = last.saturating_since(self.start).as_secs_f64();
        let (segments, retransmits, timeouts) = match self.at_stop {
            Some(a) => (a.segments, a.retransmits, a.timeouts),
            None => (s.segments, s.retransmits, s.timeouts),
        };
        // The ticks from the last ACK to the flow's last byte (or the run's end, or `stop`)
        // read the SRTT that ACK left.
        let mut srtt = self.srtt.clone();
        let mut tick = self.next_tick;
        Self::read_srtt(
            &self.sender,
            &mut tick,
            &mut srtt,
            self.readings_until(last),
        );
        let srtt = srtt.summary();
        FlowResult {
            flow: name.to_string(),
            app: "ftp".into(),
            transport: self.transport.into(),
            service,
            sent: segments,
            received: r.segments,
            duplicates: r.duplicates,
            bytes,
            duration_s: duration,
            throughput_bps: if duration > 0.0 {
                bytes as f64 * 8.0 / duration
            } else {
                0.0
            },
            // Share of data segments sent that were retransmissions.
            loss_rate: if segments > 0 {
                retransmits as f64 / segments as f64
            } else {
                0.0
            },
            delay_mean_s: self
                .sender
                .rto()
                .srtt()
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
            delay_std_s: self.sender.rto().rttvar().as_secs_f64(),
            delay_p50_s: srtt.p50_s,
            delay_p95_s: srtt.p95_s,
            delay_p99_s: srtt.p99_s,
            playback_miss_rate: 0.0,
            retransmits,
            timeouts,
            completed: self.done_at.is_some(),
            malformed: self.malformed,
            transactions: 0,
            // A TCP flow reports its sender's SRTT and RTTVAR at the end and the percentiles
            // of its SRTT read every tick; the smallest delay and jitter are datagram flows'.
            ..FlowResult::default()
        }
    }
}

impl World<'_, '_> {
    /// Lets both ends of TCP flow `i` send what they may, then re-arms their timers.
    pub(super) fn tcp_drive(&mut self, now: Instant, i: usize) {
        if let Some(t) = self.tcp[i].as_mut() {
            t.look(now);
        }
        loop {
            let Some(from) = self.tcp[i].as_ref().map(|t| t.from) else {
                return;
            };
            if !self.host_ready(from) {
                break;
            }
            let Some(t) = self.tcp[i].as_mut() else {
                return;
            };
            let Some(seg) = t.sender.poll_transmit(now) else {
                break;
            };
            let (from, ep) = (t.from, t.data);
            let mut p = self.pool.pop().unwrap_or_default();
            segment::emit(&seg, &ep, &mut p);
            self.host_emit(now, from, p);
        }
        loop {
            let Some(to) = self.tcp[i].as_ref().map(|t| t.to) else {
                return;
            };
            if !self.host_ready(to) {
                break;
            }
            let Some(t) = self.tcp[i].as_mut() else {
                return;
            };
            let Some(ack) = t.receiver.poll_transmit(now) else {
                break;
            };
            let (to, ep) = (t.to, t.acks());
            let mut p = self.pool.pop().unwrap_or_default();
            segment::emit(&ack, &ep, &mut p);
            self.host_emit(now, to, p);
        }
        let Some(t) = self.tcp[i].as_mut() else {
            return;
        };
        let due = [t.sender.poll_timeout(), t.receiver.poll_timeout()];
        for (side, at) in due.into_iter().enumerate() {
            if let Some(at) = at {
                // A past deadline fires now: arm it at now (see `World::arm`).
                let at = at.max(self.q.now());
                if t.armed[side].is_none_or(|a| at < a) {
                    t.armed[side] = Some(at);
                    self.q.schedule(at, Ev::Tcp { flow: i, side });
                }
            }
        }
    }

    /// A timer event of TCP flow `i` (`side` 0: sender, 1: receiver).
    pub(super) fn tcp_timer(&mut self, now: Instant, i: usize, side: usize) {
        let Some(t) = self.tcp[i].as_mut() else {
            return;
        };
        if t.armed[side] == Some(now) {
            t.armed[side] = None;
        }
        if side == 0 {
            t.sender.handle_timeout(now);
        } else {
            t.receiver.handle_timeout(now);
        }
        self.tcp_drive(now, i);
    }

    /// A TCP packet reached its destination `node`.
    pub(super) fn tcp_arrive(&mut self, now: Instant, node: usize, p: Vec<u8>) {
        let Ok(w) = segment::parse(&p) else {
            self.recycle(p);
            return;
        };
        let addr = |a: &[u8]| -> [u8; 4] { a.try_into().expect("parsed IPv4") };
        let (src, dst) = (addr(&p[12..16]), addr(&p[16..20]));
        self.recycle(p);
        // Every TCP flow's first end (an FTP sender, a WWW client) is its source endpoint:
        // data and requests come from it, ACKs and replies go to it. The other end's port may
        // be any, so both ends are tried, and the flow must own the packet's four values.
        let ends = [packet::flow_at(src, w.sport), packet::flow_at(dst, w.dport)];
        let Some(i) = ends.into_iter().flatten().find(|&i| {
            let www = self.www.get(i).and_then(|f| f.as_ref());
            let tcp = self.tcp.get(i).and_then(|t| t.as_ref());
            www.is_some_and(|f| f.owns(src, dst, &w)) || tcp.is_some_and(|t| t.owns(src, dst, &w))
        }) else {
            return;
        };
        if self.www[i].is_some() {
            self.www_arrive(now, node, i, w);
            return;
        }
        let data = w.len > 0;
        let Some(t) = self.tcp[i].as_mut() else {
            return;
        };
        let shift = t.data.shift;
        // With a handshake the sender's SYN, FIN and pure ACKs carry no data either.
        if node == t.to && (data || t.handshake) {
            let seg = w.to_segment(t.receiver.rcv_nxt(), 0, shift);
            let before = t.receiver.rcv_nxt();
            if data && t.measured.is_none() && t.sent_after_stop(&seg) {
                t.measured = Some((now, before));
            }
            t.receiver.handle_segment(now, &seg);
            let after = t.receiver.rcv_nxt();
            if after >= t.total && t.done_at.is_none() {
                t.done_at = Some(now);
            }
            if after > before {
                self.record_bytes(now, i, after - before);
            }
        } else if !data && node == t.from {
            let seg = w.to_segment(0, t.sender.snd_una(), shift);
            let until = t.readings_until(now);
            TcpFlow::read_srtt(&t.sender, &mut t.next_tick, &mut t.srtt, until);
            t.sender.handle_ack(now, &seg);
        } else {
            t.malformed += 1;
            return;
        }
        self.tcp_drive(now, i);
        if let Some(t) = self.tcp[i].as_mut() {
            let closed = !t.handshake || (t.sender.is_closed() && t.receiver.is_closed());
            if t.done_at.is_some() && closed && !t.finished {
                t.finished = true;
                self.tcp_left -= 1;
            }
        }
    }
}
