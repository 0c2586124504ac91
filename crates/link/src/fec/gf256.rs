//! Arithmetic in GF(2^8), the symbol field of the Reed-Solomon codes of 003 §4.
//!
//! Contract: the field is GF(2)[x] / p(x) with the primitive polynomial
//! p(x) = x^8 + x^4 + x^3 + x^2 + 1 (0x11d) and generator alpha = 2 (the element x), the field
//! that the Python `reedsolo` package uses by default, so our codewords match it byte for byte.
//! Addition is XOR. Multiplication goes through log/antilog tables built at compile time; the
//! antilog table is doubled (512 entries) so `EXP[log a + log b]` needs no reduction modulo 255.
//! Nothing here allocates or panics except [`div`] and [`inv`] on a zero divisor, which are
//! internal invariant violations (callers never divide by zero).

/// The primitive polynomial p(x) = x^8 + x^4 + x^3 + x^2 + 1, with its x^8 bit.
pub const PRIM: u16 = 0x11d;
/// The generator of the multiplicative group (alpha = x).
pub const GENERATOR: u8 = 2;

/// `EXP[i] = alpha^i` for `i` in `0..510` (the table repeats with period 255).
pub const EXP: [u8; 512] = build_exp();
/// `LOG[a] = i` such that `alpha^i = a`, for `a != 0`; `LOG[0]` is unused (0).
pub const LOG: [u8; 256] = build_log();

const fn build_exp() -> [u8; 512] {
    let mut t = [0u8; 512];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        t[i] = x as u8;
        t[i + 255] = x as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= PRIM;
        }
        i += 1;
    }
    // Entries 510 and 511 are never read by `mul` (log sums stay below 509); fill them anyway.
    t[510] = t[0];
    t[511] = t[1];
    t
}

const fn build_log() -> [u8; 256] {
    let exp = build_exp();
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 255 {
        t[exp[i] as usize] = i as u8;
        i += 1;
    }
    t
}

/// `a * b` in GF(2^8).
#[inline(always)]
pub fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
    }
}

/// `a / b` in GF(2^8).
///
/// # Panics
/// If `b` is zero (an internal invariant: the decoder never divides by zero).
#[inline]
pub fn div(a: u8, b: u8) -> u8 {
    assert!(b != 0, "GF(256) division by zero");
    if a == 0 {
        0
    } else {
        EXP[LOG[a as usize] as usize + 255 - LOG[b as usize] as usize]
    }
}

/// The multiplicative inverse of `a`.
///
/// # Panics
/// If `a` is zero.
#[inline]
pub fn inv(a: u8) -> u8 {
    div(1, a)
}

/// `alpha^e` for any exponent (taken modulo 255; negative exponents allowed).
#[inline]
pub fn alpha_pow(e: i32) -> u8 {
    EXP[e.rem_euclid(255) as usize]
}

/// `a^e` in GF(2^8) (with `0^0 = 1`).
pub fn pow(a: u8, e: u32) -> u8 {
    if e == 0 {
        return 1;
    }
    if a == 0 {
        return 0;
    }
    EXP[((LOG[a as usize] as u64 * e as u64) % 255) as usize]
}

/// Evaluates the polynomial `p` (highest degree first) at `x` by Horner's rule.
pub fn poly_eval(p: &[u8], x: u8) -> u8 {
    if x == 0 {
        return p.last().copied().unwrap_or(0);
    }
    let lx = LOG[x as usize] as usize;
    let mut y = 0u8;
    for &c in p {
        y = if y == 0 {
            c
        } else {
            EXP[LOG[y as usize] as usize + lx] ^ c
        };
    }
    y
}

/// `a * b` modulo [`PRIM`] by carry-less shift and add ("Russian peasant"), usable in const
/// context: the SIMD kernels' compile-time tables, and the tests' independent check of the
/// table-driven [`mul`].
pub(crate) const fn shift_mul(mut a: u8, mut b: u8) -> u8 {
    let mut p = 0u8;
    while b != 0 {
        if b & 1 != 0 {
            p ^= a;
        }
        let carry = a & 0x80 != 0;
        a <<= 1;
        if carry {
            a ^= (PRIM & 0xff) as u8;
        }
        b >>= 1;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_agree_with_shift_and_add() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(mul(a, b), shift_mul(a, b), "{a} * {b}");
            }
        }
    }

    #[test]
    fn alpha_is_primitive_and_known_values_hold() {
        // alpha^8 = x^4 + x^3 + x^2 + 1 = 0x1d for p(x) = 0x11d.
        assert_eq!(EXP[8], 0x1d);
        assert_eq!(EXP[255], 1);
        let mut seen = [false; 256];
        for i in 0..255 {
            assert!(!seen[EXP[i] as usize], "alpha has order below 255");
            seen[EXP[i] as usize] = true;
        }
        assert!(!seen[0]);
    }

    #[test]
    fn division_inverts_multiplication() {
        for a in 0..=255u8 {
            for b in 1..=255u8 {
                assert_eq!(div(mul(a, b), b), a);
            }
        }
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a)), 1);
        }
        assert_eq!(pow(3, 0), 1);
        assert_eq!(pow(0, 5), 0);
        assert_eq!(pow(2, 8), 0x1d);
        assert_eq!(alpha_pow(-1), inv(2));
    }

    #[test]
    fn horner_matches_term_by_term() {
        let p = [7u8, 0, 200, 3, 1];
        for x in 0..=255u8 {
            let mut y = 0u8;
            for (i, &c) in p.iter().enumerate() {
                y ^= mul(c, pow(x, (p.len() - 1 - i) as u32));
            }
            assert_eq!(poly_eval(&p, x), y);
        }
    }
}
