//! The split-table ("nibble") GF(2^8) kernels of [`super::Simd`] for x86-64 CPUs without
//! GFNI: AVX2 (32-byte vectors) and SSSE3 (16-byte vectors), both built on `pshufb`.
//!
//! Contract: the same sums as the GFNI kernel (`out[j] = XOR_r coefs[r] * rows[r][j]`),
//! reachable only through a [`super::Simd`] whose ISA was detected on this CPU; each function's
//! `# Safety` section names the features it needs, and every load and store goes through a
//! slice whose length was checked (see the safety argument of `simd.rs`).
//!
//! The technique is the one of Plank, Greenan and Miller, "Screaming Fast Galois Field
//! Arithmetic Using Intel SIMD Instructions" (FAST 2013), also used by Intel's ISA-L:
//! multiplication by a constant `c` is linear over GF(2), so `c * x = c * (x & 15) ^
//! c * (x & 0xf0)`, and each half is a lookup in a 16-entry table, which `pshufb` performs
//! on every byte of a vector at once. [`super::NIBBLE`] holds the two tables of every `c`
//! (`[c * 0, ..., c * 15]` then `[c * 0x00, c * 0x10, ..., c * 0xf0]`).
//!
//! Two row layouts:
//! * plain rows (any table, e.g. the powers of alpha the decoder scales): each byte is split
//!   into its nibbles in the kernel (one shift and two masks per vector);
//! * split rows ([`super::RowTable`], the codec's parity rows, built once per code): every
//!   16-byte chunk of a row is stored as 32 bytes, its low nibbles then its high nibbles. The
//!   AVX2 kernel then loads the 32-byte table pair of `c` as one register (low table in the
//!   low 128-bit lane, high table in the high lane, since `vpshufb` looks up within each lane)
//!   and one `vpshufb` gives both halves of the products of 16 bytes; the lanes are added at
//!   the end. No shift or mask is left in the loop, which is what makes the AVX2 encoder
//!   reach about the GFNI one's speed (docs/PERFORMANCE.md).
//!
//! Rows are consumed in pairs and their products added before they reach the accumulators, so
//! the only chain between rows is one XOR per pair.
#![allow(unsafe_code)]

use super::{rows_fit, NIBBLE};
use core::arch::x86_64::{
    __m128i, __m256i, _mm256_and_si256, _mm256_broadcastsi128_si256, _mm256_castsi256_si128,
    _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_set1_epi8, _mm256_setzero_si256,
    _mm256_shuffle_epi8, _mm256_srli_epi16, _mm256_storeu_si256, _mm256_xor_si256, _mm_and_si128,
    _mm_loadu_si128, _mm_set1_epi8, _mm_setzero_si128, _mm_shuffle_epi8, _mm_srli_epi16,
    _mm_storeu_si128, _mm_xor_si128,
};

// ---------------------------------------------------------------------------------------------
// AVX2
// ---------------------------------------------------------------------------------------------

/// The low and high tables of `c`, each broadcast to both 128-bit lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn tables256(c: u8) -> (__m256i, __m256i) {
    let t = &NIBBLE.0[c as usize];
    // SAFETY: `t` is 32 bytes, so both 16-byte loads are in bounds; loadu needs no alignment.
    unsafe {
        (
            _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().cast())),
            _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().add(16).cast())),
        )
    }
}

/// The pair [low table | high table] of `c` in one register (for split rows).
#[inline]
#[target_feature(enable = "avx2")]
fn table_pair256(c: u8) -> __m256i {
    // SAFETY: the entry is 32 bytes; loadu needs no alignment.
    unsafe { _mm256_loadu_si256(NIBBLE.0[c as usize].as_ptr().cast()) }
}

/// `c * x` for the 32 bytes `x` at `p`, given `c`'s tables and the nibble mask.
///
/// # Safety
/// The CPU must support AVX2; `p` must point to 32 readable bytes (no alignment needed).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn mul256_at(p: *const u8, (lo, hi): (__m256i, __m256i), mask: __m256i) -> __m256i {
    // SAFETY: the caller guarantees 32 readable bytes at `p`; loadu needs no alignment.
    let v = unsafe { _mm256_loadu_si256(p.cast()) };
    let l = _mm256_shuffle_epi8(lo, _mm256_and_si256(v, mask));
    let h = _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16::<4>(v), mask));
    _mm256_xor_si256(l, h)
}

