//! Keys: 32-byte X25519 private and public keys and pre-shared keys, written as base64.
//!
//! Contract. [`Key`] parses exactly 32 bytes of standard base64 (44 characters with one `=`
//! of padding, the form WireGuard users know) and prints the same form; [`Key::public`]
//! derives the X25519 public key of a private key (RFC 7748 §5, clamping included), the same
//! key snow computes from it; [`Key::generate`] draws a key from a caller-supplied
//! cryptographic generator (the driver seeds it from the operating system). No I/O here.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand_core::{CryptoRng, RngCore};

/// Bytes in every key.
pub const KEY_LEN: usize = 32;

/// A 32-byte key (private, public or pre-shared).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key(pub [u8; KEY_LEN]);

/// Why a string is not a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not valid base64.
    #[error(
        "not valid base64 (expected 44 characters such as the output of `mslink tunnel genkey`)"
    )]
    Base64,
    /// Decoded to the wrong number of bytes.
    #[error("decodes to {0} bytes; a key has 32")]
    Length(usize),
}

impl Key {
    /// Parses base64.
    pub fn from_base64(s: &str) -> Result<Key, KeyError> {
        let v = STANDARD.decode(s.trim()).map_err(|_| KeyError::Base64)?;
        let a: [u8; KEY_LEN] = v
            .as_slice()
            .try_into()
            .map_err(|_| KeyError::Length(v.len()))?;
        Ok(Key(a))
    }

    /// The base64 form.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }

    /// A fresh random key (a private key or a pre-shared key).
    pub fn generate<R: RngCore + CryptoRng>(rng: &mut R) -> Key {
        let mut k = [0u8; KEY_LEN];
        rng.fill_bytes(&mut k);
        Key(k)
    }

    /// The X25519 public key of this private key (RFC 7748 §5: X25519(k, 9)).
    pub fn public(&self) -> Key {
        let secret = x25519_dalek::StaticSecret::from(self.0);
        Key(*x25519_dalek::PublicKey::from(&secret).as_bytes())
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material into logs by accident.
        write!(f, "Key(..)")
    }
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Key::from_base64(&s).map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_base64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn rfc7748_test_vector() {
        // RFC 7748 §6.1: Alice's private key and public key.
        let hex = |s: &str| -> [u8; 32] {
            let v: Vec<u8> = (0..64)
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect();
            v.try_into().unwrap()
        };
        let private = Key(hex(
            "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
        ));
        let public = hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        assert_eq!(private.public().0, public);
    }

    #[test]
    fn base64_round_trip_and_errors() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let k = Key::generate(&mut rng);
        let s = k.to_base64();
        assert_eq!(s.len(), 44);
        assert_eq!(Key::from_base64(&s).unwrap(), k);
        assert_eq!(Key::from_base64("@@@"), Err(KeyError::Base64));
        assert_eq!(Key::from_base64("AAAA"), Err(KeyError::Length(3)));
        assert_eq!(format!("{k:?}"), "Key(..)");
    }
}
