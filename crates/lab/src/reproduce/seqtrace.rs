//! TCP sequence-number traces (003 Figs. 2, 4 and 7: "TCPDUMP traces" of the sender) and the
//! numbers a claim can judge on them.
//!
//! Contract. A [`SeqTrace`] is the list of data segments (TCP payload > 0) one flow's sender put
//! on its first hop, in capture order: time, sequence number in bytes from the flow's first
//! data byte (32-bit sequence numbers unwrapped), length, and whether the segment was a
//! retransmission (it carries no byte beyond the highest already sent). The trace is built
//! from the IPv4/TCP packets the simulator hands to its capture hook, the very packets
//! `mslink sim --pcap` writes to `pcap/p<point>_r<rep>_seg<i>_<dir>.pcap` ([`Capture`] picks
//! one flow's data direction on its sender's hop; the headers are read with the simulator's
//! own `tcp::segment::parse`). Everything here is a pure function of the packets, so the
//! numbers are the same at any `--jobs`. [`SeqTrace::metric`] gives the metrics of
//! [`METRICS`]; a stall is a stretch of at least [`STALL_S`] without a segment carrying new
//! data.

use std::collections::BTreeMap;

use mslink_sim::tcp::segment;

/// Shortest stretch without new data that counts as a stall, seconds: half the 1 s minimum
/// retransmission timeout of 003's BSD TCP (and of the scenarios' TCP), and more than twice
/// the longest gap between new segments of an error-free or locally-recovered transfer here
/// (0.22 s: the first segment waits for a delayed ACK; an 8 KB window of 1500-byte frames at
/// 0.8 Mbit/s is 0.11 s).
pub const STALL_S: f64 = 0.5;

/// The metrics a sequence trace gives, with what each means (docs/reproduce.md).
pub const METRICS: [(&str, &str); 7] = [
    ("data_segments", "data segments sent, retransmissions included"),
    (
        "retransmitted_segments",
        "data segments carrying no byte beyond the highest already sent",
    ),
    (
        "retransmitted_share",
        "retransmitted_segments / data_segments (003 §3.2.3's overlap)",
    ),
    (
        "longest_stall_s",
        "longest time between two segments that carry new data, s",
    ),
    ("stalls", "stretches of at least STALL_S without new data"),
    (
        "stalled_share",
        "time in those stretches / time from the first to the last new segment",
    ),
    (
        "probe_segments",
        "retransmissions sent after at least STALL_S without any data segment (timer-driven: 003 Fig. 7's probes)",
    ),
];

/// Whether `m` is a sequence-trace metric.
pub fn is_metric(m: &str) -> bool {
    METRICS.iter().any(|(k, _)| *k == m)
}

/// One data segment of a trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeqPacket {
    /// Capture time, seconds from the start of the run.
    pub t_s: f64,
    /// First byte, counted from the flow's first data byte.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// True when it carries no byte beyond the highest sent before.
    pub retransmit: bool,
}

/// A flow's data segments in capture order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeqTrace {
    /// The segments.
    pub packets: Vec<SeqPacket>,
    /// Sequence number of the first data byte seen.
    base: Option<u32>,
    /// One past the highest byte sent so far (relative).
    high: u64,
}

impl SeqTrace {
    /// Adds a data segment: its capture time, 32-bit sequence number and payload length
    /// (segments without payload are not data and are ignored).
    pub fn push(&mut self, t_s: f64, seq: u32, len: u32) {
        if len == 0 {
            return;
        }
        let base = *self.base.get_or_insert(seq);
        let rel = u64::from(seq.wrapping_sub(base));
        // Unwrap: the 2^32 period nearest the highest byte sent (a sender never has 2 GB
        // outstanding).
        let era = self.high >> 32;
        let seq = [era.checked_sub(1), Some(era), Some(era + 1)]
            .into_iter()
            .flatten()
            .map(|e| (e << 32) | rel)
            .min_by_key(|s| s.abs_diff(self.high))
            .unwrap_or(rel);
        let end = seq + u64::from(len);
        let retransmit = end <= self.high;
        self.high = self.high.max(end);
        self.packets.push(SeqPacket {
            t_s,
            seq,
            len,
            retransmit,
        });
    }

