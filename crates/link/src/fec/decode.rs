//! The algebraic steps of Reed-Solomon decoding, over GF(2^8) with first root alpha^0.
//!
//! Contract: pure functions on stack arrays, used by [`super::rs::RsCodec`] only after a word
//! failed the clean check. Syndromes come from the residue `c(x) mod g(x)`; Berlekamp-Massey
//! (with an erasure locator as its starting point, Blahut's formulation) finds the errata
//! locator; Chien search finds its roots among the codeword's positions. Each step refuses
//! (returns a count that does not match, or `TooManyErrors`) rather than guess; none panics.

use super::gf256::{self, EXP};
use super::rs::{RsError, MAX_N};
use super::simd::{Simd, MAX_WIDTH};

/// `POW[d][e] = alpha^(d * e mod 255)`: row `d` lists the powers of `alpha^d`, the rows the
/// SIMD syndrome and Chien kernels scale and add (64 KiB, read only a few rows at a time).
static POW: [[u8; 256]; 256] = build_pow();

const fn build_pow() -> [[u8; 256]; 256] {
    let mut t = [[0u8; 256]; 256];
    let mut d = 0;
    while d < 256 {
        let mut e = 0;
        while e < 256 {
            t[d][e] = EXP[(d * e) % 255];
            e += 1;
        }
        d += 1;
    }
    t
}

/// [`syndromes_from_residue`] on the SIMD kernel: `S_j = sum_i r_i alpha^((nsym-1-i) j)`, the
/// residue bytes (last first) scaling rows `0..nsym` of [`POW`]. Fills `synd[..nsym]` (and
/// zeros up to the next multiple of 32 that are not syndromes).
pub(crate) fn syndromes_simd(simd: &Simd, r: &[u8], synd: &mut [u8; MAX_WIDTH]) {
    let nsym = r.len();
    let mut coefs = [0u8; MAX_WIDTH];
    for (c, &x) in coefs.iter_mut().zip(r.iter().rev()) {
        *c = x;
    }
    let width = nsym.div_ceil(32) * 32;
    simd.row_sum(&coefs[..nsym], POW.as_flattened(), 256, &mut synd[..width]);
}

/// `vals[e] = sum_i p_i alpha^(-i e)` for `e < n`, over the terms `i = first, first + step,
/// ...` below `p.len()` (`first >= 1`): the coefficients, highest `i` first, scale rows
/// `255 - i` of [`POW`] (`alpha^(-i e) = alpha^((255 - i) e)`), which are `step` rows apart.
pub(crate) fn sum_at_inverse_powers(
    simd: &Simd,
    p: &[u8],
    first: usize,
    step: usize,
    n: usize,
    vals: &mut [u8; MAX_WIDTH],
) {
    let idx = (first..p.len()).step_by(step);
    let terms = idx.len();
    let mut coefs = [0u8; MAX_N];
    for (c, i) in coefs.iter_mut().zip(idx.rev()) {
        *c = p[i];
    }
    let width = n.div_ceil(32) * 32;
    if terms == 0 {
        vals[..width].fill(0);
        return;
    }
    let top = first + (terms - 1) * step; // highest i, at most 254
    let rows = &POW.as_flattened()[(255 - top) * 256..];
    simd.row_sum(&coefs[..terms], rows, 256 * step, &mut vals[..width]);
}

/// [`chien_search`] on the SIMD kernel: `Lambda(alpha^-e)` for all `e < n` at once, as
/// `lambda_0` plus its even and odd parts, each one [`sum_at_inverse_powers`]. Same roots,
/// order and early stop as the scalar search. Leaves the odd part `x Lambda'(x)` at
/// `x = alpha^-e` in `odd[e]` for Forney's formula.
pub(crate) fn chien_search_simd(
    simd: &Simd,
    lambda: &[u8],
    n: usize,
    pos: &mut [usize; MAX_N],
    odd: &mut [u8; MAX_WIDTH],
) -> usize {
    let deg = lambda.len() - 1;
    let mut even = [0u8; MAX_WIDTH];
    sum_at_inverse_powers(simd, lambda, 2, 2, n, &mut even);
    sum_at_inverse_powers(simd, lambda, 1, 2, n, odd);
    let mut found = 0;
    // Positions in blocks of 64: a bit mask of the roots (branch-free), then its set bits.
    for (block, (ev, od)) in even[..n].chunks(64).zip(odd[..n].chunks(64)).enumerate() {
        let mut roots = 0u64;
        for (j, (&a, &b)) in ev.iter().zip(od).enumerate() {
            roots |= ((lambda[0] ^ a ^ b == 0) as u64) << j;
        }
        while roots != 0 {
            let e = 64 * block + roots.trailing_zeros() as usize;
            roots &= roots - 1;
            if found == deg {
                return deg + 1;
            }
            pos[found] = n - 1 - e;
            found += 1;
        }
    }
    found
}

