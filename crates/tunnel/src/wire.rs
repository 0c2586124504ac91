//! The tunnel datagram: what one UDP payload between two tunnel ends looks like (docs/tunnel.md).
//!
//! Contract. Every datagram starts with a 4-byte preamble `kind, version, 0, 0`; the rest
//! depends on the kind. All integers are big-endian except the transport counter, which is
//! little-endian because it is also the AEAD nonce (as in WireGuard).
//!
//! ```text
//!  0       1         2..4      4..8            8..12          12..
//! +------+---------+---------+---------------+--------------+----------------------------+
//! | 1    | version | 0 0     | sender index  | Noise message 1 ... | mac1 (16) | mac2 (16)|
//! +------+---------+---------+---------------+--------------+----------------------------+
//! | 2    | version | 0 0     | sender index  | receiver idx | Noise message 2 (response) |
//! +------+---------+---------+---------------+--------------+----------------------------+
//! | 3    | version | 0 0     | receiver idx  | counter (8 B, LE) 8..16 | sealed frames 16.. |
//! +------+---------+---------+---------------+-------------------------+------------------+
//! | 4    | version | 0 0     | receiver idx  | nonce (24 B) 8..32      | cookie+tag 32..64  |
//! +------+---------+---------+---------------+-------------------------+------------------+
//! ```
//!
//! Kind 4 is the cookie reply of a responder under load ([`crate::cookie`]); an initiation's
//! two MACs are its last 32 bytes.
//!
//! [`Datagram`] is a zero-copy view over `AsRef<[u8]>` with the field byte ranges;
//! [`DatagramRepr`] is the parsed form with `parse`, `emit` and `buffer_len` (docs/architecture.md
//! rule 5). Parsing never panics; a kind or version this code does not know is kept
//! ([`Kind::Unknown`]) and the session layer decides what to do with it (it drops and counts
//! it as garbage). The transport payload is the ChaCha20-Poly1305 ciphertext of the link
//! frames plus its 16-byte tag; the 16 header bytes are the associated data.

use crate::cookie::{MAC_LEN, NONCE_LEN, SEALED_COOKIE_LEN};

/// The version this code emits.
pub const VERSION: u8 = 2;
/// Bytes of the preamble (kind, version, two reserved bytes).
pub const PREAMBLE_LEN: usize = 4;
/// Bytes of a transport header (preamble, receiver index, counter).
pub const TRANSPORT_HEADER_LEN: usize = 16;
/// Bytes of the Poly1305 tag that ends every sealed payload.
pub const TAG_LEN: usize = 16;

mod field {
    use core::ops::{Range, RangeFrom};
    pub const KIND: usize = 0;
    pub const VERSION: usize = 1;
    pub const RESERVED: Range<usize> = 2..4;
    pub const INDEX_A: Range<usize> = 4..8;
    pub const INIT_MSG: RangeFrom<usize> = 8..;
    pub const RESP_RECEIVER: Range<usize> = 8..12;
    pub const RESP_MSG: RangeFrom<usize> = 12..;
    pub const COUNTER: Range<usize> = 8..16;
    pub const SEALED: RangeFrom<usize> = 16..;
    pub const COOKIE_NONCE: Range<usize> = 8..32;
    pub const COOKIE_SEALED: Range<usize> = 32..64;
}

/// Bytes of a cookie reply (it has no variable part).
pub const COOKIE_REPLY_LEN: usize = 64;
/// Bytes of an initiation's two MACs, at its end.
pub const MACS_LEN: usize = 2 * MAC_LEN;

/// The kind byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// First handshake message (initiator to responder).
    Initiation,
    /// Second handshake message (responder to initiator).
    Response,
    /// Sealed link frames (or an empty keepalive).
    Transport,
    /// A responder under load asks for proof of the source address.
    CookieReply,
    /// A kind this version does not know, kept as received.
    Unknown(u8),
}

impl From<u8> for Kind {
    fn from(b: u8) -> Self {
        match b {
            1 => Kind::Initiation,
            2 => Kind::Response,
            3 => Kind::Transport,
            4 => Kind::CookieReply,
            x => Kind::Unknown(x),
        }
    }
}

impl Kind {
    /// The kind of the datagram `bytes` (the first byte), without checking the rest.
    pub fn of(bytes: &[u8]) -> Option<Kind> {
        bytes.first().map(|&b| Kind::from(b))
    }

    /// True for the handshake messages (initiation, response, cookie reply): the driver hands
    /// them to the session before the data of their batch, so that a batch full of data does
    /// not delay a handshake (docs/tunnel.md, *Load*).
    pub fn is_handshake(self) -> bool {
        matches!(self, Kind::Initiation | Kind::Response | Kind::CookieReply)
    }
}

