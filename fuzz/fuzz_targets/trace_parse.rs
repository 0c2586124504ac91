//! Fuzz target: the error-trace text parser; a parsed trace re-serialises to text that parses
//! to the same trace.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_channel::trace::Trace;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(t) = Trace::parse(text) {
        assert_eq!(Trace::parse(&t.to_text()).as_ref(), Ok(&t));
    }
});
