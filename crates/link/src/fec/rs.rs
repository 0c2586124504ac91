//! Systematic Reed-Solomon codes RS(n, k) over GF(2^8): the block code of 003 §4.
//!
//! Contract. An [`RsCodec`] is built once per parity count `nsym = n - k` (1..=254) and then
//! encodes and decodes codewords of any length `n` with `nsym <= n <= 255`: a code with
//! `n < 255` is *shortened* (the missing leading message symbols are virtual zeros and never
//! sent). Codewords are laid out as the Python `reedsolo` package lays them out by default
//! (`RSCodec(nsym)`: prim 0x11d, generator 2, first consecutive root `fcr = 0`, 8-bit symbols):
//! the `k` message bytes, then the `nsym` parity bytes, where the parity is the remainder of
//! `m(x) * x^nsym` divided by `g(x) = (x - alpha^0)(x - alpha^1)...(x - alpha^(nsym-1))`, byte 0
//! of the codeword being the coefficient of the highest power. Our codewords are byte-identical
//! to reedsolo's (crates/link/tests/rs_oracle.rs checks a committed fixture that
//! tests/oracle/rs_vectors.py regenerates from reedsolo).
//!
//! The decoder corrects up to `t = nsym / 2` symbol errors (and, with erasures, any `e` errors
//! and `f` erasures with `2e + f <= nsym`), returns how many symbols it changed, and otherwise
//! reports [`RsError::TooManyErrors`], leaving the buffer as it was. It never reports success
//! for a word it has not verified: the corrected word must have all-zero syndromes and the error
//! locator must have exactly as many roots inside the codeword as its degree. It never panics on
//! any input bytes and never allocates: working polynomials live on the stack.
//!
//! Speed. Encoding and the clean-codeword check are the same computation, the remainder of
//! the message modulo `g(x)`. A received word is a codeword exactly when the remainder of its
//! message part equals its parity part, so a clean decode costs one encode and a compare. Only
//! a word that fails this check pays for syndromes, Berlekamp-Massey, Chien search and
//! Forney's formula. There are two implementations, with identical results on every input:
//!
//! * SIMD ([`RsCodec::new`] on x86-64 with SSSE3 or better and on aarch64, see
//!   `fec/simd.rs`). The parity is
//!   linear in the message: `parity = sum_i m_i * P_i`, `P_i = x^(nsym + k - 1 - i) mod g(x)`,
//!   with the rows `P_i` precomputed per code (`(255 - nsym) * 32 * ceil(nsym / 32)` bytes,
//!   twice that for the shuffle kernels, which store them split into nibbles). Each message
//!   byte scales its row (one `gf2p8affineqb` with GFNI; two `pshufb` lookups per 16 or 32
//!   bytes without) and the rows are XORed, so no step waits for the previous byte (an LFSR
//!   would). Syndromes (residue bytes scaling rows of powers of alpha), the Chien search
//!   (locator coefficients scaling rows of `alpha^(-i e)` for all positions `e` at once, even
//!   and odd terms apart) and Forney's `Omega` use the same kernel; Berlekamp-Massey stays
//!   scalar. The kernel is the best the CPU has ([`RsKernel`]: GFNI, else AVX2 shuffles, else
//!   SSSE3 shuffles; NEON `tbl` lookups on aarch64); [`RsCodec::with_kernel`] forces one, so that tests and benchmarks can
//!   run every path on one host.
//! * Scalar ([`RsCodec::new_scalar`], and any other CPU): a table-driven LFSR whose register is
//!   a few `u64` words. For `nsym <= 32` it consumes eight message bytes per step ("slicing by
//!   8", as CRC implementations do): eight independent lookups in tables of `g(x)`-multiples,
//!   so the serial dependency is one step per eight bytes. With 17 or more parity bytes some
//!   step positions use pairs of nibble tables instead of byte tables, which keeps the set near
//!   the size of an L1 data cache (measured faster than 48-64 KiB of byte tables). Wider
//!   registers (`nsym > 32`) step one byte at a time. It is also the tests' oracle for the
//!   SIMD path (tests/rs_simd.rs).

use super::decode::{
    berlekamp_massey, chien_search, chien_search_simd, sum_at_inverse_powers,
    syndromes_from_residue, syndromes_simd, LogPoly,
};
use super::gf256::{self, EXP};
use super::simd::{RowTable, Simd, MAX_WIDTH};

/// The largest codeword length (symbols) in GF(2^8).
pub const MAX_N: usize = 255;
/// The largest parity count a codec accepts.
pub const MAX_NSYM: usize = 254;
/// Register words (of 8 bytes) up to which the slicing-by-8 kernel is used.
const SLICE_MAX_WORDS: usize = 4;

/// Why a Reed-Solomon operation refused or failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RsError {
    /// The parity count is outside `1..=254`.
    #[error("parity count {0} outside 1..=254")]
    BadParity(usize),
    /// A codeword (or message plus parity) is longer than 255 or shorter than the parity.
    #[error("codeword of {len} symbols is outside {nsym}..=255")]
    BadLength {
        /// Codeword length asked for.
        len: usize,
        /// Parity symbols of the code.
        nsym: usize,
    },
    /// The parity buffer does not have `nsym` bytes.
    #[error("parity buffer of {got} bytes, code has {nsym}")]
    BadParityBuffer {
        /// Length given.
        got: usize,
        /// Length needed.
        nsym: usize,
    },
    /// An erasure position lies outside the codeword, repeats, or there are more than `nsym`.
    #[error("erasure positions invalid (outside the word, repeated, or more than nsym)")]
    BadErasures,
    /// The word has more errors than the code can correct (detected, buffer unchanged).
    #[error("too many symbol errors to correct")]
    TooManyErrors,
    /// [`RsCodec::with_kernel`] asked for a kernel this CPU (or architecture) cannot run.
    #[error("the {} Reed-Solomon kernel needs CPU features this host lacks", .0.name())]
    KernelUnavailable(RsKernel),
}

