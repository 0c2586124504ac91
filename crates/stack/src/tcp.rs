//! A minimal TCP (RFC 9293) as an x-kernel protocol: enough for 002 Table 1's TCP-IP-ETH
//! ping-pong: a synchronized connection, in-order data, cumulative ACKs (piggybacked on data or
//! sent alone), the checksum over the pseudo-header. No handshake, retransmission, window
//! management, congestion control, urgent data or options.
//!
//! Contract: a session is one connection, keyed in the demux map by the 4-tuple (local address,
//! local port, remote address, remote port); the addresses come from the IP layer's demux
//! ([`Protocol::demux_below`]). Sessions are opened already *synchronized* (RFC 9293 §3.3.2's
//! ESTABLISHED): each end's initial sequence number is [`initial_seq`] of its own address and
//! port, which the peer computes the same way, standing in for the SYN exchange of §3.5 (so two
//! stacks that open matching sessions can exchange data at once). Pop verifies the checksum
//! (always: RFC 9293 §3.1 makes it mandatory; the payload is copied into the application buffer
//! while it is summed, in one pass with ILP, 002 §2.2), accepts only ACK segments without
//! SYN/RST/FIN/URG (others: `Unsupported`), requires the sequence number to be the next expected
//! one (else `OutOfOrder`: there is no reassembly queue, §3.10.7.4's "segments ... held for
//! later processing" is not done), requires the acknowledgement to be within (SND.UNA, SND.NXT]
//! or a duplicate of SND.UNA (else `BadHeader`), then advances RCV.NXT by the data and SND.UNA
//! by the acknowledgement and marks an ACK owed when data arrived. Push writes the header with
//! SEQ = SND.NXT, ACK = RCV.NXT (clearing the owed ACK: it is piggybacked, RFC 1122
//! §4.2.3.2) and the checksum; an empty message makes a pure ACK. The header layout is
//! [`mslink_wire::tcp`]'s view and repr.

use std::collections::HashMap;

use crate::msg::Message;
use crate::proto::{
    Below, Demuxed, DropReason, OpenError, OpenMode, Participants, Protocol, RxCtx, SessionId,
};
use mslink_wire::checksum::{pseudo_header, Sum};
use mslink_wire::tcp::{TcpPacket, TcpRepr, ACK, FIN, PSH, RST, SYN};

/// TCP's IP protocol number.
pub const IPPROTO_TCP: u8 = 6;
/// Length of the TCP header we send (no options).
pub const TCP_HDR_LEN: usize = mslink_wire::tcp::HEADER_LEN;
/// The receive window we advertise (fixed: no window management).
pub const WINDOW: u16 = 65535;
/// The urgent flag (RFC 9293 §3.1), refused on receive.
const URG: u8 = 0x20;

