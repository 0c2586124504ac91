//! The split-table ("nibble") GF(2^8) kernel of [`super::Simd`] for aarch64: NEON's `tbl`
//! (`vqtbl1q_u8`) on 16-byte vectors.
//!
//! Contract: the same sums as the x86-64 kernels (`out[j] = XOR_r coefs[r] * rows[r][j]`),
//! reachable only through a [`super::Simd`] whose ISA was detected on this CPU; every load and
//! store goes through a slice whose length was checked (see the safety argument of `simd.rs`).
//!
//! The technique is the one of `simd_x86_shuffle.rs` (Plank, Greenan and Miller, FAST 2013):
//! `c * x = c * (x & 15) ^ c * (x & 0xf0)`, each half a lookup in a 16-entry table of
//! [`super::NIBBLE`]. NEON shifts bytes directly (`ushr`), so splitting a byte costs two
//! instructions and row tables keep their plain layout on this architecture. Tested only
//! under emulation (qemu-aarch64) and not benchmarked: no aarch64 machine was at hand.
#![allow(unsafe_code)]

use super::{rows_fit, NIBBLE};
use core::arch::aarch64::{
    uint8x16_t, vandq_u8, vdupq_n_u8, veorq_u8, vld1q_u8, vqtbl1q_u8, vshrq_n_u8, vst1q_u8,
};

/// The low and high tables of `c`.
#[inline]
#[target_feature(enable = "neon")]
fn tables(c: u8) -> (uint8x16_t, uint8x16_t) {
    let t = &NIBBLE.0[c as usize];
    // SAFETY: `t` is 32 bytes, so both 16-byte loads are in bounds; vld1q needs no alignment.
    unsafe { (vld1q_u8(t.as_ptr()), vld1q_u8(t.as_ptr().add(16))) }
}

/// `c * x` for the 16 bytes `x` at `p`, given `c`'s tables.
///
/// # Safety
/// The CPU must support NEON; `p` must point to 16 readable bytes (no alignment needed).
#[inline]
#[target_feature(enable = "neon")]
unsafe fn mul_at(p: *const u8, (lo, hi): (uint8x16_t, uint8x16_t)) -> uint8x16_t {
    // SAFETY: the caller guarantees 16 readable bytes at `p`; vld1q needs no alignment.
    let v = unsafe { vld1q_u8(p) };
    let l = vqtbl1q_u8(lo, vandq_u8(v, vdupq_n_u8(0x0f)));
    let h = vqtbl1q_u8(hi, vshrq_n_u8::<4>(v));
    veorq_u8(l, h)
}

/// [`super::Simd::row_sum`] for `out.len() == 16 * V` bytes (the caller cuts wider sums into
/// blocks of at most eight vectors).
///
/// # Safety
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
pub(super) unsafe fn row_sum_neon<const V: usize>(
    coefs: &[u8],
    rows: &[u8],
    stride: usize,
    out: &mut [u8],
) {
    let n = coefs.len();
    assert!(out.len() == 16 * V && rows_fit(rows, n, stride, 16 * V));
    let row = |r: usize| rows.as_ptr().wrapping_add(r * stride);
    let mut acc = [vdupq_n_u8(0); V];
    // Rows in pairs, their products added before they reach the accumulators.
    let pairs = coefs.chunks_exact(2);
    let last = pairs.remainder().first().copied();
    for (p, c) in pairs.enumerate() {
        let (t0, t1) = (tables(c[0]), tables(c[1]));
        let (a, b) = (row(2 * p), row(2 * p + 1));
        for (v, x) in acc.iter_mut().enumerate() {
            // SAFETY: rows 2p and 2p + 1 are below n, so their bytes 16v..16v+16 (v < V) lie
            // inside `rows` (asserted above).
            let (pa, pb) = unsafe { (mul_at(a.add(16 * v), t0), mul_at(b.add(16 * v), t1)) };
            *x = veorq_u8(*x, veorq_u8(pa, pb));
        }
    }
    if let Some(c) = last {
        let (t, a) = (tables(c), row(n - 1));
        for (v, x) in acc.iter_mut().enumerate() {
            // SAFETY: as above, for row n - 1.
            *x = veorq_u8(*x, unsafe { mul_at(a.add(16 * v), t) });
        }
    }
    for (v, x) in acc.iter().enumerate() {
        // SAFETY: `out` has 16 * V bytes (asserted above); vst1q needs no alignment.
        unsafe { vst1q_u8(out.as_mut_ptr().add(16 * v), *x) };
    }
}
