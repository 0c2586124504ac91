//! The simulator's TCP against the kernel's on the same link: `mslink validate`.
//!
//! Contract. A [`Grid`] is a list of [`Link`]s (rate, round-trip time, loss of data frames) and
//! congestion controls ([`Cc`]). For every link and control (or the points `only` names,
//! [`Options::points`], which keep the grid's indices), [`run`] makes `reps` transfers of
//! `seconds` each (`sim_reps` in the simulator) two ways: in the simulator, with the Linux-like sender of
//! `scenarios/tcp/linux_like.toml` over one wireless segment of that link (a Raw service, data
//! frames lost by the error model, ACKs not); and for real, with iperf3 between two network
//! namespaces joined by `mslink emulate` configured with the same link (the kernel's TCP with
//! its own settings, recorded from inside the namespace). Repetition `r` of both sides draws
//! its errors from [`channel_seed`]`(r)`: the two meet the same losses (common random numbers).
//! What the simulator is given to match the kernel is [`matched`]'s list; every run's numbers
//! go to [`Row`]s in (link, control, side, repetition) order and [`report`] turns them into a
//! table of goodput and retransmission rate side by side, with the sim/real ratio over the
//! pairs of repetitions and its 95% interval (`mslink_stats::paired_ratio`), and the ratio
//! over all transfers as independent samples beside it (`mslink_stats::ratio`).
//!
//! The real side needs root, iperf3 and the `mslink` executable it is given (`resume` keeps
//! the transfers an earlier run left complete in `work`; `reuse_real` takes them all from
//! there, without root, or from the earlier `runs.csv` and `kernel.txt` beside `work` where
//! `work` is not on this machine: `recorded.rs`); the simulated side
//! runs in this process on `jobs` threads and is deterministic. Nothing here prints: progress
//! and notes go through [`crate::reproduce::Progress`].

mod kernel;
mod recorded;
mod report;
mod sim;

use std::path::PathBuf;

use anyhow::{bail, Result};

pub use kernel::KernelSettings;
pub use report::{report, Summary, Written};

/// The channel seed of repetition `rep`, on both sides: the emulator's link file carries it,
/// and the simulated transfer of that repetition runs with it as its scenario seed (repetition
/// 0 of a run is seeded as written: `mslink_channel::streams::rep_seed`). The two draw their
/// errors from the same streams (`mslink_channel::streams::stream`, shared by the simulator and
/// the emulator), so repetition `rep` loses the same frames, in order, on both sides: the pair
/// differs only by what each TCP makes of them (common random numbers).
pub fn channel_seed(rep: u32) -> u64 {
    u64::from(rep) + 1
}

/// The IP MTU of the link on both sides, bytes: `scenarios/tcp/linux_like.toml`'s, which the
/// emulator's link file repeats (a test in `sim.rs` holds the two together).
pub const MTU: u32 = 1500;

/// Loss of data frames on the link (ACKs cross a perfect channel, as in the ns-3 benchmark and
/// `linux_like.toml`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Loss {
    /// Independent frame loss with this probability (0 for none).
    Independent(f64),
    /// Gilbert-Elliott bursts with this average loss and mean burst length in frames
    /// (docs/traces.md).
    Bursty {
        /// Long-run share of frames lost.
        loss: f64,
        /// Mean run of lost frames.
        burst_frames: f64,
    },
}

impl Loss {
    /// The error model as an inline TOML table, the same for the simulator and the emulator.
    pub fn toml(&self) -> String {
        match *self {
            Loss::Independent(0.0) => "{ model = \"perfect\" }".into(),
            Loss::Independent(p) => format!("{{ model = \"independent\", loss = {p} }}"),
            Loss::Bursty { loss, burst_frames } => format!(
                "{{ model = \"gilbert_elliott\", loss = {loss}, burst_frames = {burst_frames} }}"
            ),
        }
    }
    /// runs.csv's `loss` and `burst_frames` columns: the long-run share lost and the mean
    /// run of lost frames (1 for independent loss).
    pub fn columns(&self) -> (f64, f64) {
        match *self {
            Loss::Independent(p) => (p, 1.0),
            Loss::Bursty { loss, burst_frames } => (loss, burst_frames),
        }
    }
    /// A short label: `0`, `1%`, `2% bursts of 4`.
    pub fn label(&self) -> String {
        match *self {
            Loss::Independent(0.0) => "0".into(),
            Loss::Independent(p) => format!("{}%", p * 100.0),
            Loss::Bursty { loss, burst_frames } => {
                format!("{}% bursts of {burst_frames}", loss * 100.0)
            }
        }
    }
}

