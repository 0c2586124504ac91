//! TCP segments as the state machines see them, and as real IPv4/TCP bytes.
//!
//! Contract. [`Segment`] holds absolute 64-bit sequence numbers (byte offsets from the start
//! of the stream), the advertised window in bytes and up to [`MAX_SACK_BLOCKS`] SACK blocks.
//! [`emit`] writes an IPv4 header (checksum set) and a TCP header (RFC 9293 §3.1; checksum
//! over the pseudo-header set, SACK blocks as RFC 2018 option kind 5) followed by a zero
//! payload of the segment's length; zero bytes add nothing to the Internet checksum, so only
//! the headers are summed. [`parse`] reads any byte string without panicking and returns the
//! wire fields; [`WireSegment::to_segment`] unwraps the 32-bit numbers near a reference the
//! reader knows (its `snd_una` or `rcv_nxt`).
//!
//! Options (all real, so tshark dissects them): SACK blocks (RFC 2018 §3, kind 5),
//! timestamps (RFC 7323 §3, kind 8, as `NOP NOP TS`: 12 bytes on every segment of a
//! connection that uses them), and on a SYN or SYN-ACK the MSS (RFC 9293 §3.2, kind 2), the
//! window scale (RFC 7323 §2, kind 3) and SACK-permitted (RFC 2018 §2, kind 4), laid out as
//! Linux does (`MSS, SACK_PERM|NOP NOP, TS, NOP, WS`). Sequence space: data offsets start at
//! 0 and stay the wire sequence numbers; a SYN occupies the number just before them (the ISS
//! is 2^32 - 1), so a [`Segment`] with the SYN flag has `seq` 0 (its first data byte) and
//! [`emit`] writes `seq - 1`; a FIN occupies the offset one past the last data byte, so the
//! ACK of a FIN is `total + 1`. [`parse`] rejects a malformed option (a bad length, a
//! truncated option, a timestamps or SYN option of the wrong size) with an error.

use std::fmt;

use mslink_wire::checksum::Sum;
use mslink_wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use mslink_wire::tcp::{self, write_option, TcpOption, TcpPacket, TcpRepr};

/// SACK blocks carried per ACK: three, as when timestamps share the option space (RFC 2018
/// §3); the same count Linux and ns-2 send.
pub const MAX_SACK_BLOCKS: usize = 3;

/// TCP option kind of the XCP congestion header (RFC 4727's experimental kind 253).
pub const XCP_KIND: u8 = 253;
/// Length of the XCP option: kind, length, cwnd, rtt, feedback.
pub const XCP_LEN: usize = 14;

/// The XCP congestion header (Katabi et al. 2002 §3.2) as carried in a TCP option: the
/// sender's window (bytes) and RTT (µs), and the feedback (bytes) routers lower and the
/// receiver echoes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XcpField {
    /// The sender's congestion window, bytes.
    pub cwnd: u32,
    /// The sender's RTT estimate, µs (0: none yet).
    pub rtt_us: u32,
    /// Desired window change, bytes.
    pub feedback: i32,
}

/// The ACK flag.
pub const ACK: u8 = 0x10;
/// The PSH flag.
pub const PSH: u8 = 0x08;
/// The SYN flag (RFC 9293 §3.1).
pub const SYN: u8 = 0x02;
/// The FIN flag (RFC 9293 §3.1).
pub const FIN: u8 = 0x01;

/// Bytes the timestamps option takes in every header that carries it (two NOPs and the
/// 10-byte option, RFC 7323 Appendix A's layout).
pub const TS_OPTION_LEN: usize = 12;

/// The options a SYN or SYN-ACK announces (RFC 9293 §3.2, RFC 7323 §2, RFC 2018 §2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynOptions {
    /// Maximum segment size the sender of the SYN can receive.
    pub mss: u16,
    /// Window scale shift (kind 3), if offered.
    pub wscale: Option<u8>,
    /// SACK-permitted (kind 4).
    pub sack_permitted: bool,
}

