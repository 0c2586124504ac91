//! The Internet checksum (RFC 1071) and integrated layer processing of it (002 §2.2, 001 §I
//! "integrated copy/checksum"): copying a payload and summing it in one pass over the data
//! instead of two.
//!
//! Contract: [`Sum`] accumulates the one's-complement sum of 16-bit words of byte slices that
//! each start at an even offset of the summed region (all our callers: pseudo-header, headers of
//! even length, payload). Words are read in native order and the result is byte-swapped once at
//! the end (RFC 1071 §2(B), byte-order independence). [`copy_and_sum`] and [`copy_then_sum`] both
//! copy `src` into `dst` and add `src` to the sum; the first makes one pass, the second two
//! (`memcpy`, then a sum over the copy). Their results are identical; only their cost differs.

/// A running one's-complement sum (not yet folded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sum(u64);

impl Sum {
    /// Adds `data` (starting at an even offset of the checksummed region; an odd final byte is
    /// padded with zero as RFC 768 and RFC 791 require).
    #[inline]
    pub fn add(&mut self, data: &[u8]) {
        let mut acc = self.0;
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            acc += (w & 0xffff_ffff) + (w >> 32);
        }
        acc += sum_tail(chunks.remainder());
        self.0 = acc;
    }

    /// Adds one 16-bit word given in host value (big-endian on the wire).
    #[inline]
    pub fn add_u16(&mut self, v: u16) {
        self.add(&v.to_be_bytes());
    }

    /// The folded 16-bit one's-complement sum in wire (big-endian) value.
    #[inline]
    pub fn fold(self) -> u16 {
        let mut s = self.0;
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        u16::from_be(s as u16)
    }

    /// Adds another running sum (of a region that also starts at an even offset).
    #[inline]
    pub fn add_sum(&mut self, other: Sum) {
        self.0 += other.0;
    }

    /// The checksum field value: the complement of the folded sum.
    #[inline]
    pub fn checksum(self) -> u16 {
        !self.fold()
    }
}

/// Sum of a remainder shorter than 8 bytes, as native-order 16-bit words, the odd byte padded.
#[inline]
fn sum_tail(rest: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut words = rest.chunks_exact(2);
    for w in &mut words {
        acc += u16::from_ne_bytes([w[0], w[1]]) as u64;
    }
    if let [b] = words.remainder() {
        acc += u16::from_ne_bytes([*b, 0]) as u64;
    }
    acc
}

/// The pseudo-header sum of a transport header over IPv4 (RFC 9293 §3.1, RFC 768) or IPv6
/// (RFC 8200 §8.1): source and destination address (4 or 16 bytes each), the protocol number
/// and the transport length (header and data).
#[inline]
pub fn pseudo_header(src: &[u8], dst: &[u8], protocol: u8, len: usize) -> Sum {
    let mut s = Sum::default();
    s.add(src);
    s.add(dst);
    // Zero, protocol, then the length as 32 bits (IPv6) or 16 bits (IPv4): the same sum.
    s.add(&[0, protocol]);
    s.add(&(len as u32).to_be_bytes());
    s
}

/// One-shot checksum of `data` (header checksums).
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    let mut s = Sum::default();
    s.add(data);
    s.checksum()
}

/// Integrated layer processing (002 §2.2): copies `src` into `dst` and adds it to `sum` in a
/// single pass, each 8-byte word loaded once into a register, stored and summed.
/// `dst.len()` must equal `src.len()` (an internal invariant; panics otherwise).
#[inline]
pub fn copy_and_sum(src: &[u8], dst: &mut [u8], sum: &mut Sum) {
    assert_eq!(src.len(), dst.len(), "copy_and_sum: length mismatch");
    // 32-byte blocks: four words loaded, stored and summed into four independent accumulators
    // (no carried dependency between them; the compiler may keep them in one vector register).
    let mut a = [0u64; 4];
    let mut s = src.chunks_exact(32);
    let mut d = dst.chunks_exact_mut(32);
    for (sc, dc) in (&mut s).zip(&mut d) {
        let mut w = [0u64; 4];
        for (k, wk) in w.iter_mut().enumerate() {
            let b = &sc[8 * k..8 * k + 8];
            *wk = u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        }
        for (k, wk) in w.iter().enumerate() {
            dc[8 * k..8 * k + 8].copy_from_slice(&wk.to_ne_bytes());
            a[k] += (wk & 0xffff_ffff) + (wk >> 32);
        }
    }
    let rest = s.remainder();
    d.into_remainder().copy_from_slice(rest);
    let mut acc = sum.0 + a[0] + a[1] + a[2] + a[3];
    let mut tail = Sum::default();
    tail.add(rest);
    acc += tail.0;
    sum.0 = acc;
}

/// The layered way: copy `src` into `dst` (one pass), then sum the copy (a second pass).
#[inline]
pub fn copy_then_sum(src: &[u8], dst: &mut [u8], sum: &mut Sum) {
    dst.copy_from_slice(src);
    sum.add(dst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 1071 by the book: big-endian 16-bit words, end-around carry, complement.
    fn naive(data: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for (i, b) in data.iter().enumerate() {
            s += if i % 2 == 0 {
                (*b as u32) << 8
            } else {
                *b as u32
            };
        }
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2 (checksum 220d).
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&d), 0x220d);
    }

    #[test]
    fn pseudo_header_matches_etherparse() {
        let tcp = etherparse::TcpHeader::new(1000, 2000, 7, 512);
        let payload = [1u8, 2, 3, 4, 5];
        let (src, dst) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let want = tcp.calc_checksum_ipv4_raw(src, dst, &payload).unwrap();
        let mut t = tcp.clone();
        t.checksum = 0;
        let mut s = pseudo_header(&src, &dst, 6, t.header_len() + payload.len());
        s.add(&t.to_bytes());
        s.add(&payload);
        assert_eq!(s.checksum(), want);
        let (src6, dst6) = ([1u8; 16], [2u8; 16]);
        let want6 = tcp.calc_checksum_ipv6_raw(src6, dst6, &payload).unwrap();
        let mut s = pseudo_header(&src6, &dst6, 6, t.header_len() + payload.len());
        s.add(&t.to_bytes());
        s.add(&payload);
        assert_eq!(s.checksum(), want6);
    }

    proptest! {
        #[test]
        fn matches_naive(data in proptest::collection::vec(any::<u8>(), 0..3000), split in 0usize..1500) {
            prop_assert_eq!(checksum(&data), naive(&data));
            // Summing in two even-offset pieces gives the same result.
            let split = (split.min(data.len())) & !1;
            let mut s = Sum::default();
            s.add(&data[..split]);
            s.add(&data[split..]);
            prop_assert_eq!(s.checksum(), naive(&data));
        }

        #[test]
        fn ilp_equals_layered(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let mut a = vec![0u8; data.len()];
            let mut b = vec![0u8; data.len()];
            let (mut sa, mut sb) = (Sum::default(), Sum::default());
            copy_and_sum(&data, &mut a, &mut sa);
            copy_then_sum(&data, &mut b, &mut sb);
            prop_assert_eq!(&a, &data);
            prop_assert_eq!(&b, &data);
            prop_assert_eq!(sa.checksum(), naive(&data));
            prop_assert_eq!(sb.checksum(), naive(&data));
        }
    }
}
