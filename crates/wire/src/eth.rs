//! Ethernet II (IEEE 802.3 type field) and the DAA-extended header of 002 §4.2.1.
//!
//! Contract: [`EthFrame`] views `dst(6) src(6) type(2) payload`; [`DaaFrame`] views the
//! extended header `dst(6) src(6) 0x88B5(2) app_id(4) deadline_priority(4) inner_type(2)
//! payload` (002 §4.2.1: the two added 4-byte fields, then the protocol id of the stack above).
//! Both check only that the header fits; whether the type is acceptable is the protocol's call.

use crate::{get_array, get_u16, get_u32, Field, WireError};

/// Length of the plain Ethernet header.
pub const ETH_HDR_LEN: usize = 14;
/// Length of the DAA-extended Ethernet header (002 §4.2.1: two added 4-byte fields, plus the
/// inner type).
pub const ETH_DAA_HDR_LEN: usize = 24;
/// The ethertype that marks a DAA-extended header (IEEE 802 local experimental ethertype 1).
pub const ETHERTYPE_DAA: u16 = 0x88B5;
/// IPv4's ethertype.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// IPv6's ethertype.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;

/// Byte ranges of the fields.
pub mod field {
    use super::Field;
    /// Destination station.
    pub const DST: Field = 0..6;
    /// Source station.
    pub const SRC: Field = 6..12;
    /// Ethertype (for DAA: [`crate::eth::ETHERTYPE_DAA`]).
    pub const ETHERTYPE: Field = 12..14;
    /// Start of a plain frame's payload.
    pub const PAYLOAD: usize = 14;
    /// DAA: the receiving application's id (002 §4.2.1).
    pub const DAA_APP: Field = 14..18;
    /// DAA: the deadline/priority field (002 §4.2.1, §4.3).
    pub const DAA_PRIORITY: Field = 18..22;
    /// DAA: the inner type, the protocol id of the stack above.
    pub const DAA_INNER_TYPE: Field = 22..24;
    /// Start of a DAA frame's payload.
    pub const DAA_PAYLOAD: usize = 24;
}

/// A plain Ethernet header at the start of a buffer.
#[derive(Clone, Copy, Debug)]
pub struct EthFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthFrame<T> {
    /// A view without checks (the caller sized the buffer; accessors may panic otherwise).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        EthFrame { buffer }
    }

    /// A view of a buffer holding at least the 14-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < field::PAYLOAD {
            return Err(WireError::Truncated);
        }
        Ok(EthFrame { buffer })
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination station.
    #[inline]
    pub fn dst(&self) -> [u8; 6] {
        get_array(self.buffer.as_ref(), field::DST)
    }

    /// The destination bytes, borrowed (for comparisons without a copy).
    #[inline]
    pub fn dst_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DST]
    }

    /// Source station.
    #[inline]
    pub fn src(&self) -> [u8; 6] {
        get_array(self.buffer.as_ref(), field::SRC)
    }

    /// Ethertype.
    #[inline]
    pub fn ethertype(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::ETHERTYPE)
    }

    /// Everything after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthFrame<T> {
    /// Sets the destination station.
    #[inline]
    pub fn set_dst(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a);
    }

    /// Sets the source station.
    #[inline]
    pub fn set_src(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a);
    }

    /// Sets the ethertype.
    #[inline]
    pub fn set_ethertype(&mut self, t: u16) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.to_be_bytes());
    }
}

/// The values of a plain Ethernet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EthRepr {
    /// Destination station.
    pub dst: [u8; 6],
    /// Source station.
    pub src: [u8; 6],
    /// Ethertype (any value is kept).
    pub ethertype: u16,
}

impl EthRepr {
    /// The header's values.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(f: &EthFrame<T>) -> Result<Self, WireError> {
        Ok(EthRepr {
            dst: f.dst(),
            src: f.src(),
            ethertype: f.ethertype(),
        })
    }

    /// Header length in bytes.
    pub const fn buffer_len(&self) -> usize {
        field::PAYLOAD
    }

    /// Writes the header into the first [`Self::buffer_len`] bytes of `f`.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, f: &mut EthFrame<T>) {
        f.set_dst(self.dst);
        f.set_src(self.src);
        f.set_ethertype(self.ethertype);
    }
}