/// The implementations of the codec's GF(2^8) arithmetic, for choosing one explicitly with
/// [`RsCodec::with_kernel`] (tests and benchmarks compare them on one host) and for asking
/// which one a codec runs ([`RsCodec::kernel`]). All give identical results on every input;
/// they differ only in speed and in the CPU features they need. [`RsCodec::new`] picks the
/// first in [`RsKernel::available`] order that [`RsKernel::beats_scalar`] for its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RsKernel {
    /// x86-64 with AVX-512F, AVX2 and GFNI: `gf2p8affineqb` on 64-byte registers for codes
    /// with up to 32 parity bytes, otherwise as [`RsKernel::Avx2Gfni`].
    Avx512Gfni,
    /// x86-64 with AVX2 and GFNI: `gf2p8affineqb` on 32-byte registers.
    Avx2Gfni,
    /// x86-64 with AVX2: split-table multiplication with `vpshufb` on 32-byte registers (the
    /// path of AVX2 hosts without GFNI).
    Avx2Shuffle,
    /// x86-64 with SSSE3: split-table multiplication with `pshufb` on 16-byte registers.
    Ssse3Shuffle,
    /// aarch64 with NEON: split-table multiplication with `tbl` on 16-byte registers.
    NeonShuffle,
    /// The portable table-driven LFSR and log-domain decoder: any CPU
    /// ([`RsCodec::new_scalar`]).
    Scalar,
}

impl RsKernel {
    /// Every kernel, fastest first on most CPUs: the order [`RsCodec::new`] tries them in
    /// (see [`RsKernel::available`] for the exception).
    pub const ALL: [RsKernel; 6] = [
        RsKernel::Avx512Gfni,
        RsKernel::Avx2Gfni,
        RsKernel::Avx2Shuffle,
        RsKernel::Ssse3Shuffle,
        RsKernel::NeonShuffle,
        RsKernel::Scalar,
    ];

    /// A short lower-case name (`"avx2-shuffle"`), as benchmarks label their rows.
    pub fn name(self) -> &'static str {
        match self {
            RsKernel::Avx512Gfni => "avx512-gfni",
            RsKernel::Avx2Gfni => "avx2-gfni",
            RsKernel::Avx2Shuffle => "avx2-shuffle",
            RsKernel::Ssse3Shuffle => "ssse3-shuffle",
            RsKernel::NeonShuffle => "neon-shuffle",
            RsKernel::Scalar => "scalar",
        }
    }

    /// True if this CPU can run the kernel (checked at run time; [`RsKernel::Scalar`] always).
    pub fn is_available(self) -> bool {
        self == RsKernel::Scalar || Simd::with_kernel(self).is_some()
    }

    /// The kernels this CPU can run, fastest first (always ending with
    /// [`RsKernel::Scalar`]): [`RsKernel::ALL`]'s order, except on CPUs that execute 512-bit
    /// instructions as two 256-bit halves (AMD Zen 4), where [`RsKernel::Avx2Gfni`] comes
    /// before [`RsKernel::Avx512Gfni`] (measured no slower there, docs/PERFORMANCE.md).
    pub fn available() -> impl DoubleEndedIterator<Item = RsKernel> {
        #[cfg(target_arch = "x86_64")]
        let order = if super::simd::splits_512_bit_ops() {
            let mut o = RsKernel::ALL;
            o.swap(0, 1);
            o
        } else {
            RsKernel::ALL
        };
        #[cfg(not(target_arch = "x86_64"))]
        let order = RsKernel::ALL;
        order.into_iter().filter(|k| k.is_available())
    }

    /// True if this kernel is faster than the scalar one for codes of `nsym` parity bytes, so
    /// that [`RsCodec::new`] runs it: every SIMD kernel is, except the SSSE3 shuffle for codes
    /// of at most 8 parity bytes, whose LFSR register is one 64-bit word that the scalar
    /// slicing-by-8 kernel steps eight message bytes at a time (RS(255,251) encode 1.8 GB/s
    /// scalar against 1.3 GB/s SSSE3, clean decode 1.9 against 1.3, `cargo bench -p
    /// mslink-link --bench rs`, docs/PERFORMANCE.md; from 16 parity bytes on SSSE3 is ahead).
    pub fn beats_scalar(self, nsym: usize) -> bool {
        match self {
            RsKernel::Scalar => false,
            RsKernel::Ssse3Shuffle => nsym > 8,
            _ => true,
        }
    }
}

/// Slicing-by-8 tables for a register of `NW` words. For step position `b` (0..8) the table
/// maps a byte `u` to `u * x^(nsym + 7 - b) mod g(x)`, left-aligned in `8 * NW` bytes. The
/// first `NB` positions use full 256-row tables; the others split `u` into nibbles and use two
/// 16-row tables (`u * R = lo(u) * R + hi(u) * R`), which keeps the whole set inside a 32 KiB
/// L1 cache for wide registers at the price of one more lookup per byte.
#[derive(Clone)]
struct Slice8<const NW: usize, const NB: usize> {
    bytes: Box<[[[u64; NW]; 256]; NB]>,
    nibbles: Box<[[[[u64; NW]; 16]; 2]; 8]>,
}

/// One-byte-per-step table for wide registers: row `u` (`nw` words) is `u * x^nsym mod g(x)`.
#[derive(Clone)]
struct Wide {
    nw: usize,
    t: Box<[u64]>,
}

#[derive(Clone)]
enum Kernel {
    W1(Slice8<1, 8>),
    W2(Slice8<2, 8>),
    W3(Slice8<3, 5>),
    W4(Slice8<4, 4>),
    Wide(Wide),
}

/// The largest register (words) a codec can need: 254 parity bytes.
const MAX_WORDS: usize = MAX_NSYM.div_ceil(8);

/// A remainder register: `nsym` bytes left-aligned in big-endian words, the rest zero.
type Reg = [u64; MAX_WORDS];