/// Syndromes `S_j = r(alpha^j)`, `j < nsym`, of the residue `r` (highest degree first), in the
/// log domain: each nonzero coefficient contributes `alpha^(log r_i + j * d_i)`.
pub(crate) fn syndromes_from_residue(r: &[u8], synd: &mut [u8]) {
    let nsym = r.len();
    let mut logs = [0usize; MAX_N];
    let mut steps = [0usize; MAX_N];
    let mut terms = 0;
    for (i, &c) in r.iter().enumerate() {
        if c != 0 {
            logs[terms] = gf256::LOG[c as usize] as usize;
            steps[terms] = (nsym - 1 - i) % 255;
            terms += 1;
        }
    }
    for s in synd.iter_mut() {
        let mut acc = 0u8;
        for t in 0..terms {
            acc ^= EXP[logs[t]];
            let next = logs[t] + steps[t];
            logs[t] = if next >= 255 { next - 255 } else { next };
        }
        *s = acc;
    }
}

/// Chien search: byte positions `p < n` where `Lambda(alpha^-(n-1-p)) = 0`, written to `pos`
/// (at most `deg Lambda` of them; one more root than that stops the search). Terms are kept
/// as logarithms and stepped by `-i` per position.
pub(crate) fn chien_search(lambda: &[u8], n: usize, pos: &mut [usize; MAX_N]) -> usize {
    let deg = lambda.len() - 1;
    if deg == 1 && lambda[0] == 1 && lambda[1] != 0 {
        // Lambda(x) = 1 + l1 x has its one root at x = 1 / l1, i.e. X = alpha^e = l1.
        let e = gf256::LOG[lambda[1] as usize] as usize;
        if e < n {
            pos[0] = n - 1 - e;
            return 1;
        }
        return 0;
    }
    let mut logs = [0usize; MAX_N];
    let mut steps = [0usize; MAX_N];
    let mut terms = 0;
    for (i, &c) in lambda.iter().enumerate().skip(1) {
        if c != 0 {
            logs[terms] = gf256::LOG[c as usize] as usize;
            steps[terms] = 255 - i % 255; // multiply by alpha^-i per step of e
            terms += 1;
        }
    }
    let mut found = 0;
    // e = n - 1 - p runs 0, 1, ..., n - 1.
    for e in 0..n {
        let mut acc = lambda[0];
        for t in 0..terms {
            acc ^= EXP[logs[t]];
            let next = logs[t] + steps[t];
            logs[t] = if next >= 255 { next - 255 } else { next };
        }
        if acc == 0 {
            if found == deg {
                return deg + 1;
            }
            pos[found] = n - 1 - e;
            found += 1;
        }
    }
    found
}

/// Berlekamp-Massey with erasures (Blahut's formulation): fills `lambda` (lowest degree first)
/// with the errata locator and returns its degree `L` (errors plus erasures).
pub(crate) fn berlekamp_massey(
    synd: &[u8],
    erasures: &[usize],
    n: usize,
    lambda: &mut [u8; MAX_N + 1],
) -> Result<usize, RsError> {
    let nsym = synd.len();
    let f = erasures.len();
    // Erasure locator Gamma(x) = prod (1 - X_i x), X_i = alpha^(n-1-p_i).
    let mut c = [0u8; MAX_N + 1];
    c[0] = 1;
    for (i, &p) in erasures.iter().enumerate() {
        let xi = gf256::alpha_pow((n - 1 - p) as i32);
        for j in (1..=i + 1).rev() {
            c[j] ^= gf256::mul(c[j - 1], xi);
        }
    }
    let mut b = c;
    let mut l = f;
    let mut m = 1usize;
    let mut bb = 1u8;
    // Degree bounds of C and B: updates touch only the coefficients that can be nonzero.
    let mut dc = f;
    let mut db = f;
    for r in f..nsym {
        let mut d = synd[r];
        for i in 1..=l.min(r) {
            d ^= gf256::mul(c[i], synd[r - i]);
        }
        if d == 0 {
            m += 1;
            continue;
        }
        let log_coef = gf256::LOG[gf256::div(d, bb) as usize] as usize;
        let t = c;
        let dt = dc;
        // C <- C - (d / b) x^m B. Locator degrees never exceed nsym.
        if m <= nsym {
            let top = db.min(nsym - m);
            for i in 0..=top {
                if b[i] != 0 {
                    c[i + m] ^= EXP[gf256::LOG[b[i] as usize] as usize + log_coef];
                }
            }
            dc = dc.max(top + m);
        }
        if 2 * l <= r + f {
            l = r + 1 + f - l;
            b = t;
            db = dt;
            bb = d;
            m = 1;
        } else {
            m += 1;
        }
    }
    // Correctable only if 2e + f <= nsym, e = L - f; and deg Lambda must be exactly L.
    if l < f || 2 * (l - f) + f > nsym || l > n {
        return Err(RsError::TooManyErrors);
    }
    if c[l] == 0 || c[l + 1..].iter().any(|&x| x != 0) {
        return Err(RsError::TooManyErrors);
    }
    *lambda = c;
    Ok(l)
}

