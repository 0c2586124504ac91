//! The checks of the `link_frame` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: `[sel][frame...]`; bit 0 of `sel`: the link is tagged, bit 1: frames carry a
//! CRC-32. Invariant: the view never panics and a frame it accepts has lengths that add up.
//! Returns the service tag of an accepted frame.

use mslink_link::wire::{LinkFormat, LinkFrame};

/// The link format a selector byte picks.
pub fn format(sel: u8) -> LinkFormat {
    LinkFormat {
        tagged: sel & 1 != 0,
        crc: sel & 2 != 0,
    }
}

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> Option<u8> {
    let (&sel, frame) = data.split_first()?;
    let f = format(sel);
    let v = LinkFrame::new_checked(frame, f).ok()?;
    assert_eq!(v.service_bytes().len() + f.overhead(), frame.len());
    Some(v.tag())
}
