//! TUN offloads, write side: consecutive segments of one TCP flow written as one GSO packet.
//!
//! Contract (sans-IO). [`plan`] looks at the packets waiting to be written on a device (front
//! first) and says how many of them the next write carries, building in `head` the 10-byte
//! virtio-net header (virtio spec 1.2 §5.1.6) and, for a GSO write, the rewritten IP and TCP
//! headers; the write is then `head` followed by each carried packet's payload. A TUN device
//! opened with `IFF_VNET_HDR` accepts such a write as one socket buffer (Linux
//! `virtio_net_hdr_to_skb`, include/linux/virtio_net.h), which the receiving TCP takes in one
//! go, as it takes a GRO packet from a NIC: one system call and one pass through the stack for
//! up to [`MAX_SEGMENTS`] packets.
//!
//! Packets `0..n` are written together only if (conservatively, a subset of what Linux's
//! `tcp_gro_receive` merges, net/ipv4/tcp_offload.c): each is IPv4 without options and not a
//! fragment, or IPv6 with TCP as next header, with its length fields equal to its length; each
//! IP header checksum and TCP checksum verifies (a packet the link corrupted is never hidden
//! behind an offloaded checksum: it is written alone and the receiver drops it); the IP headers
//! are equal but for length, checksum and the IPv4 identification, which counts up by one per
//! packet (as `inet_gso_segment` produces it); the TCP headers are equal but for sequence
//! number, checksum and PSH; sequence numbers are contiguous; every payload has the first one's
//! size, `gso_size`, except a shorter last; flags are ACK only, with PSH allowed on the last;
//! the result is at most [`MAX_BYTES`]. The GSO header is the first packet's with the total
//! length, the last packet's flags, the IPv4 header checksum recomputed and, in the TCP
//! checksum field, the pseudo-header sum of the whole (what Linux's `__tcp_v4_send_check`
//! leaves for `CHECKSUM_PARTIAL`); the virtio header says `NEEDS_CSUM` at `csum_start` = IP
//! header length, `csum_offset` = 16, `gso_type` TCPV4 or TCPV6, `gso_size`. Anything else is
//! written alone behind a zero virtio header (`GSO_NONE`, no flags).

use mslink_wire::checksum::checksum;
use mslink_wire::ip::IpPacket;
use mslink_wire::ipv4::Ipv4Packet;
use mslink_wire::tcp::TcpPacket;

use crate::gso::{
    pseudo, transport_sum, VnetHdr, F_NEEDS_CSUM, GSO_TCPV4, GSO_TCPV6, VNET_HDR_LEN,
};

/// Most packets in one GSO write.
pub const MAX_SEGMENTS: usize = 64;

/// Largest IP packet one GSO write makes.
pub const MAX_BYTES: usize = 65535;

const TCP: u8 = 6;
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;

/// The next write, as [`plan`] chose it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Packets it carries, from the front (1: the front packet alone, whole).
    pub count: usize,
    /// With `count > 1`, bytes of IP and TCP header at the start of every carried packet: the
    /// write is `head` then each packet from this offset on. 0 with `count == 1`: the write is
    /// `head` (a zero virtio header) then the whole packet.
    pub header_len: usize,
}

/// What the coalescing conditions need of one packet.
#[derive(Clone, Copy)]
struct Seg {
    v4: bool,
    l3: usize,
    hl: usize,
    seq: u32,
    id: u16,
    flags: u8,
    payload: usize,
}

fn seg(p: &[u8]) -> Option<Seg> {
    let ip = IpPacket::parse(p).ok()?;
    // Whole packets only: no IPv4 options, no IPv6 extension headers, no fragments, and the
    // length fields equal to the read.
    let v4 = ip.version == 4;
    let plain = ip.header_len == if v4 { 20 } else { 40 };
    if !plain || ip.is_fragment() || ip.protocol != TCP || ip.header_len + ip.payload_len != p.len()
    {
        return None;
    }
    let l3 = ip.header_len;
    let t = TcpPacket::new_checked(ip.payload).ok()?;
    let flags = t.flags();
    if flags & !PSH != ACK {
        return None;
    }
    let hl = l3 + t.header_len();
    Some(Seg {
        v4,
        l3,
        hl,
        seq: t.seq(),
        id: if v4 {
            Ipv4Packet::new_unchecked(p).ident()
        } else {
            0
        },
        flags,
        payload: p.len() - hl,
    })
}

