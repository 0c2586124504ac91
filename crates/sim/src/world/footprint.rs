//! What one flow holds in a run, in bytes, from the world's own types: the figures
//! `crate::resources` adds up before anything is allocated.
//!
//! Contract. [`flow_state_bytes`] is the memory a flow of the given kind keeps for the whole
//! run, whatever its length: its slot in each of the world's per-flow tables (sizes from
//! `std::mem::size_of` of the very types the world stores), the heap its name owns, its
//! pending event, and what only some kinds hold: a datagram flow's duplicate window at its
//! largest ([`super::arrivals::MAX_HEAP_BYTES`], 512 bytes; a flow whose packets arrive in
//! order holds 32) and its delays: a flow that sends at most [`super::delays::EXACT`] packets
//! in the run (at its rate, from its start to its stop) keeps them, 256 bytes; a longer one a
//! sketch of one 128-bin block, 1 KiB, which holds delays within a factor of 13 of each other
//! (each further factor of 13 adds a block, up to [`super::delays::MAX_HEAP_BYTES`], 4 KiB;
//! counting that for every flow would put a million-flow estimate five times over the run), a
//! `cbr` flow's talk-spurt state and random stream, and a TCP flow's
//! connection state, window of packets in flight and SRTT readings (as a datagram flow's
//! delays, one reading per 100 ms of the run).
//! [`SERIES_POINT_BYTES`] is what each moving-window point of a flow costs while the run goes
//! (the sink's byte counter) and [`result_point_bytes`] what it costs in the results. Heap
//! blocks are counted as glibc's allocator rounds them ([`heap_block`]).

use std::mem::size_of;

use super::ftp::TcpFlow;
use super::www::WwwFlow;
use super::{arrivals, delays, Ev, FlowResult, Sink, Source, Talk, TimePoint};
use crate::scenario::{AppKind, Flow, HostSpec, Scenario, Segment, XcpRouterSpec};

/// Bytes glibc's malloc takes for a request of `n` bytes: the request and an 8-byte header,
/// rounded up to 16, at least 32 (nothing for `n = 0`: an empty `Vec` or `String` does not
/// allocate).
pub(crate) fn heap_block(n: usize) -> u64 {
    if n == 0 {
        0
    } else {
        (n + 8).next_multiple_of(16).max(32) as u64
    }
}

/// One entry of the world's event queue: the event, its time and its sequence number.
const EVENT_BYTES: u64 = (size_of::<Ev>() + 2 * size_of::<u64>()) as u64;

/// Per flow and moving window while the run goes: the sink's byte counter of that window.
pub(crate) const SERIES_POINT_BYTES: u64 = size_of::<u64>() as u64;

/// Bytes of IPv4 and TCP headers on every TCP segment (options not counted).
const TCP_HEADERS: u64 = crate::tcp::HEADERS as u64;

/// Memory flow `f`, named with `name_len` bytes, keeps for a run of `duration_s` seconds.
pub(crate) fn flow_state_bytes(f: &Flow, name_len: usize, duration_s: f64) -> u64 {
    // World::flows, sent, sources, sinks, frozen, tcp, www: one slot each, whatever the app.
    let tables = size_of::<(String, &Flow)>()
        + size_of::<u64>()
        + size_of::<Source>()
        + size_of::<Sink>()
        + size_of::<Option<FlowResult>>()
        + size_of::<Option<Box<TcpFlow>>>()
        + size_of::<Option<Box<WwwFlow>>>();
    let own = match f.app {
        AppKind::Ftp => {
            heap_block(size_of::<TcpFlow>())
                + tcp_connection_bytes(f)
                + delays_bytes(srtt_ticks(f, duration_s))
        }
        // A request and a reply connection (`www.rs`).
        AppKind::Www => heap_block(size_of::<WwwFlow>()) + 2 * tcp_connection_bytes(f),
        AppKind::Cbr => heap_block(size_of::<Talk>()) + datagram_sink_bytes(f, duration_s),
        AppKind::Constant | AppKind::Spray | AppKind::Ping => datagram_sink_bytes(f, duration_s),
    };
    tables as u64 + heap_block(name_len) + EVENT_BYTES + own
}

/// The heap of a datagram flow's sink: its duplicate window at its largest and its delays.
fn datagram_sink_bytes(f: &Flow, duration_s: f64) -> u64 {
    let stop = if f.stop_s > 0.0 {
        f.stop_s.min(duration_s)
    } else {
        duration_s
    };
    let packets = if f.app == AppKind::Spray || f.packet_bytes == 0 {
        f64::INFINITY // as fast as the link takes them
    } else {
        f.rate_bps * (stop - f.start_s).max(0.0) / (8 * f.packet_bytes) as f64
    };
    heap_block(arrivals::MAX_HEAP_BYTES) + delays_bytes(packets)
}

/// The heap of [`delays::Delays`] given `n` values: the exact list up to
/// [`delays::EXACT`], else the sketch with one block of bins.
fn delays_bytes(n: f64) -> u64 {
    if n <= delays::EXACT as f64 {
        heap_block(delays::EXACT * size_of::<f64>())
    } else {
        heap_block(delays::MAX_HEAP_BYTES[0]) + heap_block(delays::BLOCK_BYTES)
    }
}

/// The SRTT readings an `ftp` flow takes at most (`ftp.rs`): one per tick from its start to
/// the run's end (a transfer that finishes earlier takes fewer).
fn srtt_ticks(f: &Flow, duration_s: f64) -> f64 {
    (duration_s - f.start_s).max(0.0) / super::ftp::SRTT_TICK.as_secs_f64()
}

