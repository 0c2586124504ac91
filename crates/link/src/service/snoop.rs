//! Berkeley Snoop (004 §III.A, after Balakrishnan et al.): a TCP-aware agent at the base
//! station, kept for comparison with the TCP-blind services.
//!
//! Contract. Snoop frames exactly like Raw Link (no header on a link that does not segment:
//! "there is no frame overhead with Berkeley Snoop") and never retransmits on its own behalf
//! in the direction *from* the wireless host. Its two roles:
//!
//! - [`SnoopRole::BaseStation`]: every TCP segment carrying data that it sends toward the
//!   wireless host is cached per connection. TCP ACKs that come back from the wireless host
//!   are inspected before they go up: a new ACK frees the cached segments it covers; the first
//!   duplicate ACK for a cached segment triggers a local retransmission of that segment ahead
//!   of everything queued, and the duplicates that the lost segment's successors will cause
//!   are suppressed (counted in [`ServiceStats::suppressed`]), so the sender does not fast
//!   retransmit. A segment the TCP sender itself retransmits is forwarded, and duplicate ACKs
//!   for it go up to the sender. A local timer retransmits the oldest cached segment when no
//!   ACK progress is seen for `max(local_rto_min, 2 × local SRTT)`. By default
//!   ([`SnoopTimer::LocalRetransmissions`]) the timer only guards a segment Snoop has already
//!   retransmitted: local recovery starts on duplicate ACKs, as 004 §III.A describes it ("if
//!   duplicate TCP ACKs indicate that a packet was lost, it is retransmitted by the base
//!   station"), and a loss that brings no duplicate ACK (the last segment of a short transfer,
//!   or every duplicate lost: "the loss of *duplicate* TCP ACKs", 004 §IV) is left to TCP.
//!   [`SnoopTimer::AllSegments`] also arms it for first transmissions.
//! - [`SnoopRole::Mobile`]: the wireless host's end is plain Raw Link.
//!
//! Non-TCP packets pass through untouched in both roles. Sequence numbers are unwrapped to
//! 64 bits around the highest one seen (RFC 793 §3.3 modular comparison), so the cache keeps
//! its order across wrap-around.

use std::collections::{BTreeMap, HashMap, VecDeque};

use mslink_wire::ip::IpPacket;
use mslink_wire::tcp::{self, TcpPacket};

use super::raw::{Raw, RawConfig};
use super::{Delivery, Sdu, Service, ServiceStats};
use crate::time::{Duration, Instant};
use crate::wire::{FragPos, HeaderFormat};

/// Which end of the wireless link a Snoop service sits at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnoopRole {
    /// The base station: caches data toward the wireless host, watches its ACKs.
    #[default]
    BaseStation,
    /// The wireless host: Raw Link.
    Mobile,
}

/// Which cached segments Snoop's local timer guards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnoopTimer {
    /// Only a segment already retransmitted locally (after a duplicate ACK): a lost local
    /// retransmission is repaired, but a loss that brings no duplicate ACK is TCP's (004).
    #[default]
    LocalRetransmissions,
    /// Any oldest cached segment without ACK progress, first transmissions included.
    AllSegments,
}

/// Snoop tuning.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SnoopConfig {
    /// SDUs held waiting for the link before new ones are refused.
    pub queue_limit: usize,
    /// Which end this is. Links are configured once for both ends; drivers call
    /// [`crate::config::LinkConfig::at_mobile_end`] for the wireless host's end.
    pub role: SnoopRole,
    /// Most segments cached per connection; beyond it segments pass uncached.
    pub cache_limit: usize,
    /// Floor of the local retransmission timer, ms.
    pub local_rto_min_ms: f64,
    /// Local timer retransmissions of one segment before Snoop leaves it to TCP.
    pub max_local_retransmissions: u32,
    /// Which segments the local timer guards.
    pub local_timer: SnoopTimer,
}

