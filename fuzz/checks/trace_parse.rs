//! The checks of the `trace_parse` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: trace text (docs/traces.md), given to both line-oriented trace parsers: the per-frame
//! error trace and the period trace of `model = "period_trace"`. Invariant: neither parser
//! panics, and a parsed trace of either kind re-serialises to text that parses to the same
//! trace. Returns the parsed error trace ([`periods`] checks and returns the period trace).

use mslink_channel::fading::PeriodTrace;
use mslink_channel::trace::Trace;

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> Option<Trace> {
    let text = std::str::from_utf8(data).ok()?;
    periods(text);
    let t = Trace::parse(text).ok()?;
    assert_eq!(Trace::parse(&t.to_text()).as_ref(), Ok(&t));
    Some(t)
}

/// The period-trace half of the checks: the parsed period trace, round trip checked.
pub fn periods(text: &str) -> Option<PeriodTrace> {
    let t = PeriodTrace::parse(text).ok()?;
    assert_eq!(PeriodTrace::parse(&t.to_text()).as_ref(), Ok(&t));
    Some(t)
}
