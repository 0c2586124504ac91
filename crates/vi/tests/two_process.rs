//! Backends across two processes: this test binary re-runs itself as the peer (test
//! `peer_helper`, which does nothing unless MSLINK_VI_ROLE is set): the shared-memory
//! backend end to end, and a peer process that dies on every backend.

mod common;

use std::process::{Child, Command};
use std::time::Duration;

use common::T;
use mslink_vi::{Backend, Descriptor, Nic, NicConfig, Status, WaitMode, WorkQueue};

fn spawn_peer(backend: Backend, role: &str, addr: &str) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args(["peer_helper", "--exact", "--nocapture", "--test-threads=1"])
        .env("MSLINK_VI_ROLE", role)
        .env("MSLINK_VI_ADDR", addr)
        .env("MSLINK_VI_BACKEND", format!("{backend:?}"))
        .spawn()
        .expect("spawn peer")
}

/// The peer process: `echo` returns every message until a zero-length one; `die` sends one
/// message and aborts without disconnecting.
#[test]
fn peer_helper() {
    let (Ok(role), Ok(addr), Ok(name)) = (
        std::env::var("MSLINK_VI_ROLE"),
        std::env::var("MSLINK_VI_ADDR"),
        std::env::var("MSLINK_VI_BACKEND"),
    ) else {
        return;
    };
    let backend = common::ALL
        .into_iter()
        .find(|b| format!("{b:?}") == name)
        .expect("known backend");
    let mut nic = Nic::open(backend, NicConfig::default()).unwrap();
    let cq = nic.create_cq();
    let vi = nic.create_vi(cq, cq).unwrap();
    let m = nic.register_mem(vec![0; 2 * 65536]).unwrap();
    let seg = nic.segment(m, 0, backend.max_message().min(65536)).unwrap();
    nic.post_recv(vi, &Descriptor::single(seg, 0)).unwrap();
    nic.connect(vi, &addr, T).unwrap();
    if role == "die" {
        let s = nic.segment(m, 0, 10).unwrap();
        nic.post_send(vi, &Descriptor::single(s, 0)).unwrap();
        let _ = nic.cq_wait(cq, T, WaitMode::Poll);
        std::process::abort();
    }
    let mut k = 0usize;
    loop {
        let c = nic.cq_wait(cq, T, WaitMode::Block).unwrap();
        if c.queue == WorkQueue::Send {
            continue;
        }
        assert!(c.is_ok(), "{c:?}");
        if c.len == 0 {
            break;
        }
        let cur = (k % 2) * 65536;
        k += 1;
        let next = nic.segment(m, 65536 - cur, 65536).unwrap();
        nic.post_recv(vi, &Descriptor::single(next, 0)).unwrap();
        let s = nic.segment(m, cur, c.len).unwrap();
        nic.post_send(vi, &Descriptor::single(s, 0)).unwrap();
    }
    // Let every echo leave before disconnecting.
    while nic.vi_stats(vi).unwrap().sent_msgs < k as u64 {
        let _ = nic.cq_wait(cq, T, WaitMode::Block).unwrap();
    }
    nic.disconnect(vi).unwrap();
}

fn listen(backend: Backend, name: &str) -> (Nic, mslink_vi::ListenerHandle, String) {
    let mut nic = Nic::open(backend, NicConfig::default()).unwrap();
    let l = nic.listen(&common::addr(backend, name)).unwrap();
    let addr = nic.listener_addr(l).unwrap();
    (nic, l, addr)
}

#[test]
fn shared_memory_echo_across_processes() {
    let (mut nic, l, addr) = listen(Backend::SharedMemory, "xproc");
    let mut child = spawn_peer(Backend::SharedMemory, "echo", &addr);
    let cq = nic.create_cq();
    let vi = nic.create_vi(cq, cq).unwrap();
    nic.accept(l, vi, T).unwrap();
    let sm = nic.register_mem(vec![0; 65536]).unwrap();
    let rm = nic.register_mem(vec![0; 65536]).unwrap();
    for (k, len) in [1usize, 64, 4096, 65536, 3000].into_iter().enumerate() {
        for (i, b) in nic.mem_mut(sm).unwrap()[..len].iter_mut().enumerate() {
            *b = (i * 31 + k) as u8;
        }
        let rs = nic.segment(rm, 0, 65536).unwrap();
        nic.post_recv(vi, &Descriptor::single(rs, 0)).unwrap();
        let ss = nic.segment(sm, 0, len).unwrap();
        nic.post_send(vi, &Descriptor::single(ss, 0)).unwrap();
        let mode = if k % 2 == 0 {
            WaitMode::Poll
        } else {
            WaitMode::Block
        };
        for _ in 0..2 {
            let c = nic.cq_wait(cq, T, mode).unwrap();
            assert!(c.is_ok(), "{c:?}");
            if c.queue == WorkQueue::Recv {
                assert_eq!(c.len, len);
            }
        }
        assert_eq!(nic.mem(rm).unwrap()[..len], nic.mem(sm).unwrap()[..len]);
    }
    let rs = nic.segment(rm, 0, 8).unwrap();
    nic.post_recv(vi, &Descriptor::single(rs, 0)).unwrap();
    nic.post_send(vi, &Descriptor::new(0)).unwrap();
    // The peer disconnects after the zero-length message: our receive is flushed.
    let mut statuses = Vec::new();
    for _ in 0..2 {
        statuses.push(nic.cq_wait(cq, T, WaitMode::Block).unwrap().status);
    }
    assert_eq!(statuses, vec![Status::Success, Status::PeerClosed]);
    assert!(child.wait().unwrap().success());
}

/// A peer process that aborts (no disconnect) after one message leaves the survivor's
/// posted receive with an error completion, not a hang, on every backend and in both wait
/// modes: shared memory sees its liveness socket close, TCP sees end of file or a reset, UDP
/// sees the port unreachable its liveness probe draws.
#[test]
fn peer_that_dies_leaves_errors_not_a_hang() {
    for backend in common::ALL {
        for mode in [WaitMode::Block, WaitMode::Poll] {
            let (mut nic, l, addr) = listen(backend, &format!("die-{mode:?}"));
            let mut child = spawn_peer(backend, "die", &addr);
            let cq = nic.create_cq();
            let vi = nic.create_vi(cq, cq).unwrap();
            let m = nic.register_mem(vec![0; 64]).unwrap();
            for off in [0, 32] {
                let s = nic.segment(m, off, 32).unwrap();
                nic.post_recv(vi, &Descriptor::single(s, off as u64))
                    .unwrap();
            }
            nic.accept(l, vi, T).unwrap();
            let first = nic.cq_wait(cq, T, mode).unwrap();
            assert_eq!((first.status, first.len), (Status::Success, 10));
            // The peer aborts: the second receive must complete with an error within the
            // harness timeout (a Timeout error here would mean a hang).
            let second = nic.cq_wait(cq, T, mode).unwrap();
            let expected: &[Status] = match backend {
                // The kernel closes a dead process's TCP socket in order (FIN).
                Backend::Tcp | Backend::UringTcp => &[Status::PeerClosed, Status::PeerGone],
                _ => &[Status::PeerGone],
            };
            assert_eq!(second.tag, 32, "{backend:?} {mode:?}");
            assert!(
                expected.contains(&second.status),
                "{backend:?} {mode:?}: {second:?}"
            );
            assert!(!nic.is_connected(vi));
            let st = child.wait().unwrap();
            assert!(!st.success());
            // Nothing posted now: a further wait times out promptly instead of hanging.
            let r = nic.cq_wait(cq, Duration::from_millis(20), mode);
            assert!(r.is_err());
        }
    }
}
