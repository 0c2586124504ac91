//! The checks of the `link_receive` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: records `[len][dt][bytes...]` fed to one end of a link carrying all eight services
//! (crates/link/tests/fixtures/all_services.toml). Each record advances the clock by
//! `dt` milliseconds; `bytes` (`len` of them, or what is left) is a packet from above when
//! `dt` is odd and a frame from the MAC when `dt` is even. After each record the link's timers
//! run and everything it sends or delivers is drained. Invariant: nothing panics anywhere on
//! the receive path. Returns the link's counters.

use mslink_link::config::LinkConfig;
use mslink_link::link::{LinkStats, MultiServiceLink};
use mslink_link::Instant;

/// The link configuration both the target and its seeds use.
pub const CONFIG: &str = include_str!("../../crates/link/tests/fixtures/all_services.toml");
static PARSED: std::sync::OnceLock<LinkConfig> = std::sync::OnceLock::new();

/// The parsed [`CONFIG`].
pub fn config() -> &'static LinkConfig {
    PARSED.get_or_init(|| toml::from_str(CONFIG).expect("fixture parses"))
}

/// One record's work on `link` at `t`: `bytes` as a packet from above (`dt` odd) or a frame
/// from the MAC (`dt` even), then the timers due, then every frame the link sends (each
/// handed to `sent`) and every packet it delivers. The seed generator drives its own copy of
/// the target's link through this, so it knows what the target's link sends.
pub fn step(
    link: &mut MultiServiceLink,
    t: Instant,
    dt: u8,
    bytes: &[u8],
    buf: &mut Vec<u8>,
    sent: &mut dyn FnMut(&[u8]),
) {
    if dt & 1 == 1 {
        let _ = link.handle_packet(t, bytes);
    } else {
        link.handle_frame(t, bytes);
    }
    link.handle_timeout(t);
    while link.poll_transmit(t, buf).is_some() {
        sent(buf);
        buf.clear();
    }
    while link.poll_deliver().is_some() {}
}

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> LinkStats {
    let mut link = MultiServiceLink::new(config()).expect("fixture is valid");
    let mut now = 0u64;
    let mut buf = Vec::new();
    let mut rest = data;
    while let [len, dt, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (bytes, next) = tail.split_at(n);
        now += *dt as u64 * 1_000_000;
        step(
            &mut link,
            Instant::from_nanos(now),
            *dt,
            bytes,
            &mut buf,
            &mut |_| {},
        );
        rest = next;
    }
    link.stats()
}
