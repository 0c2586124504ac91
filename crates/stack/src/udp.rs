//! UDP (RFC 768) as an x-kernel protocol, with the checksum switchable per session and the
//! payload copy-and-checksum done in one pass or two (integrated layer processing, 002 §2.2).
//!
//! Contract: demux maps the destination port to the session bound to it. Pop checks the length
//! field against the bytes present (trimming anything after it), and when the session verifies
//! checksums and the field is non-zero, copies the payload into the application buffer while
//! summing it (one pass with ILP, copy then sum without) and drops the datagram on a mismatch.
//! With the checksum off (as in 002 §5.2's measurements) the payload is left for the top anchor
//! to copy. Push writes the header and, when enabled, the checksum over the pseudo-header. The
//! header layout is [`mslink_wire::udp`]'s view and repr.

use std::collections::HashMap;

use crate::ipv4::IPPROTO_UDP;
use crate::msg::Message;
use crate::proto::{
    Demuxed, DropReason, OpenError, OpenMode, Participants, Protocol, RxCtx, SessionId,
};
use mslink_wire::checksum::{pseudo_header, Sum};
use mslink_wire::udp::{UdpPacket, UdpRepr};

/// Length of the UDP header.
pub const UDP_HDR_LEN: usize = mslink_wire::udp::HEADER_LEN;

#[derive(Clone, Debug)]
struct UdpSession {
    local_ip: [u8; 4],
    remote_ip: [u8; 4],
    local_port: u16,
    remote_port: u16,
    checksum: bool,
    open: bool,
    frames: u64,
    bytes: u64,
}

/// The UDP protocol object.
#[derive(Debug, Default)]
pub struct Udp {
    sessions: Vec<UdpSession>,
    by_port: HashMap<u16, SessionId>,
}

