//! Named network namespaces for a local benchmark run (`mslink bench local --netns`): two
//! namespaces joined by a veth pair, made and removed here, so the bench crosses a real
//! (virtual) link instead of loopback.
//!
//! Contract: names are `msv<pid>a` / `msv<pid>b` (namespace and the veth end inside it);
//! the server side is 10.201.0.1/30 in `a`, the client side 10.201.0.2/30 in `b`, loopback
//! up in both. The server runs under `ip netns exec msv<pid>a`; the client thread enters
//! `b` with setns(2) and returns to its own namespace before cleanup. Both namespaces are
//! deleted (which also deletes the veth) when the guard drops — on success and on error —
//! and by a janitor process that ignores SIGINT/SIGTERM and deletes them once this process
//! is gone (end of file on a pipe only this process holds), so Ctrl-C or a kill leaves
//! nothing behind. Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

use super::{BenchError, Context};

type Result<T> = std::result::Result<T, BenchError>;

/// Server address inside namespace `a`.
pub const SERVER_IP: &str = "10.201.0.1";
const CLIENT_CIDR: &str = "10.201.0.2/30";
const SERVER_CIDR: &str = "10.201.0.1/30";

/// The two namespaces; deleted on drop.
pub struct NetnsPair {
    /// Namespace of the server.
    pub a: String,
    /// Namespace of the client.
    pub b: String,
    /// This thread's namespace before entering `b`.
    home: Option<File>,
    /// Write end of the janitor's pipe.
    _janitor: Option<std::process::ChildStdin>,
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context(|| "run ip (iproute2)".into())?;
    if !out.status.success() {
        return Err(BenchError::Command {
            command: format!("ip {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

impl NetnsPair {
    /// Create both namespaces and the veth between them.
    pub fn create() -> Result<Self> {
        let pid = std::process::id();
        let (a, b) = (format!("msv{pid}a"), format!("msv{pid}b"));
        // The janitor first, so even a failure half-way is cleaned up.
        // It waits for end of file on a pipe only this process holds (close-on-exec), which
        // comes when this process exits however it exits (even as an unreaped zombie).
        let script = format!(
            "trap '' INT TERM HUP; cat >/dev/null; \
             ip netns del {a} 2>/dev/null; ip netns del {b} 2>/dev/null; exit 0"
        );
        let janitor = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context(|| "start the namespace janitor".into())?;
        let me = Self {
            a,
            b,
            home: None,
            _janitor: janitor.stdin,
        };
        me.setup()
            .context(|| "set up namespaces (needs root)".into())?;
        Ok(me)
    }

    fn setup(&self) -> Result<()> {
        let (a, b) = (self.a.as_str(), self.b.as_str());
        ip(&["netns", "add", a])?;
        ip(&["netns", "add", b])?;
        ip(&["link", "add", a, "type", "veth", "peer", "name", b])?;
        ip(&["link", "set", a, "netns", a])?;
        ip(&["link", "set", b, "netns", b])?;
        for (ns, dev, cidr) in [(a, a, SERVER_CIDR), (b, b, CLIENT_CIDR)] {
            ip(&["-n", ns, "addr", "add", cidr, "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    /// Move the calling thread (and threads it starts later) into the client namespace.
    pub fn enter_client(&mut self) -> Result<()> {
        let home = File::open("/proc/thread-self/ns/net").context(|| "open own netns".into())?;
        let target =
            File::open(format!("/run/netns/{}", self.b)).context(|| "open client netns".into())?;
        // SAFETY: setns(2) with two descriptors we own; affects only this thread.
        if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error())
                .context(|| "setns into client netns".into());
        }
        self.home = Some(home);
        Ok(())
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            // SAFETY: setns(2) back to the namespace we came from.
            unsafe {
                libc::setns(home.as_raw_fd(), libc::CLONE_NEWNET);
            }
        }
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
    }
}