impl Default for SnoopConfig {
    fn default() -> Self {
        SnoopConfig {
            queue_limit: 1000,
            role: SnoopRole::BaseStation,
            cache_limit: 256,
            local_rto_min_ms: 20.0,
            max_local_retransmissions: 4,
            local_timer: SnoopTimer::LocalRetransmissions,
        }
    }
}

/// A TCP connection as seen in the data direction (toward the wireless host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct ConnKey {
    src: [u8; 16],
    dst: [u8; 16],
    sport: u16,
    dport: u16,
}

/// The TCP fields Snoop reads from one packet.
#[derive(Clone, Copy, Debug)]
struct TcpView {
    key: ConnKey,
    seq: u32,
    ack: Option<u32>,
    payload_len: u32,
    syn_fin: bool,
}

/// Reads the TCP fields of an IPv4/IPv6 packet, or of the first fragment of one (the link
/// may cut a packet into frames; the headers sit in the first).
fn tcp_view(packet: &[u8]) -> Option<TcpView> {
    let ip = IpPacket::parse_lax(packet).ok()?;
    if ip.protocol != 6 || !ip.is_first_fragment() {
        return None;
    }
    let mut src = [0; 16];
    let mut dst = [0; 16];
    src[..ip.src.len()].copy_from_slice(ip.src);
    dst[..ip.dst.len()].copy_from_slice(ip.dst);
    let t = TcpPacket::new_checked(ip.payload).ok()?;
    let flags = t.flags();
    Some(TcpView {
        key: ConnKey {
            src,
            dst,
            sport: t.src_port(),
            dport: t.dst_port(),
        },
        seq: t.seq(),
        ack: (flags & tcp::ACK != 0).then(|| t.ack_number()),
        payload_len: ip.payload_len.saturating_sub(t.header_len()) as u32,
        syn_fin: flags & (tcp::SYN | tcp::FIN) != 0,
    })
}

/// Whether the local timer guards `seg`, the oldest cached segment of a connection.
fn guards(config: &SnoopConfig, seg: &Cached) -> bool {
    !seg.sender_retransmitted
        && seg.local_retransmissions < config.max_local_retransmissions
        && (config.local_timer == SnoopTimer::AllSegments || seg.local_retransmissions > 0)
}

/// One cached segment: every SDU (fragment) of it, in order.
#[derive(Debug)]
struct Cached {
    /// Unwrapped sequence number just past its data.
    end: u64,
    sdus: Vec<Sdu>,
    /// The TCP sender retransmitted it: duplicate ACKs for it are the sender's business.
    sender_retransmitted: bool,
    /// When it was handed to the link last (first send or local retransmission).
    sent_at: Instant,
    /// Local retransmissions so far (RTT samples only from segments never retransmitted).
    local_retransmissions: u32,
}

/// Snoop's view of one connection. Sequence numbers are unwrapped to u64 around the highest
/// one seen, so the cache stays ordered across 2^32 wrap-around.
#[derive(Debug)]
struct Conn {
    /// Keyed by unwrapped starting sequence number.
    cache: BTreeMap<u64, Cached>,
    /// Highest unwrapped sequence number seen (reference for unwrapping).
    reference: u64,
    last_ack: Option<u64>,
    /// After a local retransmission for ACK `.0`, how many more duplicates to suppress.
    dup_state: Option<(u64, u32)>,
    /// When ACK progress (or a local retransmission) last happened.
    progress_at: Instant,
    srtt: Option<Duration>,
}

impl Conn {
    fn new(first_seq: u32, now: Instant) -> Self {
        Conn {
            cache: BTreeMap::new(),
            // Start far from zero so sequence numbers below the first one unwrap cleanly.
            reference: (1u64 << 32) + u64::from(first_seq),
            last_ack: None,
            dup_state: None,
            progress_at: now,
            srtt: None,
        }
    }

