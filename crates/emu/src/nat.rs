//! NAT from a single-mode command's namespace to whatever the host reaches, as Mahimahi's
//! shells give their inner shell the Internet.
//!
//! Contract. [`Nat::start`] makes the host (the namespace the emulator runs in) forward the
//! IPv4 traffic that arrives on the emulator's host-side device (`msl<pid>r`) from the
//! command's address, and masquerade it behind the address of whatever device it leaves by.
//! It flips no global sysctl (`net.ipv4.ip_forward`, `conf/all`): Linux decides whether to
//! forward a packet by the forwarding setting of the device it *arrived on*
//! (`net.ipv4.conf.<dev>.forwarding`, checked in `ip_route_input_slow`), so it sets it on
//! `msl<pid>r` (which dies with the emulator) for the way out, and on the devices the host has
//! IPv4 routes through (`/proc/net/route`) whose forwarding is off, for the replies coming
//! back. Those devices are listed in the table's `uplinks` set, and a forward rule lets them
//! forward nothing but replies of established connections toward an emulator's device
//! (`oifname "msl*"`), so the host does not become a router for its neighbours meanwhile.
//!
//! The rules are one nftables table per emulator, `inet mslink_<pid>` (the pid as `/proc`
//! shows it, `/proc/self`, so that emulators in nested PID namespaces name and check tables by
//! the same numbers), written with the `nft` program (package `nftables`); its comment holds
//! the process's start time. The table is removed, and the uplinks' forwarding set back to 0
//! unless another emulator's table still lists them, by one shell script ([`CLEANUP`]) run by
//! a reaper: a child started in its own process group that waits for end-of-file on a pipe
//! only the emulator holds, so it runs when the emulator exits normally, on a signal and after
//! SIGKILL alike. [`Nat::stop`] closes the pipe and waits for it. [`sweep`] runs the same
//! script at start-up for every `mslink_<pid>` table whose process is gone (or is another
//! process with that pid: its start time differs).
//!
//! Text in and out (the ruleset, `nft list` output, `/proc/net/route`) is handled by pure
//! functions with unit tests; the rest is process and file I/O.

