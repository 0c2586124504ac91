//! The Noise handshake that keys a tunnel session (snow), and the session keys it yields.
//!
//! Contract. Two modes, both one round trip, both giving fresh keys per session (so datagram
//! counters restarting at zero never reuse a nonce):
//!
//! * **keys**: `Noise_IK_25519_ChaChaPoly_BLAKE2s` — each end has an X25519 key pair and knows
//!   the peer's public key; the initiator's static key travels encrypted in message 1 and the
//!   responder accepts it only if it is the configured peer's.
//! * **pre-shared key**: `Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s` — ephemeral keys only,
//!   authenticated by a 32-byte secret both ends share (Noise spec §9).
//!
//! The prologue `mslink-tunnel v2` binds the datagram format version into the handshake hash.
//! Message 1 carries an 8-byte big-endian timestamp (the driver's `now`, which it anchors to the
//! wall clock) so a responder can refuse a replayed initiation, as WireGuard does with TAI64N,
//! then the sender's 8-byte *incarnation*; message 2 carries the responder's incarnation. An
//! incarnation is a random number an end draws when it starts: a peer whose incarnation
//! changed has restarted with new link state, and `crate::session` then starts its own link
//! state over, so the recovery services' sequence numbers agree again.
//! After message 2 both ends split the chaining key into two ChaCha20-Poly1305 keys (Noise §5.2
//! `Split()`): the first for initiator-to-responder datagrams, the second for the other way.
//! snow draws its ephemeral keys from a ChaCha20 generator seeded by the session core, so the
//! core stays deterministic under a fixed seed (tests) and uses OS entropy in the driver.

use rand_chacha::rand_core::SeedableRng;
use snow::params::{CipherChoice, DHChoice, HashChoice};
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::{Cipher, Dh, Hash, Random};
use snow::{Builder, HandshakeState};

use crate::keys::Key;

/// Noise pattern of the key-pair mode.
pub const IK_PATTERN: &str = "Noise_IK_25519_ChaChaPoly_BLAKE2s";
/// Noise pattern of the pre-shared-key mode.
pub const PSK_PATTERN: &str = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s";
/// Handshake prologue (binds the wire version).
pub const PROLOGUE: &[u8] = b"mslink-tunnel v2";
/// Bytes of the initiation payload's timestamp.
pub const STAMP_LEN: usize = 8;
/// Bytes of an incarnation.
pub const INCARNATION_LEN: usize = 8;
/// Largest Noise message either mode produces (IK message 1: 32 + 48 + 8 + 16).
pub const MAX_NOISE_LEN: usize = 160;

/// What authenticates the two ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credentials {
    /// Noise IK: our private key and the peer's public key.
    Keys {
        /// Our X25519 private key.
        private: Key,
        /// The peer's X25519 public key.
        peer_public: Key,
    },
    /// Noise NNpsk0: a secret both ends hold.
    Psk {
        /// The pre-shared key.
        psk: Key,
    },
}

/// Keys of one session, seen from one end.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SessionKeys {
    /// Key sealing what this end sends.
    pub send: [u8; 32],
    /// Key opening what this end receives.
    pub recv: [u8; 32],
}

impl std::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Key material stays out of logs and panic messages.
        write!(f, "SessionKeys(..)")
    }
}

/// A handshake step that did not authenticate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The Noise message did not decrypt or authenticate.
    #[error("handshake message failed authentication")]
    Forged,
    /// The initiator's static key is not the configured peer's.
    #[error("handshake from an unknown static key")]
    UnknownPeer,
    /// The payload is not a timestamp and an incarnation.
    #[error("handshake payload malformed")]
    Malformed,
}

/// Gives snow a ChaCha20 generator seeded by the caller and the default primitives otherwise.
struct SeededResolver {
    seed: [u8; 32],
}

impl CryptoResolver for SeededResolver {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        Some(Box::new(SeededRng(rand_chacha::ChaCha20Rng::from_seed(
            self.seed,
        ))))
    }
    fn resolve_dh(&self, choice: &DHChoice) -> Option<Box<dyn Dh>> {
        DefaultResolver.resolve_dh(choice)
    }
    fn resolve_hash(&self, choice: &HashChoice) -> Option<Box<dyn Hash>> {
        DefaultResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &CipherChoice) -> Option<Box<dyn Cipher>> {
        DefaultResolver.resolve_cipher(choice)
    }
}