    /// The unwrapped value of `seq` nearest the reference (RFC 793 §3.3 modular order).
    fn unwrap(&self, seq: u32) -> u64 {
        let delta = seq.wrapping_sub(self.reference as u32) as i32;
        self.reference.wrapping_add_signed(i64::from(delta))
    }
}

/// One end of a Snoop service.
#[derive(Debug)]
pub struct Snoop {
    raw: Raw,
    config: SnoopConfig,
    conns: HashMap<ConnKey, Conn>,
    /// Local retransmissions, sent before anything queued.
    urgent: VecDeque<Sdu>,
    /// The fragments of the packet being cached, until its last fragment passes.
    collecting: Option<(ConnKey, u32, u32, Vec<Sdu>)>,
    released: VecDeque<Delivery>,
}

impl Snoop {
    /// A Snoop end for the given framing.
    pub fn new(config: SnoopConfig, format: HeaderFormat) -> Self {
        Snoop {
            raw: Raw::new(
                RawConfig {
                    queue_limit: config.queue_limit,
                },
                format,
            ),
            config,
            conns: HashMap::new(),
            urgent: VecDeque::new(),
            collecting: None,
            released: VecDeque::new(),
        }
    }

    fn local_rto(&self, c: &Conn) -> Duration {
        let floor = Duration::from_secs_f64(self.config.local_rto_min_ms / 1e3);
        c.srtt.map_or(floor, |s| s.saturating_mul(2).max(floor))
    }

    /// Caches a data segment on its way to the wireless host.
    fn cache_outgoing(&mut self, now: Instant, sdu: &Sdu) {
        match sdu.fp {
            FragPos::Whole | FragPos::First => {
                self.collecting = None;
                let Some(v) = tcp_view(&sdu.data) else {
                    return;
                };
                if v.payload_len == 0 && !v.syn_fin {
                    return;
                }
                let len = v.payload_len + u32::from(v.syn_fin);
                if sdu.fp == FragPos::Whole {
                    self.store(now, v.key, v.seq, len, vec![sdu.clone()]);
                } else {
                    self.collecting = Some((v.key, v.seq, len, vec![sdu.clone()]));
                }
            }
            FragPos::Middle | FragPos::Last => {
                if let Some((_, _, _, sdus)) = self.collecting.as_mut() {
                    sdus.push(sdu.clone());
                }
                if sdu.fp == FragPos::Last {
                    if let Some((key, seq, len, sdus)) = self.collecting.take() {
                        self.store(now, key, seq, len, sdus);
                    }
                }
            }
        }
    }

    fn store(&mut self, now: Instant, key: ConnKey, seq: u32, len: u32, sdus: Vec<Sdu>) {
        let limit = self.config.cache_limit;
        let conn = self.conns.entry(key).or_insert_with(|| Conn::new(seq, now));
        let start = conn.unwrap(seq);
        let end = start + u64::from(len);
        if conn.last_ack.is_some_and(|a| end <= a) {
            return; // already acknowledged: nothing to protect
        }
        conn.reference = conn.reference.max(start);
        let mut cached = Cached {
            end,
            sdus,
            sender_retransmitted: false,
            sent_at: now,
            local_retransmissions: 0,
        };
        if let Some(old) = conn.cache.get(&start) {
            // The TCP sender sent it again: its own recovery is running.
            cached.sender_retransmitted = true;
            cached.local_retransmissions = old.local_retransmissions;
            conn.cache.insert(start, cached);
        } else if conn.cache.len() < limit {
            // The local timer runs from when the oldest cached segment was sent (or last saw
            // progress), so a segment that becomes the oldest restarts it: an empty cache, or
            // one the TCP sender sends below everything cached (a segment that had gone
            // uncached, ahead of an oldest that exhausted its local retransmissions). Without
            // this the stale `progress_at` put the deadline in the past and the segment just
            // sent was resent at once; the simulator also lost every later timer of the link
            // end over that past deadline (see crates/sim/src/world.rs, `arm`).
            if conn
                .cache
                .first_key_value()
                .is_none_or(|(&first, _)| start < first)
            {
                conn.progress_at = now;
            }
            conn.cache.insert(start, cached);
        }
    }

