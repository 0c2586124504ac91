//! Fuzz target: the whole receive path of a multi-service link — tag demultiplexing, CRC,
//! every service's frame parser and state machine, reassembly — fed arbitrary frames at
//! arbitrary times, interleaved with its own transmissions. Nothing may panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_link::config::LinkConfig;
use mslink_link::link::MultiServiceLink;
use mslink_link::Instant;

const CONFIG: &str = include_str!("../../crates/link/tests/fixtures/all_services.toml");
static PARSED: std::sync::OnceLock<LinkConfig> = std::sync::OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let config = PARSED.get_or_init(|| toml::from_str(CONFIG).expect("fixture parses"));
    let mut link = MultiServiceLink::new(config).expect("fixture is valid");
    let mut now = 0u64;
    let mut buf = Vec::new();
    // Records: [len][dt][bytes...]
    let mut rest = data;
    while let [len, dt, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (frame, next) = tail.split_at(n);
        now += *dt as u64 * 1_000_000;
        let t = Instant::from_nanos(now);
        if dt & 1 == 1 {
            let _ = link.handle_packet(t, frame);
        } else {
            link.handle_frame(t, frame);
        }
        link.handle_timeout(t);
        while link.poll_transmit(t, &mut buf).is_some() {
            buf.clear();
        }
        while link.poll_deliver().is_some() {}
        rest = next;
    }
});
