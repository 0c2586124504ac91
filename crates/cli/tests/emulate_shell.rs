//! `mslink emulate` as a shell and nested (issue 17), in real network namespaces (run as root,
//! as CI does).
//!
//! The interactive shell (single mode without a command) is driven through a pseudo-terminal
//! the test opens, as a user's terminal would drive it: its prompt names the link
//! (`[mslink 10Mbit/s 20ms 5% sr] `) in bash, whose start-up files set their own PS1, and in
//! sh; an emulator started in that shell prefixes its own text after the outer one's. Nested
//! emulators carry traffic through both hops, each accounting for its own packets, and
//! emulators of different PID namespaces sharing a network namespace neither collide on
//! device names nor sweep each other's devices away. Every run leaves no device behind.
//! Nothing asserts on time (a run that hangs is stopped after a generous limit and fails).

mod common;

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{check_accounting, devices, mslink, skip_without_root};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mslink");

/// `mslink ARGS` on a fresh pseudo-terminal, as its session leader (the terminal's foreground
/// process group), with everything it prints collected.
struct Terminal {
    master: std::fs::File,
    out: Arc<Mutex<Vec<u8>>>,
    child: std::process::Child,
}

impl Terminal {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Terminal {
        let (mut m, mut s) = (0, 0);
        // Wide enough that a line editor never scrolls a prompt sideways.
        let size = libc::winsize {
            ws_row: 50,
            ws_col: 400,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors; no name or termios given.
        let r = unsafe {
            libc::openpty(
                &mut m,
                &mut s,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened and are owned here alone.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
        let mut c = mslink();
        c.args(args)
            .env("TERM", "dumb")
            .envs(env.iter().copied())
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid and ioctl are async-signal-safe; stdin is the terminal's slave end.
        unsafe {
            c.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c.spawn().unwrap();
        drop(c);
        let master = std::fs::File::from(master);
        let out = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), out.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with EIO once every holder of the slave end has gone.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal { master, out, child }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    /// Polls `done` every 20 ms until it holds; a hang fails after 60 s with `what` and the
    /// terminal's text.
    fn until(&self, what: &dyn Fn() -> String, done: &mut dyn FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{}; it shows:\n{}",
                what(),
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the output holds `what` `times` times.
    fn expect(&self, what: &str, times: usize) {
        self.until(
            &|| format!("no {what:?} (x{times}) on the terminal"),
            &mut || self.text().matches(what).count() >= times,
        );
    }

    /// Waits until a process named `comm` leads the terminal's foreground process group. A
    /// shell with job control hands the terminal to a command only after forking it; a
    /// Ctrl-C typed before then reaches the shell, which holds it back until the command
    /// ends, as dash does.
    fn expect_foreground(&self, comm: &str) {
        let leader = || {
            // SAFETY: tcgetpgrp on the master end reads the slave's foreground group.
            let pgrp = unsafe { libc::tcgetpgrp(self.master.as_raw_fd()) };
            let name = std::fs::read_to_string(format!("/proc/{pgrp}/comm")).unwrap_or_default();
            (pgrp, name)
        };
        self.until(
            &|| {
                format!(
                    "{comm} never held the terminal (foreground group {:?})",
                    leader()
                )
            },
            &mut || leader().1.trim_end() == comm,
        );
    }

    fn type_line(&mut self, line: &str) {
        self.master.write_all(line.as_bytes()).unwrap();
        self.master.write_all(b"\n").unwrap();
    }

    fn wait(mut self) -> (std::process::ExitStatus, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                panic!("the emulator did not end; terminal:\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = self.master.as_raw_fd();
        (status, self.text())
    }
}

/// The shell a user gets: its prompt names the link; `echo $PS1` shows it; a nested emulator
/// started in it prefixes the outer text to its own; `exit` ends both, each with its summary.
fn shell_prompt(shell: &str, rendered_tail: &str) {
    let mut t = Terminal::start(
        &[
            "emulate",
            "--set",
            "rate_bps=10e6",
            "--set",
            "delay_ms=20",
            "--loss",
            "0.05",
            "--scheme",
            "selective_repeat",
        ],
        &[("SHELL", shell), ("MSLINK_BIN", BIN)],
    );
    let pid = t.child.id();
    let outer = "[mslink 10Mbit/s 20ms 5% sr]";
    // The prompt as the shell draws it, before anything is typed.
    t.expect(&format!("{outer} {rendered_tail}"), 1);
    t.type_line("echo \"<<$PS1|$MSLINK_PROMPT|$MSLINK_SIDE>>\"");
    t.expect(&format!("<<{outer} "), 1);
    t.expect(&format!("|{outer}|left>>"), 1);
    // The shell holds the terminal: Ctrl-C stops what runs in it, not the emulator.
    t.type_line("echo sl''eeping; sleep 60");
    t.expect("sleeping", 1);
    t.expect_foreground("sleep");
    t.master.write_all(&[3]).unwrap();
    t.type_line("echo af''ter");
    t.expect("after", 1);
    // An emulator inside the shell: its own shell shows both, outermost first.
    t.type_line("$MSLINK_BIN emulate --loss 0.01");
    let both = format!("{outer} [mslink 1% raw]");
    t.expect(&format!("{both} {rendered_tail}"), 1);
    t.type_line("echo \"<<$PS1>>\"; exit");
    t.expect(&format!("<<{both} "), 1);
    // The inner emulator's summary, then the outer shell again.
    t.expect("mslink emulate: L->R", 1);
    t.type_line("echo \"<<$MSLINK_PROMPT>>\"");
    t.expect(&format!("<<{outer}>>"), 1);
    t.type_line("exit");
    let (status, text) = t.wait();
    assert!(status.success(), "{status:?}:\n{text}");
    assert_eq!(text.matches("mslink emulate: L->R").count(), 2, "{text}");
    assert!(
        devices(&format!("msl{pid}")).is_empty(),
        "devices left behind"
    );
}

#[test]
fn the_bash_prompt_names_the_link_and_nested_emulators_prefix_it() {
    if skip_without_root() {
        return;
    }
    // Debian's /etc/bash.bashrc sets PS1 after the environment gave it: PROMPT_COMMAND puts
    // the text back in front. As root, bash draws `\$` as `#`.
    shell_prompt("/bin/bash", "");
}

#[test]
fn the_sh_prompt_names_the_link() {
    if skip_without_root() {
        return;
    }
    shell_prompt("/bin/sh", "# ");
}

/// Runs `mslink emulate ARGS --json FILE` in `dir` with its standard error captured; checks
/// the exit status and that its devices are gone; returns the summary and the error text.
fn run_captured(dir: &Path, args: &[&str]) -> (Value, String) {
    let json = dir.join("outer.json");
    let mut child = mslink()
        .arg("emulate")
        .args(args)
        .arg("--json")
        .arg(&json)
        .current_dir(dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}:\n{err}");
    assert!(
        devices(&format!("msl{pid}")).is_empty(),
        "devices left behind"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    check_accounting(&v);
    (v, err)
}

fn read_json(path: &Path) -> Value {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    check_accounting(&v);
    v
}

fn packets(v: &Value, dir: &str, key: &str) -> u64 {
    v[dir]["packets"][key].as_u64().unwrap()
}

/// A single-mode emulator inside a pair's right command: TCP from the inner command crosses
/// the inner hop, is forwarded in the outer right namespace, crosses the outer hop and
/// reaches the outer left; each emulator counts the packets of its own hop and prints its
/// own summary.
#[test]
fn a_nested_emulator_carries_traffic_through_both_hops_and_accounts_separately() {
    if skip_without_root() {
        return;
    }
    let d = common::scratch_inet("nested");
    let right = format!(
        "{BIN} emulate --set rate_bps=30e6 --set delay_ms=3 --json inner.json \
         -- python3 inet.py tcp-client $MSLINK_LEFT 7030 1 sent.txt"
    );
    let (outer, err) = run_captured(
        &d,
        &[
            "--set",
            "rate_bps=20e6",
            "--set",
            "delay_ms=5",
            "--pair",
            "--until",
            "both",
            "--left",
            "python3 inet.py tcp-server $MSLINK_LEFT 7030 recv.txt",
            "--right",
            &right,
        ],
    );
    let inner = read_json(&d.join("inner.json"));
    assert_eq!(err.matches("mslink emulate: L->R").count(), 2, "{err}");
    let recv = std::fs::read_to_string(d.join("recv.txt")).unwrap();
    assert_eq!(recv, std::fs::read_to_string(d.join("sent.txt")).unwrap());
    assert!(recv.split(' ').next().unwrap().parse::<u64>().unwrap() > 0);
    // The inner hop's left-to-right packets are the outer hop's right-to-left ones: the inner
    // emulator delivers them into the outer right namespace, which forwards them to the outer
    // hop, and the outer run ends only after the inner one has drained.
    let up = packets(&inner, "left_to_right", "delivered");
    assert!(up > 100, "{up}");
    assert_eq!(packets(&outer, "right_to_left", "received"), up);
    // Back: what the outer hop delivered, forwarded into the inner hop (a packet of the
    // server's that reaches the outer right namespace after the inner emulator is gone finds
    // no inner device).
    let down = packets(&inner, "right_to_left", "received");
    assert!(down > 0 && down <= packets(&outer, "left_to_right", "delivered"));
    // Inner names carry its PID namespace's tag: msl<pid><side><tag>. (The tag is base 36 and
    // may itself end in `r`: read the name, do not look at its last letter.)
    let dev = inner["right"]["device"].as_str().unwrap();
    assert!(dev.len() > 6 && dev.len() <= 15, "{dev}");
    let owner = mslink_netns::DeviceOwner::of_device(dev)
        .unwrap_or_else(|| panic!("{dev}: not an emulator's device name"));
    assert_eq!(owner.tag.len(), 4, "{dev}: no PID-namespace tag");
    assert_eq!(owner.device('r'), dev);
}

/// Two emulators in PID namespaces of their own (each as pid 1), their right ends in one
/// network namespace (the outer right): distinct device names, and neither sweeps the outer
/// emulator's device away at start-up (inside `--mount-proc` its pid is not in /proc). The
/// outer hop still carries traffic afterwards.
#[test]
fn emulators_of_different_pid_namespaces_neither_collide_nor_sweep_each_other() {
    if skip_without_root() {
        return;
    }
    let d = common::scratch_inet("pidns");
    let inner = |name: &str| {
        format!("unshare --pid --fork --mount-proc {BIN} emulate --json {name}.json -- sleep 1")
    };
    let right = format!(
        "{} & {}; wait; python3 inet.py udp-client $MSLINK_LEFT 7031 50 100",
        inner("a"),
        inner("b")
    );
    let (outer, err) = run_captured(
        &d,
        &[
            "--pair",
            "--until",
            "both",
            "--left",
            "python3 inet.py udp-server $MSLINK_LEFT 7031 1.0 recv.txt",
            "--right",
            &right,
        ],
    );
    assert!(!err.contains("removed stale device"), "{err}");
    let (a, b) = (read_json(&d.join("a.json")), read_json(&d.join("b.json")));
    assert_ne!(a["right"]["device"], b["right"]["device"]);
    assert_ne!(a["right"]["addr"], b["right"]["addr"]);
    let got = std::fs::read_to_string(d.join("recv.txt")).unwrap();
    assert_eq!(got.trim(), "50", "the outer hop after the inner runs");
    assert_eq!(packets(&outer, "right_to_left", "delivered"), 50);
}
