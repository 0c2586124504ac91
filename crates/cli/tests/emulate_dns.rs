//! Name lookups from a single-mode command when the host's resolver listens on loopback, as
//! systemd-resolved's 127.0.0.53 does on Ubuntu (issue 34). The test makes such a host: a
//! network and mount namespace of its own where `/etc/resolv.conf` says `nameserver
//! 127.0.0.53` and a small DNS server listens there. A lookup by the command inside `mslink
//! emulate` must then get that server's answer, through the emulator's relay, and the host's
//! file must stay as it was. Needs root (fails, not skips, under MSLINK_REQUIRE_ROOT=1).

mod common;

use common::{scratch, skip_without_root};
use serde_json::Value;

/// A DNS server for the test: answers every A query with 192.0.2.53, every other query with no
/// records; writes `ready` once bound and each name asked to `asked.txt`.
const STUB: &str = r#"
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
open("ready", "w").close()
while True:
    q, peer = s.recvfrom(512)
    qd = q[12:]
    end = qd.index(b"\0") + 5
    labels, i = [], 0
    while qd[i]:
        labels.append(qd[i + 1 : i + 1 + qd[i]].decode())
        i += 1 + qd[i]
    qtype = struct.unpack(">H", qd[i + 1 : i + 3])[0]
    with open("asked.txt", "a") as f:
        f.write(".".join(labels) + " %d\n" % qtype)
    ans = b""
    if qtype == 1:
        ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("192.0.2.53")
    head = q[:2] + b"\x81\x80" + struct.pack(">HHHH", 1, 1 if ans else 0, 0, 0)
    s.sendto(head + qd[:end] + ans, peer)
"#;

#[test]
fn a_command_resolves_names_through_a_loopback_resolver() {
    if skip_without_root() {
        return;
    }
    let d = scratch("dns");
    std::fs::write(d.join("stub.py"), STUB).unwrap();
    std::fs::write(
        d.join("resolv.conf"),
        "nameserver 127.0.0.53\noptions timeout:1 attempts:2\n",
    )
    .unwrap();
    let mslink = env!("CARGO_BIN_EXE_mslink");
    let script = format!(
        "set -e\n\
         ip link set lo up\n\
         mount --bind resolv.conf /etc/resolv.conf\n\
         python3 stub.py 127.0.0.53 >stub.log 2>&1 & stub=$!\n\
         trap 'kill $stub' EXIT\n\
         while [ ! -e ready ]; do sleep 0.05; done\n\
         {mslink} emulate --no-nat --set delay_ms=5 --json summary.json -- sh -c \
           'cat /etc/resolv.conf > seen.conf; \
            python3 -c \"import socket; print(socket.gethostbyname(\\\"probe.mslink.test\\\"))\" > answer.txt'\n\
         cat /etc/resolv.conf > after.conf\n"
    );
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--net", "sh", "-c", &script])
        .current_dir(&*d)
        .output()
        .unwrap();
    let text = |f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
    assert!(
        out.status.success(),
        "{:?}\n{}\nasked: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        text("asked.txt")
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("resolver is on loopback (127.0.0.53:53)"),
        "{err}"
    );
    // The command's lookup got the loopback server's answer, through the relay.
    assert_eq!(text("answer.txt").trim(), "192.0.2.53", "{err}");
    assert!(text("asked.txt").contains("probe.mslink.test 1"));
    let v: Value = serde_json::from_str(&text("summary.json")).unwrap();
    let relay = &v["dns_relay"];
    assert!(relay["queries"].as_u64().unwrap() >= 1, "{relay}");
    assert!(relay["answers"].as_u64().unwrap() >= 1, "{relay}");
    assert_eq!(relay["dropped_unmatched"], 0, "{relay}");
    // The command saw the relay (the right side's address) first; the host's file is unchanged.
    let right = v["right"]["addr"].as_str().unwrap();
    assert!(
        text("seen.conf").contains(&format!("nameserver {right}\n")),
        "{}",
        text("seen.conf")
    );
    assert_eq!(
        text("after.conf"),
        "nameserver 127.0.0.53\noptions timeout:1 attempts:2\n"
    );
    // The lookups crossed the emulated hop: the right-to-left direction carried the answers.
    assert!(v["right_to_left"]["packets"]["delivered"].as_u64().unwrap() >= 1);
}
