//! FQ-CoDel (RFC 8290): packets hashed into flow queues by their 5-tuple (`flow_hash`, read
//! through `mslink-wire`), served by deficit round robin with new flows first (§4.1-4.2), each
//! queue under its own CoDel.

use super::*;

/// Which list of FQ-CoDel a flow queue is on (RFC 8290 §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum List {
    None,
    New,
    Old,
}

#[derive(Clone, Debug)]
pub(super) struct Flow<T> {
    pub(super) q: Fifo<T>,
    pub(super) codel: Codel,
    pub(super) deficit: i64,
    pub(super) list: List,
}

/// FQ-CoDel's state (RFC 8290 §4).
#[derive(Clone, Debug)]
pub(super) struct FqCodel<T> {
    pub(super) flows: Vec<Flow<T>>,
    pub(super) new_flows: VecDeque<usize>,
    pub(super) old_flows: VecDeque<usize>,
    pub(super) quantum: i64,
    pub(super) perturbation: u64,
}

/// The flow a packet belongs to, as a 64-bit hash keyed by `perturbation` (RFC 8290 §4.1.1:
/// the 5-tuple with a random perturbation, so flows cannot aim at one queue). IPv4 and IPv6
/// (extension headers walked by `mslink_wire::ip`); TCP and UDP ports when present (not in
/// later fragments); anything unparsable hashes its first 40 bytes.
pub fn flow_hash(packet: &[u8], perturbation: u64) -> u64 {
    // FNV-1a seeded with the perturbation, then a SplitMix64 finaliser: fixed and documented,
    // so placements never change with the toolchain.
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ perturbation;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h = (h ^ *b as u64).wrapping_mul(0x100_0000_01b3);
        }
    };
    match mslink_wire::ip::IpPacket::parse_lax(packet) {
        Ok(ip) => {
            eat(&[ip.version, ip.protocol]);
            eat(ip.src);
            eat(ip.dst);
            let ports = matches!(ip.protocol, 6 | 17) && ip.is_first_fragment();
            if ports && ip.payload.len() >= 4 {
                eat(&ip.payload[..4]);
            }
        }
        Err(_) => eat(&packet[..packet.len().min(40)]),
    }
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<T> FqCodel<T> {
    /// RFC 8290 §4.2: deficit round robin over the new flows first, then the old ones; each
    /// flow's packet comes through its own CoDel.
    pub(super) fn dequeue(
        &mut self,
        now: Instant,
        p: CodelParams,
        stats: &mut QueueStats,
        dropped: &mut Dropped,
    ) -> Option<Entry<T>> {
        loop {
            let (idx, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i, true),
                (None, Some(&i)) => (i, false),
                (None, None) => return None,
            };
            let f = &mut self.flows[idx];
            if f.deficit <= 0 {
                // Out of credit: a new quantum, and to the back of the old flows.
                f.deficit += self.quantum;
                f.list = List::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(idx);
                continue;
            }
            match f.codel.dequeue(now, &mut f.q, p, stats, dropped) {
                Some(e) => {
                    f.deficit -= e.len as i64;
                    return Some(e);
                }
                None => {
                    // Empty: a new flow goes to the old list (so it cannot come back as new
                    // at once and starve the others); an old one leaves the lists.
                    if from_new {
                        self.new_flows.pop_front();
                        f.list = List::Old;
                        self.old_flows.push_back(idx);
                    } else {
                        self.old_flows.pop_front();
                        f.list = List::None;
                    }
                }
            }
        }
    }
}
