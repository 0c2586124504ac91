//! Helpers shared by the `mslink emulate` tests (`emulate.rs`, `emulate_soak.rs`): the root
//! check, scratch directories holding the traffic script (`emulate/traffic.py`), and runs of
//! the emulator that check what every run must satisfy: exit status 0, no device left behind,
//! every packet accounted for (in = delivered + every drop cause + in flight, per direction)
//! and no packet dropped by the kernel at a TUN device. Runs also record the emulator's
//! resident memory over time and are stopped (and fail) if they hang. Linux only.
#![allow(dead_code)] // each test file uses its own subset

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn mslink() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mslink"))
}

/// True (with a note on stderr) when a test that needs namespaces cannot run because this is
/// not root; with `MSLINK_REQUIRE_ROOT=1` (as CI sets) the missing privilege is a failure.
pub fn skip_without_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() == 0 };
    assert!(
        root || std::env::var("MSLINK_REQUIRE_ROOT").as_deref() != Ok("1"),
        "MSLINK_REQUIRE_ROOT=1 but not running as root: the emulator tests need it"
    );
    if !root {
        eprintln!("skipped: needs root for network namespaces");
    }
    !root
}

/// A scratch directory holding the traffic script, removed when dropped (also when a test
/// fails and unwinds).
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("mslink-emu-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emulate/traffic.py"),
        d.join("traffic.py"),
    )
    .unwrap();
    Scratch(d)
}

