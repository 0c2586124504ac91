//! What an emulated hop is: the link TOML of `mslink emulate`.
//!
//! Contract. [`EmuConfig`] is serde data in the shape of the simulator's wireless segment
//! (`rate_bps`, `delay_ms`, `queue`, `queue_packets`, `queue_bytes`, `aqm`, `jitter_ms`,
//! `jitter_dist`, `reorder`, `onoff`, `error`, `error_reverse`, `link`: the queue and delay
//! models are `mslink_channel`'s, shared with the simulator), plus what only
//! a real-time hop needs: a Mahimahi capacity trace, the MTU of the
//! TUN devices and their offloads (`tun_offload`, `tun_coalesce`, on by default; the link
//! still sees MTU-sized packets either way), the drain time at exit and the event loop's
//! bounded busy polling (`busy_poll_us`, [`DEFAULT_BUSY_POLL_US`] by default, 0: off). Every key is optional;
//! [`EmuConfig::build`] checks the numbers, names the offending key in its error, and builds
//! an [`EmulatedHop`]. Files (traces) are read through the caller's loader: this module does
//! no I/O.
//!
//! ```toml
//! rate_bps = 10e6          # both directions; 0 = unlimited
//! delay_ms = 20            # one way
//! queue = "codel"          # droptail (default), drophead, codel, pie, fq_codel
//! queue_packets = 1000     # limit of the queue in front of each link end (absent = unlimited)
//! jitter_ms = 2            # deviation of the delay (default 0)
//! jitter_dist = "normal"   # uniform, normal (default), pareto, paretonormal
//! reorder = false          # may a frame overtake an earlier one (default false)
//! seed = 1               # absent: `mslink emulate` draws a fresh one and reports it
//!
//! [aqm]                    # optional: the RFCs' defaults
//! target_ms = 5
//!
//! [onoff]                  # optional outages: on 2 s, off 0.2 s on average
//! on_ms = 2000
//! off_ms = 200
//! dist = "exponential"     # or "fixed"
//! mode = "queue"           # packets arriving while off wait (default); "drop": as mm-onoff
//! direction = "both"       # or "uplink" (left to right) or "downlink"
//!
//! [error]
//! model = "independent"
//! loss = 0.05
//!
//! [[link.service]]
//! name = "tcp"
//! scheme = "selective_repeat"
//! ```

use std::sync::Arc;

use mslink_channel::capacity::Capacity;
use mslink_channel::delay::{Delay, DelayConfig, JitterDist, OnOff, OnOffConfig};
use mslink_channel::mahimahi::MahimahiTrace;
use mslink_channel::queue::{AqmParams, Discipline, QueueConfig};
use mslink_channel::ErrorModelConfig;
use mslink_link::config::LinkConfig;
use mslink_link::link::MultiServiceLink;
use mslink_link::{Duration, Instant};

use crate::hop::{DirectionSetup, EmulatedHop};

