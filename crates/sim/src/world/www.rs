//! WWW browsing over TCP in the world (004 §III.C).
//!
//! Contract. A `www` flow runs transactions between a server (node `from`) and a client
//! (node `to`), one at a time and without pauses: [`WwwModel::sample_page`] draws a
//! transaction; the client sends the page request, the server replies with the page, then the
//! client requests each embedded object in turn and the server replies to each; the next
//! transaction starts the moment the last reply has arrived in full. No transaction starts
//! after the flow's stop (the end of the run by default).
//!
//! Transport. Requests go client→server and replies server→client, each direction a simplex
//! TCP stream (a sender at one host, a receiver and its ACK stream at the other). With
//! `persistent = true` (the default) each direction is one connection kept open across
//! transactions: the application appends each message to it ([`Sender::append`]; Reno and
//! NewReno only) and a message has arrived when the receiver's in-order data reaches its end,
//! so RTT estimates and the congestion window carry over from message to message. With
//! `persistent = false` every request and every reply is a new connection, with the initial
//! window and RTO (HTTP/1.0, or ns-2's one-way agents per object), that ends as soon as its
//! message has arrived in full. There is no handshake and no FIN. The client's endpoint is
//! the flow's source endpoint (`packet::address` and `packet::source_port`: port 55000 +
//! flow index modulo 5,001), the server's port the flow's `port` (80 when 0), so classifier
//! rules can match either. Each connection carries an epoch in the unused acknowledgement field of its
//! data segments and in the sequence field of its ACKs, so a straggler of an earlier
//! connection (the last ACK of each, at least) is dropped, never taken for new data.
//!
//! With `tcp.handshake` every connection opens with its own SYN exchange (a persistent one
//! once per direction, a per-message one, HTTP/1.0, each time) and data flows when its
//! SYN-ACK arrives. Request and reply connections share the four addresses and ports, and a
//! SYN-ACK, a pure ACK or a FIN carries no data, so the epoch moves into the sequence space:
//! the receiver's sequence numbers start at [`epoch_base`] (high bit set) and the sender's
//! acknowledgement field is that base plus 0 or 1, so a segment from a receiver is told from
//! a sender's by the high bit of its sequence number (a sender's data offsets stay below
//! 2^31: no persistent connection carries 2 GiB within a run) and a SYN without ACK is a
//! sender's. Connections do not exchange FINs here: a per-message connection ends when its
//! message has arrived, as without the handshake (`keep_open`); the FIN exchange is
//! modelled on FTP flows.
//!
//! Results (004 §III.C). Throughput is the server-to-client application bytes (pages and
//! objects) of completed transactions divided by the time from the flow's start to the end
//! of the last transaction completed within the run; `transactions` counts them; `sent`,
//! `received`, `retransmits` and `timeouts` add up every connection of the flow.

use mslink_link::Instant;
use rand_chacha::ChaCha8Rng;

use super::{Ev, FlowResult, World};
use crate::packet;
use crate::tcp::segment::{self, Endpoints, WireSegment};
use crate::tcp::{Receiver, Sender, TcpConfig};
use crate::www_model::{Page, WwwModel};

/// One request or reply in flight.
struct Conn {
    sender: Sender,
    receiver: Receiver,
    /// Endpoints of the data (ACKs use the reverse).
    data: Endpoints,
    /// Sending and receiving node.
    from: usize,
    to: usize,
    /// Stream offset at which the message in progress ends.
    target: u64,
    /// Tags the connection's packets.
    epoch: u32,
    /// Earliest pending timer event of the sender (0) and the receiver (1).
    armed: [Option<Instant>; 2],
}

/// Index of the request (client→server) and the reply (server→client) direction.
const REQUEST: usize = 0;
const REPLY: usize = 1;

/// One WWW flow: its workload, the transaction in progress and its counters.
pub(super) struct WwwFlow {
    model: WwwModel,
    rng: ChaCha8Rng,
    cfg: TcpConfig,
    server: usize,
    client: usize,
    /// The server's and the client's address.
    server_addr: [u8; 4],
    client_addr: [u8; 4],
    server_port: u16,
    client_port: u16,
    dscp: u8,
    start: Instant,
    stop: Instant,
    persistent: bool,
    page: Page,
    /// Exchange of `page` in progress.
    ex: usize,
    /// The request and the reply connection (`REQUEST`, `REPLY`).
    conns: [Option<Conn>; 2],
    /// Connections opened so far (the next one's epoch).
    epoch: u32,
    transactions: u64,
    bytes: u64,
    last_done: Option<Instant>,
    // Totals over finished connections, plus the current one at the end.
    segments: u64,
    received: u64,
    duplicates: u64,
    retransmits: u64,
    timeouts: u64,
    malformed: u64,
}