/// The timestamps option (RFC 7323 §3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timestamps {
    /// TSval: the sender's timestamp clock.
    pub val: u32,
    /// TSecr: the TS.Recent the sender echoes.
    pub ecr: u32,
}

/// One segment with absolute sequence numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// Offset of the first payload byte (for a pure ACK: the sender's next offset, 0 here).
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Cumulative acknowledgement: the next byte expected (ACK segments).
    pub ack: u64,
    /// TCP flags.
    pub flags: u8,
    /// Advertised window, bytes.
    pub window: u64,
    /// SACK blocks `[start, end)`, most recent first (RFC 2018 §4).
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    /// How many of `sack` are used.
    pub sack_len: u8,
    /// The XCP congestion header, on XCP flows.
    pub xcp: Option<XcpField>,
    /// The timestamps option, on connections that use it.
    pub ts: Option<Timestamps>,
    /// The options of a SYN or SYN-ACK (written only when the SYN flag is set).
    pub syn: Option<SynOptions>,
}

impl Segment {
    /// The SACK blocks in use.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..self.sack_len as usize]
    }
    /// One past the last payload byte.
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
}

/// Addresses and ports of one direction of a connection, and its window scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// Source IPv4 address.
    pub src: [u8; 4],
    /// Destination IPv4 address.
    pub dst: [u8; 4],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// DS codepoint.
    pub dscp: u8,
    /// Window scale shift (RFC 7323 §2.3) applied to the window field.
    pub shift: u8,
}

/// Why bytes are not a TCP segment of ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than its headers say.
    Truncated,
    /// Not IPv4 without options, or not TCP.
    NotTcp,
    /// Bad data offset or option layout.
    BadHeader,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseError::Truncated => "truncated TCP segment",
            ParseError::NotTcp => "not IPv4/TCP",
            ParseError::BadHeader => "malformed TCP header",
        })
    }
}

/// The fields of a segment as they are on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireSegment {
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flags.
    pub flags: u8,
    /// Window field (unscaled).
    pub window: u16,
    /// Payload bytes.
    pub len: u32,
    /// SACK blocks as on the wire.
    pub sack: [(u32, u32); MAX_SACK_BLOCKS],
    /// How many SACK blocks.
    pub sack_len: u8,
    /// The XCP option, if present.
    pub xcp: Option<XcpField>,
    /// The timestamps option, if present.
    pub ts: Option<Timestamps>,
    /// MSS, window scale and SACK-permitted, if the segment carries any of them (a SYN).
    pub syn: Option<SynOptions>,
}

/// The 64-bit value whose low 32 bits are `w` closest to `near`.
pub fn unwrap(w: u32, near: u64) -> u64 {
    let c = (near & !0xffff_ffff) | w as u64;
    [c.checked_sub(1 << 32), c.checked_add(1 << 32)]
        .into_iter()
        .flatten()
        .fold(c, |best, x| {
            if x.abs_diff(near) < best.abs_diff(near) {
                x
            } else {
                best
            }
        })
}

impl WireSegment {
    /// The segment with sequence numbers unwrapped near `near_seq` and `near_ack`, and the
    /// window scaled by `shift`.
    pub fn to_segment(&self, near_seq: u64, near_ack: u64, shift: u8) -> Segment {
        // A SYN's sequence number is the ISS, one before the first data byte.
        let seq = if self.flags & SYN != 0 {
            self.seq.wrapping_add(1)
        } else {
            self.seq
        };
        let mut s = Segment {
            seq: unwrap(seq, near_seq),
            len: self.len,
            ack: unwrap(self.ack, near_ack),
            flags: self.flags,
            // RFC 7323 §2.2: the window of a SYN is never scaled.
            window: (self.window as u64) << if self.flags & SYN != 0 { 0 } else { shift },
            sack_len: self.sack_len,
            xcp: self.xcp,
            ts: self.ts,
            syn: self.syn,
            ..Segment::default()
        };
        for (i, &(a, b)) in self.sack_blocks().iter().enumerate() {
            let a = unwrap(a, near_ack);
            s.sack[i] = (a, a + b.wrapping_sub(self.sack[i].0) as u64);
        }
        s
    }
    /// The SACK blocks in use.
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.sack_len as usize]
    }
}

