//! The protocol graph and the three receive architectures (002 §3, §4), behind the sans-IO shape
//! of docs/architecture.md rule 2.
//!
//! Contract: a [`Stack`] is assembled once, at start-up, from protocol objects and the edges
//! "upper is reached from lower under number n" ([`GraphBuilder`]). The bottom anchor is the
//! device interface (`handle_frame` in, `poll_transmit` out); the top anchor is the application
//! interface (`open`, `send`, `poll_deliver`). Opening an endpoint builds its **path**: one
//! session per layer from the endpoint's top protocol down to the device, held bottom to top,
//! so it can be walked up (DAA receive) and down (every send): 002 §4.2's doubly linked session
//! stack. The receive architecture is fixed by [`StackConfig::architecture`]:
//!
//! * **LLM** (002 §3.1): demux, pop, demux, pop, ... layer by layer; lower sessions are shared by
//!   every connection with the same key.
//! * **DAA** (002 §3.2, §4.2): one demux at the bottom (the application id in the extended
//!   Ethernet header) yields the path; the frame climbs it with pops only. With
//!   [`StackConfig::priority_queue`] the work left after the bottom layer waits in a queue
//!   ordered by the frame's deadline/priority field and is done in that order by `poll_deliver`.
//! * **ILLM** (002 §3.3, §4.3): every layer's demux first, the (session, header offset) pairs
//!   saved, until a session with the up-boundary bit; then every layer's pop.
//!
//! The call order: `open` endpoints, then any interleaving of `handle_frame(now, ..)`,
//! `send(now, ..)`, `poll_transmit(now, ..)` and `poll_deliver()`. Nothing here reads a clock;
//! `now` is recorded in deliveries. A malformed or unmatched frame is counted in
//! [`StackStats::drops`] under the layer that refused it, never a panic.

use std::collections::{BinaryHeap, VecDeque};

use mslink_link::Instant;
use serde::{Deserialize, Serialize};

use crate::demux_key::{AllocError, AppIdAllocator, DemuxKey};
use crate::eth::{Ethernet, ETHERTYPE_IPV4};
use crate::ipv4::{Ipv4, IPPROTO_UDP};
use crate::msg::Message;
use crate::proto::{
    Below, DropReason, OpenError, OpenMode, Participants, ProtoId, Protocol, RxCtx, SessionId,
};
use crate::tcp::{Tcp, IPPROTO_TCP};
use crate::udp::Udp;

/// Deepest protocol stack a frame may climb (bounds the saved-session array of ILLM).
pub const MAX_DEPTH: usize = 8;

/// The receive architecture, chosen when the graph is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    /// Layered logical multiplexing (002 §3.1).
    #[default]
    Llm,
    /// Direct application association (002 §3.2).
    Daa,
    /// Integrated layered logical multiplexing (002 §3.3).
    Illm,
}

impl Architecture {
    /// All three, in the paper's order.
    pub const ALL: [Architecture; 3] = [Architecture::Llm, Architecture::Daa, Architecture::Illm];
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Llm => "llm",
            Architecture::Daa => "daa",
            Architecture::Illm => "illm",
        }
    }
}

/// Configuration of a stack.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StackConfig {
    /// Receive architecture.
    pub architecture: Architecture,
    /// Integrated layer processing: copy-and-checksum in one pass (true) or copy then checksum.
    pub ilp: bool,
    /// Our station (MAC) address.
    pub station: [u8; 6],
    /// Our IPv4 address.
    pub address: [u8; 4],
    /// DAA only: queue received work by the deadline/priority field (capacity in frames; 0 = off,
    /// process each frame at once in arrival order).
    pub priority_queue: usize,
    /// DAA only, and never a real configuration: demultiplex again at every layer above the
    /// bottom, as LLM does. The claims ledger's mutant of 002's single demultiplexing point
    /// (`mslink stack-bench --count --mutant daa-layered-demux`, docs/reproduce.md).
    pub mutant_layered_demux: bool,
}

impl Default for StackConfig {
    /// Host 1 (see [`StackConfig::host`]), LLM, no ILP, no priority queue.
    fn default() -> Self {
        StackConfig::host(1)
    }
}

impl StackConfig {
    /// Hosts 1 and 2 (see [`StackConfig::host`]) under architecture `arch`: the two ends
    /// of a test or benchmark wire.
    pub fn pair(arch: Architecture) -> (Self, Self) {
        let end = |n| StackConfig {
            architecture: arch,
            ..StackConfig::host(n)
        };
        (end(1), end(2))
    }

