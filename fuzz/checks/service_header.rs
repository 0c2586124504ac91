//! The checks of the `service_header` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: `[sel][frame...]`. `sel % 3` picks the sequence width (8, 16, 32 bits), bit 3
//! segmentation, bit 4 the piggybacked ack. Invariant: parsing never panics, and a parsed
//! header re-emits to bytes that parse to the same header. Returns the parsed header, if any.

use mslink_link::wire::{Header, HeaderFormat, SeqWidth};

/// The header format a selector byte picks.
pub fn format(sel: u8) -> HeaderFormat {
    let width = [SeqWidth::W8, SeqWidth::W16, SeqWidth::W32][(sel % 3) as usize];
    HeaderFormat {
        width,
        segmented: sel & 8 != 0,
        piggyback_ack: sel & 16 != 0,
    }
}

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> Option<Header> {
    let (&sel, frame) = data.split_first()?;
    let f = format(sel);
    let (h, n) = f.parse(frame).ok()?;
    assert!(n <= frame.len());
    let mut out = vec![0u8; n];
    assert_eq!(f.emit(&h, &mut out), n);
    assert_eq!(f.parse(&out).map(|(h2, _)| h2), Ok(h));
    if let Header::Unknown { .. } = h {
        assert_eq!(n, 1);
    }
    Some(h)
}