struct SeededRng(rand_chacha::ChaCha20Rng);

impl rand_core::RngCore for SeededRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.0.try_fill_bytes(dest)
    }
}
impl rand_core::CryptoRng for SeededRng {}
impl Random for SeededRng {}

fn builder(creds: &Credentials, seed: [u8; 32]) -> Builder<'_> {
    let pattern = match creds {
        Credentials::Keys { .. } => IK_PATTERN,
        Credentials::Psk { .. } => PSK_PATTERN,
    };
    let params = pattern.parse().expect("pattern names are valid");
    let b = Builder::with_resolver(params, Box::new(SeededResolver { seed })).prologue(PROLOGUE);
    match creds {
        Credentials::Keys { private, .. } => b.local_private_key(&private.0),
        Credentials::Psk { psk } => b.psk(0, &psk.0),
    }
}

/// The initiator's half-done handshake.
pub struct Initiator {
    hs: HandshakeState,
}

impl Initiator {
    /// Starts a handshake and writes message 1 (with `stamp` and our `incarnation`) into
    /// `out`; returns its length.
    pub fn start(
        creds: &Credentials,
        seed: [u8; 32],
        stamp: u64,
        incarnation: u64,
        out: &mut [u8; MAX_NOISE_LEN],
    ) -> (Initiator, usize) {
        let mut b = builder(creds, seed);
        if let Credentials::Keys { peer_public, .. } = creds {
            b = b.remote_public_key(&peer_public.0);
        }
        let mut hs = b.build_initiator().expect("valid keys and pattern");
        let mut payload = [0u8; STAMP_LEN + INCARNATION_LEN];
        payload[..STAMP_LEN].copy_from_slice(&stamp.to_be_bytes());
        payload[STAMP_LEN..].copy_from_slice(&incarnation.to_be_bytes());
        let n = hs
            .write_message(&payload, out)
            .expect("buffer is large enough");
        (Initiator { hs }, n)
    }

    /// Reads message 2; on success the session keys (send = initiator to responder) and the
    /// responder's incarnation. A message that fails leaves the handshake as it was (snow restores
    /// its state), so a forged response cannot abort a genuine handshake.
    pub fn finish(&mut self, msg: &[u8]) -> Result<(SessionKeys, u64), HandshakeError> {
        let mut payload = [0u8; MAX_NOISE_LEN];
        let n = self
            .hs
            .read_message(msg, &mut payload)
            .map_err(|_| HandshakeError::Forged)?;
        let incarnation: [u8; INCARNATION_LEN] = payload[..n]
            .try_into()
            .map_err(|_| HandshakeError::Malformed)?;
        let (i2r, r2i) = self.hs.dangerously_get_raw_split();
        Ok((
            SessionKeys {
                send: i2r,
                recv: r2i,
            },
            u64::from_be_bytes(incarnation),
        ))
    }
}

/// What [`respond`] learned and wrote.
#[derive(Debug)]
pub struct Responded {
    /// The session keys (send = responder to initiator).
    pub keys: SessionKeys,
    /// The initiator's timestamp.
    pub stamp: u64,
    /// The initiator's incarnation.
    pub incarnation: u64,
    /// Length of message 2.
    pub len: usize,
}