/// `vpshufb` of the table pair `t` with the 32 split bytes at `p`.
///
/// # Safety
/// The CPU must support AVX2; `p` must point to 32 readable bytes (no alignment needed).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn shuffle256_at(t: __m256i, p: *const u8) -> __m256i {
    // SAFETY: the caller guarantees 32 readable bytes at `p`; loadu needs no alignment.
    _mm256_shuffle_epi8(t, unsafe { _mm256_loadu_si256(p.cast()) })
}

/// [`super::Simd::row_sum`] on plain rows with `out.len() == 32 * W`.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn row_sum_avx2<const W: usize>(
    coefs: &[u8],
    rows: &[u8],
    stride: usize,
    out: &mut [u8],
) {
    let n = coefs.len();
    assert!(out.len() == 32 * W && rows_fit(rows, n, stride, 32 * W));
    let row = |r: usize| rows.as_ptr().wrapping_add(r * stride);
    let mask = _mm256_set1_epi8(0x0f);
    let mut acc = [_mm256_setzero_si256(); W];
    let pairs = coefs.chunks_exact(2);
    let last = pairs.remainder().first().copied();
    for (p, c) in pairs.enumerate() {
        let (t0, t1) = (tables256(c[0]), tables256(c[1]));
        let (a, b) = (row(2 * p), row(2 * p + 1));
        for (w, x) in acc.iter_mut().enumerate() {
            // SAFETY: rows 2p and 2p + 1 are below n, so their bytes 32w..32w+32 (w < W) lie
            // inside `rows` (asserted above).
            let (pa, pb) = unsafe {
                (
                    mul256_at(a.add(32 * w), t0, mask),
                    mul256_at(b.add(32 * w), t1, mask),
                )
            };
            *x = _mm256_xor_si256(*x, _mm256_xor_si256(pa, pb));
        }
    }
    if let Some(c) = last {
        let (t, a) = (tables256(c), row(n - 1));
        for (w, x) in acc.iter_mut().enumerate() {
            // SAFETY: as above, for row n - 1.
            *x = _mm256_xor_si256(*x, unsafe { mul256_at(a.add(32 * w), t, mask) });
        }
    }
    for (w, x) in acc.iter().enumerate() {
        // SAFETY: `out` has 32 * W bytes (asserted above); storeu needs no alignment.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(32 * w).cast(), *x) };
    }
}

/// [`super::RowTable::row_sum`] on split rows for `16 * V` output bytes: `rows` holds, every
/// `stride` bytes, `V` chunks of 32 bytes (16 low nibbles, then the 16 high nibbles).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn split_row_sum_avx2<const V: usize>(
    coefs: &[u8],
    rows: &[u8],
    stride: usize,
    out: &mut [u8],
) {
    let n = coefs.len();
    assert!(out.len() == 16 * V && rows_fit(rows, n, stride, 32 * V));
    let row = |r: usize| rows.as_ptr().wrapping_add(r * stride);
    // Accumulator v holds, in its low lane, the products of the low nibbles of chunk v and
    // in its high lane those of the high nibbles.
    let mut acc = [_mm256_setzero_si256(); V];
    // Four rows per step (measured faster than two: fewer instructions per row).
    let quads = coefs.chunks_exact(4);
    let rest = quads.remainder();
    for (q, c) in quads.enumerate() {
        let t = [0, 1, 2, 3].map(|i| table_pair256(c[i]));
        let r = [0, 1, 2, 3].map(|i| row(4 * q + i));
        for (v, x) in acc.iter_mut().enumerate() {
            // SAFETY: rows 4q..4q+4 are below n, so their bytes 32v..32v+32 (v < V) lie
            // inside `rows` (asserted above).
            let [a, b, c, d] =
                [0, 1, 2, 3].map(|i| unsafe { shuffle256_at(t[i], r[i].add(32 * v)) });
            let sum = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
            *x = _mm256_xor_si256(*x, sum);
        }
    }
    for (i, &c) in rest.iter().enumerate() {
        let (t, a) = (table_pair256(c), row(n - rest.len() + i));
        for (v, x) in acc.iter_mut().enumerate() {
            // SAFETY: as above, for one of the last rows.
            *x = _mm256_xor_si256(*x, unsafe { shuffle256_at(t, a.add(32 * v)) });
        }
    }
    for (v, x) in acc.iter().enumerate() {
        let sum = _mm_xor_si128(
            _mm256_castsi256_si128(*x),
            _mm256_extracti128_si256::<1>(*x),
        );
        // SAFETY: `out` has 16 * V bytes (asserted above); storeu needs no alignment.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().add(16 * v).cast(), sum) };
    }
}