use std::io::{self, Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// The cleanup, as `sh -c CLEANUP reaper TABLE [wait]`: with `wait`, first block until
/// standard input ends (the emulator's end of the pipe closed); then read the table's
/// `uplinks`, delete the table, and set `forwarding` back to 0 on each uplink no other
/// `mslink_*` table lists. Signals that would interrupt it are ignored.
pub const CLEANUP: &str = r#"trap '' INT TERM HUP QUIT
t=$1
if [ "$2" = wait ]; then while read -r _; do :; done; fi
devs=$(nft list set inet "$t" uplinks 2>/dev/null | grep -o '"[^"]*"' | tr -d '"')
nft delete table inet "$t" 2>/dev/null
others=$(nft list tables inet 2>/dev/null | sed -n 's/^table inet \(mslink_[0-9][0-9]*\)$/\1/p')
for d in $devs; do
  keep=
  for o in $others; do
    nft list set inet "$o" uplinks 2>/dev/null | grep -q "\"$d\"" && keep=1
  done
  [ -n "$keep" ] || echo 0 > "/proc/sys/net/ipv4/conf/$d/forwarding" 2>/dev/null
done
exit 0
"#;

/// The table of the emulator whose pid (as `/proc` shows it) is `pid`.
pub fn table_name(pid: u32) -> String {
    format!("mslink_{pid}")
}

/// The pid in a table name `mslink_<pid>`, if it is one of ours.
pub fn table_pid(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("mslink_")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The `mslink_<pid>` tables in the output of `nft list tables inet`.
pub fn parse_tables(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("table inet "))
        .map(|n| n.trim().to_string())
        .filter(|n| table_pid(n).is_some())
        .collect()
}

/// The start time recorded in a table listing's comment (`... start N`).
pub fn parse_start(listing: &str) -> Option<u64> {
    let line = listing.lines().find(|l| l.trim().starts_with("comment "))?;
    let rest = line.split(" start ").nth(1)?;
    rest.trim_end_matches(|c: char| c == '"' || c.is_whitespace())
        .parse()
        .ok()
}

/// The quoted elements of an `nft list set` listing (the set's interface names).
pub fn parse_elements(text: &str) -> Vec<String> {
    let Some(start) = text.find("elements = {") else {
        return Vec::new();
    };
    let body = &text[start..];
    let body = &body[..body.find('}').unwrap_or(body.len())];
    body.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// A device name nft and /proc/sys can both take as is (what the kernel allows, less quotes,
/// slashes and spaces).
fn plain_device(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 16
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-@:".contains(&b))
}

/// The host-side device of an emulator (`msl<digits>r`): another emulator's, never an uplink.
fn emulator_host_end(name: &str) -> bool {
    name.strip_prefix("msl")
        .and_then(|r| r.strip_suffix('r'))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The devices `/proc/net/route` text routes through, first seen first, without `lo`,
/// `own` and other emulators' host-side devices (a nested emulator's uplink, its outer
/// emulator's `msl<pid>l`, stays).
pub fn route_devices(text: &str, own: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in text.lines().skip(1) {
        let Some(dev) = l.split_whitespace().next() else {
            continue;
        };
        if dev == "lo" || dev == own || emulator_host_end(dev) || !plain_device(dev) {
            continue;
        }
        if !out.iter().any(|d| d == dev) {
            out.push(dev.to_string());
        }
    }
    out
}

/// The table of an emulator: masquerade what `device` brings from `inner`; let `uplinks`
/// forward only replies toward emulators' devices. `start` goes into the comment.
pub fn ruleset(
    table: &str,
    pid: u32,
    start: u64,
    device: &str,
    inner: Ipv4Addr,
    uplinks: &[String],
) -> String {
    let elements = if uplinks.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = uplinks.iter().map(|d| format!("\"{d}\"")).collect();
        format!(" elements = {{ {} }};", list.join(", "))
    };
    format!(
        "table inet {table} {{
  comment \"mslink emulate pid {pid} start {start}\"
  set uplinks {{ type ifname;{elements} }}
  chain postrouting {{
    type nat hook postrouting priority srcnat; policy accept;
    iifname \"{device}\" ip saddr {inner} oifname != \"{device}\" masquerade
  }}
  chain forward {{
    type filter hook forward priority filter; policy accept;
    iifname @uplinks oifname != \"msl*\" drop
    iifname @uplinks ct state != {{ established, related }} drop
  }}
}}
"
    )
}

/// The start time (clock ticks since boot, field 22) in `/proc/PID/stat` text.
pub fn stat_start(stat: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This process's pid as `/proc` shows it (not `getpid()`, which a PID namespace renumbers),
/// and its start time.
fn own_identity() -> io::Result<(u32, u64)> {
    let link = std::fs::read_link("/proc/self")?;
    let pid = link
        .to_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("/proc/self links to {link:?}")))?;
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let start = stat_start(&stat).ok_or_else(|| io::Error::other("unreadable /proc/self/stat"))?;
    Ok((pid, start))
}

/// Runs `nft ARGS` with `input` on its standard input; its output, or an error with its
/// message.
fn nft(args: &[&str], input: Option<&str>) -> io::Result<String> {
    let mut c = Command::new("nft");
    c.args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            io::Error::new(
                e.kind(),
                "the `nft` program is not installed (Debian/Ubuntu: apt-get install nftables)",
            )
        } else {
            e
        }
    })?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(text.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "nft {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn forwarding_path(dev: &str) -> String {
    format!("/proc/sys/net/ipv4/conf/{dev}/forwarding")
}

/// The NAT of a running emulator; [`Nat::stop`] (or dropping it) removes it.
#[derive(Debug)]
pub struct Nat {
    table: String,
    /// The emulator's end of the reaper's pipe: closing it starts the cleanup.
    pipe: Option<OwnedFd>,
    reaper: Option<Child>,
    uplinks: Vec<String>,
}

