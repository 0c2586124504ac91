//! The real-time driver loop of the emulator and the tunnel: readiness, timers,
//! back-pressure, written once.
//!
//! Contract. [`run`] drives a sans-IO [`Machine`] between packet [`Device`]s (TUN devices;
//! the emulator has two, a tunnel end one) and, optionally, a [`UdpPort`] (the tunnel's
//! socket), with the time of a [`Clock`], until the machine's [`Machine::turn`] says stop;
//! then it drains: it stops reading and keeps running the machine until it is settled
//! ([`Machine::settled`]) or the drain time is over. Each turn of the loop:
//!
//! 1. reads up to [`BATCH`] packets from each device `ppoll` said was readable (so one busy
//!    device cannot starve another, and an idle one costs no read), cutting super-packets
//!    into the MTU-sized packets the link carries on devices with a virtio-net header
//!    ([`crate::gso::process`]; a read that makes no sense is counted and passed on whole),
//!    and after each read writes what became deliverable, so a packet's latency through the
//!    loop is `ppoll`, `read`, the machine, `write`: the read that finds the device empty
//!    comes after the write; then one batch of datagrams from the socket;
//! 2. runs the machine's timers ([`Machine::handle_timeout`]), writes what its devices'
//!    outboxes hold and sends what it has for the socket;
//! 3. calls [`Machine::turn`] (events, logs, counters; continue, stop or interrupt);
//! 4. sleeps in `ppoll(2)` until the machine's next deadline (nanosecond timeout, 1 ns timer
//!    slack), at most `max_sleep`, or a descriptor becomes ready. Waits shorter than [`SPIN`]
//!    are spun, since waking from a sleep costs more than that; a turn that did not sleep
//!    reads every descriptor. With `busy_poll`, for that long after a packet moved, the loop
//!    polls with a zero timeout instead of sleeping (the bounded polling of Linux's
//!    `SO_BUSY_POLL`, in user space; it costs the CPU it spins).
//!
//! Back-pressure, one rule for every device: a write the device cannot take now
//! (`EAGAIN`, `ENOBUFS`) leaves the packet at the front of the device's outbox, and the loop
//! waits for the device to become writable (`POLLOUT`) while it goes on reading, so the
//! machine's own queues (with their counted drops) absorb the difference. Packets beyond
//! `backlog` waiting for a device that stays full are dropped from the front of its outbox,
//! counted ([`DeviceCounts::dropped_full`]) and handed to the machine with
//! [`Fate::DeviceFull`]. A super-packet the device refuses for good (any other error) turns
//! coalescing off for that device and its packets are written singly; a single packet it
//! refuses is dropped and counted ([`Fate::Refused`]). A full socket send buffer stalls the
//! datagrams in the port ([`UdpPort::stalled`]); while it is full the loop reads no device,
//! since reading would only make more datagrams, but goes on reading the socket, so the
//! peer's datagrams do not overflow the kernel's receive buffer. Nothing is lost without a
//! count.

mod wait;
mod write;

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;

use mslink_link::{Duration, Instant};

use crate::clock::{fine_timers, Clock};
use crate::device::Device;
use crate::gso::{self, Processed, VNET_HDR_LEN};
use crate::udp::{SocketCounts, SocketNote, UdpPort};

/// Packets read from one device per turn of the loop (a super-packet read is counted by the
/// packets it gives, and the last read may overshoot by one super-packet).
pub const BATCH: usize = 64;

/// Waits shorter than this are spun.
pub const SPIN: Duration = Duration::from_micros(20);

/// The longest drain after [`Control::Interrupt`].
pub const INTERRUPT_DRAIN: Duration = Duration::from_millis(500);

/// Packets that may wait for a full device before the oldest are dropped.
pub const BACKLOG: usize = 4096;

/// What [`Machine::turn`] tells the loop.
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

/// What became of a packet that left a device's outbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The device took it.
    Written,
    /// The device refused it for good.
    Refused,
    /// The device stayed full and the packet was dropped (the outbox was over `backlog`).
    DeviceFull,
}

/// Something the loop met that the machine may want to log.
#[derive(Debug)]
pub enum Note<'a> {
    /// Device `device` refused a coalesced write: its packets go singly from now on.
    CoalescingOff {
        /// The device.
        device: usize,
        /// Why.
        error: &'a io::Error,
    },
    /// Device `device` refused a packet for good (or took part of it).
    WriteFailed {
        /// The device.
        device: usize,
        /// Why.
        error: &'a io::Error,
    },
    /// The socket met something (a refused datagram, a failed receive).
    Socket(SocketNote<'a>),
}

