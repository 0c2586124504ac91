//! WWW browsing over TCP in the world (004 §III.C).
//!
//! Contract. A `www` flow runs transactions between a server (node `from`) and a client
//! (node `to`), one at a time and without pauses: [`WwwModel::sample_page`] draws a
//! transaction; the client sends the page request, the server replies with the page, then the
//! client requests each embedded object in turn and the server replies to each; the next
//! transaction starts the moment the last reply has arrived in full. No transaction starts
//! after the flow's stop (the end of the run by default).
//!
//! Transport. Every request and every reply is its own simplex TCP connection (a sender at
//! one host, a receiver with its ACK stream at the other), as ns-2's one-way TCP agents carry
//! HTTP: requests go client→server, replies server→client, each new connection starting
//! with the initial window and the initial RTO. A connection ends the moment its message has
//! arrived in full (no handshake, no FIN, no lingering retransmissions). Persistent
//! connections are not modelled: the senders cut their stream at multiples of the MSS from
//! byte 0 (crate::tcp), which messages appended to an open stream would break. The client's
//! port is 50000 + flow index, the server's the flow's `port` (80 when 0), so classifier
//! rules can match either. Each connection carries an epoch in the unused acknowledgement
//! field of its data segments and in the sequence field of its ACKs, so a straggler of an
//! earlier connection (the last ACK of each, at least) is dropped, never taken for new data.
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

/// The client's port of WWW flow `i` is `CLIENT_PORT + i`.
const CLIENT_PORT: u16 = 50000;

/// One request or reply in flight.
struct Conn {
    sender: Sender,
    receiver: Receiver,
    /// Endpoints of the data (ACKs use the reverse).
    data: Endpoints,
    /// Sending and receiving node.
    from: usize,
    to: usize,
    total: u64,
}

/// One WWW flow: its workload, the transaction in progress and its counters.
pub(super) struct WwwFlow {
    model: WwwModel,
    rng: ChaCha8Rng,
    cfg: TcpConfig,
    server: usize,
    client: usize,
    server_port: u16,
    client_port: u16,
    dscp: u8,
    start: Instant,
    stop: Instant,
    page: Page,
    /// Exchange of `page` in progress.
    ex: usize,
    conn: Option<Conn>,
    /// Number of the connection in `conn` (tags its packets).
    epoch: u32,
    /// Earliest pending timer event of the sender (0) and the receiver (1).
    armed: [Option<Instant>; 2],
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
            server_port: if f.port == 0 { 80 } else { f.port },
            client_port: CLIENT_PORT.wrapping_add(i as u16),
            dscp: f.dscp,
            start,
            stop,
            page: Page {
                exchanges: Vec::new(),
            },
            ex: 0,
            conn: None,
            epoch: 0,
            armed: [None; 2],
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
        let (c, s) = (packet::address(self.client), packet::address(self.server));
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

    /// Ends the current connection (adding its counters) and opens the next one: the
    /// request (`request`) or the reply of exchange `self.ex`.
    fn open(&mut self, request: bool) {
        self.close();
        let e = self.page.exchanges[self.ex];
        let total = if request {
            e.request_bytes
        } else {
            e.reply_bytes
        };
        let (from, to, data) = self.endpoints(request);
        self.epoch = self.epoch.wrapping_add(1);
        self.conn = Some(Conn {
            sender: Sender::new(&self.cfg, total),
            receiver: Receiver::new(&self.cfg),
            data,
            from,
            to,
            total,
        });
    }

    fn close(&mut self) {
        if let Some(c) = self.conn.take() {
            let (s, r) = (c.sender.stats(), c.receiver.stats());
            self.segments += s.segments;
            self.retransmits += s.retransmits;
            self.timeouts += s.timeouts;
            self.received += r.segments;
            self.duplicates += r.duplicates;
        }
        self.armed = [None; 2];
    }

    /// Starts the next transaction if the flow may still start one.
    fn next_transaction(&mut self, now: Instant) {
        if now >= self.stop {
            self.close();
            return;
        }
        self.page = self.model.sample_page(&mut self.rng);
        self.ex = 0;
        self.open(true);
    }

