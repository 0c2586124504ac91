//! Link-level segmentation and reassembly (docs/architecture.md, "Frames": an IP packet may span several
//! link frames; 004's HSCSD link uses 100-byte frames).
//!
//! Contract. [`segment`] cuts a packet into SDUs of at most `max` bytes marked with their
//! fragment position. A [`Reassembler`] takes a service's deliveries `(seq, position, bytes)`
//! in any order and releases a packet only when a run of consecutive sequence numbers goes
//! from a `First` to a `Last` with only `Middle`s between (or a single `Whole`), so it never
//! joins fragments of different packets and never releases a packet twice. Fragments that can
//! no longer complete (older than the horizon, or a packet larger than the limit) are dropped
//! and counted. Memory is bounded by the horizon.

use std::collections::BTreeMap;

use crate::service::{Delivery, Sdu};
use crate::wire::FragPos;

/// Cuts `packet` into SDUs of at most `max` bytes (`max` >= 1). An empty packet is one empty
/// `Whole` SDU.
pub fn segment(packet: &[u8], max: usize) -> impl Iterator<Item = Sdu> + '_ {
    let max = max.max(1);
    let n = packet.len().div_ceil(max).max(1);
    (0..n).map(move |i| {
        let fp = match (i, n) {
            (_, 1) => FragPos::Whole,
            (0, _) => FragPos::First,
            (i, n) if i + 1 == n => FragPos::Last,
            _ => FragPos::Middle,
        };
        let end = ((i + 1) * max).min(packet.len());
        Sdu {
            fp,
            data: packet[i * max..end].to_vec(),
        }
    })
}

/// Counters of a reassembler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReassemblyStats {
    /// Packets released.
    pub packets: u64,
    /// Fragments dropped because their packet can no longer complete.
    pub fragments_dropped: u64,
    /// Fragments refused as repeats of a sequence number already held.
    pub duplicates: u64,
}

/// Rebuilds packets from fragments delivered in any order.
#[derive(Debug)]
pub struct Reassembler {
    horizon: u64,
    max_packet: usize,
    held: BTreeMap<u64, (FragPos, Vec<u8>)>,
    newest: u64,
    stats: ReassemblyStats,
}