impl From<Kind> for u8 {
    fn from(k: Kind) -> u8 {
        match k {
            Kind::Initiation => 1,
            Kind::Response => 2,
            Kind::Transport => 3,
            Kind::CookieReply => 4,
            Kind::Unknown(x) => x,
        }
    }
}

/// Why bytes are not a datagram of this version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Shorter than the fixed part of its kind.
    #[error("datagram of {len} bytes is shorter than the {need} its kind needs")]
    Truncated {
        /// Bytes received.
        len: usize,
        /// Bytes the fixed part needs.
        need: usize,
    },
    /// A kind or version this code does not speak.
    #[error("unknown kind {kind} or version {version}")]
    Unknown {
        /// The kind byte.
        kind: u8,
        /// The version byte.
        version: u8,
    },
}

/// A zero-copy view of a datagram.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Datagram<T> {
    /// Wraps bytes without checking them; accessors may panic on short input.
    pub const fn new_unchecked(buf: T) -> Self {
        Datagram { buf }
    }

    /// Wraps bytes after checking the fixed part of their kind is present and the kind and
    /// version are known.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let d = Datagram { buf };
        let b = d.buf.as_ref();
        if b.len() < PREAMBLE_LEN {
            return Err(WireError::Truncated {
                len: b.len(),
                need: PREAMBLE_LEN,
            });
        }
        let (kind, version) = (b[field::KIND], b[field::VERSION]);
        if version != VERSION {
            return Err(WireError::Unknown { kind, version });
        }
        let need = match Kind::from(kind) {
            Kind::Initiation => field::INIT_MSG.start + MACS_LEN,
            Kind::CookieReply => COOKIE_REPLY_LEN,
            Kind::Response => field::RESP_MSG.start,
            Kind::Transport => TRANSPORT_HEADER_LEN + TAG_LEN,
            Kind::Unknown(_) => return Err(WireError::Unknown { kind, version }),
        };
        if b.len() < need {
            return Err(WireError::Truncated { len: b.len(), need });
        }
        Ok(d)
    }

    /// The kind byte.
    pub fn kind(&self) -> Kind {
        Kind::from(self.buf.as_ref()[field::KIND])
    }
    /// The version byte.
    pub fn version(&self) -> u8 {
        self.buf.as_ref()[field::VERSION]
    }
    /// The reserved bytes (zero when sent by this version).
    pub fn reserved(&self) -> u16 {
        let b = &self.buf.as_ref()[field::RESERVED];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Initiation and response: the sender's index; transport: the receiver's index.
    pub fn index(&self) -> u32 {
        be32(&self.buf.as_ref()[field::INDEX_A])
    }
    /// Response: the index the initiator chose (the datagram's receiver).
    pub fn response_receiver(&self) -> u32 {
        be32(&self.buf.as_ref()[field::RESP_RECEIVER])
    }
    /// Transport: the sender's datagram counter, also the AEAD nonce.
    pub fn counter(&self) -> u64 {
        let b = &self.buf.as_ref()[field::COUNTER];
        u64::from_le_bytes(b.try_into().expect("8 bytes"))
    }
    /// Transport: the 16 header bytes (the AEAD's associated data).
    pub fn transport_header(&self) -> &[u8] {
        &self.buf.as_ref()[..TRANSPORT_HEADER_LEN]
    }
    /// Transport: ciphertext and tag.
    pub fn sealed(&self) -> &[u8] {
        &self.buf.as_ref()[field::SEALED]
    }
    /// Handshake: the Noise message.
    pub fn noise(&self) -> &[u8] {
        let b = self.buf.as_ref();
        match self.kind() {
            Kind::Response => &b[field::RESP_MSG],
            _ => &b[field::INIT_MSG.start..b.len() - MACS_LEN],
        }
    }
    /// Initiation: mac1 and mac2.
    pub fn macs(&self) -> &[u8] {
        let b = self.buf.as_ref();
        &b[b.len() - MACS_LEN..]
    }
    /// Cookie reply: the nonce.
    pub fn cookie_nonce(&self) -> &[u8] {
        &self.buf.as_ref()[field::COOKIE_NONCE]
    }
    /// Cookie reply: the sealed cookie and its tag.
    pub fn sealed_cookie(&self) -> &[u8] {
        &self.buf.as_ref()[field::COOKIE_SEALED]
    }
    /// The whole datagram.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().expect("4 bytes"))
}