    /// Gaps between consecutive segments carrying new data, seconds, and the span from the
    /// first to the last of them.
    fn new_data_gaps(&self) -> (Vec<f64>, f64) {
        let times: Vec<f64> = self
            .packets
            .iter()
            .filter(|p| !p.retransmit)
            .map(|p| p.t_s)
            .collect();
        let gaps = times.windows(2).map(|w| w[1] - w[0]).collect();
        let span = match (times.first(), times.last()) {
            (Some(a), Some(b)) => b - a,
            _ => 0.0,
        };
        (gaps, span)
    }

    /// Metric `name` of [`METRICS`] (None for any other name).
    pub fn metric(&self, name: &str) -> Option<f64> {
        let n = self.packets.len();
        let retx = self.packets.iter().filter(|p| p.retransmit).count();
        let (gaps, span) = self.new_data_gaps();
        let stalls: Vec<f64> = gaps.iter().copied().filter(|g| *g >= STALL_S).collect();
        Some(match name {
            "data_segments" => n as f64,
            "retransmitted_segments" => retx as f64,
            "retransmitted_share" => {
                if n == 0 {
                    0.0
                } else {
                    retx as f64 / n as f64
                }
            }
            "longest_stall_s" => gaps.iter().copied().fold(0.0, f64::max),
            "stalls" => stalls.len() as f64,
            "stalled_share" => {
                if span > 0.0 {
                    stalls.iter().sum::<f64>() / span
                } else {
                    0.0
                }
            }
            "probe_segments" => self
                .packets
                .windows(2)
                .filter(|w| w[1].retransmit && w[1].t_s - w[0].t_s >= STALL_S)
                .count() as f64,
            _ => return None,
        })
    }
}

/// Collects the traces of chosen flows from captured packets: for each flow, the packets that
/// enter its sender's hop in its data direction and come from its source endpoint.
#[derive(Debug, Default)]
pub struct Capture {
    /// (segment, direction) -> [(flow index, flow name)] whose sender's hop it is.
    hops: BTreeMap<(usize, usize), Vec<(usize, String)>>,
    /// The traces, by flow name.
    pub traces: BTreeMap<String, SeqTrace>,
}

impl Capture {
    /// Captures every TCP flow of the scenario that goes from one node to another.
    pub fn new(sc: &mslink_sim::Scenario) -> Capture {
        let mut c = Capture::default();
        for (i, (name, f)) in sc.expanded_flows().into_iter().enumerate() {
            let hop = if f.to > f.from {
                (f.from, 0)
            } else if f.from > f.to {
                (f.from - 1, 1)
            } else {
                continue;
            };
            c.hops.entry(hop).or_default().push((i, name.clone()));
            c.traces.insert(name, SeqTrace::default());
        }
        c
    }

