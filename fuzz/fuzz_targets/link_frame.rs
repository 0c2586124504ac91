//! Fuzz target: the link frame view (service tag, CRC-32).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_link::wire::{LinkFormat, LinkFrame};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else { return };
    let f = LinkFormat { tagged: sel & 1 != 0, crc: sel & 2 != 0 };
    if let Ok(v) = LinkFrame::new_checked(frame, f) {
        assert_eq!(v.service_bytes().len() + f.overhead(), frame.len());
        let _ = v.tag();
    }
});