    /// Default settings for test host `n`: station 02:00:00:00:00:n, address 10.0.0.n.
    pub fn host(n: u8) -> Self {
        StackConfig {
            architecture: Architecture::Llm,
            ilp: false,
            station: [2, 0, 0, 0, 0, n],
            address: [10, 0, 0, n],
            priority_queue: 0,
            mutant_layered_demux: false,
        }
    }
}

/// Handle of an application endpoint (the top anchor's view of a path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EndpointId(pub u32);

/// Data delivered to an application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The receiving endpoint.
    pub endpoint: EndpointId,
    /// The user data (copied once into the application's buffer).
    pub data: Vec<u8>,
    /// The DAA deadline/priority field (0 otherwise).
    pub priority: u32,
    /// When the frame was handed to the stack.
    pub received: Instant,
}

/// Errors of `open`, `send` and graph assembly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StackError {
    /// A layer refused to open a session.
    #[error("cannot open session: {0}")]
    Open(#[from] OpenError),
    /// The DAA application id could not be allocated.
    #[error("cannot allocate application id: {0}")]
    Alloc(#[from] AllocError),
    /// No such (open) endpoint.
    #[error("no such endpoint")]
    NoEndpoint,
    /// The path from this protocol to the device is longer than [`MAX_DEPTH`] or has a cycle.
    #[error("protocol graph too deep")]
    TooDeep,
}

/// Counters of a stack.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackStats {
    /// Frames handed in by the device.
    pub rx_frames: u64,
    /// Deliveries to applications.
    pub delivered: u64,
    /// Frames a protocol took as control with nothing to deliver (TCP pure ACKs); every
    /// received frame is delivered, consumed or dropped.
    pub consumed: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Demultiplexing operations for the frames delivered or consumed (002's count of
    /// demultiplexing points: one per layer in LLM and ILLM, one in DAA).
    pub demuxes: u64,
    /// State changes made before each delivered or consumed frame's last demultiplexing
    /// operation, summed (0 when every demultiplexing comes first).
    pub pops_before_last_demux: u64,
    /// Drops per protocol (graph order) and reason ([`DropReason::ALL`] order).
    pub drops: Vec<(&'static str, [u64; DropReason::COUNT])>,
}

impl StackStats {
    /// Total frames dropped at any layer.
    pub fn dropped(&self) -> u64 {
        self.drops.iter().flat_map(|(_, c)| c.iter()).sum()
    }
}

/// Who sits above a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Upper {
    Proto(ProtoId),
    App(EndpointId),
}

/// Protocol-independent session record (x-kernel session object fields the framework needs).
#[derive(Clone, Copy, Debug)]
struct SessionRec {
    upper: Upper,
    /// 002 §4.3: set on sessions at the user-protocol boundary.
    up_boundary: bool,
    /// DAA: the path this session belongs to.
    path: Option<u32>,
}

struct Node {
    proto: Box<dyn Protocol>,
    /// The protocol below and the number this one is known by there.
    lower: Option<(ProtoId, u32)>,
    sessions: Vec<Option<SessionRec>>,
    drops: [u64; DropReason::COUNT],
}

/// A path: the doubly linked session stack of one connection, bottom to top.
#[derive(Clone, Debug)]
struct Path {
    sessions: Vec<(ProtoId, SessionId)>,
    key: Option<DemuxKey>,
    open: bool,
}

/// Work queued in DAA priority mode after the bottom layer's pop.
struct Work {
    priority: u32,
    seq: u64,
    path: u32,
    msg: Message,
    rx: RxCtx,
    at: Instant,
}

impl PartialEq for Work {
    fn eq(&self, o: &Self) -> bool {
        (self.priority, self.seq) == (o.priority, o.seq)
    }
}
impl Eq for Work {}
impl PartialOrd for Work {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Work {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // Max-heap: higher priority first, then earlier arrival.
        self.priority.cmp(&o.priority).then(o.seq.cmp(&self.seq))
    }
}

/// Assembles a protocol graph at start-up.
pub struct GraphBuilder {
    cfg: StackConfig,
    nodes: Vec<Node>,
}

impl GraphBuilder {
    /// An empty graph with configuration `cfg`.
    pub fn new(cfg: StackConfig) -> Self {
        GraphBuilder {
            cfg,
            nodes: Vec::new(),
        }
    }

    /// Adds a protocol object; returns its id.
    pub fn protocol(&mut self, p: Box<dyn Protocol>) -> ProtoId {
        self.nodes.push(Node {
            proto: p,
            lower: None,
            sessions: Vec::new(),
            drops: [0; DropReason::COUNT],
        });
        self.nodes.len() - 1
    }

    /// Declares that `upper` runs over `lower`, which names it `number` in its header.
    pub fn over(&mut self, upper: ProtoId, lower: ProtoId, number: u32) -> &mut Self {
        self.nodes[upper].lower = Some((lower, number));
        self
    }

    /// Finishes the graph; `bottom` is the protocol attached to the device anchor.
    pub fn build(self, bottom: ProtoId) -> Stack {
        let cap = self.cfg.priority_queue;
        Stack {
            cfg: self.cfg,
            nodes: self.nodes,
            bottom,
            paths: Vec::new(),
            alloc: AppIdAllocator::new(),
            tx: VecDeque::new(),
            rx_out: VecDeque::new(),
            work: BinaryHeap::with_capacity(cap),
            seq: 0,
            stats: StackStats::default(),
        }
    }
}

/// One end of a UDP connection between two stacks, for [`Stack::open_udp_to`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpConn {
    /// Our port.
    pub local_port: u16,
    /// The peer's port.
    pub remote_port: u16,
    /// Our DAA application id (requested from the allocator).
    pub local_app: u32,
    /// The peer's DAA application id.
    pub remote_app: u32,
    /// DAA priority written into frames we send.
    pub priority: u32,
    /// UDP checksum on send and verify on receive.
    pub checksum: bool,
}