/// One link of the grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    /// Bit rate of each direction, bit/s.
    pub rate_bps: f64,
    /// Round-trip propagation time, ms (one way is half of it).
    pub rtt_ms: f64,
    /// Loss of data frames.
    pub loss: Loss,
}

impl Link {
    /// `10 Mbit/s, 20 ms, 1%`.
    pub fn label(&self) -> String {
        format!(
            "{} Mbit/s, {} ms, {}",
            self.rate_bps / 1e6,
            self.rtt_ms,
            self.loss.label()
        )
    }
}

/// A congestion control both sides run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cc {
    /// RFC 5681 AIMD (Linux's `reno`).
    Reno,
    /// RFC 9438 CUBIC (Linux's default, `cubic`).
    Cubic,
}

impl Cc {
    /// The name both the simulator's `congestion_control` and iperf3's `-C` take.
    pub fn name(self) -> &'static str {
        match self {
            Cc::Reno => "reno",
            Cc::Cubic => "cubic",
        }
    }
    /// Parses `reno` or `cubic`.
    pub fn parse(s: &str) -> Result<Cc> {
        match s {
            "reno" => Ok(Cc::Reno),
            "cubic" => Ok(Cc::Cubic),
            _ => bail!("unknown congestion control {s:?}: expected reno or cubic"),
        }
    }
}

/// The links to compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grid {
    /// One held-out link (10 Mbit/s, 20 ms, 1%): what `./dev test` runs.
    Quick,
    /// Rates 1, 10, 100 Mbit/s x RTT 10, 50, 200 ms x loss 0, 0.5%, 2% independent and 2% in
    /// bursts of 4 frames (36 links).
    Full,
}

impl Grid {
    /// The grid's links, in the order they run and are reported.
    pub fn links(self) -> Vec<Link> {
        match self {
            Grid::Quick => vec![Link {
                rate_bps: 10e6,
                rtt_ms: 20.0,
                loss: Loss::Independent(0.01),
            }],
            Grid::Full => {
                let losses = [
                    Loss::Independent(0.0),
                    Loss::Independent(0.005),
                    Loss::Independent(0.02),
                    Loss::Bursty {
                        loss: 0.02,
                        burst_frames: 4.0,
                    },
                ];
                let mut out = Vec::new();
                for rate_bps in [1e6, 10e6, 100e6] {
                    for rtt_ms in [10.0, 50.0, 200.0] {
                        for loss in losses {
                            out.push(Link {
                                rate_bps,
                                rtt_ms,
                                loss,
                            });
                        }
                    }
                }
                out
            }
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The links.
    pub links: Vec<Link>,
    /// The congestion controls.
    pub ccs: Vec<Cc>,
    /// Transfers per link and control on the real side (and on the simulated side unless
    /// `sim_reps` says more).
    pub reps: u32,
    /// Transfers per link and control in the simulator: at least `reps`. A simulated transfer
    /// costs milliseconds and a kernel one seconds, so the simulator's mean can be pinned down
    /// by more of them; the ratio's interval then narrows by the simulator's share of the
    /// spread (its degrees of freedom stay the smaller side's).
    pub sim_reps: u32,
    /// Length of each transfer, seconds.
    pub seconds: f64,
    /// Threads for the simulated side.
    pub jobs: usize,
    /// The `mslink` executable that runs `mslink emulate` (None: the simulated side only).
    pub exe: Option<PathBuf>,
    /// Folder for the real side's iperf3 documents and link files.
    pub work: PathBuf,
    /// Take the real side from an earlier run's files in `work` instead of measuring it
    /// (`exe` is then unused): re-checks the simulator after a change, without root.
    pub reuse_real: bool,
    /// Measure only the real transfers whose files are not already complete in `work` (a
    /// killed run resumed, or more repetitions added to an earlier run's).
    pub resume: bool,
    /// Only these (index into `links`, control) points, in the grid's order (None: every link
    /// with every control of `ccs`). The indices stay the grid's, and so do the real side's
    /// file names: a run of a few points resumes from, or adds repetitions to, a whole grid's
    /// transfers (`--only`).
    pub only: Option<Vec<(usize, Cc)>>,
}

#[cfg(test)]
impl Options {
    /// One transfer per side for each point of `links` with `ccs`, `seconds` long, on one
    /// thread, the real side taken from `work` (`--reuse-real`): what the tests start from.
    pub(crate) fn for_test(links: Vec<Link>, ccs: Vec<Cc>, seconds: f64, work: PathBuf) -> Options {
        Options {
            links,
            ccs,
            reps: 1,
            sim_reps: 1,
            seconds,
            jobs: 1,
            exe: None,
            work,
            reuse_real: true,
            resume: false,
            only: None,
        }
    }
}

impl Options {
    /// The (index into `links`, control) points to run, in (link, control) order.
    pub fn points(&self) -> Vec<(usize, Cc)> {
        let mut all = Vec::new();
        for li in 0..self.links.len() {
            for &cc in &self.ccs {
                if self.only.as_ref().is_none_or(|o| o.contains(&(li, cc))) {
                    all.push((li, cc));
                }
            }
        }
        all
    }
}

/// The points `spec` names among `links` and `ccs`: `LINK` (every control of `ccs`) or
/// `LINK: CC`, where `LINK` is a link's label as the report prints it (`10 Mbit/s, 200 ms, 2%
/// bursts of 4`). An error names the spec and lists the labels when no link has it, or when
/// its control is not one of `ccs`.
pub fn parse_point(links: &[Link], ccs: &[Cc], spec: &str) -> Result<Vec<(usize, Cc)>> {
    let (label, cc) = match spec.rsplit_once(':') {
        Some((l, c)) => (l.trim(), Some(Cc::parse(c.trim())?)),
        None => (spec.trim(), None),
    };
    let Some(li) = links.iter().position(|l| l.label() == label) else {
        let names: Vec<String> = links.iter().map(|l| format!("  {}", l.label())).collect();
        bail!(
            "no link of the grid is {label:?}; its links are:\n{}",
            names.join("\n")
        );
    };
    match cc {
        Some(cc) if !ccs.contains(&cc) => {
            bail!("{spec:?} names {}, which --cc does not run", cc.name())
        }
        Some(cc) => Ok(vec![(li, cc)]),
        None => Ok(ccs.iter().map(|&cc| (li, cc)).collect()),
    }
}

/// Which side a row comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    /// `mslink_sim`, Linux-like settings.
    Sim,
    /// The kernel's TCP through `mslink emulate`.
    Real,
}

impl Side {
    /// `sim` or `real`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Sim => "sim",
            Side::Real => "real",
        }
    }
}

