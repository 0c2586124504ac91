//! The one place in this crate with `unsafe` code: GF(2^8) "scaled row sum" kernels in SIMD,
//! used by the Reed-Solomon codec for encoding, the clean-codeword check, syndromes, the Chien
//! search and Forney's `Omega`. This file holds the dispatch ([`Simd`], [`RowTable`]), the
//! safety argument and the GFNI kernel; its child modules hold the split-table kernels,
//! `simd_x86_shuffle.rs` (`pshufb`, for x86-64 CPUs without GFNI) and `simd_aarch64_neon.rs`
//! (`tbl`, for aarch64).
//!
//! What it computes. [`Simd::row_sum`] returns `out[j] = XOR_r coefs[r] * rows[r][j]` for
//! `j < out.len()`: each coefficient scales one row of a caller's table (all products in the
//! field of [`super::gf256`], polynomial 0x11d) and the scaled rows are added. Reed-Solomon
//! parity is such a sum (message byte times the parity of its position), so are syndromes
//! (residue byte times a row of powers of alpha) and polynomial values at every position
//! (coefficient times a row of powers of alpha). [`RowTable`] is the same sum over a table the
//! codec builds once (its parity rows), stored in the layout the kernel reads fastest.
//! `row_sum_scalar` (tests) is the portable definition, the oracle the kernels are checked
//! against.
//!
//! Kernels, best first (the order [`Simd::detect`] tries them; [`RsKernel`] names them):
//!
//! * GFNI (`Avx512Gfni`, `Avx2Gfni`). GFNI's `gf2p8mulb` multiplies modulo 0x11b, not our
//!   0x11d, so it cannot be used. Multiplication by a constant `c` is GF(2)-linear in the other
//!   factor, so it is an 8x8 bit matrix, and `gf2p8affineqb` applies an 8x8 bit matrix (one per
//!   64-bit lane) to every byte of a vector (Intel 64 and IA-32 Architectures Software
//!   Developer's Manual, Vol. 2, "GF2P8AFFINEQB — Galois Field Affine Transformation", whose
//!   pseudocode fixes the layout: output bit `i` is the parity of `x AND A.byte[7 - i]`). Using
//!   it to multiply in an arbitrary field was proposed for erasure coding in GF-Complete's issue
//!   14, "New region multiply technique using GFNI Affine instruction" (jerasure.org, 2018). Per
//!   coefficient the kernel broadcasts the matrix of "multiply by `coefs[r]`" (one lookup in a
//!   2 KiB table), applies it to the row, 32 bytes per instruction, and XORs the result into
//!   accumulators. No step waits for the previous coefficient except through that XOR, so the
//!   CPU overlaps the rows. With AVX-512, 32-byte rows stored back to back go two per 64-byte
//!   register: the low four lanes get the first coefficient's matrix, the high four the
//!   second's (a masked broadcast).
//! * Split tables (`Avx2Shuffle`, `Ssse3Shuffle`; `simd_x86_shuffle.rs`): `c * x = c * (x & 15)
//!   ^ c * (x & 0xf0)`, two 16-entry lookups done by `pshufb` on every byte of a vector
//!   (Plank, Greenan and Miller, FAST 2013; ISA-L). [`NIBBLE`] holds the 32 bytes of tables of
//!   every `c` (8 KiB); a [`RowTable`] for these kernels stores its rows pre-split into nibbles.
//! * Split tables on aarch64 (`NeonShuffle`; `simd_aarch64_neon.rs`): the same with NEON's
//!   `vqtbl1q_u8` on 16-byte vectors, plain rows only.
//!
//! CPU features, checked at run time by [`Simd::with_kernel`] (and so by [`Simd::detect`]),
//! the only ways to get a [`Simd`] value: AVX2 and GFNI (plus AVX-512F for the paired kernel),
//! AVX2, or SSSE3 on x86-64; NEON on aarch64. On other architectures no kernel exists, and
//! the codec uses its scalar kernels, as it does on x86-64 CPUs without SSSE3 or when asked
//! to.
//!
//! Safety argument. (1) The `#[target_feature]` functions are only called through a [`Simd`]
//! value (directly, or held by a [`RowTable`]) whose private [`Isa`] names features that
//! `is_x86_feature_detected!` (or `is_aarch64_feature_detected!`) confirmed on this CPU:
//! `Isa` values are made only in `Simd::with_kernel`, after that check, and each dispatch arm
//! calls only kernels whose features its `Isa` implies. (2) Every load and store goes through
//! a pointer into a slice whose length was checked (`assert!`, `chunks_exact`, or slicing) to
//! cover all the bytes touched: for the GFNI kernels `out` is `32 * W` bytes and each row is a
//! `chunks_exact(stride)` chunk with `stride >= 32 * W` (for the paired kernel, 128-byte
//! chunks of four rows and 32-byte chunks of the rest); the split-table kernels assert that
//! `out` has the bytes they store and (`rows_fit`) that all `n` rows of the bytes they read,
//! `stride` apart, lie inside `rows`, then read row `r < n` at `rows.as_ptr() + r * stride`.
//! Table lookups ([`NIBBLE`], [`MUL_MATRIX`]) index 256-entry arrays with a `u8`. Unaligned
//! load and store instructions are used, so no alignment is assumed.
#![allow(unsafe_code)]