/// The tables of the SIMD path: the parity of each message position, as rows for
/// [`RowTable::row_sum`].
#[derive(Clone)]
struct SimdTables {
    isa: Simd,
    /// Row `q` (`q < 255 - nsym`) holds `x^(254 - q) mod g(x)` (`nsym` bytes, highest degree
    /// first, zero padded to `nsym` rounded up to a multiple of 32, the kernel width): the
    /// parity of a 1 at byte `q` of a full-length message. A `k`-byte message starts at row
    /// `255 - nsym - k`. Laid out for `isa` (see [`RowTable`]).
    rows: RowTable,
}

/// Forney's formula needs `Omega` and `Lambda'` at each root: all positions at once on the
/// SIMD path, or per root (as sparse log polynomials) on the scalar path.
// One lives on the stack per correcting decode; boxing either variant would allocate.
#[allow(clippy::large_enum_variant)]
enum Evals {
    /// `omega[e] = Omega(alpha^-e) - omega_0`, `odd[e] = (x Lambda'(x))(alpha^-e)`.
    AllPositions {
        omega: [u8; MAX_WIDTH],
        odd: [u8; MAX_WIDTH],
    },
    PerRoot {
        omega: LogPoly,
        dlambda: LogPoly,
    },
}

/// A Reed-Solomon encoder and decoder for one parity count (see the module docs).
#[derive(Clone)]
pub struct RsCodec {
    nsym: usize,
    /// `g(x)`, monic, highest degree first (`nsym + 1` coefficients).
    gen: Vec<u8>,
    kernel: Kernel,
    /// The SIMD path, if the CPU has it (see [`super::simd`]); `None` runs `kernel`.
    simd: Option<SimdTables>,
}

impl core::fmt::Debug for RsCodec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RsCodec").field("nsym", &self.nsym).finish()
    }
}

/// The generator polynomial `prod_{i < nsym} (x - alpha^i)`, highest degree first (fcr = 0).
pub fn generator_poly(nsym: usize) -> Vec<u8> {
    let mut g = vec![1u8];
    for i in 0..nsym {
        let root = EXP[i % 255];
        // g(x) * (x + root)
        let mut next = vec![0u8; g.len() + 1];
        for (j, &c) in g.iter().enumerate() {
            next[j] ^= c;
            next[j + 1] ^= gf256::mul(c, root);
        }
        g = next;
    }
    g
}

/// One slicing step: feeds the eight message bytes `m` (big-endian) into the register.
#[inline(always)]
fn step8<const NW: usize, const NB: usize>(
    k: &Slice8<NW, NB>,
    reg: &[u64; NW],
    m: u64,
) -> [u64; NW] {
    let u = reg[0] ^ m;
    // Two accumulators keep the XOR chains short; the branch on `b` folds away when unrolled.
    let mut acc = [[0u64; NW]; 2];
    for b in 0..8 {
        let byte = ((u >> (56 - 8 * b)) & 0xff) as usize;
        let a = &mut acc[b & 1];
        if b < NB {
            let row = &k.bytes[b][byte];
            for w in 0..NW {
                a[w] ^= row[w];
            }
        } else {
            let lo = &k.nibbles[b][0][byte & 15];
            let hi = &k.nibbles[b][1][byte >> 4];
            for w in 0..NW {
                a[w] ^= lo[w] ^ hi[w];
            }
        }
    }
    let mut next = [0u64; NW];
    for w in 0..NW {
        let shifted = if w + 1 < NW { reg[w + 1] } else { 0 };
        next[w] = acc[0][w] ^ acc[1][w] ^ shifted;
    }
    next
}

/// The remainder register of `msg(x) * x^nsym mod g(x)`, eight bytes per step.
#[inline(always)]
fn remainder8<const NW: usize, const NB: usize>(k: &Slice8<NW, NB>, msg: &[u8]) -> [u64; NW] {
    let mut reg = [0u64; NW];
    // Leading zero symbols do not change the remainder, so the first `len % 8` bytes are fed
    // as one step padded with zeros in front: every step then takes eight bytes.
    let head = msg.len() % 8;
    if head != 0 {
        let mut first = [0u8; 8];
        first[8 - head..].copy_from_slice(&msg[..head]);
        reg = step8(k, &reg, u64::from_be_bytes(first));
    }
    for c in msg[head..].chunks_exact(8) {
        let m = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        reg = step8(k, &reg, m);
    }
    reg
}

fn remainder_wide(k: &Wide, msg: &[u8]) -> Reg {
    let nw = k.nw;
    let mut reg = [0u64; MAX_WORDS];
    for &m in msg {
        let u = (reg[0] >> 56) as u8 ^ m;
        let row = &k.t[u as usize * nw..u as usize * nw + nw];
        for w in 0..nw - 1 {
            reg[w] = ((reg[w] << 8) | (reg[w + 1] >> 56)) ^ row[w];
        }
        reg[nw - 1] = (reg[nw - 1] << 8) ^ row[nw - 1];
    }
    reg
}

fn widen<const NW: usize>(r: [u64; NW]) -> Reg {
    let mut out = [0u64; MAX_WORDS];
    out[..NW].copy_from_slice(&r);
    out
}

/// Packs `bytes` (at most `8 * MAX_WORDS`) left-aligned into big-endian words.
fn pack(bytes: &[u8]) -> Reg {
    let mut reg = [0u64; MAX_WORDS];
    let mut chunks = bytes.chunks_exact(8);
    for (w, c) in (&mut chunks).enumerate() {
        reg[w] = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        reg[bytes.len() / 8] = u64::from_be_bytes(last);
    }
    reg
}

/// Packs at most `8 * NW` parity bytes left-aligned into `NW` big-endian words.
#[inline(always)]
fn pack_words<const NW: usize>(bytes: &[u8]) -> [u64; NW] {
    let mut words = [0u64; NW];
    let mut buf = [0u8; 32];
    let n = bytes.len().min(8 * NW);
    buf[..n].copy_from_slice(&bytes[..n]);
    for (w, word) in words.iter_mut().enumerate() {
        let c = &buf[8 * w..8 * w + 8];
        *word = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    }
    words
}