/// The parsed form of a datagram (payloads borrowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatagramRepr<'a> {
    /// Handshake initiation.
    Initiation {
        /// Index the initiator chose for this session.
        sender: u32,
        /// Noise message 1.
        noise: &'a [u8],
        /// mac1 and mac2 ([`crate::cookie`]).
        macs: [u8; MACS_LEN],
    },
    /// Handshake response.
    Response {
        /// Index the responder chose.
        sender: u32,
        /// The initiator's index.
        receiver: u32,
        /// Noise message 2.
        noise: &'a [u8],
    },
    /// Sealed link frames.
    Transport {
        /// The receiver's session index.
        receiver: u32,
        /// Datagram counter (nonce).
        counter: u64,
        /// Ciphertext and tag.
        sealed: &'a [u8],
    },
    /// Cookie reply.
    CookieReply {
        /// The initiator's index (of the initiation answered).
        receiver: u32,
        /// XChaCha20 nonce.
        nonce: [u8; NONCE_LEN],
        /// The sealed cookie and its tag.
        sealed: [u8; SEALED_COOKIE_LEN],
    },
}

impl<'a> DatagramRepr<'a> {
    /// Parses a checked view.
    pub fn parse(d: &Datagram<&'a [u8]>) -> Result<Self, WireError> {
        let b: &'a [u8] = d.buf;
        Datagram::new_checked(b)?;
        Ok(match d.kind() {
            Kind::Initiation => DatagramRepr::Initiation {
                sender: d.index(),
                noise: &b[field::INIT_MSG.start..b.len() - MACS_LEN],
                macs: d.macs().try_into().expect("checked length"),
            },
            Kind::CookieReply => DatagramRepr::CookieReply {
                receiver: d.index(),
                nonce: d.cookie_nonce().try_into().expect("checked length"),
                sealed: d.sealed_cookie().try_into().expect("checked length"),
            },
            Kind::Response => DatagramRepr::Response {
                sender: d.index(),
                receiver: d.response_receiver(),
                noise: &b[field::RESP_MSG],
            },
            Kind::Transport => DatagramRepr::Transport {
                receiver: d.index(),
                counter: d.counter(),
                sealed: &b[field::SEALED],
            },
            Kind::Unknown(kind) => {
                return Err(WireError::Unknown {
                    kind,
                    version: d.version(),
                })
            }
        })
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        match self {
            DatagramRepr::Initiation { noise, .. } => {
                field::INIT_MSG.start + noise.len() + MACS_LEN
            }
            DatagramRepr::CookieReply { .. } => COOKIE_REPLY_LEN,
            DatagramRepr::Response { noise, .. } => field::RESP_MSG.start + noise.len(),
            DatagramRepr::Transport { sealed, .. } => TRANSPORT_HEADER_LEN + sealed.len(),
        }
    }

    /// Writes the datagram into `out[..buffer_len()]`.
    pub fn emit(&self, out: &mut [u8]) {
        let kind = match self {
            DatagramRepr::Initiation { .. } => Kind::Initiation,
            DatagramRepr::Response { .. } => Kind::Response,
            DatagramRepr::Transport { .. } => Kind::Transport,
            DatagramRepr::CookieReply { .. } => Kind::CookieReply,
        };
        out[field::KIND] = kind.into();
        out[field::VERSION] = VERSION;
        out[field::RESERVED].fill(0);
        match *self {
            DatagramRepr::Initiation {
                sender,
                noise,
                macs,
            } => {
                out[field::INDEX_A].copy_from_slice(&sender.to_be_bytes());
                let end = field::INIT_MSG.start + noise.len();
                out[field::INIT_MSG.start..end].copy_from_slice(noise);
                out[end..end + MACS_LEN].copy_from_slice(&macs);
            }
            DatagramRepr::CookieReply {
                receiver,
                nonce,
                sealed,
            } => {
                out[field::INDEX_A].copy_from_slice(&receiver.to_be_bytes());
                out[field::COOKIE_NONCE].copy_from_slice(&nonce);
                out[field::COOKIE_SEALED].copy_from_slice(&sealed);
            }
            DatagramRepr::Response {
                sender,
                receiver,
                noise,
            } => {
                out[field::INDEX_A].copy_from_slice(&sender.to_be_bytes());
                out[field::RESP_RECEIVER].copy_from_slice(&receiver.to_be_bytes());
                out[field::RESP_MSG][..noise.len()].copy_from_slice(noise);
            }
            DatagramRepr::Transport {
                receiver,
                counter,
                sealed,
            } => {
                emit_transport_header(receiver, counter, &mut out[..TRANSPORT_HEADER_LEN]);
                out[field::SEALED][..sealed.len()].copy_from_slice(sealed);
            }
        }
    }
}

