//! IPv4 (RFC 791) as an x-kernel protocol: no options on send, options accepted (skipped) on
//! receive, no fragmentation (fragments are counted as unsupported and dropped).
//!
//! Contract: demux reads version, header length, destination and (source, protocol) and maps the
//! latter to a session (the x-kernel's IP demux key); pop validates the whole header (version,
//! IHL, total length against the bytes present, header checksum, no fragment, protocol and
//! destination match the session), trims link padding to the total length, strips the header and
//! leaves the addresses in the receive context for the pseudo-header of the layer above. The
//! header layout is [`mslink_wire::ipv4`]'s view and repr.

use std::collections::HashMap;

use crate::msg::Message;
use crate::proto::{
    Demuxed, DropReason, OpenError, OpenMode, Participants, Protocol, RxCtx, SessionId,
};
use mslink_wire::ipv4::{Ipv4Packet, Ipv4Repr};

/// Length of an IPv4 header without options.
pub const IPV4_HDR_LEN: usize = mslink_wire::ipv4::HEADER_LEN;
/// UDP's IP protocol number.
pub const IPPROTO_UDP: u8 = 17;
/// Default time to live of datagrams we send.
pub const DEFAULT_TTL: u8 = 64;

#[derive(Clone, Debug)]
struct IpSession {
    remote: [u8; 4],
    proto: u8,
    users: u32,
    ident: u16,
    frames: u64,
    bytes: u64,
}

/// The IPv4 protocol object for one local address.
#[derive(Debug)]
pub struct Ipv4 {
    local: [u8; 4],
    sessions: Vec<IpSession>,
    by_peer: HashMap<([u8; 4], u8), SessionId>,
}

impl Ipv4 {
    /// IPv4 for local address `local`.
    pub fn new(local: [u8; 4]) -> Self {
        Ipv4 {
            local,
            sessions: Vec::new(),
            by_peer: HashMap::new(),
        }
    }
}

impl Protocol for Ipv4 {
    fn name(&self) -> &'static str {
        "ipv4"
    }

    fn open(&mut self, p: &Participants, hlp: u32, mode: OpenMode) -> Result<SessionId, OpenError> {
        let proto = hlp as u8;
        if mode == OpenMode::Shared {
            if let Some(&s) = self.by_peer.get(&(p.remote_ip, proto)) {
                self.sessions[s.0 as usize].users += 1;
                return Ok(s);
            }
        }
        let id = SessionId(self.sessions.len() as u32);
        self.sessions.push(IpSession {
            remote: p.remote_ip,
            proto,
            users: 1,
            ident: 0,
            frames: 0,
            bytes: 0,
        });
        if mode == OpenMode::Shared {
            self.by_peer.insert((p.remote_ip, proto), id);
        }
        Ok(id)
    }

    fn close(&mut self, s: SessionId) {
        let Some(sess) = self.sessions.get_mut(s.0 as usize) else {
            return;
        };
        sess.users = sess.users.saturating_sub(1);
        if sess.users == 0 && self.by_peer.get(&(sess.remote, sess.proto)) == Some(&s) {
            self.by_peer.remove(&(sess.remote, sess.proto));
        }
    }

    fn demux(&self, hdr: &[u8]) -> Result<Demuxed, DropReason> {
        let p = Ipv4Packet::new_checked(hdr)?;
        if p.dst() != self.local {
            return Err(DropReason::NotForUs);
        }
        let session = *self
            .by_peer
            .get(&(p.src(), p.protocol()))
            .ok_or(DropReason::NoSession)?;
        Ok(Demuxed {
            session,
            hdr_len: p.header_len(),
            addrs: Some((p.src(), p.dst())),
        })
    }

    fn pop(&mut self, s: SessionId, msg: &mut Message, rx: &mut RxCtx) -> Result<(), DropReason> {
        let local = self.local;
        let sess = self
            .sessions
            .get_mut(s.0 as usize)
            .ok_or(DropReason::NoSession)?;
        let p = Ipv4Packet::new_checked(msg.bytes())?;
        // RFC 791 §3.1: total length, header checksum (RFC 1071), no fragment.
        let r = Ipv4Repr::parse(&p)?;
        let n = p.header_len();
        if r.protocol != sess.proto {
            return Err(DropReason::BadHeader);
        }
        if r.dst != local {
            return Err(DropReason::NotForUs);
        }
        rx.src_ip = r.src;
        rx.dst_ip = local;
        msg.truncate(n + r.payload_len);
        let _ = msg.pop(n);
        sess.frames += 1;
        sess.bytes += msg.len() as u64;
        Ok(())
    }

    fn push(&mut self, s: SessionId, msg: &mut Message) {
        let local = self.local;
        let sess = &mut self.sessions[s.0 as usize];
        let ident = sess.ident;
        sess.ident = sess.ident.wrapping_add(1);
        let r = Ipv4Repr {
            src: local,
            dst: sess.remote,
            protocol: sess.proto,
            ttl: DEFAULT_TTL,
            tos: 0,
            ident,
            dont_frag: true,
            reserved_flag: false,
            payload_len: msg.len(),
        };
        r.emit(&mut Ipv4Packet::new_unchecked(msg.push(IPV4_HDR_LEN)));
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

    #[test]
    fn header_is_valid_for_etherparse_and_pops() {
        let a = [10, 0, 0, 1];
        let b = [10, 0, 0, 2];
        let mut ia = Ipv4::new(a);
        let mut ib = Ipv4::new(b);
        let sa = ia
            .open(
                &Participants {
                    remote_ip: b,
                    ..Default::default()
                },
                17,
                OpenMode::Shared,
            )
            .unwrap();
        let sb = ib
            .open(
                &Participants {
                    remote_ip: a,
                    ..Default::default()
                },
                17,
                OpenMode::Shared,
            )
            .unwrap();
        let mut m = Message::with_headroom(b"abcd");
        ia.push(sa, &mut m);
        let (h, rest) = etherparse::Ipv4Header::from_slice(m.bytes()).unwrap();
        assert_eq!(h.source, a);
        assert_eq!(h.destination, b);
        assert_eq!(h.protocol, etherparse::IpNumber::UDP);
        assert_eq!(h.calc_header_checksum(), h.header_checksum);
        assert_eq!(rest, b"abcd");
        m.pad(6); // link padding
        assert_eq!(
            ib.demux(m.bytes()).unwrap(),
            Demuxed {
                session: sb,
                hdr_len: 20,
                addrs: Some((a, b))
            }
        );
        let mut rx = RxCtx::default();
        ib.pop(sb, &mut m, &mut rx).unwrap();
        assert_eq!(m.bytes(), b"abcd");
        assert_eq!(rx.src_ip, a);
    }

    #[test]
    fn corrupted_checksum_is_dropped() {
        let mut ia = Ipv4::new([1, 1, 1, 1]);
        let mut ib = Ipv4::new([2, 2, 2, 2]);
        let sa = ia
            .open(
                &Participants {
                    remote_ip: [2, 2, 2, 2],
                    ..Default::default()
                },
                17,
                OpenMode::Shared,
            )
            .unwrap();
        let sb = ib
            .open(
                &Participants {
                    remote_ip: [1, 1, 1, 1],
                    ..Default::default()
                },
                17,
                OpenMode::Shared,
            )
            .unwrap();
        let mut m = Message::with_headroom(b"x");
        ia.push(sa, &mut m);
        m.bytes_mut()[8] ^= 1; // TTL
        assert_eq!(
            ib.pop(sb, &mut m, &mut RxCtx::default()),
            Err(DropReason::BadChecksum)
        );
    }
}
