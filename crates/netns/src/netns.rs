//! Network namespaces held by descriptors, and threads and commands run inside them.
//!
//! Contract. [`Netns::create`] makes an *unnamed* network namespace (a thread unshares
//! `CLONE_NEWNET` and keeps a descriptor of it), so nothing is mounted under /var/run/netns:
//! the namespace, and every veth and TUN device in it, is destroyed by the kernel when the last
//! descriptor closes and the last process inside exits. [`Netns::spawn`] starts a command
//! inside, in a PID namespace of its own (`unshare --pid --fork --kill-child`) and with a
//! parent-death signal, so if the caller dies — even by SIGKILL — the kernel kills the
//! command and everything it started, and the namespace goes with them; [`Netns::command`]
//! is the same without the PID namespace, and [`Netns::spawn_foreground`] makes the command
//! the terminal's foreground (an interactive shell; [`take_terminal`] takes it back). [`Netns::run`] runs a closure on a thread inside the
//! namespace (to create a TUN device, open a socket, write a sysctl or send a route-netlink
//! request: the methods [`Netns::set_link`], [`Netns::add_address`], [`Netns::add_veth`], ...
//! are [`crate::rtnl`] run there); [`Netns::thread`] starts such a thread and returns its
//! handle; [`Netns::enter`] moves the calling thread in until the guard drops. Sockets and
//! devices opened inside stay in the namespace whatever the thread does afterwards.
//! [`DeviceOwner`] names an emulator's devices `msl<pid><side><tag>`: the pid as the emulator
//! sees it and, outside the initial PID namespace, a tag of its PID namespace (pids repeat
//! across PID namespaces: two emulators nested in `Netns::spawn`'s PID namespaces may both be
//! pid 2). [`sweep_stale`] removes devices so named in the caller's namespace whose emulator is
//! gone: only those of the caller's own PID namespace, the one where their pid means something
//! (a belt-and-braces sweep at start-up; devices in unnamed namespaces need none).

use std::ffi::OsStr;
use std::io;
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::thread::JoinHandle;

use crate::rtnl::{self, LinkChange};

/// A file mounted over another for one command (and what it starts) only: the command gets a
/// mount namespace of its own, private, where `source` is bind-mounted on `target` (e.g. a
/// `resolv.conf` naming a resolver the command can reach). The caller's view of `target` is
/// unchanged, and `source` may be removed once the command has started (the mount holds it).
#[derive(Clone, Debug)]
pub struct FileOverlay {
    source: std::ffi::CString,
    target: std::ffi::CString,
}