impl UdpConn {
    /// The same connection seen from the peer: ports and application ids swapped.
    pub fn reversed(self) -> UdpConn {
        UdpConn {
            local_port: self.remote_port,
            remote_port: self.local_port,
            local_app: self.remote_app,
            remote_app: self.local_app,
            ..self
        }
    }
}

/// Protocol ids of the standard graph: UDP and TCP over IPv4 over Ethernet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpIpEth {
    /// Ethernet (DAA-extended under the DAA architecture).
    pub eth: ProtoId,
    /// IPv4.
    pub ip: ProtoId,
    /// UDP.
    pub udp: ProtoId,
    /// TCP (the minimal one of [`crate::tcp`]).
    pub tcp: ProtoId,
}

/// A protocol stack: graph, anchors, paths.
pub struct Stack {
    cfg: StackConfig,
    nodes: Vec<Node>,
    bottom: ProtoId,
    paths: Vec<Path>,
    alloc: AppIdAllocator,
    tx: VecDeque<Message>,
    rx_out: VecDeque<Delivery>,
    work: BinaryHeap<Work>,
    seq: u64,
    stats: StackStats,
}

impl Stack {
    /// The standard graph: UDP and TCP over IPv4 over Ethernet, Ethernet extended for DAA when
    /// the architecture is DAA.
    pub fn udp_ip_eth(cfg: StackConfig) -> (Stack, UdpIpEth) {
        let daa = cfg.architecture == Architecture::Daa;
        let mut g = GraphBuilder::new(cfg.clone());
        let eth = g.protocol(Box::new(Ethernet::new(cfg.station, daa)));
        let ip = g.protocol(Box::new(Ipv4::new(cfg.address)));
        let udp = g.protocol(Box::new(Udp::new()));
        let tcp = g.protocol(Box::new(Tcp::new()));
        g.over(ip, eth, ETHERTYPE_IPV4 as u32)
            .over(udp, ip, IPPROTO_UDP as u32)
            .over(tcp, ip, IPPROTO_TCP as u32);
        (g.build(eth), UdpIpEth { eth, ip, udp, tcp })
    }

    /// The configuration.
    pub fn config(&self) -> &StackConfig {
        &self.cfg
    }

    /// Opens a UDP endpoint on protocol `top` talking to the stack configured as `peer`:
    /// the common case of [`Stack::open`], with the peer's station and IP address taken from
    /// its configuration. Open the other end with `conn.reversed()` on the peer.
    pub fn open_udp_to(
        &mut self,
        top: ProtoId,
        peer: &StackConfig,
        conn: UdpConn,
    ) -> Result<(EndpointId, u32), StackError> {
        let p = Participants {
            remote_mac: peer.station,
            remote_ip: peer.address,
            local_port: conn.local_port,
            remote_port: conn.remote_port,
            remote_app: conn.remote_app,
            priority: conn.priority,
            udp_checksum: conn.checksum,
            ..Default::default()
        };
        self.open(top, p, 0, Some(conn.local_app))
    }

