//! What an emulated hop is: the link TOML of `mslink emulate`.
//!
//! Contract. [`EmuConfig`] is serde data in the shape of the simulator's wireless segment
//! (`rate_bps`, `delay_ms`, `queue_packets`, `error`, `error_reverse`, `link`), plus what only
//! a real-time hop needs: a Mahimahi capacity trace, a byte limit on the queue, the MTU of the
//! TUN devices and their offloads (`tun_offload`, `tun_coalesce`, on by default; the link
//! still sees MTU-sized packets either way) and the drain time at exit. Every key is optional;
//! [`EmuConfig::build`] checks the numbers, names the offending key in its error, and builds
//! an [`EmulatedHop`]. Files (traces) are read through the caller's loader: this module does
//! no I/O.
//!
//! ```toml
//! rate_bps = 10e6          # both directions; 0 = unlimited
//! delay_ms = 20            # one way
//! queue_packets = 1000     # drop-tail in front of each link end (absent = unlimited)
//! seed = 1               # absent: `mslink emulate` draws a fresh one and reports it
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

use mslink_channel::capacity::{Capacity, FixedDelay};
use mslink_channel::mahimahi::MahimahiTrace;
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
    /// Drop-tail limit of each direction's queue in packets (absent: unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<usize>,
    /// Drop-tail limit in bytes (absent: unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<usize>,
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
    /// them (`crate::gso`). Off: one plain packet per read and write.
    pub tun_offload: bool,
    /// With `tun_offload`: consecutive segments of one TCP flow that leave the link together
    /// are written as one super-packet (`crate::coalesce`).
    pub tun_coalesce: bool,
}

impl Default for EmuConfig {
    fn default() -> Self {
        EmuConfig {
            rate_bps: 0.0,
            capacity_trace: None,
            capacity_trace_reverse: None,
            delay_ms: 0.0,
            queue_packets: None,
            queue_bytes: None,
            mtu: 1500,
            frame_bytes: None,
            seed: None,
            error: ErrorModelConfig::Perfect,
            error_reverse: None,
            link: LinkConfig::default(),
            drain_ms: 1000.0,
            tun_offload: true,
            tun_coalesce: true,
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
        if !(68..=65535).contains(&self.mtu) {
            return Err(invalid("mtu", format!("{} is not in 68..=65535", self.mtu)));
        }
        if self.queue_packets == Some(0) || self.queue_bytes == Some(0) {
            return Err(invalid(
                "queue_packets",
                "a queue limit of 0 would drop everything; leave the key out for no limit",
            ));
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
        let delay = FixedDelay(self.delay());
        // Identical but independent processes per direction (004 §III.A), with the same
        // stream names as the simulator's first segment, so one seed gives both the same draws
        // (crates/channel/src/streams.rs).
        let dirs = [
            DirectionSetup {
                capacity: cap_fwd,
                delay,
                model: fwd,
                rng: mslink_channel::streams::stream(self.seed.unwrap_or(1), "segment0.dir0.error"),
                queue_packets: self.queue_packets,
                queue_bytes: self.queue_bytes,
            },
            DirectionSetup {
                capacity: cap_rev,
                delay,
                model: rev,
                rng: mslink_channel::streams::stream(self.seed.unwrap_or(1), "segment0.dir1.error"),
                queue_packets: self.queue_packets,
                queue_bytes: self.queue_bytes,
            },
        ];
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
    }
}