/// The sans-IO state machine a driver loop runs: the emulated hop, a tunnel end.
pub trait Machine {
    /// A packet read from device `device` at `now`.
    fn handle_packet(&mut self, now: Instant, device: usize, packet: &[u8]);
    /// A datagram the socket received at `now` from `from`.
    fn handle_datagram(&mut self, _now: Instant, _from: SocketAddr, _datagram: &mut [u8]) {}
    /// True for a datagram to be handled before the others of its batch (one `recvmmsg` of
    /// up to [`crate::udp::BURST`]): the tunnel's handshake messages, so that a batch of data
    /// does not hold up the answer a handshake waits for.
    fn handled_first(_datagram: &[u8]) -> bool
    where
        Self: Sized,
    {
        false
    }
    /// Runs what is due at `now` (called every turn; nothing due does nothing).
    fn handle_timeout(&mut self, now: Instant);
    /// The next deadline, if any.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The next datagram for the socket, written into `buf`, and where it goes.
    fn poll_transmit(&mut self, _now: Instant, _buf: &mut Vec<u8>) -> Option<SocketAddr> {
        None
    }
    /// The packets waiting for device `device`, oldest first; the loop writes from the front.
    fn outbox(&mut self, device: usize) -> &mut VecDeque<Vec<u8>>;
    /// The front packet of `device`'s outbox left it at `now` with this fate.
    fn written(&mut self, now: Instant, device: usize, packet: &[u8], fate: Fate);
    /// Once a turn, after the I/O: the machine's own work (events, logs, counters) and
    /// whether to go on. `io` is what the loop has done so far.
    fn turn(&mut self, now: Instant, io: IoCounts<'_>) -> Control;
    /// Something the loop met (the default ignores it).
    fn note(&mut self, _note: Note<'_>) {}
    /// Nothing queued, on the air or to send (reported in [`RunEnd::drained`]).
    fn quiet(&self) -> bool {
        true
    }
    /// While draining: true once nothing more can move, which ends the drain early.
    fn settled(&self) -> bool {
        true
    }
}

/// What the loop has done so far, for [`Machine::turn`].
#[derive(Clone, Copy, Debug)]
pub struct IoCounts<'a> {
    /// Per device.
    pub devices: &'a [DeviceCounts],
    /// The socket's (zero without one).
    pub socket: &'a SocketCounts,
}

/// How to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// On devices with a virtio-net header, write runs of one TCP flow as one super-packet.
    pub coalesce: bool,
    /// For this long after a packet was read or written, poll without sleeping (zero: off).
    pub busy_poll: Duration,
    /// Longest drain after [`Control::Stop`].
    pub drain: Duration,
    /// Longest sleep, so [`Machine::turn`] runs at least this often.
    pub max_sleep: Duration,
    /// Packets that may wait for a full device (see the module contract).
    pub backlog: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            coalesce: true,
            busy_poll: Duration::ZERO,
            drain: Duration::ZERO,
            max_sleep: Duration::from_millis(10),
            backlog: BACKLOG,
        }
    }
}

/// How the loop ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunEnd {
    /// True if the drain ended with the machine quiet.
    pub drained: bool,
    /// Loop turns.
    pub turns: u64,
    /// What each device did.
    pub devices: Vec<DeviceCounts>,
    /// What the socket did.
    pub socket: SocketCounts,
}

/// What the loop read from and wrote to one device, offloads included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceCounts {
    /// Reads from the device that returned a packet.
    pub reads: u64,
    /// Reads that found the device empty (each turn's last read of a device `ppoll` said
    /// was readable; a turn that did not sleep reads every device).
    #[serde(default)]
    pub empty_reads: u64,
    /// Reads made while busy polling: packets the loop found without sleeping.
    #[serde(default)]
    pub busy_polled: u64,
    /// Packets the reads gave the machine (after cutting super-packets).
    #[serde(default)]
    pub packets_read: u64,
    /// Of the reads, GSO super-packets.
    pub gso_reads: u64,
    /// Packets the super-packets were cut into.
    pub gso_segments: u64,
    /// Single packets whose partial checksum was completed.
    pub checksums_completed: u64,
    /// Reads whose virtio header or packet made no sense (passed on whole).
    pub offload_errors: u64,
    /// Writes to the device.
    pub writes: u64,
    /// Packets the writes carried.
    #[serde(default)]
    pub packets_written: u64,
    /// Of the writes, GSO writes carrying several packets.
    pub coalesced_writes: u64,
    /// Packets the coalesced writes carried.
    pub coalesced_packets: u64,
    /// Coalesced writes the device refused (the device then takes packets singly).
    pub coalesce_errors: u64,
    /// Writes the device could not take now (the loop waited for it).
    #[serde(default)]
    pub would_block: u64,
    /// Packets dropped because the device stayed full ([`Fate::DeviceFull`]).
    #[serde(default)]
    pub dropped_full: u64,
    /// Packets the device refused for good ([`Fate::Refused`]).
    #[serde(default)]
    pub write_errors: u64,
}

