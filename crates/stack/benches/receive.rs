//! Per-packet receive processing cost of each architecture on the in-memory wire (issue 7):
//! `handle_frame` + `poll_deliver` for one UDP/IPv4/Ethernet frame, the receiver holding 1,000
//! open connections; and the integrated-layer-processing gain (copy-and-checksum in one pass vs
//! copy then checksum) at 1,400 bytes, in the UDP path and alone.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mslink_link::Instant;
use mslink_stack::{Architecture, Stack, StackConfig, UdpConn};
use mslink_wire::checksum::{copy_and_sum, copy_then_sum, Sum};

const CONNS: u16 = 1000;

/// Receiver B with `CONNS` UDP endpoints and one frame from A to the middle one.
fn receiver(arch: Architecture, checksum: bool, ilp: bool, len: usize) -> (Stack, Vec<u8>) {
    let ca = StackConfig {
        architecture: arch,
        ..Default::default()
    };
    let cb = StackConfig {
        architecture: arch,
        ilp,
        ..StackConfig::host(2)
    };
    let (mut a, ia) = Stack::udp_ip_eth(ca.clone());
    let (mut b, ib) = Stack::udp_ip_eth(cb.clone());
    let mut ea = None;
    for i in 0..CONNS {
        let c = UdpConn {
            local_port: 10_000 + i,
            remote_port: 20_000 + i,
            local_app: 1_000 + i as u32,
            remote_app: 2_000 + i as u32,
            checksum,
            ..Default::default()
        };
        let e = a.open_udp_to(ia.udp, &cb, c).unwrap().0;
        b.open_udp_to(ib.udp, &ca, c.reversed()).unwrap();
        if i == CONNS / 2 {
            ea = Some(e);
        }
    }
    a.send(Instant::ZERO, ea.unwrap(), &vec![0x5a; len])
        .unwrap();
    let mut buf = vec![0u8; 2048];
    let n = a.poll_transmit(Instant::ZERO, &mut buf).unwrap();
    buf.truncate(n);
    (b, buf)
}

fn bench_receive(c: &mut Criterion) {
    let mut g = c.benchmark_group("receive");
    for len in [1usize, 1400] {
        for arch in Architecture::ALL {
            let (mut b, frame) = receiver(arch, false, false, len);
            g.bench_with_input(BenchmarkId::new(arch.name(), len), &len, |bn, _| {
                bn.iter(|| {
                    b.handle_frame(Instant::ZERO, black_box(&frame));
                    black_box(b.poll_deliver().unwrap());
                })
            });
        }
    }
    g.finish();
}

fn bench_ilp(c: &mut Criterion) {
    let mut g = c.benchmark_group("ilp_udp_1400");
    for arch in Architecture::ALL {
        for ilp in [false, true] {
            let (mut b, frame) = receiver(arch, true, ilp, 1400);
            let name = if ilp { "one_pass" } else { "two_pass" };
            g.bench_function(BenchmarkId::new(arch.name(), name), |bn| {
                bn.iter(|| {
                    b.handle_frame(Instant::ZERO, black_box(&frame));
                    black_box(b.poll_deliver().unwrap());
                })
            });
        }
    }
    g.finish();
    let mut g = c.benchmark_group("copy_checksum_1400");
    let src = vec![0x5au8; 1400];
    let mut dst = vec![0u8; 1400];
    g.throughput(Throughput::Bytes(1400));
    g.bench_function("one_pass", |bn| {
        bn.iter(|| {
            let mut s = Sum::default();
            copy_and_sum(black_box(&src), &mut dst, &mut s);
            black_box(s.checksum())
        })
    });
    g.bench_function("two_pass", |bn| {
        bn.iter(|| {
            let mut s = Sum::default();
            copy_then_sum(black_box(&src), &mut dst, &mut s);
            black_box(s.checksum())
        })
    });
    let big = vec![0x5au8; 1400 + 42];
    let src = &big[42..];
    g.bench_function("one_pass_offset42", |bn| {
        bn.iter(|| {
            let mut s = Sum::default();
            copy_and_sum(black_box(src), &mut dst, &mut s);
            black_box(s.checksum())
        })
    });
    g.bench_function("two_pass_offset42", |bn| {
        bn.iter(|| {
            let mut s = Sum::default();
            copy_then_sum(black_box(src), &mut dst, &mut s);
            black_box(s.checksum())
        })
    });
    g.bench_function("one_pass_fresh_dst", |bn| {
        bn.iter(|| {
            let mut s = Sum::default();
            let mut d = vec![0u8; 1400];
            copy_and_sum(black_box(src), &mut d, &mut s);
            black_box((s.checksum(), d))
        })
    });
    g.bench_function("two_pass_fresh_dst", |bn| {
        bn.iter(|| {
            let mut s = Sum::default();
            let mut d = vec![0u8; 1400];
            copy_then_sum(black_box(src), &mut d, &mut s);
            black_box((s.checksum(), d))
        })
    });
    // As in the receive path: the frame has just been copied in by the device (from_frame),
    // and the payload starts 42 bytes into it.
    let frame = vec![0x5au8; 1400 + 42];
    g.bench_function("one_pass_after_device_copy", |bn| {
        bn.iter(|| {
            let f = black_box(&frame).to_vec();
            let mut s = Sum::default();
            let mut d = vec![0u8; 1400];
            copy_and_sum(&f[42..], &mut d, &mut s);
            black_box((s.checksum(), d))
        })
    });
    g.bench_function("two_pass_after_device_copy", |bn| {
        bn.iter(|| {
            let f = black_box(&frame).to_vec();
            let mut s = Sum::default();
            let mut d = vec![0u8; 1400];
            copy_then_sum(&f[42..], &mut d, &mut s);
            black_box((s.checksum(), d))
        })
    });
    g.finish();
}

criterion_group!(benches, bench_receive, bench_ilp);
criterion_main!(benches);
