//! Raw Link (004 §III.A): no error recovery, the baseline every scheme is measured against.
//!
//! Contract: SDUs go out in arrival order, one per frame, and every frame that arrives is
//! delivered at once. On a link that does not segment, a frame carries no header at all
//! (004: "raw 0 B"). On a segmenting link each frame carries the data header (fragment position
//! and a sequence number) so the receiver can tell a missing middle fragment; that costs the
//! header's `width` bytes.

use std::collections::VecDeque;

use super::queue::SendQueue;
use super::{Delivery, Sdu, Service, ServiceStats};
use crate::time::Instant;
use crate::wire::{FragPos, Header, HeaderFormat};

/// Raw Link tuning.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawConfig {
    /// SDUs held waiting for the link before new ones are refused.
    pub queue_limit: usize,
}

impl Default for RawConfig {
    fn default() -> Self {
        RawConfig { queue_limit: 1000 }
    }
}

/// One end of a Raw Link service.
#[derive(Debug)]
pub struct Raw {
    format: HeaderFormat,
    queue: SendQueue,
    next_tx: u64,
    next_rx: u64,
    delivered: VecDeque<Delivery>,
    stats: ServiceStats,
}

impl Raw {
    /// A Raw Link end; the format's `piggyback_ack` is ignored.
    pub fn new(config: RawConfig, format: HeaderFormat) -> Self {
        Raw {
            format: HeaderFormat {
                piggyback_ack: false,
                ..format
            },
            queue: SendQueue::new(config.queue_limit),
            next_tx: 0,
            next_rx: 0,
            delivered: VecDeque::new(),
            stats: ServiceStats::default(),
        }
    }
}

impl Raw {
    /// Frames `sdu` (the data header on a segmenting link, nothing otherwise) onto `buf` and
    /// counts it as sent. Snoop sends its local retransmissions through this too.
    pub(crate) fn emit(&mut self, sdu: &Sdu, buf: &mut Vec<u8>) {
        let start = buf.len();
        if self.format.segmented {
            let h = Header::Data {
                fp: sdu.fp,
                seq: self.format.seq_space().encode(self.next_tx),
                ack: None,
            };
            buf.resize(start + self.format.header_len(&h), 0);
            self.format.emit(&h, &mut buf[start..]);
        }
        buf.extend_from_slice(&sdu.data);
        self.next_tx += 1;
        let n = (buf.len() - start) as u64;
        self.stats.frames_sent += 1;
        self.stats.bytes_sent += n;
        self.stats.overhead_bytes += n - sdu.data.len() as u64;
    }

    /// Counters, for a service built on Raw framing.
    pub(crate) fn stats_mut(&mut self) -> &mut ServiceStats {
        &mut self.stats
    }
}

impl Service for Raw {
    fn queued_bytes(&self) -> usize {
        self.queue.bytes()
    }

    fn name(&self) -> &'static str {
        "raw"
    }

    fn handle_sdu(&mut self, _now: Instant, sdu: Sdu) -> Result<(), Sdu> {
        self.queue.offer(sdu, &mut self.stats)
    }

    fn handle_frame(&mut self, _now: Instant, frame: &[u8]) {
        self.stats.frames_received += 1;
        let (seq, fp, payload) = if self.format.segmented {
            match self.format.parse(frame) {
                Ok((Header::Data { fp, seq, .. }, off)) => (
                    self.format.seq_space().decode(seq, self.next_rx),
                    fp,
                    &frame[off..],
                ),
                _ => {
                    self.stats.malformed += 1;
                    return;
                }
            }
        } else {
            (self.next_rx, FragPos::Whole, frame)
        };
        self.next_rx = self.next_rx.max(seq + 1);
        self.stats.delivered += 1;
        self.delivered.push_back(Delivery {
            seq,
            fp,
            data: payload.to_vec(),
        });
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_transmit(&mut self, _now: Instant, buf: &mut Vec<u8>) -> bool {
        let Some(sdu) = self.queue.pop_front() else {
            return false;
        };
        self.emit(&sdu, buf);
        true
    }

    fn poll_deliver(&mut self) -> Option<Delivery> {
        self.delivered.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn has_transmit(&self, _now: Instant) -> bool {
        !self.queue.is_empty()
    }

    fn stats(&self) -> &ServiceStats {
        &self.stats
    }

    fn data_overhead(&self) -> usize {
        if self.format.segmented {
            self.format.data_header_len()
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::SeqWidth;

    #[test]
    fn unsegmented_raw_has_no_header_and_refuses_when_full() {
        let mut a = Raw::new(
            RawConfig { queue_limit: 1 },
            HeaderFormat::new(SeqWidth::W8),
        );
        let mut b = Raw::new(RawConfig::default(), HeaderFormat::new(SeqWidth::W8));
        let now = Instant::ZERO;
        a.handle_sdu(now, Sdu::whole(vec![1, 2, 3])).unwrap();
        assert!(a.handle_sdu(now, Sdu::whole(vec![4])).is_err());
        let mut buf = Vec::new();
        assert!(a.poll_transmit(now, &mut buf));
        assert_eq!(buf, vec![1, 2, 3]);
        assert!(!a.poll_transmit(now, &mut buf));
        b.handle_frame(now, &buf);
        assert_eq!(b.poll_deliver().unwrap().data, vec![1, 2, 3]);
        assert_eq!(a.stats().sdus_refused, 1);
        assert_eq!(a.stats().overhead_bytes, 0);
    }

    #[test]
    fn segmented_raw_carries_position_and_sequence() {
        let f = HeaderFormat {
            width: SeqWidth::W8,
            segmented: true,
            piggyback_ack: false,
        };
        let mut a = Raw::new(RawConfig::default(), f);
        let mut b = Raw::new(RawConfig::default(), f);
        let now = Instant::ZERO;
        for fp in [FragPos::First, FragPos::Middle, FragPos::Last] {
            a.handle_sdu(now, Sdu { fp, data: vec![7] }).unwrap();
        }
        let mut frames = Vec::new();
        let mut buf = Vec::new();
        while a.poll_transmit(now, &mut buf) {
            frames.push(std::mem::take(&mut buf));
        }
        b.handle_frame(now, &frames[2]); // the first two are lost
        let d = b.poll_deliver().unwrap();
        assert_eq!((d.seq, d.fp), (2, FragPos::Last));
        assert_eq!(a.data_overhead(), 1);
    }
}
