//! The content check of the throughput test (`mslink bench --verify`): the sender fills each
//! message with a pattern seeded by the run's seed and the message's number, the receiver
//! recomputes it and compares.
//!
//! Contract: [`fill`] and [`check`] agree for the same `(seed, msg)`; [`check`] returns the
//! offset of the first byte that differs (a lost, duplicated, reordered, truncated-and-padded
//! or corrupted message differs at some byte: distinct messages' patterns differ in every
//! 8-byte word). The pattern is one 64-bit word per 8 bytes, `base + i·K` for word `i` with `base`
//! a hash of `(seed, msg)`: one add and one store per word, so filling and checking run at
//! memory speed.

/// Odd multiplier (2^64 / golden ratio): consecutive words and messages differ in many bits.
const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// The first word of message `msg` (splitmix64 finaliser of the seed and number).
fn base(seed: u64, msg: u64) -> u64 {
    let mut z = seed ^ msg.wrapping_mul(K).wrapping_add(K);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Writes message `msg`'s pattern into `buf`.
pub(super) fn fill(buf: &mut [u8], seed: u64, msg: u64) {
    let b = base(seed, msg);
    let mut chunks = buf.chunks_exact_mut(8);
    let mut w = b;
    for c in &mut chunks {
        c.copy_from_slice(&w.to_le_bytes());
        w = w.wrapping_add(K);
    }
    let tail = chunks.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&w.to_le_bytes()[..n]);
}

/// The offset of the first byte of `buf` that differs from message `msg`'s pattern, if any.
pub(super) fn check(buf: &[u8], seed: u64, msg: u64) -> Option<usize> {
    let b = base(seed, msg);
    let mut w = b;
    let mut chunks = buf.chunks_exact(8);
    for (i, c) in (&mut chunks).enumerate() {
        let got = u64::from_le_bytes(c.try_into().expect("8-byte chunk"));
        if got != w {
            let d = (got ^ w).trailing_zeros() as usize / 8;
            return Some(i * 8 + d);
        }
        w = w.wrapping_add(K);
    }
    let tail = chunks.remainder();
    let want = w.to_le_bytes();
    let at = buf.len() - tail.len();
    tail.iter()
        .zip(want)
        .position(|(&g, w)| g != w)
        .map(|k| at + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_buffer_checks_clean_at_every_length() {
        for len in [0, 1, 7, 8, 9, 64, 1000, 65_536 + 3] {
            let mut b = vec![0u8; len];
            fill(&mut b, 42, 7);
            assert_eq!(check(&b, 42, 7), None, "len {len}");
        }
    }

    #[test]
    fn check_names_the_first_differing_byte() {
        let mut b = vec![0u8; 4099];
        fill(&mut b, 1, 2);
        for at in [0, 5, 8, 4096, 4098] {
            let mut c = b.clone();
            c[at] ^= 0x10;
            assert_eq!(check(&c, 1, 2), Some(at), "flip at {at}");
        }
    }

    #[test]
    fn another_message_or_seed_does_not_pass() {
        for len in [1, 8, 64, 4096] {
            let mut b = vec![0u8; len];
            fill(&mut b, 9, 100);
            // A neighbouring message (reordered or duplicated) or another run's data.
            assert!(check(&b, 9, 101).is_some(), "len {len}");
            assert!(check(&b, 9, 99).is_some(), "len {len}");
            assert!(check(&b, 10, 100).is_some(), "len {len}");
            // All zeros (a receive that never got its payload).
            assert!(check(&vec![0u8; len], 9, 100).is_some(), "len {len}");
        }
    }
}
