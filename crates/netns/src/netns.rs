//! Network namespaces held by descriptors, and threads and commands run inside them.
//!
//! Contract. [`Netns::create`] makes an *unnamed* network namespace (a thread unshares
//! `CLONE_NEWNET` and keeps a descriptor of it), so nothing is mounted under /var/run/netns:
//! the namespace, and every veth and TUN device in it, is destroyed by the kernel when the last
//! descriptor closes and the last process inside exits. [`Netns::spawn`] starts a command
//! inside, in a PID namespace of its own (`unshare --pid --fork --kill-child`) and with a
//! parent-death signal, so if the caller dies — even by SIGKILL — the kernel kills the
//! command and everything it started, and the namespace goes with them; [`Netns::command`]
//! is the same without the PID namespace. [`Netns::run`] runs a closure on a thread inside the
//! namespace (to create a TUN device, open a socket, write a sysctl or send a route-netlink
//! request: the methods [`Netns::set_link`], [`Netns::add_address`], [`Netns::add_veth`], ...
//! are [`crate::rtnl`] run there); [`Netns::thread`] starts such a thread and returns its
//! handle; [`Netns::enter`] moves the calling thread in until the guard drops. Sockets and
//! devices opened inside stay in the namespace whatever the thread does afterwards.
//! [`sweep_stale`] removes devices named `msl<pid>…` in the caller's namespace whose pid is no
//! longer alive (a belt-and-braces sweep at start-up; devices in unnamed namespaces need none).

use std::ffi::OsStr;
use std::io;
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::thread::JoinHandle;

use crate::rtnl::{self, LinkChange};

