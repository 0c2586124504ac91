//! Fuzz target: the mslink-wire header views and reprs (Ethernet, ETHDAA, IPv4, IPv6, UDP,
//! TCP and its options, the version-blind IP reader; docs/architecture.md, "Wire formats").
//! Invariants: no view or parse panics on any input, and every header that parses emits back
//! to a buffer that parses to the same repr.
//!
//! The input layout and the checks are in `fuzz/checks/stack_headers.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/stack_headers/`.
#![no_main]

#[path = "../checks/stack_headers.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
