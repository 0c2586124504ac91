//! Handshake MACs and cookie replies: what keeps a flood of spoofed initiations from costing the
//! responder Diffie-Hellman work or shutting out the real peer (WireGuard's design, Donenfeld,
//! "WireGuard: Next Generation Kernel Network Tunnel", NDSS 2017, §5.4.4 and §5.4.7; this is
//! our own code).
//!
//! Contract. Every initiation ends with two 16-byte MACs (keyed BLAKE2s, 16-byte output):
//!
//! * `mac1 = MAC(HASH("mac1----" ‖ R), initiation up to mac1)`, where `R` is the responder's
//!   identity: its X25519 public key (key pairs) or the pre-shared key. It costs one BLAKE2s to
//!   check, so an initiation from anyone who does not know `R` is refused before any
//!   Diffie-Hellman operation;
//! * `mac2 = MAC(cookie, initiation up to mac2)`, or zeros when the initiator holds no fresh
//!   cookie.
//!
//! A responder *under load* ([`crate::ratelimit`]: its budget of initiations per second is
//! spent) opens only initiations whose mac2 proves that the sender received a cookie at its
//! source address; to the others it sends a cookie reply and does nothing else. The cookie is
//! `MAC(secret, source IP ‖ source port)` with a random secret replaced every
//! [`COOKIE_SECRET_AGE`]: nothing to store per sender. The reply carries it sealed with
//! XChaCha20-Poly1305 under `HASH("cookie--" ‖ R)`, a random 24-byte nonce and the
//! initiation's mac1 as associated data, so only the sender of that initiation (who knows `R`)
//! can use it, and a reply cannot be replayed for another initiation. The initiator keeps the
//! cookie for [`COOKIE_LIFETIME`] and puts mac2 on its next initiations.
//!
//! No clock and no random source here: `now` and the secret's random bytes come in.

use std::net::{IpAddr, SocketAddr};

use blake2::digest::consts::U16;
use blake2::digest::{FixedOutput, KeyInit, Mac};
use blake2::{Blake2s256, Blake2sMac, Digest};
use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use mslink_link::{Duration, Instant};

use crate::handshake::Credentials;

/// Bytes of mac1 and of mac2.
pub const MAC_LEN: usize = 16;
/// Bytes of a cookie.
pub const COOKIE_LEN: usize = 16;
/// Bytes of the cookie reply's nonce.
pub const NONCE_LEN: usize = 24;
/// Bytes of a sealed cookie (cookie and Poly1305 tag).
pub const SEALED_COOKIE_LEN: usize = COOKIE_LEN + 16;
/// How long a responder uses one cookie secret (WireGuard's 120 s).
pub const COOKIE_SECRET_AGE: Duration = Duration::from_secs(120);
/// How long an initiator uses a cookie it received: the secret's age less 5 s for latency.
pub const COOKIE_LIFETIME: Duration = Duration::from_secs(115);

type Mac16 = Blake2sMac<U16>;

fn hash(label: &[u8; 8], identity: &[u8; 32]) -> [u8; 32] {
    let mut h = Blake2s256::new();
    Digest::update(&mut h, label);
    Digest::update(&mut h, identity);
    h.finalize().into()
}

/// Keyed BLAKE2s with a 16-byte output (`key` at most 32 bytes).
fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; MAC_LEN] {
    let mut m = <Mac16 as KeyInit>::new_from_slice(key).expect("keys of at most 32 bytes");
    for p in parts {
        Mac::update(&mut m, p);
    }
    m.finalize_fixed().into()
}

/// The responder's identity `R` as the initiator sees it (the peer's) or as the responder does
/// (its own).
fn identity(creds: &Credentials, ours: bool) -> [u8; 32] {
    match creds {
        Credentials::Keys {
            private,
            peer_public,
        } => {
            if ours {
                private.public().0
            } else {
                peer_public.0
            }
        }
        Credentials::Psk { psk } => psk.0,
    }
}

/// The two keys derived from one identity.
#[derive(Clone, Copy)]
struct Keys {
    mac1: [u8; 32],
    cookie: [u8; 32],
}

