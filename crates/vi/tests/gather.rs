//! `NicConfig::gather_sends` on the sockets backends: a batch of posts behind one doorbell
//! leaves in one gathered `writev(2)` over TCP (the batch io_uring's gathered `SENDMSG`
//! takes) and in one `sendmmsg(2)` over UDP (one datagram per message, the batch io_uring's
//! UDP wire submits at once), arrives intact and in order, and completes every descriptor.
//! Alone in its test binary because it counts this process's write system calls
//! (`/proc/self/io`, `syscw`, for TCP; UDP's `sendmsg` family is not counted there, so the UDP
//! case runs in a child under `strace`, which `./dev test` installs, setting
//! MSLINK_REQUIRE_STRACE=1 so that CI cannot skip it).

mod common;

use common::{pair, T};
use mslink_vi::{Backend, Descriptor, NicConfig, WaitMode, WorkQueue};

/// Write-type system calls this process has made so far.
fn syscw() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    io.lines()
        .find_map(|l| l.strip_prefix("syscw: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("syscw line")
}

/// Sends `k` messages (two segments each, sizes varying) behind one doorbell; returns the
/// write system calls the doorbell made, after checking every message arrived as sent.
fn batch(backend: Backend, gather: bool, k: usize) -> u64 {
    let cfg = NicConfig {
        gather_sends: gather,
        ..NicConfig::default()
    };
    let (mut a, mut b) = pair(backend, cfg, if gather { "g1" } else { "g0" });
    let rmem = a.nic.register_mem(vec![0; k * 4096]).unwrap();
    for i in 0..k {
        let seg = a.nic.segment(rmem, i * 4096, 4096).unwrap();
        a.nic
            .post_recv(a.vi, &Descriptor::single(seg, i as u64))
            .unwrap();
    }
    let data: Vec<u8> = (0..k * 4096).map(|i| (i * 31 % 251) as u8).collect();
    let smem = b.nic.register_mem(data.clone()).unwrap();
    let len = |i: usize| 100 + i * 97;
    for i in 0..k {
        let s1 = b.nic.segment(smem, i * 4096, 10).unwrap();
        let s2 = b.nic.segment(smem, i * 4096 + 10, len(i) - 10).unwrap();
        let mut d = Descriptor::new(1000 + i as u64);
        d.push(s1).unwrap().push(s2).unwrap();
        b.nic.post_send_deferred(b.vi, &d).unwrap();
    }
    let w0 = syscw();
    b.nic.doorbell(b.vi).unwrap();
    let writes = syscw() - w0;
    let mut sent = 0;
    while sent < k {
        let c = b.nic.cq_wait(b.cq, T, WaitMode::Poll).unwrap();
        assert!(c.is_ok() && c.queue == WorkQueue::Send, "{c:?}");
        assert_eq!(
            c.tag,
            1000 + sent as u64,
            "send completions in posting order"
        );
        sent += 1;
    }
    for i in 0..k {
        let c = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
        assert!(c.is_ok() && c.queue == WorkQueue::Recv, "{c:?}");
        assert_eq!((c.tag, c.len), (i as u64, len(i)));
        let got = &a.nic.mem(rmem).unwrap()[i * 4096..i * 4096 + len(i)];
        assert_eq!(got, &data[i * 4096..i * 4096 + len(i)], "message {i}");
    }
    writes
}

#[test]
fn gathered_sends_leave_in_one_writev_and_arrive_intact() {
    let k = 20;
    // Without gathering, one writev per message; with it, the whole batch in one.
    assert_eq!(batch(Backend::Tcp, false, k), k as u64);
    assert_eq!(batch(Backend::Tcp, true, k), 1);
}

/// The UDP batch, run in a child process under strace (`udp_batch_under_strace`); does
/// nothing in a normal run.
#[test]
fn udp_batch_helper() {
    let Ok(gather) = std::env::var("MSLINK_GATHER_HELPER") else {
        return;
    };
    batch(Backend::Udp, gather == "1", 20);
}

/// Without gathering, one `sendmsg` per datagram; with it, the batch's 20 datagrams in one
/// `sendmmsg` that sends all 20. Both arrive whole and in order (checked in the child).
#[test]
fn udp_batch_is_one_sendmmsg() {
    let strace = std::process::Command::new("strace").arg("-V").output();
    if strace.is_err() {
        assert!(
            std::env::var("MSLINK_REQUIRE_STRACE").is_err(),
            "strace is required (MSLINK_REQUIRE_STRACE=1) and missing"
        );
        eprintln!("skipped: no strace");
        return;
    }
    let calls = |gather: &str| -> Vec<String> {
        let log = std::env::temp_dir().join(format!(
            "mslink-gather-strace-{}-{gather}.txt",
            std::process::id()
        ));
        let strace: [&std::ffi::OsStr; 7] = [
            "strace".as_ref(),
            "-f".as_ref(),
            "-qq".as_ref(),
            "-e".as_ref(),
            "trace=sendmsg,sendmmsg".as_ref(),
            "-o".as_ref(),
            log.as_os_str(),
        ];
        common::child_test(
            &strace,
            "udp_batch_helper",
            ("MSLINK_GATHER_HELPER", gather),
        );
        let text = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        text.lines()
            .filter(|l| l.contains("sendmsg(") || l.contains("sendmmsg("))
            .map(str::to_string)
            .collect()
    };
    let plain = calls("0");
    assert_eq!(
        plain.iter().filter(|l| l.contains("sendmsg(")).count(),
        20,
        "{plain:?}"
    );
    assert!(plain.iter().all(|l| !l.contains("sendmmsg(")), "{plain:?}");
    let gathered = calls("1");
    assert_eq!(gathered.len(), 1, "{gathered:?}");
    assert!(
        gathered[0].contains("sendmmsg(") && gathered[0].trim_end().ends_with("= 20"),
        "{gathered:?}"
    );
}