/// TCP header bytes of `s` (20 plus options padded to 4).
pub fn tcp_header_len(s: &Segment) -> usize {
    let sack = if s.sack_len == 0 {
        0
    } else {
        2 + 2 + 8 * s.sack_len as usize
    };
    20 + syn_options_len(s)
        + if s.ts.is_some() { TS_OPTION_LEN } else { 0 }
        + sack
        + if s.xcp.is_some() { 2 + XCP_LEN } else { 0 }
}

/// Bytes of the MSS, window-scale and SACK-permitted options of a SYN (the SACK-permitted
/// option takes the two NOPs before the timestamps when both are present).
fn syn_options_len(s: &Segment) -> usize {
    match s.syn {
        Some(o) if s.flags & SYN != 0 => {
            4 + if o.wscale.is_some() { 4 } else { 0 }
                + if o.sack_permitted && s.ts.is_none() {
                    4
                } else {
                    0
                }
        }
        _ => 0,
    }
}

/// Bytes of the IP packet carrying `s`.
pub fn packet_len(s: &Segment) -> usize {
    20 + tcp_header_len(s) + s.len as usize
}

/// Writes the IPv4/TCP packet of `s` into `out` (cleared first).
pub fn emit(s: &Segment, e: &Endpoints, out: &mut Vec<u8>) {
    let th = tcp_header_len(s);
    let total = ipv4::HEADER_LEN + th + s.len as usize;
    out.clear();
    out.resize(total, 0);
    // IPv4 (RFC 791), no options, don't fragment.
    Ipv4Repr {
        src: e.src,
        dst: e.dst,
        protocol: 6,
        ttl: 64,
        tos: e.dscp << 2,
        ident: 0,
        dont_frag: true,
        reserved_flag: false,
        payload_len: th + s.len as usize,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut out[..]));
    // TCP (RFC 9293 §3.1).
    let mut t = TcpPacket::new_unchecked(&mut out[ipv4::HEADER_LEN..ipv4::HEADER_LEN + th]);
    let syn = s.flags & SYN != 0;
    TcpRepr {
        src_port: e.sport,
        dst_port: e.dport,
        // The SYN takes the sequence number before the first data byte (the ISS).
        seq: if syn {
            (s.seq as u32).wrapping_sub(1)
        } else {
            s.seq as u32
        },
        ack: s.ack as u32,
        flags: s.flags,
        // RFC 7323 §2.2: the window of a SYN is never scaled.
        window: (s.window >> if syn { 0 } else { e.shift }).min(65_535) as u16,
        urgent: 0,
        options_len: th - tcp::HEADER_LEN,
    }
    .emit(&mut t);
    let o = t.options_mut();
    let mut at = 0;
    let syn_opts = s.syn.filter(|_| syn);
    if let Some(so) = syn_opts {
        // RFC 9293 §3.2: MSS only on a SYN.
        at += write_option(&mut o[at..], &TcpOption::Mss(so.mss));
        if so.sack_permitted && s.ts.is_some() {
            at += write_option(&mut o[at..], &TcpOption::SackPermitted);
        }
    }
    if let Some(ts) = s.ts {
        // RFC 7323 Appendix A: NOP NOP TS keeps the fields 32-bit aligned (on a SYN with
        // SACK-permitted, that option takes the NOPs' place).
        if !syn_opts.is_some_and(|so| so.sack_permitted) {
            at += write_option(&mut o[at..], &TcpOption::Nop);
            at += write_option(&mut o[at..], &TcpOption::Nop);
        }
        at += write_option(&mut o[at..], &TcpOption::Timestamps(ts.val, ts.ecr));
    }
    if let Some(so) = syn_opts {
        if let Some(ws) = so.wscale {
            at += write_option(&mut o[at..], &TcpOption::Nop);
            at += write_option(&mut o[at..], &TcpOption::WindowScale(ws));
        }
        if so.sack_permitted && s.ts.is_none() {
            at += write_option(&mut o[at..], &TcpOption::Nop);
            at += write_option(&mut o[at..], &TcpOption::Nop);
            at += write_option(&mut o[at..], &TcpOption::SackPermitted);
        }
    }
    if s.sack_len > 0 {
        // RFC 2018 §3: two NOPs then kind 5, length 2 + 8n, the blocks' edges.
        let mut blocks = [0u8; 8 * MAX_SACK_BLOCKS];
        for (i, &(a, b)) in s.sack_blocks().iter().enumerate() {
            blocks[8 * i..8 * i + 4].copy_from_slice(&(a as u32).to_be_bytes());
            blocks[8 * i + 4..8 * i + 8].copy_from_slice(&(b as u32).to_be_bytes());
        }
        at += write_option(&mut o[at..], &TcpOption::Nop);
        at += write_option(&mut o[at..], &TcpOption::Nop);
        let n = 8 * s.sack_len as usize;
        at += write_option(&mut o[at..], &TcpOption::Sack(&blocks[..n]));
    }
    if let Some(x) = s.xcp {
        // Two NOPs keep the 14-byte option's fields 32-bit aligned.
        let mut d = [0u8; XCP_LEN - 2];
        d[0..4].copy_from_slice(&x.cwnd.to_be_bytes());
        d[4..8].copy_from_slice(&x.rtt_us.to_be_bytes());
        d[8..12].copy_from_slice(&x.feedback.to_be_bytes());
        at += write_option(&mut o[at..], &TcpOption::Nop);
        at += write_option(&mut o[at..], &TcpOption::Nop);
        write_option(&mut o[at..], &TcpOption::Unknown(XCP_KIND, &d));
    }
    // Pseudo-header (RFC 9293 §3.1); the payload is zeros, which add nothing to the sum.
    t.fill_checksum(&e.src, &e.dst, th + s.len as usize, Sum::default());
}