impl Keys {
    fn of(identity: &[u8; 32]) -> Keys {
        Keys {
            mac1: hash(b"mac1----", identity),
            cookie: hash(b"cookie--", identity),
        }
    }
}

fn cookie_aead(key: &[u8; 32]) -> XChaCha20Poly1305 {
    <XChaCha20Poly1305 as chacha20poly1305::KeyInit>::new(key.into())
}

fn address_bytes(from: SocketAddr) -> ([u8; 18], usize) {
    let mut b = [0u8; 18];
    let n = match from.ip() {
        IpAddr::V4(a) => {
            b[..4].copy_from_slice(&a.octets());
            4
        }
        IpAddr::V6(a) => {
            b[..16].copy_from_slice(&a.octets());
            16
        }
    };
    b[n..n + 2].copy_from_slice(&from.port().to_be_bytes());
    (b, n + 2)
}

/// What the MACs of an initiation say (see [`Responder::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacCheck {
    /// mac1 is wrong: the sender does not know our identity.
    Bad,
    /// mac1 is right, mac2 is not a cookie of the source address.
    Mac1,
    /// Both right: the sender received a cookie at its address.
    Mac2,
}

/// The responder's half: checks MACs, makes cookie replies.
pub struct Responder {
    keys: Keys,
    secret: [u8; 32],
    secret_born: Option<Instant>,
}

impl Responder {
    /// The responder side for these credentials.
    pub fn new(creds: &Credentials) -> Responder {
        Responder {
            keys: Keys::of(&identity(creds, true)),
            secret: [0; 32],
            secret_born: None,
        }
    }

    /// Whether the secret must be replaced before use at `now` (the caller then passes fresh
    /// random bytes to [`Responder::rotate`]).
    pub fn needs_secret(&self, now: Instant) -> bool {
        self.secret_born
            .is_none_or(|t| now.saturating_since(t) >= COOKIE_SECRET_AGE)
    }

    /// Installs a new cookie secret at `now`.
    pub fn rotate(&mut self, now: Instant, secret: [u8; 32]) {
        self.secret = secret;
        self.secret_born = Some(now);
    }

    fn cookie(&self, from: SocketAddr) -> [u8; COOKIE_LEN] {
        let (a, n) = address_bytes(from);
        mac(&self.secret, &[&a[..n]])
    }

    /// Checks the MACs at the end of `initiation` (the whole datagram, MACs included), sent
    /// from `from`. mac2 is checked only with a current secret.
    pub fn check(&self, now: Instant, initiation: &[u8], from: SocketAddr) -> MacCheck {
        let Some(n) = initiation.len().checked_sub(2 * MAC_LEN) else {
            return MacCheck::Bad;
        };
        let (body, macs) = initiation.split_at(n);
        if !ct_eq(&mac(&self.keys.mac1, &[body]), &macs[..MAC_LEN]) {
            return MacCheck::Bad;
        }
        if self.needs_secret(now) {
            return MacCheck::Mac1;
        }
        let want = mac(&self.cookie(from), &[&initiation[..n + MAC_LEN]]);
        if ct_eq(&want, &macs[MAC_LEN..]) {
            MacCheck::Mac2
        } else {
            MacCheck::Mac1
        }
    }

    /// Seals the cookie for `from` as an answer to `initiation` (its mac1 is the associated
    /// data) with the random `nonce`. Needs a current secret (see [`Responder::needs_secret`]).
    pub fn seal_cookie(
        &self,
        initiation: &[u8],
        from: SocketAddr,
        nonce: [u8; NONCE_LEN],
    ) -> [u8; SEALED_COOKIE_LEN] {
        let n = initiation.len() - 2 * MAC_LEN;
        let mac1 = &initiation[n..n + MAC_LEN];
        let mut out = [0u8; SEALED_COOKIE_LEN];
        out[..COOKIE_LEN].copy_from_slice(&self.cookie(from));
        let (text, tag_out) = out.split_at_mut(COOKIE_LEN);
        let tag = cookie_aead(&self.keys.cookie)
            .encrypt_in_place_detached(XNonce::from_slice(&nonce), mac1, text)
            .expect("16 bytes always encrypt");
        tag_out.copy_from_slice(&tag);
        out
    }
}

