//! Errors a tunnel end meets at start name the configuration key, its value and the fix
//! (issue 34): a missing or malformed key file, a `listen` port in use, a `tun.name` taken by
//! another program's TUN device. The first two need no root; the third makes its devices in a
//! namespace of its own and needs root (without it the test returns early with a note, unless
//! `MSLINK_REQUIRE_ROOT=1`, where the missing privilege is a failure).

// A system test that binds sockets and writes files: rule 1 (crates/tunnel/clippy.toml) binds
// the protocol modules.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![cfg(target_os = "linux")]

use std::net::UdpSocket;

use mslink_io::tun::Tun;
use mslink_netns::Netns;
use mslink_tunnel::config::TunnelConfig;
use mslink_tunnel::keys::Key;
use mslink_tunnel::rt::{self, Control, RunOptions};

fn config() -> TunnelConfig {
    let mut c = TunnelConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        peer: Some("127.0.0.1:9".parse().unwrap()),
        link: toml::from_str("[[service]]\nname = 'raw'\nscheme = 'raw'").unwrap(),
        ..Default::default()
    };
    c.psk = Some(Key([3; 32]));
    c.tun.name = "msltest0".into();
    c
}

fn start(cfg: &TunnelConfig) -> String {
    let opts = RunOptions {
        stats_interval: None,
        handle_signals: false,
        label: "t".into(),
    };
    let c = Control::default();
    match rt::run(cfg, &opts, &c) {
        Ok(()) => panic!("started"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_missing_or_malformed_key_file_is_named_with_its_key_and_the_fix() {
    let dir = std::env::temp_dir().join(format!("mslink-keyfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cfg = config();
    cfg.psk = None;
    cfg.psk_file = Some(dir.join("absent.key"));
    let e = start(&cfg);
    assert!(e.starts_with("psk_file = "), "{e}");
    assert!(
        e.contains("absent.key") && e.contains("mslink tunnel genpsk"),
        "{e}"
    );

    let bad = dir.join("bad.key");
    std::fs::write(&bad, "not base64 at all\n").unwrap();
    cfg.psk_file = None;
    cfg.private_key_file = Some(bad);
    cfg.peer_public_key = Some(Key([5; 32]));
    let e = start(&cfg);
    assert!(e.starts_with("private_key_file = "), "{e}");
    assert!(e.contains("bad.key") && e.contains("base64"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_listen_port_in_use_is_named_with_its_key_and_the_fix() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut cfg = config();
    cfg.listen = taken.local_addr().unwrap();
    let e = start(&cfg);
    assert!(e.starts_with(&format!("listen = {}", cfg.listen)), "{e}");
    assert!(e.contains("in use") && e.contains("another port"), "{e}");
}

#[test]
fn a_tun_name_in_use_is_named_with_its_key_and_the_fix() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            std::env::var("MSLINK_REQUIRE_ROOT").as_deref() != Ok("1"),
            "MSLINK_REQUIRE_ROOT=1 but not running as root: this test makes TUN devices"
        );
        eprintln!("skipped: needs root (TUN devices in a namespace)");
        return;
    }
    let ns = Netns::create().expect("a network namespace");
    let e = ns
        .run(|| {
            let _held = Tun::create("msltest0").expect("the first TUN device");
            start(&config())
        })
        .unwrap();
    assert!(e.starts_with("tun.name = msltest0"), "{e}");
    assert!(
        e.contains("in use") && e.contains("another tun.name"),
        "{e}"
    );
}
