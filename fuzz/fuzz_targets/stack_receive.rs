//! Fuzz target: the mslink-stack receive path (Ethernet/ETHDAA, IPv4, UDP, TCP) under LLM, DAA and
//! ILLM. The first byte picks architecture, checksum and ILP; the rest is one received frame.
//! Invariant: no panic, and the frame is delivered, consumed or counted as dropped exactly once.
//!
//! The input layout and the checks are in `fuzz/checks/stack_receive.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/stack_receive/`.
#![no_main]

#[path = "../checks/stack_receive.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