/// Reads message 1 and writes message 2, carrying our `incarnation`, into `out`.
pub fn respond(
    creds: &Credentials,
    seed: [u8; 32],
    msg: &[u8],
    incarnation: u64,
    out: &mut [u8; MAX_NOISE_LEN],
) -> Result<Responded, HandshakeError> {
    let mut hs = builder(creds, seed)
        .build_responder()
        .expect("valid keys and pattern");
    let mut payload = [0u8; MAX_NOISE_LEN];
    let n = hs
        .read_message(msg, &mut payload)
        .map_err(|_| HandshakeError::Forged)?;
    if let Credentials::Keys { peer_public, .. } = creds {
        if hs.get_remote_static() != Some(&peer_public.0[..]) {
            return Err(HandshakeError::UnknownPeer);
        }
    }
    if n != STAMP_LEN + INCARNATION_LEN {
        return Err(HandshakeError::Malformed);
    }
    let stamp: [u8; STAMP_LEN] = payload[..STAMP_LEN].try_into().expect("length checked");
    let theirs: [u8; INCARNATION_LEN] = payload[STAMP_LEN..n].try_into().expect("length checked");
    let len = hs
        .write_message(&incarnation.to_be_bytes(), out)
        .map_err(|_| HandshakeError::Forged)?;
    let (i2r, r2i) = hs.dangerously_get_raw_split();
    Ok(Responded {
        keys: SessionKeys {
            send: r2i,
            recv: i2r,
        },
        stamp: u64::from_be_bytes(stamp),
        incarnation: u64::from_be_bytes(theirs),
        len,
    })
}

/// Two ends with key pairs `[1; 32]` and `[2; 32]` that know each other (unit tests).
#[cfg(test)]
pub(crate) fn test_pair() -> (Credentials, Credentials) {
    let (a, b) = (Key([1; 32]), Key([2; 32]));
    (
        Credentials::Keys {
            private: a,
            peer_public: b.public(),
        },
        Credentials::Keys {
            private: b,
            peer_public: a.public(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_pair as pair;

    fn run(
        ci: &Credentials,
        cr: &Credentials,
    ) -> Result<(SessionKeys, SessionKeys, u64), HandshakeError> {
        let mut m1 = [0u8; MAX_NOISE_LEN];
        let (mut init, n1) = Initiator::start(ci, [7; 32], 42, 0x1122, &mut m1);
        let mut m2 = [0u8; MAX_NOISE_LEN];
        let r = respond(cr, [8; 32], &m1[..n1], 0x3344, &mut m2)?;
        assert_eq!(r.incarnation, 0x1122);
        let (ki, theirs) = init.finish(&m2[..r.len])?;
        assert_eq!(theirs, 0x3344);
        Ok((ki, r.keys, r.stamp))
    }

    #[test]
    fn both_modes_agree_on_mirrored_keys() {
        let (a, b) = pair();
        let psk = Credentials::Psk { psk: Key([9; 32]) };
        for (ci, cr) in [(a, b), (b, a), (psk, psk)] {
            let (ki, kr, stamp) = run(&ci, &cr).unwrap();
            assert_eq!(stamp, 42);
            assert_eq!(ki.send, kr.recv);
            assert_eq!(ki.recv, kr.send);
            assert_ne!(ki.send, ki.recv);
        }
    }

    #[test]
    fn wrong_keys_fail() {
        let (a, b) = pair();
        // A third party with its own key, pretending to be a peer of b.
        let mallory = Credentials::Keys {
            private: Key([3; 32]),
            peer_public: Key([2; 32]).public(),
        };
        assert_eq!(run(&mallory, &b).unwrap_err(), HandshakeError::UnknownPeer);
        // a believes b has another public key: b cannot read message 1.
        let confused = Credentials::Keys {
            private: Key([1; 32]),
            peer_public: Key([4; 32]).public(),
        };
        assert_eq!(run(&confused, &b).unwrap_err(), HandshakeError::Forged);
        let _ = a;
        let p1 = Credentials::Psk { psk: Key([9; 32]) };
        let p2 = Credentials::Psk { psk: Key([10; 32]) };
        assert_eq!(run(&p1, &p2).unwrap_err(), HandshakeError::Forged);
    }

    #[test]
    fn fresh_seeds_give_fresh_session_keys() {
        let psk = Credentials::Psk { psk: Key([9; 32]) };
        let mut m1 = [0u8; MAX_NOISE_LEN];
        let (_, n1) = Initiator::start(&psk, [1; 32], 1, 0, &mut m1);
        let mut m1b = [0u8; MAX_NOISE_LEN];
        let (_, n1b) = Initiator::start(&psk, [2; 32], 1, 0, &mut m1b);
        assert_ne!(m1[..n1], m1b[..n1b]);
    }
}