/// [`split_row_sum_avx2`] for `K` coefficient streams of equal length over the same rows
/// (`K` codewords of one frame): `out[s]` gets the sum for `coefs[s]`. Each 32-byte row chunk
/// is loaded once and looked up in every stream's table, so a message byte costs `1 + V / K`
/// loads instead of `1 + V`: the single stream's kernel is bound by loads on CPUs with two
/// vector loads per cycle (docs/PERFORMANCE.md). The caller keeps `K * V <= 8` (accumulators
/// in registers).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn split_row_sum_avx2_many<const V: usize, const K: usize>(
    coefs: [&[u8]; K],
    rows: &[u8],
    stride: usize,
    out: [&mut [u8]; K],
) {
    let n = coefs[0].len();
    assert!(coefs.iter().all(|c| c.len() == n) && out.iter().all(|o| o.len() == 16 * V));
    assert!(rows_fit(rows, n, stride, 32 * V));
    let mut acc = [[_mm256_setzero_si256(); V]; K];
    for r in 0..n {
        let p = rows.as_ptr().wrapping_add(r * stride);
        let t = coefs.map(|c| table_pair256(c[r]));
        for v in 0..V {
            // SAFETY: row r is below n, so its bytes 32v..32v+32 (v < V) lie inside `rows`
            // (asserted above); loadu needs no alignment.
            let x = unsafe { _mm256_loadu_si256(p.add(32 * v).cast()) };
            for (a, t) in acc.iter_mut().zip(&t) {
                a[v] = _mm256_xor_si256(a[v], _mm256_shuffle_epi8(*t, x));
            }
        }
    }
    for (acc, out) in acc.iter().zip(out) {
        for (v, x) in acc.iter().enumerate() {
            let sum = _mm_xor_si128(
                _mm256_castsi256_si128(*x),
                _mm256_extracti128_si256::<1>(*x),
            );
            // SAFETY: `out` has 16 * V bytes (asserted above); storeu needs no alignment.
            unsafe { _mm_storeu_si128(out.as_mut_ptr().add(16 * v).cast(), sum) };
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SSSE3
// ---------------------------------------------------------------------------------------------

/// The low and high tables of `c`.
#[inline]
#[target_feature(enable = "ssse3")]
fn tables128(c: u8) -> (__m128i, __m128i) {
    let t = &NIBBLE.0[c as usize];
    // SAFETY: `t` is 32 bytes, so both 16-byte loads are in bounds; loadu needs no alignment.
    unsafe {
        (
            _mm_loadu_si128(t.as_ptr().cast()),
            _mm_loadu_si128(t.as_ptr().add(16).cast()),
        )
    }
}

/// Loads 16 bytes at `p`.
///
/// # Safety
/// `p` must point to 16 readable bytes (no alignment needed).
#[inline]
#[target_feature(enable = "ssse3")]
unsafe fn load128(p: *const u8) -> __m128i {
    // SAFETY: the caller guarantees 16 readable bytes at `p`; loadu needs no alignment.
    unsafe { _mm_loadu_si128(p.cast()) }
}

/// `c * v` for the 16 bytes of `v`, given `c`'s tables and the nibble mask.
#[inline]
#[target_feature(enable = "ssse3")]
fn mul128(v: __m128i, (lo, hi): (__m128i, __m128i), mask: __m128i) -> __m128i {
    let l = _mm_shuffle_epi8(lo, _mm_and_si128(v, mask));
    let h = _mm_shuffle_epi8(hi, _mm_and_si128(_mm_srli_epi16::<4>(v), mask));
    _mm_xor_si128(l, h)
}

/// `c * x` for the 16 bytes `x` at `p` stored split (16 low nibbles at `p`, 16 high ones
/// after them), given `c`'s tables.
///
/// # Safety
/// The CPU must support SSSE3; `p` must point to 32 readable bytes.
#[inline]
#[target_feature(enable = "ssse3")]
unsafe fn split_mul128_at(p: *const u8, (lo, hi): (__m128i, __m128i)) -> __m128i {
    // SAFETY: the caller guarantees 32 readable bytes at `p`.
    let (l, h) = unsafe { (load128(p), load128(p.add(16))) };
    _mm_xor_si128(_mm_shuffle_epi8(lo, l), _mm_shuffle_epi8(hi, h))
}

/// [`super::Simd::row_sum`] on plain rows for `out.len() == 16 * V` bytes (the caller cuts
/// wider sums into blocks of at most eight vectors: SSE has sixteen registers).
///
/// # Safety
/// The CPU must support SSSE3.
#[target_feature(enable = "ssse3")]
pub(super) unsafe fn row_sum_ssse3<const V: usize>(
    coefs: &[u8],
    rows: &[u8],
    stride: usize,
    out: &mut [u8],
) {
    let n = coefs.len();
    assert!(out.len() == 16 * V && rows_fit(rows, n, stride, 16 * V));
    let row = |r: usize| rows.as_ptr().wrapping_add(r * stride);
    let mask = _mm_set1_epi8(0x0f);
    let mut acc = [_mm_setzero_si128(); V];
    let pairs = coefs.chunks_exact(2);
    let last = pairs.remainder().first().copied();
    for (p, c) in pairs.enumerate() {
        let (t0, t1) = (tables128(c[0]), tables128(c[1]));
        let (a, b) = (row(2 * p), row(2 * p + 1));
        for (v, x) in acc.iter_mut().enumerate() {
            // SAFETY: rows 2p and 2p + 1 are below n, so their bytes 16v..16v+16 (v < V) lie
            // inside `rows` (asserted above).
            let (va, vb) = unsafe { (load128(a.add(16 * v)), load128(b.add(16 * v))) };
            *x = _mm_xor_si128(
                *x,
                _mm_xor_si128(mul128(va, t0, mask), mul128(vb, t1, mask)),
            );
        }
    }
    if let Some(c) = last {
        let (t, a) = (tables128(c), row(n - 1));
        for (v, x) in acc.iter_mut().enumerate() {
            // SAFETY: as above, for row n - 1.
            let va = unsafe { load128(a.add(16 * v)) };
            *x = _mm_xor_si128(*x, mul128(va, t, mask));
        }
    }
    for (v, x) in acc.iter().enumerate() {
        // SAFETY: `out` has 16 * V bytes (asserted above); storeu needs no alignment.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().add(16 * v).cast(), *x) };
    }
}

/// [`super::RowTable::row_sum`] on split rows for `16 * V` output bytes (layout as for
/// [`split_row_sum_avx2`]): the nibbles come ready, so each 16 bytes cost two lookups.
///
/// # Safety
/// The CPU must support SSSE3.
#[target_feature(enable = "ssse3")]
pub(super) unsafe fn split_row_sum_ssse3<const V: usize>(
    coefs: &[u8],
    rows: &[u8],
    stride: usize,
    out: &mut [u8],
) {
    let n = coefs.len();
    assert!(out.len() == 16 * V && rows_fit(rows, n, stride, 32 * V));
    let row = |r: usize| rows.as_ptr().wrapping_add(r * stride);
    let mut acc = [_mm_setzero_si128(); V];
    let pairs = coefs.chunks_exact(2);
    let last = pairs.remainder().first().copied();
    for (p, c) in pairs.enumerate() {
        let (t0, t1) = (tables128(c[0]), tables128(c[1]));
        let (a, b) = (row(2 * p), row(2 * p + 1));
        for (v, x) in acc.iter_mut().enumerate() {
            // SAFETY: rows 2p and 2p + 1 are below n, so their bytes 32v..32v+32 (v < V) lie
            // inside `rows` (asserted above).
            let (pa, pb) = unsafe {
                (
                    split_mul128_at(a.add(32 * v), t0),
                    split_mul128_at(b.add(32 * v), t1),
                )
            };
            *x = _mm_xor_si128(*x, _mm_xor_si128(pa, pb));
        }
    }
    if let Some(c) = last {
        let (t, a) = (tables128(c), row(n - 1));
        for (v, x) in acc.iter_mut().enumerate() {
            // SAFETY: as above, for row n - 1.
            *x = _mm_xor_si128(*x, unsafe { split_mul128_at(a.add(32 * v), t) });
        }
    }
    for (v, x) in acc.iter().enumerate() {
        // SAFETY: `out` has 16 * V bytes (asserted above); storeu needs no alignment.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().add(16 * v).cast(), *x) };
    }
}
