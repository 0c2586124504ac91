//! The shared-memory backend's one-copy path (messages longer than
//! `NicConfig::shm_inline_max` are copied once, by the receiver, out of the sender's
//! registered region) and pinned registration: message boundaries, scatter-gather, order and
//! completions under random traffic with and without the inline path, the sender's memory
//! read at delivery, a sender process that dies after posting, and memory locked in RAM.

mod common;

use std::process::Command;

use common::{pair, End, T};
use mslink_vi::{Backend, Completion, Descriptor, Nic, NicConfig, Status, WaitMode, WorkQueue};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn cfg(inline_max: usize) -> NicConfig {
    NicConfig {
        ring_bytes: 256,
        shm_inline_max: inline_max,
        ..NicConfig::default()
    }
}

/// Poll both ends until `want` completions have come from `x` and `y` together.
fn drain(x: &mut End, y: &mut End, want: usize) -> (Vec<Completion>, Vec<Completion>) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for _ in 0..10_000_000 {
        if xs.len() + ys.len() == want {
            return (xs, ys);
        }
        if let Some(c) = x.nic.cq_poll(x.cq).unwrap() {
            xs.push(c);
        }
        if let Some(c) = y.nic.cq_poll(y.cq).unwrap() {
            ys.push(c);
        }
    }
    panic!("only {} of {want} completions", xs.len() + ys.len());
}

/// Split `len` bytes into 1..=4 segments of regions `mems` at random offsets; with
/// `disjoint` (a scatter list) segment k lies in quarter k of its region, so no two overlap.
fn random_segments(
    nic: &Nic,
    mems: &[mslink_vi::MemHandle],
    region: usize,
    len: usize,
    disjoint: bool,
    rng: &mut ChaCha8Rng,
) -> Descriptor {
    let n = rng.gen_range(1..=4usize);
    let mut cuts: Vec<usize> = (0..n - 1).map(|_| rng.gen_range(0..=len)).collect();
    cuts.sort_unstable();
    cuts.insert(0, 0);
    cuts.push(len);
    let mut d = Descriptor::new(0);
    for (k, w) in cuts.windows(2).enumerate() {
        let l = w[1] - w[0];
        let m = mems[rng.gen_range(0..mems.len())];
        let off = if disjoint {
            let q = region / 4;
            k * q + rng.gen_range(0..=q - l)
        } else {
            rng.gen_range(0..=region - l)
        };
        d.push(nic.segment(m, off, l).unwrap()).unwrap();
    }
    d
}