/// The initiator's half: writes the MACs, keeps the cookie.
pub struct Initiator {
    keys: Keys,
    last_mac1: Option<[u8; MAC_LEN]>,
    cookie: Option<([u8; COOKIE_LEN], Instant)>,
}

/// Why a cookie reply was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CookieError {
    /// We sent no initiation it could answer.
    Unexpected,
    /// It did not open: forged, or for another initiation.
    Forged,
}

impl Initiator {
    /// The initiator side for these credentials.
    pub fn new(creds: &Credentials) -> Initiator {
        Initiator {
            keys: Keys::of(&identity(creds, false)),
            last_mac1: None,
            cookie: None,
        }
    }

    /// Whether a cookie received less than [`COOKIE_LIFETIME`] ago is held.
    pub fn has_cookie(&self, now: Instant) -> bool {
        self.cookie
            .is_some_and(|(_, t)| now.saturating_since(t) < COOKIE_LIFETIME)
    }

    /// Writes mac1 and mac2 into the last 32 bytes of `initiation` (the rest is written).
    pub fn stamp(&mut self, now: Instant, initiation: &mut [u8]) {
        let n = initiation.len() - 2 * MAC_LEN;
        let mac1 = mac(&self.keys.mac1, &[&initiation[..n]]);
        initiation[n..n + MAC_LEN].copy_from_slice(&mac1);
        self.last_mac1 = Some(mac1);
        let mac2 = match self.cookie {
            Some((c, _)) if self.has_cookie(now) => mac(&c, &[&initiation[..n + MAC_LEN]]),
            _ => [0; MAC_LEN],
        };
        initiation[n + MAC_LEN..].copy_from_slice(&mac2);
    }

    /// Opens a cookie reply's `nonce` and `sealed` cookie; on success keeps the cookie from
    /// `now`.
    pub fn take_cookie(
        &mut self,
        now: Instant,
        nonce: &[u8],
        sealed: &[u8],
    ) -> Result<(), CookieError> {
        let mac1 = self.last_mac1.ok_or(CookieError::Unexpected)?;
        if nonce.len() != NONCE_LEN || sealed.len() != SEALED_COOKIE_LEN {
            return Err(CookieError::Forged);
        }
        let mut c = [0u8; COOKIE_LEN];
        c.copy_from_slice(&sealed[..COOKIE_LEN]);
        cookie_aead(&self.keys.cookie)
            .decrypt_in_place_detached(
                XNonce::from_slice(nonce),
                &mac1,
                &mut c,
                sealed[COOKIE_LEN..].into(),
            )
            .map_err(|_| CookieError::Forged)?;
        self.cookie = Some((c, now));
        Ok(())
    }
}