use super::gf256;
use super::rs::RsKernel;

/// Widest row the kernel handles: eight 32-byte vectors (a full GF(2^8) codeword).
pub(crate) const MAX_WIDTH: usize = 256;

/// Which kernel runs, with the CPU features it needs; empty (so [`Simd`] cannot exist) off
/// x86-64 and aarch64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    /// AVX2, GFNI and AVX-512F: 32-byte rows go two to a 64-byte register.
    #[cfg(target_arch = "x86_64")]
    Avx512Gfni,
    /// AVX2 and GFNI.
    #[cfg(target_arch = "x86_64")]
    Avx2Gfni,
    /// AVX2: split-table multiply with `vpshufb` on 32-byte vectors.
    #[cfg(target_arch = "x86_64")]
    Avx2Shuffle,
    /// SSSE3: split-table multiply with `pshufb` on 16-byte vectors.
    #[cfg(target_arch = "x86_64")]
    Ssse3Shuffle,
    /// NEON: split-table multiply with `tbl` on 16-byte vectors.
    #[cfg(target_arch = "aarch64")]
    NeonShuffle,
}

/// Proof that a SIMD kernel can run on this CPU (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Simd(Isa);

/// The [`Isa`] of `kernel` if this CPU has its features.
#[cfg(target_arch = "x86_64")]
fn isa_for(kernel: RsKernel) -> Option<Isa> {
    use std::is_x86_feature_detected as has;
    match kernel {
        RsKernel::Avx512Gfni if has!("avx512f") && has!("avx2") && has!("gfni") => {
            Some(Isa::Avx512Gfni)
        }
        RsKernel::Avx2Gfni if has!("avx2") && has!("gfni") => Some(Isa::Avx2Gfni),
        RsKernel::Avx2Shuffle if has!("avx2") => Some(Isa::Avx2Shuffle),
        RsKernel::Ssse3Shuffle if has!("ssse3") => Some(Isa::Ssse3Shuffle),
        _ => None,
    }
}

/// The [`Isa`] of `kernel` if this CPU has its features.
#[cfg(target_arch = "aarch64")]
fn isa_for(kernel: RsKernel) -> Option<Isa> {
    match kernel {
        RsKernel::NeonShuffle if std::arch::is_aarch64_feature_detected!("neon") => {
            Some(Isa::NeonShuffle)
        }
        _ => None,
    }
}

