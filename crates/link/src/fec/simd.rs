//! The one place in this crate with `unsafe` code: a GF(2^8) "scaled row sum" kernel in x86-64
//! SIMD, used by the Reed-Solomon codec for encoding, the clean-codeword check, syndromes, the
//! Chien search and Forney's `Omega`.
//!
//! What it computes. [`Simd::row_sum`] returns `out[j] = XOR_r coefs[r] * rows[r][j]` for
//! `j < out.len()`: each coefficient scales one row of a caller's table (all products in the
//! field of [`super::gf256`], polynomial 0x11d) and the scaled rows are added. Reed-Solomon
//! parity is such a sum (message byte times the parity of its position), so are syndromes
//! (residue byte times a row of powers of alpha) and polynomial values at every position
//! (coefficient times a row of powers of alpha). `row_sum_scalar` (tests) is the portable
//! definition, the oracle the kernels are checked against.
//!
//! How. GFNI's `gf2p8mulb` multiplies modulo 0x11b, not our 0x11d, so it cannot be used.
//! Multiplication by a constant `c` is GF(2)-linear in the other factor, so it is an 8x8 bit
//! matrix, and `gf2p8affineqb` applies an 8x8 bit matrix (one per 64-bit lane) to every byte
//! of a vector (Intel 64 and IA-32 Architectures Software Developer's Manual, Vol. 2,
//! "GF2P8AFFINEQB — Galois Field Affine Transformation", whose pseudocode fixes the layout:
//! output bit `i` is the parity of `x AND A.byte[7 - i]`). Using it to multiply in an arbitrary
//! field was proposed for erasure coding in GF-Complete's issue 14, "New region multiply
//! technique using GFNI Affine instruction" (jerasure.org, 2018). Per coefficient the kernel
//! broadcasts the matrix of "multiply by `coefs[r]`" (one lookup in a 2 KiB table), applies it
//! to the row, 32 bytes per instruction, and XORs the result into accumulators. No step waits
//! for the previous coefficient except through that XOR, so the CPU overlaps the rows. With
//! AVX-512, 32-byte rows stored back to back go two per 64-byte register: the low four lanes
//! get the first coefficient's matrix, the high four the second's (a masked broadcast).
//!
//! CPU features: AVX2 and GFNI (and AVX-512F for the paired kernel), checked at run time by
//! [`Simd::detect`], the only way to get a [`Simd`] value. On other architectures, or CPUs
//! without them, `detect` returns `None` and the codec uses its scalar kernels.
//!
//! Safety argument. (1) The `#[target_feature]` functions are only called through a [`Simd`]
//! value whose [`Isa`] names features that `is_x86_feature_detected!` confirmed on this CPU.
//! (2) Every load and store goes through a pointer into a slice whose length was checked
//! (`assert!`, or `chunks_exact`) to cover all the bytes touched: `out` is `32 * W` bytes and
//! each row is a `chunks_exact(stride)` chunk with `stride >= 32 * W` (for the paired kernel,
//! 128-byte chunks of four rows and 32-byte chunks of the rest). Unaligned load and store
//! instructions are used, so no alignment is assumed.
#![allow(unsafe_code)]

use super::gf256;

/// Widest row the kernel handles: eight 32-byte vectors (a full GF(2^8) codeword).
pub(crate) const MAX_WIDTH: usize = 256;

/// Which instruction set the host has; empty (so [`Simd`] cannot exist) off x86-64.
#[derive(Clone, Copy, Debug)]
enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx2Gfni,
    /// AVX2, GFNI and AVX-512F: 32-byte rows go two to a 64-byte register.
    #[cfg(target_arch = "x86_64")]
    Avx512Gfni,
}

/// Proof that the SIMD kernel can run on this CPU (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Simd(Isa);

impl Simd {
    /// The kernel if this CPU has AVX2 and GFNI, else `None`.
    pub(crate) fn detect() -> Option<Simd> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("gfni") {
                if std::is_x86_feature_detected!("avx512f") {
                    return Some(Simd(Isa::Avx512Gfni));
                }
                return Some(Simd(Isa::Avx2Gfni));
            }
        }
        None
    }

    /// `out[j] = XOR_r coefs[r] * rows[r * stride + j]` for `j < out.len()`.
    ///
    /// # Panics
    /// If `out.len()` is not a multiple of 32 in `32..=MAX_WIDTH`, `stride < out.len()`, or
    /// `rows` holds fewer than `coefs.len()` rows of `stride` bytes (caller bugs: the codec
    /// sizes its tables when it is built).
    pub(crate) fn row_sum(&self, coefs: &[u8], rows: &[u8], stride: usize, out: &mut [u8]) {
        let w = out.len();
        assert!(w.is_multiple_of(32) && (32..=MAX_WIDTH).contains(&w) && stride >= w);
        assert!(rows.len() >= coefs.len() * stride);
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Gfni if w == 32 && stride == 32 => {
                // SAFETY: `Isa::Avx512Gfni` is only made by `detect` after AVX-512F and GFNI
                // were detected; the lengths the kernel relies on were asserted above.
                unsafe { x86::row_sum_pairs(coefs, &rows[..coefs.len() * 32], out) }
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Gfni | Isa::Avx512Gfni => {
                let rows = &rows[..coefs.len() * stride];
                // SAFETY: `detect` makes either variant only after detecting AVX2 and GFNI;
                // the lengths the kernel relies on were asserted above.
                unsafe {
                    match w / 32 {
                        1 => x86::row_sum::<1>(coefs, rows, stride, out),
                        2 => x86::row_sum::<2>(coefs, rows, stride, out),
                        3 => x86::row_sum::<3>(coefs, rows, stride, out),
                        4 => x86::row_sum::<4>(coefs, rows, stride, out),
                        5 => x86::row_sum::<5>(coefs, rows, stride, out),
                        6 => x86::row_sum::<6>(coefs, rows, stride, out),
                        7 => x86::row_sum::<7>(coefs, rows, stride, out),
                        _ => x86::row_sum::<8>(coefs, rows, stride, out),
                    }
                }
            }
        }
    }
}

