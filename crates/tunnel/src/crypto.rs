//! Sealing and opening transport datagrams of one session with ChaCha20-Poly1305 (RFC 8439).
//!
//! Contract. A [`Keypair`] holds one session's two keys, the send counter and the receive
//! replay window. [`Keypair::seal`] turns `buf = header space (16 B) + plaintext` into a
//! transport datagram in place: it writes the header (receiver index, counter), encrypts the
//! plaintext with nonce `0u32 || counter (LE)` (RFC 8439 §2.8, the WireGuard nonce layout) and
//! the header as associated data, and appends the 16-byte tag. Each counter is used once per
//! key: the counter only grows and a session's keys are fresh from its handshake.
//! [`Keypair::open`] checks the replay window first (cheap), then authenticates and decrypts in
//! place, and only then records the counter (RFC 6479 §2), so a forged datagram changes nothing.

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit, Nonce, Tag};

use crate::handshake::SessionKeys;
use crate::replay::ReplayWindow;
use crate::wire::{emit_transport_header, TAG_LEN, TRANSPORT_HEADER_LEN};
use mslink_link::Instant;

/// Why a transport datagram was not opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Counter already seen or older than the window.
    Replayed,
    /// Authentication failed.
    Forged,
}

/// One session's keys and counters.
pub struct Keypair {
    /// Index the peer puts in datagrams to us (we chose it).
    pub local_index: u32,
    /// Index we put in datagrams to the peer (it chose it).
    pub remote_index: u32,
    /// When the handshake completed.
    pub created: Instant,
    /// Whether we initiated the handshake.
    pub initiator: bool,
    send: ChaCha20Poly1305,
    recv: ChaCha20Poly1305,
    send_counter: u64,
    replay: ReplayWindow,
}

fn nonce(counter: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&counter.to_le_bytes());
    n.into()
}

impl Keypair {
    /// A keypair from handshake output.
    pub fn new(
        keys: &SessionKeys,
        local_index: u32,
        remote_index: u32,
        created: Instant,
        initiator: bool,
    ) -> Self {
        Keypair {
            local_index,
            remote_index,
            created,
            initiator,
            send: ChaCha20Poly1305::new(&keys.send.into()),
            recv: ChaCha20Poly1305::new(&keys.recv.into()),
            send_counter: 0,
            replay: ReplayWindow::default(),
        }
    }

    /// Datagrams sealed so far (the next counter).
    pub fn sent(&self) -> u64 {
        self.send_counter
    }

    /// Seals `buf[16..]` in place into a datagram (see the module contract).
    pub fn seal(&mut self, buf: &mut Vec<u8>) {
        debug_assert!(buf.len() >= TRANSPORT_HEADER_LEN);
        let counter = self.send_counter;
        self.send_counter += 1;
        emit_transport_header(self.remote_index, counter, &mut buf[..TRANSPORT_HEADER_LEN]);
        let (header, body) = buf.split_at_mut(TRANSPORT_HEADER_LEN);
        let tag = self
            .send
            .encrypt_in_place_detached(&nonce(counter), header, body)
            .expect("payload below the AEAD's 256 GiB limit");
        buf.extend_from_slice(&tag);
    }

