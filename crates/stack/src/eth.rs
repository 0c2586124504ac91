//! Ethernet II (IEEE 802.3 type field) and its DAA extension (002 §4.2.1).
//!
//! Contract: plain frames are `dst(6) src(6) type(2)`, demultiplexed on (source station, type)
//! as the x-kernel's Ethernet protocol does. DAA frames ("ETHDAA") carry
//! `dst(6) src(6) 0x88B5(2) app_id(4) deadline_priority(4) inner_type(2)`: 0x88B5 is the IEEE
//! "local experimental" ethertype, so ordinary equipment forwards them; the application id and
//! the deadline/priority field are the two 4-byte fields 002 adds, and the inner type names the
//! protocol stack above (002's "protocol identifier"). A DAA demux is one map lookup on
//! (inner type, application id): the single demultiplexing point of the whole stack. Frames are
//! padded to the 60-byte minimum on send; the layer above trims the padding on receive. The
//! header layouts themselves are [`mslink_wire::eth`]'s views and reprs.

use std::collections::HashMap;

use crate::msg::Message;
use crate::proto::{
    Demuxed, DropReason, OpenError, OpenMode, Participants, Protocol, RxCtx, SessionId,
};
use mslink_wire::eth::{DaaFrame, DaaRepr, EthFrame, EthRepr};

pub use mslink_wire::eth::{ETHERTYPE_DAA, ETHERTYPE_IPV4, ETH_DAA_HDR_LEN, ETH_HDR_LEN};
/// Minimum Ethernet frame length without the FCS.
pub const ETH_MIN_FRAME: usize = 60;
/// The broadcast station address.
pub const BROADCAST: [u8; 6] = [0xff; 6];

#[derive(Clone, Debug)]
struct EthSession {
    remote: [u8; 6],
    ty: u16,
    local_app: u32,
    remote_app: u32,
    priority: u32,
    users: u32,
    frames: u64,
    bytes: u64,
}

/// The Ethernet protocol object, plain or DAA-extended.
#[derive(Debug)]
pub struct Ethernet {
    local: [u8; 6],
    daa: bool,
    sessions: Vec<EthSession>,
    /// Plain demux map: (source station, type) -> session.
    by_peer: HashMap<([u8; 6], u16), SessionId>,
    /// DAA demux map: (protocol id = inner type, application id) -> session at the bottom of a path.
    by_app: HashMap<(u16, u32), SessionId>,
}

impl Ethernet {
    /// An Ethernet protocol for station `local`; `daa` selects the extended header.
    pub fn new(local: [u8; 6], daa: bool) -> Self {
        Ethernet {
            local,
            daa,
            sessions: Vec::new(),
            by_peer: HashMap::new(),
            by_app: HashMap::new(),
        }
    }

    /// Header length in this mode.
    pub fn hdr_len(&self) -> usize {
        if self.daa {
            ETH_DAA_HDR_LEN
        } else {
            ETH_HDR_LEN
        }
    }

    fn for_us(&self, dst: &[u8]) -> bool {
        dst == self.local || dst == BROADCAST
    }
}

