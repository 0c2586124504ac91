//! The in-memory wire device: two stacks in one process joined by a lossless, zero-delay
//! Ethernet, for measuring protocol processing alone (issue 7, "Devices").
//!
//! Contract: [`Wire::pump`] moves every frame waiting in either stack's transmit queue to the
//! other stack's `handle_frame`, in the order sent, and returns how many it moved. It is a driver
//! of the sans-IO core: it keeps no time of its own (the caller passes `now`) and touches no
//! sockets. Frames are counted; none is lost, reordered or altered.

use mslink_link::Instant;

use crate::graph::Stack;

/// Counters of an in-memory wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wire {
    /// Frames carried from A to B.
    pub a_to_b: u64,
    /// Frames carried from B to A.
    pub b_to_a: u64,
    /// Bytes carried in both directions.
    pub bytes: u64,
}

impl Wire {
    /// A wire with zeroed counters.
    pub fn new() -> Self {
        Self::default()
    }

    /// Carries every waiting frame A→B, then B→A; returns the number carried.
    pub fn pump(&mut self, now: Instant, a: &mut Stack, b: &mut Stack) -> usize {
        let mut n = 0;
        while let Some(m) = a.poll_transmit_msg() {
            self.a_to_b += 1;
            self.bytes += m.len() as u64;
            b.handle_frame(now, m.bytes());
            n += 1;
        }
        while let Some(m) = b.poll_transmit_msg() {
            self.b_to_a += 1;
            self.bytes += m.len() as u64;
            a.handle_frame(now, m.bytes());
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::UdpConn;
    use crate::graph::{Architecture, StackConfig};

    #[test]
    fn ping_pong_in_every_architecture() {
        for arch in Architecture::ALL {
            for ck in [false, true] {
                let (ca, cb) = StackConfig::pair(arch);
                let (mut a, ia) = Stack::udp_ip_eth(ca.clone());
                let (mut b, ib) = Stack::udp_ip_eth(cb.clone());
                let c = UdpConn {
                    local_port: 5000,
                    remote_port: 6000,
                    local_app: 50,
                    remote_app: 60,
                    checksum: ck,
                    ..Default::default()
                };
                let (ea, _) = a.open_udp_to(ia.udp, &cb, c).unwrap();
                let (eb, app_b) = b.open_udp_to(ib.udp, &ca, c.reversed()).unwrap();
                if arch == Architecture::Daa {
                    assert_eq!(app_b, 60);
                }
                let mut w = Wire::new();
                a.send(Instant::ZERO, ea, b"ping").unwrap();
                assert_eq!(w.pump(Instant::ZERO, &mut a, &mut b), 1);
                let d = b.poll_deliver().unwrap();
                assert_eq!((d.endpoint, d.data.as_slice()), (eb, &b"ping"[..]));
                b.send(Instant::ZERO, eb, &[7u8; 1400]).unwrap();
                w.pump(Instant::ZERO, &mut a, &mut b);
                let d = a.poll_deliver().unwrap();
                assert_eq!(d.data, vec![7u8; 1400]);
                assert_eq!(a.stats().dropped(), 0, "{arch:?}");
                assert_eq!(b.stats().dropped(), 0, "{arch:?}");
                assert_eq!(b.path_counters(eb).len(), 3);
            }
        }
    }
}