/// The initial sequence number of the end at `addr`:`port` (FNV-1a of the six bytes). Both ends
/// compute both numbers, which replaces the SYN exchange (see the module contract). Not the
/// clock-driven ISN of RFC 9293 §3.4.1: acceptable between two stacks of one benchmark, not
/// against an attacker.
pub fn initial_seq(addr: [u8; 4], port: u16) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in addr.iter().chain(port.to_be_bytes().iter()) {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

type FourTuple = ([u8; 4], u16, [u8; 4], u16);

#[derive(Clone, Debug)]
struct TcpSession {
    local_ip: [u8; 4],
    remote_ip: [u8; 4],
    local_port: u16,
    remote_port: u16,
    /// RFC 9293 §3.3.1 send sequence variables.
    snd_una: u32,
    snd_nxt: u32,
    /// Receive sequence variable: the next sequence number expected.
    rcv_nxt: u32,
    /// Data arrived that no segment we sent has acknowledged yet.
    ack_owed: bool,
    open: bool,
    frames: u64,
    bytes: u64,
}

/// The TCP protocol object.
#[derive(Debug, Default)]
pub struct Tcp {
    sessions: Vec<TcpSession>,
    by_tuple: HashMap<FourTuple, SessionId>,
}

impl Tcp {
    /// A TCP protocol with no sessions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes sent on `s` and not yet acknowledged (SND.NXT − SND.UNA).
    pub fn in_flight(&self, s: SessionId) -> u32 {
        self.sessions
            .get(s.0 as usize)
            .map_or(0, |x| x.snd_nxt.wrapping_sub(x.snd_una))
    }
}

/// `a <= b` in sequence space (RFC 9293 §3.4: arithmetic modulo 2^32).
fn seq_le(a: u32, b: u32) -> bool {
    b.wrapping_sub(a) < 1 << 31
}

impl Protocol for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn open(
        &mut self,
        p: &Participants,
        _hlp: u32,
        mode: OpenMode,
    ) -> Result<SessionId, OpenError> {
        let key = (p.local_ip, p.local_port, p.remote_ip, p.remote_port);
        if mode == OpenMode::Shared && self.by_tuple.contains_key(&key) {
            return Err(OpenError::KeyInUse);
        }
        let iss = initial_seq(p.local_ip, p.local_port);
        let id = SessionId(self.sessions.len() as u32);
        self.sessions.push(TcpSession {
            local_ip: p.local_ip,
            remote_ip: p.remote_ip,
            local_port: p.local_port,
            remote_port: p.remote_port,
            snd_una: iss,
            snd_nxt: iss,
            rcv_nxt: initial_seq(p.remote_ip, p.remote_port),
            ack_owed: false,
            open: true,
            frames: 0,
            bytes: 0,
        });
        if mode == OpenMode::Shared {
            self.by_tuple.insert(key, id);
        }
        Ok(id)
    }

    fn close(&mut self, s: SessionId) {
        let Some(sess) = self.sessions.get_mut(s.0 as usize) else {
            return;
        };
        if sess.open {
            sess.open = false;
            let key = (
                sess.local_ip,
                sess.local_port,
                sess.remote_ip,
                sess.remote_port,
            );
            if self.by_tuple.get(&key) == Some(&s) {
                self.by_tuple.remove(&key);
            }
        }
    }

    fn demux(&self, hdr: &[u8]) -> Result<Demuxed, DropReason> {
        // Without the addresses of the layer below no 4-tuple can be formed.
        self.demux_below(hdr, &Below::default())
    }

    fn demux_below(&self, hdr: &[u8], below: &Below) -> Result<Demuxed, DropReason> {
        let p = TcpPacket::new_checked(hdr)?;
        let (Some(src), Some(dst)) = (below.src_ip, below.dst_ip) else {
            return Err(DropReason::NoSession);
        };
        let key = (dst, p.dst_port(), src, p.src_port());
        let session = *self.by_tuple.get(&key).ok_or(DropReason::NoSession)?;
        Ok(Demuxed {
            session,
            hdr_len: p.header_len(),
            addrs: None,
        })
    }

    fn pop(&mut self, s: SessionId, msg: &mut Message, rx: &mut RxCtx) -> Result<(), DropReason> {
        let sess = self
            .sessions
            .get_mut(s.0 as usize)
            .filter(|x| x.open)
            .ok_or(DropReason::NoSession)?;
        let p = TcpPacket::new_checked(msg.bytes())?;
        let r = TcpRepr::parse(&p)?;
        // Under DAA no TCP demux ran: the path named the session, so check it is this one's.
        if (r.dst_port, r.src_port, rx.dst_ip, rx.src_ip)
            != (
                sess.local_port,
                sess.remote_port,
                sess.local_ip,
                sess.remote_ip,
            )
        {
            return Err(DropReason::NoSession);
        }
        if r.flags & (SYN | RST | FIN | URG) != 0 {
            return Err(DropReason::Unsupported);
        }
        if r.flags & ACK == 0 {
            // RFC 9293 §3.10.7.4, fifth check: a segment without ACK in a synchronized state
            // is dropped.
            return Err(DropReason::BadHeader);
        }
        // RFC 9293 §3.1: the checksum covers the pseudo-header, the header and the data; the
        // data is summed while it is copied to the application (002 §2.2).
        let hl = p.header_len();
        let seg_len = msg.len();
        let mut sum = pseudo_header(&rx.src_ip, &rx.dst_ip, IPPROTO_TCP, seg_len);
        sum.add(&msg.bytes()[..hl]);
        let _ = msg.pop(hl);
        let data_len = msg.len() as u32;
        if data_len > 0 {
            rx.copy_with_sum(msg.bytes(), &mut sum);
        }
        if sum.fold() != 0xffff {
            return Err(DropReason::BadChecksum);
        }
        // In-order data only (no reassembly queue).
        if r.seq != sess.rcv_nxt {
            return Err(DropReason::OutOfOrder);
        }
        // RFC 9293 §3.10.7.4: an acceptable ACK is SND.UNA =< SEG.ACK =< SND.NXT (duplicates
        // are harmless); one for data never sent is refused.
        if !(seq_le(sess.snd_una, r.ack) && seq_le(r.ack, sess.snd_nxt)) {
            return Err(DropReason::BadHeader);
        }
        sess.snd_una = r.ack;
        sess.rcv_nxt = sess.rcv_nxt.wrapping_add(data_len);
        if data_len > 0 {
            sess.ack_owed = true;
        } else {
            rx.consumed = true; // a pure ACK: nothing for the application
        }
        sess.frames += 1;
        sess.bytes += u64::from(data_len);
        Ok(())
    }

    fn push(&mut self, s: SessionId, msg: &mut Message) {
        let sess = &mut self.sessions[s.0 as usize];
        let data_len = msg.len();
        let mut data_sum = Sum::default();
        data_sum.add(msg.bytes());
        let r = TcpRepr {
            src_port: sess.local_port,
            dst_port: sess.remote_port,
            seq: sess.snd_nxt,
            ack: sess.rcv_nxt,
            flags: if data_len > 0 { ACK | PSH } else { ACK },
            window: WINDOW,
            urgent: 0,
            options_len: 0,
        };
        sess.snd_nxt = sess.snd_nxt.wrapping_add(data_len as u32);
        sess.ack_owed = false;
        let (src, dst) = (sess.local_ip, sess.remote_ip);
        // The view holds the header alone; the data, summed above, follows it in the message.
        let mut p = TcpPacket::new_unchecked(msg.push(TCP_HDR_LEN));
        r.emit(&mut p);
        p.fill_checksum(&src, &dst, TCP_HDR_LEN + data_len, data_sum);
    }

    fn ack_owed(&self, s: SessionId) -> bool {
        self.sessions
            .get(s.0 as usize)
            .is_some_and(|x| x.open && x.ack_owed)
    }

    fn session_counters(&self, s: SessionId) -> (u64, u64) {
        self.sessions
            .get(s.0 as usize)
            .map_or((0, 0), |x| (x.frames, x.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];

    fn ends() -> (Tcp, SessionId, Tcp, SessionId) {
        let mut ta = Tcp::new();
        let mut tb = Tcp::new();
        let pa = Participants {
            local_ip: A,
            remote_ip: B,
            local_port: 1000,
            remote_port: 2000,
            ..Default::default()
        };
        let pb = Participants {
            local_ip: B,
            remote_ip: A,
            local_port: 2000,
            remote_port: 1000,
            ..Default::default()
        };
        let sa = ta.open(&pa, 0, OpenMode::Shared).unwrap();
        let sb = tb.open(&pb, 0, OpenMode::Shared).unwrap();
        (ta, sa, tb, sb)
    }

    fn rx_from(src: [u8; 4], dst: [u8; 4], ilp: bool) -> RxCtx {
        RxCtx {
            ilp,
            src_ip: src,
            dst_ip: dst,
            ..Default::default()
        }
    }

    fn below(src: [u8; 4], dst: [u8; 4]) -> Below {
        Below {
            src_ip: Some(src),
            dst_ip: Some(dst),
        }
    }

    #[test]
    fn header_and_checksum_match_etherparse() {
        let (mut ta, sa, _, _) = ends();
        let data: Vec<u8> = (0..1401u32).map(|i| (i * 13 + 5) as u8).collect();
        let mut m = Message::with_headroom(&data);
        ta.push(sa, &mut m);
        let (h, rest) = etherparse::TcpHeader::from_slice(m.bytes()).unwrap();
        assert_eq!(rest, &data[..]);
        assert_eq!((h.source_port, h.destination_port), (1000, 2000));
        assert_eq!(h.sequence_number, initial_seq(A, 1000));
        assert_eq!(h.acknowledgment_number, initial_seq(B, 2000));
        assert!(h.ack && h.psh && !h.syn && !h.fin && !h.rst);
        assert_eq!(h.window_size, WINDOW);
        let ip = etherparse::Ipv4Header::new((m.len()) as u16, 64, etherparse::IpNumber::TCP, A, B)
            .unwrap();
        assert_eq!(h.calc_checksum_ipv4(&ip, &data).unwrap(), h.checksum);
        // Odd lengths and the empty segment too.
        for n in [0usize, 1, 2, 3] {
            let (mut ta, sa, _, _) = ends();
            let mut m = Message::with_headroom(&data[..n]);
            ta.push(sa, &mut m);
            let (h, _) = etherparse::TcpHeader::from_slice(m.bytes()).unwrap();
            assert_eq!(h.calc_checksum_ipv4(&ip, &data[..n]).unwrap(), h.checksum);
            assert_eq!(h.psh, n > 0);
        }
    }

    #[test]
    fn demux_on_the_four_tuple() {
        let (_, _, mut tb, sb) = ends();
        // A second connection to the same local port from another peer port.
        let pb2 = Participants {
            local_ip: B,
            remote_ip: A,
            local_port: 2000,
            remote_port: 1001,
            ..Default::default()
        };
        let sb2 = tb.open(&pb2, 0, OpenMode::Shared).unwrap();
        assert_eq!(tb.open(&pb2, 0, OpenMode::Shared), Err(OpenError::KeyInUse));
        let mut h = [0u8; 20];
        let mk = |h: &mut [u8; 20], sp: u16| {
            TcpRepr {
                src_port: sp,
                dst_port: 2000,
                seq: 0,
                ack: 0,
                flags: ACK,
                window: 1,
                urgent: 0,
                options_len: 0,
            }
            .emit(&mut TcpPacket::new_unchecked(&mut h[..]));
        };
        mk(&mut h, 1000);
        assert_eq!(tb.demux_below(&h, &below(A, B)).unwrap().session, sb);
        mk(&mut h, 1001);
        assert_eq!(tb.demux_below(&h, &below(A, B)).unwrap().session, sb2);
        // Another source address, another destination address, no addresses at all.
        assert_eq!(
            tb.demux_below(&h, &below([10, 0, 0, 9], B)),
            Err(DropReason::NoSession)
        );
        assert_eq!(
            tb.demux_below(&h, &below(A, [10, 0, 0, 9])),
            Err(DropReason::NoSession)
        );
        assert_eq!(tb.demux(&h), Err(DropReason::NoSession));
        assert_eq!(
            tb.demux_below(&h[..19], &below(A, B)),
            Err(DropReason::Truncated)
        );
        h[12] = 4 << 4; // data offset 16 bytes
        assert_eq!(tb.demux_below(&h, &below(A, B)), Err(DropReason::BadHeader));
        tb.close(sb2);
        h[12] = 5 << 4;
        assert_eq!(tb.demux_below(&h, &below(A, B)), Err(DropReason::NoSession));
    }

    #[test]
    fn ping_pong_advances_sequence_and_acknowledges() {
        let (mut ta, sa, mut tb, sb) = ends();
        for (round, ilp) in [(0, false), (1, true), (2, false)] {
            let data = vec![round as u8; 100 + round];
            let mut m = Message::with_headroom(&data);
            ta.push(sa, &mut m);
            assert_eq!(ta.in_flight(sa), data.len() as u32);
            let mut rx = rx_from(A, B, ilp);
            tb.pop(sb, &mut m, &mut rx).unwrap();
            assert_eq!(rx.user, data);
            assert!(tb.ack_owed(sb));
            // The echo carries the ACK.
            let mut e = Message::with_headroom(&rx.user);
            tb.push(sb, &mut e);
            assert!(!tb.ack_owed(sb));
            let mut rx = rx_from(B, A, ilp);
            ta.pop(sa, &mut e, &mut rx).unwrap();
            assert_eq!(ta.in_flight(sa), 0, "the echo acknowledged the request");
            assert_eq!(tb.in_flight(sb), data.len() as u32);
        }
        // A pure ACK: no data, acknowledges the last echo.
        let mut a = Message::with_headroom(&[]);
        ta.push(sa, &mut a);
        let mut rx = rx_from(A, B, false);
        tb.pop(sb, &mut a, &mut rx).unwrap();
        assert_eq!(tb.in_flight(sb), 0);
        assert!(!tb.ack_owed(sb), "an ACK is not acknowledged");
        assert!(rx.consumed, "nothing to deliver");
        assert_eq!(tb.session_counters(sb).0, 4);
    }

    #[test]
    fn refuses_bad_checksum_order_flags_and_acks() {
        let (mut ta, sa, mut tb, sb) = ends();
        let seg = |ta: &mut Tcp, d: &[u8]| {
            let mut m = Message::with_headroom(d);
            ta.push(sa, &mut m);
            m
        };
        let pop = |tb: &mut Tcp, m: &Message| {
            let mut m = m.clone();
            tb.pop(sb, &mut m, &mut rx_from(A, B, false))
        };
        let first = seg(&mut ta, b"first");
        let second = seg(&mut ta, b"second");
        // Out of order: the second before the first.
        assert_eq!(pop(&mut tb, &second), Err(DropReason::OutOfOrder));
        let mut bad = first.clone();
        bad.bytes_mut()[22] ^= 1; // a data byte
        assert_eq!(pop(&mut tb, &bad), Err(DropReason::BadChecksum));
        for (flag, want) in [
            (SYN, DropReason::Unsupported),
            (FIN, DropReason::Unsupported),
            (RST, DropReason::Unsupported),
            (URG, DropReason::Unsupported),
        ] {
            let mut f = first.clone();
            f.bytes_mut()[13] |= flag;
            assert_eq!(pop(&mut tb, &f), Err(want));
        }
        let mut noack = first.clone();
        noack.bytes_mut()[13] &= !ACK;
        assert_eq!(pop(&mut tb, &noack), Err(DropReason::BadHeader));
        // An ACK for data B never sent (checksum fixed up so only the ACK is wrong).
        let mut far = first.clone();
        let ack = u32::from_be_bytes(far.bytes()[8..12].try_into().unwrap());
        far.bytes_mut()[8..12].copy_from_slice(&ack.wrapping_add(10).to_be_bytes());
        let n = far.len();
        let mut sum = Sum::default();
        sum.add(&far.bytes()[20..]);
        TcpPacket::new_unchecked(&mut far.bytes_mut()[..20]).fill_checksum(&A, &B, n, sum);
        assert_eq!(pop(&mut tb, &far), Err(DropReason::BadHeader));
        // From another address (as a DAA path would misdeliver it).
        let mut m = first.clone();
        assert_eq!(
            tb.pop(sb, &mut m, &mut rx_from([10, 0, 0, 9], B, false)),
            Err(DropReason::NoSession)
        );
        // Nothing above changed the state: the segments still go in, in order.
        assert_eq!(pop(&mut tb, &first), Ok(()));
        assert_eq!(pop(&mut tb, &first), Err(DropReason::OutOfOrder));
        assert_eq!(pop(&mut tb, &second), Ok(()));
        assert_eq!(tb.session_counters(sb), (2, 11));
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert!(seq_le(u32::MAX - 1, 3));
        assert!(!seq_le(3, u32::MAX - 1));
        let (mut ta, sa, mut tb, sb) = ends();
        ta.sessions[sa.0 as usize].snd_una = u32::MAX - 2;
        ta.sessions[sa.0 as usize].snd_nxt = u32::MAX - 2;
        tb.sessions[sb.0 as usize].rcv_nxt = u32::MAX - 2;
        for _ in 0..3 {
            let mut m = Message::with_headroom(b"wrap");
            ta.push(sa, &mut m);
            tb.pop(sb, &mut m, &mut rx_from(A, B, false)).unwrap();
        }
        assert_eq!(tb.sessions[sb.0 as usize].rcv_nxt, 9);
    }

    #[test]
    fn truncated_and_malformed_headers_are_errors() {
        let (_, _, mut tb, sb) = ends();
        let mut m = Message::from_frame(&[0u8; 10]);
        assert_eq!(
            tb.pop(sb, &mut m, &mut rx_from(A, B, false)),
            Err(DropReason::Truncated)
        );
        let mut h = [0u8; 24];
        h[12] = 7 << 4; // 28-byte header in 24 bytes
        let mut m = Message::from_frame(&h);
        assert_eq!(
            tb.pop(sb, &mut m, &mut rx_from(A, B, false)),
            Err(DropReason::Truncated)
        );
    }
}
