//! Network namespaces made by the tool itself, and commands run inside them.
//!
//! Contract. [`Netns::create`] makes an *unnamed* network namespace (a thread unshares
//! `CLONE_NEWNET` and keeps a descriptor of it), so nothing is mounted under /var/run/netns:
//! the namespace, and every veth and TUN device in it, is destroyed by the kernel when the last
//! descriptor closes and the last process inside exits. [`Netns::spawn`] starts a command
//! inside, in a PID namespace of its own (`unshare --pid --fork --kill-child`) and with a
//! parent-death signal, so if the emulator dies — even by SIGKILL — the kernel kills the
//! command and everything it started, and the namespace goes with them. [`Netns::run`] runs a
//! closure on a thread inside the namespace (to create a TUN device or write a sysctl).
//! [`sweep_stale`] removes devices named `msl<pid>…` in the caller's namespace whose pid is no
//! longer alive (a belt-and-braces sweep at start-up; devices in unnamed namespaces need none).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

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

    /// A command that will run inside this namespace (the child enters it before exec) and
    /// is killed by the kernel if the thread that spawned it dies.
    pub fn command(&self, program: &str) -> Command {
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

    /// Runs `ip ARGS` inside the namespace and waits; an error carries ip's message.
    pub fn ip(&self, args: &[&str]) -> io::Result<()> {
        let out = self
            .command("ip")
            .args(args)
            .stdin(Stdio::null())
            .output()?;
        if out.status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "ip {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
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

/// Deletes links named `msl<pid>…` in the caller's namespace whose process is gone; returns
/// their names.
pub fn sweep_stale() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return removed;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
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
        let ok = Command::new("ip")
            .args(["link", "del", &name])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            removed.push(name);
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