/// True on CPUs that execute 512-bit instructions as two 256-bit halves, where the AVX-512
/// kernel is no faster than the AVX2 one: AMD family 19h (Zen 4; Zen 3, the same family, has
/// no AVX-512). Measured on an EPYC of family 19h model 11h: RS(255,223) clean decode 1.88 and
/// 2.21 GB/s with `avx512-gfni` against 2.36 and 2.35 with `avx2-gfni` in the same runs,
/// encode 2.05 and 2.26 against 2.18 and 2.36 (docs/PERFORMANCE.md).
#[cfg(target_arch = "x86_64")]
pub(crate) fn splits_512_bit_ops() -> bool {
    use core::arch::x86_64::__cpuid;
    // SAFETY: every x86-64 CPU has CPUID and its leaves 0 and 1 (unsafe before Rust 1.87).
    #[allow(unused_unsafe)]
    let (vendor, eax) = unsafe { (__cpuid(0), __cpuid(1).eax) };
    // "AuthenticAMD" in EBX, EDX, ECX.
    let amd = [vendor.ebx, vendor.edx, vendor.ecx] == [0x6874_7541, 0x6974_6e65, 0x444d_4163];
    let base = (eax >> 8) & 0xf;
    let family = if base == 0xf {
        base + ((eax >> 20) & 0xff)
    } else {
        base
    };
    amd && family == 0x19
}

/// No SIMD kernel off x86-64 and aarch64.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn isa_for(_kernel: RsKernel) -> Option<Isa> {
    None
}

/// Checks that `n` rows of `len` bytes, `stride` apart, lie inside `rows`: the one check that
/// covers every load of a split-table kernel, which then reads row `r < n` at
/// `rows.as_ptr() + r * stride` (a bounds check per row would cost as much as a row's lookups).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
fn rows_fit(rows: &[u8], n: usize, stride: usize, len: usize) -> bool {
    n == 0 || (stride >= len && rows.len() >= (n - 1) * stride + len)
}

/// Calls `$m::$f::<K>($args)` for the const `K` equal to `$n`, one of the listed values (the
/// callers assert that it is).
macro_rules! by_const {
    ($n:expr; $($k:literal),+; $m:ident :: $f:ident $args:tt) => {
        match $n {
            $($k => $m::$f::<$k> $args,)+
            n => unreachable!("no kernel instance for {n}"),
        }
    };
}

impl Simd {
    /// The best kernel this CPU has (the first SIMD one of [`RsKernel::available`]), or
    /// `None`.
    pub(crate) fn detect() -> Option<Simd> {
        RsKernel::available().find_map(Simd::with_kernel)
    }

    /// `kernel` if it is a SIMD kernel and this CPU has the features it needs, else `None`.
    pub(crate) fn with_kernel(kernel: RsKernel) -> Option<Simd> {
        isa_for(kernel).map(Simd)
    }