/// One transfer.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Index into [`Options::links`].
    pub link: usize,
    /// Congestion control.
    pub cc: Cc,
    /// Simulated or real.
    pub side: Side,
    /// Repetition (the simulator's seed).
    pub rep: u32,
    /// Bytes delivered to the receiving application per second, bit/s.
    pub goodput_bps: f64,
    /// Retransmitted segments over segments sent.
    pub retrans_rate: f64,
    /// Retransmission timeouts (the simulator's count; the kernel's is not in iperf3's
    /// document: NaN).
    pub timeouts: f64,
    /// Median of the sender's smoothed RTT read every 100 ms, ms: the kernel's `tcpi_rtt` at
    /// the end of each of iperf3's 0.1-s intervals, the simulator's SRTT at the same ticks.
    pub srtt_p50_ms: f64,
    /// 95th percentile of the same readings, ms.
    pub srtt_p95_ms: f64,
}

/// What the simulator is given to match the kernel, and how: printed above the table.
pub fn matched() -> &'static [(&'static str, &'static str)] {
    &[
        (
            "sender",
            "scenarios/tcp/linux_like.toml: SACK, RACK-TLP, PRR, limited transmit, byte counting (RFC 3465, as tcp_cong_avoid_ai), Reno's reduction on whole segments rounded down (reno_flavour = \"linux\", as tcp_reno_ssthresh), CUBIC as tcp_cubic.c grows it, with its HyStart slow-start exit and its reduction on whole segments rounded down (cubic_flavour = \"linux\"), the kernel's retransmission timer (rto_flavour = \"linux\": SRTT + max(4 mdev, 200 ms), an RTT sample from every ACK, restarted when the first unacknowledged segment is retransmitted), timestamps, handshake, IW 10, 1 ms timers, MSS 1448",
        ),
        (
            "receiver",
            "delayed ACKs every second segment or after 40 ms (TCP_DELACK_MIN); Linux's quick-ACK mode at the start is not modelled",
        ),
        (
            "buffers",
            "both set to half of the kernel's tcp_rmem maximum (the window Linux can advertise from it at tcp_adv_win_scale 1); Linux autotunes up to it, the simulator starts there",
        ),
        (
            "link",
            "the same rate, one-way delay (RTT/2) and error model, one Raw service, 1500-byte MTU, frames lost in the data direction only, 1000 packets of drop-tail queue in front of the air (the Raw service's queue in the simulator, the emulator's queue_packets)",
        ),
        (
            "measurement",
            "goodput as iperf3's receiver counts it: the bytes read in order until iperf3's end-of-test message, sent when the client's --seconds are over, has queued through the link behind the data (20 s for a 10-s transfer at 1 Mbit/s with the queue full); the simulator counts its bytes until the first segment sent after --seconds arrives (the flow's stop_s), and both sides' retransmissions and SRTT readings are those of the first --seconds (the kernel's timeouts come from the namespace's netstat after iperf3 exits)",
        ),
        (
            "not matched",
            "receive-buffer autotuning (the kernel's window grows with what the application reads; the simulator's is the maximum from the start, so Reno, which has no HyStart, fills a slow link's queue deeper in slow start), pacing (off for CUBIC and Reno without fq), TSO/GSO bursts, RTT-adaptive delayed ACKs, DSACK and F-RTO undo of spurious reductions",
        ),
    ]
}

