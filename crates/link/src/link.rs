//! The multi-service link (004 §IV, Fig. 11): classifier, services, scheduler, mux and demux.
//!
//! Contract. One `MultiServiceLink` is one end of a wireless hop, sans-IO like every machine
//! here (docs/architecture.md rule 2):
//!
//! * from above, `handle_packet(now, packet)`: the classifier picks a service, the packet is
//!   cut into SDUs that fit a frame, and the service queues them; a refusal (too large, queue
//!   full) is returned and counted, never silent;
//! * to the MAC, `poll_transmit(now, buf)`: when the MAC can send, the scheduler picks which
//!   service's head frame goes next; the frame gets its service tag and CRC (004: "the
//!   scheduler first tags each frame with a service number");
//! * from the MAC, `handle_frame(now, frame)`: CRC check, demultiplexing on the tag (the one
//!   demultiplexing point), the service's receive side, reassembly;
//! * to above, `poll_deliver()`: whole packets;
//! * `handle_timeout(now)` when `poll_timeout()` is due; `handle_tx_report` passes the MAC's
//!   transmit outcome to the scheduler (ELF learns error rates from it, 003 §6).
//!
//! Each service sees only its own virtual link and keeps a single entry and exit point, so the
//! services are the same code that runs alone.
//!
//! Late binding (why a class keeps its promise under contention). The scheduler holds at most
//! one *reservation* per service, never a built frame: the service builds its frame (calls its
//! own `poll_transmit`) only when the scheduler has chosen it and the MAC takes the frame. So
//! every recovery timer a frame starts (NACK repeat, keepalive, retransmission timeout, FEC
//! block timeout, gap wait) counts from the instant the frame leaves on the link, exactly as
//! when the service runs alone, and a retransmission that became due while the service waited
//! for its turn goes first. (Building the frame when its service joined the scheduler let the
//! frame wait up to one round of the other classes with its timers running: a continuous-media
//! class on OOS RLP beside TCP saw its repairs arrive after its receiver had given up, and lost
//! as much as Raw, 004 §V.D.) Schedulers stamp a reservation with a predicted length, the
//! length of the service's previous frame; the difference between what each service was
//! charged and what it sent is carried into its next reservation, so over any busy period a
//! service is charged exactly the bytes it sent, to within one frame.

use std::collections::VecDeque;

use crate::classifier::Classifier;
use crate::config::{LinkConfig, LinkConfigError};
use crate::sar::{segment, Reassembler, ReassemblyStats};
use crate::sched::Scheduler;
use crate::service::{Sdu, Service, ServiceStats};
use crate::time::Instant;
use crate::wire::{FrameError, LinkFormat, LinkFrame};

/// Why a packet from above was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Larger than the link's MTU.
    #[error("packet of {len} bytes exceeds the MTU of {mtu}")]
    TooLarge {
        /// Packet length.
        len: usize,
        /// The MTU.
        mtu: usize,
    },
    /// The service's queue was full.
    #[error("service {service} queue full")]
    QueueFull {
        /// Index of the service.
        service: usize,
    },
}

/// Per-service counters of a link end.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServiceRow {
    /// Service name.
    pub name: String,
    /// Scheme name.
    pub scheme: String,
    /// Packets the classifier gave this service.
    pub packets_in: u64,
    /// Bytes of those packets.
    pub bytes_in: u64,
    /// Packets refused because the service queue was full.
    pub packets_refused: u64,
    /// Packets delivered above after reassembly.
    pub packets_delivered: u64,
    /// Bytes of those packets (what a live view's per-class throughput is made of).
    #[serde(default)]
    pub bytes_delivered: u64,
    /// Bytes of service tags and CRCs this service's frames carried.
    pub framing_bytes: u64,
    /// The service's own counters.
    pub service: ServiceStats,
    /// Reassembly counters.
    pub reassembly: ReassemblyStats,
}

/// Counters of one link end.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkStats {
    /// Per service, in tag order.
    pub services: Vec<ServiceRow>,
    /// Packets from above larger than the MTU.
    pub packets_too_large: u64,
    /// Packets that were not valid IP (sent on the default service).
    pub packets_not_ip: u64,
    /// Frames sent to the MAC.
    pub frames_sent: u64,
    /// Bytes sent to the MAC.
    pub bytes_sent: u64,
    /// Frames received from the MAC.
    pub frames_received: u64,
    /// Frames refused for a bad CRC.
    pub frames_bad_crc: u64,
    /// Frames too short for their framing.
    pub frames_truncated: u64,
    /// Frames whose tag names no service.
    pub frames_unknown_service: u64,
}

/// What `poll_transmit` produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxFrame {
    /// Index of the service the frame belongs to.
    pub service: usize,
    /// Frame length in bytes.
    pub len: usize,
}