/// Random traffic, by reference (inline_max 0) and mixed (inline up to 1 KiB): every message
/// arrives whole into its own descriptor (boundaries kept, scatter-gather applied), in posting
/// order, with one successful completion per send and per receive carrying tag, length and
/// immediate data.
#[test]
fn random_scatter_gather_messages_arrive_whole_and_in_order() {
    const REGION: usize = 32768;
    for (seed, inline_max) in [(1u64, 0usize), (2, 0), (3, 1024), (4, 1024)] {
        let (mut a, mut b) = pair(Backend::SharedMemory, cfg(inline_max), &format!("sg{seed}"));
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let smems: Vec<_> = (0..2)
            .map(|_| b.nic.register_mem(vec![0; REGION]).unwrap())
            .collect();
        let rmems: Vec<_> = (0..2)
            .map(|_| a.nic.register_mem(vec![0; REGION]).unwrap())
            .collect();
        for m in &smems {
            rng.fill(b.nic.mem_mut(*m).unwrap());
        }
        let mut tag = 0u64;
        for _round in 0..30 {
            let batch = rng.gen_range(1..=6usize);
            let mut expect = Vec::new();
            let mut rdescs = Vec::new();
            for _ in 0..batch {
                let len = if rng.gen_bool(0.2) {
                    rng.gen_range(0..=16)
                } else {
                    rng.gen_range(0..=6000)
                };
                // Receives are scatter lists of exactly `len` bytes; each batch reuses the
                // receive regions, so a message is checked before the next batch lands.
                let mut rd = random_segments(&a.nic, &rmems, REGION, len, true, &mut rng);
                rd.tag = tag;
                let mut sd = random_segments(&b.nic, &smems, REGION, len, false, &mut rng);
                sd.tag = tag;
                sd.immediate = rng.gen();
                let mut bytes = Vec::new();
                for s in sd.segments() {
                    bytes.extend_from_slice(&b.nic.mem(s.mem).unwrap()[s.offset..s.offset + s.len]);
                }
                expect.push((tag, len, sd.immediate, bytes));
                rdescs.push((rd, sd));
                tag += 1;
            }
            // Receives may overlap in memory between messages of one batch: post one message
            // at a time, but several sends may be in flight behind one doorbell.
            for (k, (rd, sd)) in rdescs.iter().enumerate() {
                a.nic.post_recv(a.vi, rd).unwrap();
                b.nic.post_send_deferred(b.vi, sd).unwrap();
                b.nic.doorbell(b.vi).unwrap();
                let (rs, ss) = drain(&mut a, &mut b, 2);
                let (t, len, imm, bytes) = &expect[k];
                assert_eq!(rs.len(), 1, "seed {seed}: {rs:?} {ss:?}");
                let (r, s) = (rs[0], ss[0]);
                assert_eq!(
                    (r.queue, r.tag, r.status, r.len, r.immediate),
                    (WorkQueue::Recv, *t, Status::Success, *len, *imm),
                    "seed {seed}"
                );
                assert_eq!(
                    (s.queue, s.tag, s.status, s.len),
                    (WorkQueue::Send, *t, Status::Success, *len)
                );
                let mut got = Vec::new();
                for seg in rd.segments() {
                    got.extend_from_slice(
                        &a.nic.mem(seg.mem).unwrap()[seg.offset..seg.offset + seg.len],
                    );
                }
                assert!(got == *bytes, "seed {seed}: message {t} differs");
            }
        }
        let st = a.nic.vi_stats(a.vi).unwrap();
        assert_eq!((st.recv_msgs, st.recv_no_descriptor), (tag, 0));
    }
}

/// Several messages in flight at once on the one-copy path complete in posting order on both
/// sides, and a message that finds no receive descriptor is reported and discarded without
/// disturbing the next.
#[test]
fn in_flight_messages_complete_in_order_and_unposted_ones_are_reported() {
    let (mut a, mut b) = pair(Backend::SharedMemory, cfg(0), "order");
    let sm = b
        .nic
        .register_mem((0..=255u8).cycle().take(40_000).collect())
        .unwrap();
    let rm = a.nic.register_mem(vec![0; 40_000]).unwrap();
    for k in 0..8usize {
        let seg = a.nic.segment(rm, k * 5000, 5000).unwrap();
        a.nic
            .post_recv(a.vi, &Descriptor::single(seg, k as u64))
            .unwrap();
    }
    for k in 0..9usize {
        let seg = b.nic.segment(sm, k * 4000, 2000 + k).unwrap();
        b.nic
            .post_send(b.vi, &Descriptor::single(seg, k as u64))
            .unwrap();
    }
    let (rs, ss) = drain(&mut a, &mut b, 18);
    let tags = |v: &[Completion]| v.iter().map(|c| c.tag).collect::<Vec<_>>();
    assert_eq!(tags(&ss), (0..9).collect::<Vec<u64>>());
    assert!(ss.iter().all(|c| c.is_ok()));
    assert_eq!(tags(&rs[..8]), (0..8).collect::<Vec<u64>>());
    for (k, c) in rs[..8].iter().enumerate() {
        assert_eq!((c.status, c.len), (Status::Success, 2000 + k));
        let got = &a.nic.mem(rm).unwrap()[k * 5000..k * 5000 + c.len];
        let want = &b.nic.mem(sm).unwrap()[k * 4000..k * 4000 + c.len];
        assert!(got == want, "message {k}");
    }
    assert_eq!(
        (rs[8].id, rs[8].status, rs[8].len),
        (None, Status::NoRecvDescriptor, 2008)
    );
}