/// Same flow, same headers but for the fields that may differ.
fn same_headers(a: &[u8], b: &[u8], s: &Seg) -> bool {
    let ip = if s.v4 {
        a[0..2] == b[0..2] && a[6..10] == b[6..10] && a[12..20] == b[12..20]
    } else {
        a[0..4] == b[0..4] && a[6..40] == b[6..40]
    };
    let t = s.l3;
    ip && a[t..t + 4] == b[t..t + 4]
        && a[t + 8..t + 13] == b[t + 8..t + 13]
        && a[t + 14..t + 16] == b[t + 14..t + 16]
        && a[t + 18..s.hl] == b[t + 18..s.hl]
}

/// True if the IPv4 header checksum (if any) and the TCP checksum of `p` verify.
fn checksums_verify(p: &[u8], s: &Seg) -> bool {
    (!s.v4 || checksum(&p[..20]) == 0) && transport_sum(p, s.l3, TCP).fold() == 0xffff
}

/// Plans the next write of `packets` (front first; at least one). See the module contract.
pub fn plan<'a>(packets: impl IntoIterator<Item = &'a [u8]>, head: &mut Vec<u8>) -> Plan {
    head.clear();
    let single = |head: &mut Vec<u8>| {
        head.clear();
        head.extend_from_slice(&[0u8; VNET_HDR_LEN]);
        Plan {
            count: 1,
            header_len: 0,
        }
    };
    let mut it = packets.into_iter();
    let Some(first) = it.next() else {
        return single(head);
    };
    let Some(f) = seg(first).filter(|f| f.flags == ACK && f.payload > 0) else {
        return single(head);
    };
    // The structural conditions first (cheap), then the checksums of the chosen packets.
    let mut group: [&[u8]; MAX_SEGMENTS] = [&[]; MAX_SEGMENTS];
    group[0] = first;
    let mut n = 1;
    let mut total = first.len();
    let mut last_flags = f.flags;
    for p in it {
        if n == MAX_SEGMENTS {
            break;
        }
        let Some(q) = seg(p) else { break };
        let contiguous = q.v4 == f.v4
            && q.hl == f.hl
            && q.seq == f.seq.wrapping_add((n * f.payload) as u32)
            && (!f.v4 || q.id == f.id.wrapping_add(n as u16))
            && q.payload > 0
            && q.payload <= f.payload
            && total + q.payload <= MAX_BYTES;
        if !contiguous || !same_headers(first, p, &f) {
            break;
        }
        group[n] = p;
        n += 1;
        total += q.payload;
        last_flags = q.flags;
        if q.payload < f.payload || q.flags & PSH != 0 {
            break;
        }
    }
    if n < 2 {
        return single(head);
    }
    if let Some(bad) = group[..n]
        .iter()
        .position(|p| !checksums_verify(p, &seg(p).expect("parsed above")))
    {
        if bad < 2 {
            return single(head);
        }
        // Packets before the bad one still go together; the last of them has no PSH (a PSH
        // ends the group) and a full payload.
        n = bad;
        total = f.hl + n * f.payload;
        last_flags = ACK;
    }
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if f.v4 { GSO_TCPV4 } else { GSO_TCPV6 },
        hdr_len: f.hl as u16,
        gso_size: f.payload as u16,
        csum_start: f.l3 as u16,
        csum_offset: 16,
    };
    head.extend_from_slice(&hdr.to_bytes());
    head.extend_from_slice(&first[..f.hl]);
    let h = &mut head[VNET_HDR_LEN..];
    if f.v4 {
        h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        Ipv4Packet::new_unchecked(&mut h[..20]).fill_checksum();
    } else {
        h[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
    }
    let t = f.l3;
    h[t + 13] = last_flags;
    let ps = pseudo(h, TCP, total - t).fold();
    h[t + 16..t + 18].copy_from_slice(&ps.to_be_bytes());
    Plan {
        count: n,
        header_len: f.hl,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gso::tests::{gso_read, tcp, verifies};
    use crate::gso::{process, Processed};

    fn payload(n: usize, salt: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 13 + salt) as u8).collect()
    }

    /// Segments a TSO read of `data` (the kernel's view of the sender).
    fn segments(v6: bool, seq: u32, data: &[u8], mss: u16, flags: u8) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut r = gso_read(&tcp(v6, seq, 100, flags, data), mss);
        process(&mut r, &mut Vec::new(), &mut |p| out.push(p.to_vec())).unwrap();
        out
    }

    /// The write `plan` describes, as the bytes the device gets.
    fn write_of(packets: &[Vec<u8>], head: &[u8], plan: Plan) -> Vec<u8> {
        if plan.count == 1 {
            return [head, &packets[0]].concat();
        }
        let mut w = head.to_vec();
        for p in &packets[..plan.count] {
            w.extend_from_slice(&p[plan.header_len..]);
        }
        w
    }

    #[test]
    fn a_segmented_burst_goes_back_together() {
        for v6 in [false, true] {
            let data = payload(10_000, 1);
            let segs = segments(v6, 5, &data, 1448, PSH);
            let mut head = Vec::new();
            let plan = plan(segs.iter().map(|p| p.as_slice()), &mut head);
            assert_eq!(plan.count, segs.len());
            let w = write_of(&segs, &head, plan);
            // Reading that write back, as the kernel would cut it, gives the same packets.
            let mut again = Vec::new();
            let mut w2 = w.clone();
            let r = process(&mut w2, &mut Vec::new(), &mut |p| again.push(p.to_vec()));
            assert_eq!(r, Ok(Processed::Segmented(segs.len())));
            assert_eq!(again, segs);
            let h = VnetHdr::parse(&w).unwrap();
            assert_eq!(h.gso_size, 1448);
            assert_eq!(h.gso_type, if v6 { GSO_TCPV6 } else { GSO_TCPV4 });
        }
    }

    #[test]
    fn groups_break_where_they_must() {
        let data = payload(6000, 2);
        let segs = segments(false, 1000, &data, 1000, 0);
        let mut head = Vec::new();
        let p = |v: &[Vec<u8>], head: &mut Vec<u8>| plan(v.iter().map(|p| p.as_slice()), head);
        // A gap in sequence (a lost packet) ends the group before it.
        let gap = [&segs[..2], &segs[3..]].concat();
        assert_eq!(p(&gap, &mut head).count, 2);
        // A corrupted payload byte: written alone, never behind an offloaded checksum.
        let mut bad = segs.clone();
        bad[0][100] ^= 1;
        assert_eq!(p(&bad, &mut head).count, 1);
        assert_eq!(head, [0u8; VNET_HDR_LEN]);
        bad = segs.clone();
        bad[3][100] ^= 1;
        assert_eq!(p(&bad, &mut head).count, 3);
        // Another flow, a pure ACK, a SYN: alone.
        let other = tcp(false, 1000 + 1000, 101, 0, &data[..1000]);
        let mut other = other.clone();
        other[20..22].copy_from_slice(&1u16.to_be_bytes());
        assert_eq!(p(&[segs[0].clone(), other], &mut head).count, 1);
        let ack = tcp(false, 1, 1, 0, &[]);
        assert_eq!(p(&[ack.clone(), ack], &mut head).count, 1);
        let syn = tcp(false, 1000, 100, 0x02, &data[..1000]);
        assert_eq!(p(&[syn, segs[1].clone()], &mut head).count, 1);
        // PSH on the first: alone; PSH on the third: ends a group of three.
        let pushed = segments(false, 1000, &data[..3000], 1000, PSH);
        assert_eq!(p(&pushed[2..], &mut head).count, 1);
        assert_eq!(p(&[&pushed[..], &segs[3..]].concat(), &mut head).count, 3);
        // A non-contiguous IPv4 identification: alone.
        let mut ids = segs.clone();
        ids[1][5] ^= 0x10;
        Ipv4Packet::new_unchecked(&mut ids[1][..20]).fill_checksum();
        assert_eq!(p(&ids, &mut head).count, 1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// Whatever the sizes, a plan's write, cut again, is exactly the packets it carries,
        /// and every packet is carried once by the sequence of plans.
        #[test]
        fn plans_cover_every_packet_once(
            v6 in proptest::bool::ANY,
            bursts in proptest::collection::vec((1usize..20_000, 1u16..2000), 1..4),
            drop in proptest::collection::vec(proptest::num::usize::ANY, 0..3),
        ) {
            let mut packets = Vec::new();
            let mut seq = 77u32;
            for (k, (len, mss)) in bursts.iter().enumerate() {
                let data = payload(*len, k);
                packets.extend(segments(v6, seq, &data, *mss, PSH));
                seq = seq.wrapping_add(*len as u32);
            }
            for d in drop {
                if packets.len() > 1 {
                    packets.remove(d % packets.len());
                }
            }
            let mut head = Vec::new();
            let mut i = 0;
            while i < packets.len() {
                let plan = plan(packets[i..].iter().map(|p| p.as_slice()), &mut head);
                proptest::prop_assert!(plan.count >= 1);
                let mut w = write_of(&packets[i..], &head, plan);
                let mut back = Vec::new();
                process(&mut w, &mut Vec::new(), &mut |p| back.push(p.to_vec())).unwrap();
                proptest::prop_assert_eq!(&back[..], &packets[i..i + plan.count]);
                for b in &back {
                    proptest::prop_assert!(verifies(b));
                }
                i += plan.count;
            }
        }
    }
}
