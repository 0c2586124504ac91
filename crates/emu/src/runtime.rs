//! The real-time event loop: TUN devices and the clock in, the emulated hop in the middle.
//!
//! Contract. [`run`] drives an [`EmulatedHop`] between two [`Tun`] devices (side 0, side 1)
//! until the caller's `tick` says stop, then drains: it stops reading and keeps the hop running
//! until every accepted packet has been delivered or given up and the hop is quiet, or until
//! the drain time is over. Each turn of the loop reads up to [`BATCH`] packets from each device
//! `ppoll` said was readable (so one busy side cannot starve the other, and an idle device
//! costs no read), hands them to the hop with the current monotonic time, runs timers due,
//! writes what came out, and sleeps in `ppoll(2)` until the next hop deadline (nanosecond
//! timeout, 1 ns timer slack) or a device becomes readable. What a read makes deliverable at
//! once (no delay, no rate limit) is written before the next read, so a packet's latency
//! through the loop is `ppoll`, `read`, the hop, `write`: the read that finds the device empty
//! comes after the write. Waits shorter than [`SPIN`] are spun instead of slept, since waking
//! from a sleep costs more than that; a turn that did not sleep reads both devices.
//!
//! Busy polling (`busy_poll`, off when zero; the link file's default is
//! `config::DEFAULT_BUSY_POLL_US`): for that long after a packet was read or
//! written, the loop does not sleep but polls both devices with a zero timeout, so a packet
//! that arrives meanwhile (a reply, the next packet of a burst) is read without the cost of
//! waking the thread — the bounded polling of Linux's `SO_BUSY_POLL` and of the guest halt
//! polling of KVM's `haltpoll` idle driver, in user space. It costs the CPU it spins: all of
//! one core while packets keep coming closer together than `busy_poll`, about
//! `busy_poll` × packet rate otherwise.
//!
//! Back-pressure: a packet the receiving device cannot take now (`EAGAIN`, `ENOBUFS`) stays at
//! the front of its side's output and the loop waits for the device to become writable;
//! reading continues, so the hop's queue (with its counted drops) absorbs the difference,
//! never the kernel's device queue. `capture` sees every packet read (`inbound == true`) or
//! written on a side, for pcap files; `frames` sees every frame the hop put on the air when
//! its frame tap is on (`--pcap-link`), drained from the hop once per turn.
//!
//! Offloads: on a device with a virtio-net header ([`Tun::has_vnet_hdr`]) each read goes
//! through [`gso::process`], so the hop and `capture` only ever see the MTU-sized packets the
//! link carries (a read that makes no sense is counted and passed on whole); each write is
//! planned by [`coalesce::plan`] when `coalesce` is on (one super-packet for a run of one TCP
//! flow, else one packet behind a zero header), and `capture` still sees each packet. A
//! super-packet the device refuses (any error but `EAGAIN`) turns coalescing off for that side
//! and its packets are written singly. [`RunEnd::offload`] counts all of it.

use std::io;
use std::os::fd::AsRawFd;

use mslink_link::{Duration, Instant};

use crate::clock::{fine_timers, Clock};
use crate::coalesce::{self, Plan};
use crate::gso::{self, Processed, VNET_HDR_LEN};
use crate::hop::{EmulatedHop, TappedFrame};
use crate::tun::Tun;

/// Packets read from one device per turn of the loop (a super-packet read is counted by the
/// packets it gives, and the last read may overshoot by one super-packet).
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
    /// Stop reading and drain for at most [`INTERRUPT_DRAIN`] (a signal: the user is waiting).
    /// Also heard while draining, so no drain outlasts it.
    Interrupt,
}

/// The longest drain after [`Control::Interrupt`].
pub const INTERRUPT_DRAIN: Duration = Duration::from_millis(500);

/// Receives a copy of each packet: (side, inbound, time, bytes).
pub type Capture<'c> = &'c mut dyn FnMut(usize, bool, Instant, &[u8]);

/// Receives each frame the hop put on the air, when its frame tap is on
/// ([`EmulatedHop::set_frame_tap`]); drained once per turn of the loop and at its end.
pub type FrameTap<'t> = &'t mut dyn FnMut(&TappedFrame);

/// How the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunEnd {
    /// True if the drain ended with the hop quiet (nothing queued, on the air or to send).
    pub drained: bool,
    /// Loop turns.
    pub turns: u64,
    /// What the offloads did, per side.
    pub offload: [OffloadCounts; 2],
}

