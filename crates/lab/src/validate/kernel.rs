//! The real side of `mslink validate`: the kernel's TCP, iperf3 between two network namespaces
//! joined by `mslink emulate`.
//!
//! Contract. For each (link, control, repetition), [`run`] writes the link file (the same rate,
//! one-way delay, data-direction error model and Raw service as the simulated side, the seed of
//! the repetition) and runs `mslink emulate --pair` with an iperf3 server on the right and a
//! client on the left sending for the run's length with `-C` the control. The client writes
//! iperf3's JSON document and, after it, the namespace's own `/proc/net/netstat` (a fresh
//! namespace's counters start at zero, so its `TCPTimeouts` are this transfer's). A transfer
//! that fails, or a document without results, is an error naming the link, control and
//! repetition and what iperf3 said. [`settings`] reads the kernel's TCP settings from inside an
//! emulated namespace, where the transfers run (per-namespace sysctls start at the kernel's
//! defaults, not the host's values).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::{Cc, Link, Options, Row, Side};

/// The sysctls recorded (net.ipv4.*).
const SYSCTLS: [&str; 10] = [
    "tcp_congestion_control",
    "tcp_sack",
    "tcp_timestamps",
    "tcp_recovery",
    "tcp_early_retrans",
    "tcp_rmem",
    "tcp_wmem",
    "tcp_adv_win_scale",
    "tcp_slow_start_after_idle",
    "tcp_ecn",
];

/// The kernel and its TCP settings as a namespace sees them.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSettings {
    /// `uname -r`.
    pub release: String,
    /// (net.ipv4 key, value) in [`SYSCTLS`] order.
    pub sysctls: Vec<(String, String)>,
}

impl KernelSettings {
    /// The settings as `real/sysctl.txt` holds them (the release, then `key=value` lines),
    /// which [`settings_in`] reads back.
    pub fn to_text(&self) -> String {
        let mut t = format!("{}\n", self.release);
        for (k, v) in &self.sysctls {
            t.push_str(&format!("{k}={v}\n"));
        }
        t
    }

    /// The buffer the simulator's sender and receiver get: half of `tcp_rmem`'s maximum, the
    /// window Linux can advertise from it (tcp_adv_win_scale 1).
    pub fn window_buffer_bytes(&self) -> u64 {
        self.sysctls
            .iter()
            .find(|(k, _)| k == "tcp_rmem")
            .and_then(|(_, v)| v.split_whitespace().nth(2)?.parse::<u64>().ok())
            .map_or(DEFAULT_WINDOW_BUFFER, |max| max / 2)
    }
}

/// Half of Linux's default `tcp_rmem` maximum (6 MiB): the buffer without a kernel to ask.
pub const DEFAULT_WINDOW_BUFFER: u64 = 6_291_456 / 2;

