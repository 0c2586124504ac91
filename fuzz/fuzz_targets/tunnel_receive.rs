//! Fuzz target: the tunnel's receive path — datagram parsing, session lookup, replay window,
//! ChaCha20-Poly1305 opening, handshake messages, and the multi-service link behind them —
//! fed raw datagrams, genuine datagrams with one byte altered, and replays of genuine ones,
//! at arbitrary times from arbitrary addresses. Nothing may panic, and every datagram is
//! accounted for exactly once: rejected by cause, or accepted as a handshake, a frame or a
//! keepalive.
//!
//! The input layout and the checks are in `fuzz/checks/tunnel_receive.rs`, which the seed test
//! (crates/cli/tests/fuzz_seeds.rs) runs on every seed in `fuzz/seeds/tunnel_receive/`.
#![no_main]

#[path = "../checks/tunnel_receive.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::run(data);
});