    /// The current message has arrived in full at `now`: move the transaction on.
    fn message_done(&mut self, now: Instant) {
        let request = self.conn.as_ref().is_some_and(|c| c.from == self.client);
        if request {
            self.open(false);
            return;
        }
        self.ex += 1;
        if self.ex < self.page.exchanges.len() {
            self.open(true);
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

    /// Whether a parsed TCP packet belongs to this flow.
    fn owns(&self, w: &WireSegment) -> bool {
        (w.sport == self.client_port && w.dport == self.server_port)
            || (w.dport == self.client_port && w.sport == self.server_port)
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
        let last = self.conn.as_ref().map(|c| {
            (
                c.sender.stats().clone(),
                c.receiver.stats().clone(),
                c.sender.rto().srtt(),
                c.sender.rto().rttvar(),
            )
        });
        let (mut segments, mut retransmits, mut timeouts) =
            (self.segments, self.retransmits, self.timeouts);
        let (mut received, mut duplicates) = (self.received, self.duplicates);
        let (mut srtt, mut rttvar) = (0.0, 0.0);
        if let Some((s, r, sr, rv)) = last {
            segments += s.segments;
            retransmits += s.retransmits;
            timeouts += s.timeouts;
            received += r.segments;
            duplicates += r.duplicates;
            srtt = sr.map(|d| d.as_secs_f64()).unwrap_or(0.0);
            rttvar = rv.as_secs_f64();
        }
        let duration = self
            .last_done
            .map(|t| t.saturating_since(self.start).as_secs_f64())
            .unwrap_or(0.0);
        FlowResult {
            flow: name.to_string(),
            app: "www".into(),
            transport: self.cfg.variant.name().into(),
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

    /// Lets both ends of WWW flow `i`'s current connection send, then re-arms its timers.
    fn www_drive(&mut self, now: Instant, i: usize) {
        for side in 0..2 {
            loop {
                let Some(w) = self.www[i].as_ref() else {
                    return;
                };
                let Some(c) = w.conn.as_ref() else {
                    return;
                };
                let node = if side == 0 { c.from } else { c.to };
                if !self.host_ready(node) {
                    break;
                }
                let Some(w) = self.www[i].as_mut() else {
                    return;
                };
                let epoch = w.epoch;
                let Some(c) = w.conn.as_mut() else {
                    return;
                };
                let (seg, ep) = if side == 0 {
                    let Some(mut s) = c.sender.poll_transmit(now) else {
                        break;
                    };
                    // The epoch rides in the data segment's acknowledgement field.
                    s.ack = epoch as u64;
                    (s, c.data)
                } else {
                    let Some(mut a) = c.receiver.poll_transmit(now) else {
                        break;
                    };
                    // ... and in the sequence field of an ACK.
                    a.seq = epoch as u64;
                    let d = c.data;
                    let back = Endpoints {
                        src: d.dst,
                        dst: d.src,
                        sport: d.dport,
                        dport: d.sport,
                        ..d
                    };
                    (a, back)
                };
                let mut p = self.pool.pop().unwrap_or_default();
                segment::emit(&seg, &ep, &mut p);
                self.host_emit(now, node, p);
            }
        }
        let Some(w) = self.www[i].as_mut() else {
            return;
        };
        let Some(c) = w.conn.as_ref() else {
            return;
        };
        let due = [c.sender.poll_timeout(), c.receiver.poll_timeout()];
        for (side, at) in due.into_iter().enumerate() {
            if let Some(at) = at {
                if w.armed[side].is_none_or(|a| at < a) {
                    w.armed[side] = Some(at);
                    self.q.schedule(at, Ev::Tcp { flow: i, side });
                }
            }
        }
    }

    /// A timer event of WWW flow `i` (`side` 0: sender, 1: receiver of the connection).
    pub(super) fn www_timer(&mut self, now: Instant, i: usize, side: usize) {
        let Some(w) = self.www[i].as_mut() else {
            return;
        };
        if w.armed[side] == Some(now) {
            w.armed[side] = None;
        }
        if let Some(c) = w.conn.as_mut() {
            if side == 0 {
                c.sender.handle_timeout(now);
            } else {
                c.receiver.handle_timeout(now);
            }
        }
        self.www_drive(now, i);
    }

    /// The WWW flow a parsed TCP packet belongs to, if any.
    pub(super) fn www_flow_of(&self, w: &WireSegment) -> Option<usize> {
        let port = if w.sport >= CLIENT_PORT {
            w.sport
        } else {
            w.dport
        };
        let i = port.checked_sub(CLIENT_PORT)? as usize;
        self.www
            .get(i)
            .and_then(|f| f.as_ref())
            .is_some_and(|f| f.owns(w))
            .then_some(i)
    }

    /// A TCP packet of WWW flow `i` reached its destination `node`.
    pub(super) fn www_arrive(&mut self, now: Instant, node: usize, i: usize, w: WireSegment) {
        let Some(f) = self.www[i].as_mut() else {
            return;
        };
        let epoch = f.epoch;
        let Some(c) = f.conn.as_mut() else {
            // Stragglers after the last transaction.
            return;
        };
        let shift = c.data.shift;
        let data = w.len > 0;
        let mut complete = false;
        if data && node == c.to && w.ack == epoch {
            let seg = w.to_segment(c.receiver.rcv_nxt(), 0, shift);
            let before = c.receiver.rcv_nxt();
            c.receiver.handle_segment(now, &seg);
            let after = c.receiver.rcv_nxt();
            complete = after >= c.total;
            let reply = c.to == f.client;
            if reply && after > before {
                self.record_bytes(now, i, after - before);
            }
        } else if !data && node == c.from && w.seq == epoch {
            let seg = w.to_segment(0, c.sender.snd_una(), shift);
            c.sender.handle_ack(now, &seg);
        } else if (data && w.ack != epoch) || (!data && w.seq != epoch) {
            // A straggler of an earlier connection (the last ACK of each one, at least).
            return;
        } else {
            // A packet at the wrong end.
            f.malformed += 1;
            return;
        }
        // Let the receiver's last ACK out before the connection is dropped.
        self.www_drive(now, i);
        if complete {
            if let Some(f) = self.www[i].as_mut() {
                f.message_done(now);
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
        let r = run(&sc, 0, &mut |_| Err("none".into())).unwrap();
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
        let again = run(&sc, 0, &mut |_| Err("none".into())).unwrap();
        assert_eq!(again.flows[0], *f);
    }

    /// The workload is the model's: with no embedded objects and fixed sizes (zero shape,
    /// no tail) every transaction is one request and one reply of the median sizes, and a
    /// transaction takes at least two one-way trips plus both messages' serialisation.
    #[test]
    fn fixed_pages_count_exactly() {
        let text = format!(
            "{BASE}\n[flow.www]\nno_objects_prob = 1.0\nrequest_sigma = 0.0\nreply_sigma = 0.0\nreply_tail_prob = 0.0\nreply_median_bytes = 4800\n"
        );
        let sc = Scenario::parse(&text).unwrap();
        sc.validate().unwrap();
        let r = run(&sc, 0, &mut |_| Err("none".into())).unwrap();
        let f = &r.flows[0];
        assert_eq!(f.bytes, f.transactions * 4800);
        // Lower bound on one transaction: the request's one-way trip (10 ms), then the
        // reply's five segments in slow start from one segment (rounds of 1, 2, 2: two round
        // trips and a one-way trip, 50 ms), plus serialising the 290-byte request and at
        // least one 1000-byte reply packet at 2 Mbit/s.
        let per = 0.06 + (290.0 + 1000.0) * 8.0 / 2e6;
        assert!(f.transactions as f64 <= 60.0 / per + 1.0, "{f:?}");
        assert!(f.transactions as f64 >= 0.5 * 60.0 / per, "{f:?}");
    }
}