impl WwwFlow {
    /// WWW flow `i`, starting at `start`, with no transaction begun after `stop`.
    pub(super) fn new(
        i: usize,
        f: &crate::scenario::Flow,
        rng: ChaCha8Rng,
        start: Instant,
        stop: Instant,
    ) -> WwwFlow {
        WwwFlow {
            model: f.www.clone(),
            rng,
            cfg: f.tcp.clone(),
            server: f.from,
            client: f.to,
            server_addr: packet::address(f.from, i),
            client_addr: packet::address(f.to, i),
            server_port: if f.port == 0 { 80 } else { f.port },
            client_port: packet::source_port(i),
            dscp: f.dscp,
            start,
            stop,
            persistent: f.persistent,
            page: Page {
                exchanges: Vec::new(),
            },
            ex: 0,
            conns: [None, None],
            epoch: 0,
            transactions: 0,
            bytes: 0,
            last_done: None,
            segments: 0,
            received: 0,
            duplicates: 0,
            retransmits: 0,
            timeouts: 0,
            malformed: 0,
        }
    }

    fn endpoints(&self, request: bool) -> (usize, usize, Endpoints) {
        let (c, s) = (self.client_addr, self.server_addr);
        let shift = self.cfg.window_shift();
        let (cp, sp, dscp) = (self.client_port, self.server_port, self.dscp);
        if request {
            let e = Endpoints {
                src: c,
                dst: s,
                sport: cp,
                dport: sp,
                dscp,
                shift,
            };
            (self.client, self.server, e)
        } else {
            let e = Endpoints {
                src: s,
                dst: c,
                sport: sp,
                dport: cp,
                dscp,
                shift,
            };
            (self.server, self.client, e)
        }
    }

    /// Sends the request (`d == REQUEST`) or the reply of exchange `self.ex`: on the open
    /// connection of that direction if persistent, else on a new one.
    fn send_message(&mut self, d: usize) {
        let e = self.page.exchanges[self.ex];
        let bytes = if d == REQUEST {
            e.request_bytes
        } else {
            e.reply_bytes
        };
        if !self.persistent {
            self.close(d);
        }
        if let Some(c) = self.conns[d].as_mut() {
            c.sender.append(bytes);
            c.target += bytes;
            return;
        }
        let (from, to, data) = self.endpoints(d == REQUEST);
        self.epoch = self.epoch.wrapping_add(1);
        let mut sender = Sender::new(&self.cfg, bytes);
        sender.keep_open();
        self.conns[d] = Some(Conn {
            sender,
            receiver: Receiver::new(&self.cfg),
            data,
            from,
            to,
            target: bytes,
            epoch: self.epoch,
            armed: [None; 2],
        });
    }

    /// Ends connection `d`, adding its counters to the flow's.
    fn close(&mut self, d: usize) {
        if let Some(c) = self.conns[d].take() {
            let (s, r) = (c.sender.stats(), c.receiver.stats());
            self.segments += s.segments;
            self.retransmits += s.retransmits;
            self.timeouts += s.timeouts;
            self.received += r.segments;
            self.duplicates += r.duplicates;
        }
    }

    /// Starts the next transaction if the flow may still start one.
    fn next_transaction(&mut self, now: Instant) {
        if now >= self.stop {
            return;
        }
        self.page = self.model.sample_page(&mut self.rng);
        self.ex = 0;
        self.send_message(REQUEST);
    }

    /// The message in direction `d` has arrived in full at `now`: move the transaction on.
    fn message_done(&mut self, now: Instant, d: usize) {
        if !self.persistent {
            self.close(d);
        }
        if d == REQUEST {
            self.send_message(REPLY);
            return;
        }
        self.ex += 1;
        if self.ex < self.page.exchanges.len() {
            self.send_message(REQUEST);
            return;
        }
        // 004 §III.C: only transactions completed within the run count.
        if now <= self.stop {
            self.transactions += 1;
            self.bytes += self.page.reply_bytes();
            self.last_done = Some(now);
        }
        self.next_transaction(now);
    }