impl FileOverlay {
    /// `source` over `target`; both must exist when the command starts.
    ///
    /// # Errors
    /// A path with a NUL byte.
    pub fn new(source: &std::path::Path, target: &std::path::Path) -> io::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &std::path::Path| {
            std::ffi::CString::new(p.as_os_str().as_bytes())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
        };
        Ok(FileOverlay {
            source: c(source)?,
            target: c(target)?,
        })
    }

    /// Makes `c` unshare its mount namespace, make it private and mount the file, between fork
    /// and exec.
    fn apply_to(&self, c: &mut Command) {
        let (source, target) = (self.source.clone(), self.target.clone());
        // SAFETY: only async-signal-safe calls (unshare, mount) run between fork and exec; the
        // strings were allocated before the fork.
        unsafe {
            c.pre_exec(move || {
                check(libc::unshare(libc::CLONE_NEWNS))?;
                // Private, so the bind mount stays in this namespace (systemd makes / shared).
                check(libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ))?;
                check(libc::mount(
                    source.as_ptr(),
                    target.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ))?;
                Ok(())
            });
        }
    }
}

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
    /// With `overlay`, the command runs in a mount namespace of its own where a file is
    /// mounted over another ([`FileOverlay`]).
    pub fn spawn(
        &self,
        script: &str,
        env: &[(String, String)],
        own_group: bool,
        overlay: Option<&FileOverlay>,
    ) -> io::Result<Child> {
        let mut c = self.command("unshare");
        if let Some(o) = overlay {
            o.apply_to(&mut c);
        }
        c.args(["--pid", "--fork", "--kill-child", "--", "sh", "-c", script]);
        c.envs(env.iter().map(|(k, v)| (k, v)));
        if own_group {
            c.process_group(0);
        }
        c.spawn()
    }

    /// Starts `sh -c SCRIPT` inside the namespace, in a PID namespace of its own, as the
    /// foreground process group of the terminal on standard input (an interactive shell or
    /// program: the terminal's Ctrl-C and job control reach it, not the caller). The process
    /// the caller holds forks the PID namespace's init and ends as it does (128 + signal if a
    /// signal ended it); if it is killed, or the caller dies, the kernel kills the command.
    /// The command's process group is its own, made inside its PID namespace, so a shell
    /// there can see it (a group outside is invisible: `dash` then fails to give the terminal
    /// back at exit). The caller gets the terminal back with [`take_terminal`] when the command
    /// has ended.
    /// `overlay` as for [`Netns::spawn`].
    pub fn spawn_foreground(
        &self,
        script: &str,
        env: &[(String, String)],
        overlay: Option<&FileOverlay>,
    ) -> io::Result<Child> {
        let mut c = self.command("sh");
        if let Some(o) = overlay {
            o.apply_to(&mut c);
        }
        c.args(["-c", script]);
        c.envs(env.iter().map(|(k, v)| (k, v)));
        // SAFETY: between fork and exec only async-signal-safe calls run (unshare, fork,
        // waitpid, close_range, _exit, prctl, setpgid, signal, tcsetpgrp, getpid); the
        // intermediate process never returns from the closure.
        unsafe {
            c.pre_exec(|| {
                check(libc::unshare(libc::CLONE_NEWPID))?;
                let init = check(libc::fork())?;
                if init > 0 {
                    // Not the command: close what std's spawn gave us (its error pipe among
                    // them, whose end must close at the command's exec), wait, end alike.
                    libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
                    let mut st = 0;
                    while libc::waitpid(init, &mut st, 0) < 0 {
                        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                            libc::_exit(127);
                        }
                    }
                    if libc::WIFEXITED(st) {
                        libc::_exit(libc::WEXITSTATUS(st));
                    }
                    libc::_exit(128 + libc::WTERMSIG(st));
                }
                // Pid 1 of the new PID namespace, killed if the process above dies.
                check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
                check(libc::setpgid(0, 0))?;
                // A background group may take the terminal only with SIGTTOU ignored.
                let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                let r = libc::tcsetpgrp(0, libc::getpid());
                libc::signal(libc::SIGTTOU, old);
                check(r)?;
                Ok(())
            });
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

    /// Adds a default route of `family` out of link `dev` inside
    /// ([`rtnl::add_default_route`]).
    pub fn add_default_route(&self, dev: &str, family: rtnl::Family) -> io::Result<()> {
        self.run(|| rtnl::add_default_route(dev, family))?
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

/// Standard input is a terminal whose foreground process group is the caller's (it was
/// started in the foreground of an interactive terminal).
pub fn in_terminal_foreground() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp only query.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// Makes the caller's process group the foreground of the terminal on standard input again
/// (after [`Netns::spawn_foreground`]'s command ended).
pub fn take_terminal() -> io::Result<()> {
    // SAFETY: signal and tcsetpgrp on our own terminal; the old disposition is restored.
    unsafe {
        let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        let r = libc::tcsetpgrp(0, libc::getpgrp());
        libc::signal(libc::SIGTTOU, old);
        check(r).map(drop)
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

/// `PROC_PID_INIT_INO` (include/linux/proc_ns.h): the inode of the initial PID namespace.
const PROC_PID_INIT_INO: u64 = 0xEFFF_FFFC;

/// Who owns an emulator's device names: its pid and its PID namespace's tag (see the module
/// contract). Names fit IFNAMSIZ: "msl", at most 7 digits (pid_max is at most 2^22), the side
/// letter and at most 4 tag characters make 15.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceOwner {
    /// The pid, in the owner's own PID namespace.
    pub pid: u32,
    /// Empty in the initial PID namespace, else 4 base-36 characters of its inode.
    pub tag: String,
}

/// The device-name tag of the PID namespace with inode `ino`.
fn pid_ns_tag(ino: u64) -> String {
    if ino == PROC_PID_INIT_INO {
        return String::new();
    }
    let mut n = ino % 36u64.pow(4);
    let mut t = [b'0'; 4];
    for c in t.iter_mut().rev() {
        *c = b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize];
        n /= 36;
    }
    String::from_utf8_lossy(&t).into_owned()
}

impl DeviceOwner {
    /// The calling process (its PID namespace read from /proc/self/ns/pid).
    pub fn me() -> io::Result<DeviceOwner> {
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata("/proc/self/ns/pid")
            .map_err(|e| io::Error::new(e.kind(), format!("reading /proc/self/ns/pid: {e}")))?
            .ino();
        Ok(DeviceOwner {
            pid: std::process::id(),
            tag: pid_ns_tag(ino),
        })
    }

    /// A number for this emulator among those of one network namespace: its pid in the
    /// initial PID namespace, else the pid mixed with the tag (for per-emulator addresses).
    pub fn instance(&self) -> u32 {
        let tag = self
            .tag
            .bytes()
            .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        self.pid ^ tag.wrapping_mul(0x9e37_79b9).rotate_left(7)
    }

    /// The name of its device on `side` (`'l'` or `'r'`).
    pub fn device(&self, side: char) -> String {
        format!("msl{}{side}{}", self.pid, self.tag)
    }

    /// The owner of device `name`, if it is an emulator's (`msl<pid><l|r><tag>`).
    pub fn of_device(name: &str) -> Option<DeviceOwner> {
        let rest = name.strip_prefix("msl")?;
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let pid = rest[..digits].parse().ok()?;
        let tag = rest[digits..]
            .strip_prefix('l')
            .or_else(|| rest[digits..].strip_prefix('r'))?;
        let ok = tag.is_empty()
            || (tag.len() == 4
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()));
        ok.then(|| DeviceOwner {
            pid,
            tag: tag.to_string(),
        })
    }
}

/// Whether device `name` belongs to an emulator that is gone, as judged by `me`, whose PID
/// namespace is the only one where the name's pid can be looked up (`alive`).
fn stale(name: &str, me: &DeviceOwner, alive: impl Fn(u32) -> bool) -> bool {
    match DeviceOwner::of_device(name) {
        Some(owner) => owner.tag == me.tag && owner.pid != me.pid && !alive(owner.pid),
        None => false,
    }
}

/// The process `pid` of the caller's PID namespace exists (kill(2) with signal 0 looks it up
/// there, whatever /proc is mounted).
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Deletes emulator devices ([`DeviceOwner`]) in the calling thread's namespace whose emulator
/// is gone: named by a process of the caller's own PID namespace that no longer exists.
/// Devices of other PID namespaces (an outer or a sibling emulator's) are never judged.
/// Returns their names (a veth's two ends may both be named, one deletion takes both).
pub fn sweep_stale() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(me) = DeviceOwner::me() else {
        return removed;
    };
    // /proc/thread-self/net/dev, not /sys/class/net: sysfs shows the namespace it was mounted
    // in, not the calling thread's.
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/net/dev") else {
        return removed;
    };
    for name in text
        .lines()
        .filter_map(|l| Some(l.split_once(':')?.0.trim()))
    {
        if stale(name, &me, alive) && rtnl::del_link(name).is_ok() {
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

    #[test]
    fn device_names_carry_the_pid_namespace_and_fit_ifnamsiz() {
        assert_eq!(pid_ns_tag(PROC_PID_INIT_INO), "");
        let t = pid_ns_tag(4026532871);
        assert_eq!(t.len(), 4);
        assert_ne!(t, pid_ns_tag(4026532872));
        let top = DeviceOwner {
            pid: 1234,
            tag: String::new(),
        };
        assert_eq!(top.device('l'), "msl1234l");
        let nested = DeviceOwner {
            pid: 4_194_304,
            tag: t.clone(),
        };
        let name = nested.device('r');
        assert!(name.len() <= 15, "{name}");
        assert_eq!(DeviceOwner::of_device(&name), Some(nested));
        assert_eq!(DeviceOwner::of_device("msl1234l"), Some(top));
        for other in [
            "mslt0",
            "msl",
            "msl12",
            "msl12x",
            "msl12lzz",
            "lo",
            "msl12lABCD",
        ] {
            assert_eq!(DeviceOwner::of_device(other), None, "{other}");
        }
    }

    #[test]
    fn only_dead_emulators_of_the_own_pid_namespace_are_stale() {
        let dead = |_| false;
        let me = DeviceOwner {
            pid: 2,
            tag: pid_ns_tag(4026532900),
        };
        // Another nested emulator of the same PID namespace, gone: stale.
        assert!(stale(&format!("msl7l{}", me.tag), &me, dead));
        // Alive, or the caller itself: not.
        assert!(!stale(&format!("msl7l{}", me.tag), &me, |_| true));
        assert!(!stale(&me.device('r'), &me, dead));
        // The outer emulator's device (initial PID namespace) or a sibling's (another tag):
        // their pids mean nothing here, so never judged, however the lookup answers.
        assert!(!stale("msl4321r", &me, dead));
        assert!(!stale(
            &format!("msl7l{}", pid_ns_tag(4026532901)),
            &me,
            dead
        ));
        // From the initial PID namespace: untagged names are judged, tagged ones not.
        let top = DeviceOwner {
            pid: 100,
            tag: String::new(),
        };
        assert!(stale("msl4321r", &top, dead));
        assert!(!stale(&format!("msl7l{}", me.tag), &top, dead));
        assert!(!stale("mslt0", &top, dead));
    }
}