/// The portable definition of [`Simd::row_sum`] (any `out.len() <= stride`): the test oracle.
#[cfg(test)]
pub(crate) fn row_sum_scalar(coefs: &[u8], rows: &[u8], stride: usize, out: &mut [u8]) {
    out.fill(0);
    for (&c, row) in coefs.iter().zip(rows.chunks_exact(stride)) {
        for (o, &v) in out.iter_mut().zip(row) {
            *o ^= gf256::mul(c, v);
        }
    }
}

/// The 8x8 bit matrix of "multiply by `c`" in the layout `gf2p8affineqb` reads: output bit
/// `i` is the parity of `x AND byte[7 - i]` of the 64-bit lane.
const fn mul_matrix(c: u8) -> u64 {
    // Column j is c * x^j; row i collects bit i of every column.
    let mut cols = [0u8; 8];
    let mut v = c;
    let mut j = 0;
    while j < 8 {
        cols[j] = v;
        let carry = v & 0x80 != 0;
        v <<= 1;
        if carry {
            v ^= (gf256::PRIM & 0xff) as u8;
        }
        j += 1;
    }
    let mut m = 0u64;
    let mut i = 0;
    while i < 8 {
        let mut row = 0u8;
        let mut j = 0;
        while j < 8 {
            row |= ((cols[j] >> i) & 1) << j;
            j += 1;
        }
        m |= (row as u64) << (8 * (7 - i));
        i += 1;
    }
    m
}

const fn build_matrices() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = mul_matrix(c as u8);
        c += 1;
    }
    t
}

