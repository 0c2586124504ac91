//! Fuzz target: the link frame view (service tag, CRC-32).
//!
//! The input layout and the checks are in `fuzz/checks/link_frame.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/link_frame/`.
#![no_main]

#[path = "../checks/link_frame.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