/// A DAA-extended Ethernet header at the start of a buffer.
#[derive(Clone, Copy, Debug)]
pub struct DaaFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> DaaFrame<T> {
    /// A view without checks (the caller sized the buffer).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        DaaFrame { buffer }
    }

    /// A view of a buffer holding at least the 24-byte extended header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < field::DAA_PAYLOAD {
            return Err(WireError::Truncated);
        }
        Ok(DaaFrame { buffer })
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The plain Ethernet part of the header.
    #[inline]
    pub fn eth(&self) -> EthFrame<&[u8]> {
        EthFrame::new_unchecked(self.buffer.as_ref())
    }

    /// The receiving application's id.
    #[inline]
    pub fn app_id(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::DAA_APP)
    }

    /// The deadline/priority field.
    #[inline]
    pub fn priority(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::DAA_PRIORITY)
    }

    /// The inner type (protocol id of the stack above).
    #[inline]
    pub fn inner_type(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::DAA_INNER_TYPE)
    }

    /// Everything after the extended header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DAA_PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DaaFrame<T> {
    /// The plain Ethernet part, writable.
    #[inline]
    pub fn eth_mut(&mut self) -> EthFrame<&mut [u8]> {
        EthFrame::new_unchecked(self.buffer.as_mut())
    }

    /// Sets the application id.
    #[inline]
    pub fn set_app_id(&mut self, v: u32) {
        self.buffer.as_mut()[field::DAA_APP].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the deadline/priority field.
    #[inline]
    pub fn set_priority(&mut self, v: u32) {
        self.buffer.as_mut()[field::DAA_PRIORITY].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the inner type.
    #[inline]
    pub fn set_inner_type(&mut self, v: u16) {
        self.buffer.as_mut()[field::DAA_INNER_TYPE].copy_from_slice(&v.to_be_bytes());
    }
}

/// The values of a DAA-extended Ethernet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DaaRepr {
    /// Destination station.
    pub dst: [u8; 6],
    /// Source station.
    pub src: [u8; 6],
    /// Outer ethertype (normally [`crate::eth::ETHERTYPE_DAA`]; any value is kept).
    pub ethertype: u16,
    /// The receiving application's id.
    pub app_id: u32,
    /// Deadline/priority.
    pub priority: u32,
    /// Inner type.
    pub inner_type: u16,
}

impl DaaRepr {
    /// The header's values.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(f: &DaaFrame<T>) -> Result<Self, WireError> {
        let e = f.eth();
        Ok(DaaRepr {
            dst: e.dst(),
            src: e.src(),
            ethertype: e.ethertype(),
            app_id: f.app_id(),
            priority: f.priority(),
            inner_type: f.inner_type(),
        })
    }

    /// Header length in bytes.
    pub const fn buffer_len(&self) -> usize {
        field::DAA_PAYLOAD
    }

    /// Writes the header into the first [`Self::buffer_len`] bytes of `f`.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, f: &mut DaaFrame<T>) {
        let mut e = f.eth_mut();
        e.set_dst(self.dst);
        e.set_src(self.src);
        e.set_ethertype(self.ethertype);
        f.set_app_id(self.app_id);
        f.set_priority(self.priority);
        f.set_inner_type(self.inner_type);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DAA header written out by hand, field by field (002 §4.2.1 layout).
    const DAA_FIXTURE: [u8; 26] = [
        2, 0, 0, 0, 0, 2, // dst
        2, 0, 0, 0, 0, 1, // src
        0x88, 0xB5, // local experimental ethertype 1
        0, 0, 0, 9, // app id 9
        0, 0, 0, 5, // priority 5
        0x08, 0x00, // inner type IPv4
        0xAA, 0xBB, // payload
    ];

    #[test]
    fn daa_fixture_parses_and_round_trips() {
        let f = DaaFrame::new_checked(&DAA_FIXTURE[..]).unwrap();
        let r = DaaRepr::parse(&f).unwrap();
        assert_eq!(
            r,
            DaaRepr {
                dst: [2, 0, 0, 0, 0, 2],
                src: [2, 0, 0, 0, 0, 1],
                ethertype: 0x88B5,
                app_id: 9,
                priority: 5,
                inner_type: 0x0800,
            }
        );
        assert_eq!(f.payload(), &[0xAA, 0xBB]);
        let mut out = [0u8; 24];
        r.emit(&mut DaaFrame::new_unchecked(&mut out[..]));
        assert_eq!(out[..], DAA_FIXTURE[..24]);
        assert_eq!(r.buffer_len(), 24);
    }

    #[test]
    fn plain_fixture_parses_and_round_trips() {
        // dst broadcast, src 02:..:07, an unknown ethertype that is kept.
        let fx = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 7, 0x12, 0x34, 1,
        ];
        let f = EthFrame::new_checked(&fx[..]).unwrap();
        let r = EthRepr::parse(&f).unwrap();
        assert_eq!(r.ethertype, 0x1234);
        assert_eq!(r.dst, [0xff; 6]);
        assert_eq!(f.payload(), &[1]);
        let mut out = [0u8; 14];
        r.emit(&mut EthFrame::new_unchecked(&mut out[..]));
        assert_eq!(out[..], fx[..14]);
    }

    #[test]
    fn short_buffers_are_truncated() {
        for n in 0..14 {
            assert_eq!(
                EthFrame::new_checked(&DAA_FIXTURE[..n]).err(),
                Some(WireError::Truncated)
            );
        }
        for n in 0..24 {
            assert_eq!(
                DaaFrame::new_checked(&DAA_FIXTURE[..n]).err(),
                Some(WireError::Truncated)
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn daa_repr_round_trips(dst: [u8; 6], src: [u8; 6], ethertype: u16, app_id: u32,
                                priority: u32, inner_type: u16) {
            let r = DaaRepr { dst, src, ethertype, app_id, priority, inner_type };
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut DaaFrame::new_unchecked(&mut buf[..]));
            let back = DaaRepr::parse(&DaaFrame::new_checked(&buf[..]).unwrap()).unwrap();
            proptest::prop_assert_eq!(back, r);
        }

        #[test]
        fn views_never_panic(bytes: Vec<u8>) {
            if let Ok(f) = EthFrame::new_checked(&bytes[..]) {
                let _ = EthRepr::parse(&f);
                let _ = f.payload();
            }
            if let Ok(f) = DaaFrame::new_checked(&bytes[..]) {
                let _ = DaaRepr::parse(&f);
                let _ = f.payload();
            }
        }
    }
}
