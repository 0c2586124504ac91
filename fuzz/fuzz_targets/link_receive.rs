//! Fuzz target: the whole receive path of a multi-service link — tag demultiplexing, CRC,
//! every service's frame parser and state machine, reassembly — fed arbitrary frames at
//! arbitrary times, interleaved with its own transmissions. Nothing may panic.
//!
//! The input layout and the checks are in `fuzz/checks/link_receive.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/link_receive/`.
#![no_main]

#[path = "../checks/link_receive.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
