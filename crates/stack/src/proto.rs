//! The uniform protocol interface (002 §4.1, after the x-kernel's UPI): every protocol object
//! implements [`Protocol`] and knows nothing of its neighbours. The graph tells a protocol the
//! *relative number* under which an upper protocol or application is reached (an Ethernet type,
//! an IP protocol number, a UDP port); the protocol keeps its sessions and demux maps.
//!
//! Contract (receive, one frame): the graph calls [`Protocol::demux`] on the bytes starting at
//! this layer's header (pure: no state change) and then, at a point the architecture chooses,
//! [`Protocol::pop`] on the session demux named (or that a DAA path names) with the message whose
//! front is this layer's header. `pop` does the state change: validates, strips the header,
//! trims trailing bytes, updates the session's counters. LLM calls demux, pop, demux, pop, ...;
//! ILLM calls every demux, then every pop (002 §4.3); DAA calls one demux at the bottom and then
//! every pop along the path (002 §4.2). Send: [`Protocol::push`] prepends this layer's header.
//! A malformed header is an `Err(DropReason)`, never a panic.

use crate::msg::Message;
use mslink_wire::checksum::Sum;

/// Index of a protocol in a graph.
pub type ProtoId = usize;

/// Index of a session inside its protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub u32);

/// Why a received frame was dropped at some layer (counted per protocol in the stack's stats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// Fewer bytes than the header (or a length field) needs.
    Truncated,
    /// A field value we do not accept (IP version, header length, DAA ethertype, ...).
    BadHeader,
    /// A length field inconsistent with the bytes present.
    BadLength,
    /// Header or data checksum wrong.
    BadChecksum,
    /// Addressed to another station.
    NotForUs,
    /// No session matches the demux key.
    NoSession,
    /// A valid feature we do not implement (IP fragments).
    Unsupported,
    /// A DAA priority queue was full.
    QueueFull,
    /// A TCP segment that is not the next one expected (there is no reassembly queue).
    OutOfOrder,
}

impl From<mslink_wire::WireError> for DropReason {
    fn from(e: mslink_wire::WireError) -> Self {
        use mslink_wire::WireError;
        match e {
            WireError::Truncated => DropReason::Truncated,
            WireError::Malformed => DropReason::BadHeader,
            WireError::BadLength => DropReason::BadLength,
            WireError::BadChecksum => DropReason::BadChecksum,
            WireError::Unsupported => DropReason::Unsupported,
        }
    }
}

impl DropReason {
    /// Number of reasons (size of per-protocol counter arrays).
    pub const COUNT: usize = 9;
    /// All reasons, in counter order.
    pub const ALL: [DropReason; Self::COUNT] = [
        DropReason::Truncated,
        DropReason::BadHeader,
        DropReason::BadLength,
        DropReason::BadChecksum,
        DropReason::NotForUs,
        DropReason::NoSession,
        DropReason::Unsupported,
        DropReason::QueueFull,
        DropReason::OutOfOrder,
    ];
    /// Position in [`DropReason::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What a demux call found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demuxed {
    /// The session the frame belongs to at this layer.
    pub session: SessionId,
    /// Length of this layer's header (where the next layer's header starts).
    pub hdr_len: usize,
    /// A network layer's (source, destination) addresses, for the demux of the layer above
    /// (TCP's 4-tuple); `None` from layers without addresses of that kind.
    pub addrs: Option<([u8; 4], [u8; 4])>,
}

/// What the demux calls below a layer found out, handed to [`Protocol::demux_below`]: the
/// addresses a transport protocol's demux key includes (002 §4.3: ILLM demultiplexes every layer
/// before any state change, so this cannot come from the pops).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Below {
    /// Source address of the network layer.
    pub src_ip: Option<[u8; 4]>,
    /// Destination address of the network layer.
    pub dst_ip: Option<[u8; 4]>,
}

impl Below {
    /// Takes in what one layer's demux found.
    pub fn note(&mut self, d: &Demuxed) {
        if let Some((s, t)) = d.addrs {
            self.src_ip = Some(s);
            self.dst_ip = Some(t);
        }
    }
}

/// The participants of a connection: every address a layer may need to open a session or write
/// a header. Each protocol reads the fields it understands (as x-kernel participant lists).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Participants {
    /// Our station (MAC) address.
    pub local_mac: [u8; 6],
    /// The peer's station address.
    pub remote_mac: [u8; 6],
    /// Our IPv4 address.
    pub local_ip: [u8; 4],
    /// The peer's IPv4 address.
    pub remote_ip: [u8; 4],
    /// Our UDP port.
    pub local_port: u16,
    /// The peer's UDP port.
    pub remote_port: u16,
    /// DAA: our application id (the demux key's last part, 002 §4.2.1).
    pub local_app: u32,
    /// DAA: the peer application's id, written into frames we send.
    pub remote_app: u32,
    /// DAA: the deadline/priority field written into frames we send (larger = more urgent).
    pub priority: u32,
    /// UDP: compute a checksum on send and verify a non-zero one on receive.
    pub udp_checksum: bool,
}