/// Writes the first `out.len()` register bytes to `out`.
fn unpack(reg: &Reg, out: &mut [u8]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = (reg[i / 8] >> (56 - 8 * (i % 8))) as u8;
    }
}

/// Byte-at-a-time LFSR over a word register of `nw` words using a `u * x^nsym` table.
fn lfsr_bytes(t1: &[u64], nw: usize, bytes: &[u8]) -> Reg {
    remainder_wide(
        &Wide {
            nw,
            t: t1.to_vec().into_boxed_slice(),
        },
        bytes,
    )
}

fn build_slice8<const NW: usize, const NB: usize>(t1: &[u64]) -> Slice8<NW, NB> {
    let mut bytes: Box<[[[u64; NW]; 256]; NB]> = vec![[[0u64; NW]; 256]; NB]
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| unreachable!("NB tables"));
    let mut nibbles: Box<[[[[u64; NW]; 16]; 2]; 8]> = vec![[[[0u64; NW]; 16]; 2]; 8]
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| unreachable!("eight nibble tables"));
    // Row for byte u at step position b: u * x^(nsym + 7 - b), i.e. u followed by 7 - b zeros.
    let row = |b: usize, u: u8| {
        let mut msg = [0u8; 8];
        msg[0] = u;
        let reg = lfsr_bytes(t1, NW, &msg[..8 - b]);
        let mut out = [0u64; NW];
        out.copy_from_slice(&reg[..NW]);
        out
    };
    for (b, table) in bytes.iter_mut().enumerate() {
        for (u, r) in table.iter_mut().enumerate() {
            *r = row(b, u as u8);
        }
    }
    for (b, pair) in nibbles.iter_mut().enumerate().skip(NB) {
        for v in 0..16u8 {
            pair[0][v as usize] = row(b, v);
            pair[1][v as usize] = row(b, v << 4);
        }
    }
    Slice8 { bytes, nibbles }
}

impl RsCodec {
    /// A codec with `nsym` parity symbols per codeword (`t = nsym / 2` correctable errors).
    /// It uses the fastest kernel this CPU has (the first of [`RsKernel::available`]: GFNI,
    /// then AVX2, then SSSE3 on x86-64, NEON on aarch64, else the portable one), unless
    /// the portable one is faster for this code ([`RsKernel::beats_scalar`]: SSSE3 with at
    /// most 8 parity bytes); all give the same results on every input.
    pub fn new(nsym: usize) -> Result<Self, RsError> {
        let mut c = Self::new_scalar(nsym)?;
        c.simd = Simd::detect()
            .filter(|isa| isa.kernel().beats_scalar(nsym))
            .map(|isa| c.simd_tables(isa));
        Ok(c)
    }

    /// A codec that runs `kernel`, whatever better one the CPU has: for tests and benchmarks
    /// that compare the paths on one host. `RsKernel::Scalar` is [`RsCodec::new_scalar`].
    ///
    /// # Errors
    /// [`RsError::BadParity`] as for [`RsCodec::new`]; [`RsError::KernelUnavailable`] if this
    /// CPU lacks the kernel's features ([`RsKernel::is_available`]).
    pub fn with_kernel(nsym: usize, kernel: RsKernel) -> Result<Self, RsError> {
        let mut c = Self::new_scalar(nsym)?;
        if kernel != RsKernel::Scalar {
            let isa = Simd::with_kernel(kernel).ok_or(RsError::KernelUnavailable(kernel))?;
            c.simd = Some(c.simd_tables(isa));
        }
        Ok(c)
    }

    /// The same codec restricted to its portable (scalar) kernels, whatever the CPU: the
    /// reference that tests compare the SIMD path with, and the benchmark's baseline.
    pub fn new_scalar(nsym: usize) -> Result<Self, RsError> {
        if !(1..=MAX_NSYM).contains(&nsym) {
            return Err(RsError::BadParity(nsym));
        }
        let gen = generator_poly(nsym);
        let nw = nsym.div_ceil(8);
        // The one-byte table: u * x^nsym mod g(x) = u * (g(x) - x^nsym), i.e. u times g's
        // lower coefficients, left-aligned in nw words.
        let mut t1 = vec![0u64; 256 * nw];
        let mut row = [0u8; 8 * MAX_WORDS];
        for u in 0..256usize {
            for (i, r) in row[..nsym].iter_mut().enumerate() {
                *r = gf256::mul(u as u8, gen[i + 1]);
            }
            let reg = pack(&row[..nsym]);
            t1[u * nw..u * nw + nw].copy_from_slice(&reg[..nw]);
        }
        let kernel = match nw {
            1 => Kernel::W1(build_slice8::<1, 8>(&t1)),
            2 => Kernel::W2(build_slice8::<2, 8>(&t1)),
            3 => Kernel::W3(build_slice8::<3, 5>(&t1)),
            4 => Kernel::W4(build_slice8::<4, 4>(&t1)),
            _ => {
                debug_assert!(nw > SLICE_MAX_WORDS);
                Kernel::Wide(Wide {
                    nw,
                    t: t1.into_boxed_slice(),
                })
            }
        };
        Ok(RsCodec {
            nsym,
            gen,
            kernel,
            simd: None,
        })
    }

    /// Builds the SIMD path's parity rows by stepping `x^i mod g(x)` from `i = nsym` up.
    fn simd_tables(&self, isa: Simd) -> SimdTables {
        let nsym = self.nsym;
        let width = nsym.div_ceil(32) * 32;
        let rows_n = MAX_N - nsym;
        let mut rows = vec![0u8; rows_n * width];
        // x^nsym mod g(x) = g's lower coefficients (g is monic; minus is plus).
        let mut r = [0u8; MAX_NSYM];
        r[..nsym].copy_from_slice(&self.gen[1..]);
        for q in (0..rows_n).rev() {
            rows[q * width..q * width + nsym].copy_from_slice(&r[..nsym]);
            // r <- x * r mod g(x): shift out the top coefficient and fold it back through g.
            let top = r[0];
            for j in 0..nsym {
                let next = if j + 1 < nsym { r[j + 1] } else { 0 };
                r[j] = next ^ gf256::mul(top, self.gen[j + 1]);
            }
        }
        SimdTables {
            isa,
            rows: RowTable::new(isa, &rows, width),
        }
    }

