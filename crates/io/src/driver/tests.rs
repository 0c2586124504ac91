//! The back-pressure rule of the driver loop, on devices that really fill up (Unix
//! `SOCK_SEQPACKET` pairs): packets wait for a full device, the oldest beyond the backlog
//! are dropped and counted, and every packet read has exactly one fate.

use std::collections::VecDeque;
use std::io;

use mslink_link::{Duration, Instant};

use super::*;
use crate::device::PacketPipe;

/// Relays device 0 to device 1. The test's ends of the pipes are `src` (what it writes
/// into device 0) and `sink` (what it reads from device 1, only once device 1 has been
/// full for `release_after` turns).
struct Relay<'p> {
    outboxes: [VecDeque<Vec<u8>>; 2],
    src: &'p PacketPipe,
    sink: &'p PacketPipe,
    next: u32,
    n: u32,
    fates: Vec<(u32, Fate)>,
    received: Vec<u32>,
    full_turns: u32,
    release_after: u32,
}

fn seq(p: &[u8]) -> u32 {
    u32::from_be_bytes(p[..4].try_into().unwrap())
}

impl Machine for Relay<'_> {
    fn handle_packet(&mut self, _now: Instant, device: usize, packet: &[u8]) {
        self.outboxes[1 - device].push_back(packet.to_vec());
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn outbox(&mut self, device: usize) -> &mut VecDeque<Vec<u8>> {
        &mut self.outboxes[device]
    }
    fn written(&mut self, _now: Instant, device: usize, packet: &[u8], fate: Fate) {
        assert_eq!(device, 1);
        self.fates.push((seq(packet), fate));
    }
    fn turn(&mut self, _now: Instant, io: IoCounts<'_>) -> Control {
        let mut p = vec![0u8; 1000];
        while self.next < self.n {
            p[..4].copy_from_slice(&self.next.to_be_bytes());
            match self.src.write(&p) {
                Ok(_) => self.next += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        if io.devices[1].would_block > 0 {
            self.full_turns += 1;
        }
        if self.full_turns >= self.release_after {
            let mut buf = vec![0u8; 2000];
            while let Ok(k) = self.sink.read(&mut buf) {
                self.received.push(seq(&buf[..k]));
            }
        }
        let done =
            self.fates.len() == self.n as usize && self.outboxes.iter().all(|q| q.is_empty());
        if done {
            Control::Stop
        } else {
            Control::Continue
        }
    }
}

/// Runs `n` packets through a relay whose output stays full for `release_after` turns.
fn relay(n: u32, backlog: usize, release_after: u32) -> (Relay<'static>, RunEnd) {
    let (dev0, src) = PacketPipe::pair().unwrap();
    let (dev1, sink) = PacketPipe::pair().unwrap();
    let (src, sink) = (Box::leak(Box::new(src)), Box::leak(Box::new(sink)));
    let mut m = Relay {
        outboxes: [VecDeque::new(), VecDeque::new()],
        src,
        sink,
        next: 0,
        n,
        fates: Vec::new(),
        received: Vec::new(),
        full_turns: 0,
        release_after,
    };
    let opts = Options {
        backlog,
        max_sleep: Duration::from_millis(1),
        ..Options::default()
    };
    let end = run(&mut m, &[&dev0, &dev1], None, &Clock::new(), opts).unwrap();
    // What the sink had not read yet when the loop stopped.
    let mut buf = vec![0u8; 2000];
    while let Ok(k) = m.sink.read(&mut buf) {
        m.received.push(seq(&buf[..k]));
    }
    (m, end)
}

/// Every packet has exactly one fate; what was written arrived once, in order.
fn check_accounting(m: &Relay<'_>, end: &RunEnd) {
    let mut seen: Vec<u32> = m.fates.iter().map(|f| f.0).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..m.n).collect::<Vec<_>>(), "each packet once");
    let written: Vec<u32> = m
        .fates
        .iter()
        .filter(|f| f.1 == Fate::Written)
        .map(|f| f.0)
        .collect();
    assert_eq!(m.received, written, "written packets arrive once, in order");
    let c = &end.devices[1];
    assert_eq!(c.packets_written, written.len() as u64);
    assert_eq!(c.dropped_full + c.packets_written, u64::from(m.n));
    assert_eq!(c.write_errors, 0);
    assert_eq!(end.devices[0].packets_read, u64::from(m.n));
}

#[test]
fn a_full_device_is_waited_for_and_nothing_is_lost_within_the_backlog() {
    let (m, end) = relay(2000, 100_000, 20);
    check_accounting(&m, &end);
    let c = &end.devices[1];
    assert!(c.would_block > 0, "the device never filled: {c:?}");
    assert_eq!(c.dropped_full, 0, "{c:?}");
}

#[test]
fn beyond_the_backlog_the_oldest_are_dropped_and_counted() {
    let (m, end) = relay(2000, 16, 20);
    check_accounting(&m, &end);
    let c = &end.devices[1];
    assert!(c.dropped_full > 0, "{c:?}");
    assert!(m.fates.iter().any(|f| f.1 == Fate::DeviceFull));
    // Dropped from the front: what was dropped is older than what followed it.
    let last_dropped = m
        .fates
        .iter()
        .filter(|f| f.1 == Fate::DeviceFull)
        .map(|f| f.0)
        .max();
    assert!(m.received.last() > last_dropped.as_ref());
}
