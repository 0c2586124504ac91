//! The checks of the `trace_parse` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: error-trace text (docs/traces.md). Invariant: the parser never panics, and a parsed
//! trace re-serialises to text that parses to the same trace. Returns the parsed trace.

use mslink_channel::trace::Trace;

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> Option<Trace> {
    let text = std::str::from_utf8(data).ok()?;
    let t = Trace::parse(text).ok()?;
    assert_eq!(Trace::parse(&t.to_text()).as_ref(), Ok(&t));
    Some(t)
}