impl Nat {
    /// Sets up NAT for the traffic `device` (the emulator's host-side TUN, already up) brings
    /// from `inner` (the command's address), in the calling thread's network namespace.
    pub fn start(device: &str, inner: Ipv4Addr) -> io::Result<Nat> {
        let (pid, start) = own_identity()?;
        let table = table_name(pid);
        let routes = std::fs::read_to_string("/proc/thread-self/net/route")?;
        // Uplinks whose forwarding is off, or on because another emulator's table lists them
        // (it turned it on; whoever leaves last turns it off).
        let shared: Vec<String> = parse_tables(&nft(&["list", "tables", "inet"], None)?)
            .iter()
            .filter(|t| **t != table)
            .flat_map(|t| {
                parse_elements(
                    &nft(&["list", "set", "inet", t, "uplinks"], None).unwrap_or_default(),
                )
            })
            .collect();
        let uplinks: Vec<String> = route_devices(&routes, device)
            .into_iter()
            .filter(|d| match std::fs::read_to_string(forwarding_path(d)) {
                Ok(v) => v.trim() == "0" || shared.contains(d),
                Err(_) => false,
            })
            .collect();
        nft(
            &["-f", "-"],
            Some(&ruleset(&table, pid, start, device, inner, &uplinks)),
        )?;
        // From here on the reaper owns the cleanup.
        let mut nat = Nat {
            table,
            pipe: None,
            reaper: None,
            uplinks,
        };
        let (read_end, write_end) = pipe()?;
        let mut reaper = Command::new("sh");
        reaper
            .args(["-c", CLEANUP, "mslink-nat-reaper", &nat.table, "wait"])
            .stdin(Stdio::from(read_end))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: a terminal's Ctrl-C reaches the emulator, which cleans
            // up through the reaper, not the reaper itself.
            .process_group(0);
        match reaper.spawn() {
            Ok(c) => nat.reaper = Some(c),
            Err(e) => {
                run_cleanup(&nat.table);
                return Err(e);
            }
        }
        nat.pipe = Some(write_end);
        for d in nat.uplinks.iter().map(String::as_str).chain([device]) {
            std::fs::write(forwarding_path(d), "1").map_err(|e| {
                io::Error::new(e.kind(), format!("setting {}: {e}", forwarding_path(d)))
            })?;
        }
        Ok(nat)
    }

    /// The table's name (`mslink_<pid>`).
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The devices whose forwarding this emulator turned on (or shares with another).
    pub fn uplinks(&self) -> &[String] {
        &self.uplinks
    }

    /// Removes the table and restores the uplinks: closes the reaper's pipe and waits for it
    /// (up to 5 s; then it runs the cleanup itself).
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        drop(self.pipe.take());
        let Some(mut child) = self.reaper.take() else {
            return;
        };
        for _ in 0..500 {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        run_cleanup(&self.table);
    }
}