    /// The public name of this kernel.
    pub(crate) fn kernel(&self) -> RsKernel {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Gfni => RsKernel::Avx512Gfni,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Gfni => RsKernel::Avx2Gfni,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Shuffle => RsKernel::Avx2Shuffle,
            #[cfg(target_arch = "x86_64")]
            Isa::Ssse3Shuffle => RsKernel::Ssse3Shuffle,
            #[cfg(target_arch = "aarch64")]
            Isa::NeonShuffle => RsKernel::NeonShuffle,
        }
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
        let rows = &rows[..coefs.len() * stride];
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Gfni if w == 32 && stride == 32 => {
                // SAFETY: `Isa::Avx512Gfni` is only made by `with_kernel` after AVX-512F and
                // GFNI were detected; the lengths the kernel relies on were asserted above.
                unsafe { x86::row_sum_pairs(coefs, rows, out) }
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `with_kernel` makes either variant only after detecting AVX2 and GFNI;
            // `w / 32` is in 1..=8 (asserted above), the kernel checks the rest.
            Isa::Avx2Gfni | Isa::Avx512Gfni => unsafe {
                by_const!(w / 32; 1, 2, 3, 4, 5, 6, 7, 8; x86::row_sum(coefs, rows, stride, out))
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `with_kernel` makes `Avx2Shuffle` only after detecting AVX2; `w / 32`
            // is in 1..=8 (asserted above), the kernel checks the rest.
            Isa::Avx2Shuffle => unsafe {
                by_const!(w / 32; 1, 2, 3, 4, 5, 6, 7, 8;
                    x86_shuffle::row_sum_avx2(coefs, rows, stride, out))
            },
            #[cfg(target_arch = "x86_64")]
            Isa::Ssse3Shuffle => {
                // Blocks of at most eight 16-byte vectors (SSE has sixteen registers); `w` is
                // a multiple of 32, so every block has an even count in 2..=8.
                for (b, o) in out.chunks_mut(128).enumerate() {
                    // (Empty when there are no coefficients.)
                    let rows = rows.get(128 * b..).unwrap_or_default();
                    // SAFETY: `with_kernel` makes `Ssse3Shuffle` only after detecting SSSE3;
                    // the kernel checks that its rows lie inside `rows`.
                    unsafe {
                        by_const!(o.len() / 16; 2, 4, 6, 8;
                            x86_shuffle::row_sum_ssse3(coefs, rows, stride, o))
                    }
                }
            }
            #[cfg(target_arch = "aarch64")]
            Isa::NeonShuffle => {
                // Blocks of at most eight 16-byte vectors, as for SSSE3.
                for (b, o) in out.chunks_mut(128).enumerate() {
                    let rows = rows.get(128 * b..).unwrap_or_default();
                    // SAFETY: `with_kernel` makes `NeonShuffle` only after detecting NEON;
                    // the kernel checks that its rows lie inside `rows`.
                    unsafe {
                        by_const!(o.len() / 16; 2, 4, 6, 8;
                            neon::row_sum_neon(coefs, rows, stride, o))
                    }
                }
            }
        }
    }
}

/// Rows of GF(2^8) bytes stored for one kernel, to be scaled and summed by
/// [`RowTable::row_sum`]: the same sums as [`Simd::row_sum`] over the rows as given, in the
/// layout the kernel reads fastest (the shuffle kernels' rows come split into nibbles, twice
/// the bytes; the GFNI kernels' as given).
#[derive(Clone, Debug)]
pub(crate) struct RowTable {
    simd: Simd,
    /// Bytes of a row as given: the sums' width.
    width: usize,
    /// Bytes between rows in `bytes`.
    stride: usize,
    rows: usize,
    bytes: Aligned,
}

/// Bytes whose first one sits on a 64-byte boundary, so that no 32- or 64-byte row of a
/// [`RowTable`] straddles a cache line: such a load costs two, and with the 16-byte alignment
/// the allocator gives, every other row did. Aligning made RS(255,223) encoding 23% faster
/// with AVX-512 GFNI and 35% faster with AVX2 shuffles (docs/PERFORMANCE.md). Cloning
/// re-aligns the copy.
#[derive(Debug)]
struct Aligned {
    buf: Box<[u8]>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn new(bytes: &[u8]) -> Aligned {
        let mut buf = vec![0u8; bytes.len() + 63].into_boxed_slice();
        // `align_offset` is exact at run time for bytes; fall back to 0 if it ever were not.
        let start = Some(buf.as_ptr().align_offset(64))
            .filter(|&s| s < 64)
            .unwrap_or(0);
        buf[start..start + bytes.len()].copy_from_slice(bytes);
        Aligned {
            buf,
            start,
            len: bytes.len(),
        }
    }

