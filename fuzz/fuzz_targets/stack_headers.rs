//! Fuzz target: the mslink-stack header views and reprs (Ethernet, ETHDAA, IPv4, UDP;
//! DESIGN.md rule 5). Invariants: no view or parse panics on any input, and every header that
//! parses emits back to a buffer that parses to the same repr.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_stack::header::eth::{DaaFrame, DaaRepr, EthFrame, EthRepr};
use mslink_stack::header::ipv4::{Ipv4Packet, Ipv4Repr};
use mslink_stack::header::udp::{UdpPacket, UdpRepr};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = EthFrame::new_checked(data).and_then(|f| EthRepr::parse(&f)) {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut EthFrame::new_unchecked(&mut b[..]));
        assert_eq!(EthRepr::parse(&EthFrame::new_checked(&b[..]).unwrap()), Ok(r));
    }
    if let Ok(r) = DaaFrame::new_checked(data).and_then(|f| DaaRepr::parse(&f)) {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut DaaFrame::new_unchecked(&mut b[..]));
        assert_eq!(DaaRepr::parse(&DaaFrame::new_checked(&b[..]).unwrap()), Ok(r));
    }
    if let Ok(r) = Ipv4Packet::new_checked(data).and_then(|p| Ipv4Repr::parse(&p)) {
        // Options are not emitted: the round trip holds for the repr, not the bytes.
        let mut b = vec![0u8; r.buffer_len() + r.payload_len];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
        assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&b[..]).unwrap()), Ok(r));
    }
    if let Ok(r) = UdpPacket::new_checked(data).and_then(|p| UdpRepr::parse(&p)) {
        let mut b = vec![0u8; r.buffer_len() + r.payload_len];
        r.emit(&mut UdpPacket::new_unchecked(&mut b[..]));
        assert_eq!(UdpRepr::parse(&UdpPacket::new_checked(&b[..]).unwrap()), Ok(r));
    }
});