    /// Opens an application endpoint on protocol `top` (an app is known there by `app_number`:
    /// an ethertype or IP protocol number; UDP uses the ports in `p`). Local addresses in `p` are
    /// filled from the configuration. Under DAA an application id is allocated (`requested` is
    /// honoured if free, 002 §4.2.1) and returned; otherwise the returned id is 0.
    pub fn open(
        &mut self,
        top: ProtoId,
        mut p: Participants,
        app_number: u32,
        requested: Option<u32>,
    ) -> Result<(EndpointId, u32), StackError> {
        p.local_mac = self.cfg.station;
        p.local_ip = self.cfg.address;
        // The chain from top to the device, with the number each layer is known by below.
        let mut chain: Vec<(ProtoId, u32)> = vec![(top, app_number)];
        let mut cur = top;
        while let Some((lower, n)) = self.nodes[cur].lower {
            if chain.len() >= MAX_DEPTH {
                return Err(StackError::TooDeep);
            }
            // `cur` is known in `lower` by `n`.
            chain.push((lower, n));
            cur = lower;
        }
        let daa = self.cfg.architecture == Architecture::Daa;
        let key = if daa {
            // The protocol id is the number the demultiplexing (bottom) layer knows the
            // layer above it by (chain[i].1 is how chain[i] names chain[i-1]).
            let protocol = chain[chain.len() - 1].1 as u16;
            let k = self.alloc.allocate(self.cfg.station, protocol, requested)?;
            p.local_app = k.app;
            Some(k)
        } else {
            None
        };
        let mode = if daa {
            OpenMode::Path
        } else {
            OpenMode::Shared
        };
        let ep = EndpointId(self.paths.len() as u32);
        let path_id = self.paths.len() as u32;
        // Open top-down: chain[i].1 is the number chain[i] knows the layer above it by.
        let mut opened: Vec<(ProtoId, SessionId)> = Vec::with_capacity(chain.len());
        for &(proto, hlp) in &chain {
            match self.nodes[proto].proto.open(&p, hlp, mode) {
                Ok(s) => opened.push((proto, s)),
                Err(e) => {
                    for &(q, s) in &opened {
                        self.nodes[q].proto.close(s);
                    }
                    if let Some(k) = key {
                        self.alloc.release(k);
                    }
                    return Err(e.into());
                }
            }
        }
        for (i, &(proto, s)) in opened.iter().enumerate() {
            let upper = if i == 0 {
                Upper::App(ep)
            } else {
                Upper::Proto(opened[i - 1].0)
            };
            let rec = SessionRec {
                upper,
                up_boundary: i == 0,
                path: daa.then_some(path_id),
            };
            let v = &mut self.nodes[proto].sessions;
            let idx = s.0 as usize;
            if v.len() <= idx {
                v.resize(idx + 1, None);
            }
            if v[idx].is_none() || daa {
                v[idx] = Some(rec);
            }
        }
        opened.reverse();
        self.paths.push(Path {
            sessions: opened,
            key,
            open: true,
        });
        Ok((ep, p.local_app))
    }

    /// Closes an endpoint: its sessions are closed (shared ones when their last user goes) and
    /// its DAA application id released.
    pub fn close(&mut self, ep: EndpointId) {
        let Some(path) = self.paths.get_mut(ep.0 as usize) else {
            return;
        };
        if !path.open {
            return;
        }
        path.open = false;
        for &(q, s) in &path.sessions {
            self.nodes[q].proto.close(s);
        }
        if let Some(k) = path.key {
            self.alloc.release(k);
        }
    }

    /// Sends `data` on endpoint `ep`: one copy into a message, then every layer's push down the
    /// path (headers prepended, payload never moved); the frame waits for `poll_transmit`.
    pub fn send(&mut self, _now: Instant, ep: EndpointId, data: &[u8]) -> Result<(), StackError> {
        let path = self
            .paths
            .get(ep.0 as usize)
            .filter(|p| p.open)
            .ok_or(StackError::NoEndpoint)?;
        let mut msg = Message::with_headroom(data);
        for &(q, s) in path.sessions.iter().rev() {
            self.nodes[q].proto.push(s, &mut msg);
        }
        self.stats.tx_frames += 1;
        self.tx.push_back(msg);
        Ok(())
    }

    /// Sends the acknowledgements owed (TCP: data received that no segment sent since has
    /// acknowledged) as pure ACK segments, one per endpoint whose top session owes one; returns
    /// how many. A driver calls it when it has no reply to piggyback the ACK on (RFC 1122
    /// §4.2.3.2 lets an ACK wait for outgoing data; the stack has no timer to bound the wait).
    pub fn flush_acks(&mut self, now: Instant) -> usize {
        let mut n = 0;
        for i in 0..self.paths.len() {
            let p = &self.paths[i];
            let Some(&(q, s)) = p.sessions.last().filter(|_| p.open) else {
                continue;
            };
            if self.nodes[q].proto.ack_owed(s) && self.send(now, EndpointId(i as u32), &[]).is_ok()
            {
                n += 1;
            }
        }
        n
    }