    fn get(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl Clone for Aligned {
    fn clone(&self) -> Aligned {
        Aligned::new(self.get())
    }
}

impl RowTable {
    /// The rows of `width` bytes stored back to back in `plain`, laid out for `simd`.
    ///
    /// # Panics
    /// If `width` is not a multiple of 32 in `32..=MAX_WIDTH` or `plain.len()` not a multiple
    /// of `width`.
    pub(crate) fn new(simd: Simd, plain: &[u8], width: usize) -> RowTable {
        assert!(width.is_multiple_of(32) && (32..=MAX_WIDTH).contains(&width));
        assert!(plain.len().is_multiple_of(width));
        let split = simd.split_rows();
        let bytes = if split {
            // Every 16 bytes become 32: the low nibbles, then the high nibbles.
            let mut t = Vec::with_capacity(2 * plain.len());
            for chunk in plain.chunks_exact(16) {
                t.extend(chunk.iter().map(|&x| x & 15));
                t.extend(chunk.iter().map(|&x| x >> 4));
            }
            Aligned::new(&t)
        } else {
            Aligned::new(plain)
        };
        RowTable {
            simd,
            width,
            stride: if split { 2 * width } else { width },
            rows: plain.len() / width,
            bytes,
        }
    }

    /// `out[j] = XOR_i coefs[i] * row[first + i][j]` for `j < width`.
    ///
    /// # Panics
    /// If `out.len()` is not the table's width or rows `first..first + coefs.len()` do not
    /// all exist (caller bugs).
    pub(crate) fn row_sum(&self, coefs: &[u8], first: usize, out: &mut [u8]) {
        assert!(out.len() == self.width && first + coefs.len() <= self.rows);
        let rows = &self.bytes.get()[first * self.stride..];
        match self.simd.0 {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Shuffle | Isa::Ssse3Shuffle => {
                // Blocks of at most eight 16-byte output vectors, 32 table bytes each.
                for (b, o) in out.chunks_mut(128).enumerate() {
                    let rows = rows.get(256 * b..).unwrap_or_default();
                    let v = o.len() / 16;
                    // SAFETY: `with_kernel` makes `Avx2Shuffle` only after detecting AVX2, and
                    // `Ssse3Shuffle` after SSSE3; `width` is a multiple of 32, so `v` is even
                    // and in 2..=8; the kernels check that their rows lie inside `rows`.
                    unsafe {
                        if self.simd.0 == Isa::Avx2Shuffle {
                            by_const!(v; 2, 4, 6, 8;
                                x86_shuffle::split_row_sum_avx2(coefs, rows, self.stride, o))
                        } else {
                            by_const!(v; 2, 4, 6, 8;
                                x86_shuffle::split_row_sum_ssse3(coefs, rows, self.stride, o))
                        }
                    }
                }
            }
            #[allow(unreachable_patterns)]
            _ => self.simd.row_sum(coefs, rows, self.stride, out),
        }
    }

    /// True if [`RowTable::row_sum_many`] is faster than one [`RowTable::row_sum`] per
    /// stream: the AVX2 shuffle kernel on rows of at most 96 bytes (measured on RS(255,223),
    /// RS(255,239), RS(255,251) and RS(255,181): 26-32% faster in groups of four; RS(255,57),
    /// 224-byte rows, 13% slower, since its output no longer fits one block of registers).
    pub(crate) fn shares_rows(&self) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self.simd.0 == Isa::Avx2Shuffle {
            return self.width <= 96;
        }
        false
    }

    /// [`RowTable::row_sum`] for `K` coefficient streams of equal length from the same first
    /// row (`K` equal-length codewords): the AVX2 shuffle kernel reads each row once for all
    /// of them ([`x86_shuffle::split_row_sum_avx2_many`]); the other kernels are not bound by
    /// row loads and sum the streams one after the other.
    ///
    /// # Panics
    /// As [`RowTable::row_sum`], and if the streams' lengths differ (caller bugs).
    pub(crate) fn row_sum_many<const K: usize>(
        &self,
        coefs: [&[u8]; K],
        first: usize,
        out: [&mut [u8]; K],
    ) {
        #[cfg(target_arch = "x86_64")]
        if self.shares_rows() && (K == 2 || K == 4) {
            let n = coefs[0].len();
            assert!(coefs.iter().all(|c| c.len() == n) && first + n <= self.rows);
            assert!(out.iter().all(|o| o.len() == self.width));
            let rows = &self.bytes.get()[first * self.stride..];
            // Blocks of 32 output bytes (two vectors) per stream: at most eight accumulators
            // and four tables in the sixteen registers (wider blocks spilled).
            let mut out = out;
            for b in 0..self.width / 32 {
                let o = out.each_mut().map(|o| &mut o[32 * b..32 * b + 32]);
                let rows = rows.get(64 * b..).unwrap_or_default();
                // SAFETY: `shares_rows` holds only for `Avx2Shuffle`, which `with_kernel`
                // makes only after detecting AVX2; the kernel checks that its rows lie inside
                // `rows`.
                unsafe { x86_shuffle::split_row_sum_avx2_many::<2, K>(coefs, rows, self.stride, o) }
            }
            return;
        }
        for (c, o) in coefs.into_iter().zip(out) {
            self.row_sum(c, first, o);
        }
    }
}

impl Simd {
    /// True if [`RowTable`]s for this kernel store rows split into nibbles.
    fn split_rows(&self) -> bool {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Shuffle | Isa::Ssse3Shuffle => true,
            #[allow(unreachable_patterns)]
            _ => false,
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

/// The split multiplication tables of every `c`, 64-byte aligned so no entry straddles a
/// cache line: `0[c][v] = c * v` and `0[c][16 + v] = c * (v << 4)` for `v < 16`.
#[repr(C, align(64))]
struct NibbleTables([[u8; 32]; 256]);

const fn build_nibbles() -> NibbleTables {
    let mut t = [[0u8; 32]; 256];
    let mut c = 0;
    while c < 256 {
        let mut v = 0;
        while v < 16 {
            t[c][v] = gf256::shift_mul(c as u8, v as u8);
            t[c][16 + v] = gf256::shift_mul(c as u8, (v as u8) << 4);
            v += 1;
        }
        c += 1;
    }
    NibbleTables(t)
}

/// The tables of the split-table kernels (see [`NibbleTables`]).
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
static NIBBLE: NibbleTables = build_nibbles();

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
#[path = "simd_x86_shuffle.rs"]
mod x86_shuffle;

#[cfg(target_arch = "aarch64")]
#[path = "simd_aarch64_neon.rs"]
mod neon;

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

    #[test]
    fn nibble_tables_multiply_like_the_tables() {
        for c in 0..=255u8 {
            let t = &NIBBLE.0[c as usize];
            for x in 0..=255u8 {
                let y = t[(x & 15) as usize] ^ t[16 + (x >> 4) as usize];
                assert_eq!(y, gf256::mul(c, x), "{c} * {x}");
            }
        }
    }

    /// Every kernel this CPU can run (an AVX-512 GFNI host also runs all the others).
    fn kernels() -> Vec<Simd> {
        RsKernel::ALL
            .iter()
            .filter_map(|&k| Simd::with_kernel(k))
            .collect()
    }

    /// `n` pseudo-random bytes (xorshift), so tests need no generator crate.
    fn bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn detect_picks_the_first_available_kernel() {
        let all: Vec<Simd> = RsKernel::available()
            .filter_map(Simd::with_kernel)
            .collect();
        assert_eq!(Simd::detect(), all.first().copied());
        for k in &all {
            assert_eq!(Simd::with_kernel(k.kernel()), Some(*k));
        }
        assert_eq!(Simd::with_kernel(RsKernel::Scalar), None);
        eprintln!("kernels on this CPU: {all:?}");
    }

    /// Every width the kernels have an instance for, row counts around the pairing of rows
    /// (0, odd, even, a full codeword), strides with and without padding, and coefficients 0,
    /// 1 and 255 as well as random ones: each kernel and its row table against the oracle.
    #[test]
    fn every_width_of_every_kernel_equals_scalar() {
        for simd in kernels() {
            for vecs in 1..=MAX_WIDTH / 32 {
                let width = 32 * vecs;
                for pad in [0, 16, 33] {
                    let stride = width + pad;
                    for n in [0usize, 1, 2, 3, 4, 5, 31, 223, 255] {
                        let seed = (vecs * 1000 + pad * 10 + n) as u64;
                        let mut coefs = bytes(seed, n);
                        for (i, c) in coefs.iter_mut().enumerate().take(3) {
                            *c = [0, 1, 255][i];
                        }
                        let rows = bytes(seed ^ 0xabcd, n * stride);
                        let mut want = vec![0u8; width];
                        row_sum_scalar(&coefs, &rows, stride, &mut want);
                        let mut got = vec![0xa5u8; width];
                        simd.row_sum(&coefs, &rows, stride, &mut got);
                        assert_eq!(got, want, "{simd:?} width {width} stride {stride} n {n}");
                        if pad == 0 && n > 0 {
                            // The same rows in a table, summed from a later first row.
                            let mut plain = bytes(seed ^ 0x77, width);
                            plain.extend_from_slice(&rows);
                            let table = RowTable::new(simd, &plain, width);
                            let mut got = vec![0x5au8; width];
                            table.row_sum(&coefs, 1, &mut got);
                            assert_eq!(got, want, "table {simd:?} width {width} n {n}");
                        }
                    }
                }
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
            let width = 32 * vecs;
            let stride = width + pad;
            let rows = bytes(seed, coefs.len() * stride);
            let mut want = vec![0u8; width];
            row_sum_scalar(&coefs, &rows, stride, &mut want);
            for k in kernels() {
                let mut got = vec![0xa5u8; width];
                k.row_sum(&coefs, &rows, stride, &mut got);
                prop_assert_eq!(&got, &want, "{:?}", k);
            }
        }

        #[test]
        fn row_table_sums_equal_scalar(
            vecs in 1usize..=8,
            rows_n in 1usize..=255,
            first in 0usize..255,
            take in 0usize..=255,
            seed in any::<u64>(),
        ) {
            let width = 32 * vecs;
            let first = first % rows_n;
            let take = take.min(rows_n - first);
            let plain = bytes(seed, rows_n * width);
            let coefs = bytes(seed ^ 0x1234, take);
            let mut want = vec![0u8; width];
            row_sum_scalar(&coefs, &plain[first * width..], width, &mut want);
            for k in kernels() {
                let table = RowTable::new(k, &plain, width);
                let mut got = vec![0xa5u8; width];
                table.row_sum(&coefs, first, &mut got);
                prop_assert_eq!(&got, &want, "{:?}", k);
            }
        }

        /// Summing two or four streams together (the AVX2 kernel that shares row loads, the
        /// others one stream after another) gives each stream its own sum.
        #[test]
        fn row_table_many_sums_equal_scalar(
            vecs in 1usize..=8,
            first in 0usize..255,
            take in 0usize..=255,
            seed in any::<u64>(),
        ) {
            let (width, rows_n) = (32 * vecs, 255);
            let take = take.min(rows_n - first);
            let plain = bytes(seed, rows_n * width);
            let coefs: Vec<Vec<u8>> = (0..4).map(|s| bytes(seed ^ s, take)).collect();
            let want: Vec<Vec<u8>> = coefs
                .iter()
                .map(|c| {
                    let mut w = vec![0u8; width];
                    row_sum_scalar(c, &plain[first * width..], width, &mut w);
                    w
                })
                .collect();
            for k in kernels() {
                let table = RowTable::new(k, &plain, width);
                let mut pair = [(); 2].map(|_| vec![0xa5u8; width]);
                let streams = core::array::from_fn(|s| &coefs[s][..]);
                table.row_sum_many(streams, first, pair.each_mut().map(|o| &mut o[..]));
                prop_assert_eq!(&pair[..], &want[..2], "{:?} in pairs", k);
                let mut four = [(); 4].map(|_| vec![0xa5u8; width]);
                let streams = core::array::from_fn(|s| &coefs[s][..]);
                table.row_sum_many(streams, first, four.each_mut().map(|o| &mut o[..]));
                prop_assert_eq!(&four[..], &want[..], "{:?} in fours", k);
            }
        }
    }
}