    /// True if this codec runs a SIMD kernel (see [`RsCodec::new`]).
    pub fn uses_simd(&self) -> bool {
        self.simd.is_some()
    }

    /// The kernel this codec runs.
    pub fn kernel(&self) -> RsKernel {
        self.simd
            .as_ref()
            .map_or(RsKernel::Scalar, |s| s.isa.kernel())
    }

    /// Parity symbols per codeword (`n - k`).
    pub fn nsym(&self) -> usize {
        self.nsym
    }

    /// Symbol errors the code corrects without erasures (`nsym / 2`).
    pub fn t(&self) -> usize {
        self.nsym / 2
    }

    /// The largest message (`k`) a codeword can carry: `255 - nsym`.
    pub fn max_message(&self) -> usize {
        MAX_N - self.nsym
    }

    /// The generator polynomial, monic, highest degree first.
    pub fn generator(&self) -> &[u8] {
        &self.gen
    }

    /// Writes the parity of `msg` (`msg(x) * x^nsym mod g(x)`) to `out[..nsym]`.
    fn parity_into(&self, msg: &[u8], out: &mut [u8; MAX_WIDTH]) {
        match &self.simd {
            Some(s) => {
                let first = MAX_N - self.nsym - msg.len();
                let width = self.nsym.div_ceil(32) * 32;
                s.rows.row_sum(msg, first, &mut out[..width]);
            }
            None => unpack(&self.remainder(msg), &mut out[..self.nsym]),
        }
    }

    /// [`RsCodec::parity_into`] for `K` messages of equal length (full blocks of a frame),
    /// which the AVX2 shuffle kernel computes in one pass over the rows.
    fn parity_many_into<const K: usize>(&self, msgs: [&[u8]; K], out: &mut [[u8; MAX_WIDTH]; K]) {
        match &self.simd {
            Some(s) => {
                let first = MAX_N - self.nsym - msgs[0].len();
                let width = self.nsym.div_ceil(32) * 32;
                s.rows
                    .row_sum_many(msgs, first, out.each_mut().map(|o| &mut o[..width]));
            }
            None => {
                for (m, o) in msgs.into_iter().zip(out) {
                    self.parity_into(m, o);
                }
            }
        }
    }

    /// Checks that `blocks.len()` cuts into codewords of `n` bytes, the last piece shorter
    /// but still a codeword length (what [`RsCodec::encode_blocks`] and
    /// [`RsCodec::decode_blocks`] accept).
    fn check_blocks(&self, len: usize, n: usize) -> Result<(), RsError> {
        self.check_len(n)?;
        match len % n {
            0 => Ok(()),
            last => self.check_len(last),
        }
    }

    fn remainder(&self, msg: &[u8]) -> Reg {
        match &self.kernel {
            Kernel::W1(k) => widen(remainder8(k, msg)),
            Kernel::W2(k) => widen(remainder8(k, msg)),
            Kernel::W3(k) => widen(remainder8(k, msg)),
            Kernel::W4(k) => widen(remainder8(k, msg)),
            Kernel::Wide(k) => remainder_wide(k, msg),
        }
    }

    fn check_len(&self, n: usize) -> Result<(), RsError> {
        if n < self.nsym || n > MAX_N {
            Err(RsError::BadLength {
                len: n,
                nsym: self.nsym,
            })
        } else {
            Ok(())
        }
    }

    /// Computes the `nsym` parity bytes of `msg` into `parity`.
    pub fn encode(&self, msg: &[u8], parity: &mut [u8]) -> Result<(), RsError> {
        self.check_len(msg.len() + self.nsym)?;
        if parity.len() != self.nsym {
            return Err(RsError::BadParityBuffer {
                got: parity.len(),
                nsym: self.nsym,
            });
        }
        let mut out = [0u8; MAX_WIDTH];
        self.parity_into(msg, &mut out);
        parity.copy_from_slice(&out[..self.nsym]);
        Ok(())
    }

    /// Fills the last `nsym` bytes of `codeword` with the parity of the bytes before them.
    pub fn encode_in_place(&self, codeword: &mut [u8]) -> Result<(), RsError> {
        self.check_len(codeword.len())?;
        let k = codeword.len() - self.nsym;
        let (msg, parity) = codeword.split_at_mut(k);
        let mut out = [0u8; MAX_WIDTH];
        self.parity_into(msg, &mut out);
        parity.copy_from_slice(&out[..self.nsym]);
        Ok(())
    }

    /// The parities of the `K` full codewords of `n` bytes at the start of `words`, computed
    /// together ([`RsCodec::parity_many_into`]).
    fn group_parity<const K: usize>(&self, words: &[u8], n: usize) -> [[u8; MAX_WIDTH]; K] {
        let k = n - self.nsym;
        let mut par = [[0u8; MAX_WIDTH]; K];
        self.parity_many_into(core::array::from_fn(|i| &words[i * n..i * n + k]), &mut par);
        par
    }

    /// How many of the next codewords go through the kernel together, `full` of them being
    /// full (`n` bytes) codewords: four, two or one; always one on kernels that gain nothing
    /// from it ([`RowTable::shares_rows`]).
    fn group_len(&self, full: usize) -> usize {
        match full {
            _ if !self.simd.as_ref().is_some_and(|s| s.rows.shares_rows()) => 1,
            4.. => 4,
            2 | 3 => 2,
            _ => 1,
        }
    }