fn emulate(exe: &Path, link_file: Option<&Path>, left: &str, right: Option<&str>) -> Result<()> {
    let mut c = Command::new(exe);
    c.args(["emulate", "--pair", "-q", "--until", "left", "--left", left]);
    if let Some(r) = right {
        c.args(["--right", r]);
    }
    if let Some(f) = link_file {
        c.arg("--link").arg(f);
    }
    let out = c
        .output()
        .with_context(|| format!("running {}", exe.display()))?;
    if !out.status.success() {
        bail!(
            "`mslink emulate` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The kernel's release and TCP settings inside an emulated namespace.
pub fn settings(exe: &Path, work: &Path) -> Result<KernelSettings> {
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let file = work.join("sysctl.txt");
    let script = format!(
        "uname -r > {f}; for k in {keys}; do printf '%s=%s\\n' $k \"$(cat /proc/sys/net/ipv4/$k)\"; done >> {f}",
        f = file.display(),
        keys = SYSCTLS.join(" ")
    );
    emulate(exe, None, &script, None).context("reading the kernel's TCP settings")?;
    settings_in(work)
}

/// The kernel settings an earlier run recorded in `work/sysctl.txt`, or, where the real
/// side's files are not on this machine, in `kernel.txt` beside `work` (the report's copy).
pub fn settings_in(work: &Path) -> Result<KernelSettings> {
    let mut file = work.join("sysctl.txt");
    if !file.exists() {
        file = work.with_file_name(super::recorded::SETTINGS);
    }
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let mut lines = text.lines();
    let release = lines.next().unwrap_or("").trim().to_string();
    let sysctls = lines
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            (
                k.to_string(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    Ok(KernelSettings { release, sysctls })
}

/// The packets waiting for the link in each direction: the simulator's Raw service queues up to
/// `RawConfig::default().queue_limit` (1000) packets in front of the air; the emulator feeds
/// its link end one packet at a time from the queue in front of it (unlimited unless given),
/// so that queue gets the same limit.
pub const QUEUE_PACKETS: usize = 1000;

/// The emulator's link file for `link`, repetition `rep`.
pub fn link_file(link: &Link, rep: u32) -> String {
    format!(
        "# mslink validate: {label}\nrate_bps = {rate}\ndelay_ms = {delay:?}\nmtu = {mtu}\nqueue = \"droptail\"\nqueue_packets = {queue}\nseed = {seed}\nerror = {err}\nerror_reverse = {{ model = \"perfect\" }}\n\n[link]\nmtu = {mtu}\n\n[[link.service]]\nname = \"tcp\"\nscheme = \"raw\"\n",
        label = link.label(),
        rate = link.rate_bps,
        delay = link.rtt_ms / 2.0,
        seed = super::channel_seed(rep),
        err = link.loss.toml(),
        queue = QUEUE_PACKETS,
        mtu = super::MTU,
    )
}

/// A number at `path` (dotted keys) of a JSON document.
fn num(doc: &serde_json::Value, path: &str) -> Option<f64> {
    path.split('.')
        .try_fold(doc, |v, k| match k.parse::<usize>() {
            Ok(i) => v.get(i),
            Err(_) => v.get(k),
        })?
        .as_f64()
}

/// A `TcpExt` counter of a `/proc/net/netstat` text.
pub fn netstat(text: &str, name: &str) -> Option<f64> {
    let mut lines = text.lines();
    while let Some(head) = lines.next() {
        let values = lines.next()?;
        if !head.starts_with("TcpExt:") {
            continue;
        }
        let i = head.split_whitespace().position(|k| k == name)?;
        return values.split_whitespace().nth(i)?.parse().ok();
    }
    None
}

/// A row from iperf3's JSON document (`-J`) and the namespace's netstat after it: goodput,
/// retransmitted share, timeouts, and the median and 95th percentile of the SRTT read at the
/// end of each interval (ms; NaN when the document has no interval with an RTT).
pub fn row_of(doc: &serde_json::Value, netstat_text: &str) -> Result<(f64, f64, f64, [f64; 2])> {
    if let Some(e) = doc.get("error").and_then(|e| e.as_str()) {
        bail!("iperf3: {e}");
    }
    let goodput = num(doc, "end.sum_received.bits_per_second")
        .context("iperf3's document has no end.sum_received.bits_per_second")?;
    // Segments on the wire: what arrived plus what was sent again. iperf3's sent bytes are
    // what the application wrote, the unsent socket buffer included: at low goodput that is
    // several times what crossed the link and hides the retransmissions.
    let bytes = num(doc, "end.sum_received.bytes").context("no end.sum_received.bytes")?;
    let retx = num(doc, "end.sum_sent.retransmits").context("no end.sum_sent.retransmits")?;
    let mss = num(doc, "start.tcp_mss_default").unwrap_or(1448.0);
    let segments = (bytes / mss).ceil() + retx;
    let timeouts = netstat(netstat_text, "TCPTimeouts").unwrap_or(f64::NAN);
    // The sender's `tcpi_rtt` (µs) at the end of each interval; 0 before its first sample.
    let mut srtt: Vec<f64> = doc
        .get("intervals")
        .and_then(|i| i.as_array())
        .into_iter()
        .flatten()
        .filter_map(|i| i.pointer("/streams/0/rtt")?.as_f64())
        .filter(|&us| us > 0.0)
        .map(|us| us / 1000.0)
        .collect();
    srtt.sort_by(f64::total_cmp);
    let p = |q| mslink_stats::percentile(&srtt, q);
    Ok((
        goodput,
        retx / segments.max(1.0),
        timeouts,
        [p(0.5), p(0.95)],
    ))
}

/// Every real transfer of `o`, one after the other, in (link, control, repetition) order.
/// With `o.resume`, a transfer whose files an earlier run left complete in `o.work` (its link
/// file the one `o` would write, its iperf3 document whole and `o.seconds` long) is kept, not
/// measured again: a killed run goes on where it stopped, and a larger `reps` adds only the new
/// repetitions.
pub fn run(o: &Options, exe: &Path, progress: &dyn crate::reproduce::Progress) -> Result<Vec<Row>> {
    std::fs::create_dir_all(&o.work).with_context(|| format!("creating {}", o.work.display()))?;
    let mut rows = Vec::new();
    let points = o.points();
    progress.phase(points.len() as u64 * o.reps as u64, "real transfers");
    for (li, cc) in points {
        let link = &o.links[li];
        for rep in 0..o.reps {
            let what = || {
                format!(
                    "the kernel's TCP over {} with {}, repetition {rep}",
                    link.label(),
                    cc.name()
                )
            };
            // A document a killed transfer left empty or cut short is measured again.
            let kept = if o.resume && same_link_file(o, li, link, cc, rep).with_context(what)? {
                earlier_row(o, li, cc, rep).ok()
            } else {
                None
            };
            let r = match kept {
                Some(r) => r,
                None => transfer(o, exe, li, link, cc, rep).with_context(what)?,
            };
            rows.push(r);
            progress.tick();
        }
    }
    progress.done();
    Ok(rows)
}

/// The real side of `o` from the files an earlier run left in `o.work` (`--reuse-real`):
/// every transfer's link file must be the one `o` would write, and its iperf3 document must
/// be `o.seconds` long, so the rows are the same measurements a new run of `o` would repeat.
///
/// Where a transfer's files are not in `o.work` (another machine: they are git-ignored), its
/// row comes from the earlier run's `runs.csv` beside `o.work` (`recorded.rs`), which holds the
/// same numbers.
pub fn reuse(o: &Options) -> Result<Vec<Row>> {
    let csv = o.work.with_file_name("runs.csv");
    let mut recorded = None;
    let mut rows = Vec::new();
    for (li, cc) in o.points() {
        for rep in 0..o.reps {
            if same_link_file(o, li, &o.links[li], cc, rep)? {
                rows.push(earlier_row(o, li, cc, rep)?);
                continue;
            }
            if recorded.is_none() && csv.exists() {
                recorded = Some(super::recorded::rows(o, &csv)?);
            }
            match recorded.as_ref().and_then(|r| r.get(&(li, cc, rep))) {
                Some(row) => rows.push(row.clone()),
                None => bail!(
                    "neither {} nor a row of {} for {} with {}, repetition {rep} (--reuse-real needs an earlier run with the same grid, --cc, --reps and --seconds)",
                    stem(o, li, cc, rep).with_extension("toml").display(),
                    csv.display(),
                    o.links[li].label(),
                    cc.name()
                ),
            }
        }
    }
    Ok(rows)
}

/// Whether an earlier run left the link file of (`li`, `cc`, `rep`) in `o.work`: false when
/// it is absent, an error when it describes another link than `link` (another grid's files).
fn same_link_file(o: &Options, li: usize, link: &Link, cc: Cc, rep: u32) -> Result<bool> {
    let lf = stem(o, li, cc, rep).with_extension("toml");
    let had = match std::fs::read_to_string(&lf) {
        Ok(had) => had,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("reading {}", lf.display())),
    };
    if had != link_file(link, rep) {
        bail!(
            "{} describes another link than {} (repetition {rep}): the earlier run had another grid; give another --out",
            lf.display(),
            link.label()
        );
    }
    Ok(true)
}

/// The row of an earlier transfer of (`li`, `cc`, `rep`) from its files in `o.work`; an error
/// when its iperf3 document is missing, unreadable or not `o.seconds` long.
fn earlier_row(o: &Options, li: usize, cc: Cc, rep: u32) -> Result<Row> {
    let stem = stem(o, li, cc, rep);
    let json = stem.with_extension("json");
    let doc = read_doc(&json)?;
    let secs = num(&doc, "start.test_start.duration").unwrap_or(f64::NAN);
    if secs != o.seconds {
        bail!(
            "{} is a {secs} s transfer, not {} s: give the earlier run's --seconds",
            json.display(),
            o.seconds
        );
    }
    row_from_doc(&doc, &stem, li, cc, rep)
}

fn stem(o: &Options, li: usize, cc: Cc, rep: u32) -> PathBuf {
    o.work.join(format!("link{li}-{}-rep{rep}", cc.name()))
}

fn read_doc(json: &Path) -> Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(json).with_context(|| format!("reading {}", json.display()))?;
    serde_json::from_str(&text).with_context(|| format!("iperf3's document {}", json.display()))
}

/// The row of one transfer from its iperf3 document and netstat snapshot.
fn row_from_files(stem: &Path, li: usize, cc: Cc, rep: u32) -> Result<Row> {
    row_from_doc(&read_doc(&stem.with_extension("json"))?, stem, li, cc, rep)
}

/// The row of one transfer from its iperf3 document `doc` and the netstat snapshot beside it.
fn row_from_doc(doc: &serde_json::Value, stem: &Path, li: usize, cc: Cc, rep: u32) -> Result<Row> {
    let nstext = std::fs::read_to_string(stem.with_extension("netstat")).unwrap_or_default();
    let (goodput_bps, retrans_rate, timeouts, [srtt_p50_ms, srtt_p95_ms]) = row_of(doc, &nstext)?;
    Ok(Row {
        link: li,
        cc,
        side: Side::Real,
        rep,
        goodput_bps,
        retrans_rate,
        timeouts,
        srtt_p50_ms,
        srtt_p95_ms,
    })
}

fn transfer(o: &Options, exe: &Path, li: usize, link: &Link, cc: Cc, rep: u32) -> Result<Row> {
    let stem = stem(o, li, cc, rep);
    let lf = stem.with_extension("toml");
    std::fs::write(&lf, link_file(link, rep))
        .with_context(|| format!("writing {}", lf.display()))?;
    let (json, ns) = (stem.with_extension("json"), stem.with_extension("netstat"));
    let left = format!(
        "sleep 0.5; iperf3 -c $MSLINK_RIGHT -t {secs} -i 0.1 -C {cc} -J > {json}; cat /proc/net/netstat > {ns}",
        secs = o.seconds,
        cc = cc.name(),
        json = json.display(),
        ns = ns.display()
    );
    emulate(exe, Some(&lf), &left, Some("iperf3 -s -1"))?;
    row_from_files(&stem, li, cc, rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_iperf3_document_and_netstat_make_a_row() {
        // Readings of 0 (before the first RTT sample) are none; of the four others (20, 21,
        // 25, 90 ms) ranks floor(0.5 * 3) = 1 and floor(0.95 * 3) = 2.
        let intervals = [0, 21000, 25000, 20000, 90000]
            .map(|rtt| serde_json::json!({"streams": [{"rtt": rtt}]}));
        let doc: serde_json::Value = serde_json::json!({
            "start": {"tcp_mss_default": 1448},
            "end": {
                "sum_sent": {"bytes": 29000000.0, "retransmits": 100},
                "sum_received": {"bytes": 14480000.0, "bits_per_second": 5.6e6},
                "streams": [{"sender": {"mean_rtt": 25000}}]
            },
            "intervals": intervals,
        });
        let ns = "TcpExt: SyncookiesSent TCPTimeouts X\nTcpExt: 0 3 9\nIpExt: A\nIpExt: 1\n";
        let (g, r, t, srtt) = row_of(&doc, ns).unwrap();
        assert_eq!((g, t, srtt), (5.6e6, 3.0, [21.0, 25.0]));
        assert!((r - 100.0 / 10_100.0).abs() < 1e-12);
        let err = row_of(&serde_json::json!({"error": "unable to connect"}), "").unwrap_err();
        assert!(err.to_string().contains("unable to connect"));
    }

    /// What `--resume` keeps and what `--reuse-real` refuses: a transfer is kept only when
    /// its link file is this grid's and its document is whole and of this length; a document
    /// a killed transfer left empty is measured again; another grid's files are an error.
    #[test]
    fn an_earlier_transfer_is_kept_only_when_its_files_are_whole_and_of_this_grid() {
        let dir = crate::scratch("kernel-earlier");
        std::fs::create_dir_all(dir.join("real")).unwrap();
        let link = Link {
            rate_bps: 1e6,
            rtt_ms: 10.0,
            loss: super::super::Loss::Independent(0.0),
        };
        let o = Options::for_test(vec![link], vec![Cc::Reno], 10.0, dir.join("real"));
        let st = stem(&o, 0, Cc::Reno, 0);
        // Nothing yet: not kept, and --reuse-real names the missing file and row.
        assert!(!same_link_file(&o, 0, &link, Cc::Reno, 0).unwrap());
        let e = reuse(&o).unwrap_err().to_string();
        assert!(e.contains("link0-reno-rep0.toml nor a row of"), "{e}");
        // A runs.csv beside the folder stands in for the files (another machine's clone).
        let csv = "rate_bps,rtt_ms,loss,burst_frames,cc,side,rep,seconds,goodput_bps,retrans_rate,timeouts,srtt_p50_ms,srtt_p95_ms\n1000000,10,0,1,reno,real,0,10,950000.5,0,0,12.5,14\n";
        std::fs::write(dir.join("runs.csv"), csv).unwrap();
        let rows = reuse(&o).unwrap();
        assert_eq!((rows.len(), rows[0].goodput_bps), (1, 950000.5));
        std::fs::remove_file(dir.join("runs.csv")).unwrap();
        // A killed transfer: the link file written, the document empty.
        std::fs::write(st.with_extension("toml"), link_file(&link, 0)).unwrap();
        std::fs::write(st.with_extension("json"), "").unwrap();
        assert!(same_link_file(&o, 0, &link, Cc::Reno, 0).unwrap());
        assert!(earlier_row(&o, 0, Cc::Reno, 0).is_err());
        // A whole document of another length is not this run's.
        let doc = |secs: f64| {
            serde_json::json!({
                "start": {"tcp_mss_default": 1448, "test_start": {"duration": secs}},
                "end": {
                    "sum_sent": {"bytes": 1.2e6, "retransmits": 0},
                    "sum_received": {"bytes": 1.2e6, "bits_per_second": 0.96e6},
                },
                "intervals": [{"streams": [{"rtt": 20000}]}],
            })
            .to_string()
        };
        std::fs::write(st.with_extension("json"), doc(20.0)).unwrap();
        let e = earlier_row(&o, 0, Cc::Reno, 0).unwrap_err().to_string();
        assert!(e.contains("not 10 s"), "{e}");
        // A whole document of this length is kept.
        std::fs::write(st.with_extension("json"), doc(10.0)).unwrap();
        let rows = reuse(&o).unwrap();
        assert_eq!((rows.len(), rows[0].goodput_bps), (1, 0.96e6));
        // Another grid's link file in the folder is an error, not a transfer to redo.
        let other = Link {
            rate_bps: 10e6,
            ..link
        };
        let e = same_link_file(&o, 0, &other, Cc::Reno, 0).unwrap_err();
        assert!(e.to_string().contains("another link"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_link_file_is_one_the_emulator_reads() {
        let f = link_file(
            &Link {
                rate_bps: 1e6,
                rtt_ms: 200.0,
                loss: super::super::Loss::Independent(0.005),
            },
            2,
        );
        let t: toml::Table = toml::from_str(&f).unwrap();
        assert_eq!(t["delay_ms"].as_float(), Some(100.0));
        assert_eq!(t["seed"].as_integer(), Some(3));
        assert_eq!(t["error"]["loss"].as_float(), Some(0.005));
        assert_eq!(t["error_reverse"]["model"].as_str(), Some("perfect"));
        assert_eq!(
            t["queue_packets"].as_integer(),
            Some(mslink_link::service::raw::RawConfig::default().queue_limit as i64)
        );
    }
}