    /// Whether a TCP packet from `src` to `dst` belongs to this flow.
    pub(super) fn owns(&self, src: [u8; 4], dst: [u8; 4], w: &WireSegment) -> bool {
        let (c, s) = (
            (self.client_addr, self.client_port),
            (self.server_addr, self.server_port),
        );
        ((src, w.sport), (dst, w.dport)) == (c, s) || ((src, w.sport), (dst, w.dport)) == (s, c)
    }

    /// A reply data segment as a packet, for classifying the flow.
    pub(super) fn probe(&self) -> Vec<u8> {
        let mut p = Vec::new();
        let s = crate::tcp::Segment {
            len: 1,
            flags: segment::ACK,
            ..crate::tcp::Segment::default()
        };
        segment::emit(&s, &self.endpoints(false).2, &mut p);
        p
    }

    /// The flow's row of results; `end` is when the run stopped.
    pub(super) fn result(&self, name: &str, service: String, _end: Instant) -> FlowResult {
        let (mut segments, mut retransmits, mut timeouts) =
            (self.segments, self.retransmits, self.timeouts);
        let (mut received, mut duplicates) = (self.received, self.duplicates);
        for c in self.conns.iter().flatten() {
            let (s, r) = (c.sender.stats(), c.receiver.stats());
            segments += s.segments;
            retransmits += s.retransmits;
            timeouts += s.timeouts;
            received += r.segments;
            duplicates += r.duplicates;
        }
        // The reply direction's RTT estimate, if it has one.
        let rto = self.conns[REPLY].as_ref().map(|c| c.sender.rto());
        let srtt = rto.and_then(|r| r.srtt()).map_or(0.0, |d| d.as_secs_f64());
        let rttvar = rto.map_or(0.0, |r| r.rttvar().as_secs_f64());
        let duration = self
            .last_done
            .map(|t| t.saturating_since(self.start).as_secs_f64())
            .unwrap_or(0.0);
        FlowResult {
            flow: name.to_string(),
            app: "www".into(),
            transport: self.cfg.transport_name().into(),
            service,
            sent: segments,
            received,
            duplicates,
            bytes: self.bytes,
            duration_s: duration,
            throughput_bps: if duration > 0.0 {
                self.bytes as f64 * 8.0 / duration
            } else {
                0.0
            },
            loss_rate: if segments > 0 {
                retransmits as f64 / segments as f64
            } else {
                0.0
            },
            delay_mean_s: srtt,
            delay_std_s: rttvar,
            playback_miss_rate: 0.0,
            retransmits,
            timeouts,
            completed: self.transactions > 0,
            malformed: self.malformed,
            transactions: self.transactions,
            // Delay percentiles and jitter are of datagram flows' one-way delays; a TCP flow
            // reports its sender's SRTT and RTTVAR above.
            ..FlowResult::default()
        }
    }
}

impl World<'_, '_> {
    /// The flow's start: its first transaction.
    pub(super) fn www_start(&mut self, now: Instant, i: usize) {
        if let Some(w) = self.www[i].as_mut() {
            w.next_transaction(now);
        }
        self.www_drive(now, i);
    }

    /// Lets both ends of WWW flow `i`'s connections send, then re-arms their timers (timer
    /// side `2 * direction + end`, end 0 the sender, 1 the receiver).
    fn www_drive(&mut self, now: Instant, i: usize) {
        let hs = self.www[i].as_ref().is_some_and(|w| w.cfg.handshake);
        for d in [REQUEST, REPLY] {
            for end in 0..2 {
                while let Some(c) = self.www[i].as_ref().and_then(|w| w.conns[d].as_ref()) {
                    let node = if end == 0 { c.from } else { c.to };
                    if !self.host_ready(node) {
                        break;
                    }
                    let Some(c) = self.www[i].as_mut().and_then(|w| w.conns[d].as_mut()) else {
                        break;
                    };
                    let (seg, ep) = if end == 0 {
                        let Some(mut s) = c.sender.poll_transmit(now) else {
                            break;
                        };
                        // The epoch rides in the data segment's acknowledgement field.
                        s.ack = if hs {
                            epoch_base(c.epoch) + s.ack
                        } else {
                            c.epoch as u64
                        };
                        (s, c.data)
                    } else {
                        let Some(mut a) = c.receiver.poll_transmit(now) else {
                            break;
                        };
                        // ... and in the sequence field of an ACK.
                        a.seq = if hs {
                            epoch_base(c.epoch) + a.seq
                        } else {
                            c.epoch as u64
                        };
                        let e = c.data;
                        let back = Endpoints {
                            src: e.dst,
                            dst: e.src,
                            sport: e.dport,
                            dport: e.sport,
                            ..e
                        };
                        (a, back)
                    };
                    let mut p = self.pool.pop().unwrap_or_default();
                    segment::emit(&seg, &ep, &mut p);
                    self.host_emit(now, node, p);
                }
            }
            let Some(c) = self.www[i].as_mut().and_then(|w| w.conns[d].as_mut()) else {
                continue;
            };
            let due = [c.sender.poll_timeout(), c.receiver.poll_timeout()];
            for (end, at) in due.into_iter().enumerate() {
                if let Some(at) = at {
                    // A past deadline fires now: arm it at now (see `World::arm`).
                    let at = at.max(self.q.now());
                    if c.armed[end].is_none_or(|a| at < a) {
                        c.armed[end] = Some(at);
                        let side = 2 * d + end;
                        self.q.schedule(at, Ev::Tcp { flow: i, side });
                    }
                }
            }
        }
    }