    /// Device anchor, out: copies the next frame into `buf` and returns its length (`None` when
    /// nothing waits or `buf` is too small, in which case the frame stays queued).
    pub fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<usize> {
        let m = self.tx.front()?;
        let n = m.len();
        let dst = buf.get_mut(..n)?;
        dst.copy_from_slice(m.bytes());
        self.tx.pop_front();
        Some(n)
    }

    /// Device anchor, out, without a copy: the next frame as a message.
    pub fn poll_transmit_msg(&mut self) -> Option<Message> {
        self.tx.pop_front()
    }

    /// Frames waiting to be transmitted.
    pub fn tx_pending(&self) -> usize {
        self.tx.len()
    }

    /// Receive work waiting in the DAA priority queue.
    pub fn work_pending(&self) -> usize {
        self.work.len()
    }

    /// Application anchor: the next delivery. In DAA priority mode this first does the most
    /// urgent queued work, one frame at a time, until a delivery results or the queue is empty.
    pub fn poll_deliver(&mut self) -> Option<Delivery> {
        if let Some(d) = self.rx_out.pop_front() {
            return Some(d);
        }
        while let Some(w) = self.work.pop() {
            self.climb_rest(w);
            if let Some(d) = self.rx_out.pop_front() {
                return Some(d);
            }
        }
        None
    }

    /// The stack has no timers; nothing is ever due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// No timers: does nothing.
    pub fn handle_timeout(&mut self, _now: Instant) {}

    /// Counters, with drops per layer.
    pub fn stats(&self) -> StackStats {
        let mut s = self.stats.clone();
        s.drops = self
            .nodes
            .iter()
            .map(|n| (n.proto.name(), n.drops))
            .collect();
        s
    }

    /// Frames and bytes popped by each session of `ep`'s path, bottom to top.
    pub fn path_counters(&self, ep: EndpointId) -> Vec<(u64, u64)> {
        self.paths.get(ep.0 as usize).map_or_else(Vec::new, |p| {
            p.sessions
                .iter()
                .map(|&(q, s)| self.nodes[q].proto.session_counters(s))
                .collect()
        })
    }

    fn drop_at(&mut self, proto: ProtoId, r: DropReason) {
        self.nodes[proto].drops[r.index()] += 1;
    }

    fn rec(&self, proto: ProtoId, s: SessionId) -> Option<SessionRec> {
        self.nodes[proto]
            .sessions
            .get(s.0 as usize)
            .copied()
            .flatten()
    }

    fn deliver(&mut self, ep: EndpointId, msg: &Message, mut rx: RxCtx, now: Instant) {
        self.stats.demuxes += u64::from(rx.demuxes);
        self.stats.pops_before_last_demux += u64::from(rx.pops_before_last_demux);
        if rx.consumed {
            self.stats.consumed += 1;
            return;
        }
        // Top anchor: the copy into the application's buffer, unless a layer already did it.
        let data = if rx.copied {
            std::mem::take(&mut rx.user)
        } else {
            msg.bytes().to_vec()
        };
        self.stats.delivered += 1;
        self.rx_out.push_back(Delivery {
            endpoint: ep,
            data,
            priority: rx.priority,
            received: now,
        });
    }