/// One copy: the payload is read out of the sender's registered memory when the receiver
/// takes it, not copied at post time, and the send completes only then (before, the send
/// completed at once and the receiver got the bytes as they were at posting).
#[test]
fn receiver_reads_the_senders_region_and_the_send_completes_after() {
    let (mut a, mut b) = pair(Backend::SharedMemory, cfg(0), "onecopy");
    let sm = b.nic.register_mem(vec![1; 4096]).unwrap();
    let rm = a.nic.register_mem(vec![0; 4096]).unwrap();
    let rseg = a.nic.segment(rm, 0, 4096).unwrap();
    a.nic.post_recv(a.vi, &Descriptor::single(rseg, 5)).unwrap();
    let sseg = b.nic.segment(sm, 0, 4096).unwrap();
    b.nic.post_send(b.vi, &Descriptor::single(sseg, 6)).unwrap();
    for _ in 0..1000 {
        assert!(
            b.nic.cq_poll(b.cq).unwrap().is_none(),
            "send done before delivery"
        );
    }
    // Under the contract the consumer leaves a posted send's memory alone; this test writes
    // it anyway to see where the receiver reads from.
    b.nic.mem_mut(sm).unwrap().fill(9);
    let r = a.nic.cq_wait(a.cq, T, WaitMode::Poll).unwrap();
    assert_eq!((r.tag, r.len), (5, 4096));
    assert!(a.nic.mem(rm).unwrap().iter().all(|&x| x == 9));
    let s = b.nic.cq_wait(b.cq, T, WaitMode::Block).unwrap();
    assert_eq!((s.tag, s.status), (6, Status::Success));
}

/// The peer process for `sender_that_dies_after_posting_still_delivers`: connects, posts one
/// 64 KiB message by reference, and aborts before it completes.
#[test]
fn dying_sender_helper() {
    let Ok(addr) = std::env::var("MSLINK_VI_DIE_ADDR") else {
        return;
    };
    let mut nic = Nic::open(Backend::SharedMemory, cfg(0)).unwrap();
    let cq = nic.create_cq();
    let vi = nic.create_vi(cq, cq).unwrap();
    let m = nic
        .register_mem((0..65536u32).map(|i| (i % 251) as u8).collect())
        .unwrap();
    nic.connect(vi, &addr, T).unwrap();
    let s = nic.segment(m, 0, 65536).unwrap();
    nic.post_send(vi, &Descriptor::single(s, 0)).unwrap();
    std::process::abort();
}

/// A sender process that dies after posting leaves its message readable (the receiver holds
/// its own mapping of the sender's region): the message arrives whole, then the next receive
/// completes with `PeerGone` instead of hanging.
#[test]
fn sender_that_dies_after_posting_still_delivers() {
    let path = format!("/tmp/mslink-vi-test-{}-die1.sock", std::process::id());
    let mut nic = Nic::open(Backend::SharedMemory, cfg(0)).unwrap();
    let l = nic.listen(&path).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["dying_sender_helper", "--exact", "--nocapture"])
        .env("MSLINK_VI_DIE_ADDR", &path)
        .spawn()
        .unwrap();
    let cq = nic.create_cq();
    let vi = nic.create_vi(cq, cq).unwrap();
    let m = nic.register_mem(vec![0; 2 * 65536]).unwrap();
    for k in 0..2usize {
        let s = nic.segment(m, k * 65536, 65536).unwrap();
        nic.post_recv(vi, &Descriptor::single(s, k as u64)).unwrap();
    }
    nic.accept(l, vi, T).unwrap();
    let _ = child.wait();
    let first = nic.cq_wait(cq, T, WaitMode::Block).unwrap();
    assert_eq!(
        (first.tag, first.status, first.len),
        (0, Status::Success, 65536)
    );
    let want: Vec<u8> = (0..65536u32).map(|i| (i % 251) as u8).collect();
    assert!(nic.mem(m).unwrap()[..65536] == want[..]);
    let second = nic.cq_wait(cq, T, WaitMode::Poll).unwrap();
    assert_eq!((second.tag, second.status), (1, Status::PeerGone));
}

