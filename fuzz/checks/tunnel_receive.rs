//! The checks of the `tunnel_receive` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Two tunnel ends, A (initiator, at `A_ADDR`) and B (responder, at `B_ADDR`), built by
//! [`ends`] with fixed keys and seeds, carry a three-service link ([`LINK`]: `raw`, `sr` for
//! TCP, `fec`); each rekeys after sending 8 datagrams. Input: records `[op][len][dt][bytes...]`; each
//! advances the clock by `dt` milliseconds. `op & 3`:
//! * 0: `bytes` is a datagram to B;
//! * 1: `bytes` is a packet A sends; each datagram A then transmits reaches B with byte
//!   `bytes[0] % len` XORed with `bytes[1]` (unaltered when `bytes[1]` is 0, e.g. an IPv4
//!   packet with TOS 0);
//! * 2: B gets again the genuine datagram number `bytes[0]` (modulo those A sent so far);
//! * 3: `bytes` is a packet B sends.
//!
//! Datagrams come from `ANOTHER_ADDR` when `op & 0x80` is set, else from A's address. What B
//! sends reaches A. Invariant: nothing panics, and B accounts for every datagram exactly once
//! (rejected by cause, or accepted as a handshake, a frame or a keepalive). Returns B's
//! counters.

use mslink_link::config::LinkConfig;
use mslink_link::Instant;
use mslink_tunnel::config::SessionConfig;
use mslink_tunnel::handshake::Credentials;
use mslink_tunnel::keys::Key;
use mslink_tunnel::{Tunnel, TunnelStats};
use std::net::SocketAddr;

/// The link both ends carry.
pub const LINK: &str = "crc = false\ndefault_service = 'raw'\n[[service]]\nname = 'raw'\nscheme = 'raw'\n[[service]]\nname = 'sr'\nscheme = 'selective_repeat'\n[[service]]\nname = 'fec'\nscheme = 'xor_fec'\n[[rule]]\nservice = 'sr'\nprotocol = 'tcp'";
/// A's address.
pub const A_ADDR: &str = "192.0.2.1:1";
/// B's address.
pub const B_ADDR: &str = "192.0.2.2:2";
/// The other address a datagram may come from.
pub const ANOTHER_ADDR: &str = "203.0.113.5:7";
/// The clock at the start, in nanoseconds.
pub const START_NS: u64 = 1_000_000_000;

struct Fixed {
    link: LinkConfig,
    ca: Credentials,
    cb: Credentials,
}
static FIXED: std::sync::OnceLock<Fixed> = std::sync::OnceLock::new();

/// A fresh pair of ends (A, B), as every input starts with.
pub fn ends() -> (Tunnel, Tunnel) {
    let f = FIXED.get_or_init(|| {
        let (ka, kb) = (Key([1; 32]), Key([2; 32]));
        Fixed {
            link: toml::from_str(LINK).expect("valid link"),
            ca: Credentials::Keys {
                private: ka,
                peer_public: kb.public(),
            },
            cb: Credentials::Keys {
                private: kb,
                peer_public: ka.public(),
            },
        }
    });
    let b_addr: SocketAddr = B_ADDR.parse().unwrap();
    let cfg = SessionConfig {
        rekey_after_datagrams: 8,
        ..Default::default()
    };
    let a = Tunnel::new(&cfg, f.ca, &f.link, Some(b_addr), [3; 32]).unwrap();
    let b = Tunnel::new(&cfg, f.cb, &f.link, None, [4; 32]).unwrap();
    (a, b)
}

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> TunnelStats {
    let (mut a, mut b) = ends();
    let a_addr: SocketAddr = A_ADDR.parse().unwrap();
    let b_addr: SocketAddr = B_ADDR.parse().unwrap();
    let another: SocketAddr = ANOTHER_ADDR.parse().unwrap();
    let mut now = START_NS;
    let mut buf = Vec::new();
    let mut genuine: Vec<Vec<u8>> = Vec::new();
    let mut rest = data;
    while let [op, len, dt, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (bytes, next) = tail.split_at(n);
        rest = next;
        now += *dt as u64 * 1_000_000;
        let t = Instant::from_nanos(now);
        let from = if op & 0x80 != 0 { another } else { a_addr };
        match op & 3 {
            0 => b.handle_datagram(t, from, &mut bytes.to_vec()),
            1 => {
                // A genuine datagram from A (its handshake or a sealed packet), one byte altered.
                let _ = a.handle_packet(t, bytes);
                a.handle_timeout(t);
                while a.poll_transmit(t, &mut buf).is_some() {
                    let mut d = buf.clone();
                    if let (Some(&pos), Some(&x)) = (bytes.first(), bytes.get(1)) {
                        let i = pos as usize % d.len();
                        d[i] ^= x;
                    }
                    genuine.push(buf.clone());
                    b.handle_datagram(t, from, &mut d);
                }
            }
            2 => {
                // A replay (or first delivery) of a genuine datagram.
                if !genuine.is_empty() {
                    let i = bytes.first().copied().unwrap_or(0) as usize % genuine.len();
                    b.handle_datagram(t, from, &mut genuine[i].clone());
                }
            }
            _ => {
                let _ = b.handle_packet(t, bytes);
            }
        }
        b.handle_timeout(t);
        while b.poll_transmit(t, &mut buf).is_some() {
            a.handle_datagram(t, b_addr, &mut buf.clone());
        }
        while b.poll_deliver().is_some() {}
        while a.poll_deliver().is_some() {}
    }
    let s = b.stats();
    assert_eq!(
        s.datagrams_received,
        s.rejected.total()
            + s.frames_received
            + s.keepalives_received
            + s.handshakes_answered
            + s.handshakes_completed
            + s.cookies_received,
        "{s:?}"
    );
    s
}