/// The emulated hop, as configured.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmuConfig {
    /// Rate of both directions in bit/s; 0 means unlimited (ignored with a capacity trace).
    pub rate_bps: f64,
    /// Mahimahi packet-delivery trace giving the capacity of both directions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_trace: Option<String>,
    /// Mahimahi trace of the right-to-left direction, if it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_trace_reverse: Option<String>,
    /// One-way propagation delay in ms.
    pub delay_ms: f64,
    /// Deviation of the one-way delay's jitter in ms (0: a fixed delay).
    pub jitter_ms: f64,
    /// Distribution of the jitter.
    pub jitter_dist: JitterDist,
    /// With jitter: may a frame arrive before one sent earlier (netem's reordering).
    pub reorder: bool,
    /// Outages of one or both directions (independent processes), queueing or dropping what
    /// arrives while off (Mahimahi's mm-onoff drops, in one direction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub onoff: Option<OnOffConfig>,
    /// Discipline of each direction's queue.
    pub queue: Discipline,
    /// Limit of each direction's queue in packets (absent: unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<usize>,
    /// Limit in bytes (absent: unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<usize>,
    /// Parameters of CoDel, PIE and FQ-CoDel (the RFCs' defaults).
    pub aqm: AqmParams,
    /// MTU of the TUN devices; the link takes packets up to this size.
    pub mtu: usize,
    /// Frame size on the hop, framing included (absent: large enough that every packet travels
    /// in one frame).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_bytes: Option<usize>,
    /// Seed of the error processes (each direction has its own stream). Absent: the driver
    /// picks one (`mslink emulate` draws a fresh seed per run and prints it, so repetitions
    /// differ and any run can be replayed with `--seed`); [`EmuConfig::build`] uses 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Error model of both directions (independent processes, same parameters).
    pub error: ErrorModelConfig,
    /// Error model of the right-to-left direction, if it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_reverse: Option<ErrorModelConfig>,
    /// The multi-service link at both ends (its `mtu` and `frame_size` come from above).
    pub link: LinkConfig,
    /// At exit, how long the hop keeps running without new input so packets in flight land.
    pub drain_ms: f64,
    /// TUN segmentation offloads: the kernel hands over TCP super-packets (and packets with a
    /// partial checksum) that the emulator cuts into MTU-sized packets before the link sees
    /// them (`mslink_io::gso`). Off: one plain packet per read and write.
    pub tun_offload: bool,
    /// With `tun_offload`: consecutive segments of one TCP flow that leave the link together
    /// are written as one super-packet (`mslink_io::coalesce`).
    pub tun_coalesce: bool,
    /// Bounded busy polling ([`DEFAULT_BUSY_POLL_US`] by default; 0: off): after a packet
    /// moves, the event loop polls its devices without sleeping for this many microseconds, so
    /// a packet arriving meanwhile does not wait for the loop to wake; costs CPU
    /// (`crate::runtime`).
    pub busy_poll_us: f64,
}

impl Default for EmuConfig {
    fn default() -> Self {
        EmuConfig {
            rate_bps: 0.0,
            capacity_trace: None,
            capacity_trace_reverse: None,
            delay_ms: 0.0,
            jitter_ms: 0.0,
            jitter_dist: JitterDist::default(),
            reorder: false,
            onoff: None,
            queue: Discipline::default(),
            queue_packets: None,
            queue_bytes: None,
            aqm: AqmParams::default(),
            mtu: 1500,
            frame_bytes: None,
            seed: None,
            error: ErrorModelConfig::Perfect,
            error_reverse: None,
            link: LinkConfig::default(),
            drain_ms: 1000.0,
            tun_offload: true,
            tun_coalesce: true,
            busy_poll_us: DEFAULT_BUSY_POLL_US,
        }
    }
}

/// A configuration that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum EmuConfigError {
    /// A key has a value out of range or a file could not be used.
    #[error("key `{key}`: {what}")]
    Invalid {
        /// The key.
        key: String,
        /// What is wrong and what was expected.
        what: String,
    },
}

fn invalid(key: &str, what: impl Into<String>) -> EmuConfigError {
    EmuConfigError::Invalid {
        key: key.into(),
        what: what.into(),
    }
}

/// Upper bounds of the numbers a real-time hop can honour: 1 Tbit/s; a minute of one-way delay
/// (a geostationary hop is 0.27 s); ten minutes of drain.
pub const MAX_RATE_BPS: f64 = 1e12;
/// See [`MAX_RATE_BPS`].
pub const MAX_DELAY_MS: f64 = 60_000.0;
/// See [`MAX_RATE_BPS`].
pub const MAX_DRAIN_MS: f64 = 600_000.0;
/// Default `busy_poll_us`: the smallest window that, measured unpinned and back to back on
/// a 2-vCPU VM, kept the emulator's added latency below Mahimahi's (docs/PERFORMANCE.md,
/// "Emulator latency against Mahimahi"), at a cost of this many microseconds of CPU per
/// packet on a sparse link.
pub const DEFAULT_BUSY_POLL_US: f64 = 30.0;

/// Longest `busy_poll_us`: the loop's longest sleep (`runtime::MAX_SLEEP`), beyond which it
/// would never sleep at all.
pub const MAX_BUSY_POLL_US: f64 = 10_000.0;

fn at_most(key: &str, v: f64, max: f64, unit: &str) -> Result<f64, EmuConfigError> {
    if v <= max {
        Ok(v)
    } else {
        Err(invalid(
            key,
            format!("{v} {unit} is more than the {max} {unit} this emulator takes"),
        ))
    }
}