/// A network namespace, alive while this value (or a process inside) exists.
#[derive(Debug)]
pub struct Netns {
    fd: OwnedFd,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn open_own_ns() -> io::Result<OwnedFd> {
    // SAFETY: open(2) of a constant NUL-terminated path.
    let fd = check(unsafe {
        libc::open(
            c"/proc/thread-self/ns/net".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Netns {
    /// A new, empty, unnamed network namespace.
    pub fn create() -> io::Result<Netns> {
        std::thread::spawn(|| {
            // SAFETY: unshare(2) changes only this short-lived thread's namespace.
            check(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
            open_own_ns()
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
        .map(|fd| Netns { fd })
    }

    /// The namespace the calling thread is in.
    pub fn current() -> io::Result<Netns> {
        open_own_ns().map(|fd| Netns { fd })
    }

    /// Another descriptor of the same namespace (it keeps the namespace alive as well).
    pub fn try_clone(&self) -> io::Result<Netns> {
        self.fd.try_clone().map(|fd| Netns { fd })
    }

    /// The namespace's inode number (what `/proc/PID/ns/net` links to: `net:[INODE]`).
    pub fn inode(&self) -> io::Result<u64> {
        // SAFETY: fstat on an open descriptor into a zeroed stat buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        check(unsafe { libc::fstat(self.fd.as_raw_fd(), &mut st) })?;
        Ok(st.st_ino)
    }

    /// Runs `f` on a thread that has entered this namespace.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> io::Result<T> {
        let fd = self.fd.as_raw_fd();
        std::thread::scope(|s| {
            s.spawn(move || {
                // SAFETY: setns(2) moves only this scoped thread, which ends after `f`.
                check(unsafe { libc::setns(fd, libc::CLONE_NEWNET) })?;
                Ok(f())
            })
            .join()
            .map_err(|_| io::Error::other("namespace thread panicked"))?
        })
    }

    /// Starts a thread that enters this namespace and then runs `f`; returns its handle once
    /// it is inside (an error, and no `f`, if it could not enter).
    pub fn thread<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<JoinHandle<T>> {
        let ns = self.try_clone()?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let handle = std::thread::spawn(move || {
            // SAFETY: setns(2) moves only this new thread.
            let entered = check(unsafe { libc::setns(ns.fd.as_raw_fd(), libc::CLONE_NEWNET) });
            drop(ns);
            let ok = entered.is_ok();
            let _ = tx.send(entered);
            if !ok {
                // Ends the thread without running `f` (and without a panic message: the
                // caller has the error).
                std::panic::resume_unwind(Box::new("could not enter the namespace"));
            }
            f()
        });
        match rx.recv() {
            Ok(Ok(_)) => Ok(handle),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => Err(io::Error::other("namespace thread ended early")),
        }
    }

    /// Moves the calling thread into this namespace until the returned guard drops (then it
    /// goes back to the namespace it was in). Threads it starts meanwhile start inside.
    pub fn enter(&self) -> io::Result<Entered> {
        let home = Netns::current()?;
        // SAFETY: setns(2) changes only the calling thread's namespace; the guard undoes it.
        check(unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) })?;
        Ok(Entered {
            home,
            _this_thread: std::marker::PhantomData,
        })
    }

    /// A command that will run inside this namespace (the child enters it before exec) and
    /// is killed by the kernel if the thread that spawned it dies.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let fd = self.fd.as_raw_fd();
        let mut c = Command::new(program);
        // SAFETY: only async-signal-safe calls (setns, prctl, getppid) run between fork and
        // exec.
        unsafe {
            c.pre_exec(move || {
                check(libc::setns(fd, libc::CLONE_NEWNET))?;
                check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
                if libc::getppid() == 1 {
                    // The emulator died before the signal was armed.
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        c
    }

    /// Starts `sh -c SCRIPT` inside the namespace, in a PID namespace of its own whose init
    /// is killed with the emulator, with `env` added to its environment.
    /// With `own_group` the command gets a process group of its own (so a terminal's Ctrl-C
    /// reaches only the emulator, which then stops it); without, it stays in the terminal's
    /// foreground group (an interactive shell).
    pub fn spawn(
        &self,
        script: &str,
        env: &[(String, String)],
        own_group: bool,
    ) -> io::Result<Child> {
        let mut c = self.command("unshare");
        c.args(["--pid", "--fork", "--kill-child", "--", "sh", "-c", script]);
        c.envs(env.iter().map(|(k, v)| (k, v)));
        if own_group {
            c.process_group(0);
        }
        c.spawn()
    }

    /// Writes a sysctl value (path under /proc/sys) inside the namespace.
    pub fn sysctl(&self, path: &str, value: &str) -> io::Result<()> {
        let path = format!("/proc/sys/{path}");
        self.run(|| std::fs::write(&path, value))?
    }

    /// The text of /proc/net/dev as seen inside the namespace.
    pub fn net_dev(&self) -> io::Result<String> {
        self.run(|| std::fs::read_to_string("/proc/thread-self/net/dev"))?
    }

    /// The index of link `dev` inside ([`rtnl::index`]).
    pub fn index(&self, dev: &str) -> io::Result<u32> {
        self.run(|| rtnl::index(dev))?
    }

    /// Applies `change` to link `dev` inside ([`rtnl::set_link`]).
    pub fn set_link(&self, dev: &str, change: &LinkChange) -> io::Result<()> {
        self.run(|| rtnl::set_link(dev, change))?
    }

    /// Adds `addr/prefix` to link `dev` inside ([`rtnl::add_address`]).
    pub fn add_address(&self, dev: &str, addr: IpAddr, prefix: u8) -> io::Result<()> {
        self.run(|| rtnl::add_address(dev, addr, prefix))?
    }

    /// Adds point-to-point address `local` with peer `peer` to link `dev` inside
    /// ([`rtnl::add_peer_address`]).
    pub fn add_peer_address(&self, dev: &str, local: IpAddr, peer: IpAddr) -> io::Result<()> {
        self.run(|| rtnl::add_peer_address(dev, local, peer))?
    }

    /// Adds a default route (IPv4, or IPv6 with `v6`) out of link `dev` inside
    /// ([`rtnl::add_default_route`]).
    pub fn add_default_route(&self, dev: &str, v6: bool) -> io::Result<()> {
        self.run(|| rtnl::add_default_route(dev, v6))?
    }

    /// Adds a route to `dst/prefix` via router `via` on link `dev` inside
    /// ([`rtnl::add_route_via`]).
    pub fn add_route_via(&self, dev: &str, dst: IpAddr, prefix: u8, via: IpAddr) -> io::Result<()> {
        self.run(|| rtnl::add_route_via(dev, dst, prefix, via))?
    }

    /// Adds a permanent neighbour entry (`addr` at `mac`) on link `dev` inside
    /// ([`rtnl::add_neighbour`]).
    pub fn add_neighbour(&self, dev: &str, addr: IpAddr, mac: [u8; 6]) -> io::Result<()> {
        self.run(|| rtnl::add_neighbour(dev, addr, mac))?
    }

    /// Creates veth `name` inside with its peer `peer_name` in `peer_ns` (which may be this
    /// namespace); both ends start down ([`rtnl::add_veth`]).
    pub fn add_veth(&self, name: &str, peer_ns: &Netns, peer_name: &str) -> io::Result<()> {
        let peer_fd = peer_ns.fd.as_raw_fd();
        self.run(|| rtnl::add_veth(name, peer_name, peer_fd))?
    }

    /// Deletes link `dev` inside ([`rtnl::del_link`]).
    pub fn del_link(&self, dev: &str) -> io::Result<()> {
        self.run(|| rtnl::del_link(dev))?
    }
}

impl AsFd for Netns {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Netns {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// The calling thread is inside another namespace ([`Netns::enter`]) until this drops; then it
/// returns to the namespace it came from. Not `Send`: it must drop on the thread it moved.
#[derive(Debug)]
#[must_use = "the thread goes back to its namespace when the guard drops"]
pub struct Entered {
    home: Netns,
    _this_thread: std::marker::PhantomData<*const ()>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        // SAFETY: setns(2) back into the namespace the thread was in, through a descriptor we
        // hold; it fails only without CAP_SYS_ADMIN, which entering needed too.
        unsafe {
            libc::setns(self.home.fd.as_raw_fd(), libc::CLONE_NEWNET);
        }
    }
}

/// Interface counters of `name` from /proc/net/dev text: (rx packets, rx dropped, tx packets,
/// tx dropped).
pub fn dev_counters(net_dev: &str, name: &str) -> Option<[u64; 4]> {
    let line = net_dev
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{name}:")))?;
    let f: Vec<u64> = line
        .split_once(':')?
        .1
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // Receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets
    // errs drop ...
    Some([*f.get(1)?, *f.get(3)?, *f.get(9)?, *f.get(11)?])
}

/// Deletes links named `msl<pid>…` in the calling thread's namespace whose process is gone;
/// returns their names (a veth's two ends may both be named, one deletion takes both).
pub fn sweep_stale() -> Vec<String> {
    let mut removed = Vec::new();
    // /proc/thread-self/net/dev, not /sys/class/net: sysfs shows the namespace it was mounted
    // in, not the calling thread's.
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/net/dev") else {
        return removed;
    };
    for name in text
        .lines()
        .filter_map(|l| Some(l.split_once(':')?.0.trim()))
    {
        let Some(rest) = name.strip_prefix("msl") else {
            continue;
        };
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let Ok(pid) = digits.parse::<u32>() else {
            continue;
        };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if rtnl::del_link(name).is_ok() {
            removed.push(name.to_string());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_net_dev() {
        let text = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n msl12l:    1000      10    0    2    0     0          0         0     2000      20    0    3    0     0       0          0\n";
        assert_eq!(dev_counters(text, "msl12l"), Some([10, 2, 20, 3]));
        assert_eq!(dev_counters(text, "lo"), None);
    }
}
