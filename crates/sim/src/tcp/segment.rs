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

use std::fmt;

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
        let mut s = Segment {
            seq: unwrap(self.seq, near_seq),
            len: self.len,
            ack: unwrap(self.ack, near_ack),
            flags: self.flags,
            window: (self.window as u64) << shift,
            sack_len: self.sack_len,
            xcp: self.xcp,
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
    sack_options_end(s) + if s.xcp.is_some() { 2 + XCP_LEN } else { 0 }
}

/// Where the SACK option (if any) ends in the TCP header.
fn sack_options_end(s: &Segment) -> usize {
    if s.sack_len == 0 {
        20
    } else {
        20 + 2 + 2 + 8 * s.sack_len as usize
    }
}

/// Bytes of the IP packet carrying `s`.
pub fn packet_len(s: &Segment) -> usize {
    20 + tcp_header_len(s) + s.len as usize
}

/// Writes the IPv4/TCP packet of `s` into `out` (cleared first).
pub fn emit(s: &Segment, e: &Endpoints, out: &mut Vec<u8>) {
    let th = tcp_header_len(s);
    let total = 20 + th + s.len as usize;
    out.clear();
    out.resize(total, 0);
    // IPv4 (RFC 791), no options, don't fragment.
    out[0] = 0x45;
    out[1] = e.dscp << 2;
    out[2..4].copy_from_slice(&(total.min(65_535) as u16).to_be_bytes());
    out[6] = 0x40;
    out[8] = 64;
    out[9] = 6;
    out[12..16].copy_from_slice(&e.src);
    out[16..20].copy_from_slice(&e.dst);
    let ip = fold(sum16(&out[..20], 0));
    out[10..12].copy_from_slice(&(!ip).to_be_bytes());
    // TCP (RFC 9293 §3.1).
    let t = &mut out[20..20 + th];
    t[0..2].copy_from_slice(&e.sport.to_be_bytes());
    t[2..4].copy_from_slice(&e.dport.to_be_bytes());
    t[4..8].copy_from_slice(&(s.seq as u32).to_be_bytes());
    t[8..12].copy_from_slice(&(s.ack as u32).to_be_bytes());
    t[12] = ((th / 4) as u8) << 4;
    t[13] = s.flags;
    let win = (s.window >> e.shift).min(65_535) as u16;
    t[14..16].copy_from_slice(&win.to_be_bytes());
    if s.sack_len > 0 {
        // RFC 2018 §3: two NOPs then kind 5, length 2 + 8n, the blocks' edges.
        t[20] = 1;
        t[21] = 1;
        t[22] = 5;
        t[23] = 2 + 8 * s.sack_len;
        for (i, &(a, b)) in s.sack_blocks().iter().enumerate() {
            let o = 24 + 8 * i;
            t[o..o + 4].copy_from_slice(&(a as u32).to_be_bytes());
            t[o + 4..o + 8].copy_from_slice(&(b as u32).to_be_bytes());
        }
    }
    if let Some(x) = s.xcp {
        // Two NOPs keep the 14-byte option's fields 32-bit aligned.
        let o = sack_options_end(s);
        t[o] = 1;
        t[o + 1] = 1;
        t[o + 2] = XCP_KIND;
        t[o + 3] = XCP_LEN as u8;
        t[o + 4..o + 8].copy_from_slice(&x.cwnd.to_be_bytes());
        t[o + 8..o + 12].copy_from_slice(&x.rtt_us.to_be_bytes());
        t[o + 12..o + 16].copy_from_slice(&x.feedback.to_be_bytes());
    }
    // Pseudo-header (RFC 9293 §3.1): addresses, protocol, TCP length. The payload is zeros.
    let mut acc = sum16(&e.src, 0);
    acc = sum16(&e.dst, acc);
    acc += 6 + (th + s.len as usize) as u32;
    acc = sum16(&out[20..20 + th], acc);
    let c = !fold(acc);
    out[36..38].copy_from_slice(&c.to_be_bytes());
}

/// Reads the wire fields of an IPv4/TCP packet.
pub fn parse(p: &[u8]) -> Result<WireSegment, ParseError> {
    if p.len() < 20 {
        return Err(ParseError::Truncated);
    }
    if p[0] != 0x45 || p[9] != 6 {
        return Err(ParseError::NotTcp);
    }
    let total = u16::from_be_bytes([p[2], p[3]]) as usize;
    if total < 40 || p.len() < total {
        return Err(ParseError::Truncated);
    }
    let t = &p[20..total];
    let th = (t[12] >> 4) as usize * 4;
    if th < 20 || th > t.len() {
        return Err(ParseError::BadHeader);
    }
    let be16 = |o: usize| u16::from_be_bytes([t[o], t[o + 1]]);
    let be32 = |o: usize| u32::from_be_bytes([t[o], t[o + 1], t[o + 2], t[o + 3]]);
    let mut w = WireSegment {
        sport: be16(0),
        dport: be16(2),
        seq: be32(4),
        ack: be32(8),
        flags: t[13],
        window: be16(14),
        len: (t.len() - th) as u32,
        ..WireSegment::default()
    };
    let mut o = 20;
    while o < th {
        match t[o] {
            0 => break,
            1 => o += 1,
            kind => {
                let l = *t.get(o + 1).ok_or(ParseError::BadHeader)? as usize;
                if l < 2 || o + l > th {
                    return Err(ParseError::BadHeader);
                }
                if kind == XCP_KIND && l == XCP_LEN {
                    w.xcp = Some(XcpField {
                        cwnd: be32(o + 2),
                        rtt_us: be32(o + 6),
                        feedback: be32(o + 10) as i32,
                    });
                }
                if kind == 5 {
                    if (l - 2) % 8 != 0 {
                        return Err(ParseError::BadHeader);
                    }
                    for b in 0..((l - 2) / 8).min(MAX_SACK_BLOCKS) {
                        let q = o + 2 + 8 * b;
                        w.sack[b] = (be32(q), be32(q + 4));
                        w.sack_len += 1;
                    }
                }
                o += l;
            }
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
    let th = (p[32] >> 4) as usize * 4;
    let mut o = 40;
    while o < 20 + th {
        match p[o] {
            0 => return false,
            1 => o += 1,
            kind => {
                let l = p[o + 1] as usize;
                if kind == XCP_KIND && l == XCP_LEN {
                    p[o + 10..o + 14].copy_from_slice(&feedback.to_be_bytes());
                    break;
                }
                o += l.max(2);
            }
        }
    }
    p[36] = 0;
    p[37] = 0;
    let mut acc = sum16(&p[12..20], 0);
    acc += 6 + (total - 20) as u32;
    acc = sum16(&p[20..total], acc);
    let c = !fold(acc);
    p[36..38].copy_from_slice(&c.to_be_bytes());
    true
}

fn sum16(b: &[u8], mut acc: u32) -> u32 {
    let mut c = b.chunks_exact(2);
    for w in &mut c {
        acc += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [x] = c.remainder() {
        acc += (*x as u32) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
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
}
