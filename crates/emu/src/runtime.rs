//! The emulator's real-time loop: the emulated hop between two TUN devices, run by the one
//! driver loop of `mslink_io::driver`.
//!
//! Contract. [`run`] drives an [`EmulatedHop`] between two packet devices (side 0, side 1; TUN
//! devices in a session, `mslink_io::tun::Tun`)
//! until the caller's `tick` says stop, then drains: it stops reading and keeps the hop running
//! until every accepted packet has been delivered or given up and the hop is quiet, or until
//! the drain time is over. The loop itself (readiness, reads of up to
//! [`mslink_io::driver::BATCH`] packets per device per turn, writes right after each read,
//! nanosecond sleeps, spinning, busy polling, GSO reads and coalesced writes, and the one
//! back-pressure rule for a device that cannot take a write) is `mslink_io::driver`'s, shared
//! with the tunnel; this module is the hop's side of it.
//!
//! Busy polling (`busy_poll`, off when zero; the link file's default is
//! `config::DEFAULT_BUSY_POLL_US`): for that long after a packet was read or written, the loop
//! does not sleep but polls both devices with a zero timeout, so a packet that arrives
//! meanwhile is read without the cost of waking the thread. It costs the CPU it spins.
//!
//! Back-pressure: a packet the receiving device cannot take now stays at the front of its
//! side's queue and the loop waits for the device to become writable; reading continues, so
//! the hop's queue (with its counted drops) absorbs the difference, never the kernel's device
//! queue. Packets beyond the driver's backlog waiting for a device that stays full are
//! dropped and counted (the hop's `write_failed`, the side's
//! [`DeviceCounts::dropped_full`]). `capture` sees every packet read ([`Passage::Read`]) or
//! written on a side, for pcap files; `frames` sees every frame the hop put on the air when
//! its frame tap is on (`--pcap-link`), drained from the hop once per turn.

use std::collections::VecDeque;
use std::io;

use mslink_io::clock::Clock;
use mslink_io::device::Device;
use mslink_io::driver::{self, Fate, IoCounts, Machine};
use mslink_link::{Duration, Instant, Side};

pub use mslink_io::driver::{Control, DeviceCounts, Options, BATCH, INTERRUPT_DRAIN, SPIN};

use crate::config::EmuConfig;
use crate::hop::{EmulatedHop, TappedFrame};

/// Longest sleep, so `tick` runs at least this often.
pub const MAX_SLEEP: Duration = Duration::from_millis(10);

/// Receives a copy of each packet: its side, whether it was read from the side's device or
/// written to it, when, and its bytes.
pub type Capture<'c> = &'c mut dyn FnMut(Side, Passage, Instant, &[u8]);

/// Which way a captured packet crossed its side's device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passage {
    /// Read from the device: it enters the hop on the side's sending direction.
    Read,
    /// Written to the device: it left the hop from the side's receiving direction.
    Written,
}

/// Receives each frame the hop put on the air, when its frame tap is on
/// ([`EmulatedHop::set_frame_tap`]); drained once per turn of the loop and at its end.
pub type FrameTap<'t> = &'t mut dyn FnMut(&TappedFrame);

/// The loop settings of a link configuration: coalescing (`tun_coalesce`), busy polling
/// (`busy_poll_us`), the longest drain (the link's delay plus `drain_ms`), and [`MAX_SLEEP`].
pub fn loop_options(cfg: &EmuConfig) -> Options {
    Options {
        coalesce: cfg.tun_coalesce,
        busy_poll: Duration::from_secs_f64(cfg.busy_poll_us.max(0.0) / 1e6),
        drain: cfg.delay().max(Duration::ZERO) + Duration::from_secs_f64(cfg.drain_ms / 1e3),
        max_sleep: MAX_SLEEP,
        ..Options::default()
    }
}

/// How the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunEnd {
    /// True if the drain ended with the hop quiet (nothing queued, on the air or to send).
    pub drained: bool,
    /// Loop turns.
    pub turns: u64,
    /// What the loop read from and wrote to each side's device, offloads included.
    pub offload: [DeviceCounts; 2],
}

/// The hop as the driver loop's machine: device `i` is side `i` (left, right).
struct HopMachine<'h, 't, 'c, 'f> {
    hop: &'h mut EmulatedHop,
    tick: &'t mut dyn FnMut(Instant, &EmulatedHop) -> Control,
    capture: Option<Capture<'c>>,
    frames: Option<FrameTap<'f>>,
}