    /// Hands each codeword of `blocks` (every `n` bytes, the last piece possibly shorter) to
    /// `each` in order with the parity of its message part: computed for groups of full
    /// codewords together where the kernel gains from it ([`RsCodec::group_len`]), else one
    /// by one. Stops at the first error of `each`.
    fn for_each_block(
        &self,
        blocks: &mut [u8],
        n: usize,
        mut each: impl FnMut(&mut [u8], &[u8]) -> Result<(), RsError>,
    ) -> Result<(), RsError> {
        self.check_blocks(blocks.len(), n)?;
        let mut rest = blocks;
        while !rest.is_empty() {
            let group = self.group_len(rest.len() / n);
            let (words, tail) = rest.split_at_mut((group * n).min(rest.len()));
            let mut one = [[0u8; MAX_WIDTH]; 1];
            let par: &[[u8; MAX_WIDTH]] = match group {
                4 => &self.group_parity::<4>(words, n),
                2 => &self.group_parity::<2>(words, n),
                _ => {
                    self.parity_into(&words[..words.len() - self.nsym], &mut one[0]);
                    &one
                }
            };
            for (w, p) in words.chunks_mut(n).zip(par) {
                each(w, &p[..self.nsym])?;
            }
            rest = tail;
        }
        Ok(())
    }

    /// Encodes the consecutive codewords of `blocks` in place: every `n` bytes are one
    /// codeword (message, then `nsym` parity bytes to be filled), and the last piece may be
    /// shorter (a shortened codeword), as the RS service lays out a frame
    /// (`service/rs_fec/frame.rs`). The result is that of [`RsCodec::encode_in_place`] on each
    /// piece; full codewords go through the kernel four or two at a time, which the AVX2
    /// shuffle kernel makes faster (it reads each parity row once for all of them).
    ///
    /// # Errors
    /// [`RsError::BadLength`] if `n` or the last piece's length is not a codeword length
    /// (`nsym..=255`); nothing is written then.
    pub fn encode_blocks(&self, blocks: &mut [u8], n: usize) -> Result<(), RsError> {
        self.for_each_block(blocks, n, |word, parity| {
            let k = word.len() - parity.len();
            word[k..].copy_from_slice(parity);
            Ok(())
        })
    }

    /// Decodes the consecutive codewords of `blocks` (laid out as for
    /// [`RsCodec::encode_blocks`]) in order, as [`RsCodec::decode`] would one by one, and
    /// calls `corrected` with each block's count of changed symbols (0 for a clean one). Stops
    /// at the first block beyond repair and returns its error, leaving it and the blocks after
    /// it as they were. Full codewords are checked four or two at a time (the clean-decode
    /// path); only a block that fails the check pays for correction.
    ///
    /// # Errors
    /// [`RsError::BadLength`] as for [`RsCodec::encode_blocks`] (nothing is touched), or the
    /// error of the first block that does not decode.
    pub fn decode_blocks(
        &self,
        blocks: &mut [u8],
        n: usize,
        mut corrected: impl FnMut(usize),
    ) -> Result<(), RsError> {
        self.for_each_block(blocks, n, |word, parity| {
            let k = word.len() - parity.len();
            corrected(if word[k..] == *parity {
                0
            } else {
                self.decode(word)?
            });
            Ok(())
        })
    }

    /// The residue `c(x) mod g(x)` of `codeword` (all zero for a codeword) in `out[..nsym]`,
    /// highest degree first.
    fn residue_into(&self, codeword: &[u8], out: &mut [u8; MAX_WIDTH]) {
        let k = codeword.len() - self.nsym;
        self.parity_into(&codeword[..k], out);
        for (o, &p) in out.iter_mut().zip(&codeword[k..]) {
            *o ^= p;
        }
    }

    /// True if `codeword` (of valid length) has a zero residue: the clean-decode fast path,
    /// which keeps the register in `NW` words instead of a full-width register.
    fn clean(&self, codeword: &[u8]) -> bool {
        let k = codeword.len() - self.nsym;
        let (msg, parity) = codeword.split_at(k);
        if self.simd.is_some() {
            let mut out = [0u8; MAX_WIDTH];
            self.parity_into(msg, &mut out);
            return out[..self.nsym] == *parity;
        }
        match &self.kernel {
            Kernel::W1(t) => remainder8(t, msg) == pack_words::<1>(parity),
            Kernel::W2(t) => remainder8(t, msg) == pack_words::<2>(parity),
            Kernel::W3(t) => remainder8(t, msg) == pack_words::<3>(parity),
            Kernel::W4(t) => remainder8(t, msg) == pack_words::<4>(parity),
            Kernel::Wide(_) => {
                let mut r = [0u8; MAX_WIDTH];
                self.residue_into(codeword, &mut r);
                r[..self.nsym].iter().all(|&b| b == 0)
            }
        }
    }

    /// True if `codeword` is a codeword (no detectable error).
    pub fn is_codeword(&self, codeword: &[u8]) -> Result<bool, RsError> {
        self.check_len(codeword.len())?;
        Ok(self.clean(codeword))
    }

    /// Corrects `codeword` in place; returns the number of symbols changed (0 for a clean word).
    pub fn decode(&self, codeword: &mut [u8]) -> Result<usize, RsError> {
        self.decode_with_erasures(codeword, &[])
    }