/// Runs every transfer of `o`: the simulated side first (all links, in parallel), then the
/// real side one transfer at a time. Returns the rows and the kernel settings seen.
pub fn run(
    o: &Options,
    progress: &dyn crate::reproduce::Progress,
) -> Result<(Vec<Row>, Option<KernelSettings>)> {
    if o.reps == 0 || o.sim_reps < o.reps || o.seconds <= 0.0 {
        bail!("validate needs at least one repetition, as many simulated as real, and a positive length");
    }
    let settings = match &o.exe {
        _ if o.reuse_real => Some(kernel::settings_in(&o.work)?),
        Some(exe) => Some(kernel::settings(exe, &o.work)?),
        None => None,
    };
    let buffer = settings
        .as_ref()
        .map_or(kernel::DEFAULT_WINDOW_BUFFER, |s| s.window_buffer_bytes());
    let mut rows = sim::run(o, buffer, progress)?;
    if o.reuse_real {
        rows.extend(kernel::reuse(o)?);
    } else if let Some(exe) = &o.exe {
        rows.extend(kernel::run(o, exe, progress)?);
    }
    rows.sort_by(|a, b| {
        (a.link, a.cc, a.side, a.rep)
            .partial_cmp(&(b.link, b.cc, b.side, b.rep))
            .expect("keys are ordered")
    });
    Ok((rows, settings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_grid_has_every_rate_rtt_and_loss_once() {
        let links = Grid::Full.links();
        assert_eq!(links.len(), 36);
        for (i, a) in links.iter().enumerate() {
            assert!(!links[i + 1..].contains(a), "{a:?} twice");
        }
        assert_eq!(Grid::Quick.links()[0].label(), "10 Mbit/s, 20 ms, 1%");
    }

    #[test]
    fn loss_models_are_the_simulators_and_the_emulators_tables() {
        assert_eq!(Loss::Independent(0.0).toml(), "{ model = \"perfect\" }");
        let b = Loss::Bursty {
            loss: 0.02,
            burst_frames: 4.0,
        };
        let t: toml::Table = toml::from_str(&format!("e = {}", b.toml())).unwrap();
        let e: Result<mslink_channel::ErrorModelConfig, _> = t["e"].clone().try_into();
        assert!(e.is_ok(), "{e:?}");
        assert_eq!(b.label(), "2% bursts of 4");
        assert!(Cc::parse("bbr").is_err());
    }

    #[test]
    fn a_few_points_keep_their_grid_indices() {
        let links = Grid::Full.links();
        let ccs = [Cc::Reno, Cc::Cubic];
        let spec = "100 Mbit/s, 200 ms, 2% bursts of 4";
        let li = links.iter().position(|l| l.label() == spec).unwrap();
        assert_eq!(li, 35);
        assert_eq!(
            parse_point(&links, &ccs, spec).unwrap(),
            [(35, Cc::Reno), (35, Cc::Cubic)]
        );
        assert_eq!(
            parse_point(&links, &ccs, &format!("{spec} : cubic")).unwrap(),
            [(35, Cc::Cubic)]
        );
        let e = parse_point(&links, &ccs, "10 Mbit/s, 20 ms, 1%").unwrap_err();
        assert!(e.to_string().contains("1 Mbit/s, 10 ms, 0.5%"), "{e}");
        let e = parse_point(&links, &[Cc::Reno], &format!("{spec}: cubic")).unwrap_err();
        assert!(e.to_string().contains("--cc"), "{e}");
        assert!(parse_point(&links, &ccs, &format!("{spec}: bbr")).is_err());

        let mut o = Options::for_test(links, ccs.to_vec(), 1.0, PathBuf::new());
        assert_eq!(o.points().len(), 72);
        assert_eq!(o.points()[71], (35, Cc::Cubic));
        o.only = Some(vec![(35, Cc::Reno), (2, Cc::Cubic)]);
        assert_eq!(o.points(), [(2, Cc::Cubic), (35, Cc::Reno)]);
    }
}