    /// Opens a transport datagram whose header was already parsed: `header` is its first 16
    /// bytes, `sealed` the rest (ciphertext and tag), decrypted in place. Returns the
    /// plaintext length (the first bytes of `sealed`).
    pub fn open(
        &mut self,
        counter: u64,
        header: &[u8],
        sealed: &mut [u8],
    ) -> Result<usize, OpenError> {
        if !self.replay.check(counter) {
            return Err(OpenError::Replayed);
        }
        let n = sealed.len() - TAG_LEN;
        let (body, tag) = sealed.split_at_mut(n);
        let tag = Tag::clone_from_slice(tag);
        self.recv
            .decrypt_in_place_detached(&nonce(counter), header, body, &tag)
            .map_err(|_| OpenError::Forged)?;
        // Recorded only now that the datagram is authentic (RFC 6479 §2).
        self.replay.update(counter);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Datagram;
    use proptest::prelude::*;

    fn pair() -> (Keypair, Keypair) {
        let a = SessionKeys {
            send: [1; 32],
            recv: [2; 32],
        };
        let b = SessionKeys {
            send: [2; 32],
            recv: [1; 32],
        };
        (
            Keypair::new(&a, 10, 20, Instant::ZERO, true),
            Keypair::new(&b, 20, 10, Instant::ZERO, false),
        )
    }

    fn seal(k: &mut Keypair, plain: &[u8]) -> Vec<u8> {
        let mut buf = vec![0; TRANSPORT_HEADER_LEN];
        buf.extend_from_slice(plain);
        k.seal(&mut buf);
        buf
    }

    fn open(k: &mut Keypair, dgram: &[u8]) -> Result<Vec<u8>, OpenError> {
        let mut d = dgram.to_vec();
        let v = Datagram::new_checked(dgram).expect("well formed");
        let counter = v.counter();
        let (h, s) = d.split_at_mut(TRANSPORT_HEADER_LEN);
        let n = k.open(counter, h, s)?;
        Ok(s[..n].to_vec())
    }

    #[test]
    fn rfc8439_aead_vector() {
        // RFC 8439 §2.8.2: the AEAD test vector, run through the same crate calls as seal().
        let hex = |s: &str| -> Vec<u8> {
            let s: String = s.split_whitespace().collect();
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        let key = hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
        let nonce_bytes = hex("070000004041424344454647");
        let aad = hex("50515253c0c1c2c3c4c5c6c7");
        let mut text = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".to_vec();
        let cipher = ChaCha20Poly1305::new_from_slice(&key).unwrap();
        let tag = cipher
            .encrypt_in_place_detached(Nonce::from_slice(&nonce_bytes), &aad, &mut text)
            .unwrap();
        assert_eq!(&text[..16], &hex("d31a8d34648e60db7b86afbc53ef7ec2")[..]);
        assert_eq!(tag.as_slice(), &hex("1ae10b594f09e26a7e902ecbd0600691")[..]);
    }

    #[test]
    fn round_trip_and_replay() {
        let (mut a, mut b) = pair();
        let d0 = seal(&mut a, b"hello");
        let d1 = seal(&mut a, b"");
        assert_eq!(d0.len(), 16 + 5 + 16);
        assert_eq!(open(&mut b, &d1).unwrap(), b"");
        assert_eq!(open(&mut b, &d0).unwrap(), b"hello");
        assert_eq!(open(&mut b, &d0), Err(OpenError::Replayed));
        // The other direction uses the other key.
        let d = seal(&mut b, b"back");
        assert_eq!(open(&mut a, &d).unwrap(), b"back");
        // A datagram sealed for one direction does not open in the other.
        let d = seal(&mut a, b"x");
        assert_eq!(open(&mut a, &d), Err(OpenError::Forged));
    }

    proptest! {
        #[test]
        fn seal_open_round_trip(plain in proptest::collection::vec(any::<u8>(), 0..1500), skip in 0u64..100) {
            let (mut a, mut b) = pair();
            for _ in 0..skip { seal(&mut a, b""); }
            let d = seal(&mut a, &plain);
            prop_assert_eq!(open(&mut b, &d).unwrap(), plain);
        }

        #[test]
        fn every_bit_flip_is_rejected(plain in proptest::collection::vec(any::<u8>(), 0..64)) {
            let (mut a, mut b) = pair();
            let d = seal(&mut a, &plain);
            for bit in 0..d.len() * 8 {
                let mut f = d.clone();
                f[bit / 8] ^= 1 << (bit % 8);
                // Only flips that still parse as a transport datagram reach open(); the
                // header is authenticated too, so each one fails (replay check or tag).
                if let Ok(v) = Datagram::new_checked(&f[..]) {
                    if v.kind() == crate::wire::Kind::Transport {
                        let counter = v.counter();
                        let (h, s) = f.split_at_mut(TRANSPORT_HEADER_LEN);
                        prop_assert!(b.open(counter, h, s).is_err(), "bit {} accepted", bit);
                    }
                }
            }
            // The untouched datagram still opens: failures changed no state.
            prop_assert_eq!(open(&mut b, &d).unwrap(), plain);
        }
    }
}