struct Slot {
    service: Box<dyn Service>,
    reassembler: Reassembler,
    /// Largest SDU that fits one frame of this service.
    sdu_max: usize,
    /// Whether this service's frames carry the link CRC.
    crc: bool,
    /// The service holds a reservation in the scheduler (its frame is built when served).
    reserved: bool,
    /// Wire length of the service's previous frame: the length a reservation is stamped with.
    predicted: u32,
    /// Bytes charged to the scheduler minus bytes sent (the prediction error carried over).
    overcharged: i64,
    row: ServiceRow,
}

/// One end of a multi-service link.
pub struct MultiServiceLink {
    format: LinkFormat,
    mtu: usize,
    slots: Vec<Slot>,
    classifier: Classifier,
    scheduler: Box<dyn Scheduler>,
    delivered: VecDeque<Vec<u8>>,
    spare: Vec<Vec<u8>>,
    stats: LinkStats,
}

impl MultiServiceLink {
    /// Builds one end from a validated configuration.
    pub fn new(config: &LinkConfig) -> Result<Self, LinkConfigError> {
        config.validate()?;
        let scheduler = config.scheduler.build(config.services.len())?;
        Self::with_scheduler(config, scheduler)
    }

    /// Builds one end with a scheduler made elsewhere (tests, custom policies).
    pub fn with_scheduler(
        config: &LinkConfig,
        scheduler: Box<dyn Scheduler>,
    ) -> Result<Self, LinkConfigError> {
        let format = config.link_format();
        let classifier = Classifier::new(
            &config.rules,
            &config.service_names(),
            config.default_index()?,
        )?;
        let slots = config
            .services
            .iter()
            .map(|spec| {
                let header = config.header_format(spec)?;
                let service = spec.config.build(header);
                let crc = config.crc && service.uses_link_crc();
                let framing = format.tagged as usize + if crc { 4 } else { 0 };
                let sdu_max = service
                    .max_sdu(config.frame_size.saturating_sub(framing))
                    .max(1);
                Ok(Slot {
                    reassembler: Reassembler::new(header.seq_space().max_window(), config.mtu),
                    sdu_max,
                    crc,
                    reserved: false,
                    predicted: config.frame_size.max(1) as u32,
                    overcharged: 0,
                    row: ServiceRow {
                        name: spec.name.clone(),
                        scheme: spec.config.scheme().into(),
                        ..Default::default()
                    },
                    service,
                })
            })
            .collect::<Result<Vec<_>, LinkConfigError>>()?;
        Ok(MultiServiceLink {
            format,
            mtu: config.mtu,
            slots,
            classifier,
            scheduler,
            delivered: VecDeque::new(),
            spare: Vec::new(),
            stats: LinkStats::default(),
        })
    }

    /// Number of services.
    pub fn services(&self) -> usize {
        self.slots.len()
    }

    /// Bytes waiting to be sent on this end: every service's send queue. An XCP router at
    /// this interface reads it as its queue (001 Fig. 3, the access point's wireless
    /// interface).
    pub fn queued_bytes(&self) -> usize {
        self.slots.iter().map(|s| s.service.queued_bytes()).sum()
    }

    /// Takes a packet from above. Returns the service that took it.
    pub fn handle_packet(&mut self, now: Instant, packet: &[u8]) -> Result<usize, Refused> {
        let service = self.admit(now, packet)?;
        let slot = &mut self.slots[service];
        for sdu in segment(packet, slot.sdu_max) {
            Self::queue(slot, now, sdu, service)?;
        }
        Ok(service)
    }

    /// [`MultiServiceLink::handle_packet`] for a packet the caller gives up: one that fits a
    /// single SDU is queued as it is, without a copy (the simulator's per-packet path).
    pub fn handle_packet_owned(&mut self, now: Instant, packet: Vec<u8>) -> Result<usize, Refused> {
        let service = self.admit(now, &packet)?;
        let slot = &mut self.slots[service];
        if packet.len() <= slot.sdu_max {
            // What `segment` would cut: one whole SDU.
            Self::queue(slot, now, Sdu::whole(packet), service)?;
        } else {
            for sdu in segment(&packet, slot.sdu_max) {
                Self::queue(slot, now, sdu, service)?;
            }
        }
        Ok(service)
    }

    /// The checks and counts of a packet from above; the service it is for.
    fn admit(&mut self, now: Instant, packet: &[u8]) -> Result<usize, Refused> {
        if packet.len() > self.mtu {
            self.stats.packets_too_large += 1;
            return Err(Refused::TooLarge {
                len: packet.len(),
                mtu: self.mtu,
            });
        }
        let c = self.classifier.classify(packet);
        self.stats.packets_not_ip += c.malformed as u64;
        self.scheduler
            .observe_input(now, c.service, packet.len() as u32);
        let slot = &mut self.slots[c.service];
        slot.row.packets_in += 1;
        slot.row.bytes_in += packet.len() as u64;
        Ok(c.service)
    }

