//! Recovery services: one sans-IO state machine per scheme of 004 §III and 003 §3-4.
//!
//! Contract (docs/architecture.md rule 2). A service is one end of a *virtual link* (004 §IV) and plays
//! both roles: it sends the SDUs handed to it and receives its peer's frames. The driver calls,
//! in any interleaving but with non-decreasing `now`:
//!
//! 1. `handle_sdu(now, sdu)` for each packet (or fragment) from above; a full service hands
//!    the SDU back (`Err`) so the caller counts the drop: nothing is lost silently.
//! 2. `handle_frame(now, bytes)` for each frame from the peer (service header and payload; the
//!    link has already removed the service tag and checked the CRC). Malformed frames are
//!    counted in [`ServiceStats::malformed`], never a panic.
//! 3. `handle_timeout(now)` whenever `now` reaches `poll_timeout()`; a call with nothing due
//!    does nothing.
//! 4. `poll_transmit(now, buf)` while it returns true: each call appends one frame to `buf`.
//!    The frame counts as sent at `now` (timers start then), so drivers call it only when the
//!    link can carry the frame.
//! 5. `poll_deliver()` while it returns `Some`: SDUs for the layer above, with their sequence
//!    numbers so the link can reassemble fragments; in order for in-order schemes.
//!
//! Services never read a clock, sleep, spawn threads or do I/O.

pub mod go_back_n;
pub mod karn_rlp;
pub mod oos_rlp;
pub mod persistent;
pub mod queue;
pub mod raw;
pub mod rs_fec;
pub mod selective_repeat;
pub mod snoop;
pub mod xor_fec;

use crate::time::Instant;
use crate::wire::{FragPos, HeaderFormat};

/// A link SDU: a packet, or one fragment of it, handed to a service from above.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sdu {
    /// Fragment position within its packet.
    pub fp: FragPos,
    /// The bytes.
    pub data: Vec<u8>,
}

impl Sdu {
    /// A whole, unfragmented packet.
    pub fn whole(data: Vec<u8>) -> Self {
        Sdu {
            fp: FragPos::Whole,
            data,
        }
    }
}

/// An SDU released by a service to the layer above.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The service's full (unwrapped) sequence number of the frame that carried it.
    pub seq: u64,
    /// Fragment position within its packet.
    pub fp: FragPos,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Counters every service keeps (the per-service row of the link's stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServiceStats {
    /// SDUs accepted from above.
    pub sdus_in: u64,
    /// SDUs refused from above because the service's queue was full.
    pub sdus_refused: u64,
    /// SDUs released above.
    pub delivered: u64,
    /// SDUs the sender gave up on (retry limit) or the receiver stopped waiting for.
    pub abandoned: u64,
    /// Data frames sent again.
    pub retransmissions: u64,
    /// XOR or Reed-Solomon parity frames or bytes sent (see the service's docs).
    pub parity_sent: u64,
    /// Frames rebuilt from parity or corrected by the decoder.
    pub recovered: u64,
    /// Bytes of headers, control frames, parity and retransmissions: everything sent that is
    /// not a first copy of SDU payload.
    pub overhead_bytes: u64,
    /// Frames sent (data and control).
    pub frames_sent: u64,
    /// Bytes sent (data and control).
    pub bytes_sent: u64,
    /// Frames received from the peer.
    pub frames_received: u64,
    /// Frames received that could not be parsed or made no sense (a peer's violation is data).
    pub malformed: u64,
    /// Data frames received again after they had been accepted or given up (`spurious` plus
    /// `late`, for the schemes that tell them apart).
    pub duplicates: u64,
    /// Spurious retransmissions seen by this end's receiver: copies of data frames it already
    /// had (a retransmission whose original had arrived, or a copy the channel made). Zero on
    /// a loss-free channel, whatever other classes share the link.
    #[serde(default)]
    pub spurious: u64,
    /// Late repairs seen by this end's receiver: copies of data frames it had already given up.
    #[serde(default)]
    pub late: u64,
    /// Packets from the peer a TCP-aware service withheld from the layer above on purpose
    /// (Snoop's duplicate ACKs after a local retransmission, 004 §III.A).
    pub suppressed: u64,
}