    /// Looks at a packet from the wireless host; returns true if it must be withheld.
    fn snoop_ack(&mut self, now: Instant, packet: &[u8]) -> bool {
        let Some(v) = tcp_view(packet) else {
            return false;
        };
        let Some(ack) = v.ack else {
            return false;
        };
        // The ACK travels opposite to the data: swap the key.
        let key = ConnKey {
            src: v.key.dst,
            dst: v.key.src,
            sport: v.key.dport,
            dport: v.key.sport,
        };
        let Some(conn) = self.conns.get_mut(&key) else {
            return false;
        };
        let ack = conn.unwrap(ack);
        let pure = v.payload_len == 0 && !v.syn_fin;
        match conn.last_ack {
            Some(last) if ack < last => false, // stale: let TCP see it
            Some(last) if ack == last => {
                if !pure {
                    return false;
                }
                match conn.dup_state {
                    Some((a, remaining)) if a == ack => {
                        if remaining == 0 {
                            return false; // more than the successors explain: forward
                        }
                        conn.dup_state = Some((a, remaining - 1));
                        true
                    }
                    _ => {
                        let Some(seg) = conn.cache.get_mut(&ack) else {
                            return false;
                        };
                        if seg.sender_retransmitted {
                            return false;
                        }
                        // First duplicate: the segment at `ack` was lost on the wireless hop;
                        // each cached successor will cause one more duplicate.
                        seg.local_retransmissions += 1;
                        seg.sent_at = now;
                        self.urgent.extend(seg.sdus.iter().cloned());
                        self.raw.stats_mut().retransmissions += 1;
                        let successors = (conn.cache.len() as u32).saturating_sub(1);
                        conn.dup_state = Some((ack, successors));
                        conn.progress_at = now;
                        true
                    }
                }
            }
            _ => {
                // A new ACK: free what it covers, take an RTT sample, forward it.
                let mut sample = None;
                while let Some(entry) = conn.cache.first_entry() {
                    if entry.get().end > ack {
                        break;
                    }
                    let c = entry.remove();
                    if c.local_retransmissions == 0 && !c.sender_retransmitted {
                        sample = Some(now.saturating_since(c.sent_at));
                    }
                }
                if let Some(s) = sample {
                    // Smoothing as RFC 6298 (2.3), gain 1/8.
                    let srtt = conn.srtt.map_or(s, |r| {
                        Duration::from_nanos((r.as_nanos().saturating_mul(7) + s.as_nanos()) / 8)
                    });
                    conn.srtt = Some(srtt);
                }
                conn.last_ack = Some(ack);
                conn.reference = conn.reference.max(ack);
                conn.dup_state = None;
                conn.progress_at = now;
                false
            }
        }
    }
}

impl Service for Snoop {
    fn queued_bytes(&self) -> usize {
        self.raw.queued_bytes() + self.urgent.iter().map(|s| s.data.len()).sum::<usize>()
    }

