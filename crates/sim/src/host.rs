//! A host's network subsystem (001 §III.A): what happens between the transport handing a packet
//! down and the device putting it on the medium.
//!
//! Contract. [`NetworkSubsystem`] is a sans-IO state machine. The driver calls
//! [`NetworkSubsystem::handle_packet`] for every packet the host's transport or application
//! emits, [`NetworkSubsystem::handle_device_free`] whenever the device has finished with what it
//! was given and has room again, [`NetworkSubsystem::handle_timeout`] when `now` reaches
//! [`NetworkSubsystem::poll_timeout`], and drains [`NetworkSubsystem::poll_to_device`]
//! after each call, handing every packet it returns to the device. Every packet is accounted:
//! handed to the device, dropped by a full interface queue (`ifq_drops`), or still inside
//! (`backlog()`).
//!
//! Two device hand-offs, the point of 001 §III.A:
//! - [`DeviceModel::SingleSlot`] (a real host): the device holds one packet; the next packet
//!   starts its per-packet NIC overhead only when the device is free again, so the overhead
//!   adds to every packet's service time and a host never overflows its own device (packets
//!   wait, never drop, in the host: the socket buffer and the transport's window bound them).
//! - [`DeviceModel::DropTail`] (ns-2's interface queue, default 50 packets): packets go
//!   through the NIC overhead delay independently of each other — many at once — into a
//!   drop-tail queue in front of the device, which drops what does not fit. The overhead is
//!   pipelined away and hardly changes throughput; the queue can overflow.
//!
//! The per-packet overhead is `nic_delay_us` (001: the NIC's minimum-RTT excess, ~0.75 ms
//! between NIC_3 and NIC_1) plus optional host processing `per_packet_us + len × per_byte_ns`.

use mslink_channel::ParamError;
use std::collections::VecDeque;

use mslink_link::{Duration, Instant};

/// How packets pass from the host's IP layer to its device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum DeviceModel {
    /// One packet in the device at a time; back-pressure to the host (001: real hosts).
    #[default]
    SingleSlot,
    /// ns-2's drop-tail interface queue of `limit` packets, overhead pipelined.
    DropTail {
        /// Queue limit, packets.
        limit: usize,
    },
}

/// Network-subsystem settings of one host.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// Fixed per-packet NIC overhead before the device takes the packet, µs.
    pub nic_delay_us: f64,
    /// Device hand-off model.
    pub device: DeviceModel,
    /// Host processing per packet, µs.
    pub per_packet_us: f64,
    /// Host processing per byte, ns.
    pub per_byte_ns: f64,
    /// An XCP router on this host's interface believing the link carries this many bit/s
    /// (001 §II: XCP with a static "estimated bandwidth"; the router is the sending host).
    /// XCP flows' congestion headers are set here as packets enter the subsystem, with the
    /// bytes waiting in it as the router's queue.
    pub xcp_capacity_bps: Option<f64>,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            nic_delay_us: 0.0,
            device: DeviceModel::SingleSlot,
            per_packet_us: 0.0,
            per_byte_ns: 0.0,
            xcp_capacity_bps: None,
        }
    }
}

impl HostConfig {
    /// ns-2's default interface queue length.
    pub const NS2_IFQ_LIMIT: usize = 50;

    /// Checks the settings; the error names the key.
    pub fn validate(&self) -> Result<(), ParamError> {
        for (k, v) in [
            ("nic_delay_us", self.nic_delay_us),
            ("per_packet_us", self.per_packet_us),
            ("per_byte_ns", self.per_byte_ns),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ParamError::new(
                    k,
                    format!("must be a number >= 0, got {v}"),
                ));
            }
        }
        if let Some(c) = self.xcp_capacity_bps {
            if !(c.is_finite() && c > 0.0) {
                return Err(ParamError::new(
                    "xcp_capacity_bps",
                    format!("must be a positive rate, got {c}"),
                ));
            }
        }
        if let DeviceModel::DropTail { limit: 0 } = self.device {
            return Err(ParamError::new("device.limit", "must be at least 1 packet"));
        }
        Ok(())
    }

    /// The overhead one packet of `len` bytes meets before the device.
    pub fn overhead(&self, len: usize) -> Duration {
        Duration::from_secs_f64(
            (self.nic_delay_us + self.per_packet_us) * 1e-6 + len as f64 * self.per_byte_ns * 1e-9,
        )
    }

    /// True when the model does nothing at all (no overhead, single slot): drivers may skip it.
    pub fn is_transparent(&self) -> bool {
        self.overhead(1500) == Duration::ZERO && self.device == DeviceModel::SingleSlot
    }
}