/// `EAGAIN`, `EINTR`, `ENOBUFS`: the device cannot take or give anything now.
pub(crate) fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    ) || e.raw_os_error() == Some(libc::ENOBUFS)
}

/// The loop's state between turns.
struct Loop<'a, D: Device> {
    devices: &'a [&'a D],
    socket: Option<&'a mut UdpPort>,
    clock: &'a Clock,
    opts: Options,
    counts: Vec<DeviceCounts>,
    /// Devices whose coalesced writes were refused.
    coalesce_off: Vec<bool>,
    /// Devices that could not take a write this turn (not tried again until writable).
    blocked: Vec<bool>,
    /// Descriptors to read this turn: devices, then the socket.
    readable: Vec<bool>,
    /// True if this turn follows a poll that busy polling made instead of a sleep.
    polled: bool,
    /// The last time a packet moved (for `busy_poll`).
    last_moved: Instant,
    draining_until: Option<Instant>,
    /// `ppoll`'s descriptors, kept between turns.
    fds: Vec<libc::pollfd>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    head: Vec<u8>,
}

/// Runs `machine` between `devices` and `socket` until [`Machine::turn`] says stop, then
/// drains (see the module contract).
pub fn run<M: Machine, D: Device>(
    machine: &mut M,
    devices: &[&D],
    socket: Option<&mut UdpPort>,
    clock: &Clock,
    opts: Options,
) -> io::Result<RunEnd> {
    fine_timers();
    let n = devices.len();
    let mut l = Loop {
        devices,
        socket,
        clock,
        opts,
        counts: vec![DeviceCounts::default(); n],
        coalesce_off: vec![false; n],
        blocked: vec![false; n],
        readable: vec![true; n + 1],
        polled: false,
        last_moved: Instant::ZERO,
        draining_until: None,
        fds: Vec::with_capacity(n + 1),
        // A virtio-net header and a super-packet of up to 64 KB, with room to spare.
        buf: vec![0u8; 1 << 17],
        scratch: Vec::with_capacity(65536),
        head: Vec::with_capacity(VNET_HDR_LEN + 120),
    };
    let mut turns = 0u64;
    loop {
        turns += 1;
        let now = clock.now();
        let moved_before = l.moved();
        l.blocked.iter_mut().for_each(|b| *b = false);
        if l.draining_until.is_none() {
            // While datagrams wait for the socket, the devices are not read (reading them
            // would only make more); the socket is, so what the peer sends is not left to
            // overflow the kernel's receive buffer.
            if !l.stalled() {
                for d in 0..n {
                    if l.readable[d] {
                        l.read_device(machine, d)?;
                    }
                }
            }
            if l.readable[n] {
                l.read_socket(machine);
            }
        }
        machine.handle_timeout(clock.now());
        l.flush_devices(machine);
        l.transmit(machine);
        let socket_counts = l.socket.as_ref().map(|s| s.counts).unwrap_or_default();
        let io = IoCounts {
            devices: &l.counts,
            socket: &socket_counts,
        };
        let control = machine.turn(now, io);
        l.control(now, control);
        if let Some(end) = l.draining_until {
            if machine.settled() || now >= end {
                return Ok(RunEnd {
                    drained: machine.quiet(),
                    turns,
                    devices: l.counts,
                    socket: socket_counts,
                });
            }
        }
        if l.moved() != moved_before {
            l.last_moved = clock.now();
        }
        l.wait(machine)?;
    }
}