/// Reads the wire fields of an IPv4/TCP packet.
pub fn parse(p: &[u8]) -> Result<WireSegment, ParseError> {
    if p.len() < ipv4::HEADER_LEN {
        return Err(ParseError::Truncated);
    }
    if p[0] != 0x45 || p[9] != 6 {
        return Err(ParseError::NotTcp);
    }
    let ip = Ipv4Packet::new_checked(p).map_err(|_| ParseError::NotTcp)?;
    let total = ip.total_len() as usize;
    if total < ipv4::HEADER_LEN + tcp::HEADER_LEN || p.len() < total {
        return Err(ParseError::Truncated);
    }
    let t =
        TcpPacket::new_checked(&p[ipv4::HEADER_LEN..total]).map_err(|_| ParseError::BadHeader)?;
    let mut w = WireSegment {
        sport: t.src_port(),
        dport: t.dst_port(),
        seq: t.seq(),
        ack: t.ack_number(),
        flags: t.flags(),
        window: t.window(),
        len: t.payload().len() as u32,
        ..WireSegment::default()
    };
    for o in t.options() {
        match o.map_err(|_| ParseError::BadHeader)? {
            TcpOption::Unknown(XCP_KIND, d) if d.len() == XCP_LEN - 2 => {
                let be32 = |i: usize| u32::from_be_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
                w.xcp = Some(XcpField {
                    cwnd: be32(0),
                    rtt_us: be32(4),
                    feedback: be32(8) as i32,
                });
            }
            TcpOption::Sack(d) => {
                for (b, edges) in TcpOption::Sack(d)
                    .sack_blocks()
                    .take(MAX_SACK_BLOCKS)
                    .enumerate()
                {
                    w.sack[b] = edges;
                    w.sack_len += 1;
                }
            }
            TcpOption::Timestamps(val, ecr) => w.ts = Some(Timestamps { val, ecr }),
            TcpOption::Mss(m) => w.syn.get_or_insert_with(SynOptions::default).mss = m,
            TcpOption::WindowScale(ws) => {
                // RFC 7323 §2.3: a shift above 14 is used as 14.
                w.syn.get_or_insert_with(SynOptions::default).wscale = Some(ws.min(14))
            }
            TcpOption::SackPermitted => {
                w.syn.get_or_insert_with(SynOptions::default).sack_permitted = true
            }
            // A known kind with the wrong length is malformed.
            TcpOption::Unknown(
                tcp::kind::SACK
                | tcp::kind::TIMESTAMPS
                | tcp::kind::MSS
                | tcp::kind::WINDOW_SCALE
                | tcp::kind::SACK_PERMITTED,
                _,
            ) => return Err(ParseError::BadHeader),
            _ => {}
        }
    }
    Ok(w)
}

