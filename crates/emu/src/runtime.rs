//! The real-time event loop: TUN devices and the clock in, the emulated hop in the middle.
//!
//! Contract. [`run`] drives an [`EmulatedHop`] between two [`Tun`] devices (side 0, side 1)
//! until the caller's `tick` says stop, then drains: it stops reading and keeps the hop running
//! until every accepted packet has been delivered or given up and the hop is quiet, or until
//! the drain time is over. Each turn of the loop reads up to [`BATCH`] packets per device (so
//! one busy side cannot starve the other), hands them to the hop with the current monotonic
//! time, runs timers due, writes what came out, and sleeps in `ppoll(2)` until the next hop
//! deadline (nanosecond timeout, 1 ns timer slack) or a device becomes readable. Waits shorter
//! than [`SPIN`] are spun instead of slept, since waking from a sleep costs more than that.
//!
//! Back-pressure: a packet the receiving device cannot take now (`EAGAIN`, `ENOBUFS`) stays at
//! the front of its side's output and the loop waits for the device to become writable;
//! reading continues, so the hop's queue (with its counted drops) absorbs the difference,
//! never the kernel's device queue. `capture` sees every packet read (`inbound == true`) or
//! written on a side, for pcap files.

use std::io;
use std::os::fd::AsRawFd;

use mslink_link::{Duration, Instant};

use crate::clock::{fine_timers, Clock};
use crate::hop::EmulatedHop;
use crate::tun::Tun;

/// Packets read from one device per turn of the loop.
pub const BATCH: usize = 64;

/// Waits shorter than this are spun.
pub const SPIN: Duration = Duration::from_micros(20);

/// Longest sleep, so `tick` runs at least this often.
pub const MAX_SLEEP: Duration = Duration::from_millis(10);

/// What `tick` tells the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Keep going.
    Continue,
    /// Stop reading and drain.
    Stop,
}

/// Receives a copy of each packet: (side, inbound, time, bytes).
pub type Capture<'c> = &'c mut dyn FnMut(usize, bool, Instant, &[u8]);

/// How the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunEnd {
    /// True if the drain ended with the hop quiet (nothing queued, on the air or to send).
    pub drained: bool,
    /// Loop turns.
    pub turns: u64,
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    ) || e.raw_os_error() == Some(libc::ENOBUFS)
}

/// Runs the hop between `tuns` until `tick` returns [`Control::Stop`], then drains for at most
/// `drain`.
pub fn run(
    hop: &mut EmulatedHop,
    tuns: [&Tun; 2],
    clock: &Clock,
    drain: Duration,
    tick: &mut dyn FnMut(Instant, &EmulatedHop) -> Control,
    mut capture: Option<Capture<'_>>,
) -> io::Result<RunEnd> {
    fine_timers();
    let mut buf = vec![0u8; 65536];
    let mut draining_until: Option<Instant> = None;
    let mut turns = 0u64;
    loop {
        turns += 1;
        let now = clock.now();
        if draining_until.is_none() {
            for (side, tun) in tuns.iter().enumerate() {
                for _ in 0..BATCH {
                    match tun.read(&mut buf) {
                        Ok(n) => {
                            let now = clock.now();
                            if let Some(c) = capture.as_mut() {
                                c(side, true, now, &buf[..n]);
                            }
                            hop.handle_packet(now, side, &buf[..n]);
                        }
                        Err(e) if would_block(&e) => break,
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        hop.handle_timeout(clock.now());
        let mut blocked = [false; 2];
        for (side, tun) in tuns.iter().enumerate() {
            while let Some(p) = hop.front_deliver(side) {
                match tun.write(p) {
                    Ok(_) => {
                        if let Some(c) = capture.as_mut() {
                            c(side, false, clock.now(), p);
                        }
                        hop.pop_deliver(side, true);
                    }
                    Err(e) if would_block(&e) => {
                        blocked[side] = true;
                        break;
                    }
                    Err(_) => hop.pop_deliver(side, false),
                }
            }
        }
        match draining_until {
            None => {
                if tick(now, hop) == Control::Stop {
                    draining_until = Some(now + drain);
                }
            }
            Some(end) => {
                // Done when nothing moves any more: every accepted packet delivered, or no
                // timer left that could still recover one.
                let quiet = hop.quiet();
                let settled = quiet && (hop.unresolved() == [0, 0] || !hop.timers_pending());
                if settled || now >= end {
                    return Ok(RunEnd {
                        drained: quiet,
                        turns,
                    });
                }
            }
        }
        // Sleep until the next deadline, a readable device, or a writable one we wait for.
        let now = clock.now();
        let mut wait = MAX_SLEEP;
        if let Some(t) = hop.poll_timeout() {
            wait = wait.min(t.saturating_since(now));
        }
        if let Some(end) = draining_until {
            wait = wait.min(end.saturating_since(now));
        }
        if wait < SPIN {
            if wait > Duration::ZERO {
                std::hint::spin_loop();
            }
            if wait == Duration::ZERO || draining_until.is_some() {
                continue;
            }
        }
        let mut fds = [0, 1].map(|side| libc::pollfd {
            fd: tuns[side].as_raw_fd(),
            events: if draining_until.is_none() {
                libc::POLLIN
            } else {
                0
            } | if blocked[side] { libc::POLLOUT } else { 0 },
            revents: 0,
        });
        let ts = if wait < SPIN {
            libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            }
        } else {
            libc::timespec {
                tv_sec: (wait.as_nanos() / 1_000_000_000) as libc::time_t,
                tv_nsec: (wait.as_nanos() % 1_000_000_000) as libc::c_long,
            }
        };
        // SAFETY: fds is a valid array of two pollfd; ts a valid timespec; no signal mask.
        let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}