/// Writes a transport header (the AEAD's associated data) into `out[..16]`.
pub fn emit_transport_header(receiver: u32, counter: u64, out: &mut [u8]) {
    out[field::KIND] = Kind::Transport.into();
    out[field::VERSION] = VERSION;
    out[field::RESERVED].fill(0);
    out[field::INDEX_A].copy_from_slice(&receiver.to_be_bytes());
    out[field::COUNTER].copy_from_slice(&counter.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn handshake_kinds_are_the_three_handshake_messages() {
        let first: Vec<u8> = (0..=255u8)
            .filter(|&b| Kind::of(&[b, 9, 9]).is_some_and(Kind::is_handshake))
            .collect();
        assert_eq!(first, [1, 2, 4]);
        assert_eq!(Kind::of(&[]), None);
    }

    #[test]
    fn transport_fixture() {
        // Written out by hand from the table in the module contract.
        let bytes = [
            3, 2, 0, 0, // kind 3, version 2
            0xde, 0xad, 0xbe, 0xef, // receiver index
            0x05, 0x04, 0x03, 0x02, 0x01, 0, 0, 0, // counter 0x0102030405, little-endian
            9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 7, // tag-sized payload + 1
        ];
        let d = Datagram::new_checked(&bytes[..]).unwrap();
        assert_eq!(d.kind(), Kind::Transport);
        assert_eq!(d.index(), 0xdead_beef);
        assert_eq!(d.counter(), 0x01_0203_0405);
        assert_eq!(d.sealed().len(), 17);
        let r = DatagramRepr::parse(&d).unwrap();
        let mut out = vec![0; r.buffer_len()];
        r.emit(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn handshake_fixtures() {
        let mut init = vec![1, 2, 0, 0, 0, 0, 0, 7, 0xaa, 0xbb];
        let macs: [u8; MACS_LEN] = std::array::from_fn(|i| i as u8);
        init.extend_from_slice(&macs);
        let d = Datagram::new_checked(&init[..]).unwrap();
        assert_eq!(d.noise(), &[0xaa, 0xbb]);
        let r = DatagramRepr::parse(&d).unwrap();
        assert_eq!(
            r,
            DatagramRepr::Initiation {
                sender: 7,
                noise: &[0xaa, 0xbb],
                macs,
            }
        );
        let mut out = vec![0; r.buffer_len()];
        r.emit(&mut out);
        assert_eq!(out, init);
        // Kind 4: receiver 7, nonce 1..=24, sealed cookie 100..132.
        let mut cookie = vec![4, 2, 0, 0, 0, 0, 0, 7];
        cookie.extend(1..=24u8);
        cookie.extend(100..132u8);
        let d = Datagram::new_checked(&cookie[..]).unwrap();
        let r = DatagramRepr::parse(&d).unwrap();
        assert_eq!(
            r,
            DatagramRepr::CookieReply {
                receiver: 7,
                nonce: std::array::from_fn(|i| i as u8 + 1),
                sealed: std::array::from_fn(|i| i as u8 + 100),
            }
        );
        let mut out = vec![0; r.buffer_len()];
        r.emit(&mut out);
        assert_eq!(out, cookie);
        assert_eq!(
            Datagram::new_checked(&cookie[..63]).unwrap_err(),
            WireError::Truncated { len: 63, need: 64 }
        );
        let resp = [2, 2, 0, 0, 0, 0, 0, 8, 0, 0, 0, 7, 0xcc];
        let d = Datagram::new_checked(&resp[..]).unwrap();
        assert_eq!(
            DatagramRepr::parse(&d).unwrap(),
            DatagramRepr::Response {
                sender: 8,
                receiver: 7,
                noise: &[0xcc]
            }
        );
    }

    #[test]
    fn short_and_unknown_are_refused_not_panics() {
        assert_eq!(
            Datagram::new_checked(&[3u8, 2, 0][..]).unwrap_err(),
            WireError::Truncated { len: 3, need: 4 }
        );
        assert_eq!(
            Datagram::new_checked(&[3u8; 31][..]).unwrap_err(),
            WireError::Unknown {
                kind: 3,
                version: 3
            }
        );
        let mut t = [0u8; 31];
        t[0] = 3;
        t[1] = 2;
        assert_eq!(
            Datagram::new_checked(&t[..]).unwrap_err(),
            WireError::Truncated { len: 31, need: 32 }
        );
        assert_eq!(Kind::from(200), Kind::Unknown(200));
        assert_eq!(u8::from(Kind::Unknown(200)), 200);
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(d) = Datagram::new_checked(&bytes[..]) {
                let r = DatagramRepr::parse(&d).unwrap();
                let mut out = vec![0; r.buffer_len()];
                r.emit(&mut out);
                // Only the reserved bytes may differ (emitted as zero); a cookie reply has a
                // fixed length and ignores bytes after it.
                if d.kind() == Kind::CookieReply {
                    prop_assert_eq!(out.len(), COOKIE_REPLY_LEN);
                } else {
                    prop_assert_eq!(out.len(), bytes.len());
                }
                prop_assert_eq!(&out[..2], &bytes[..2]);
                prop_assert_eq!(&out[4..], &bytes[4..out.len()]);
            }
        }
    }
}