fn non_negative(key: &str, v: f64) -> Result<f64, EmuConfigError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(invalid(key, format!("{v} is not a non-negative number")))
    }
}

impl EmuConfig {
    /// The link configuration both ends use: the TUN MTU, and frames large enough for a whole
    /// packet unless `frame_bytes` says otherwise.
    pub fn link_config(&self) -> LinkConfig {
        let mut l = self.link.clone();
        l.mtu = self.mtu;
        l.frame_size = self.frame_bytes.unwrap_or_else(|| {
            let width = l.seq_width().unwrap_or_default();
            let header = l
                .services
                .iter()
                .map(|s| s.config.data_header_bytes(width))
                .max()
                .unwrap_or(0);
            self.mtu + l.link_format().overhead() + header
        });
        l
    }

    /// One-way delay.
    pub fn delay(&self) -> Duration {
        Duration::from_secs_f64(self.delay_ms.max(0.0) / 1e3)
    }

    /// The queue of each direction.
    pub fn queue_config(&self) -> QueueConfig {
        QueueConfig {
            discipline: self.queue,
            packets: self.queue_packets,
            bytes: self.queue_bytes,
            aqm: self.aqm.clone(),
        }
    }

    /// The delay model of each direction.
    pub fn delay_config(&self) -> DelayConfig {
        DelayConfig {
            base: self.delay(),
            jitter_ms: self.jitter_ms,
            dist: self.jitter_dist,
            reorder: self.reorder,
        }
    }

