//! TCP for the simulator: Reno, NewReno and SACK senders, a receiver with optional delayed
//! ACKs, and the RFC 6298 retransmission timer, as sans-IO state machines.
//!
//! Contract. Every machine follows docs/architecture.md rule 2: inputs `handle_*(now, ..)` and
//! `handle_timeout(now)` (a call with nothing due does nothing), outputs `poll_transmit(now)`
//! (one segment per call, `None` when nothing may be sent) and `poll_timeout()`, plus
//! `stats()`. A driver calls, after any input: `poll_transmit` until `None`, then
//! `poll_timeout` to (re)arm its timer. Segments are [`segment::Segment`] values with absolute
//! 64-bit sequence numbers; [`segment`] turns them into real IPv4/TCP bytes and back, so a
//! capture of any interface dissects as ordinary TCP.
//!
//! One concern per file: [`sender`] (loss recovery: RFC 5681 §3.2 Reno, RFC 6582 NewReno,
//! RFC 6675 SACK; with [`prr`], RFC 6937 PRR, and [`rack`], RFC 8985 RACK-TLP, as options),
//! [`cc`] (the congestion window: the [`cc::CongestionControl`] trait and its
//! RFC 5681 AIMD implementation, where XCP plugs in), [`cubic`] (RFC 9438 CUBIC window
//! growth, chosen by [`TcpConfig::congestion_control`]), [`rto`] (RFC 6298 estimator with a clock
//! granularity), [`sack`] (the RFC 6675 scoreboard), [`receiver`] (cumulative and selective
//! ACKs, RFC 1122/5681 delayed ACKs, the receive buffer) and [`segment`] (wire format).
//!
//! Data is sent in MSS-sized segments starting at offset 0, so every segment boundary is a
//! multiple of the MSS; the scoreboard and the retransmission logic rely on it. By default
//! there is no handshake and no FIN (as in ns-2's one-way agents): a connection starts
//! established, the window scale both ends use is derived from the receive buffer, and the
//! transfer ends when the last byte is acknowledged. With `handshake = true` the sender
//! opens with a SYN and closes with a FIN (RFC 9293 §3.5, §3.6; the sender's side lives in
//! `handshake.rs`, a child of [`sender`]); SYN and FIN each take one sequence number outside
//! the data offsets (the SYN just before offset 0, the FIN at offset `total`), so data
//! offsets stay 0-based and MSS-aligned. With `timestamps = true` every segment carries
//! RFC 7323 timestamps ([`timestamps`]) and the sender samples the RTT from their echo.

pub mod cc;
pub mod cubic;
pub mod hystart;
pub mod prr;
pub mod rack;
pub mod receiver;
/// The RFC 6298 estimator lives in the link crate (one implementation for TCP and the link's
/// ARQ services).
pub use mslink_link::rto;
pub use mslink_link::rto::RtoFlavour;
pub mod sack;
pub mod segment;
pub mod sender;
pub mod timestamps;

pub use receiver::{Receiver, ReceiverStats};
pub use segment::Segment;
pub use sender::{Sender, SenderStats};

use mslink_link::Duration;

/// The loss-recovery algorithm of a sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// RFC 5681 §3.2 fast retransmit and fast recovery; recovery ends at the first new ACK.
    /// 004 §III.A used TCP Reno.
    #[default]
    Reno,
    /// RFC 6582: recovery lasts until all data outstanding at its start is acknowledged;
    /// each partial ACK retransmits the next hole. Written `newreno` (or `new_reno`).
    #[serde(rename = "newreno", alias = "new_reno")]
    NewReno,
    /// RFC 6675 with RFC 2018 SACK blocks: a scoreboard, `pipe`, and `NextSeg()`.
    Sack,
}

impl Variant {
    /// The name used in result files.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Reno => "reno",
            Variant::NewReno => "newreno",
            Variant::Sack => "sack",
        }
    }
}

/// How the congestion window grows and how far a loss cuts it; independent of [`Variant`]
/// (loss recovery), so every pair combines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowGrowth {
    /// RFC 5681 AIMD ([`cc::Aimd`]): +1 SMSS per RTT, ssthresh = FlightSize / 2. What ns-2
    /// and the 004/003/001 reproductions use.
    #[default]
    Reno,
    /// RFC 9438 CUBIC ([`cubic::Cubic`]): W_cubic(t) = C (t - K)^3 + W_max with a
    /// Reno-friendly floor, ssthresh = 0.7 cwnd. Linux's default.
    Cubic,
}

