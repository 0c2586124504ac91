//! The sleep of the driver loop: until the machine's next deadline, a readable descriptor or
//! a writable one the loop waits for (`ppoll(2)`, nanosecond timeout), spun when shorter than
//! [`super::SPIN`], skipped while busy polling.

use std::io;
use std::os::fd::AsRawFd;

use mslink_link::Duration;

use crate::device::Device;

use super::{Loop, Machine, SPIN};

impl<D: Device> Loop<'_, D> {
    /// Sleeps until something can move; sets which descriptors to read next turn.
    pub(super) fn wait<M: Machine>(&mut self, machine: &M) -> io::Result<()> {
        let now = self.clock.now();
        let mut wait = self.opts.max_sleep;
        if let Some(t) = machine.poll_timeout() {
            wait = wait.min(t.saturating_since(now));
        }
        if let Some(end) = self.draining_until {
            wait = wait.min(end.saturating_since(now));
        }
        let reading = self.draining_until.is_none();
        if wait < SPIN {
            if wait > Duration::ZERO {
                std::hint::spin_loop();
            }
            if wait == Duration::ZERO || !reading {
                self.readable.iter_mut().for_each(|r| *r = true);
                self.polled = false;
                return Ok(());
            }
        }
        let stalled = self.stalled();
        let mut fds = std::mem::take(&mut self.fds);
        fds.clear();
        fds.extend(
            self.devices
                .iter()
                .zip(&self.blocked)
                .map(|(dev, &blocked)| libc::pollfd {
                    fd: dev.as_raw_fd(),
                    // While datagrams wait for the socket, the devices are not read: reading
                    // would only make more.
                    events: if reading && !stalled { libc::POLLIN } else { 0 }
                        | if blocked { libc::POLLOUT } else { 0 },
                    revents: 0,
                }),
        );
        if let Some(s) = self.socket.as_ref() {
            fds.push(libc::pollfd {
                fd: s.socket().as_raw_fd(),
                events: if reading { libc::POLLIN } else { 0 }
                    | if stalled { libc::POLLOUT } else { 0 },
                revents: 0,
            });
        }
        // Busy polling (opt-in): shortly after traffic, look again at once instead of sleeping.
        let busy = self.opts.busy_poll > Duration::ZERO
            && now < self.last_moved.saturating_add(self.opts.busy_poll);
        self.polled = busy;
        let ns = if wait < SPIN || busy {
            0
        } else {
            wait.as_nanos()
        };
        let ts = libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: fds is a valid array of pollfd; ts a valid timespec; no signal mask.
        let r = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        let polled = self.set_readable(&fds, r);
        self.fds = fds;
        polled
    }

    /// Which descriptors to read next turn, from what `ppoll` returned (`r`) and set.
    fn set_readable(&mut self, fds: &[libc::pollfd], r: libc::c_int) -> io::Result<()> {
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
            self.readable.iter_mut().for_each(|r| *r = true);
            return Ok(());
        }
        // An error or hang-up condition is read too, so the read reports it.
        let ready = libc::POLLIN | libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;
        for (r, f) in self.readable.iter_mut().zip(fds) {
            *r = f.revents & ready != 0;
        }
        if self.socket.is_none() {
            self.readable[self.devices.len()] = false;
        }
        Ok(())
    }
}