    fn name(&self) -> &'static str {
        "snoop"
    }

    fn handle_sdu(&mut self, now: Instant, sdu: Sdu) -> Result<(), Sdu> {
        if self.config.role == SnoopRole::BaseStation {
            self.cache_outgoing(now, &sdu);
        }
        self.raw.handle_sdu(now, sdu)
    }

    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        self.raw.handle_frame(now, frame);
        while let Some(d) = self.raw.poll_deliver() {
            let withhold = self.config.role == SnoopRole::BaseStation
                && d.fp == FragPos::Whole
                && self.snoop_ack(now, &d.data);
            if withhold {
                self.raw.stats_mut().suppressed += 1;
            } else {
                self.released.push_back(d);
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let floor = Duration::from_secs_f64(self.config.local_rto_min_ms / 1e3);
        let config = &self.config;
        for conn in self.conns.values_mut() {
            let rto = conn.srtt.map_or(floor, |s| s.saturating_mul(2).max(floor));
            if now < conn.progress_at + rto {
                continue;
            }
            let Some((_, seg)) = conn.cache.iter_mut().next() else {
                continue;
            };
            if !guards(config, seg) {
                continue;
            }
            // No ACK progress for a local RTO: the segment or its ACK was lost.
            seg.local_retransmissions += 1;
            seg.sent_at = now;
            self.urgent.extend(seg.sdus.iter().cloned());
            self.raw.stats_mut().retransmissions += 1;
            conn.progress_at = now;
            conn.dup_state = None;
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if let Some(sdu) = self.urgent.pop_front() {
            self.raw.emit(&sdu, buf);
            let n = sdu.data.len() as u64;
            self.raw.stats_mut().overhead_bytes += n;
            return true;
        }
        self.raw.poll_transmit(now, buf)
    }

    fn poll_deliver(&mut self) -> Option<Delivery> {
        self.released.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.conns
            .values()
            .filter_map(|c| {
                let (_, oldest) = c.cache.iter().next()?;
                guards(&self.config, oldest).then(|| c.progress_at + self.local_rto(c))
            })
            .min()
    }

    fn has_transmit(&self, now: Instant) -> bool {
        !self.urgent.is_empty() || self.raw.has_transmit(now)
    }

    fn stats(&self) -> &ServiceStats {
        self.raw.stats()
    }

    fn data_overhead(&self) -> usize {
        self.raw.data_overhead()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::SeqWidth;
    use etherparse::PacketBuilder;

    const FH: [u8; 4] = [10, 0, 0, 1];
    const MH: [u8; 4] = [10, 0, 0, 3];

    /// A data segment from the fixed host toward the mobile.
    fn data(seq: u32, len: usize) -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ipv4(FH, MH, 64)
            .tcp(5000, 80, seq, 65535)
            .write(&mut out, &vec![0xab; len])
            .unwrap();
        out
    }

    /// A pure ACK from the mobile.
    fn ack(n: u32) -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ipv4(MH, FH, 64)
            .tcp(80, 5000, 1, 65535)
            .ack(n)
            .write(&mut out, &[])
            .unwrap();
        out
    }

    fn base() -> Snoop {
        Snoop::new(SnoopConfig::default(), HeaderFormat::new(SeqWidth::W8))
    }

    /// A base station whose local timer also guards first transmissions.
    fn timer_on_all() -> Snoop {
        let config = SnoopConfig {
            local_timer: SnoopTimer::AllSegments,
            ..SnoopConfig::default()
        };
        Snoop::new(config, HeaderFormat::new(SeqWidth::W8))
    }

    fn drain(s: &mut Snoop, now: Instant) -> Vec<Vec<u8>> {
        let mut frames = Vec::new();
        let mut buf = Vec::new();
        while s.poll_transmit(now, &mut buf) {
            frames.push(std::mem::take(&mut buf));
        }
        frames
    }

    #[test]
    fn reads_tcp_fields_and_ignores_other_packets() {
        let v = tcp_view(&data(1000, 100)).unwrap();
        assert_eq!((v.seq, v.payload_len, v.key.sport), (1000, 100, 5000));
        assert_eq!(tcp_view(&ack(7)).unwrap().ack, Some(7));
        let mut udp = Vec::new();
        PacketBuilder::ipv4(FH, MH, 64)
            .udp(1, 2)
            .write(&mut udp, &[0; 8])
            .unwrap();
        assert!(tcp_view(&udp).is_none());
        assert!(tcp_view(&[0x45, 0, 0]).is_none());
    }

    #[test]
    fn first_duplicate_ack_retransmits_locally_and_successors_duplicates_are_suppressed() {
        let mut s = base();
        let t = Instant::from_millis(1);
        for i in 0..4u32 {
            s.handle_sdu(t, Sdu::whole(data(1000 + 100 * i, 100)))
                .unwrap();
        }
        assert_eq!(drain(&mut s, t).len(), 4);
        // Segment 1000 arrives, 1100 is lost, 1200 and 1300 cause two duplicates.
        s.handle_frame(t, &ack(1100));
        assert_eq!(s.poll_deliver().unwrap().data, ack(1100), "new ACKs go up");
        s.handle_frame(t, &ack(1100));
        assert!(s.poll_deliver().is_none(), "first duplicate suppressed");
        let resent = drain(&mut s, t);
        assert_eq!(
            resent,
            vec![data(1100, 100)],
            "the lost segment goes out first"
        );
        s.handle_frame(t, &ack(1100));
        assert!(
            s.poll_deliver().is_none(),
            "the successors' duplicate is suppressed"
        );
        // Cached successors were 1200 and 1300: two duplicates expected after the first,
        // and a third one is more than they explain, so the sender hears it.
        s.handle_frame(t, &ack(1100));
        assert!(s.poll_deliver().is_none());
        s.handle_frame(t, &ack(1100));
        assert_eq!(s.poll_deliver().unwrap().data, ack(1100));
        assert_eq!(s.stats().suppressed, 3);
        assert_eq!(s.stats().retransmissions, 1);
        // The cumulative ACK after the repair frees everything.
        s.handle_frame(t, &ack(1400));
        assert_eq!(s.poll_deliver().unwrap().data, ack(1400));
        assert!(s.conns.values().all(|c| c.cache.is_empty()));
        assert_eq!(s.poll_timeout(), None, "nothing cached, no timer");
    }

    #[test]
    fn sender_retransmissions_leave_recovery_to_tcp() {
        let mut s = base();
        let t = Instant::ZERO;
        s.handle_sdu(t, Sdu::whole(data(0, 100))).unwrap();
        s.handle_sdu(t, Sdu::whole(data(100, 100))).unwrap();
        s.handle_frame(t, &ack(0));
        s.poll_deliver();
        s.handle_sdu(t, Sdu::whole(data(0, 100))).unwrap(); // the sender's own retransmission
        drain(&mut s, t);
        s.handle_frame(t, &ack(0));
        assert_eq!(
            s.poll_deliver().unwrap().data,
            ack(0),
            "duplicate goes to the sender"
        );
        assert_eq!(s.stats().suppressed, 0);
    }

    #[test]
    fn local_timer_retransmits_the_oldest_segment_then_gives_up() {
        let mut s = timer_on_all();
        let t0 = Instant::ZERO;
        s.handle_sdu(t0, Sdu::whole(data(0, 100))).unwrap();
        drain(&mut s, t0);
        let due = s.poll_timeout().expect("a cached segment arms the timer");
        assert_eq!(due, t0 + Duration::from_millis(20));
        s.handle_timeout(Instant::from_nanos(due.as_nanos() - 1));
        assert!(drain(&mut s, due).is_empty(), "not yet due");
        let mut now = due;
        for _ in 0..4 {
            s.handle_timeout(now);
            assert_eq!(drain(&mut s, now), vec![data(0, 100)]);
            now = s.poll_timeout().unwrap_or(now);
        }
        assert_eq!(s.poll_timeout(), None, "max_local_retransmissions reached");
        assert_eq!(s.stats().retransmissions, 4);
    }

    #[test]
    fn a_segment_sent_below_the_cache_restarts_the_local_timer() {
        // Regression (two-HSCSD multi-service run): the oldest cached segment exhausted its
        // local retransmissions, then the TCP sender sent a segment below it that Snoop had
        // not cached. That segment became the oldest with the old segment's stale progress
        // time, so poll_timeout() lay in the past.
        let mut s = timer_on_all();
        let t0 = Instant::ZERO;
        s.handle_sdu(t0, Sdu::whole(data(100, 100))).unwrap();
        drain(&mut s, t0);
        s.handle_frame(t0, &ack(0)); // the receiver still waits for 0..100
        s.poll_deliver();
        let mut now = t0;
        while let Some(due) = s.poll_timeout() {
            now = due;
            s.handle_timeout(now);
            drain(&mut s, now);
        }
        assert_eq!(s.stats().retransmissions, 4, "segment 100 gave up");
        let later = now + Duration::from_secs(3);
        s.handle_sdu(later, Sdu::whole(data(0, 100))).unwrap();
        assert_eq!(drain(&mut s, later), vec![data(0, 100)]);
        let floor = Duration::from_secs_f64(SnoopConfig::default().local_rto_min_ms / 1e3);
        assert_eq!(
            s.poll_timeout(),
            Some(later + floor),
            "the timer runs from the new oldest segment's send"
        );
        s.handle_timeout(later);
        assert!(drain(&mut s, later).is_empty(), "no immediate resend");
    }

    #[test]
    fn by_default_a_loss_without_duplicate_acks_is_left_to_tcp() {
        // 004: Snoop's local recovery starts on a duplicate ACK. A lone segment whose loss
        // brings none (the tail of a short transfer) is cached but not guarded by the timer.
        let mut s = base();
        let t0 = Instant::ZERO;
        s.handle_sdu(t0, Sdu::whole(data(0, 100))).unwrap();
        assert_eq!(drain(&mut s, t0), vec![data(0, 100)]);
        assert_eq!(s.poll_timeout(), None, "no timer for a first transmission");
        s.handle_timeout(t0 + Duration::from_secs(10));
        assert!(drain(&mut s, t0 + Duration::from_secs(10)).is_empty());
        assert_eq!(s.stats().retransmissions, 0);
        // The same segment under `all_segments` is resent by the timer.
        let mut a = timer_on_all();
        a.handle_sdu(t0, Sdu::whole(data(0, 100))).unwrap();
        drain(&mut a, t0);
        let due = a.poll_timeout().expect("armed for a first transmission");
        a.handle_timeout(due);
        assert_eq!(drain(&mut a, due), vec![data(0, 100)]);
    }

    #[test]
    fn by_default_the_timer_guards_a_local_retransmission() {
        // A duplicate ACK starts local recovery; if that retransmission is lost too, the
        // timer resends it (up to max_local_retransmissions) instead of leaving TCP to time out.
        let mut s = base();
        let t0 = Instant::ZERO;
        for seq in [0, 100, 200] {
            s.handle_sdu(t0, Sdu::whole(data(seq, 100))).unwrap();
        }
        drain(&mut s, t0);
        assert_eq!(s.poll_timeout(), None);
        let t1 = t0 + Duration::from_millis(5);
        s.handle_frame(t1, &ack(0));
        assert_eq!(s.poll_deliver().unwrap().data, ack(0), "first ACK is new");
        s.handle_frame(t1, &ack(0));
        assert!(s.poll_deliver().is_none(), "first duplicate withheld");
        assert_eq!(
            drain(&mut s, t1),
            vec![data(0, 100)],
            "local retransmission"
        );
        let due = s
            .poll_timeout()
            .expect("the local retransmission is guarded");
        assert!(due > t1);
        s.handle_timeout(due);
        assert_eq!(
            drain(&mut s, due),
            vec![data(0, 100)],
            "resent by the timer"
        );
        assert_eq!(s.stats().retransmissions, 2);
        // Progress frees it and disarms the timer again.
        s.handle_frame(due, &ack(300));
        assert_eq!(s.poll_deliver().unwrap().data, ack(300));
        assert_eq!(s.poll_timeout(), None);
    }

    #[test]
    fn snoop_timer_keys_parse() {
        for (text, want) in [
            ("local_retransmissions", SnoopTimer::LocalRetransmissions),
            ("all_segments", SnoopTimer::AllSegments),
        ] {
            let c: SnoopConfig = toml::from_str(&format!("local_timer = \"{text}\"")).unwrap();
            assert_eq!(c.local_timer, want);
        }
        assert!(toml::from_str::<SnoopConfig>("local_timer = \"sometimes\"").is_err());
    }

    #[test]
    fn mobile_end_is_raw_and_never_caches() {
        let mut s = Snoop::new(
            SnoopConfig {
                role: SnoopRole::Mobile,
                ..SnoopConfig::default()
            },
            HeaderFormat::new(SeqWidth::W8),
        );
        let t = Instant::ZERO;
        s.handle_sdu(t, Sdu::whole(data(0, 100))).unwrap();
        assert_eq!(drain(&mut s, t), vec![data(0, 100)], "no header at all");
        s.handle_frame(t, &ack(0));
        s.handle_frame(t, &ack(0));
        assert_eq!(s.poll_deliver().unwrap().data, ack(0));
        assert_eq!(s.poll_deliver().unwrap().data, ack(0));
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.data_overhead(), 0);
    }

    #[test]
    fn fragments_of_a_segment_are_cached_and_resent_together() {
        let f = HeaderFormat {
            width: SeqWidth::W8,
            segmented: true,
            piggyback_ack: false,
        };
        let mut s = Snoop::new(SnoopConfig::default(), f);
        let t = Instant::ZERO;
        let p = data(500, 150);
        let parts = [
            (FragPos::First, &p[..80]),
            (FragPos::Middle, &p[80..160]),
            (FragPos::Last, &p[160..]),
        ];
        for (fp, d) in parts {
            s.handle_sdu(
                t,
                Sdu {
                    fp,
                    data: d.to_vec(),
                },
            )
            .unwrap();
        }
        s.handle_sdu(t, Sdu::whole(data(650, 10))).unwrap();
        assert_eq!(drain(&mut s, t).len(), 4);
        s.handle_frame(t, &frame_of(&mut raw_peer(f), &ack(500)));
        s.handle_frame(t, &frame_of(&mut raw_peer(f), &ack(500)));
        let resent = drain(&mut s, t);
        assert_eq!(resent.len(), 3, "all three fragments again");
        assert!(resent[0].ends_with(&p[..80]));
        assert!(resent[2].ends_with(&p[160..]));
    }

    fn raw_peer(f: HeaderFormat) -> Raw {
        Raw::new(RawConfig::default(), f)
    }

    fn frame_of(r: &mut Raw, packet: &[u8]) -> Vec<u8> {
        r.handle_sdu(Instant::ZERO, Sdu::whole(packet.to_vec()))
            .unwrap();
        let mut buf = Vec::new();
        r.poll_transmit(Instant::ZERO, &mut buf);
        buf
    }

    #[test]
    fn sequence_numbers_wrap_around() {
        let mut s = base();
        let t = Instant::ZERO;
        let start = u32::MAX - 150;
        for i in 0..3u32 {
            s.handle_sdu(t, Sdu::whole(data(start.wrapping_add(100 * i), 100)))
                .unwrap();
        }
        drain(&mut s, t);
        let lost = start.wrapping_add(100);
        s.handle_frame(t, &ack(lost));
        s.poll_deliver();
        s.handle_frame(t, &ack(lost));
        assert_eq!(drain(&mut s, t), vec![data(lost, 100)]);
        s.handle_frame(t, &ack(start.wrapping_add(300)));
        assert!(s.conns.values().all(|c| c.cache.is_empty()));
    }

    #[test]
    fn at_mobile_end_switches_snoop_only() {
        let cfg: crate::config::LinkConfig = toml::from_str(
            "[[service]]\nname = \"tcp\"\nscheme = \"snoop\"\n[[service]]\nname = \"u\"\nscheme = \"raw\"\n",
        )
        .unwrap();
        let m = cfg.at_mobile_end();
        match &m.services[0].config {
            crate::service::ServiceConfig::Snoop(c) => assert_eq!(c.role, SnoopRole::Mobile),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(m.services[1], cfg.services[1]);
    }
}