/// Constant-time equality of two MACs.
fn ct_eq(a: &[u8; MAC_LEN], b: &[u8]) -> bool {
    b.len() == MAC_LEN && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Key;

    use crate::handshake::test_pair as pair;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_mac_depends_on_key_and_message_not_on_how_the_message_is_split() {
        let k: Vec<u8> = (0..32).collect();
        assert_eq!(mac(&k, &[b"abc"]), mac(&k, &[b"a", b"bc"]));
        assert_ne!(mac(&k, &[b"abc"]), mac(&k[..31], &[b"abc"]));
        assert_ne!(mac(&k, &[b"abc"]), mac(&k, &[b"abd"]));
        // A 16-byte output is its own BLAKE2s parameter, not a truncated 32-byte one.
        let mut full =
            <Blake2sMac<blake2::digest::consts::U32> as KeyInit>::new_from_slice(&k).unwrap();
        Mac::update(&mut full, b"abc");
        let full: [u8; 32] = full.finalize_fixed().into();
        assert_ne!(&full[..16], &mac(&k, &[b"abc"])[..]);
        // Keyed BLAKE2s-256 of the empty message under key 00..1f: the first entry of the
        // BLAKE2 reference known-answer tests (blake2s-kat.txt).
        let mut kat =
            <Blake2sMac<blake2::digest::consts::U32> as KeyInit>::new_from_slice(&k).unwrap();
        Mac::update(&mut kat, b"");
        let kat: [u8; 32] = kat.finalize_fixed().into();
        assert_eq!(
            kat,
            [
                0x48, 0xa8, 0x99, 0x7d, 0xa4, 0x07, 0x87, 0x6b, 0x3d, 0x79, 0xc0, 0xd9, 0x23, 0x25,
                0xad, 0x3b, 0x89, 0xcb, 0xb7, 0x54, 0xd8, 0x6a, 0xb7, 0x1a, 0xee, 0x04, 0x7a, 0xd3,
                0x45, 0xfd, 0x2c, 0x49
            ]
        );
    }

    #[test]
    fn mac1_is_checked_with_the_responders_identity_in_both_modes() {
        let (a, b) = pair();
        let psk = Credentials::Psk { psk: Key([9; 32]) };
        let now = Instant::from_secs(1);
        for (ci, cr) in [(a, b), (b, a), (psk, psk)] {
            let mut init = Initiator::new(&ci);
            let resp = Responder::new(&cr);
            let mut d = vec![7u8; 100];
            init.stamp(now, &mut d);
            assert_eq!(resp.check(now, &d, addr("192.0.2.1:5")), MacCheck::Mac1);
            // One flipped bit anywhere before the MACs, or in mac1, and it is refused.
            for i in 0..100 - MAC_LEN {
                let mut e = d.clone();
                e[i] ^= 1;
                assert_eq!(resp.check(now, &e, addr("192.0.2.1:5")), MacCheck::Bad);
            }
        }
        // The wrong identity: a's own key is not b's identity.
        let mut init = Initiator::new(&a);
        let mut d = vec![7u8; 100];
        init.stamp(now, &mut d);
        assert_eq!(
            Responder::new(&a).check(now, &d, addr("192.0.2.1:5")),
            MacCheck::Bad
        );
        assert_eq!(
            Responder::new(&b).check(now, &d[..20], addr("192.0.2.1:5")),
            MacCheck::Bad
        );
    }

    #[test]
    fn a_cookie_proves_the_source_address_and_only_that() {
        let (a, b) = pair();
        let now = Instant::from_secs(10);
        let me = addr("192.0.2.1:5000");
        let mut init = Initiator::new(&a);
        let mut resp = Responder::new(&b);
        assert!(resp.needs_secret(now));
        resp.rotate(now, [3; 32]);
        let mut d = vec![1u8; 120];
        init.stamp(now, &mut d);
        assert_eq!(resp.check(now, &d, me), MacCheck::Mac1);
        let sealed = resp.seal_cookie(&d, me, [5; NONCE_LEN]);
        // A reply for another initiation (other mac1) does not open.
        let mut other = Initiator::new(&a);
        let mut d2 = vec![2u8; 120];
        other.stamp(now, &mut d2);
        assert_eq!(
            other.take_cookie(now, &[5; NONCE_LEN], &sealed),
            Err(CookieError::Forged)
        );
        assert_eq!(
            Initiator::new(&a).take_cookie(now, &[5; NONCE_LEN], &sealed),
            Err(CookieError::Unexpected)
        );
        init.take_cookie(now, &[5; NONCE_LEN], &sealed).unwrap();
        assert!(init.has_cookie(now));
        let mut d3 = vec![4u8; 120];
        init.stamp(now, &mut d3);
        assert_eq!(resp.check(now, &d3, me), MacCheck::Mac2);
        // From another address or port, the same bytes prove nothing.
        assert_eq!(resp.check(now, &d3, addr("192.0.2.1:5001")), MacCheck::Mac1);
        assert_eq!(
            resp.check(now, &d3, addr("[2001:db8::1]:5000")),
            MacCheck::Mac1
        );
        // A new secret invalidates old cookies; an old cookie is no longer used.
        let later = now + COOKIE_SECRET_AGE;
        assert!(resp.needs_secret(later));
        resp.rotate(later, [4; 32]);
        assert_eq!(resp.check(later, &d3, me), MacCheck::Mac1);
        assert!(!init.has_cookie(now + COOKIE_LIFETIME));
        let mut d4 = vec![4u8; 120];
        init.stamp(now + COOKIE_LIFETIME, &mut d4);
        assert_eq!(&d4[120 - MAC_LEN..], &[0; MAC_LEN]);
    }
}