/// What the TUN offloads did on one side, and how the loop read and wrote it (reads, writes,
/// empty reads and busy-polled reads are counted without offloads too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OffloadCounts {
    /// Reads from the side's device that returned a packet.
    pub reads: u64,
    /// Reads that found the device empty (each turn's last read of a device `ppoll` said
    /// was readable; a turn that did not sleep reads both devices).
    #[serde(default)]
    pub empty_reads: u64,
    /// Reads made while busy polling (`busy_poll`): packets the loop found without sleeping.
    #[serde(default)]
    pub busy_polled: u64,
    /// Of those, GSO super-packets.
    pub gso_reads: u64,
    /// Packets the super-packets were cut into.
    pub gso_segments: u64,
    /// Single packets whose partial checksum was completed.
    pub checksums_completed: u64,
    /// Reads whose virtio header or packet made no sense (passed on whole, counted by the hop).
    pub offload_errors: u64,
    /// Writes to the side's device.
    pub writes: u64,
    /// Of those, GSO writes carrying several packets.
    pub coalesced_writes: u64,
    /// Packets the coalesced writes carried.
    pub coalesced_packets: u64,
    /// Coalesced writes the device refused (the side then writes singly).
    pub coalesce_errors: u64,
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    ) || e.raw_os_error() == Some(libc::ENOBUFS)
}

/// Runs the hop between `tuns` until `tick` returns [`Control::Stop`], then drains for at most
/// `drain` ([`INTERRUPT_DRAIN`] after [`Control::Interrupt`], which `tick` may also return while
/// draining). `coalesce`: on devices with a virtio-net header, write runs of one TCP flow as one
/// super-packet. `busy_poll`: for this long after a packet was read or written, poll the
/// devices without sleeping (zero: always sleep; see the module contract).
// Nine: the two observers (`capture`, `frames`) are separate so each costs nothing when off.
#[allow(clippy::too_many_arguments)]
pub fn run(
    hop: &mut EmulatedHop,
    tuns: [&Tun; 2],
    clock: &Clock,
    coalesce: bool,
    busy_poll: Duration,
    drain: Duration,
    tick: &mut dyn FnMut(Instant, &EmulatedHop) -> Control,
    mut capture: Option<Capture<'_>>,
    mut frames: Option<FrameTap<'_>>,
) -> io::Result<RunEnd> {
    fine_timers();
    // A virtio-net header and a super-packet of up to 64 KB, with room to spare.
    let mut buf = vec![0u8; 1 << 17];
    let mut scratch = Vec::with_capacity(65536);
    let mut head = Vec::with_capacity(VNET_HDR_LEN + 120);
    let mut offload = [OffloadCounts::default(); 2];
    let mut coalesce_off = [false; 2];
    let mut draining_until: Option<Instant> = None;
    let mut turns = 0u64;
    // Which devices to read this turn: those `ppoll` said readable, or both when the loop did
    // not sleep (a spun wait, an interrupted or first turn).
    let mut readable = [true; 2];
    // The last time a packet was read or written (for `busy_poll`).
    let mut last_moved = Instant::ZERO;
    // True if this turn follows a poll that busy polling made instead of a sleep.
    let mut polled = false;
    loop {
        turns += 1;
        let now = clock.now();
        let moved_before = offload.iter().map(|o| o.reads + o.writes).sum::<u64>();
        let mut blocked = [false; 2];
        let mut out = Out {
            tuns,
            clock,
            coalesce,
            coalesce_off: &mut coalesce_off,
            head: &mut head,
            blocked: &mut blocked,
        };
        if draining_until.is_none() {
            for (side, tun) in tuns.iter().enumerate() {
                if !readable[side] {
                    continue;
                }
                let mut produced = 0;
                while produced < BATCH {
                    let n = match tun.read(&mut buf) {
                        Ok(n) => n,
                        Err(e) if would_block(&e) => {
                            offload[side].empty_reads += 1;
                            break;
                        }
                        Err(e) => return Err(e),
                    };
                    let now = clock.now();
                    let mut feed = |p: &[u8]| {
                        if let Some(c) = capture.as_mut() {
                            c(side, true, now, p);
                        }
                        hop.handle_packet(now, side, p);
                        produced += 1;
                    };
                    let o = &mut offload[side];
                    o.reads += 1;
                    o.busy_polled += u64::from(polled);
                    if !tun.has_vnet_hdr() {
                        feed(&buf[..n]);
                    } else {
                        match gso::process(&mut buf[..n], &mut scratch, &mut feed) {
                            Ok(Processed::Plain) => {}
                            Ok(Processed::Checksummed) => o.checksums_completed += 1,
                            Ok(Processed::Segmented(k)) => {
                                o.gso_reads += 1;
                                o.gso_segments += k as u64;
                            }
                            Err(_) => {
                                // Passed on whole: the hop refuses it (malformed, too large)
                                // or carries it, and counts it either way.
                                o.offload_errors += 1;
                                feed(&buf[n.min(VNET_HDR_LEN)..n]);
                            }
                        }
                    }
                    // What this read made deliverable (no delay, no rate: at once) is written
                    // before the next read, which usually finds nothing: the write is the
                    // packet's latency, the empty read is not.
                    out.flush(hop, &mut offload, &mut capture);
                }
            }
        }
        hop.handle_timeout(clock.now());
        out.flush(hop, &mut offload, &mut capture);
        if let Some(f) = frames.as_mut() {
            hop.drain_tapped(*f);
        }
        match (draining_until, tick(now, hop)) {
            (None, Control::Continue) => {}
            (None, Control::Stop) => draining_until = Some(now.saturating_add(drain)),
            (d, Control::Interrupt) => {
                let cap = now + INTERRUPT_DRAIN;
                draining_until = Some(
                    d.map_or(cap, |end| end.min(cap))
                        .min(now.saturating_add(drain)),
                );
            }
            (Some(_), _) => {}
        }
        match draining_until {
            None => {}
            Some(end) => {
                // Done when nothing moves any more: every accepted packet delivered, or no
                // timer left that could still recover one.
                let quiet = hop.quiet();
                let settled = quiet && (hop.unresolved() == [0, 0] || !hop.timers_pending());
                if settled || now >= end {
                    return Ok(RunEnd {
                        drained: quiet,
                        turns,
                        offload,
                    });
                }
            }
        }
        // Sleep until the next deadline, a readable device, or a writable one we wait for.
        let now = clock.now();
        let moved = offload.iter().map(|o| o.reads + o.writes).sum::<u64>();
        if moved != moved_before {
            last_moved = now;
        }
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
                readable = [true; 2];
                polled = false;
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
        // Busy polling (opt-in): shortly after traffic, look again at once instead of sleeping.
        let busy = busy_poll > Duration::ZERO && now < last_moved.saturating_add(busy_poll);
        polled = busy;
        let ts = if wait < SPIN || busy {
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
            readable = [true; 2];
        } else {
            // An error or hang-up condition is read too, so the read reports it.
            let ready = libc::POLLIN | libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;
            readable = fds.map(|f| f.revents & ready != 0);
        }
    }
}