/// Per-frame receive context handed down the `pop` calls: integrated-layer-processing choice,
/// the application buffer, and the DAA priority seen at the bottom.
#[derive(Debug, Default)]
pub struct RxCtx {
    /// Copy-and-checksum in one pass (true) or copy then checksum (false).
    pub ilp: bool,
    /// The application's buffer, filled by whichever layer copies the payload.
    pub user: Vec<u8>,
    /// True once a layer has copied the payload into `user`.
    pub copied: bool,
    /// The DAA deadline/priority field of the frame (0 without DAA).
    pub priority: u32,
    /// IPv4 source address, set by the IP layer's pop for the pseudo-header above it.
    pub src_ip: [u8; 4],
    /// IPv4 destination address, set by the IP layer's pop.
    pub dst_ip: [u8; 4],
    /// Set by a layer that took the whole frame as control (a TCP segment without data, a pure
    /// ACK): nothing is delivered to the application, and the stack counts it as consumed.
    pub consumed: bool,
    /// Demultiplexing operations made for this frame (the graph counts them).
    pub demuxes: u32,
    /// State changes (`pop`s) made for this frame so far.
    pub pops: u32,
    /// State changes made before the frame's latest demultiplexing operation: 0 when every
    /// demultiplexing comes first (002 §4.3's ILLM, §4.2's DAA), one per layer below the top in
    /// LLM, where they alternate (002 §3.1).
    pub pops_before_last_demux: u32,
}

impl RxCtx {
    /// Copies `payload` into the user buffer and adds it to `sum`, in one pass or two.
    pub fn copy_with_sum(&mut self, payload: &[u8], sum: &mut Sum) {
        self.user.clear();
        self.user.resize(payload.len(), 0);
        if self.ilp {
            one_pass(payload, &mut self.user, sum);
        } else {
            two_pass(payload, &mut self.user, sum);
        }
        self.copied = true;
    }
}

// Kept out of line so each variant is compiled as it is in the stand-alone benchmark.
#[inline(never)]
fn one_pass(src: &[u8], dst: &mut [u8], sum: &mut Sum) {
    mslink_wire::checksum::copy_and_sum(src, dst, sum)
}

#[inline(never)]
fn two_pass(src: &[u8], dst: &mut [u8], sum: &mut Sum) {
    mslink_wire::checksum::copy_then_sum(src, dst, sum)
}

/// How a session is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Find or create the session for this layer's demux key and enter it in the demux map
    /// (LLM and ILLM: lower sessions are shared by every connection with the same key).
    Shared,
    /// Create a session private to one path (DAA: one session per layer per connection). The
    /// bottom protocol still enters it in its single demux map under the application id.
    Path,
}

/// Failure to open a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The demux key is taken by another connection.
    #[error("demux key already in use")]
    KeyInUse,
}

/// The uniform protocol interface.
pub trait Protocol: Send {
    /// Short name for stats and docs ("eth", "ipv4", "udp").
    fn name(&self) -> &'static str;

    /// Opens a session for `p`, reached from above under relative number `hlp` (the number this
    /// layer writes into its header's type/protocol/port field to name the layer above).
    fn open(&mut self, p: &Participants, hlp: u32, mode: OpenMode) -> Result<SessionId, OpenError>;

    /// Closes a session opened with `open` (drops its demux entry when no one else uses it).
    fn close(&mut self, s: SessionId);

    /// Finds the session of a received frame from the header at the front of `hdr`. Pure.
    fn demux(&self, hdr: &[u8]) -> Result<Demuxed, DropReason>;

    /// [`Protocol::demux`] knowing what the layers below found (the graph calls this one); a
    /// protocol whose demux key includes lower layers' addresses (TCP) overrides it.
    fn demux_below(&self, hdr: &[u8], below: &Below) -> Result<Demuxed, DropReason> {
        let _ = below;
        self.demux(hdr)
    }

    /// State change for a received frame on session `s`: validate, strip the header, trim.
    fn pop(&mut self, s: SessionId, msg: &mut Message, rx: &mut RxCtx) -> Result<(), DropReason>;

    /// Prepends this layer's header for session `s` to an outgoing message.
    fn push(&mut self, s: SessionId, msg: &mut Message);

    /// Whether session `s` owes its peer an acknowledgement no outgoing segment has carried yet
    /// (TCP; [`crate::Stack::flush_acks`] sends it). Protocols without ACKs owe none.
    fn ack_owed(&self, s: SessionId) -> bool {
        let _ = s;
        false
    }

    /// Frames and bytes popped on session `s` (state the pop phase changes).
    fn session_counters(&self, s: SessionId) -> (u64, u64);
}
