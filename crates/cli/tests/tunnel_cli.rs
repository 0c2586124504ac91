//! `mslink tunnel` from the command line: key tools, configuration errors that name the file
//! and the key, and a real tunnel between two namespaces started, signalled (SIGUSR1 prints
//! counters, SIGTERM stops it cleanly) and torn down. The namespace part needs root; its two
//! namespaces are unnamed (`mslink_netns::VethPair`), so the kernel removes them, with the veth
//! and TUN devices, even when the test fails.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn mslink() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mslink"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mslt-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn out(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut c = mslink()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn genkey_pubkey_and_config_errors() {
    let (ok, key, _) = out(&["tunnel", "genkey"], "");
    assert!(ok);
    assert_eq!(key.trim().len(), 44);
    let (ok, public, _) = out(&["tunnel", "pubkey"], &key);
    assert!(ok);
    assert_eq!(public.trim().len(), 44);
    assert_ne!(public, key);
    let (ok2, public2, _) = out(&["tunnel", "pubkey"], &key);
    assert!(ok2);
    assert_eq!(public, public2, "pubkey is a function of the private key");
    let (ok, _, err) = out(&["tunnel", "pubkey"], "not a key");
    assert!(!ok);
    assert!(err.contains("base64"), "{err}");

    let d = tmp("cfg");
    let f = d.join("bad.toml");
    std::fs::write(&f, "listen = '0.0.0.0:1'\n[tun]\nmtu = 1400\nnmae = 'x'\n").unwrap();
    let (ok, _, err) = out(&["tunnel", f.to_str().unwrap()], "");
    assert!(!ok);
    assert!(
        err.contains("bad.toml") && err.contains("nmae") && err.contains("line 4"),
        "{err}"
    );
    std::fs::write(&f, format!("private_key = '{}'\n", key.trim())).unwrap();
    let (ok, _, err) = out(&["tunnel", f.to_str().unwrap()], "");
    assert!(!ok);
    assert!(err.contains("peer_public_key"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Kills the child on drop (a failing test leaves no tunnel behind).
struct Child(std::process::Child);
impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn two_tunnel_processes_in_namespaces_ping_and_stop_on_sigterm() {
    let ns = mslink_netns::VethPair::create("v0", "v1", None).expect("namespaces (root)");
    let (a, b) = (&ns.a, &ns.b);
    let at = |host| IpAddr::V4(Ipv4Addr::new(192, 168, 187, host));
    a.add_address("v0", at(1), 24).unwrap();
    b.add_address("v1", at(2), 24).unwrap();
    let d = tmp("ns");
    let psk = out(&["tunnel", "genpsk"], "").1;
    std::fs::write(d.join("psk"), &psk).unwrap();
    let cfg = |me: u8, peer: Option<&str>| {
        format!(
            "listen = '192.168.187.{me}:51900'\n{}psk_file = '{}'\n[tun]\nname = 'mslt0'\naddress = '10.187.0.{me}/24'\n",
            peer.map(|p| format!("peer = '{p}'\n")).unwrap_or_default(),
            d.join("psk").display()
        )
    };
    std::fs::write(d.join("a.toml"), cfg(1, Some("192.168.187.2:51900"))).unwrap();
    std::fs::write(d.join("b.toml"), cfg(2, None)).unwrap();
    let start = |n: &mslink_netns::Netns, f: &str| {
        Child(
            n.command(env!("CARGO_BIN_EXE_mslink"))
                .arg("tunnel")
                .arg(d.join(f))
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        )
    };
    let mut tb = start(b, "b.toml");
    let mut ta = start(a, "a.toml");
    // A UDP round trip across the tunnel (Python-free: the tunnel carries any IP).
    let mut answered = false;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        let st = b
            .command("python3")
            .args(["-c", "import socket,sys; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(('10.187.0.2',7000)); s.settimeout(3); d,a=s.recvfrom(100); s.sendto(d[::-1],a)"])
            .spawn();
        let Ok(mut server) = st else { continue };
        std::thread::sleep(Duration::from_millis(200));
        let c = a
            .command("python3")
            .args(["-c", "import socket,sys; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(2); s.sendto(b'hello tunnel',('10.187.0.2',7000)); d,_=s.recvfrom(100); sys.exit(0 if d==b'lennut olleh' else 1)"])
            .status()
            .unwrap();
        let _ = server.wait();
        if c.success() {
            answered = true;
            break;
        }
    }
    assert!(answered, "no UDP round trip across the tunnel");
    let pid_a = ta.0.id().to_string();
    // The child enters the namespace and execs the tunnel itself, so its pid is the tunnel's.
    assert!(Command::new("kill")
        .args(["-USR1", &pid_a])
        .status()
        .unwrap()
        .success());
    std::thread::sleep(Duration::from_millis(300));
    for t in [&mut ta, &mut tb] {
        assert!(Command::new("kill")
            .args(["-TERM", &t.0.id().to_string()])
            .status()
            .unwrap()
            .success());
        let st = t.0.wait().unwrap();
        assert!(st.success(), "clean exit on SIGTERM: {st}");
    }
    let mut log_a = String::new();
    std::io::Read::read_to_string(ta.0.stderr.as_mut().unwrap(), &mut log_a).unwrap();
    assert!(log_a.contains("session established"), "{log_a}");
    assert!(
        log_a.contains("INFO mslink-tunnel[mslt0]: stats: datagrams in"),
        "{log_a}"
    );
    assert!(log_a.contains("stopping"), "{log_a}");
    drop(ns);
    let _ = std::fs::remove_dir_all(&d);
}
