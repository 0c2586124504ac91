//! XOR parity (004 §III.D): the parity of a block is the bytewise XOR of its frames.
//!
//! Contract: [`xor_into`] folds `src` into `dst` (`dst[i] ^= src[i]` over `src.len()` bytes,
//! `dst` at least as long). Frames of a block may differ in length; shorter frames count as
//! zero-padded, so a lost frame is rebuilt by XOR-ing the parity with every other frame.

/// `dst[..src.len()] ^= src`.
///
/// # Panics
/// If `dst` is shorter than `src`; callers grow the parity buffer first.
#[inline]
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    let dst = &mut dst[..src.len()];
    // Eight bytes at a time: the compiler turns this into vector XORs.
    let mut d = dst.chunks_exact_mut(8);
    let mut s = src.chunks_exact(8);
    for (a, b) in (&mut d).zip(&mut s) {
        let v = u64::from_ne_bytes((&*a).try_into().unwrap())
            ^ u64::from_ne_bytes(b.try_into().unwrap());
        a.copy_from_slice(&v.to_ne_bytes());
    }
    for (a, b) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *a ^= b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_bytewise_xor(a in proptest::collection::vec(any::<u8>(), 0..100), b in proptest::collection::vec(any::<u8>(), 0..100)) {
            let n = a.len().min(b.len());
            let mut d = a.clone();
            xor_into(&mut d, &b[..n]);
            for i in 0..a.len() {
                let want = if i < n { a[i] ^ b[i] } else { a[i] };
                prop_assert_eq!(d[i], want);
            }
        }
    }
}
