//! Fuzz target: the service header parser in every format; a parsed header re-emits to the
//! same bytes it was read from.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_link::wire::{Header, HeaderFormat, SeqWidth};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else { return };
    let width = [SeqWidth::W8, SeqWidth::W16, SeqWidth::W32][(sel % 3) as usize];
    let f = HeaderFormat { width, segmented: sel & 8 != 0, piggyback_ack: sel & 16 != 0 };
    if let Ok((h, n)) = f.parse(frame) {
        assert!(n <= frame.len());
        let mut out = vec![0u8; n];
        assert_eq!(f.emit(&h, &mut out), n);
        assert_eq!(f.parse(&out).map(|(h2, _)| h2), Ok(h));
        if let Header::Unknown { .. } = h {
            assert_eq!(n, 1);
        }
    }
});