fn vm_locked_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmLck:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Registration pins the region (000 §III.A): VmLck grows by its size, and deregistration
/// gives it back. Needs a locked-memory limit of at least 1 MiB (root, or the usual 8 MiB
/// default). Other tests of this binary lock memory too, so this one runs in a child process
/// alone.
#[test]
fn registered_memory_is_locked_in_ram() {
    if std::env::var_os("MSLINK_VI_PIN_CHILD").is_none() {
        let st = Command::new(std::env::current_exe().unwrap())
            .args([
                "registered_memory_is_locked_in_ram",
                "--exact",
                "--nocapture",
            ])
            .env("MSLINK_VI_PIN_CHILD", "1")
            .status()
            .unwrap();
        assert!(st.success());
        return;
    }
    for backend in [Backend::SharedMemory, Backend::Tcp] {
        let mut nic = Nic::open(backend, NicConfig::default()).unwrap();
        let before = vm_locked_kib();
        let m = nic.register_mem(vec![3; 1 << 20]).unwrap();
        assert_eq!(vm_locked_kib() - before, 1024, "{backend:?}");
        assert!(nic.mem(m).unwrap().iter().all(|&x| x == 3));
        let back = nic.deregister_mem(m).unwrap();
        assert_eq!(back.len(), 1 << 20);
        assert_eq!(vm_locked_kib(), before, "{backend:?}");
    }
}

/// Drop CAP_IPC_LOCK (root ignores RLIMIT_MEMLOCK with it) from this process.
fn drop_ipc_lock() {
    #[repr(C)]
    struct Hdr {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const CAP_IPC_LOCK: u32 = 14;
    let mut h = Hdr {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: capget/capset with a v3 header and two data words, as the ABI asks.
    unsafe {
        assert_eq!(libc::syscall(libc::SYS_capget, &mut h, d.as_mut_ptr()), 0);
        d[0].effective &= !(1 << CAP_IPC_LOCK);
        d[0].permitted &= !(1 << CAP_IPC_LOCK);
        assert_eq!(libc::syscall(libc::SYS_capset, &mut h, d.as_ptr()), 0);
    }
}

/// With RLIMIT_MEMLOCK at 64 KiB (set in a child process, CAP_IPC_LOCK dropped), registering
/// 1 MiB fails with an error naming the size, the limit and `ulimit -l` — not a panic — and a
/// region within the limit still registers.
#[test]
fn memlock_limit_refusal_is_a_clear_error() {
    if std::env::var_os("MSLINK_VI_MEMLOCK_CHILD").is_none() {
        common::child_test(
            &[],
            "memlock_limit_refusal_is_a_clear_error",
            ("MSLINK_VI_MEMLOCK_CHILD", "1"),
        );
        return;
    }
    let lim = libc::rlimit {
        rlim_cur: 64 << 10,
        rlim_max: 64 << 10,
    };
    // SAFETY: a valid rlimit; this child process exits after the test.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) }, 0);
    drop_ipc_lock();
    for backend in [Backend::SharedMemory, Backend::Tcp] {
        let mut nic = Nic::open(backend, NicConfig::default()).unwrap();
        let e = nic.register_mem(vec![0; 1 << 20]).unwrap_err();
        assert!(matches!(e, mslink_vi::VipError::MemLock { .. }), "{e:?}");
        let msg = e.to_string();
        for want in ["1048576-byte", "65536 bytes", "ulimit -l"] {
            assert!(msg.contains(want), "{want:?} missing from: {msg}");
        }
        let m = nic.register_mem(vec![0; 16 << 10]).unwrap();
        nic.deregister_mem(m).unwrap();
    }
}
