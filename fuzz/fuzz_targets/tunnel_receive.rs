//! Fuzz target: the tunnel's receive path — datagram parsing, session lookup, replay window,
//! ChaCha20-Poly1305 opening, handshake messages, and the multi-service link behind them —
//! fed raw datagrams, genuine datagrams with one byte altered, and replays of genuine ones,
//! at arbitrary times from arbitrary addresses. Nothing may panic, and every datagram is
//! accounted for exactly once: rejected by cause, or accepted as a handshake, a frame or a
//! keepalive.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_link::config::LinkConfig;
use mslink_link::Instant;
use mslink_tunnel::config::SessionConfig;
use mslink_tunnel::handshake::Credentials;
use mslink_tunnel::keys::Key;
use mslink_tunnel::Tunnel;
use std::net::SocketAddr;

const LINK: &str = "crc = false\ndefault_service = 'raw'\n[[service]]\nname = 'raw'\nscheme = 'raw'\n[[service]]\nname = 'sr'\nscheme = 'selective_repeat'\n[[service]]\nname = 'fec'\nscheme = 'xor_fec'\n[[rule]]\nservice = 'sr'\nprotocol = 'tcp'";

struct Fixed {
    link: LinkConfig,
    ca: Credentials,
    cb: Credentials,
}
static FIXED: std::sync::OnceLock<Fixed> = std::sync::OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let f = FIXED.get_or_init(|| {
        let (ka, kb) = (Key([1; 32]), Key([2; 32]));
        Fixed {
            link: toml::from_str(LINK).expect("valid link"),
            ca: Credentials::Keys { private: ka, peer_public: kb.public() },
            cb: Credentials::Keys { private: kb, peer_public: ka.public() },
        }
    });
    let (link, ca, cb) = (&f.link, f.ca, f.cb);
    let a_addr: SocketAddr = "192.0.2.1:1".parse().unwrap();
    let b_addr: SocketAddr = "192.0.2.2:2".parse().unwrap();
    let cfg = SessionConfig { rekey_after_datagrams: 8, ..Default::default() };
    let mut a = Tunnel::new(&cfg, ca, link, Some(b_addr), [3; 32]).unwrap();
    let mut b = Tunnel::new(&cfg, cb, link, None, [4; 32]).unwrap();
    let mut now = 1_000_000_000u64;
    let mut buf = Vec::new();
    let mut genuine: Vec<Vec<u8>> = Vec::new();
    // Records: [op][len][dt][bytes...]
    let mut rest = data;
    while let [op, len, dt, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (bytes, next) = tail.split_at(n);
        rest = next;
        now += *dt as u64 * 1_000_000;
        let t = Instant::from_nanos(now);
        let from: SocketAddr = if op & 0x80 != 0 { "203.0.113.5:7".parse().unwrap() } else { a_addr };
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
        while let Some(_) = b.poll_transmit(t, &mut buf) {
            a.handle_datagram(t, b_addr, &mut buf.clone());
        }
        while b.poll_deliver().is_some() {}
        while a.poll_deliver().is_some() {}
    }
    let s = b.stats();
    assert_eq!(
        s.datagrams_received,
        s.rejected.total() + s.frames_received + s.keepalives_received + s.handshakes_answered + s.handshakes_completed + s.cookies_received,
        "{s:?}"
    );
});
