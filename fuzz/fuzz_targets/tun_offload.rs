//! Fuzz target: the TUN offloads (crates/io/src/gso.rs, coalesce.rs) on arbitrary reads.
//! A read either gives IP packets or an error with no output; whatever packets come out, the
//! write planner carries each exactly once, and a coalesced write cut again gives them back.
//!
//! The input layout and the checks are in `fuzz/checks/tun_offload.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/tun_offload/`.
#![no_main]

#[path = "../checks/tun_offload.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