/// A polynomial kept as (log coefficient, power) pairs of its nonzero terms, for evaluating
/// it at many powers of alpha without multiplications.
pub(crate) struct LogPoly {
    logs: [u8; MAX_N + 1],
    pows: [u8; MAX_N + 1],
    terms: usize,
}

impl LogPoly {
    /// The terms `coefs[i] x^(i - shift)` for the indices `i` that `keep` accepts
    /// (`coefs` lowest degree first, `i >= shift` for every kept index).
    pub(crate) fn new(coefs: &[u8], shift: usize, keep: impl Fn(usize) -> bool) -> Self {
        let mut p = LogPoly {
            logs: [0; MAX_N + 1],
            pows: [0; MAX_N + 1],
            terms: 0,
        };
        for (i, &c) in coefs.iter().enumerate() {
            if c != 0 && keep(i) {
                p.logs[p.terms] = gf256::LOG[c as usize];
                p.pows[p.terms] = ((i - shift) % 255) as u8;
                p.terms += 1;
            }
        }
        p
    }

    /// The polynomial's value at `alpha^k` (`k < 255`).
    pub(crate) fn eval_alpha(&self, k: usize) -> u8 {
        let mut acc = 0u8;
        for t in 0..self.terms {
            let e = (self.logs[t] as usize + self.pows[t] as usize * k) % 255;
            acc ^= EXP[e];
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn simd_syndromes_equal_scalar(r in proptest::collection::vec(any::<u8>(), 1..=254)) {
            let Some(simd) = Simd::detect() else { return Ok(()) };
            let mut want = [0u8; MAX_WIDTH];
            syndromes_from_residue(&r, &mut want[..r.len()]);
            let mut got = [0u8; MAX_WIDTH];
            syndromes_simd(&simd, &r, &mut got);
            prop_assert_eq!(&got[..r.len()], &want[..r.len()]);
        }

        #[test]
        fn simd_sums_at_inverse_powers_equal_direct_evaluation(
            p in proptest::collection::vec(any::<u8>(), 0..=255),
            first in 1usize..4,
            step in 1usize..3,
            n in 1usize..=255,
        ) {
            let Some(simd) = Simd::detect() else { return Ok(()) };
            let mut got = [0u8; MAX_WIDTH];
            sum_at_inverse_powers(&simd, &p, first, step, n, &mut got);
            for (e, &g) in got[..n].iter().enumerate() {
                let mut want = 0u8;
                for i in (first..p.len()).step_by(step) {
                    want ^= gf256::mul(p[i], gf256::alpha_pow(-((i * e) as i32)));
                }
                prop_assert_eq!(g, want, "e {}", e);
            }
        }

        /// Locators with chosen roots (some outside the word) and random ones, which have
        /// fewer roots than their degree.
        #[test]
        fn simd_chien_equals_scalar(
            roots in proptest::collection::vec(0usize..255, 1..=40),
            noise in proptest::collection::vec(any::<u8>(), 0..=40),
            n in 1usize..=255,
        ) {
            let Some(simd) = Simd::detect() else { return Ok(()) };
            // Lambda(x) = prod (1 - alpha^e x), lowest degree first, or random coefficients.
            let mut lambda = vec![1u8];
            if noise.is_empty() {
                for &e in &roots {
                    let x = EXP[e];
                    lambda.push(0);
                    for j in (1..lambda.len()).rev() {
                        lambda[j] ^= gf256::mul(lambda[j - 1], x);
                    }
                }
            } else {
                lambda.extend_from_slice(&noise);
            }
            let (mut p1, mut p2) = ([0usize; MAX_N], [0usize; MAX_N]);
            let want = chien_search(&lambda, n, &mut p1);
            let got = chien_search_simd(&simd, &lambda, n, &mut p2, &mut [0; MAX_WIDTH]);
            prop_assert_eq!(got, want);
            let shown = want.min(lambda.len() - 1);
            prop_assert_eq!(&p2[..shown], &p1[..shown]);
        }
    }
}
