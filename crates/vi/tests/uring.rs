//! io_uring backend specifics: large messages through fixed buffers and direct receives,
//! zero-copy accounting, the UDP message limit.

mod common;

use common::{pair, T};
use mslink_vi::{Backend, Descriptor, NicConfig, Status, VipError, WaitMode, MAX_UDP_MESSAGE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A 1 MiB message in two gathered segments arrives intact in two scattered segments;
/// with SEND_ZC every send's notification is counted, copied or not.
#[test]
fn large_message_through_fixed_buffers_and_zero_copy_accounting() {
    for zc in [true, false] {
        let cfg = NicConfig {
            send_zc: zc,
            ..NicConfig::default()
        };
        let (mut a, mut b) = pair(Backend::UringTcp, cfg, "big");
        let n = 1 << 20;
        let sm = b.nic.register_mem(vec![0; n]).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(61);
        rng.fill(b.nic.mem_mut(sm).unwrap());
        let data = b.nic.mem(sm).unwrap().to_vec();
        let r1 = a.nic.register_mem(vec![0; n / 4]).unwrap();
        let r2 = a.nic.register_mem(vec![0; n]).unwrap();
        let mut rd = Descriptor::new(1);
        rd.push(a.nic.segment(r1, 0, n / 4).unwrap()).unwrap();
        rd.push(a.nic.segment(r2, 0, n).unwrap()).unwrap();
        a.nic.post_recv(a.vi, &rd).unwrap();
        let mut sd = Descriptor::new(2);
        sd.push(b.nic.segment(sm, 0, 1000).unwrap()).unwrap();
        sd.push(b.nic.segment(sm, 1000, n - 1000).unwrap()).unwrap();
        b.nic.post_send(b.vi, &sd).unwrap();
        let t = std::thread::spawn(move || {
            let c = b.nic.cq_wait(b.cq, T, WaitMode::Block).unwrap();
            assert_eq!((c.tag, c.status, c.len), (2, Status::Success, n));
            let st = b.nic.vi_stats(b.vi).unwrap();
            b.nic.disconnect(b.vi).unwrap();
            st
        });
        let c = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
        assert_eq!((c.tag, c.status, c.len), (1, Status::Success, n));
        let mut got = a.nic.mem(r1).unwrap().to_vec();
        got.extend_from_slice(&a.nic.mem(r2).unwrap()[..n - n / 4]);
        assert!(got == data, "payload differs (zc {zc})");
        let st = t.join().unwrap();
        // Two non-empty segments: two SEND_ZC operations, each with one notification.
        if zc {
            assert_eq!(st.zc_sends, 2);
            assert!(st.zc_copied <= st.zc_sends);
        } else {
            assert_eq!((st.zc_sends, st.zc_copied), (0, 0));
        }
    }
}

/// A UDP message is one datagram: longer than one datagram can carry is refused at post.
#[test]
fn udp_message_limit_refused_at_post() {
    for backend in [Backend::Udp, Backend::UringUdp] {
        let (_a, mut b) = pair(backend, NicConfig::default(), "udplim");
        let m = b.nic.register_mem(vec![0; MAX_UDP_MESSAGE + 1]).unwrap();
        let too_long = b.nic.segment(m, 0, MAX_UDP_MESSAGE + 1).unwrap();
        assert!(matches!(
            b.nic.post_send(b.vi, &Descriptor::single(too_long, 0)),
            Err(VipError::TooLong)
        ));
        let max = b.nic.segment(m, 0, MAX_UDP_MESSAGE).unwrap();
        b.nic.post_send(b.vi, &Descriptor::single(max, 0)).unwrap();
        let c = b.nic.cq_wait(b.cq, T, WaitMode::Block).unwrap();
        assert_eq!((c.status, c.len), (Status::Success, MAX_UDP_MESSAGE));
    }
}

/// A largest-size datagram with no receive posted is reported with its length, and a
/// datagram longer than the posted buffer is a truncation error on that descriptor.
#[test]
fn udp_unposted_and_truncated_datagrams_reported() {
    for backend in [Backend::Udp, Backend::UringUdp] {
        let (mut a, mut b) = pair(backend, NicConfig::default(), "udptr");
        let m = b.nic.register_mem(vec![7; MAX_UDP_MESSAGE]).unwrap();
        let seg = b.nic.segment(m, 0, MAX_UDP_MESSAGE).unwrap();
        b.nic.post_send(b.vi, &Descriptor::single(seg, 0)).unwrap();
        let c = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
        assert_eq!(
            (c.id, c.status, c.len),
            (None, Status::NoRecvDescriptor, MAX_UDP_MESSAGE)
        );
        let rm = a.nic.register_mem(vec![0; 4096]).unwrap();
        let rs = a.nic.segment(rm, 0, 4096).unwrap();
        let id = a.nic.post_recv(a.vi, &Descriptor::single(rs, 9)).unwrap();
        b.nic.post_send(b.vi, &Descriptor::single(seg, 0)).unwrap();
        let c = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
        assert_eq!(
            (c.id, c.status, c.len),
            (Some(id), Status::LengthError, MAX_UDP_MESSAGE),
            "{backend:?}"
        );
        assert_eq!(a.nic.vi_stats(a.vi).unwrap().length_errors, 1);
    }
}

/// A peer whose NIC goes away without a disconnect (as when its process dies: the kernel
/// closes the socket) leaves the survivor's posted receive with an error completion, not a
/// hang; further posts are refused.
#[test]
fn vanished_tcp_peer_leaves_errors_not_a_hang() {
    let (mut a, b) = pair(Backend::UringTcp, NicConfig::default(), "gone");
    let m = a.nic.register_mem(vec![0; 64]).unwrap();
    let seg = a.nic.segment(m, 0, 64).unwrap();
    let id = a.nic.post_recv(a.vi, &Descriptor::single(seg, 5)).unwrap();
    drop(b);
    let c = a.nic.cq_wait(a.cq, T, WaitMode::Block).unwrap();
    assert_eq!(c.id, Some(id));
    assert!(
        matches!(c.status, Status::PeerClosed | Status::PeerGone),
        "{c:?}"
    );
    assert!(matches!(
        a.nic.post_send(a.vi, &Descriptor::single(seg, 0)),
        Err(VipError::NotConnected)
    ));
    // The region is released with the flushed descriptor.
    assert_eq!(a.nic.deregister_mem(m).unwrap().len(), 64);
}
