//! Fuzz target: the Reed-Solomon decoder on arbitrary received words (any parity count, any
//! length). It must never panic; when it claims success the word must be a codeword (its
//! parity checks), and when it fails the word must be left as it was.
//!
//! The input layout and the checks are in `fuzz/checks/rs_decode.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/rs_decode/`.
#![no_main]

#[path = "../checks/rs_decode.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