/// One end of a recovery service.
pub trait Service: Send {
    /// The scheme's name, as used in configuration (`"selective_repeat"`, ...).
    fn name(&self) -> &'static str;
    /// Takes an SDU from above, or hands it back if the service's queue is full.
    fn handle_sdu(&mut self, now: Instant, sdu: Sdu) -> Result<(), Sdu>;
    /// Takes a frame from the peer: service header and payload.
    fn handle_frame(&mut self, now: Instant, frame: &[u8]);
    /// Runs the timers due at `now`.
    fn handle_timeout(&mut self, now: Instant);
    /// Appends the next frame to send at `now` to `buf`; false if there is none.
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool;
    /// The next SDU for the layer above.
    fn poll_deliver(&mut self) -> Option<Delivery>;
    /// The earliest instant at which `handle_timeout` has work.
    fn poll_timeout(&self) -> Option<Instant>;
    /// True if `poll_transmit(now, ..)` would produce a frame.
    fn has_transmit(&self, now: Instant) -> bool;
    /// Counters.
    fn stats(&self) -> &ServiceStats;
    /// Data header bytes this service adds to each SDU (its framing overhead).
    fn data_overhead(&self) -> usize;

    /// Payload bytes waiting in the service's send queue (Snoop's queued local retransmissions
    /// included; frames sent and held for retransmission are not): the interface queue an XCP
    /// router reads.
    fn queued_bytes(&self) -> usize;
    /// Largest SDU this service can carry in one frame when `frame_budget` bytes are left for
    /// its header and payload. Default: the budget less the data header.
    fn max_sdu(&self, frame_budget: usize) -> usize {
        frame_budget.saturating_sub(self.data_overhead())
    }
    /// Whether the link should guard this service's frames with its CRC-32. Services that
    /// correct bit errors themselves (Reed-Solomon) say no, or the CRC would refuse the very
    /// frames they can repair.
    fn uses_link_crc(&self) -> bool {
        true
    }
}

/// How a service is chosen and tuned in a link configuration.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "scheme", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServiceConfig {
    /// No recovery (004's Raw Link).
    Raw(raw::RawConfig),
    /// XOR parity FEC (004 §III.D).
    XorFec(xor_fec::XorFecConfig),
    /// Go-Back-N (004 §III.A).
    GoBackN(go_back_n::GoBackNConfig),
    /// Selective Repeat with multiple NACKs per loss (004 §III.A).
    SelectiveRepeat(selective_repeat::SelectiveRepeatConfig),
    /// Karn's RLP: NACKs, keepalives, abandonment after N retransmissions (004 §III.A).
    KarnRlp(karn_rlp::KarnRlpConfig),
    /// Out-of-sequence RLP: Karn's RLP delivering on arrival (004 §III.A).
    OosRlp(oos_rlp::OosRlpConfig),
    /// Persistent in-order retransmission (003 §3).
    Persistent(persistent::PersistentConfig),
    /// Reed-Solomon FEC in 255-byte blocks with 003's BOLD/LIGHT/ROBUST/FLEX policies and
    /// persistent in-order retransmission (003 §3-4).
    RsFec(rs_fec::RsFecConfig),
    /// Berkeley Snoop, the TCP-aware base-station agent (004 §III.A).
    Snoop(snoop::SnoopConfig),
}

/// The short name a figure legend or a table gives scheme `id` (the configuration name,
/// `"selective_repeat"`): 004's and 003's names, abbreviated where the papers do (SR, GBN).
pub fn scheme_title(id: &str) -> Option<&'static str> {
    Some(match id {
        "raw" => "Raw",
        "xor_fec" => "XOR FEC",
        "go_back_n" => "GBN",
        "selective_repeat" => "SR",
        "karn_rlp" => "Karn's RLP",
        "oos_rlp" => "OOS RLP",
        "persistent" => "persistent ARQ",
        "rs_fec" => "RS FEC",
        "snoop" => "Snoop",
        _ => return None,
    })
}

