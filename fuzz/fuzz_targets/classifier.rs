//! Fuzz target: the IP classifier on arbitrary packets.
//!
//! The input layout and the checks are in `fuzz/checks/classifier.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/classifier/`.
#![no_main]

#[path = "../checks/classifier.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