    /// Device anchor, in: a received frame, processed per the configured architecture.
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        self.stats.rx_frames += 1;
        let mut msg = Message::from_frame(frame);
        let rx = RxCtx {
            ilp: self.cfg.ilp,
            ..Default::default()
        };
        match self.cfg.architecture {
            Architecture::Llm => self.receive_llm(now, &mut msg, rx),
            Architecture::Illm => self.receive_illm(now, &mut msg, rx),
            Architecture::Daa => self.receive_daa(now, msg, rx),
        }
    }

    /// 002 §3.1: demux and state change alternate at each layer.
    fn receive_llm(&mut self, now: Instant, msg: &mut Message, mut rx: RxCtx) {
        let mut cur = self.bottom;
        let mut below = Below::default();
        for _ in 0..MAX_DEPTH {
            let d = match self.nodes[cur].proto.demux_below(msg.bytes(), &below) {
                Ok(d) => d,
                Err(r) => return self.drop_at(cur, r),
            };
            noted_demux(&mut rx);
            below.note(&d);
            let Some(rec) = self.rec(cur, d.session) else {
                return self.drop_at(cur, DropReason::NoSession);
            };
            if let Err(r) = self.nodes[cur].proto.pop(d.session, msg, &mut rx) {
                return self.drop_at(cur, r);
            }
            rx.pops += 1;
            match rec.upper {
                Upper::Proto(p) => cur = p,
                Upper::App(ep) => return self.deliver(ep, msg, rx, now),
            }
        }
    }

    /// 002 §4.3: all demux first (sessions and offsets saved), then all state changes.
    fn receive_illm(&mut self, now: Instant, msg: &mut Message, mut rx: RxCtx) {
        let mut saved = [(0usize, SessionId(0)); MAX_DEPTH];
        let mut depth = 0;
        let mut off = 0usize;
        let mut cur = self.bottom;
        let mut below = Below::default();
        let ep = loop {
            if depth == MAX_DEPTH {
                return;
            }
            let hdr = msg.bytes().get(off..).unwrap_or(&[]);
            let d = match self.nodes[cur].proto.demux_below(hdr, &below) {
                Ok(d) => d,
                Err(r) => return self.drop_at(cur, r),
            };
            noted_demux(&mut rx);
            below.note(&d);
            let Some(rec) = self.rec(cur, d.session) else {
                return self.drop_at(cur, DropReason::NoSession);
            };
            saved[depth] = (cur, d.session);
            depth += 1;
            off += d.hdr_len;
            match (rec.up_boundary, rec.upper) {
                (true, Upper::App(ep)) => break ep,
                (_, Upper::Proto(p)) => cur = p,
                (false, Upper::App(ep)) => break ep,
            }
        };
        for &(p, s) in &saved[..depth] {
            if let Err(r) = self.nodes[p].proto.pop(s, msg, &mut rx) {
                return self.drop_at(p, r);
            }
            rx.pops += 1;
        }
        self.deliver(ep, msg, rx, now);
    }

    /// 002 §4.2: one lookup at the bottom finds the path; the frame climbs it.
    fn receive_daa(&mut self, now: Instant, mut msg: Message, mut rx: RxCtx) {
        let b = self.bottom;
        let d = match self.nodes[b].proto.demux(msg.bytes()) {
            Ok(d) => d,
            Err(r) => return self.drop_at(b, r),
        };
        noted_demux(&mut rx);
        let Some(path) = self.rec(b, d.session).and_then(|r| r.path) else {
            return self.drop_at(b, DropReason::NoSession);
        };
        if let Err(r) = self.nodes[b].proto.pop(d.session, &mut msg, &mut rx) {
            return self.drop_at(b, r);
        }
        rx.pops += 1;
        let w = Work {
            priority: rx.priority,
            seq: self.seq,
            path,
            msg,
            rx,
            at: now,
        };
        self.seq += 1;
        if self.cfg.priority_queue == 0 {
            self.climb_rest(w);
        } else if self.work.len() >= self.cfg.priority_queue {
            self.drop_at(b, DropReason::QueueFull);
        } else {
            // 002 §5.5: the deadline/priority field orders the rest of the processing.
            self.work.push(w);
        }
    }

    /// DAA, without a state change: the bottom layer's demux alone (the stack's one
    /// demultiplexing point, 002 §4.2) and the frame's deadline/priority field. A driver uses it
    /// to pick the thread that will run the rest (`handle_frame`) at that priority before any
    /// other work is done for the frame (002 §4.2.2: the field is the priority of the thread
    /// that shepherds the packet). Other architectures: `Err(Unsupported)` (their priority is
    /// known only at the top).
    pub fn classify(&self, frame: &[u8]) -> Result<(EndpointId, u32), DropReason> {
        if self.cfg.architecture != Architecture::Daa {
            return Err(DropReason::Unsupported);
        }
        let b = self.bottom;
        let d = self.nodes[b].proto.demux(frame)?;
        let path = self
            .rec(b, d.session)
            .and_then(|r| r.path)
            .filter(|&p| self.paths.get(p as usize).is_some_and(|p| p.open))
            .ok_or(DropReason::NoSession)?;
        let prio = mslink_wire::eth::DaaFrame::new_checked(frame)
            .map_err(DropReason::from)?
            .priority();
        Ok((EndpointId(path), prio))
    }

    /// DAA: the pops above the bottom layer along the path, then delivery.
    fn climb_rest(&mut self, mut w: Work) {
        let Some(path) = self.paths.get(w.path as usize).filter(|p| p.open) else {
            return self.drop_at(self.bottom, DropReason::NoSession);
        };
        let n = path.sessions.len();
        let mut below = Below::default();
        for i in 1..n {
            let (p, s) = self.paths[w.path as usize].sessions[i];
            if self.cfg.mutant_layered_demux {
                // The mutant: the path is known, yet each layer looks the frame up again (a DAA
                // path's sessions need not be in the layer's own map, so what it finds is
                // discarded: the work is what the mutant adds).
                if let Ok(d) = self.nodes[p].proto.demux_below(w.msg.bytes(), &below) {
                    below.note(&d);
                }
                noted_demux(&mut w.rx);
            }
            if let Err(r) = self.nodes[p].proto.pop(s, &mut w.msg, &mut w.rx) {
                return self.drop_at(p, r);
            }
            w.rx.pops += 1;
        }
        self.deliver(EndpointId(w.path), &w.msg, w.rx, w.at);
    }
}