impl ServiceConfig {
    /// The scheme's name.
    pub fn scheme(&self) -> &'static str {
        match self {
            ServiceConfig::Raw(_) => "raw",
            ServiceConfig::XorFec(_) => "xor_fec",
            ServiceConfig::GoBackN(_) => "go_back_n",
            ServiceConfig::SelectiveRepeat(_) => "selective_repeat",
            ServiceConfig::KarnRlp(_) => "karn_rlp",
            ServiceConfig::OosRlp(_) => "oos_rlp",
            ServiceConfig::Persistent(_) => "persistent",
            ServiceConfig::RsFec(_) => "rs_fec",
            ServiceConfig::Snoop(_) => "snoop",
        }
    }

    /// Bytes of the data header this scheme puts on each frame with sequence fields of
    /// `width` (004 §III.A: Raw 0, Karn/OOS RLP and XOR FEC one field, GBN/SR two). The
    /// Reed-Solomon service frames packets itself and is never cut by the link: 0.
    pub fn data_header_bytes(&self, width: crate::wire::SeqWidth) -> usize {
        match self {
            ServiceConfig::Raw(_) | ServiceConfig::RsFec(_) | ServiceConfig::Snoop(_) => 0,
            ServiceConfig::GoBackN(_) | ServiceConfig::SelectiveRepeat(_) => 2 * width.bytes(),
            ServiceConfig::KarnRlp(_)
            | ServiceConfig::OosRlp(_)
            | ServiceConfig::Persistent(_)
            | ServiceConfig::XorFec(_) => width.bytes(),
        }
    }

    /// The window the configuration asks for, for schemes that keep one in the link's
    /// sequence space (before clamping to the space, see [`crate::config::LinkConfig::notes`]).
    pub fn window(&self) -> Option<u64> {
        match self {
            ServiceConfig::GoBackN(c) => Some(c.window),
            ServiceConfig::SelectiveRepeat(c) => Some(c.window),
            ServiceConfig::KarnRlp(c) | ServiceConfig::OosRlp(c) => Some(c.window),
            ServiceConfig::Persistent(c) => Some(c.window),
            ServiceConfig::Raw(_)
            | ServiceConfig::XorFec(_)
            | ServiceConfig::RsFec(_)
            | ServiceConfig::Snoop(_) => None,
        }
    }

    /// Builds one end of the service for the given header format (segmentation and width come
    /// from the link; each scheme sets its own `piggyback_ack`).
    pub fn build(&self, format: HeaderFormat) -> Box<dyn Service> {
        match self {
            ServiceConfig::Raw(c) => Box::new(raw::Raw::new(c.clone(), format)),
            ServiceConfig::XorFec(c) => Box::new(xor_fec::XorFec::new(c.clone(), format)),
            ServiceConfig::GoBackN(c) => Box::new(go_back_n::GoBackN::new(
                c.clone(),
                HeaderFormat {
                    piggyback_ack: true,
                    ..format
                },
            )),
            ServiceConfig::SelectiveRepeat(c) => Box::new(selective_repeat::SelectiveRepeat::new(
                c.clone(),
                HeaderFormat {
                    piggyback_ack: true,
                    ..format
                },
            )),
            ServiceConfig::KarnRlp(c) => Box::new(karn_rlp::Rlp::karn(c, format)),
            ServiceConfig::OosRlp(c) => Box::new(karn_rlp::Rlp::oos(c, format)),
            ServiceConfig::Persistent(c) => Box::new(karn_rlp::Rlp::persistent(c, format)),
            ServiceConfig::RsFec(c) => Box::new(rs_fec::RsFec::new(c.clone(), format)),
            ServiceConfig::Snoop(c) => Box::new(snoop::Snoop::new(c.clone(), format)),
        }
    }
}