/// The write side of the loop: what it needs to write a side's deliverable packets.
struct Out<'a, 't> {
    tuns: [&'t Tun; 2],
    clock: &'a Clock,
    coalesce: bool,
    coalesce_off: &'a mut [bool; 2],
    head: &'a mut Vec<u8>,
    /// Sides whose device refused a write this turn (not tried again until it is writable).
    blocked: &'a mut [bool; 2],
}

impl Out<'_, '_> {
    /// Writes every packet the hop has ready for each side, until a device would block.
    fn flush(
        &mut self,
        hop: &mut EmulatedHop,
        offload: &mut [OffloadCounts; 2],
        capture: &mut Option<Capture<'_>>,
    ) {
        for (side, tun) in self.tuns.iter().enumerate() {
            if self.blocked[side] {
                continue;
            }
            while hop.front_deliver(side).is_some() {
                let o = &mut offload[side];
                let (count, res) = if tun.has_vnet_hdr() {
                    let plan = if self.coalesce && !self.coalesce_off[side] {
                        coalesce::plan(hop.pending(side), self.head)
                    } else {
                        self.head.clear();
                        self.head.extend_from_slice(&[0u8; VNET_HDR_LEN]);
                        Plan {
                            count: 1,
                            header_len: 0,
                        }
                    };
                    let written = tun.write_planned(self.head, plan, hop.pending(side));
                    (plan.count, written.map(|(n, _)| n))
                } else {
                    (1, tun.write(hop.front_deliver(side).expect("checked")))
                };
                match res {
                    Ok(_) => {
                        o.writes += 1;
                        if count > 1 {
                            o.coalesced_writes += 1;
                            o.coalesced_packets += count as u64;
                        }
                        if let Some(c) = capture.as_mut() {
                            let t = self.clock.now();
                            for p in hop.pending(side).take(count) {
                                c(side, false, t, p);
                            }
                        }
                        for _ in 0..count {
                            hop.pop_deliver(side, true);
                        }
                    }
                    Err(e) if would_block(&e) => {
                        self.blocked[side] = true;
                        break;
                    }
                    Err(_) if count > 1 => {
                        // The device refused the super-packet: write singly from now on.
                        o.coalesce_errors += 1;
                        self.coalesce_off[side] = true;
                    }
                    Err(_) => hop.pop_deliver(side, false),
                }
            }
        }
    }
}
