//! Wire formats as zero-copy views and plain representations, one implementation for every
//! crate of mslink: Ethernet II and its DAA extension of 002 §4.2.1 ([`eth`]), IPv4 ([`ipv4`],
//! RFC 791), IPv6 ([`ipv6`], RFC 8200), either of them ([`ip`]), UDP ([`udp`], RFC 768), TCP
//! ([`tcp`], RFC 9293 with the options of RFC 7323 and RFC 2018), and the Internet checksum
//! ([`checksum`], RFC 1071) with its integrated copy-and-checksum variant (002 §2.2), and the
//! multi-service link layer's own frames and service headers ([`link`]).
//!
//! Contract. Each format has a view `Xxx<T: AsRef<[u8]>>` over a buffer that starts at the
//! header, with each field's byte range a `const` in the format's `field` module. `new_checked`
//! verifies, once, that every fixed field lies inside the buffer (and what the field accessors
//! need, such as IPv4's header length), so the accessors then index without further checks and
//! never panic; `new_unchecked` is for buffers the caller has sized (emitting). Views over
//! `AsMut<[u8]>` also have setters. A `XxxRepr` holds the header's values: `parse` (from a
//! checked view; validates what the protocol requires), `emit` (into a view of at least
//! `buffer_len()` bytes) and `buffer_len`. Unknown codepoints (ethertypes, protocols, flags,
//! options) are kept, never rejected here: whether a value is acceptable is the caller's
//! decision (docs/architecture.md, "Wire formats"). Failures are the small `Copy` [`WireError`].
//! Nothing here reads a clock or does I/O.

#![warn(missing_docs)]
pub mod checksum;
pub mod eth;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod link;
pub mod tcp;
pub mod udp;

/// Why a header could not be viewed or parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireError {
    /// The buffer is shorter than the header (or than a length field says).
    Truncated,
    /// A field holds a value the format itself forbids (IPv4 version or header length).
    Malformed,
    /// A length field inconsistent with the header.
    BadLength,
    /// The header checksum does not verify.
    BadChecksum,
    /// A valid feature this stack does not implement (IPv4 fragments).
    Unsupported,
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "buffer shorter than the header",
            WireError::Malformed => "malformed header field",
            WireError::BadLength => "inconsistent length field",
            WireError::BadChecksum => "header checksum does not verify",
            WireError::Unsupported => "unsupported feature",
        })
    }
}

impl std::error::Error for WireError {}

/// A field's byte range inside its header.
pub type Field = core::ops::Range<usize>;

/// Big-endian u16 at `r.start` (the caller's checked view guarantees the bytes exist).
#[inline(always)]
pub(crate) fn get_u16(b: &[u8], r: Field) -> u16 {
    u16::from_be_bytes([b[r.start], b[r.start + 1]])
}

/// Big-endian u32 at `r.start`.
#[inline(always)]
pub(crate) fn get_u32(b: &[u8], r: Field) -> u32 {
    u32::from_be_bytes([b[r.start], b[r.start + 1], b[r.start + 2], b[r.start + 3]])
}

/// The `N` bytes of field `r`.
#[inline(always)]
pub(crate) fn get_array<const N: usize>(b: &[u8], r: Field) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[r]);
    a
}
