//! Single mode's NAT (issue 17), in namespaces with no real outside traffic: the test makes a
//! "host" namespace H joined by a veth to an "internet" namespace I (198.18.0.0/24, a
//! benchmarking test net), runs a server in I and `mslink emulate -- CLIENT` inside H, and
//! checks that the client reaches the server with H's address as its source (also through an
//! emulator nested in the command's namespace), that `--no-nat` keeps it from reaching it, and
//! that the nftables table `inet mslink_<pid>` and the
//! forwarding it turned on are gone after a normal exit, after SIGKILL (the reaper) and, for a
//! table whose emulator and reaper are both gone, at the next start (the sweep). H and I are
//! unnamed namespaces held by this process: the kernel removes them, and everything in them,
//! when the test ends, also when it fails. Linux, root.
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::skip_without_root;
use mslink_netns::{Netns, VethPair};

const SERVER: &str = r#"
import socket, threading
def tcp():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("198.18.0.2", 8000)); s.listen(8)
    while True:
        c, a = s.accept(); c.sendall(("tcp %s\n" % a[0]).encode()); c.close()
threading.Thread(target=tcp, daemon=True).start()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("198.18.0.2", 8000))
print("listening", flush=True)
while True:
    d, a = u.recvfrom(100); u.sendto(("udp %s\n" % a[0]).encode(), a)
"#;

const CLIENT: &str = r#"
import socket, sys
try:
    t = socket.create_connection(("198.18.0.2", 8000), timeout=3)
    print(t.recv(100).decode().strip())
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3)
    u.sendto(b"x", ("198.18.0.2", 8000))
    print(u.recvfrom(100)[0].decode().strip())
except OSError as e:
    print("unreachable:", e); sys.exit(7)
"#;

/// H (`a`, device `nat-h`, 198.18.0.1) and I (`b`, device `nat-i`, 198.18.0.2), and I's
/// server, killed when dropped.
struct World {
    pair: VethPair,
    server: Child,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn world() -> World {
    let pair = VethPair::create("nat-h", "nat-i", None).unwrap();
    pair.a
        .add_address("nat-h", [198, 18, 0, 1].into(), 24)
        .unwrap();
    pair.b
        .add_address("nat-i", [198, 18, 0, 2].into(), 24)
        .unwrap();
    let mut server = pair
        .b
        .command("python3")
        .args(["-c", SERVER])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "listening");
    World { pair, server }
}

fn mslink_in(ns: &Netns) -> Command {
    let mut c = ns.command(env!("CARGO_BIN_EXE_mslink"));
    c.arg("emulate");
    c
}

/// Loads the ruleset `text` into namespace `ns` (`nft -f -`).
fn nft_apply(ns: &Netns, text: &str) {
    use std::io::Write;
    let mut nft = ns
        .command("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    nft.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    assert!(nft.wait().unwrap().success(), "nft -f - refused:\n{text}");
}

/// The `mslink_*` tables in namespace `ns`.
fn tables(ns: &Netns) -> Vec<String> {
    let out = ns
        .command("nft")
        .args(["list", "tables", "inet"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("table inet "))
        .filter(|t| t.starts_with("mslink_"))
        .map(str::to_string)
        .collect()
}

fn forwarding(ns: &Netns, dev: &str) -> String {
    ns.run(|| std::fs::read_to_string(format!("/proc/sys/net/ipv4/conf/{dev}/forwarding")))
        .unwrap()
        .unwrap()
        .trim()
        .to_string()
}

/// Polls (not a timing assertion: the reaper runs when the kernel closes the pipe) until
/// `ok`, for up to 10 s.
fn eventually(mut ok: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if ok() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn the_command_reaches_the_outside_through_the_host_and_nothing_is_left() {
    if skip_without_root() {
        return;
    }
    let w = world();
    let h = &w.pair.a;
    assert_eq!(forwarding(h, "nat-h"), "0");
    // H reaches I: the command must too, masqueraded behind H's address.
    let out = mslink_in(h)
        .args(["--set", "delay_ms=5", "--", "python3", "-c", CLIENT])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["tcp 198.18.0.1", "udp 198.18.0.1"],
        "{stderr}"
    );
    assert!(
        stderr.contains("NAT to the outside (nftables table inet mslink_")
            && stderr.contains("forwarding on for replies on nat-h"),
        "{stderr}"
    );
    // Normal exit: the table is gone and the uplink's forwarding is back to off.
    assert!(tables(h).is_empty(), "{:?}", tables(h));
    assert_eq!(forwarding(h, "nat-h"), "0");

    // --no-nat: the command reaches the host only.
    let out = mslink_in(h)
        .args(["--quiet", "--no-nat", "--", "python3", "-c", CLIENT])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("unreachable"));
    assert!(tables(h).is_empty());

    // Nested: an emulator inside the command's namespace (and PID namespace) of another
    // masquerades behind the outer one's command address, the outer one behind H's; both
    // tables are named by the pids /proc shows and both are gone at the end.
    let d = common::scratch("nat-nested");
    std::fs::write(d.join("client.py"), CLIENT).unwrap();
    let bin = env!("CARGO_BIN_EXE_mslink");
    let out = mslink_in(h)
        .args(["--quiet", "--", "sh", "-c"])
        .arg(format!(
            "{bin} emulate -- python3 client.py && nft list tables inet | grep -c mslink_ || true"
        ))
        .current_dir(&*d)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["tcp 198.18.0.1", "udp 198.18.0.1", "0"],
        "{stderr}"
    );
    assert!(
        stderr.contains("NAT to the outside (nftables table inet mslink_"),
        "{stderr}"
    );
    assert!(tables(h).is_empty());
    assert_eq!(forwarding(h, "nat-h"), "0");
}

#[test]
fn sigkill_and_a_dead_reaper_leave_no_table_behind() {
    if skip_without_root() {
        return;
    }
    let w = world();
    let h = &w.pair.a;
    // SIGKILL: the reaper removes the table and turns forwarding off again.
    let mut child = mslink_in(h)
        .args(["--", "sleep", "60"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let _stderr = common::wait_ready(&mut child);
    assert_eq!(tables(h), [format!("mslink_{pid}")]);
    assert_eq!(forwarding(h, "nat-h"), "1");
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
    child.wait().unwrap();
    assert!(
        eventually(|| tables(h).is_empty() && forwarding(h, "nat-h") == "0"),
        "after SIGKILL: tables {:?}, forwarding {}",
        tables(h),
        forwarding(h, "nat-h")
    );

    // A table whose emulator and reaper both died (as if the machine had been in the middle
    // of it): the next emulator's start-up sweep removes it and restores its uplink.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = format!(
        "table inet mslink_{dead} {{\n set uplinks {{ type ifname; elements = {{ \"nat-h\" }}; }}\n}}\n"
    );
    nft_apply(h, &stale);
    h.sysctl("net/ipv4/conf/nat-h/forwarding", "1").unwrap();
    // A live emulator's table is kept: this one is ours (the test's pid, alive).
    let live = format!("table inet mslink_{} {{\n}}\n", std::process::id());
    nft_apply(h, &live);
    let out = mslink_in(h).args(["--", "true"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("removed the stale NAT table inet mslink_{dead}")),
        "{stderr}"
    );
    assert_eq!(tables(h), [format!("mslink_{}", std::process::id())]);
    assert_eq!(forwarding(h, "nat-h"), "0");
}