/// One more demultiplexing operation for the frame of `rx`, after its pops so far.
fn noted_demux(rx: &mut RxCtx) {
    rx.demuxes += 1;
    rx.pops_before_last_demux = rx.pops;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn daa_pair(queue: usize) -> (Stack, Stack, Vec<EndpointId>) {
        let (ca, mut cb) = StackConfig::pair(Architecture::Daa);
        cb.priority_queue = queue;
        let (mut a, ia) = Stack::udp_ip_eth(ca.clone());
        let (mut b, ib) = Stack::udp_ip_eth(cb.clone());
        let mut ea = Vec::new();
        for (i, prio) in [1u32, 9, 5].into_iter().enumerate() {
            let i = i as u16;
            let c = UdpConn {
                local_port: 100 + i,
                remote_port: 200 + i,
                local_app: 10 + i as u32,
                remote_app: 20 + i as u32,
                priority: prio,
                ..Default::default()
            };
            ea.push(a.open_udp_to(ia.udp, &cb, c).unwrap().0);
            b.open_udp_to(
                ib.udp,
                &ca,
                UdpConn {
                    priority: 0,
                    ..c.reversed()
                },
            )
            .unwrap();
        }
        (a, b, ea)
    }

    fn carry(a: &mut Stack, b: &mut Stack) {
        while let Some(m) = a.poll_transmit_msg() {
            b.handle_frame(Instant::ZERO, m.bytes());
        }
    }

    #[test]
    fn priority_queue_orders_by_priority_then_arrival() {
        let (mut a, mut b, ea) = daa_pair(16);
        for (k, &e) in ea.iter().enumerate() {
            a.send(Instant::ZERO, e, &[k as u8]).unwrap();
            a.send(Instant::ZERO, e, &[k as u8 + 10]).unwrap();
        }
        carry(&mut a, &mut b);
        assert_eq!(b.work_pending(), 6);
        let got: Vec<(u32, u8)> = std::iter::from_fn(|| b.poll_deliver())
            .map(|d| (d.priority, d.data[0]))
            .collect();
        assert_eq!(got, vec![(9, 1), (9, 11), (5, 2), (5, 12), (1, 0), (1, 10)]);
    }

    #[test]
    fn full_queue_drops_and_counts() {
        let (mut a, mut b, ea) = daa_pair(2);
        for _ in 0..5 {
            a.send(Instant::ZERO, ea[0], b"x").unwrap();
        }
        carry(&mut a, &mut b);
        let s = b.stats();
        assert_eq!(s.drops[0].1[DropReason::QueueFull.index()], 3);
        assert_eq!(std::iter::from_fn(|| b.poll_deliver()).count(), 2);
        let s = b.stats();
        assert_eq!(s.rx_frames, s.delivered + s.dropped());
    }

    #[test]
    fn work_for_a_path_closed_while_queued_is_dropped() {
        let (mut a, mut b, ea) = daa_pair(8);
        a.send(Instant::ZERO, ea[1], b"late").unwrap();
        carry(&mut a, &mut b);
        b.close(EndpointId(1));
        assert!(b.poll_deliver().is_none());
        assert_eq!(b.stats().dropped(), 1);
    }

    #[test]
    fn classify_names_the_path_and_priority_without_a_state_change() {
        let (mut a, b, ea) = daa_pair(0);
        a.send(Instant::ZERO, ea[1], b"x").unwrap();
        let m = a.poll_transmit_msg().unwrap();
        assert_eq!(b.classify(m.bytes()), Ok((EndpointId(1), 9)));
        assert_eq!(b.stats().rx_frames, 0);
        assert_eq!(b.path_counters(EndpointId(1)), vec![(0, 0); 3]);
        assert_eq!(b.classify(&m.bytes()[..10]), Err(DropReason::Truncated));
        let (llm, _) = Stack::udp_ip_eth(StackConfig::default());
        assert_eq!(llm.classify(m.bytes()), Err(DropReason::Unsupported));
    }

    #[test]
    fn tcp_through_every_architecture_with_owed_acks_flushed() {
        for arch in Architecture::ALL {
            let (ca, cb) = StackConfig::pair(arch);
            let (mut a, ia) = Stack::udp_ip_eth(ca.clone());
            let (mut b, ib) = Stack::udp_ip_eth(cb.clone());
            // A UDP and a TCP endpoint on the same port number: IP's protocol field parts them.
            let c = UdpConn {
                local_port: 5000,
                remote_port: 80,
                local_app: 1,
                remote_app: 2,
                ..Default::default()
            };
            let (eu, _) = a.open_udp_to(ia.udp, &cb, c).unwrap();
            let c2 = UdpConn {
                local_app: 3,
                remote_app: 4,
                ..c
            };
            let (et, _) = a.open_udp_to(ia.tcp, &cb, c2).unwrap();
            b.open_udp_to(ib.udp, &ca, c.reversed()).unwrap();
            let (bt, _) = b.open_udp_to(ib.tcp, &ca, c2.reversed()).unwrap();
            a.send(Instant::ZERO, et, b"over tcp").unwrap();
            a.send(Instant::ZERO, eu, b"over udp").unwrap();
            carry(&mut a, &mut b);
            let got: Vec<_> = std::iter::from_fn(|| b.poll_deliver())
                .map(|d| (d.endpoint.0, d.data))
                .collect();
            assert_eq!(
                got,
                vec![(1, b"over tcp".to_vec()), (0, b"over udp".to_vec())],
                "{arch:?}"
            );
            // B owes A an ACK for the TCP data and sends it alone; A takes it in silently.
            assert_eq!(b.flush_acks(Instant::ZERO), 1);
            assert_eq!(b.flush_acks(Instant::ZERO), 0, "owed once");
            carry(&mut b, &mut a);
            assert!(a.poll_deliver().is_none(), "a pure ACK delivers nothing");
            let s = a.stats();
            assert_eq!(
                (s.rx_frames, s.consumed, s.dropped()),
                (1, 1, 0),
                "{arch:?}: {s:?}"
            );
            // The TCP layer counted the ACK on A's path (bottom to top: eth, ip, tcp).
            assert_eq!(a.path_counters(et)[2], (1, 0));
            // A replayed segment is out of order and counted at TCP.
            let mut a2 = a;
            a2.send(Instant::ZERO, et, b"again").unwrap();
            let m = a2.poll_transmit_msg().unwrap();
            b.handle_frame(Instant::ZERO, m.bytes());
            b.handle_frame(Instant::ZERO, m.bytes());
            assert_eq!(b.poll_deliver().map(|d| d.endpoint), Some(bt));
            assert!(b.poll_deliver().is_none());
            let tcp_drops = b.stats().drops[3];
            assert_eq!(tcp_drops.0, "tcp");
            assert_eq!(tcp_drops.1[DropReason::OutOfOrder.index()], 1, "{arch:?}");
        }
    }

    #[test]
    fn open_refuses_a_taken_port_and_rolls_back() {
        let (mut s, ids) = Stack::udp_ip_eth(StackConfig::default());
        let p = Participants {
            remote_mac: [2, 0, 0, 0, 0, 2],
            remote_ip: [10, 0, 0, 2],
            local_port: 53,
            ..Default::default()
        };
        s.open(ids.udp, p, 0, None).unwrap();
        assert_eq!(
            s.open(ids.udp, p, 0, None),
            Err(StackError::Open(OpenError::KeyInUse))
        );
        let (mut d, ids) = Stack::udp_ip_eth(StackConfig {
            architecture: Architecture::Daa,
            ..Default::default()
        });
        d.open(ids.udp, p, 0, Some(5)).unwrap();
        let q = Participants {
            local_port: 54,
            ..p
        };
        assert_eq!(
            d.open(ids.udp, q, 0, Some(5)),
            Err(StackError::Alloc(AllocError::Taken(5)))
        );
        assert!(d.open(ids.udp, q, 0, None).unwrap().1 >= crate::demux_key::FIRST_DYNAMIC_APP_ID);
    }
}