impl Protocol for Ethernet {
    fn name(&self) -> &'static str {
        if self.daa {
            "ethdaa"
        } else {
            "eth"
        }
    }

    fn open(&mut self, p: &Participants, hlp: u32, mode: OpenMode) -> Result<SessionId, OpenError> {
        let ty = hlp as u16;
        if !self.daa && mode == OpenMode::Shared {
            if let Some(&s) = self.by_peer.get(&(p.remote_mac, ty)) {
                self.sessions[s.0 as usize].users += 1;
                return Ok(s);
            }
        }
        if self.daa && self.by_app.contains_key(&(ty, p.local_app)) {
            return Err(OpenError::KeyInUse);
        }
        let id = SessionId(self.sessions.len() as u32);
        self.sessions.push(EthSession {
            remote: p.remote_mac,
            ty,
            local_app: p.local_app,
            remote_app: p.remote_app,
            priority: p.priority,
            users: 1,
            frames: 0,
            bytes: 0,
        });
        if self.daa {
            self.by_app.insert((ty, p.local_app), id);
        } else if mode == OpenMode::Shared {
            self.by_peer.insert((p.remote_mac, ty), id);
        }
        Ok(id)
    }

    fn close(&mut self, s: SessionId) {
        let Some(sess) = self.sessions.get_mut(s.0 as usize) else {
            return;
        };
        sess.users = sess.users.saturating_sub(1);
        if sess.users == 0 {
            let (r, t, a) = (sess.remote, sess.ty, sess.local_app);
            if self.daa {
                self.by_app.remove(&(t, a));
            } else if self.by_peer.get(&(r, t)) == Some(&s) {
                self.by_peer.remove(&(r, t));
            }
        }
    }

    fn demux(&self, hdr: &[u8]) -> Result<Demuxed, DropReason> {
        let session = if self.daa {
            let f = DaaFrame::new_checked(hdr)?;
            let e = f.eth();
            if !self.for_us(e.dst_bytes()) {
                return Err(DropReason::NotForUs);
            }
            if e.ethertype() != ETHERTYPE_DAA {
                return Err(DropReason::BadHeader);
            }
            // 002 §4.2: the one demultiplexing point of the DAA stack.
            *self
                .by_app
                .get(&(f.inner_type(), f.app_id()))
                .ok_or(DropReason::NoSession)?
        } else {
            let f = EthFrame::new_checked(hdr)?;
            if !self.for_us(f.dst_bytes()) {
                return Err(DropReason::NotForUs);
            }
            *self
                .by_peer
                .get(&(f.src(), f.ethertype()))
                .ok_or(DropReason::NoSession)?
        };
        Ok(Demuxed {
            session,
            hdr_len: self.hdr_len(),
            addrs: None,
        })
    }

    fn pop(&mut self, s: SessionId, msg: &mut Message, rx: &mut RxCtx) -> Result<(), DropReason> {
        let n = self.hdr_len();
        let daa = self.daa;
        let sess = self
            .sessions
            .get_mut(s.0 as usize)
            .ok_or(DropReason::NoSession)?;
        let h = msg.pop(n).ok_or(DropReason::Truncated)?;
        if daa {
            let f = DaaFrame::new_checked(h)?;
            if f.inner_type() != sess.ty {
                return Err(DropReason::BadHeader);
            }
            rx.priority = f.priority();
        } else if EthFrame::new_checked(h)?.ethertype() != sess.ty {
            return Err(DropReason::BadHeader);
        }
        sess.frames += 1;
        sess.bytes += msg.len() as u64;
        Ok(())
    }

    fn push(&mut self, s: SessionId, msg: &mut Message) {
        let n = self.hdr_len();
        let local = self.local;
        let sess = &mut self.sessions[s.0 as usize];
        // Pad to the minimum frame length (the receiver's IP layer trims it off).
        let min_payload = ETH_MIN_FRAME.saturating_sub(n);
        if msg.len() < min_payload {
            msg.pad(min_payload - msg.len());
        }
        let h = msg.push(n);
        if self.daa {
            DaaRepr {
                dst: sess.remote,
                src: local,
                ethertype: ETHERTYPE_DAA,
                app_id: sess.remote_app,
                priority: sess.priority,
                inner_type: sess.ty,
            }
            .emit(&mut DaaFrame::new_unchecked(h));
        } else {
            EthRepr {
                dst: sess.remote,
                src: local,
                ethertype: sess.ty,
            }
            .emit(&mut EthFrame::new_unchecked(h));
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

    const A: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const B: [u8; 6] = [2, 0, 0, 0, 0, 2];

    #[test]
    fn plain_header_layout_and_demux() {
        let mut a = Ethernet::new(A, false);
        let mut b = Ethernet::new(B, false);
        let pa = Participants {
            remote_mac: B,
            ..Default::default()
        };
        let pb = Participants {
            remote_mac: A,
            ..Default::default()
        };
        let sa = a.open(&pa, 0x0800, OpenMode::Shared).unwrap();
        let sb = b.open(&pb, 0x0800, OpenMode::Shared).unwrap();
        let mut m = Message::with_headroom(b"hi");
        a.push(sa, &mut m);
        assert_eq!(m.len(), ETH_MIN_FRAME);
        assert_eq!(&m.bytes()[0..6], &B);
        assert_eq!(&m.bytes()[6..12], &A);
        assert_eq!(&m.bytes()[12..14], &[0x08, 0x00]);
        let d = b.demux(m.bytes()).unwrap();
        assert_eq!(
            d,
            Demuxed {
                session: sb,
                hdr_len: 14,
                addrs: None
            }
        );
        // Not for us: a.demux sees dst = B.
        assert_eq!(a.demux(m.bytes()), Err(DropReason::NotForUs));
        let mut rx = RxCtx::default();
        b.pop(sb, &mut m, &mut rx).unwrap();
        assert_eq!(&m.bytes()[..2], b"hi");
    }

    #[test]
    fn daa_header_carries_app_and_priority() {
        let mut a = Ethernet::new(A, true);
        let mut b = Ethernet::new(B, true);
        let pa = Participants {
            remote_mac: B,
            local_app: 7,
            remote_app: 9,
            priority: 5,
            ..Default::default()
        };
        let pb = Participants {
            remote_mac: A,
            local_app: 9,
            remote_app: 7,
            ..Default::default()
        };
        let sa = a.open(&pa, 0x0800, OpenMode::Path).unwrap();
        let sb = b.open(&pb, 0x0800, OpenMode::Path).unwrap();
        assert_eq!(
            b.open(&pb, 0x0800, OpenMode::Path),
            Err(OpenError::KeyInUse)
        );
        let mut m = Message::with_headroom(&[1u8; 100]);
        a.push(sa, &mut m);
        let f = m.bytes();
        assert_eq!(&f[12..14], &[0x88, 0xB5]);
        assert_eq!(&f[14..18], &9u32.to_be_bytes());
        assert_eq!(&f[18..22], &5u32.to_be_bytes());
        assert_eq!(&f[22..24], &[0x08, 0x00]);
        assert_eq!(b.demux(f).unwrap().session, sb);
        let mut rx = RxCtx::default();
        b.pop(sb, &mut m, &mut rx).unwrap();
        assert_eq!(rx.priority, 5);
        assert_eq!(m.len(), 100);
        b.close(sb);
        let mut m2 = Message::with_headroom(&[1u8; 10]);
        a.push(sa, &mut m2);
        assert_eq!(b.demux(m2.bytes()), Err(DropReason::NoSession));
    }
}