impl Udp {
    /// A UDP protocol with no sessions.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Protocol for Udp {
    fn name(&self) -> &'static str {
        "udp"
    }

    fn open(
        &mut self,
        p: &Participants,
        _hlp: u32,
        mode: OpenMode,
    ) -> Result<SessionId, OpenError> {
        if mode == OpenMode::Shared && self.by_port.contains_key(&p.local_port) {
            return Err(OpenError::KeyInUse);
        }
        let id = SessionId(self.sessions.len() as u32);
        self.sessions.push(UdpSession {
            local_ip: p.local_ip,
            remote_ip: p.remote_ip,
            local_port: p.local_port,
            remote_port: p.remote_port,
            checksum: p.udp_checksum,
            open: true,
            frames: 0,
            bytes: 0,
        });
        if mode == OpenMode::Shared {
            self.by_port.insert(p.local_port, id);
        }
        Ok(id)
    }

    fn close(&mut self, s: SessionId) {
        let Some(sess) = self.sessions.get_mut(s.0 as usize) else {
            return;
        };
        if sess.open {
            sess.open = false;
            if self.by_port.get(&sess.local_port) == Some(&s) {
                self.by_port.remove(&sess.local_port);
            }
        }
    }

    fn demux(&self, hdr: &[u8]) -> Result<Demuxed, DropReason> {
        let port = UdpPacket::new_checked(hdr)?.dst_port();
        let session = *self.by_port.get(&port).ok_or(DropReason::NoSession)?;
        Ok(Demuxed {
            session,
            hdr_len: UDP_HDR_LEN,
            addrs: None,
        })
    }

    fn pop(&mut self, s: SessionId, msg: &mut Message, rx: &mut RxCtx) -> Result<(), DropReason> {
        let sess = self
            .sessions
            .get_mut(s.0 as usize)
            .ok_or(DropReason::NoSession)?;
        let p = UdpPacket::new_checked(msg.bytes())?;
        let r = UdpRepr::parse(&p)?;
        let mut h = [0u8; UDP_HDR_LEN];
        h.copy_from_slice(p.header());
        let len = (UDP_HDR_LEN + r.payload_len) as u16;
        msg.truncate(len as usize);
        let _ = msg.pop(UDP_HDR_LEN);
        if sess.checksum && r.checksum != 0 {
            let mut sum = pseudo_header(&rx.src_ip, &rx.dst_ip, IPPROTO_UDP, len.into());
            sum.add(&h);
            // 002 §2.2: the data manipulation of this layer, integrated with the copy or not.
            rx.copy_with_sum(msg.bytes(), &mut sum);
            if sum.fold() != 0xffff {
                return Err(DropReason::BadChecksum);
            }
        }
        sess.frames += 1;
        sess.bytes += msg.len() as u64;
        Ok(())
    }

    fn push(&mut self, s: SessionId, msg: &mut Message) {
        let sess = &self.sessions[s.0 as usize];
        let r = UdpRepr {
            src_port: sess.local_port,
            dst_port: sess.remote_port,
            payload_len: msg.len(),
            checksum: 0,
        };
        let len = (msg.len() + UDP_HDR_LEN).min(u16::MAX as usize) as u16;
        let ck = sess.checksum;
        let (src, dst) = (sess.local_ip, sess.remote_ip);
        let mut sum = if ck {
            pseudo_header(&src, &dst, IPPROTO_UDP, len.into())
        } else {
            Sum::default()
        };
        if ck {
            sum.add(msg.bytes());
        }
        let mut p = UdpPacket::new_unchecked(msg.push(UDP_HDR_LEN));
        r.emit(&mut p);
        if ck {
            sum.add(p.header());
            let mut c = sum.checksum();
            if c == 0 {
                c = 0xffff; // RFC 768: a computed zero is sent as all ones
            }
            p.set_checksum_field(c);
        }
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

    fn pair(ck: bool) -> (Udp, SessionId, Udp, SessionId) {
        let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let mut ua = Udp::new();
        let mut ub = Udp::new();
        let pa = Participants {
            local_ip: a,
            remote_ip: b,
            local_port: 1000,
            remote_port: 2000,
            udp_checksum: ck,
            ..Default::default()
        };
        let pb = Participants {
            local_ip: b,
            remote_ip: a,
            local_port: 2000,
            remote_port: 1000,
            udp_checksum: ck,
            ..Default::default()
        };
        let sa = ua.open(&pa, 0, OpenMode::Shared).unwrap();
        let sb = ub.open(&pb, 0, OpenMode::Shared).unwrap();
        (ua, sa, ub, sb)
    }

    #[test]
    fn checksum_matches_etherparse_and_verifies_both_ways() {
        for ilp in [false, true] {
            let (mut ua, sa, mut ub, sb) = pair(true);
            let data: Vec<u8> = (0..1401u32).map(|i| (i * 7 + 3) as u8).collect();
            let mut m = Message::with_headroom(&data);
            ua.push(sa, &mut m);
            let (uh, _) = etherparse::UdpHeader::from_slice(m.bytes()).unwrap();
            let ip = etherparse::Ipv4Header::new(
                0,
                64,
                etherparse::IpNumber::UDP,
                [10, 0, 0, 1],
                [10, 0, 0, 2],
            )
            .unwrap();
            assert_eq!(uh.calc_checksum_ipv4(&ip, &data).unwrap(), uh.checksum);
            assert_eq!(ub.demux(m.bytes()).unwrap().session, sb);
            let mut rx = RxCtx {
                ilp,
                src_ip: [10, 0, 0, 1],
                dst_ip: [10, 0, 0, 2],
                ..Default::default()
            };
            let mut bad = m.clone();
            ub.pop(sb, &mut m, &mut rx).unwrap();
            assert!(rx.copied);
            assert_eq!(rx.user, data);
            bad.bytes_mut()[100] ^= 0x10;
            let mut rx2 = RxCtx {
                ilp,
                src_ip: [10, 0, 0, 1],
                dst_ip: [10, 0, 0, 2],
                ..Default::default()
            };
            assert_eq!(ub.pop(sb, &mut bad, &mut rx2), Err(DropReason::BadChecksum));
        }
    }

    #[test]
    fn checksum_off_sends_zero_and_skips_copy() {
        let (mut ua, sa, mut ub, sb) = pair(false);
        let mut m = Message::with_headroom(b"hello");
        ua.push(sa, &mut m);
        assert_eq!(&m.bytes()[6..8], &[0, 0]);
        let mut rx = RxCtx::default();
        ub.pop(sb, &mut m, &mut rx).unwrap();
        assert!(!rx.copied);
        assert_eq!(m.bytes(), b"hello");
    }

    #[test]
    fn bad_length_fields() {
        let (mut ua, sa, mut ub, sb) = pair(false);
        let mut m = Message::with_headroom(b"hello");
        ua.push(sa, &mut m);
        let mut short = m.clone();
        short.bytes_mut()[4..6].copy_from_slice(&7u16.to_be_bytes());
        assert_eq!(
            ub.pop(sb, &mut short, &mut RxCtx::default()),
            Err(DropReason::BadLength)
        );
        m.bytes_mut()[4..6].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(
            ub.pop(sb, &mut m, &mut RxCtx::default()),
            Err(DropReason::Truncated)
        );
    }
}