    /// Corrects `codeword` in place given the positions (byte indices) of known-bad symbols.
    /// Corrects any `e` errors and `f = erasures.len()` erasures with `2e + f <= nsym`.
    pub fn decode_with_erasures(
        &self,
        codeword: &mut [u8],
        erasures: &[usize],
    ) -> Result<usize, RsError> {
        self.check_len(codeword.len())?;
        let n = codeword.len();
        let nsym = self.nsym;
        if erasures.len() > nsym {
            return Err(RsError::BadErasures);
        }
        for (i, &p) in erasures.iter().enumerate() {
            if p >= n || erasures[..i].contains(&p) {
                return Err(RsError::BadErasures);
            }
        }
        // The residue decides cleanliness; the scalar path has a cheaper test for that first.
        let mut r = [0u8; MAX_WIDTH];
        if self.simd.is_none() && self.clean(codeword) {
            return Ok(0);
        }
        self.residue_into(codeword, &mut r);
        if r[..nsym].iter().all(|&x| x == 0) {
            return Ok(0);
        }
        // Syndromes S_j = c(alpha^j) = r(alpha^j), r = c mod g, since g(alpha^j) = 0 (fcr = 0).
        let mut synd = [0u8; MAX_WIDTH];
        match &self.simd {
            Some(s) => syndromes_simd(&s.isa, &r[..nsym], &mut synd),
            None => syndromes_from_residue(&r[..nsym], &mut synd[..nsym]),
        }
        let mut lambda = [0u8; MAX_N + 1];
        let nerr = berlekamp_massey(&synd[..nsym], erasures, n, &mut lambda)?;
        let mut pos = [0usize; MAX_N];
        // On the SIMD path, Omega and the odd part of Lambda at every alpha^-e, for Forney.
        let mut odd = [0u8; MAX_WIDTH];
        let found = match &self.simd {
            Some(s) => chien_search_simd(&s.isa, &lambda[..=nerr], n, &mut pos, &mut odd),
            None => chien_search(&lambda[..=nerr], n, &mut pos),
        };
        if found != nerr {
            return Err(RsError::TooManyErrors);
        }
        // Forney (fcr = 0): e_k = X_k * Omega(X_k^-1) / Lambda'(X_k^-1),
        // Omega(x) = S(x) Lambda(x) mod x^nsym, of degree below L by the key equation (the
        // higher coefficients vanish for a consistent locator; the final check catches the rest).
        let mut omega = [0u8; MAX_N];
        for i in 0..nerr {
            let mut acc = 0u8;
            for j in 0..=i.min(nerr) {
                acc ^= gf256::mul(lambda[j], synd[i - j]);
            }
            omega[i] = acc;
        }
        // Omega and Lambda' at the roots X_k^-1. The SIMD path has them for every position:
        // Omega from one more kernel call, and Lambda'(x) = odd(x) / x from the Chien search,
        // so there e_k = Omega(X_k^-1) / odd(X_k^-1). The scalar path evaluates per root.
        let evals = match &self.simd {
            Some(s) => {
                let mut om = [0u8; MAX_WIDTH];
                sum_at_inverse_powers(&s.isa, &omega[..nerr], 1, 1, n, &mut om);
                Evals::AllPositions { omega: om, odd }
            }
            None => Evals::PerRoot {
                omega: LogPoly::new(&omega[..nerr], 0, |_| true),
                // Lambda'(x): in characteristic 2 only the odd powers survive, lowered by one.
                dlambda: LogPoly::new(&lambda[..=nerr], 1, |i| i % 2 == 1),
            },
        };
        let mut mags = [0u8; MAX_N];
        for k in 0..found {
            let e = n - 1 - pos[k]; // X_k = alpha^e, X_k^-1 = alpha^(255 - e)
                                    // e_k = alpha^x_log * num / den.
            let (num, den, x_log) = match &evals {
                Evals::AllPositions { omega: om, odd } => (omega[0] ^ om[e], odd[e], 0),
                Evals::PerRoot { omega, dlambda } => {
                    let xinv = (255 - e) % 255;
                    (omega.eval_alpha(xinv), dlambda.eval_alpha(xinv), e)
                }
            };
            if den == 0 {
                return Err(RsError::TooManyErrors);
            }
            let mag = if num == 0 {
                0
            } else {
                let l = x_log + gf256::LOG[num as usize] as usize + 255
                    - gf256::LOG[den as usize] as usize;
                EXP[l % 255]
            };
            if mag == 0 && !erasures.contains(&pos[k]) {
                // A located error of size zero: the locator is not consistent.
                return Err(RsError::TooManyErrors);
            }
            mags[k] = mag;
        }
        let mut changed = 0;
        for k in 0..found {
            codeword[pos[k]] ^= mags[k];
            changed += (mags[k] != 0) as usize;
        }
        // Verify: the corrected word must be a codeword; otherwise undo and report.
        if !self.clean(codeword) {
            for k in 0..found {
                codeword[pos[k]] ^= mags[k];
            }
            return Err(RsError::TooManyErrors);
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Textbook synthetic division (as in reedsolo's `rs_encode_msg`), written independently
    /// of the table kernels: the reference the fast encoder must match.
    fn slow_parity(gen: &[u8], msg: &[u8]) -> Vec<u8> {
        let nsym = gen.len() - 1;
        let mut out = msg.to_vec();
        out.resize(msg.len() + nsym, 0);
        for i in 0..msg.len() {
            let coef = out[i];
            if coef != 0 {
                for j in 1..gen.len() {
                    out[i + j] ^= gf256::mul(gen[j], coef);
                }
            }
        }
        out[msg.len()..].to_vec()
    }

    fn random_bytes(rng: &mut ChaCha8Rng, n: usize) -> Vec<u8> {
        (0..n).map(|_| rng.gen()).collect()
    }

    /// Puts `count` errors (nonzero XOR values) at distinct random positions.
    fn corrupt(rng: &mut ChaCha8Rng, cw: &mut [u8], count: usize) -> Vec<usize> {
        let mut pos = Vec::new();
        while pos.len() < count {
            let p = rng.gen_range(0..cw.len());
            if !pos.contains(&p) {
                pos.push(p);
                cw[p] ^= rng.gen_range(1..=255u8);
            }
        }
        pos
    }

    #[test]
    fn matches_reedsolo_hello_fixture() {
        // reedsolo 1.7.0: RSCodec(4).encode(b"hello") == b"hello\xcb\xba\xa9\xba".
        let c = RsCodec::new(4).unwrap();
        let mut p = [0u8; 4];
        c.encode(b"hello", &mut p).unwrap();
        assert_eq!(p, [0xcb, 0xba, 0xa9, 0xba]);
    }

    #[test]
    fn generator_has_the_consecutive_roots() {
        for nsym in [1usize, 2, 7, 32, 100, 254] {
            let g = generator_poly(nsym);
            assert_eq!(g.len(), nsym + 1);
            assert_eq!(g[0], 1);
            for (i, &root) in EXP[..nsym].iter().enumerate() {
                assert_eq!(gf256::poly_eval(&g, root), 0, "alpha^{i} not a root");
            }
            assert_ne!(gf256::poly_eval(&g, EXP[nsym % 255]), 0);
        }
    }

    #[test]
    fn fast_encoder_matches_synthetic_division() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0001);
        for nsym in (1..=40).chain([48, 64, 74, 100, 128, 160, 198, 254]) {
            let c = RsCodec::new(nsym).unwrap();
            for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 63, 255 - nsym] {
                if len + nsym > 255 {
                    continue;
                }
                let msg = random_bytes(&mut rng, len);
                let mut p = vec![0u8; nsym];
                c.encode(&msg, &mut p).unwrap();
                assert_eq!(p, slow_parity(c.generator(), &msg), "nsym {nsym} len {len}");
                let mut cw = msg.clone();
                cw.extend_from_slice(&p);
                assert!(c.is_codeword(&cw).unwrap());
                let mut cw2 = msg.clone();
                cw2.resize(len + nsym, 0xaa);
                c.encode_in_place(&mut cw2).unwrap();
                assert_eq!(cw2, cw);
            }
        }
    }

