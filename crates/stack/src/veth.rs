//! Two network namespaces joined by a veth pair, for the AF_PACKET device (Linux, needs root
//! and `ip`). I/O helper for tests and `mslink stack-bench`; not part of the protocol core.
//!
//! Contract: [`VethPair::create`] makes namespaces `<prefix>-a-<pid>` and `<prefix>-b-<pid>`
//! with interface `v0` in A and `v1` in B, station addresses 02:00:00:00:00:01 and
//! 02:00:00:00:00:02, both up; nothing outside those namespaces is touched. Dropping the value
//! deletes both namespaces (and so the pair). [`VethPair::within`] runs a closure in a thread
//! that has entered one of them; sockets opened there stay in that namespace.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::process::Command;

/// Station address of `v0` (namespace A).
pub const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
/// Station address of `v1` (namespace B).
pub const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

/// Two namespaces and the veth pair between them; removed on drop.
#[derive(Debug)]
pub struct VethPair {
    /// Name of namespace A (holds `v0`).
    pub a: String,
    /// Name of namespace B (holds `v1`).
    pub b: String,
}

/// Runs `ip` with `args`.
pub fn ip(args: &[&str]) -> io::Result<()> {
    let st = Command::new("ip").args(args).status()?;
    if st.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "ip {} failed ({st})",
            args.join(" ")
        )))
    }
}

fn mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl VethPair {
    /// Creates the namespaces and the pair (see the module contract).
    pub fn create(prefix: &str) -> io::Result<VethPair> {
        let pid = std::process::id();
        let p = VethPair {
            a: format!("{prefix}-a-{pid}"),
            b: format!("{prefix}-b-{pid}"),
        };
        // Dropping `p` on any error below removes whatever was made.
        ip(&["netns", "add", &p.a])?;
        ip(&["netns", "add", &p.b])?;
        ip(&[
            "-n", &p.a, "link", "add", "v0", "type", "veth", "peer", "name", "v1", "netns", &p.b,
        ])?;
        ip(&[
            "-n",
            &p.a,
            "link",
            "set",
            "v0",
            "address",
            &mac(MAC_A),
            "up",
        ])?;
        ip(&[
            "-n",
            &p.b,
            "link",
            "set",
            "v1",
            "address",
            &mac(MAC_B),
            "up",
        ])?;
        ip(&["-n", &p.a, "link", "set", "lo", "up"])?;
        ip(&["-n", &p.b, "link", "set", "lo", "up"])?;
        Ok(p)
    }

    /// Runs `f` in a new thread that has entered namespace `name` and returns its result.
    pub fn within<T: Send + 'static>(
        name: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        let path = format!("/var/run/netns/{name}");
        std::thread::spawn(move || -> io::Result<T> {
            let ns = File::open(&path)?;
            // SAFETY: setns(2) on a valid namespace descriptor; it changes only this thread.
            let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(f())
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        for n in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}