impl Drop for Nat {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

/// Runs [`CLEANUP`] for `table` now (no waiting).
fn run_cleanup(table: &str) {
    let _ = Command::new("sh")
        .args(["-c", CLEANUP, "mslink-nat-cleanup", table])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors; close-on-exec, so no command the emulator starts
    // inherits the write end (which would keep the reaper waiting after the emulator died).
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Whether the emulator that made a table (its pid and recorded start time) still runs.
fn owner_alive(pid: u32, start: Option<u64>) -> bool {
    let mut stat = String::new();
    match std::fs::File::open(format!("/proc/{pid}/stat")) {
        Ok(mut f) => {
            if f.read_to_string(&mut stat).is_err() {
                return false;
            }
        }
        Err(_) => return false,
    }
    // A table without a readable start time is kept while its pid lives.
    match (start, stat_start(&stat)) {
        (Some(s), Some(now)) => s == now,
        _ => true,
    }
}

/// Removes the `mslink_<pid>` tables of emulators that are gone from the calling thread's
/// namespace (with their uplinks' forwarding, as their reaper would have); returns their
/// names. Without `nft`, there is nothing to sweep.
pub fn sweep() -> Vec<String> {
    let Ok(list) = nft(&["list", "tables", "inet"], None) else {
        return Vec::new();
    };
    let own = own_identity().map(|(p, _)| p).ok();
    let mut removed = Vec::new();
    for t in parse_tables(&list) {
        let Some(pid) = table_pid(&t) else { continue };
        if Some(pid) == own {
            continue;
        }
        let start = nft(&["list", "table", "inet", &t], None)
            .ok()
            .and_then(|l| parse_start(&l));
        if owner_alive(pid, start) {
            continue;
        }
        run_cleanup(&t);
        removed.push(t);
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_round_trip_and_others_are_ignored() {
        assert_eq!(table_pid(&table_name(4242)), Some(4242));
        assert_eq!(table_pid("mslink_"), None);
        assert_eq!(table_pid("mslink_12x"), None);
        assert_eq!(table_pid("filter"), None);
        let listing =
            "table inet filter\ntable inet mslink_12\ntable inet mslink_x\ntable inet mslink_7\n";
        assert_eq!(parse_tables(listing), ["mslink_12", "mslink_7"]);
    }

    #[test]
    fn set_elements_and_comment_are_read_from_nft_listings() {
        let set = "table inet mslink_1 {\n\tset uplinks {\n\t\ttype ifname\n\t\telements = { \"lo\",\n\t\t\t     \"eth0\" }\n\t}\n}\n";
        assert_eq!(parse_elements(set), ["lo", "eth0"]);
        let empty = "table inet mslink_1 {\n\tset uplinks {\n\t\ttype ifname\n\t}\n}\n";
        assert!(parse_elements(empty).is_empty());
        let table = "table inet mslink_1 {\n\tcomment \"mslink emulate pid 1 start 98765\"\n\tset uplinks {\n";
        assert_eq!(parse_start(table), Some(98765));
        assert_eq!(parse_start("table inet mslink_1 {\n"), None);
    }

    #[test]
    fn uplinks_are_the_routed_devices_but_loopback_and_emulators_host_ends() {
        let route =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
eth0\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
msl77r\t01004064\t00000000\t0005\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n\
msl55r\t05004064\t00000000\t0005\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n\
msl9l\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0\n\
lo\t0000007F\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n";
        assert_eq!(route_devices(route, "msl77r"), ["eth0", "msl9l"]);
    }

    #[test]
    fn the_ruleset_matches_only_the_emulator_s_device_and_address() {
        let r = ruleset(
            "mslink_5",
            5,
            77,
            "msl5r",
            Ipv4Addr::new(100, 64, 0, 21),
            &["eth0".into()],
        );
        assert!(r.starts_with("table inet mslink_5 {"), "{r}");
        assert!(
            r.contains("comment \"mslink emulate pid 5 start 77\""),
            "{r}"
        );
        assert!(r.contains("elements = { \"eth0\" }"), "{r}");
        assert!(
            r.contains("iifname \"msl5r\" ip saddr 100.64.0.21 oifname != \"msl5r\" masquerade"),
            "{r}"
        );
        assert!(
            r.contains("iifname @uplinks oifname != \"msl*\" drop"),
            "{r}"
        );
        assert_eq!(parse_start(&r), Some(77));
        let none = ruleset("mslink_5", 5, 77, "msl5r", Ipv4Addr::LOCALHOST, &[]);
        assert!(none.contains("set uplinks { type ifname; }"), "{none}");
    }

    #[test]
    fn start_time_is_field_22_even_with_parentheses_in_the_name() {
        let stat =
            "123 (a) b (c)) S 1 123 123 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 4567 1000 10";
        assert_eq!(stat_start(stat), Some(4567));
        let own = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert!(stat_start(&own).is_some());
    }
}