/// Rewrites the feedback of the XCP option in the IPv4/TCP packet `p` (as a router does,
/// Katabi et al. §3.5) and fixes the TCP checksum. False if `p` carries no XCP option.
pub fn set_xcp_feedback(p: &mut [u8], feedback: i32) -> bool {
    if parse(p).map(|w| w.xcp.is_none()).unwrap_or(true) {
        return false;
    }
    let total = u16::from_be_bytes([p[2], p[3]]) as usize;
    let (ip, rest) = p[..total].split_at_mut(ipv4::HEADER_LEN);
    let mut t = TcpPacket::new_unchecked(rest);
    // Where the XCP option's data starts, from the start of the options.
    let mut at = 0;
    let mut found = None;
    for o in t.options() {
        match o {
            Ok(TcpOption::Unknown(XCP_KIND, d)) if d.len() == XCP_LEN - 2 => {
                found = Some(at + 2);
                break;
            }
            Ok(o) => at += o.buffer_len(),
            Err(_) => return false,
        }
    }
    let Some(d) = found else { return false };
    t.options_mut()[d + 8..d + 12].copy_from_slice(&feedback.to_be_bytes());
    let (src, dst) = (&ip[ipv4::field::SRC], &ip[ipv4::field::DST]);
    t.fill_checksum(src, dst, total - ipv4::HEADER_LEN, Sum::default());
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ends() -> Endpoints {
        Endpoints {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 3],
            sport: 40000,
            dport: 5000,
            dscp: 10,
            shift: 2,
        }
    }

    /// The Internet checksum computed the slow way, for cross-checking.
    fn ones_complement(words: &[u8]) -> u16 {
        let mut s: u64 = 0;
        for c in words.chunks(2) {
            s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u64;
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    #[test]
    fn checksums_verify_over_whole_packet() {
        let mut s = Segment {
            seq: 5 * 1460,
            len: 1460,
            ack: 1,
            flags: ACK,
            window: 65536,
            ..Default::default()
        };
        s.sack[0] = (100, 200);
        s.sack_len = 1;
        let mut p = Vec::new();
        emit(&s, &ends(), &mut p);
        assert_eq!(p.len(), 20 + 32 + 1460);
        assert_eq!(ones_complement(&p[..20]), 0);
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&p[12..20]);
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&((p.len() - 20) as u16).to_be_bytes());
        pseudo.extend_from_slice(&p[20..]);
        assert_eq!(
            ones_complement(&pseudo),
            0,
            "TCP checksum over the whole segment"
        );
    }

    #[test]
    fn etherparse_reads_our_segments() {
        let mut s = Segment {
            seq: 7_000_000_000,
            len: 954,
            ack: 3,
            flags: ACK,
            window: 4 * 1000,
            ..Default::default()
        };
        s.sack = [(10, 20), (30, 40), (50, 60)];
        s.sack_len = 3;
        let mut p = Vec::new();
        emit(&s, &ends(), &mut p);
        let h = etherparse::SlicedPacket::from_ip(&p).unwrap();
        let Some(etherparse::TransportSlice::Tcp(t)) = h.transport else {
            panic!("not TCP")
        };
        assert_eq!(t.source_port(), 40000);
        assert_eq!(t.sequence_number(), (7_000_000_000u64 & 0xffff_ffff) as u32);
        assert_eq!(t.window_size(), 1000);
        assert!(t.ack());
        let opts: Vec<_> = t.options_iterator().collect::<Result<_, _>>().unwrap();
        assert!(opts.iter().any(|o| matches!(
            o,
            etherparse::TcpOptionElement::SelectiveAcknowledgement(
                (10, 20),
                [Some((30, 40)), Some((50, 60)), None]
            )
        )));
        let ip = etherparse::Ipv4HeaderSlice::from_slice(&p).unwrap();
        let tcp = etherparse::TcpHeader::from_slice(&p[20..]).unwrap().0;
        assert_eq!(
            tcp.calc_checksum_ipv4(&ip.to_header(), &p[20 + tcp.header_len()..])
                .unwrap(),
            tcp.checksum
        );
    }

    #[test]
    fn round_trip_with_unwrapping() {
        let mut s = Segment {
            seq: (1 << 32) + 100,
            len: 500,
            ack: (3 << 32) - 10,
            flags: ACK,
            window: 1 << 20,
            ..Default::default()
        };
        s.sack = [((3 << 32) + 5, (3 << 32) + 505), (0, 0), (0, 0)];
        s.sack_len = 1;
        let mut e = ends();
        e.shift = 5;
        let mut p = Vec::new();
        emit(&s, &e, &mut p);
        let w = parse(&p).unwrap();
        assert_eq!(w.to_segment((1 << 32) - 1000, 3 << 32, 5), s);
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn unwrap_finds_the_nearest(x in 0u64..(1 << 50), d in -(1i64 << 30)..(1i64 << 30)) {
            let near = (x as i64 + d).max(0) as u64;
            prop_assert_eq!(unwrap(x as u32, near), x);
        }
    }

    #[test]
    fn xcp_option_round_trips_and_a_router_rewrite_keeps_the_checksum_valid() {
        let e = Endpoints {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            sport: 40000,
            dport: 5001,
            dscp: 0,
            shift: 0,
        };
        let s = Segment {
            seq: 1000,
            len: 100,
            ack: 1,
            flags: ACK,
            window: 65535,
            xcp: Some(XcpField {
                cwnd: 14_600,
                rtt_us: 2_500,
                feedback: 1_460,
            }),
            ..Segment::default()
        };
        let mut p = Vec::new();
        emit(&s, &e, &mut p);
        assert_eq!(p.len(), packet_len(&s));
        assert_eq!(parse(&p).unwrap().xcp, s.xcp);
        assert!(set_xcp_feedback(&mut p, -300));
        assert_eq!(parse(&p).unwrap().xcp.unwrap().feedback, -300);
        // etherparse recomputes the checksum independently.
        let ip = etherparse::Ipv4HeaderSlice::from_slice(&p[..20]).unwrap();
        let tcp = etherparse::TcpHeaderSlice::from_slice(&p[20..]).unwrap();
        let want = tcp
            .to_header()
            .calc_checksum_ipv4_raw(ip.source(), ip.destination(), &p[20 + tcp.slice().len()..])
            .unwrap();
        assert_eq!(tcp.checksum(), want);
        let mut plain = Vec::new();
        emit(&Segment { xcp: None, ..s }, &e, &mut plain);
        assert!(!set_xcp_feedback(&mut plain, 5));
    }

    /// RFC 7323 Appendix A: timestamps add 12 bytes to every header (NOP NOP TS), on a data
    /// segment and on an ACK with SACK blocks alike; the payload is unchanged.
    #[test]
    fn timestamps_grow_the_header_by_twelve_and_round_trip() {
        let mut s = Segment {
            seq: 3000,
            len: 1000,
            ack: 1,
            flags: ACK,
            window: 65536,
            ..Default::default()
        };
        let plain = packet_len(&s);
        s.ts = Some(Timestamps { val: 7, ecr: 9 });
        assert_eq!(packet_len(&s), plain + 12);
        assert_eq!(tcp_header_len(&s), 32);
        let mut p = Vec::new();
        emit(&s, &ends(), &mut p);
        assert_eq!(p.len(), packet_len(&s));
        assert_eq!(parse(&p).unwrap().to_segment(3000, 1, 2), s);
        s.sack = [(5000, 6000), (7000, 8000), (9000, 9500)];
        s.sack_len = 3;
        s.len = 0;
        assert_eq!(tcp_header_len(&s), 60, "the 40-byte option space, full");
        emit(&s, &ends(), &mut p);
        assert_eq!(parse(&p).unwrap().to_segment(3000, 1, 2), s);
    }

    /// RFC 9293 §3.2, RFC 7323 §2-3, RFC 2018 §2: a SYN's options round-trip; its sequence
    /// number on the wire is the ISS (one before data offset 0) and its window is unscaled.
    #[test]
    fn syn_options_round_trip_and_the_syn_takes_the_iss() {
        for (ts, sack) in [(true, true), (true, false), (false, true), (false, false)] {
            let s = Segment {
                seq: 0,
                flags: SYN | if sack { ACK } else { 0 },
                window: 65_535,
                syn: Some(SynOptions {
                    mss: 1460,
                    wscale: Some(7),
                    sack_permitted: sack,
                }),
                ts: ts.then_some(Timestamps { val: 1, ecr: 0 }),
                ..Default::default()
            };
            let mut p = Vec::new();
            emit(&s, &ends(), &mut p);
            assert_eq!((p.len() - 40) % 4, 0);
            assert_eq!(p.len(), packet_len(&s));
            let w = parse(&p).unwrap();
            assert_eq!(w.seq, u32::MAX, "ISS = 2^32 - 1");
            assert_eq!(w.window, 65_535, "a SYN's window is not scaled");
            assert_eq!(w.to_segment(0, 0, 2), s, "ts {ts} sack {sack}");
            // etherparse reads the same options.
            let h = etherparse::TcpHeaderSlice::from_slice(&p[20..]).unwrap();
            let opts: Vec<_> = h.options_iterator().collect::<Result<_, _>>().unwrap();
            use etherparse::TcpOptionElement as O;
            assert!(opts.contains(&O::MaximumSegmentSize(1460)));
            assert!(opts.contains(&O::WindowScale(7)));
            assert_eq!(opts.contains(&O::SelectiveAcknowledgementPermitted), sack);
            assert_eq!(opts.contains(&O::Timestamp(1, 0)), ts);
        }
        // A FIN is an ordinary flag; its sequence number is the offset after the data.
        let f = Segment {
            seq: 5000,
            flags: ACK | FIN,
            ack: 1,
            ..Default::default()
        };
        let mut p = Vec::new();
        emit(&f, &ends(), &mut p);
        assert_eq!(parse(&p).unwrap().to_segment(5000, 1, 2), f);
    }

    /// Malformed options are an error, never a panic: a timestamps, MSS, window-scale or
    /// SACK-permitted option of the wrong length, a length running past the header, a zero
    /// length.
    #[test]
    fn malformed_options_are_rejected() {
        let s = Segment {
            seq: 0,
            len: 0,
            ack: 1,
            flags: ACK,
            ts: Some(Timestamps { val: 1, ecr: 2 }),
            ..Default::default()
        };
        let mut good = Vec::new();
        emit(&s, &ends(), &mut good);
        assert!(parse(&good).is_ok());
        // Options start at byte 40: NOP NOP 8 10 <8 bytes>.
        let bad = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut p = good.clone();
            edit(&mut p);
            parse(&p)
        };
        assert_eq!(
            bad(&|p| p[43] = 6),
            Err(ParseError::BadHeader),
            "TS length 6"
        );
        assert_eq!(
            bad(&|p| p[43] = 40),
            Err(ParseError::BadHeader),
            "past the end"
        );
        assert_eq!(bad(&|p| p[43] = 0), Err(ParseError::BadHeader), "length 0");
        assert_eq!(bad(&|p| p[43] = 1), Err(ParseError::BadHeader), "length 1");
        for (kind, len) in [(2u8, 3u8), (3, 4), (4, 3), (2, 6)] {
            let r = bad(&|p| {
                p[42] = kind;
                p[43] = len;
            });
            assert_eq!(r, Err(ParseError::BadHeader), "kind {kind} length {len}");
        }
    }
}