impl WindowGrowth {
    /// The name used in configuration.
    pub fn name(self) -> &'static str {
        match self {
            WindowGrowth::Reno => "reno",
            WindowGrowth::Cubic => "cubic",
        }
    }
}

/// Which CUBIC runs with `congestion_control = "cubic"`: the RFC's or Linux's `tcp_cubic.c`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CubicFlavour {
    /// RFC 9438 as written: cwnd jumps to the Reno-friendly W_est (§4.3), whose alpha becomes
    /// 1 once W_est reaches cwnd_prior.
    #[default]
    Rfc9438,
    /// Linux's `tcp_cubic.c` (`bictcp_update`): W_est grows at alpha_cubic throughout, cwnd
    /// approaches the larger of W_cubic(t + RTT) and W_est by (target - cwnd) / cwnd per
    /// acknowledged segment (at most 1/2), at least 1/20 before the first loss, and 1/(100
    /// cwnd) at or above the target.
    Linux,
}

/// How `congestion_control = "reno"` halves its window on a loss: as RFC 5681 writes it or as
/// Linux's `tcp_reno_ssthresh` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RenoFlavour {
    /// RFC 5681 §3.1 eq. (4): ssthresh = max(FlightSize / 2, 2 SMSS), in bytes.
    #[default]
    Rfc5681,
    /// Linux's `tcp_reno_ssthresh`: ssthresh = max(cwnd / 2, 2) in whole segments, rounded
    /// down (a window of 9 segments leaves 4, not 4.5).
    Linux,
}