impl<D: Device> Loop<'_, D> {
    /// Packets read and written so far, on every descriptor.
    fn moved(&self) -> u64 {
        let s = self
            .socket
            .as_ref()
            .map_or(0, |s| s.counts.datagrams_received + s.counts.datagrams_sent);
        s + self.counts.iter().map(|c| c.reads + c.writes).sum::<u64>()
    }

    /// True while datagrams wait for room in the socket's send buffer.
    fn stalled(&self) -> bool {
        self.socket.as_ref().is_some_and(|s| s.stalled())
    }

    /// Applies what [`Machine::turn`] said.
    fn control(&mut self, now: Instant, control: Control) {
        match (self.draining_until, control) {
            (None, Control::Continue) => {}
            (None, Control::Stop) => {
                self.draining_until = Some(now.saturating_add(self.opts.drain))
            }
            (d, Control::Interrupt) => {
                let cap = now + INTERRUPT_DRAIN;
                self.draining_until = Some(
                    d.map_or(cap, |end| end.min(cap))
                        .min(now.saturating_add(self.opts.drain)),
                );
            }
            (Some(_), _) => {}
        }
    }

    /// Reads up to [`BATCH`] packets from device `d`, writing what each makes deliverable.
    fn read_device<M: Machine>(&mut self, machine: &mut M, d: usize) -> io::Result<()> {
        let dev = self.devices[d];
        let mut produced = 0usize;
        while produced < BATCH {
            let before = produced;
            let n = match dev.read(&mut self.buf) {
                Ok(n) => n,
                Err(e) if would_block(&e) => {
                    self.counts[d].empty_reads += 1;
                    break;
                }
                Err(e) => return Err(e),
            };
            let now = self.clock.now();
            let mut feed = |p: &[u8]| {
                machine.handle_packet(now, d, p);
                produced += 1;
            };
            let c = &mut self.counts[d];
            c.reads += 1;
            c.busy_polled += u64::from(self.polled);
            if !dev.has_vnet_hdr() {
                feed(&self.buf[..n]);
            } else {
                match gso::process(&mut self.buf[..n], &mut self.scratch, &mut feed) {
                    Ok(Processed::Plain) => {}
                    Ok(Processed::Checksummed) => c.checksums_completed += 1,
                    Ok(Processed::Segmented(k)) => {
                        c.gso_reads += 1;
                        c.gso_segments += k as u64;
                    }
                    Err(_) => {
                        // Passed on whole: the machine refuses it (malformed, too large) or
                        // carries it, and counts it either way.
                        c.offload_errors += 1;
                        feed(&self.buf[n.min(VNET_HDR_LEN)..n]);
                    }
                }
            }
            self.counts[d].packets_read += (produced - before) as u64;
            // What this read made deliverable (no delay, no rate: at once) is written before
            // the next read, which usually finds nothing: the write is the packet's latency,
            // the empty read is not.
            self.flush_devices(machine);
        }
        Ok(())
    }

    /// Receives one batch of datagrams and writes what they made deliverable.
    fn read_socket<M: Machine>(&mut self, machine: &mut M) {
        let Some(sock) = self.socket.as_mut() else {
            return;
        };
        let now = self.clock.now();
        let mut notes = Vec::new();
        let n = sock.receive(
            M::handled_first,
            |from, d| machine.handle_datagram(now, from, d),
            &mut |note| notes.push(format_socket_note(note)),
        );
        for e in notes {
            machine.note(Note::Socket(SocketNote::ReceiveFailed(&e)));
        }
        if n > 0 {
            self.flush_devices(machine);
        }
    }

    /// Sends what the machine has for the socket, until the send buffer is full.
    fn transmit<M: Machine>(&mut self, machine: &mut M) {
        let Some(sock) = self.socket.as_mut() else {
            return;
        };
        let now = self.clock.now();
        let mut failed: Vec<(SocketAddr, io::Error)> = Vec::new();
        {
            let mut poll = |b: &mut Vec<u8>| machine.poll_transmit(now, b);
            sock.transmit(&mut poll, &mut |note| {
                if let SocketNote::SendFailed { to, error } = note {
                    failed.push((to, io::Error::new(error.kind(), error.to_string())));
                }
            });
        }
        for (to, error) in &failed {
            machine.note(Note::Socket(SocketNote::SendFailed { to: *to, error }));
        }
    }
}

/// A receive error, kept past the call that met it.
fn format_socket_note(note: SocketNote<'_>) -> io::Error {
    match note {
        SocketNote::ReceiveFailed(e) | SocketNote::SendFailed { error: e, .. } => {
            io::Error::new(e.kind(), e.to_string())
        }
    }
}

#[cfg(test)]
mod tests;