    /// A timer event of WWW flow `i` (`side`: 2 * direction + end, as in `www_drive`).
    pub(super) fn www_timer(&mut self, now: Instant, i: usize, side: usize) {
        let (d, end) = (side / 2, side % 2);
        if let Some(c) = self
            .www
            .get_mut(i)
            .and_then(|w| w.as_mut())
            .and_then(|w| w.conns.get_mut(d))
            .and_then(|c| c.as_mut())
        {
            if c.armed[end] == Some(now) {
                c.armed[end] = None;
            }
            if end == 0 {
                c.sender.handle_timeout(now);
            } else {
                c.receiver.handle_timeout(now);
            }
        }
        self.www_drive(now, i);
    }

    /// A TCP packet of WWW flow `i` reached its destination `node`.
    pub(super) fn www_arrive(&mut self, now: Instant, node: usize, i: usize, w: WireSegment) {
        let Some(f) = self.www[i].as_mut() else {
            return;
        };
        if f.cfg.handshake {
            return self.www_arrive_handshake(now, node, i, w);
        }
        let data = w.len > 0;
        // Requests arrive at the server, replies at the client; ACKs the other way round.
        let d = match (data, node == f.server, node == f.client) {
            (true, true, _) | (false, _, true) => REQUEST,
            (true, _, true) | (false, true, _) => REPLY,
            _ => {
                f.malformed += 1;
                return;
            }
        };
        let Some(c) = f.conns[d].as_mut() else {
            // A straggler of a closed connection.
            return;
        };
        if (data && w.ack != c.epoch) || (!data && w.seq != c.epoch) {
            // A straggler of an earlier connection (the last ACK of each one, at least).
            return;
        }
        let shift = c.data.shift;
        let mut complete = false;
        if data {
            let seg = w.to_segment(c.receiver.rcv_nxt(), 0, shift);
            let before = c.receiver.rcv_nxt();
            c.receiver.handle_segment(now, &seg);
            let after = c.receiver.rcv_nxt();
            complete = before < c.target && after >= c.target;
            if d == REPLY && after > before {
                self.record_bytes(now, i, after - before);
            }
        } else {
            let seg = w.to_segment(0, c.sender.snd_una(), shift);
            c.sender.handle_ack(now, &seg);
        }
        // Let the receiver's ACK out before a finished connection is dropped.
        self.www_drive(now, i);
        if complete {
            if let Some(f) = self.www[i].as_mut() {
                f.message_done(now, d);
            }
            self.www_drive(now, i);
        }
    }
}

/// With `tcp.handshake`: where the receiver's sequence numbers of connection `epoch` start
/// (its SYN-ACK takes the one before), high bit set; distinct for 2^29 epochs.
fn epoch_base(epoch: u32) -> u64 {
    0x8000_0000 + 4 + (epoch as u64 * 4) % 0x7fff_0000
}

