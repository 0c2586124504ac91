//! Fuzz target: the error-trace and period-trace text parsers; a parsed trace of either kind
//! re-serialises to text that parses to the same trace.
//!
//! The input layout and the checks are in `fuzz/checks/trace_parse.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/trace_parse/`.
#![no_main]

#[path = "../checks/trace_parse.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