    #[test]
    fn corrects_up_to_t_errors_in_full_and_shortened_codes() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0002);
        for (n, nsym) in [
            (255, 32),
            (255, 16),
            (255, 4),
            (120, 10),
            (40, 12),
            (255, 198),
            (17, 2),
        ] {
            let c = RsCodec::new(nsym).unwrap();
            for errs in 0..=c.t() {
                for _ in 0..4 {
                    let mut cw = random_bytes(&mut rng, n);
                    c.encode_in_place(&mut cw).unwrap();
                    let orig = cw.clone();
                    corrupt(&mut rng, &mut cw, errs);
                    assert_eq!(c.decode(&mut cw), Ok(errs), "n {n} nsym {nsym} errs {errs}");
                    assert_eq!(cw, orig);
                }
            }
        }
    }

    #[test]
    fn odd_parity_counts_correct_floor_half() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0003);
        let c = RsCodec::new(7).unwrap();
        assert_eq!(c.t(), 3);
        for _ in 0..50 {
            let mut cw = random_bytes(&mut rng, 60);
            c.encode_in_place(&mut cw).unwrap();
            let orig = cw.clone();
            corrupt(&mut rng, &mut cw, 3);
            assert_eq!(c.decode(&mut cw), Ok(3));
            assert_eq!(cw, orig);
        }
    }

    #[test]
    fn erasures_and_errors_within_bound() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0004);
        let nsym = 16;
        let c = RsCodec::new(nsym).unwrap();
        for f in 0..=nsym {
            let e = (nsym - f) / 2;
            for _ in 0..5 {
                let mut cw = random_bytes(&mut rng, 200);
                c.encode_in_place(&mut cw).unwrap();
                let orig = cw.clone();
                let pos = corrupt(&mut rng, &mut cw, e + f);
                let (erased, _) = pos.split_at(f);
                let got = c.decode_with_erasures(&mut cw, erased).unwrap();
                assert_eq!(cw, orig, "f {f} e {e}");
                assert_eq!(got, e + f);
            }
        }
        // An erasure on a correct symbol costs nothing and changes nothing.
        let mut cw = random_bytes(&mut rng, 50);
        c.encode_in_place(&mut cw).unwrap();
        let orig = cw.clone();
        cw[3] ^= 9;
        assert_eq!(c.decode_with_erasures(&mut cw, &[3, 10]), Ok(1));
        assert_eq!(cw, orig);
    }

    #[test]
    fn failure_is_reported_and_leaves_the_word_untouched() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0005);
        let c = RsCodec::new(8).unwrap();
        let mut failures = 0;
        for _ in 0..300 {
            let mut cw = random_bytes(&mut rng, 100);
            c.encode_in_place(&mut cw).unwrap();
            let orig = cw.clone();
            let count = 5 + rng.gen_range(0..20);
            corrupt(&mut rng, &mut cw, count);
            let before = cw.clone();
            match c.decode(&mut cw) {
                Err(RsError::TooManyErrors) => {
                    failures += 1;
                    assert_eq!(cw, before);
                }
                Ok(_) => {
                    // A miscorrection lands on another codeword, never on garbage.
                    assert!(c.is_codeword(&cw).unwrap());
                    assert_ne!(cw, orig);
                }
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert!(failures > 250, "only {failures} failures reported");
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert_eq!(RsCodec::new(0).unwrap_err(), RsError::BadParity(0));
        assert_eq!(RsCodec::new(255).unwrap_err(), RsError::BadParity(255));
        let c = RsCodec::new(10).unwrap();
        let mut p = [0u8; 9];
        assert!(matches!(
            c.encode(&[1, 2], &mut p),
            Err(RsError::BadParityBuffer { .. })
        ));
        let mut long = vec![0u8; 256];
        assert!(matches!(
            c.decode(&mut long),
            Err(RsError::BadLength { .. })
        ));
        let mut short = vec![0u8; 9];
        assert!(matches!(
            c.decode(&mut short),
            Err(RsError::BadLength { .. })
        ));
        let mut cw = vec![0u8; 30];
        assert_eq!(
            c.decode_with_erasures(&mut cw, &[30]),
            Err(RsError::BadErasures)
        );
        assert_eq!(
            c.decode_with_erasures(&mut cw, &[2, 2]),
            Err(RsError::BadErasures)
        );
        // The all-zero word of any length is a codeword.
        assert_eq!(c.decode(&mut cw), Ok(0));
        let mut just_parity = vec![0u8; 10];
        assert_eq!(c.decode(&mut just_parity), Ok(0));
    }
}