    /// A packet entering segment `seg` in direction `dir` (0: left to right) at `t_s`.
    pub fn packet(&mut self, seg: usize, dir: usize, t_s: f64, p: &[u8]) {
        let Some(flows) = self.hops.get(&(seg, dir)) else {
            return;
        };
        let Ok(w) = segment::parse(p) else {
            return;
        };
        if w.len == 0 {
            return;
        }
        let src = [p[12], p[13], p[14], p[15]];
        let Some(flow) = mslink_sim::packet::flow_at(src, w.sport) else {
            return;
        };
        if let Some((_, name)) = flows.iter().find(|(i, _)| *i == flow) {
            if let Some(t) = self.traces.get_mut(name) {
                t.push(t_s, w.seq, w.len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mslink_sim::tcp::segment::{emit, Endpoints, Segment, ACK};

    /// An IPv4/TCP data segment of flow 0 (node 0 to node 1) as the simulator writes it.
    fn data(seq: u32, len: u32) -> Vec<u8> {
        let e = Endpoints {
            src: mslink_sim::packet::address(0, 0),
            dst: mslink_sim::packet::address(1, 0),
            sport: mslink_sim::packet::source_port(0),
            dport: 20,
            dscp: 0,
            shift: 0,
        };
        let s = Segment {
            seq: u64::from(seq),
            len,
            flags: ACK,
            ..Segment::default()
        };
        let mut out = Vec::new();
        emit(&s, &e, &mut out);
        out
    }

    /// A classic raw-IPv4 pcap of `(time, packet)` as `mslink sim --pcap` writes it.
    fn pcap(packets: &[(f64, Vec<u8>)]) -> Vec<u8> {
        let header = pcap_file::pcap::PcapHeader {
            datalink: pcap_file::DataLink::RAW,
            ..Default::default()
        };
        let mut w = pcap_file::pcap::PcapWriter::with_header(Vec::new(), header).unwrap();
        for (t, p) in packets {
            let ts = std::time::Duration::from_secs_f64(*t);
            w.write_packet(&pcap_file::pcap::PcapPacket::new(ts, p.len() as u32, p))
                .unwrap();
        }
        w.into_writer()
    }

    /// Reads a pcap of segment 0, left to right, into a capture of a one-flow scenario.
    fn read(bytes: &[u8]) -> SeqTrace {
        let sc = mslink_sim::Scenario::parse(
            "[sim]\nname = \"t\"\nduration_s = 1\n[[segment]]\nkind = \"wired\"\nrate_bps = 1e6\n\
             [[flow]]\nname = \"ftp\"\napp = \"ftp\"\nfrom = 0\nto = 1\n",
        )
        .unwrap();
        let mut c = Capture::new(&sc);
        let mut r = pcap_file::pcap::PcapReader::new(bytes).unwrap();
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            c.packet(0, 0, p.timestamp.as_secs_f64(), &p.data);
            // The other direction and other segments are not the flow's sender hop.
            c.packet(0, 1, p.timestamp.as_secs_f64(), &p.data);
            c.packet(1, 0, p.timestamp.as_secs_f64(), &p.data);
        }
        c.traces.remove("ftp").unwrap()
    }

    #[test]
    fn a_timeout_is_a_stall_with_a_probe() {
        // Segments 0..4 go out 0.1 s apart; 4 is lost, the timer fires 1.2 s after it and
        // resends it (a probe), then 5 and 6 follow; 3 is resent once more (redundant).
        let mss = 1000;
        let isn = 4_000_000_000u32; // wraps past 2^32 within the transfer
        let mut pk = Vec::new();
        for i in 0..5u32 {
            pk.push((0.1 * f64::from(i), data(isn.wrapping_add(i * mss), mss)));
        }
        pk.push((1.6, data(isn.wrapping_add(4 * mss), mss)));
        pk.push((1.7, data(isn.wrapping_add(5 * mss), mss)));
        pk.push((1.75, data(isn.wrapping_add(3 * mss), mss)));
        pk.push((1.8, data(isn.wrapping_add(6 * mss), mss)));
        let t = read(&pcap(&pk));
        assert_eq!(t.packets.len(), 9);
        assert_eq!(
            t.packets.iter().map(|p| p.seq).collect::<Vec<_>>(),
            [0, 1000, 2000, 3000, 4000, 4000, 5000, 3000, 6000]
        );
        let m = |k: &str| t.metric(k).unwrap();
        assert_eq!(m("data_segments"), 9.0);
        assert_eq!(m("retransmitted_segments"), 2.0);
        assert!((m("retransmitted_share") - 2.0 / 9.0).abs() < 1e-12);
        // New data at 0, .1, .2, .3, .4, then 1.7 (5) and 1.8 (6): the stall is 1.3 s.
        assert!(
            (m("longest_stall_s") - 1.3).abs() < 1e-6,
            "{}",
            m("longest_stall_s")
        );
        assert_eq!(m("stalls"), 1.0);
        assert!((m("stalled_share") - 1.3 / 1.8).abs() < 1e-6);
        // The resend of 4 after 1.2 s of silence is a probe; that of 3 is not.
        assert_eq!(m("probe_segments"), 1.0);
        assert_eq!(t.metric("throughput_bps"), None);
    }
}
