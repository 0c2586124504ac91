//! The write side of the driver loop: each device's outbox written with the one
//! back-pressure rule of the module contract (wait while full, count what is dropped).

use crate::coalesce::{self, Plan};
use crate::device::{write_planned, Device};
use crate::gso::VNET_HDR_LEN;

use super::{would_block, Fate, Loop, Machine, Note};

impl<D: Device> Loop<'_, D> {
    /// Writes every device's outbox until it is empty or the device would block.
    pub(super) fn flush_devices<M: Machine>(&mut self, machine: &mut M) {
        for d in 0..self.devices.len() {
            if !self.blocked[d] {
                self.flush_device(machine, d);
            }
            if self.blocked[d] {
                self.shed(machine, d);
            }
        }
    }

    /// Writes device `d`'s outbox from the front until it is empty or the device would block.
    fn flush_device<M: Machine>(&mut self, machine: &mut M, d: usize) {
        let dev = self.devices[d];
        loop {
            let q = machine.outbox(d);
            if q.is_empty() {
                return;
            }
            let plan = if !dev.has_vnet_hdr() {
                self.head.clear();
                Plan {
                    count: 1,
                    header_len: 0,
                }
            } else if self.opts.coalesce && !self.coalesce_off[d] {
                coalesce::plan(q.iter().map(|p| p.as_slice()), &mut self.head)
            } else {
                self.head.clear();
                self.head.extend_from_slice(&[0u8; VNET_HDR_LEN]);
                Plan {
                    count: 1,
                    header_len: 0,
                }
            };
            let res = write_planned(dev, &self.head, plan, q.iter().map(|p| p.as_slice()));
            let c = &mut self.counts[d];
            match res {
                // A packet device takes a whole write or fails; a short count would be a
                // kernel bug, counted as a refusal of what the write carried.
                Ok((n, want)) if n == want => {
                    c.writes += 1;
                    c.packets_written += plan.count as u64;
                    if plan.count > 1 {
                        c.coalesced_writes += 1;
                        c.coalesced_packets += plan.count as u64;
                    }
                    self.leave(machine, d, plan.count, Fate::Written);
                }
                Err(e) if would_block(&e) => {
                    c.would_block += 1;
                    self.blocked[d] = true;
                    return;
                }
                Err(e) if plan.count > 1 => {
                    // The device refused the super-packet: write singly from now on.
                    c.coalesce_errors += 1;
                    self.coalesce_off[d] = true;
                    machine.note(Note::CoalescingOff {
                        device: d,
                        error: &e,
                    });
                }
                other => {
                    c.write_errors += plan.count as u64;
                    let error = match other {
                        Err(e) => e,
                        Ok((n, want)) => {
                            std::io::Error::other(format!("the device took {n} of {want} bytes"))
                        }
                    };
                    machine.note(Note::WriteFailed {
                        device: d,
                        error: &error,
                    });
                    self.leave(machine, d, plan.count, Fate::Refused);
                }
            }
        }
    }

    /// Device `d` stays full: drops what its outbox holds beyond the backlog, oldest first.
    fn shed<M: Machine>(&mut self, machine: &mut M, d: usize) {
        let excess = machine.outbox(d).len().saturating_sub(self.opts.backlog);
        if excess > 0 {
            self.counts[d].dropped_full += excess as u64;
            self.leave(machine, d, excess, Fate::DeviceFull);
        }
    }

    /// Takes `count` packets off the front of device `d`'s outbox with the given fate; their
    /// buffers go to the socket's pool when there is one.
    fn leave<M: Machine>(&mut self, machine: &mut M, d: usize, count: usize, fate: Fate) {
        let now = self.clock.now();
        for _ in 0..count {
            let Some(p) = machine.outbox(d).pop_front() else {
                return;
            };
            machine.written(now, d, &p, fate);
            if let Some(s) = self.socket.as_mut() {
                s.pool.give(p);
            }
        }
    }
}
