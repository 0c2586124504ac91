//! Shared test fixtures: a connected pair of NICs in one process.

#![allow(dead_code)]

use std::time::Duration;

use mslink_vi::{Backend, CqHandle, Nic, NicConfig, ViHandle};

/// Generous harness timeout: a hang fails the test instead of blocking CI.
pub const T: Duration = Duration::from_secs(10);

/// One end of a connection.
pub struct End {
    pub nic: Nic,
    pub cq: CqHandle,
    pub vi: ViHandle,
}

/// Every backend: the API contract holds on each.
pub const ALL: [Backend; 5] = [
    Backend::SharedMemory,
    Backend::Tcp,
    Backend::Udp,
    Backend::UringTcp,
    Backend::UringUdp,
];

/// A unique address for `name` on `backend`.
pub fn addr(backend: Backend, name: &str) -> String {
    match backend {
        Backend::SharedMemory => {
            format!("/tmp/mslink-vi-test-{}-{name}.sock", std::process::id())
        }
        _ => "127.0.0.1:0".to_string(),
    }
}

/// Connect two NICs in this process; the acceptor posts `pre_recv` receives of
/// `recv_len` bytes before accepting (none if 0).
pub fn pair(backend: Backend, cfg: NicConfig, name: &str) -> (End, End) {
    let mut a = Nic::open(backend, cfg.clone()).expect("open");
    let l = a.listen(&addr(backend, name)).expect("listen");
    let where_ = a.listener_addr(l).expect("addr");
    let cqa = a.create_cq();
    let via = a.create_vi(cqa, cqa).expect("vi");
    let t = std::thread::spawn(move || {
        a.accept(l, via, T).expect("accept");
        a.close_listener(l).expect("close listener");
        a
    });
    let mut b = Nic::open(backend, cfg).expect("open");
    let cqb = b.create_cq();
    let vib = b.create_vi(cqb, cqb).expect("vi");
    b.connect(vib, &where_, T).expect("connect");
    let a = t.join().expect("acceptor thread");
    (
        End {
            nic: a,
            cq: cqa,
            vi: via,
        },
        End {
            nic: b,
            cq: cqb,
            vi: vib,
        },
    )
}

/// Run test `name` of this test binary alone in a child process, with `env` set, behind the
/// command `wrapper` (e.g. `strace ...`; empty for none), and check that it passed; returns
/// its standard output. For tests that need a process of their own (rlimits, syscall
/// tracing).
pub fn child_test(wrapper: &[&std::ffi::OsStr], name: &str, env: (&str, &str)) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match wrapper.split_first() {
        Some((w, rest)) => {
            let mut c = std::process::Command::new(w);
            c.args(rest).arg(&exe);
            c
        }
        None => std::process::Command::new(&exe),
    };
    let out = cmd
        .args([name, "--exact", "--nocapture", "--test-threads", "1"])
        .env(env.0, env.1)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{name} in a child process: {stdout}");
    stdout
}