    fn queue(slot: &mut Slot, now: Instant, sdu: Sdu, service: usize) -> Result<(), Refused> {
        if slot.service.handle_sdu(now, sdu).is_err() {
            // Fragments already queued travel on and are discarded by the peer's reassembler.
            slot.row.packets_refused += 1;
            return Err(Refused::QueueFull { service });
        }
        Ok(())
    }

    /// Takes a frame from the MAC.
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        self.stats.frames_received += 1;
        let Some(&first) = frame.first() else {
            self.stats.frames_truncated += 1;
            return;
        };
        let index = if self.format.tagged {
            first as usize
        } else {
            0
        };
        let Some(slot) = self.slots.get_mut(index) else {
            self.stats.frames_unknown_service += 1;
            return;
        };
        let format = LinkFormat {
            tagged: self.format.tagged,
            crc: slot.crc,
        };
        match LinkFrame::new_checked(frame, format) {
            Ok(view) => slot.service.handle_frame(now, view.service_bytes()),
            Err(FrameError::BadCrc) => {
                self.stats.frames_bad_crc += 1;
                return;
            }
            Err(FrameError::Truncated { .. }) => {
                self.stats.frames_truncated += 1;
                return;
            }
        }
        Self::drain(slot, &mut self.delivered);
    }

    fn drain(slot: &mut Slot, out: &mut VecDeque<Vec<u8>>) {
        while let Some(d) = slot.service.poll_deliver() {
            if let Some(p) = slot.reassembler.push(d) {
                slot.row.packets_delivered += 1;
                slot.row.bytes_delivered += p.len() as u64;
                out.push_back(p);
            }
        }
    }

    /// Runs every service timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        for slot in &mut self.slots {
            if slot.service.poll_timeout().is_some_and(|t| t <= now) {
                slot.service.handle_timeout(now);
                Self::drain(slot, &mut self.delivered);
            }
        }
    }

    /// The MAC's outcome for a frame of `service` sent earlier.
    pub fn handle_tx_report(&mut self, now: Instant, service: usize, delivered: bool) {
        if service < self.slots.len() {
            self.scheduler.report(now, service, delivered);
        }
    }

    /// Appends the next frame for the MAC to `buf`, if any service has one. The frame counts
    /// as sent at `now`: call this only when the MAC can put it on the air.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<TxFrame> {
        let tag_len = self.format.tagged as usize;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.reserved || !slot.service.has_transmit(now) {
                continue;
            }
            // Stamp with the predicted length less what the service was overcharged before.
            let charge = (i64::from(slot.predicted) - slot.overcharged).clamp(1, u32::MAX as i64);
            slot.overcharged += charge;
            self.scheduler.enqueue(now, i, charge as u32);
            slot.reserved = true;
        }
        loop {
            let i = self.scheduler.dequeue(now)?;
            let slot = &mut self.slots[i];
            slot.reserved = false;
            let mut b = self.spare.pop().unwrap_or_default();
            b.clear();
            b.resize(tag_len, 0);
            if !slot.service.poll_transmit(now, &mut b) {
                // Nothing to send any more (an ACK made the repair moot, ...): the charge
                // stays on the books and comes off the service's next reservation.
                self.spare.push(b);
                continue;
            }
            let format = LinkFormat {
                tagged: self.format.tagged,
                crc: slot.crc,
            };
            let range = format.seal(i as u8, &mut b, tag_len);
            let len = range.len();
            slot.overcharged -= len as i64;
            slot.predicted = len as u32;
            slot.row.framing_bytes += format.overhead() as u64;
            self.stats.frames_sent += 1;
            self.stats.bytes_sent += len as u64;
            if buf.is_empty() {
                std::mem::swap(buf, &mut b);
            } else {
                buf.extend_from_slice(&b);
            }
            self.spare.push(b);
            return Some(TxFrame { service: i, len });
        }
    }

    /// The next whole packet for the layer above.
    pub fn poll_deliver(&mut self) -> Option<Vec<u8>> {
        self.delivered.pop_front()
    }

    /// The earliest instant a service timer is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter_map(|s| s.service.poll_timeout())
            .min()
    }

    /// True if `poll_transmit(now, ..)` would produce a frame.
    pub fn has_transmit(&self, now: Instant) -> bool {
        self.slots.iter().any(|s| s.service.has_transmit(now))
    }

    /// Counters, per service and for the whole link end.
    pub fn stats(&self) -> LinkStats {
        let mut s = self.stats.clone();
        s.services = self
            .slots
            .iter()
            .map(|slot| ServiceRow {
                service: *slot.service.stats(),
                reassembly: *slot.reassembler.stats(),
                ..slot.row.clone()
            })
            .collect();
        s
    }
}