/// Counters of one host's subsystem.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostStats {
    /// Packets from the transport.
    pub packets_in: u64,
    /// Packets handed to the device.
    pub to_device: u64,
    /// Packets dropped by a full interface queue (drop-tail model only).
    pub ifq_drops: u64,
    /// Most packets waiting in the host at once.
    pub max_backlog: u64,
}

/// One host's network subsystem.
#[derive(Debug)]
pub struct NetworkSubsystem {
    config: HostConfig,
    /// Single slot: packets waiting for the device (the socket buffer / qdisc).
    waiting: VecDeque<Vec<u8>>,
    /// The packet in its overhead phase (single slot) and when that phase ends.
    in_overhead: Option<(Instant, Vec<u8>)>,
    /// Drop-tail: packets in the overhead delay line, in order of readiness.
    delay_line: VecDeque<(Instant, Vec<u8>)>,
    /// Drop-tail: the interface queue.
    ifq: VecDeque<Vec<u8>>,
    /// Whether the device holds a packet it has not finished with.
    device_busy: bool,
    /// Packets ready for the device, for `poll_to_device`.
    ready: VecDeque<Vec<u8>>,
    /// Bytes of the packets inside (not yet handed to the device).
    bytes_inside: usize,
    stats: HostStats,
}

impl NetworkSubsystem {
    /// A subsystem with an idle device.
    pub fn new(config: HostConfig) -> Self {
        NetworkSubsystem {
            config,
            waiting: VecDeque::new(),
            in_overhead: None,
            delay_line: VecDeque::new(),
            ifq: VecDeque::new(),
            device_busy: false,
            ready: VecDeque::new(),
            bytes_inside: 0,
            stats: HostStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> HostStats {
        self.stats
    }

    /// Packets inside the subsystem (not yet handed to the device).
    pub fn backlog(&self) -> usize {
        self.waiting.len()
            + usize::from(self.in_overhead.is_some())
            + self.delay_line.len()
            + self.ifq.len()
            + self.ready.len()
    }

    /// Bytes of the packets inside.
    pub fn backlog_bytes(&self) -> usize {
        self.bytes_inside
    }

    fn note_backlog(&mut self) {
        self.stats.max_backlog = self.stats.max_backlog.max(self.backlog() as u64);
    }

    /// Takes a packet from the transport. Drop-tail only: a packet that finds the interface
    /// queue full is handed back (and counted) so the caller can account for it.
    pub fn handle_packet(&mut self, now: Instant, packet: Vec<u8>) {
        self.stats.packets_in += 1;
        self.bytes_inside += packet.len();
        match self.config.device {
            DeviceModel::SingleSlot => {
                self.waiting.push_back(packet);
                self.start_next(now);
            }
            DeviceModel::DropTail { .. } => {
                let ready_at = now + self.config.overhead(packet.len());
                // Equal overheads keep order; with a per-byte cost a short packet may pass a
                // long one, as in a real pipeline.
                let pos = self.delay_line.partition_point(|(t, _)| *t <= ready_at);
                self.delay_line.insert(pos, (ready_at, packet));
                self.handle_timeout(now);
            }
        }
        self.note_backlog();
    }

    /// The device finished with the packet it held and can take another.
    pub fn handle_device_free(&mut self, now: Instant) {
        self.device_busy = false;
        match self.config.device {
            DeviceModel::SingleSlot => self.start_next(now),
            DeviceModel::DropTail { .. } => self.feed_device(),
        }
    }

    /// Single slot: starts the next packet's overhead when the device and the overhead stage are
    /// both free, or hands it over at once when there is no overhead.
    fn start_next(&mut self, now: Instant) {
        if self.device_busy || self.in_overhead.is_some() {
            return;
        }
        let Some(p) = self.waiting.pop_front() else {
            return;
        };
        let done = now + self.config.overhead(p.len());
        self.in_overhead = Some((done, p));
        self.handle_timeout(now);
    }

    fn feed_device(&mut self) {
        if self.device_busy {
            return;
        }
        if let Some(p) = self.ifq.pop_front() {
            self.device_busy = true;
            self.stats.to_device += 1;
            self.bytes_inside -= p.len();
            self.ready.push_back(p);
        }
    }

    /// Runs what is due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.config.device {
            DeviceModel::SingleSlot => {
                if self.in_overhead.as_ref().is_some_and(|(t, _)| *t <= now) {
                    let (_, p) = self.in_overhead.take().expect("checked");
                    self.device_busy = true;
                    self.stats.to_device += 1;
                    self.bytes_inside -= p.len();
                    self.ready.push_back(p);
                }
            }
            DeviceModel::DropTail { limit } => {
                while self.delay_line.front().is_some_and(|(t, _)| *t <= now) {
                    let (_, p) = self.delay_line.pop_front().expect("checked");
                    if self.ifq.len() >= limit {
                        self.stats.ifq_drops += 1;
                        self.bytes_inside -= p.len();
                    } else {
                        self.ifq.push_back(p);
                    }
                    // An idle device takes the head at once, as ns-2's queue hands it over.
                    self.feed_device();
                }
            }
        }
    }

