//! Fuzz target: the service header parser in every format; a parsed header re-emits to the
//! same bytes it was read from.
//!
//! The input layout and the checks are in `fuzz/checks/service_header.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/service_header/`.
#![no_main]

#[path = "../checks/service_header.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
