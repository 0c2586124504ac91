//! API contract of the VI provider, on every backend (shared memory, TCP and UDP sockets,
//! io_uring over TCP and UDP), in one process (two NICs).

mod common;

use common::{pair, End, ALL, T};
use mslink_vi::{
    Backend, DescState, Descriptor, MemHandle, Nic, NicConfig, Segment, Status, VipError, WaitMode,
    WorkQueue,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn small_ring() -> NicConfig {
    NicConfig {
        ring_bytes: 256,
        ..NicConfig::default()
    }
}

fn fill(nic: &mut Nic, mem: MemHandle, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let b = nic.mem_mut(mem).unwrap();
    rng.fill(b);
    b.to_vec()
}

/// Poll both ends until `x` has a completion; `y`'s completions are kept.
fn pump(x: &mut End, y: &mut End, ys: &mut Vec<mslink_vi::Completion>) -> mslink_vi::Completion {
    for _ in 0..1_000_000 {
        if let Some(c) = x.nic.cq_poll(x.cq).unwrap() {
            return c;
        }
        if let Some(c) = y.nic.cq_poll(y.cq).unwrap() {
            ys.push(c);
        }
    }
    panic!("no completion");
}

#[test]
fn descriptor_lifecycle_posted_in_progress_done() {
    // A message far larger than the socket buffers moves part by part, so both ends see it
    // in progress. (On shared memory a message moves whole: inline, or copied by the
    // receiver in one go out of the sender's region, so only the send is seen in progress:
    // `shm_onecopy.rs`.)
    const LEN: usize = 32 << 20;
    let (mut a, mut b) = pair(Backend::Tcp, NicConfig::default(), "life");
    let rmem = a.nic.register_mem(vec![0; LEN]).unwrap();
    let smem = b.nic.register_mem(vec![0; LEN]).unwrap();
    let data = fill(&mut b.nic, smem, 1);
    let rseg = a.nic.segment(rmem, 0, LEN).unwrap();
    let rid = a
        .nic
        .post_recv(a.vi, &Descriptor::single(rseg, 11))
        .unwrap();
    assert_eq!(
        a.nic.desc_state(a.vi, WorkQueue::Recv, rid),
        Some(DescState::Posted)
    );
    let sseg = b.nic.segment(smem, 0, LEN).unwrap();
    let sid = b
        .nic
        .post_send(b.vi, &Descriptor::single(sseg, 22))
        .unwrap();
    // The socket took only part of it: the send is part-way.
    assert_eq!(
        b.nic.desc_state(b.vi, WorkQueue::Send, sid),
        Some(DescState::InProgress)
    );
    assert!(a.nic.cq_poll(a.cq).unwrap().is_none());
    assert_eq!(
        a.nic.desc_state(a.vi, WorkQueue::Recv, rid),
        Some(DescState::InProgress)
    );
    // Alternate until the send completes, then check Done before reaping.
    let mut send_done = None;
    let mut recv_done = None;
    for _ in 0..1_000_000 {
        if send_done.is_none() {
            send_done = b.nic.cq_poll(b.cq).unwrap();
        }
        if recv_done.is_none() {
            if let Some(st) = a.nic.desc_state(a.vi, WorkQueue::Recv, rid) {
                if st == DescState::Done {
                    recv_done = a.nic.cq_poll(a.cq).unwrap();
                    continue;
                }
            }
            let _ = a.nic.cq_poll(a.cq).unwrap().map(|c| recv_done = Some(c));
        }
        if send_done.is_some() && recv_done.is_some() {
            break;
        }
    }
    let s = send_done.expect("send completed");
    let r = recv_done.expect("recv completed");
    assert_eq!(
        (s.id, s.tag, s.status, s.len),
        (Some(sid), 22, Status::Success, LEN)
    );
    assert_eq!(
        (r.id, r.tag, r.status, r.len),
        (Some(rid), 11, Status::Success, LEN)
    );
    assert!(a.nic.mem(rmem).unwrap() == &data[..]);
    // Reaped: no longer known.
    assert_eq!(a.nic.desc_state(a.vi, WorkQueue::Recv, rid), None);
}

#[test]
fn done_state_visible_until_reaped() {
    for backend in ALL {
        let (mut a, mut b) = pair(backend, NicConfig::default(), "reap");
        let rm = a.nic.register_mem(vec![0; 64]).unwrap();
        let rseg = a.nic.segment(rm, 0, 64).unwrap();
        let rid = a.nic.post_recv(a.vi, &Descriptor::single(rseg, 3)).unwrap();
        let m = b.nic.register_mem(vec![5; 64]).unwrap();
        let seg = b.nic.segment(m, 0, 64).unwrap();
        b.nic.post_send(b.vi, &Descriptor::single(seg, 1)).unwrap();
        assert!(b.nic.cq_wait(b.cq, T, WaitMode::Poll).unwrap().is_ok());
        // The doorbell drives the provider without reaping: the state turns Done.
        let mut st = None;
        for _ in 0..100_000 {
            a.nic.doorbell(a.vi).unwrap();
            st = a.nic.desc_state(a.vi, WorkQueue::Recv, rid);
            if st == Some(DescState::Done) {
                break;
            }
        }
        assert_eq!(st, Some(DescState::Done));
        let c = a.nic.cq_poll(a.cq).unwrap().unwrap();
        assert_eq!((c.id, c.tag), (Some(rid), 3));
        assert_eq!(a.nic.desc_state(a.vi, WorkQueue::Recv, rid), None);
    }
}

#[test]
fn completion_order_per_work_queue_and_shared_cq() {
    for backend in ALL {
        let (mut a, mut b) = pair(backend, small_ring(), "order");
        let rmem = a.nic.register_mem(vec![0; 16 * 600]).unwrap();
        let smem = b.nic.register_mem(vec![0; 600]).unwrap();
        fill(&mut b.nic, smem, 2);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut rids = Vec::new();
        for k in 0..16 {
            let seg = a.nic.segment(rmem, k * 600, 600).unwrap();
            rids.push(
                a.nic
                    .post_recv(a.vi, &Descriptor::single(seg, 100 + k as u64))
                    .unwrap(),
            );
        }
        let mut sids = Vec::new();
        let mut lens = Vec::new();
        for k in 0..16 {
            let len = rng.gen_range(0..=600);
            lens.push(len);
            let seg = b.nic.segment(smem, 0, len).unwrap();
            let mut d = Descriptor::single(seg, k);
            d.immediate = k as u32 * 7;
            sids.push(b.nic.post_send(b.vi, &d).unwrap());
        }
        let mut got_s = Vec::new();
        let mut got_r = Vec::new();
        for _ in 0..1_000_000 {
            if let Some(c) = b.nic.cq_poll(b.cq).unwrap() {
                assert!(c.is_ok());
                got_s.push(c.id.unwrap());
            }
            if let Some(c) = a.nic.cq_poll(a.cq).unwrap() {
                assert!(c.is_ok(), "{c:?}");
                assert_eq!(c.len, lens[got_r.len()]);
                assert_eq!(c.immediate, got_r.len() as u32 * 7);
                got_r.push(c.id.unwrap());
            }
            if got_s.len() == 16 && got_r.len() == 16 {
                break;
            }
        }
        assert_eq!(got_s, sids, "{backend:?}");
        assert_eq!(got_r, rids, "{backend:?}");
    }
}

#[test]
fn one_cq_serves_two_vis() {
    for backend in ALL {
        let (mut a1, mut b1) = pair(backend, NicConfig::default(), "cq1");
        let (a2, mut b2) = pair(backend, NicConfig::default(), "cq2");
        // Move a2's VI onto a1's NIC is not possible (VIs belong to a NIC); instead give b1 a
        // second VI on its own CQ by connecting again.
        drop(a2);
        let _ = &mut b2;
        let shared = a1.nic.create_cq();
        let vi2 = a1.nic.create_vi(shared, shared).unwrap();
        let vi3 = a1.nic.create_vi(shared, shared).unwrap();
        let l = a1.nic.listen(&common::addr(backend, "cq3")).unwrap();
        let at = a1.nic.listener_addr(l).unwrap();
        let t = std::thread::spawn(move || {
            let mut n = Nic::open(backend, NicConfig::default()).unwrap();
            let cq = n.create_cq();
            let v1 = n.create_vi(cq, cq).unwrap();
            let v2 = n.create_vi(cq, cq).unwrap();
            n.connect(v1, &at, T).unwrap();
            n.connect(v2, &at, T).unwrap();
            let m = n.register_mem(vec![9; 32]).unwrap();
            let seg = n.segment(m, 0, 32).unwrap();
            n.post_send(v1, &Descriptor::single(seg, 1)).unwrap();
            n.post_send(v2, &Descriptor::single(seg, 2)).unwrap();
            for _ in 0..2 {
                assert!(n.cq_wait(cq, T, WaitMode::Block).unwrap().is_ok());
            }
            n
        });
        let m = a1.nic.register_mem(vec![0; 64]).unwrap();
        for (vi, off) in [(vi2, 0), (vi3, 32)] {
            let seg = a1.nic.segment(m, off, 32).unwrap();
            a1.nic
                .post_recv(vi, &Descriptor::single(seg, off as u64))
                .unwrap();
        }
        a1.nic.accept(l, vi2, T).unwrap();
        a1.nic.accept(l, vi3, T).unwrap();
        let mut vis = Vec::new();
        for _ in 0..2 {
            let c = a1.nic.cq_wait(shared, T, WaitMode::Block).unwrap();
            assert!(c.is_ok());
            vis.push(c.vi);
        }
        vis.sort_by_key(|v| v.0);
        assert_eq!(vis, vec![vi2, vi3]);
        assert_eq!(a1.nic.mem(m).unwrap(), &[9u8; 64][..]);
        t.join().unwrap();
        let _ = &mut b1;
    }
}

#[test]
fn buffer_outside_registered_region_refused() {
    let mut nic = Nic::open(Backend::SharedMemory, NicConfig::default()).unwrap();
    let cq = nic.create_cq();
    let vi = nic.create_vi(cq, cq).unwrap();
    let m = nic.register_mem(vec![0; 4096]).unwrap();
    assert!(matches!(
        nic.segment(m, 4000, 200),
        Err(VipError::OutOfBounds { .. })
    ));
    assert!(matches!(
        nic.segment(m, usize::MAX, 2),
        Err(VipError::OutOfBounds { .. })
    ));
    // A hand-built segment is checked again at post time.
    let bad = Segment {
        mem: m,
        offset: 4090,
        len: 7,
    };
    assert!(matches!(
        nic.post_send(vi, &Descriptor::single(bad, 0)),
        Err(VipError::OutOfBounds { .. })
    ));
    assert!(matches!(
        nic.post_recv(vi, &Descriptor::single(bad, 0)),
        Err(VipError::OutOfBounds { .. })
    ));
    // A deregistered region is no longer usable.
    let good = nic.segment(m, 0, 16).unwrap();
    nic.deregister_mem(m).unwrap();
    assert!(matches!(
        nic.post_send(vi, &Descriptor::single(good, 0)),
        Err(VipError::InvalidHandle)
    ));
    let mut d = Descriptor::new(0);
    for _ in 0..mslink_vi::MAX_SEGMENTS {
        d.push(good).unwrap();
    }
    assert!(matches!(d.push(good), Err(VipError::TooManySegments)));
}

#[test]
fn deregister_with_posted_descriptor_refused_and_disconnect_flushes() {
    for backend in ALL {
        let (mut a, mut b) = pair(backend, NicConfig::default(), "flush");
        let m = a.nic.register_mem(vec![0; 300]).unwrap();
        let mut ids = Vec::new();
        for k in 0..3 {
            let seg = a.nic.segment(m, k * 100, 100).unwrap();
            ids.push(
                a.nic
                    .post_recv(a.vi, &Descriptor::single(seg, k as u64))
                    .unwrap(),
            );
        }
        assert!(matches!(
            a.nic.deregister_mem(m),
            Err(VipError::MemoryInUse(3))
        ));
        assert!(matches!(a.nic.destroy_vi(a.vi), Err(VipError::Busy)));
        a.nic.disconnect(a.vi).unwrap();
        for (k, id) in ids.iter().enumerate() {
            let c = a.nic.cq_poll(a.cq).unwrap().expect("flushed completion");
            assert_eq!(
                (c.id, c.tag, c.status),
                (Some(*id), k as u64, Status::Flushed)
            );
        }
        assert!(a.nic.cq_poll(a.cq).unwrap().is_none());
        assert_eq!(a.nic.deregister_mem(m).unwrap().len(), 300);
        a.nic.destroy_vi(a.vi).unwrap();
        // The peer's posted receive completes with an error, and further posts are refused.
        let pm = b.nic.register_mem(vec![0; 8]).unwrap();
        let seg = b.nic.segment(pm, 0, 8).unwrap();
        let pid = b.nic.post_recv(b.vi, &Descriptor::single(seg, 9)).unwrap();
        let c = b.nic.cq_wait(b.cq, T, WaitMode::Block).unwrap();
        assert_eq!((c.id, c.status), (Some(pid), Status::PeerClosed));
        assert!(matches!(
            b.nic.post_send(b.vi, &Descriptor::single(seg, 0)),
            Err(VipError::NotConnected)
        ));
        b.nic.disconnect(b.vi).unwrap();
        b.nic.destroy_vi(b.vi).unwrap();
        b.nic.close();
        a.nic.close();
    }
}

#[test]
fn receive_without_descriptor_is_an_error_completion() {
    for backend in ALL {
        let (mut a, mut b) = pair(backend, NicConfig::default(), "nodesc");
        let sm = b.nic.register_mem(vec![1; 50]).unwrap();
        let seg = b.nic.segment(sm, 0, 50).unwrap();
        b.nic.post_send(b.vi, &Descriptor::single(seg, 0)).unwrap();
        let c = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
        assert_eq!(
            (c.id, c.status, c.len),
            (None, Status::NoRecvDescriptor, 50)
        );
        assert_eq!(a.nic.vi_stats(a.vi).unwrap().recv_no_descriptor, 1);
        // Too long for the posted descriptor: LengthError on that descriptor.
        let rm = a.nic.register_mem(vec![0; 64]).unwrap();
        let small = a.nic.segment(rm, 0, 10).unwrap();
        let id = a
            .nic
            .post_recv(a.vi, &Descriptor::single(small, 4))
            .unwrap();
        b.nic.post_send(b.vi, &Descriptor::single(seg, 0)).unwrap();
        let c = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
        assert_eq!((c.id, c.status), (Some(id), Status::LengthError));
        // The stream stays in step: the next message lands correctly.
        let ok = a.nic.segment(rm, 0, 64).unwrap();
        let id = a.nic.post_recv(a.vi, &Descriptor::single(ok, 5)).unwrap();
        b.nic.post_send(b.vi, &Descriptor::single(seg, 0)).unwrap();
        let c = a.nic.cq_wait(a.cq, T, WaitMode::Poll).unwrap();
        assert_eq!(
            (c.id, c.status, c.len),
            (Some(id), Status::Success, 50),
            "{backend:?}"
        );
    }
}

#[test]
fn scatter_gather_across_segments() {
    for backend in ALL {
        let (mut a, mut b) = pair(backend, small_ring(), "sg");
        let sm = b.nic.register_mem(vec![0; 3000]).unwrap();
        let data = fill(&mut b.nic, sm, 4);
        let mut sd = Descriptor::new(1);
        sd.push(b.nic.segment(sm, 0, 700).unwrap()).unwrap();
        sd.push(b.nic.segment(sm, 700, 1).unwrap()).unwrap();
        sd.push(b.nic.segment(sm, 701, 2299).unwrap()).unwrap();
        let r1 = a.nic.register_mem(vec![0; 1000]).unwrap();
        let r2 = a.nic.register_mem(vec![0; 2500]).unwrap();
        let mut rd = Descriptor::new(2);
        rd.push(a.nic.segment(r1, 0, 1000).unwrap()).unwrap();
        rd.push(a.nic.segment(r2, 0, 2500).unwrap()).unwrap();
        a.nic.post_recv(a.vi, &rd).unwrap();
        b.nic.post_send(b.vi, &sd).unwrap();
        let mut ys = Vec::new();
        let c = pump(&mut a, &mut b, &mut ys);
        assert_eq!((c.status, c.len), (Status::Success, 3000));
        let mut got = a.nic.mem(r1).unwrap().to_vec();
        got.extend_from_slice(&a.nic.mem(r2).unwrap()[..2000]);
        assert_eq!(got, data, "{backend:?}");
        if ys.is_empty() {
            ys.push(b.nic.cq_wait(b.cq, T, WaitMode::Poll).unwrap());
        }
        assert_eq!((ys[0].tag, ys[0].status), (1, Status::Success));
    }
}

#[test]
fn blocking_echo_between_threads() {
    for backend in ALL {
        let (mut a, mut b) = pair(backend, small_ring(), "echo");
        let t = std::thread::spawn(move || {
            // Two buffers: the next receive is posted before the echo is sent, so the
            // peer's next message always finds a descriptor.
            let m = a.nic.register_mem(vec![0; 2000]).unwrap();
            let seg = a.nic.segment(m, 0, 1000).unwrap();
            a.nic.post_recv(a.vi, &Descriptor::single(seg, 0)).unwrap();
            let mut sends_done = 0;
            for k in 0..50usize {
                let c = loop {
                    let c = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
                    assert!(c.is_ok(), "{c:?}");
                    if c.queue == WorkQueue::Recv {
                        break c;
                    }
                    sends_done += 1;
                };
                let cur = (k % 2) * 1000;
                let next = a.nic.segment(m, 1000 - cur, 1000).unwrap();
                a.nic.post_recv(a.vi, &Descriptor::single(next, 0)).unwrap();
                let seg = a.nic.segment(m, cur, c.len).unwrap();
                a.nic.post_send(a.vi, &Descriptor::single(seg, 1)).unwrap();
            }
            // A message larger than the ring is only part-way out when posted: stay until
            // every send completed, or the peer would (rightly) see us vanish mid-message.
            while sends_done < 50 {
                let c = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
                assert_eq!((c.queue, c.status), (WorkQueue::Send, Status::Success));
                sends_done += 1;
            }
        });
        let sm = b.nic.register_mem(vec![0; 1000]).unwrap();
        let rm = b.nic.register_mem(vec![0; 1000]).unwrap();
        for k in 0..50usize {
            let len = (k * 37) % 1000;
            b.nic.mem_mut(sm).unwrap()[..len].fill(k as u8);
            let rs = b.nic.segment(rm, 0, 1000).unwrap();
            b.nic.post_recv(b.vi, &Descriptor::single(rs, 0)).unwrap();
            let ss = b.nic.segment(sm, 0, len).unwrap();
            b.nic.post_send(b.vi, &Descriptor::single(ss, 0)).unwrap();
            let mut got = 0;
            while got < 2 {
                let c = b.nic.cq_wait(b.cq, T, WaitMode::Block).unwrap();
                assert!(c.is_ok(), "client {k} {c:?}");
                if c.queue == WorkQueue::Recv {
                    assert_eq!(c.len, len);
                }
                got += 1;
            }
            assert!(b.nic.mem(rm).unwrap()[..len].iter().all(|&x| x == k as u8));
        }
        t.join().unwrap();
    }
}

#[test]
fn wait_times_out_instead_of_hanging() {
    for backend in ALL {
        let (mut a, _b) = pair(backend, NicConfig::default(), "tmo");
        let short = std::time::Duration::from_millis(30);
        assert!(matches!(
            a.nic.cq_wait(a.cq, short, WaitMode::Poll),
            Err(VipError::Timeout)
        ));
        assert!(matches!(
            a.nic.cq_wait(a.cq, short, WaitMode::Block),
            Err(VipError::Timeout)
        ));
    }
}

#[test]
fn deferred_doorbell_batches_posts_until_rung() {
    let cfg = NicConfig {
        deferred_doorbell: true,
        ..NicConfig::default()
    };
    for backend in ALL {
        let (mut a, mut b) = pair(backend, cfg.clone(), "bell");
        let rm = a.nic.register_mem(vec![0; 3 * 16]).unwrap();
        for k in 0..3 {
            let seg = a.nic.segment(rm, k * 16, 16).unwrap();
            a.nic
                .post_recv(a.vi, &Descriptor::single(seg, k as u64))
                .unwrap();
        }
        let sm = b.nic.register_mem(vec![3; 16]).unwrap();
        let seg = b.nic.segment(sm, 0, 16).unwrap();
        let ids: Vec<_> = (0..3)
            .map(|k| b.nic.post_send(b.vi, &Descriptor::single(seg, k)).unwrap())
            .collect();
        // Nothing moves before the doorbell.
        assert!(a.nic.cq_poll(a.cq).unwrap().is_none());
        for id in &ids {
            assert_eq!(
                b.nic.desc_state(b.vi, WorkQueue::Send, *id),
                Some(DescState::Posted)
            );
        }
        b.nic.doorbell(b.vi).unwrap();
        for (k, id) in ids.iter().enumerate() {
            let c = b.nic.cq_wait(b.cq, T, WaitMode::Poll).unwrap();
            assert_eq!(
                (c.id, c.tag, c.status),
                (Some(*id), k as u64, Status::Success)
            );
            let r = a.nic.cq_wait(a.cq, T, WaitMode::Poll).unwrap();
            assert_eq!((r.tag, r.len), (k as u64, 16));
        }
        // A CQ in use cannot be destroyed; handles of destroyed objects are refused.
        assert!(matches!(a.nic.destroy_cq(a.cq), Err(VipError::Busy)));
        a.nic.disconnect(a.vi).unwrap();
        a.nic.destroy_vi(a.vi).unwrap();
        a.nic.destroy_cq(a.cq).unwrap();
        assert!(matches!(a.nic.cq_poll(a.cq), Err(VipError::InvalidHandle)));
        assert!(matches!(
            a.nic.destroy_vi(a.vi),
            Err(VipError::InvalidHandle)
        ));
    }
}

/// Sends posted without a doorbell on a NIC that rings it at every post wait for
/// `doorbell`, then go as one batch (on io_uring over TCP: one gathered SENDMSG) and arrive
/// whole, in order, scatter-gather intact.
#[test]
fn post_send_deferred_waits_for_the_doorbell_and_keeps_order() {
    for backend in ALL {
        let (mut a, mut b) = pair(backend, NicConfig::default(), "defer1");
        let n = 40_000;
        let rm = a.nic.register_mem(vec![0; 3 * n]).unwrap();
        for k in 0..3 {
            let seg = a.nic.segment(rm, k * n, n).unwrap();
            a.nic
                .post_recv(a.vi, &Descriptor::single(seg, k as u64))
                .unwrap();
        }
        let sm = b.nic.register_mem(vec![0; 3 * n]).unwrap();
        let data = fill(&mut b.nic, sm, 77);
        let ids: Vec<_> = (0..3)
            .map(|k| {
                let mut d = Descriptor::new(k as u64);
                d.push(b.nic.segment(sm, k * n, 1000).unwrap()).unwrap();
                d.push(b.nic.segment(sm, k * n + 1000, n - 1000).unwrap())
                    .unwrap();
                b.nic.post_send_deferred(b.vi, &d).unwrap()
            })
            .collect();
        for id in &ids {
            assert_eq!(
                b.nic.desc_state(b.vi, WorkQueue::Send, *id),
                Some(DescState::Posted),
                "{backend:?}"
            );
        }
        b.nic.doorbell(b.vi).unwrap();
        let t = std::thread::spawn(move || {
            for (k, id) in ids.iter().enumerate() {
                let c = b.nic.cq_wait(b.cq, T, WaitMode::Block).unwrap();
                assert_eq!(
                    (c.id, c.tag, c.status),
                    (Some(*id), k as u64, Status::Success)
                );
            }
            b
        });
        for k in 0..3 {
            let r = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
            assert_eq!(
                (r.tag, r.status, r.len),
                (k as u64, Status::Success, n),
                "{backend:?}"
            );
        }
        assert!(
            a.nic.mem(rm).unwrap() == &data[..],
            "{backend:?}: payload differs"
        );
        t.join().unwrap();
    }
}