    /// Builds the hop whose clock starts at `epoch` (trace time 0); `load` returns the text of
    /// a file named in the configuration.
    pub fn build(
        &self,
        epoch: Instant,
        load: &mut dyn FnMut(&str) -> std::io::Result<String>,
    ) -> Result<EmulatedHop, EmuConfigError> {
        at_most(
            "rate_bps",
            non_negative("rate_bps", self.rate_bps)?,
            MAX_RATE_BPS,
            "bit/s",
        )?;
        at_most(
            "delay_ms",
            non_negative("delay_ms", self.delay_ms)?,
            MAX_DELAY_MS,
            "ms",
        )?;
        at_most(
            "drain_ms",
            non_negative("drain_ms", self.drain_ms)?,
            MAX_DRAIN_MS,
            "ms",
        )?;
        at_most(
            "busy_poll_us",
            non_negative("busy_poll_us", self.busy_poll_us)?,
            MAX_BUSY_POLL_US,
            "us",
        )?;
        if !(68..=65535).contains(&self.mtu) {
            return Err(invalid("mtu", format!("{} is not in 68..=65535", self.mtu)));
        }
        at_most(
            "jitter_ms",
            non_negative("jitter_ms", self.jitter_ms)?,
            MAX_DELAY_MS,
            "ms",
        )?;
        let queue = self.queue_config();
        queue.validate().map_err(|e| invalid(&e.key, e.what))?;
        if let Some(o) = &self.onoff {
            o.validate("onoff.").map_err(|e| invalid(&e.key, e.what))?;
        }
        let link = self.link_config();
        let end = || MultiServiceLink::new(&link).map_err(|e| invalid("link", e.to_string()));
        let mut capacity = |file: &Option<String>, key: &str| -> Result<Capacity, EmuConfigError> {
            match file {
                None => Ok(Capacity::rate(self.rate_bps.round() as u64)),
                Some(f) => {
                    let text = load(f).map_err(|e| invalid(key, format!("{f}: {e}")))?;
                    let t = MahimahiTrace::parse(&text)
                        .map_err(|e| invalid(key, format!("{f}: {e}")))?;
                    Ok(Capacity::trace(Arc::new(t), epoch))
                }
            }
        };
        let cap_fwd = capacity(&self.capacity_trace, "capacity_trace")?;
        let cap_rev = match &self.capacity_trace_reverse {
            None => cap_fwd.clone(),
            some => capacity(some, "capacity_trace_reverse")?,
        };
        let model = |c: &ErrorModelConfig,
                     key: &str,
                     load: &mut dyn FnMut(&str) -> std::io::Result<String>| {
            c.build(load)
                .map_err(|e| invalid(&format!("{key}.{}", e.key), e.what))
        };
        let fwd = model(&self.error, "error", load)?;
        let rev = match &self.error_reverse {
            Some(c) => model(c, "error_reverse", load)?,
            None => model(&self.error, "error", load)?,
        };
        // Identical but independent processes per direction (004 §III.A), with the same
        // stream names as the simulator's first segment, so one seed gives both the same draws
        // (crates/channel/src/streams.rs).
        let seed = self.seed.unwrap_or(1);
        let stream = |dir: usize, what: &str| {
            mslink_channel::streams::stream(seed, &format!("segment0.dir{dir}.{what}"))
        };
        let setup = |dir: usize, capacity: Capacity, model| DirectionSetup {
            capacity,
            delay: Delay::new(self.delay_config(), stream(dir, "delay")),
            onoff: self
                .onoff
                .clone()
                .filter(|o| o.direction.includes(dir))
                .map(|o| OnOff::new(o, stream(dir, "onoff"))),
            model,
            rng: stream(dir, "error"),
            queue: queue.clone(),
            queue_rng: stream(dir, "queue"),
        };
        let dirs = [setup(0, cap_fwd, fwd), setup(1, cap_rev, rev)];
        Ok(EmulatedHop::new([end()?, end()?], dirs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_files(_: &str) -> std::io::Result<String> {
        Err(std::io::Error::other("no such file"))
    }

    #[test]
    fn module_example_builds() {
        // The example at the top of this file, keys and all.
        let src = include_str!("config.rs");
        let text: String = src
            .lines()
            .skip_while(|l| !l.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| l.trim_start_matches("//!").trim_start().to_string() + "\n")
            .collect();
        let c: EmuConfig = toml::from_str(&text).unwrap();
        assert_eq!(c.queue, Discipline::Codel);
        assert_eq!(c.onoff.as_ref().map(|o| o.off_ms), Some(200.0));
        c.build(Instant::ZERO, &mut no_files).unwrap();
    }

    #[test]
    fn documented_example_builds() {
        let text = "rate_bps = 10e6\ndelay_ms = 20\nqueue_packets = 1000\nseed = 1\n[error]\nmodel = \"independent\"\nloss = 0.05\n[[link.service]]\nname = \"tcp\"\nscheme = \"selective_repeat\"\n";
        let c: EmuConfig = toml::from_str(text).unwrap();
        c.build(Instant::ZERO, &mut no_files).unwrap();
        // One service (untagged), CRC-32, SR's sequence and ack fields of 16 bits.
        assert_eq!(c.link_config().frame_size, 1500 + 4 + 4);
    }

    #[test]
    fn errors_name_the_key() {
        let err = |t: &str| {
            let c: EmuConfig = toml::from_str(t).unwrap();
            c.build(Instant::ZERO, &mut no_files)
                .err()
                .unwrap()
                .to_string()
        };
        assert!(err("rate_bps = -1.0").contains("`rate_bps`"));
        assert!(err("mtu = 20").contains("`mtu`"));
        assert!(err("capacity_trace = 'x.trace'").contains("`capacity_trace`: x.trace"));
        assert!(err("[error]\nmodel = 'independent'\nloss = 2.0").contains("`error.loss`"));
        let bad_trace = EmuConfig {
            capacity_trace: Some("t".into()),
            ..EmuConfig::default()
        };
        let e = bad_trace
            .build(Instant::ZERO, &mut |_| Ok("1\nx\n".into()))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        assert!(toml::from_str::<EmuConfig>("rate = 3").is_err());
        assert!(err("queue_packets = 0").contains("`queue_packets`"));
        assert!(err("queue = 'codel'\n[aqm]\ninterval_ms = 0").contains("`aqm.interval_ms`"));
        assert!(err("jitter_ms = -2").contains("`jitter_ms`"));
        assert!(err("[onoff]\non_ms = 10\noff_ms = -1").contains("`onoff.off_ms`"));
        let e = toml::from_str::<EmuConfig>("queue = 'red'")
            .unwrap_err()
            .to_string();
        assert!(e.contains("queue") && e.contains("codel"), "{e}");
    }
}