/// Everything that tunes one TCP connection (both ends).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Loss recovery of the sender.
    pub variant: Variant,
    /// Window growth of the sender: `"reno"` (RFC 5681 AIMD, the default) or `"cubic"`
    /// (RFC 9438). Not with `xcp = true`.
    pub congestion_control: WindowGrowth,
    /// Which CUBIC: `"rfc9438"` (the default) or `"linux"`, as `tcp_cubic.c` runs it
    /// (docs/validation.md). Read only with `congestion_control = "cubic"`, so a Linux-like
    /// file keeps it when a run switches the control to Reno.
    pub cubic_flavour: CubicFlavour,
    /// How Reno halves its window: `"rfc5681"` (the default: half the flight in bytes) or
    /// `"linux"`, as `tcp_reno_ssthresh` does (half the window in whole segments, rounded
    /// down; docs/validation.md). Read only with `congestion_control = "reno"`, so a
    /// Linux-like file keeps it when a run switches the control to CUBIC.
    pub reno_flavour: RenoFlavour,
    /// Window growth by the bytes acknowledged (RFC 3465 Appropriate Byte Counting, L =
    /// 2 SMSS, as Linux counts acknowledged segments) instead of per ACK (RFC 5681 eq. 2 and
    /// 3, ns-2's agents and 004: the default). With delayed ACKs per-ACK counting grows the
    /// window half as fast in congestion avoidance (docs/validation.md). CUBIC counts bytes
    /// in congestion avoidance either way; this sets its slow start's.
    pub byte_counting: bool,
    /// Maximum segment size: payload bytes per segment (the IP packet is 40 bytes more).
    pub mss: u32,
    /// Initial congestion window in segments (RFC 5681 §3.1 allows up to 4; ns-2 and 004
    /// start at 1).
    pub initial_window: u32,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681 §3.2: 3).
    pub dupack_threshold: u32,
    /// Limited transmit (RFC 3042): on each of the first two duplicate ACKs outside
    /// recovery, send one new segment beyond the congestion window (flight up to cwnd +
    /// 2*SMSS), so a small window still gathers the duplicates fast retransmit needs. Linux
    /// has it on; ns-2's agents and 004 did not (default off).
    pub limited_transmit: bool,
    /// Proportional Rate Reduction (RFC 6937, PRR-SSRB): during fast recovery each ACK may
    /// send `sndcnt` bytes, so the flight falls smoothly to ssthresh, instead of RFC 5681's
    /// window inflation or RFC 6675's `cwnd - pipe`; cwnd = ssthresh when recovery ends.
    /// `newreno` and `sack` only. Linux has it on; ns-2 and 004 did not (default off).
    pub prr: bool,
    /// RACK-TLP (RFC 8985): losses are detected by transmit time (a segment is lost once one
    /// sent after it is delivered and RACK.rtt + reo_wnd has passed) instead of DupThresh,
    /// and a tail loss probe (PTO = 2 SRTT) replaces most tail timeouts. `sack` only. Linux
    /// has it on; ns-2 and 004 did not (default off).
    pub rack: bool,
    /// Clock granularity G of the retransmission timer, seconds (RFC 6298 §2; 004 used
    /// 500 ms timers). 0 means a perfect clock.
    pub granularity_s: f64,
    /// Lower bound on the RTO, seconds (RFC 6298 (2.4): 1 s).
    pub min_rto_s: f64,
    /// Upper bound on the RTO after backoff, seconds (RFC 6298 (2.5): at least 60 s).
    pub max_rto_s: f64,
    /// RTO before the first RTT sample, seconds (RFC 6298 (2.1): 1 s).
    pub initial_rto_s: f64,
    /// Which retransmission timer: `"rfc6298"` (the default: `max(min_rto, SRTT + 4
    /// RTTVAR)`, the timer restarted by new ACKs only) or `"linux"`, as the kernel runs it:
    /// `SRTT + max(4 mdev, min_rto)` with the deviation tracked per round trip
    /// (`tcp_rtt_estimator`), and the timer restarted whenever the first unacknowledged
    /// segment is retransmitted (`tcp_xmit_retransmit_queue`), so a repair gets a whole RTO to
    /// come back (docs/validation.md).
    pub rto_flavour: RtoFlavour,
    /// Send socket buffer, bytes: bounds the data in flight.
    pub send_buffer_bytes: u64,
    /// Receive socket buffer, bytes: the advertised window.
    pub recv_buffer_bytes: u64,
    /// Whether the receiver delays ACKs (RFC 1122 §4.2.3.2, RFC 5681 §4.2): an ACK for at
    /// least every second full-sized segment, and within `delayed_ack_s` of the first
    /// unacknowledged one. ns-2's default sink (as in 004) ACKs every segment.
    pub delayed_ack: bool,
    /// Longest delay of a delayed ACK, seconds (RFC 1122: under 0.5 s).
    pub delayed_ack_s: f64,
    /// XCP (Katabi et al. 2002, as 001 uses it): the window follows the feedback routers
    /// write into each segment's congestion header (a `[[host]]` with `xcp_capacity_bps`, or
    /// none: then the sender grows by at most one segment per ACK). Loss recovery stays
    /// `variant`'s.
    pub xcp: bool,
    /// The three-way handshake and the FIN exchange (RFC 9293 §3.5, §3.6): the sender opens
    /// with a SYN carrying its options, data starts when the SYN-ACK arrives, and after the
    /// last byte each end sends a FIN. ns-2's one-way agents and 004 have neither (default
    /// off).
    pub handshake: bool,
    /// RFC 7323 timestamps on every segment (12 more header bytes each): the receiver echoes
    /// TS.Recent (§4.3) and the sender takes an RTT sample from every ACK of new data (§4.1),
    /// retransmissions included. Off by default (ns-2's agents and 004 used Karn sampling).
    /// With `handshake`, used only if both SYNs carry the option.
    pub timestamps: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            variant: Variant::Reno,
            congestion_control: WindowGrowth::Reno,
            cubic_flavour: CubicFlavour::Rfc9438,
            reno_flavour: RenoFlavour::Rfc5681,
            byte_counting: false,
            mss: 1460,
            initial_window: 1,
            dupack_threshold: 3,
            limited_transmit: false,
            prr: false,
            rack: false,
            granularity_s: 0.5,
            min_rto_s: 1.0,
            max_rto_s: 64.0,
            initial_rto_s: 1.0,
            rto_flavour: RtoFlavour::Rfc6298,
            send_buffer_bytes: 65_536,
            recv_buffer_bytes: 65_536,
            delayed_ack: false,
            delayed_ack_s: 0.2,
            xcp: false,
            handshake: false,
            timestamps: false,
        }
    }
}