/// `MUL_MATRIX[c]` multiplies a byte by `c` under `gf2p8affineqb`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
static MUL_MATRIX: [u64; 256] = build_matrices();

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::MUL_MATRIX;
    use core::arch::x86_64::{
        __m256i, _mm256_gf2p8affine_epi64_epi8, _mm256_loadu_si256, _mm256_set1_epi64x,
        _mm256_setzero_si256, _mm256_storeu_si256, _mm256_xor_si256, _mm512_castsi512_si256,
        _mm512_extracti64x4_epi64, _mm512_gf2p8affine_epi64_epi8, _mm512_loadu_si512,
        _mm512_mask_set1_epi64, _mm512_set1_epi64, _mm512_setzero_si512, _mm512_xor_si512,
    };

    /// [`super::Simd::row_sum`] for 32-byte rows 32 bytes apart: each 64-byte register holds
    /// two consecutive rows, scaled by two coefficients at once (the low four lanes get the
    /// first matrix, the high four the second); the halves are added at the end.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and GFNI; `out.len() == 32` and `rows.len() >=
    /// 32 * coefs.len()`.
    #[target_feature(enable = "avx512f,gfni")]
    pub(super) unsafe fn row_sum_pairs(coefs: &[u8], rows: &[u8], out: &mut [u8]) {
        assert!(out.len() == 32 && rows.len() >= 32 * coefs.len());
        let mut acc = [_mm512_setzero_si512(); 2];
        let mut quads = coefs.chunks_exact(4).zip(rows.chunks_exact(128));
        for (c, rr) in &mut quads {
            for (h, a) in acc.iter_mut().enumerate() {
                let m = _mm512_mask_set1_epi64(
                    _mm512_set1_epi64(MUL_MATRIX[c[2 * h] as usize] as i64),
                    0xf0,
                    MUL_MATRIX[c[2 * h + 1] as usize] as i64,
                );
                // SAFETY: `rr` has 128 bytes, so bytes 64h..64h+64 exist; no alignment needed.
                let v = unsafe { _mm512_loadu_si512(rr.as_ptr().add(64 * h).cast()) };
                *a = _mm512_xor_si512(*a, _mm512_gf2p8affine_epi64_epi8::<0>(v, m));
            }
        }
        let sum = _mm512_xor_si512(acc[0], acc[1]);
        let mut half = _mm256_xor_si256(
            _mm512_castsi512_si256(sum),
            _mm512_extracti64x4_epi64::<1>(sum),
        );
        // The last coefs.len() % 4 rows, one 32-byte register each.
        let done = coefs.len() - coefs.len() % 4;
        for (&c, row) in coefs[done..].iter().zip(rows[32 * done..].chunks_exact(32)) {
            let m = _mm256_set1_epi64x(MUL_MATRIX[c as usize] as i64);
            // SAFETY: `row` has 32 bytes; no alignment needed.
            let v = unsafe { _mm256_loadu_si256(row.as_ptr().cast()) };
            half = _mm256_xor_si256(half, _mm256_gf2p8affine_epi64_epi8::<0>(v, m));
        }
        // SAFETY: `out` has 32 bytes (asserted above); storeu needs no alignment.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), half) };
    }

    /// Adds `c * row[..32 * W]` into `acc`.
    #[inline]
    #[target_feature(enable = "avx2,gfni")]
    fn add_scaled<const W: usize>(acc: &mut [__m256i; W], c: u8, row: &[u8]) {
        assert!(row.len() >= 32 * W);
        let m = _mm256_set1_epi64x(MUL_MATRIX[c as usize] as i64);
        for (w, a) in acc.iter_mut().enumerate() {
            // SAFETY: bytes 32w..32w+32 of `row` exist (asserted above); loadu has no
            // alignment requirement.
            let v = unsafe { _mm256_loadu_si256(row.as_ptr().add(32 * w).cast()) };
            *a = _mm256_xor_si256(*a, _mm256_gf2p8affine_epi64_epi8::<0>(v, m));
        }
    }

    /// [`super::Simd::row_sum`] with `out.len() == 32 * W`.
    ///
    /// # Safety
    /// The CPU must support AVX2 and GFNI.
    #[target_feature(enable = "avx2,gfni")]
    pub(super) unsafe fn row_sum<const W: usize>(
        coefs: &[u8],
        rows: &[u8],
        stride: usize,
        out: &mut [u8],
    ) {
        assert!(out.len() == 32 * W);
        // Two sets of accumulators, for even and odd rows, keep the XOR chains short.
        let mut even = [_mm256_setzero_si256(); W];
        let mut odd = [_mm256_setzero_si256(); W];
        let mut pairs = coefs.chunks_exact(2).zip(rows.chunks_exact(2 * stride));
        for (c, rr) in &mut pairs {
            add_scaled(&mut even, c[0], &rr[..stride]);
            add_scaled(&mut odd, c[1], &rr[stride..]);
        }
        if coefs.len() % 2 == 1 {
            let last = coefs.len() - 1;
            add_scaled(&mut even, coefs[last], &rows[last * stride..]);
        }
        for (w, (e, o)) in even.iter().zip(&odd).enumerate() {
            // SAFETY: `out` has 32 * W bytes (asserted above); storeu needs no alignment.
            unsafe {
                _mm256_storeu_si256(
                    out.as_mut_ptr().add(32 * w).cast(),
                    _mm256_xor_si256(*e, *o),
                )
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matrices_multiply_like_the_tables() {
        // Apply each matrix in software exactly as the SDM defines gf2p8affineqb.
        for c in 0..=255u8 {
            let m = MUL_MATRIX[c as usize];
            for x in 0..=255u8 {
                let mut y = 0u8;
                for i in 0..8 {
                    let row = (m >> (8 * (7 - i))) as u8;
                    y |= (((row & x).count_ones() & 1) as u8) << i;
                }
                assert_eq!(y, gf256::mul(c, x), "{c} * {x}");
            }
        }
    }

    proptest! {
        #[test]
        fn simd_row_sum_equals_scalar(
            // One vector and no padding (32-byte rows back to back) has a kernel of its own.
            vecs in prop_oneof![Just(1usize), 1usize..=8],
            pad in prop_oneof![Just(0usize), 0usize..40],
            coefs in proptest::collection::vec(any::<u8>(), 0..70),
            seed in any::<u64>(),
        ) {
            let Some(simd) = Simd::detect() else { return Ok(()) };
            let width = 32 * vecs;
            let stride = width + pad;
            let mut x = seed | 1;
            let rows: Vec<u8> = (0..coefs.len() * stride)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let mut want = vec![0u8; width];
            row_sum_scalar(&coefs, &rows, stride, &mut want);
            // Every kernel this CPU can run: an AVX-512 host also runs the AVX2 one.
            let also = match simd.0 {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx512Gfni => Some(Simd(Isa::Avx2Gfni)),
                // Off x86-64 `Isa` has no variants and this arm is unreachable.
                #[allow(unreachable_patterns)]
                _ => None,
            };
            for k in std::iter::once(simd).chain(also) {
                let mut got = vec![0xa5u8; width];
                k.row_sum(&coefs, &rows, stride, &mut got);
                prop_assert_eq!(&got, &want, "{:?}", k);
            }
        }
    }
}