impl Machine for HopMachine<'_, '_, '_, '_> {
    fn handle_packet(&mut self, now: Instant, device: usize, packet: &[u8]) {
        let side = Side::BOTH[device];
        if let Some(c) = self.capture.as_mut() {
            c(side, Passage::Read, now, packet);
        }
        self.hop.handle_packet(now, side, packet);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.hop.handle_timeout(now);
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.hop.poll_timeout()
    }
    fn outbox(&mut self, device: usize) -> &mut VecDeque<Vec<u8>> {
        self.hop.deliver_queue(Side::BOTH[device])
    }
    fn written(&mut self, now: Instant, device: usize, packet: &[u8], fate: Fate) {
        let side = Side::BOTH[device];
        if fate == Fate::Written {
            if let Some(c) = self.capture.as_mut() {
                c(side, Passage::Written, now, packet);
            }
            self.hop.count_delivered(side, packet.len());
        } else {
            self.hop.count_write_failed(side);
        }
    }
    fn turn(&mut self, now: Instant, _io: IoCounts<'_>) -> Control {
        if let Some(f) = self.frames.as_mut() {
            self.hop.drain_tapped(*f);
        }
        (self.tick)(now, self.hop)
    }
    fn quiet(&self) -> bool {
        self.hop.quiet()
    }
    fn settled(&self) -> bool {
        // Done when nothing moves any more: every accepted packet delivered, or no timer left
        // that could still recover one.
        self.hop.quiet() && (self.hop.unresolved() == [0, 0] || !self.hop.timers_pending())
    }
}

/// Runs the hop between `tuns` until `tick` returns [`Control::Stop`], then drains for at most
/// `opts.drain` ([`INTERRUPT_DRAIN`] after [`Control::Interrupt`], which `tick` may also return
/// while draining). `opts.coalesce`: on devices with a virtio-net header, write runs of one TCP
/// flow as one super-packet; `opts.busy_poll`: for this long after a packet was read or
/// written, poll the devices without sleeping (zero: always sleep; see the module contract);
/// [`loop_options`] gives the emulator's other settings.
pub fn run<D: Device>(
    hop: &mut EmulatedHop,
    tuns: [&D; 2],
    clock: &Clock,
    opts: Options,
    tick: &mut dyn FnMut(Instant, &EmulatedHop) -> Control,
    capture: Option<Capture<'_>>,
    frames: Option<FrameTap<'_>>,
) -> io::Result<RunEnd> {
    let mut m = HopMachine {
        hop,
        tick,
        capture,
        frames,
    };
    let end = driver::run(&mut m, &tuns, None, clock, opts)?;
    Ok(RunEnd {
        drained: end.drained,
        turns: end.turns,
        offload: [end.devices[0], end.devices[1]],
    })
}

#[cfg(test)]
mod tests {
    use std::io;

    use mslink_io::device::PacketPipe;
    use mslink_link::Direction;

    use super::*;
    use crate::hop::tests::{hop, udp};

    fn seq(p: &[u8]) -> u32 {
        u32::from_be_bytes(p[28..32].try_into().unwrap())
    }

    /// The receiving namespace's device stays full (nobody reads it) while the sender keeps
    /// sending: the loop waits for it, drops what exceeds the backlog with a count, and the
    /// hop's accounting balances, with the drops as `write_failed`.
    #[test]
    fn a_full_device_is_waited_for_and_what_it_cannot_take_is_counted() {
        const N: u32 = 8_000;
        let mut h = hop("delay_ms = 0");
        let (dev0, src) = PacketPipe::pair().unwrap();
        let (dev1, sink) = PacketPipe::pair().unwrap();
        let (mut next, mut full_turns, mut received) = (0u32, 0u32, Vec::new());
        let mut buf = vec![0u8; 2048];
        let mut tick = |_now: Instant, hop: &EmulatedHop| {
            while next < N {
                match src.write(&udp(1000, next)) {
                    Ok(_) => next += 1,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
            let c = hop.live_summary().directions[Direction::LeftToRight].packets;
            let fated = c.delivered + c.write_failed;
            // Once everything was sent and the device has been full a while, read it.
            if next == N {
                full_turns += 1;
            }
            if full_turns > 50 {
                while let Ok(k) = sink.read(&mut buf) {
                    received.push(seq(&buf[..k]));
                }
            }
            if fated == u64::from(N) {
                Control::Stop
            } else {
                Control::Continue
            }
        };
        let end = run(
            &mut h,
            [&dev0, &dev1],
            &Clock::new(),
            Options {
                drain: Duration::from_millis(100),
                max_sleep: MAX_SLEEP,
                ..Options::default()
            },
            &mut tick,
            None,
            None,
        )
        .unwrap();
        while let Ok(k) = sink.read(&mut buf) {
            received.push(seq(&buf[..k]));
        }
        let s = h.summary();
        let c = s.directions[Direction::LeftToRight].packets;
        let d = &end.offload[1];
        assert!(s.directions.iter().all(|d| d.balanced), "{s:?}");
        assert!(d.would_block > 0, "the device never filled: {d:?}");
        assert!(d.dropped_full > 0, "the backlog never overflowed: {d:?}");
        assert_eq!(c.write_failed, d.dropped_full);
        assert_eq!(c.delivered, d.packets_written);
        assert_eq!(received.len() as u64, c.delivered);
        assert!(received.windows(2).all(|w| w[0] < w[1]), "once, in order");
        assert_eq!(c.delivered + c.write_failed, u64::from(N));
    }
}