impl Reassembler {
    /// Keeps fragments up to `horizon` sequence numbers behind the newest one, and refuses
    /// packets longer than `max_packet` bytes.
    pub fn new(horizon: u64, max_packet: usize) -> Self {
        Reassembler {
            horizon: horizon.max(1),
            max_packet,
            held: BTreeMap::new(),
            newest: 0,
            stats: Default::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> &ReassemblyStats {
        &self.stats
    }

    /// Fragments currently held.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Takes one delivery; returns the packet it completes, if any.
    pub fn push(&mut self, d: Delivery) -> Option<Vec<u8>> {
        if d.fp == FragPos::Whole {
            self.stats.packets += 1;
            self.advance(d.seq);
            return Some(d.data);
        }
        if self.held.contains_key(&d.seq) {
            self.stats.duplicates += 1;
            return None;
        }
        let seq = d.seq;
        self.held.insert(seq, (d.fp, d.data));
        let packet = self.complete_around(seq);
        self.advance(seq);
        packet
    }

    fn advance(&mut self, seq: u64) {
        self.newest = self.newest.max(seq);
        let floor = self.newest.saturating_sub(self.horizon);
        while let Some((&s, _)) = self.held.first_key_value() {
            if s >= floor {
                break;
            }
            self.held.remove(&s);
            self.stats.fragments_dropped += 1;
        }
    }

    /// If `seq` now closes a First..Last run, removes and joins it.
    fn complete_around(&mut self, seq: u64) -> Option<Vec<u8>> {
        // Walk back to the First: only Middles (or `seq` itself as Last) may lie between.
        let mut first = seq;
        loop {
            match self.held.get(&first)?.0 {
                FragPos::First => break,
                FragPos::Middle => {}
                FragPos::Last if first == seq => {}
                _ => return None,
            }
            first = first.checked_sub(1)?;
        }
        // Walk forward to the Last: only Middles may lie between.
        let mut last = seq;
        loop {
            match self.held.get(&last)?.0 {
                FragPos::Last => break,
                FragPos::Middle => {}
                FragPos::First if last == first => {}
                _ => return None,
            }
            last += 1;
        }
        let size: usize = (first..=last).map(|s| self.held[&s].1.len()).sum();
        if size > self.max_packet {
            for s in first..=last {
                self.held.remove(&s);
                self.stats.fragments_dropped += 1;
            }
            return None;
        }
        let mut out = Vec::with_capacity(size);
        for s in first..=last {
            let (_, data) = self.held.remove(&s).expect("run checked above");
            out.extend_from_slice(&data);
        }
        self.stats.packets += 1;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::seq::SliceRandom;
    use rand::SeedableRng;

    fn deliveries(packets: &[Vec<u8>], max: usize) -> Vec<Delivery> {
        let mut seq = 0;
        let mut out = Vec::new();
        for p in packets {
            for s in segment(p, max) {
                out.push(Delivery {
                    seq,
                    fp: s.fp,
                    data: s.data,
                });
                seq += 1;
            }
        }
        out
    }

    #[test]
    fn segment_positions() {
        let fps: Vec<FragPos> = segment(&[0u8; 250], 100).map(|s| s.fp).collect();
        assert_eq!(fps, vec![FragPos::First, FragPos::Middle, FragPos::Last]);
        let fps: Vec<FragPos> = segment(&[0u8; 100], 100).map(|s| s.fp).collect();
        assert_eq!(fps, vec![FragPos::Whole]);
        assert_eq!(segment(&[], 100).count(), 1);
    }

    #[test]
    fn a_missing_middle_drops_only_its_packet() {
        let packets = vec![vec![1u8; 250], vec![2u8; 250], vec![3u8; 50]];
        let mut r = Reassembler::new(64, 10_000);
        let out: Vec<Vec<u8>> = deliveries(&packets, 100)
            .into_iter()
            .filter(|d| d.seq != 1)
            .filter_map(|d| r.push(d))
            .collect();
        assert_eq!(out, vec![packets[1].clone(), packets[2].clone()]);
        // The orphaned fragments of packet 0 leave once they fall behind the horizon.
        for s in 100..200 {
            r.push(Delivery {
                seq: s,
                fp: FragPos::Whole,
                data: vec![],
            });
        }
        assert_eq!(r.held(), 0);
        assert_eq!(r.stats().fragments_dropped, 2);
    }

    #[test]
    fn oversized_packets_are_refused() {
        let mut r = Reassembler::new(64, 150);
        let out: Vec<_> = deliveries(&[vec![0u8; 250]], 100)
            .into_iter()
            .filter_map(|d| r.push(d))
            .collect();
        assert!(out.is_empty());
        assert_eq!(r.stats().fragments_dropped, 3);
    }

    proptest! {
        /// Any delivery order and any losses: every released packet is one that was sent, none
        /// twice, and with no losses all are released.
        #[test]
        fn out_of_order_reassembly_is_exact(
            sizes in proptest::collection::vec(0usize..400, 1..30),
            max in 1usize..120,
            seed: u64,
            loss in 0u32..30,
        ) {
            let packets: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| {
                let mut p = vec![i as u8; n];
                p.extend_from_slice(&(i as u32).to_be_bytes());
                p
            }).collect();
            let mut ds = deliveries(&packets, max);
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            ds.shuffle(&mut rng);
            let keep = |i: usize| ((i as u64 * 2654435761) ^ seed) % 100 >= loss as u64;
            let mut r = Reassembler::new(1 << 20, 1 << 20);
            let mut out = Vec::new();
            let lossless = loss == 0;
            for (i, d) in ds.into_iter().enumerate() {
                if lossless || keep(i) {
                    out.extend(r.push(d));
                }
            }
            let mut seen = std::collections::HashSet::new();
            for p in &out {
                let id = u32::from_be_bytes(p[p.len() - 4..].try_into().unwrap()) as usize;
                prop_assert_eq!(p, &packets[id]);
                prop_assert!(seen.insert(id));
            }
            if lossless {
                prop_assert_eq!(out.len(), packets.len());
            }
        }
    }
}