impl World<'_, '_> {
    /// `www_arrive` with handshakes: a segment is a receiver's if its sequence number has the
    /// high bit (it is not a bare SYN), a sender's otherwise; its epoch must match.
    fn www_arrive_handshake(&mut self, now: Instant, node: usize, i: usize, mut w: WireSegment) {
        let Some(f) = self.www[i].as_mut() else {
            return;
        };
        let bare_syn = w.flags & (segment::SYN | segment::ACK) == segment::SYN;
        let from_receiver = !bare_syn && w.seq & 0x8000_0000 != 0;
        // Requests (and their SYN) reach the server, their ACKs the client; replies the
        // other way round.
        let d = match (from_receiver, node == f.server, node == f.client) {
            (false, true, _) | (true, _, true) => REQUEST,
            (false, _, true) | (true, true, _) => REPLY,
            _ => {
                f.malformed += 1;
                return;
            }
        };
        let Some(c) = f.conns[d].as_mut() else {
            return;
        };
        let base = epoch_base(c.epoch) as u32;
        let shift = c.data.shift;
        if from_receiver {
            if w.seq.wrapping_sub(base).wrapping_add(1) > 2 {
                return; // a straggler of an earlier connection
            }
            w.seq = w.seq.wrapping_sub(base);
            let seg = w.to_segment(0, c.sender.snd_una(), shift);
            c.sender.handle_ack(now, &seg);
            self.www_drive(now, i);
            return;
        }
        if w.ack.wrapping_sub(base) > 1 {
            return;
        }
        w.ack = w.ack.wrapping_sub(base);
        let seg = w.to_segment(c.receiver.rcv_nxt(), 0, shift);
        let before = c.receiver.rcv_nxt();
        c.receiver.handle_segment(now, &seg);
        let after = c.receiver.rcv_nxt();
        let complete = before < c.target && after >= c.target;
        if d == REPLY && after > before {
            self.record_bytes(now, i, after - before);
        }
        self.www_drive(now, i);
        if complete {
            if let Some(f) = self.www[i].as_mut() {
                f.message_done(now, d);
            }
            self.www_drive(now, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{run, Scenario};

    const BASE: &str = r#"
[sim]
name = "www-unit"
duration_s = 60
drain_s = 0
seed = 3
timeseries_window_s = 0

[[segment]]
kind = "wired"
rate_bps = 2000000
delay_ms = 10

[[flow]]
name = "web"
app = "www"
from = 0
to = 1

[flow.tcp]
mss = 960
"#;

    /// Over a clean wired link every transaction completes, and the throughput is exactly
    /// the reply bytes counted over the time to the last completed transaction; a closed-form
    /// bound: no transaction can beat one round trip per request plus the reply's
    /// serialisation, so throughput stays below the link rate.
    #[test]
    fn clean_link_runs_transactions_back_to_back() {
        let sc = Scenario::parse(BASE).unwrap();
        sc.validate().unwrap();
        let r = run(&sc, 0, &mut |_| Err(std::io::Error::other("none"))).unwrap();
        let f = &r.flows[0];
        assert_eq!(f.app, "www");
        assert!(f.transactions > 20, "{f:?}");
        assert!(f.completed);
        // Retransmissions only where the wired queue (50 packets) overflowed.
        let drops = r.segments[0].directions[0].queue_drops;
        assert!(f.retransmits == 0 || drops > 0, "{f:?} {:?}", r.segments[0]);
        assert_eq!(f.malformed, 0);
        assert!(f.duration_s <= 60.0 && f.duration_s > 50.0);
        let want = f.bytes as f64 * 8.0 / f.duration_s;
        assert!((f.throughput_bps - want).abs() < 1e-6);
        assert!(f.throughput_bps < 2e6);
        // The same seed gives the same run.
        let again = run(&sc, 0, &mut |_| Err(std::io::Error::other("none"))).unwrap();
        assert_eq!(again.flows[0], *f);
    }

    /// Both transports run the same workload: per-message connections (each starting with
    /// the initial window and RTO) and persistent ones, over a lossy-free link, complete
    /// transactions; per-message ones (SACK allowed) are not faster; persistent SACK is refused.
    #[test]
    fn per_message_and_persistent_connections() {
        let sc = Scenario::parse(BASE).unwrap();
        let set = |k: &str, v: &str| (k.to_string(), v.to_string());
        let go = |sets: &[(String, String)]| {
            let s = sc.with_overrides(sets).unwrap();
            s.validate().map(|_| {
                run(&s, 0, &mut |_| Err(std::io::Error::other("none")))
                    .unwrap()
                    .flows[0]
                    .clone()
            })
        };
        let persistent = go(&[]).unwrap();
        let fresh = go(&[set("flow.0.persistent", "false")]).unwrap();
        assert!(fresh.transactions > 20 && fresh.malformed == 0, "{fresh:?}");
        assert!(fresh.throughput_bps <= 1.05 * persistent.throughput_bps);
        let sack = set("flow.0.tcp.variant", "\"sack\"");
        assert!(
            go(std::slice::from_ref(&sack)).is_err(),
            "persistent SACK is refused"
        );
        let f = go(&[sack, set("flow.0.persistent", "false")]).unwrap();
        assert!(f.transactions > 20 && f.malformed == 0, "{f:?}");
    }

    /// The workload is the model's: with no embedded objects and fixed sizes (zero shape,
    /// no tail) every transaction is one request and one reply of the median sizes. Its
    /// duration has a closed form on a clean 2 Mbit/s, 10 ms link: a persistent connection,
    /// its window open, takes the request's one-way trip and serialisation, then the reply's
    /// one-way trip and five 1000-byte packets back to back; a fresh connection per message
    /// starts the reply in slow start from one segment (rounds of 1, 2, 2: two more round
    /// trips).
    #[test]
    fn fixed_pages_count_exactly() {
        let text = format!(
            "{BASE}\n[flow.www]\nno_objects_prob = 1.0\nrequest_sigma = 0.0\nreply_sigma = 0.0\nreply_tail_prob = 0.0\nreply_median_bytes = 4800\n"
        );
        let sc = Scenario::parse(&text).unwrap();
        let ser = |bytes: f64| bytes * 8.0 / 2e6;
        for (persistent, per) in [
            ("true", 0.01 + ser(290.0) + 0.01 + ser(5000.0)),
            ("false", 0.06 + ser(290.0 + 1000.0)),
        ] {
            let s = sc
                .with_overrides(&[("flow.0.persistent".into(), persistent.into())])
                .unwrap();
            s.validate().unwrap();
            let r = run(&s, 0, &mut |_| Err(std::io::Error::other("none"))).unwrap();
            let f = &r.flows[0];
            assert_eq!(f.bytes, f.transactions * 4800);
            assert!(f.transactions as f64 <= 60.0 / per + 1.0, "{f:?}");
            let low = if persistent == "true" { 0.9 } else { 0.5 };
            assert!(f.transactions as f64 >= low * 60.0 / per, "{f:?}");
        }
    }

    /// With `tcp.handshake` (RFC 9293 §3.5) every connection shakes hands: a persistent one
    /// once per direction, so it completes nearly as many transactions as without (the
    /// timestamps' 12 bytes per segment cost about 1%); a
    /// per-message one (HTTP/1.0) each time, one more round trip (20 ms) before every
    /// request and reply, so it completes fewer than without. Nothing is malformed and no
    /// straggler is taken for data (the byte count is exact).
    #[test]
    fn handshake_per_connection() {
        let text = format!(
            "{BASE}\n[flow.www]\nno_objects_prob = 1.0\nrequest_sigma = 0.0\nreply_sigma = 0.0\nreply_tail_prob = 0.0\nreply_median_bytes = 4800\n"
        );
        let sc = Scenario::parse(&text).unwrap();
        let go = |persistent: &str, hs: &str| {
            let s = sc
                .with_overrides(&[
                    ("flow.0.persistent".into(), persistent.into()),
                    ("flow.0.tcp.handshake".into(), hs.into()),
                    ("flow.0.tcp.timestamps".into(), hs.into()),
                ])
                .unwrap();
            s.validate().unwrap();
            run(&s, 0, &mut |_| Err(std::io::Error::other("none")))
                .unwrap()
                .flows[0]
                .clone()
        };
        for persistent in ["true", "false"] {
            let (plain, hs) = (go(persistent, "false"), go(persistent, "true"));
            assert!(hs.transactions > 20 && hs.malformed == 0, "{hs:?}");
            assert_eq!(hs.bytes, hs.transactions * 4800);
            assert_eq!(hs.retransmits, 0, "{hs:?}");
            if persistent == "true" {
                // Only the timestamps' 12 bytes per segment (about 1% on the wire) differ.
                assert!(
                    hs.transactions as f64 >= 0.97 * plain.transactions as f64,
                    "{hs:?} {plain:?}"
                );
            } else {
                // 0.06 s + serialisation per transaction without; two more RTTs with.
                assert!(
                    (hs.transactions as f64) < 0.85 * plain.transactions as f64,
                    "{hs:?} {plain:?}"
                );
            }
        }
    }
}