/// Bytes of the IPv4 and TCP headers of a data segment (no options).
pub const HEADERS: u32 = 40;

impl TcpConfig {
    /// Checks every value; the error names the key (relative to the `tcp` table).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.mss == 0 || self.mss + HEADERS > 65_535 {
            return Err((
                "mss",
                format!("must be 1..={}, got {}", 65_535 - HEADERS, self.mss),
            ));
        }
        if self.xcp && self.congestion_control != WindowGrowth::Reno {
            return Err((
                "congestion_control",
                format!(
                    "\"{}\" cannot be combined with xcp = true (XCP's routers set the window); use \"reno\" or xcp = false",
                    self.congestion_control.name()
                ),
            ));
        }
        if self.initial_window == 0 {
            return Err(("initial_window", "must be at least 1 segment".into()));
        }
        if self.dupack_threshold == 0 {
            return Err(("dupack_threshold", "must be at least 1".into()));
        }
        if self.prr && self.variant == Variant::Reno {
            // Reno leaves recovery at the first new ACK, so PRR would only pace the duplicates.
            return Err((
                "prr",
                "needs variant = \"newreno\" or \"sack\" (Reno ends recovery at the first new ACK)"
                    .into(),
            ));
        }
        if self.rack && self.variant != Variant::Sack {
            return Err((
                "rack",
                "needs variant = \"sack\" (RACK-TLP reads the SACK scoreboard)".into(),
            ));
        }
        for (k, v) in [
            ("granularity_s", self.granularity_s),
            ("min_rto_s", self.min_rto_s),
            ("delayed_ack_s", self.delayed_ack_s),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err((k, format!("must be zero or more seconds, got {v}")));
            }
        }
        for (k, v) in [
            ("max_rto_s", self.max_rto_s),
            ("initial_rto_s", self.initial_rto_s),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err((k, format!("must be a positive number of seconds, got {v}")));
            }
        }
        if self.max_rto_s < self.min_rto_s {
            return Err(("max_rto_s", "must not be below min_rto_s".into()));
        }
        if self.send_buffer_bytes < self.mss as u64 {
            return Err(("send_buffer_bytes", "must hold at least one segment".into()));
        }
        if self.timestamps && self.xcp {
            return Err((
                "timestamps",
                "cannot be combined with xcp: the XCP header, timestamps and three SACK blocks exceed the 40 bytes of TCP options".into(),
            ));
        }
        if self.recv_buffer_bytes < self.mss as u64 || self.recv_buffer_bytes > 1 << 30 {
            return Err((
                "recv_buffer_bytes",
                format!("must be mss..=2^30 bytes, got {}", self.recv_buffer_bytes),
            ));
        }
        Ok(())
    }

    /// The transport name in result files: the variant (`reno`, `newreno`, `sack`), with
    /// `+cubic` appended when CUBIC grows the window (`sack+cubic`).
    pub fn transport_name(&self) -> &'static str {
        match (self.congestion_control, self.variant) {
            (WindowGrowth::Reno, v) => v.name(),
            (WindowGrowth::Cubic, Variant::Reno) => "reno+cubic",
            (WindowGrowth::Cubic, Variant::NewReno) => "newreno+cubic",
            (WindowGrowth::Cubic, Variant::Sack) => "sack+cubic",
        }
    }

    /// The window scale shift both ends use (RFC 7323 §2): the smallest that fits the
    /// receive buffer in the 16-bit window field.
    pub fn window_shift(&self) -> u8 {
        let mut s = 0;
        while self.recv_buffer_bytes >> s > 65_535 {
            s += 1;
        }
        s
    }

    /// Bytes of IPv4 and TCP headers on a full data segment: [`HEADERS`], plus the
    /// timestamps option (12) or the XCP option (16) when on.
    pub fn data_headers(&self) -> u32 {
        HEADERS
            + if self.timestamps {
                segment::TS_OPTION_LEN as u32
            } else {
                0
            }
            + if self.xcp { 16 } else { 0 }
    }

    pub(crate) fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }
}