    /// When `handle_timeout` next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.config.device {
            DeviceModel::SingleSlot => self.in_overhead.as_ref().map(|(t, _)| *t),
            DeviceModel::DropTail { .. } => self.delay_line.front().map(|(t, _)| *t),
        }
    }

    /// The next packet for the device.
    pub fn poll_to_device(&mut self) -> Option<Vec<u8>> {
        self.ready.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a subsystem feeding a device that needs `tx` per packet; the host always has
    /// `offered` packets to send at time zero. Returns when the last packet left the device.
    fn drain_time(config: HostConfig, offered: usize, tx: Duration) -> (Instant, HostStats) {
        let mut h = NetworkSubsystem::new(config);
        let mut now = Instant::ZERO;
        for i in 0..offered {
            h.handle_packet(now, vec![i as u8; 1000]);
        }
        let mut device_free_at: Option<Instant> = None;
        let mut last_done = Instant::ZERO;
        loop {
            if let Some(_p) = h.poll_to_device() {
                device_free_at = Some(now + tx);
                continue;
            }
            let next = [h.poll_timeout(), device_free_at]
                .into_iter()
                .flatten()
                .min();
            let Some(t) = next else { break };
            now = t;
            if device_free_at == Some(now) {
                device_free_at = None;
                last_done = now;
                h.handle_device_free(now);
            }
            h.handle_timeout(now);
        }
        (last_done, h.stats())
    }

    #[test]
    fn single_slot_adds_the_overhead_to_every_packet() {
        let cfg = HostConfig {
            nic_delay_us: 750.0,
            ..HostConfig::default()
        };
        let tx = Duration::from_micros(1_000);
        let (end, st) = drain_time(cfg, 20, tx);
        // Serial: 20 × (0.75 ms + 1 ms).
        assert_eq!(end, Instant::from_micros(20 * 1_750));
        assert_eq!((st.to_device, st.ifq_drops), (20, 0));
        assert_eq!(
            st.max_backlog, 20,
            "the host holds what the device cannot take"
        );
    }

    #[test]
    fn drop_tail_pipelines_the_overhead_and_drops_beyond_its_limit() {
        let cfg = HostConfig {
            nic_delay_us: 750.0,
            device: DeviceModel::DropTail { limit: 50 },
            ..HostConfig::default()
        };
        let tx = Duration::from_micros(1_000);
        // 30 packets: all fit; the overhead is paid once, then the device runs back to back.
        let (end, st) = drain_time(cfg.clone(), 30, tx);
        assert_eq!(end, Instant::from_micros(750 + 30 * 1_000));
        assert_eq!(st.ifq_drops, 0);
        // 80 packets at once: the device takes one, the queue 50, the rest are dropped.
        let (_, st) = drain_time(cfg, 80, tx);
        assert_eq!(st.to_device, 51);
        assert_eq!(st.ifq_drops, 29);
        assert_eq!(st.packets_in, st.to_device + st.ifq_drops);
    }

    #[test]
    fn transparent_model_hands_packets_over_at_once() {
        let mut h = NetworkSubsystem::new(HostConfig::default());
        assert!(HostConfig::default().is_transparent());
        h.handle_packet(Instant::ZERO, vec![1]);
        assert_eq!(h.poll_to_device(), Some(vec![1]));
        h.handle_packet(Instant::ZERO, vec![2]);
        assert_eq!(h.poll_to_device(), None, "device busy: the host waits");
        h.handle_device_free(Instant::from_nanos(5));
        assert_eq!(h.poll_to_device(), Some(vec![2]));
        assert_eq!(h.backlog(), 0);
    }

    #[test]
    fn per_byte_cost_scales_with_length_and_validation_names_keys() {
        let c = HostConfig {
            per_byte_ns: 2.0,
            per_packet_us: 1.0,
            ..HostConfig::default()
        };
        assert_eq!(c.overhead(1000), Duration::from_nanos(3_000));
        assert!(!c.is_transparent());
        let bad = HostConfig {
            nic_delay_us: -1.0,
            ..HostConfig::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("nic_delay_us"));
        let bad = HostConfig {
            device: DeviceModel::DropTail { limit: 0 },
            ..HostConfig::default()
        };
        assert!(bad.validate().unwrap_err().to_string().contains("limit"));
    }
}