/// The heap of one TCP connection at its largest: a full window of segments in flight (each
/// its own packet buffer), one SACK scoreboard byte and one out-of-order block per segment,
/// and its timers' events. An `ftp` transfer smaller than its window never has more than
/// `size_bytes` in flight.
fn tcp_connection_bytes(f: &Flow) -> u64 {
    let t = &f.tcp;
    let mss = u64::from(t.mss.max(1));
    let mut window = t.send_buffer_bytes.min(t.recv_buffer_bytes);
    if f.app == AppKind::Ftp {
        window = window.min(f.size_bytes);
    }
    let segments = window.div_ceil(mss);
    // Receiver's out-of-order block: start, end and when it last changed.
    let block = 3 * size_of::<u64>() as u64;
    segments * (heap_block((mss + TCP_HEADERS) as usize) + 1 + block) + 2 * EVENT_BYTES
}

/// The part of [`flow_state_bytes`] a flow holds only while it runs: an `ftp` transfer's
/// connection with its window in flight (`crate::resources` counts it for the transfers
/// running at once); 0 for every other kind.
pub(crate) fn window_bytes(f: &Flow) -> u64 {
    match f.app {
        AppKind::Ftp => tcp_connection_bytes(f),
        _ => 0,
    }
}

/// What a sweep point costs for the whole invocation: its scenario (the structs of its
/// sections and the heap of their lists), its overrides and typed labels, and its share of the
/// digest and the plots (`POINT_OUTPUT_BYTES`).
pub(crate) fn point_bytes(sc: &Scenario) -> u64 {
    let services: usize = sc
        .segments
        .iter()
        .filter_map(|s| s.link.as_ref())
        .map(|l| l.services.len() * size_of::<mslink_link::config::ServiceSpec>())
        .sum();
    let lists = [
        sc.segments.len() * size_of::<Segment>(),
        sc.flows.len() * size_of::<Flow>(),
        sc.hosts.len() * size_of::<HostSpec>(),
        sc.xcp_routers.len() * size_of::<XcpRouterSpec>(),
        services,
    ];
    size_of::<Scenario>() as u64
        + lists.iter().map(|&n| heap_block(n)).sum::<u64>()
        + POINT_OUTPUT_BYTES
}

/// Per sweep point, beside its scenario: the overrides that make it and their labels, the
/// digest's row and the sweep plots' values (about 1 KiB each for a point of two keys; the
/// rest of the 2.9 KiB a point of 004 Fig. 7 measured at, a 10^4-point sweep's peak RSS,
/// docs/PERFORMANCE.md).
const POINT_OUTPUT_BYTES: u64 = 2048;

/// What `mslink sim` holds while it writes summary.json (crates/lab/src/campaign/output.rs,
/// `write_run`): the flows and the series are written one item at a time, so one flow's
/// `serde_json::Value` (2,886 bytes requested with the delay percentiles and jitter, `cargo
/// bench -p mslink-sim --bench flow_memory`; about 4.1 KiB with the allocator's rounding) and
/// its text twice, whatever the number of flows. (When the run was one `Value` tree, a
/// 1,000,000-flow run peaked at 4.4 GiB while writing, 0.7 GiB while running.)
pub(crate) const SUMMARY_JSON_FLOW_BYTES: u64 = 5888;

/// One moving-window point of one flow in a run's results: a [`TimePoint`] and its copy of
/// the flow's name.
pub(crate) fn result_point_bytes(name_len: usize) -> u64 {
    size_of::<TimePoint>() as u64 + heap_block(name_len)
}

/// One flow's row in a run's results: a [`FlowResult`] and its strings (name, application,
/// transport, services).
pub(crate) fn result_flow_bytes(name_len: usize) -> u64 {
    // "constant" / "newreno", and a service name or two.
    size_of::<FlowResult>() as u64 + heap_block(name_len) + 2 * heap_block(8) + heap_block(24)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_hold_what_their_kind_needs() {
        let cbr = flow_state_bytes(&Flow::default(), 8, 100.0);
        // Issue 18: a 16 KiB duplicate table per flow made 10^5 flows 1.6 GB; now the
        // duplicate window at its largest and a 1 KiB delay sketch.
        assert!(cbr < 3 * 1024, "{cbr}");
        // A flow of a few packets keeps their delays instead of a sketch.
        assert!(flow_state_bytes(&Flow::default(), 8, 0.1) < cbr - 512);
        let constant = Flow {
            app: AppKind::Constant,
            ..Flow::default()
        };
        // No talk spurts, no random stream.
        assert!(flow_state_bytes(&constant, 8, 100.0) < cbr);
        let ftp = Flow {
            app: AppKind::Ftp,
            size_bytes: 10_000_000,
            ..Flow::default()
        };
        assert!(flow_state_bytes(&ftp, 8, 100.0) > cbr);
        // A 20 kB transfer never has a 64 KiB window in flight.
        let small = Flow {
            size_bytes: 20_000,
            ..ftp.clone()
        };
        assert!(flow_state_bytes(&small, 8, 100.0) < flow_state_bytes(&ftp, 8, 100.0) / 2);
        assert_eq!(heap_block(0), 0);
        assert_eq!(heap_block(1), 32);
        assert_eq!(heap_block(16384), 16400);
    }
}