/// Devices in the caller's namespace whose name starts with `prefix`.
pub fn devices(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/sys/class/net")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// One reading of the emulator's resident set: seconds since it was started, VmRSS in KiB.
#[derive(Clone, Copy, Debug)]
pub struct RssSample {
    pub t_s: f64,
    pub kib: u64,
}

/// How often `emulate_sampled` reads the emulator's VmRSS.
pub const RSS_EVERY: Duration = Duration::from_millis(500);

/// VmRSS of process `pid` in KiB (None once it has exited).
fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `mslink emulate ARGS --json FILE` in `dir`; checks the exit status, the accounting and
/// the cleanup; returns the JSON summary.
pub fn emulate(dir: &Path, args: &[&str]) -> Value {
    emulate_sampled(dir, args, Duration::from_secs(120)).0
}

/// `emulate`, also reading the emulator's VmRSS every `RSS_EVERY` while it runs. A run still
/// going after `limit` (a hang: a stalled transfer never ends) is stopped with SIGTERM, which
/// makes the emulator write its summary and exit, and the test fails.
pub fn emulate_sampled(dir: &Path, args: &[&str], limit: Duration) -> (Value, Vec<RssSample>) {
    let json = dir.join("summary.json");
    let start = Instant::now();
    let mut child = mslink()
        .arg("emulate")
        .args(args)
        .arg("--json")
        .arg(&json)
        .current_dir(dir)
        .stdout(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut rss = Vec::new();
    let mut next_sample = start;
    // Read /proc/PID only while `try_wait` says the child is still ours (not yet reaped), so
    // the PID cannot belong to another process.
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        let now = Instant::now();
        if now >= next_sample {
            if let Some(kib) = vm_rss_kib(pid) {
                rss.push(RssSample {
                    t_s: (now - start).as_secs_f64(),
                    kib,
                });
            }
            next_sample += RSS_EVERY;
        }
        if now - start > limit {
            // SAFETY: kill(2) on our own, not yet reaped, child.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
            let s = child.wait().unwrap();
            panic!("mslink emulate {args:?} still running after {limit:?} (stopped: {s:?})");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "mslink emulate {args:?}: {status:?}");
    assert!(
        devices(&format!("msl{pid}")).is_empty(),
        "devices left behind"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    check_accounting(&v);
    (v, rss)
}

/// in = delivered + every drop cause + in flight, in each direction, computed here.
pub fn check_accounting(v: &Value) {
    for dir in ["left_to_right", "right_to_left"] {
        let p = &v[dir]["packets"];
        let n = |k: &str| p[k].as_u64().unwrap_or_else(|| panic!("{dir}.{k} missing"));
        let sum = n("delivered")
            + n("refused_malformed")
            + n("refused_too_large")
            + n("dropped_queue")
            + n("dropped_service_queue")
            + n("dropped_outage")
            + n("lost_channel")
            + n("abandoned")
            + n("write_failed")
            + n("in_flight");
        assert_eq!(n("received"), sum, "{dir}: {p}");
        assert_eq!(v[dir]["balanced"], Value::Bool(true));
    }
    // The kernel never dropped a packet at a TUN device: the emulator read everything.
    for side in ["left", "right"] {
        if let Some(d) = v["devices"].get(side) {
            assert_eq!(d["tx_dropped"], 0, "{side}: {d}");
            assert_eq!(d["rx_dropped"], 0, "{side}: {d}");
        }
    }
}

/// A TCP transfer through the emulator (`tcp_transfer`).
pub struct TcpRun {
    /// Payload bytes, the same count and SHA-256 at both ends (checked).
    pub bytes: u64,
    /// The receiver's arrival timeline: (monotonic seconds, bytes so far), starting with
    /// (connection set-up, 0); at most one mark per 10 ms, the last arrival always marked.
    pub marks: Vec<(f64, u64)>,
    pub summary: Value,
    pub rss: Vec<RssSample>,
}

/// A TCP transfer (CUBIC) of `seconds` from right to left over a link described by `link`
/// (emulator options); checks that the receiver got exactly the bytes the sender sent (count
/// and SHA-256) besides what `emulate` checks. Fails if the run lasts over 2 × `seconds` + 60 s.
pub fn tcp_transfer(dir: &Path, link: &[&str], seconds: f64) -> TcpRun {
    let client =
        format!("python3 traffic.py tcp-client $MSLINK_LEFT 7000 {seconds} sent.txt cubic");
    let args = [
        link,
        &[
            "--pair",
            "--until",
            "both",
            "--left",
            "python3 traffic.py tcp-server 7000 recv.txt",
            "--right",
            &client,
        ],
    ]
    .concat();
    let (summary, rss) = emulate_sampled(dir, &args, Duration::from_secs_f64(2.0 * seconds + 60.0));
    let recv = std::fs::read_to_string(dir.join("recv.txt")).unwrap();
    let sent = std::fs::read_to_string(dir.join("sent.txt")).unwrap();
    let first = |s: &str| s.lines().next().unwrap().to_string();
    assert_eq!(first(&recv), first(&sent), "payload differs");
    let bytes: u64 = first(&recv).split(' ').next().unwrap().parse().unwrap();
    let marks = recv
        .lines()
        .skip(1)
        .map(|l| {
            let (t, b) = l.split_once(' ').unwrap();
            (t.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    TcpRun {
        bytes,
        marks,
        summary,
        rss,
    }
}

/// The `key value` lines a traffic.py UDP sender or receiver wrote (`sent`, `distinct`,
/// `read`, `max_seq`, and its namespace's kernel counters as `Udp.InErrors` and the like).
pub fn read_counters(path: &Path) -> std::collections::BTreeMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l
                .split_once(' ')
                .unwrap_or_else(|| panic!("{}: {l:?}", path.display()));
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

/// A scratch directory with `inet.py` (TCP and UDP of either address family) in it.
pub fn scratch_inet(name: &str) -> Scratch {
    let d = scratch(name);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emulate/inet.py"),
        d.join("inet.py"),
    )
    .unwrap();
    d
}

/// Reads the standard error (piped) of an emulator `child` up to its "ready" line, failing the
/// test if it exits first; returns the reader, which the caller keeps for as long as the
/// emulator may still write (dropping it closes the pipe).
pub fn wait_ready(child: &mut Child) -> BufReader<ChildStderr> {
    let mut err = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "emulator exited early"
        );
    }
    err
}

/// A Selective Repeat link tuned for the emulator tests (window 256, 40 ms timeout, NACKs
/// every 20 ms).
pub const SR: &[&str] = &[
    "--scheme",
    "selective_repeat",
    "--set",
    "link.service.0.window=256",
    "--set",
    "link.service.0.timeout_ms=40",
    "--set",
    "link.service.0.nack_interval_ms=20",
];

/// Every result file of an `mslink sim` folder (top level and plots/) with its bytes, in name
/// order, but timing.json and progress.json (wall time and pid): what must be byte-identical
/// between two invocations of the same runs.
pub fn result_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for sub in ["", "plots"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_file() && name != "timing.json" && name != "progress.json" {
                out.push((format!("{sub}/{name}"), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}
