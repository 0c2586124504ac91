//! Malformed frames at every layer are dropped and counted under that layer, in every
//! architecture, and no input makes the receive path panic (docs/architecture.md rule 6).

use mslink_link::Instant;
use mslink_stack::proto::DropReason;
use mslink_stack::{Architecture, EndpointId, Stack, StackConfig, UdpConn};
use proptest::prelude::*;

const T: Instant = Instant::ZERO;

/// Receiver B with one UDP endpoint, and a valid frame from A for it.
fn setup(arch: Architecture, checksum: bool, payload: &[u8]) -> (Stack, Vec<u8>) {
    let (ca, cb) = StackConfig::pair(arch);
    let (mut a, ia) = Stack::udp_ip_eth(ca.clone());
    let (mut b, ib) = Stack::udp_ip_eth(cb.clone());
    let c = UdpConn {
        local_port: 1111,
        remote_port: 2222,
        local_app: 11,
        remote_app: 22,
        checksum,
        ..Default::default()
    };
    let (ea, _) = a.open_udp_to(ia.udp, &cb, c).unwrap();
    b.open_udp_to(ib.udp, &ca, c.reversed()).unwrap();
    a.send(T, ea, payload).unwrap();
    let mut buf = [0u8; 2048];
    let n = a.poll_transmit(T, &mut buf).unwrap();
    (b, buf[..n].to_vec())
}

fn eth_len(arch: Architecture) -> usize {
    if arch == Architecture::Daa {
        24
    } else {
        14
    }
}

/// Feeds `frame` to `b` and returns (layer name, reason) of the single drop it caused.
fn drop_of(b: &mut Stack, frame: &[u8]) -> Option<(&'static str, DropReason)> {
    let before = b.stats();
    b.handle_frame(T, frame);
    let after = b.stats();
    assert!(
        b.poll_deliver().is_none(),
        "a malformed frame was delivered"
    );
    for ((name, x), (_, y)) in after.drops.iter().zip(before.drops.iter()) {
        for r in DropReason::ALL {
            if x[r.index()] != y[r.index()] {
                return Some((name, r));
            }
        }
    }
    None
}

#[test]
fn each_layer_drops_its_malformed_headers() {
    for arch in Architecture::ALL {
        let eth = if arch == Architecture::Daa {
            "ethdaa"
        } else {
            "eth"
        };
        let e = eth_len(arch);
        let (mut b, good) = setup(arch, true, b"some user data");
        let ip = e;
        let udp = e + 20;
        let case = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut x = good.clone();
            f(&mut x);
            x
        };
        // Ethernet: truncated, other destination.
        assert_eq!(
            drop_of(&mut b, &good[..e - 1]),
            Some((eth, DropReason::Truncated))
        );
        assert_eq!(
            drop_of(&mut b, &case(&|x| x[0] ^= 1)),
            Some((eth, DropReason::NotForUs))
        );
        // IPv4: version, checksum, total length beyond the frame, fragment.
        assert_eq!(
            drop_of(&mut b, &case(&|x| x[ip] = 0x65)),
            Some(("ipv4", DropReason::BadHeader))
        );
        assert_eq!(
            drop_of(&mut b, &case(&|x| x[ip + 8] ^= 0x40)),
            Some(("ipv4", DropReason::BadChecksum))
        );
        let long = case(&|x| {
            x[ip + 2..ip + 4].copy_from_slice(&1500u16.to_be_bytes());
            refix_ip(&mut x[ip..ip + 20]);
        });
        assert_eq!(
            drop_of(&mut b, &long),
            Some(("ipv4", DropReason::Truncated))
        );
        let frag = case(&|x| {
            x[ip + 6] = 0x20; // more fragments
            refix_ip(&mut x[ip..ip + 20]);
        });
        assert_eq!(
            drop_of(&mut b, &frag),
            Some(("ipv4", DropReason::Unsupported))
        );
        // UDP: length below the header, bad checksum.
        assert_eq!(
            drop_of(
                &mut b,
                &case(&|x| x[udp + 4..udp + 6].copy_from_slice(&3u16.to_be_bytes()))
            ),
            Some(("udp", DropReason::BadLength))
        );
        assert_eq!(
            drop_of(&mut b, &case(&|x| x[udp + 9] ^= 0xff)),
            Some(("udp", DropReason::BadChecksum))
        );
        // The good frame still goes through afterwards.
        b.handle_frame(T, &good);
        assert_eq!(b.poll_deliver().unwrap().data, b"some user data");
        // Unknown connection: the demultiplexing layer (UDP or, under DAA, Ethernet) refuses it.
        let stray = case(&|x| {
            if arch == Architecture::Daa {
                x[14..18].copy_from_slice(&99u32.to_be_bytes());
            } else {
                x[udp + 2..udp + 4].copy_from_slice(&9u16.to_be_bytes());
                x[udp + 6..udp + 8].copy_from_slice(&[0, 0]);
            }
        });
        let layer = if arch == Architecture::Daa {
            eth
        } else {
            "udp"
        };
        assert_eq!(
            drop_of(&mut b, &stray),
            Some((layer, DropReason::NoSession))
        );
    }
}

fn refix_ip(h: &mut [u8]) {
    h[10..12].copy_from_slice(&[0, 0]);
    let c = mslink_wire::checksum::checksum(h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any corruption of a valid frame: no panic, and the frame is either delivered or counted
    /// as dropped exactly once.
    #[test]
    fn mutated_frames_are_delivered_or_counted(
        arch in 0usize..3,
        checksum in any::<bool>(),
        payload in proptest::collection::vec(any::<u8>(), 0..200),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut in any::<usize>(),
    ) {
        let arch = Architecture::ALL[arch];
        let (mut b, mut f) = setup(arch, checksum, &payload);
        for (pos, v) in flips {
            let n = f.len();
            f[pos % n] ^= v;
        }
        let keep = f.len() - cut % (f.len() / 2);
        f.truncate(keep);
        b.handle_frame(T, &f);
        let s = b.stats();
        prop_assert_eq!(s.rx_frames, 1);
        prop_assert_eq!(s.delivered + s.dropped(), 1);
        if let Some(d) = b.poll_deliver() {
            prop_assert_eq!(d.endpoint, EndpointId(0));
        }
    }

    /// Arbitrary bytes never panic any architecture and are all accounted for.
    #[test]
    fn arbitrary_bytes_never_panic(arch in 0usize..3, frame in proptest::collection::vec(any::<u8>(), 0..300)) {
        let (mut b, _) = setup(Architecture::ALL[arch], true, b"x");
        b.handle_frame(T, &frame);
        let s = b.stats();
        prop_assert_eq!(s.delivered + s.dropped(), 1);
    }
}
