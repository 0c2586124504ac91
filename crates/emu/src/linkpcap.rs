//! The link-frame capture (`mslink emulate --pcap-link FILE`): every frame on the emulated air,
//! both directions, in a pcap file that Wireshark reads with the dissector
//! `tools/wireshark/mslink.lua`.
//!
//! Contract. [`LinkPcap`] writes a pcap file (nanosecond timestamps, link type
//! [`LINKTYPE`] = 147, `LINKTYPE_USER0`) with one record per [`TappedFrame`]: a
//! [`PSEUDO_LEN`]-byte pseudo-header, then the frame byte for byte as the sending link end
//! emitted it (before the error model: a lost frame is there in full). The pseudo-header says
//! what a reader cannot know from the frame alone, since the framing is fixed by the link
//! configuration, not carried in the frame (crates/wire/src/link): all fields big-endian,
//!
//! ```text
//! 0  version (1)         1  pseudo-header length (16)
//! 2  direction           0 = left to right (uplink), 1 = right to left
//! 3  channel             0 delivered, 1 lost, 2 truncated, 3 corrupted
//! 4  service             index in the link configuration (the tag on a tagged link)
//! 5  scheme              0 raw, 1 xor_fec, 2 go_back_n, 3 selective_repeat, 4 karn_rlp,
//!                        5 oos_rlp, 6 persistent, 7 rs_fec, 8 snoop, 255 unknown
//! 6  flags               0x01 tagged (1-byte service tag leads), 0x02 link CRC-32 trails,
//!                        0x04 segmented (data headers carry a fragment position),
//!                        0x08 piggybacked ack (data headers carry an ack field)
//! 7  sequence width      bytes of each sequence field: 1, 2 or 4
//! 8  arrived (u32)       bytes that reached the far end: the frame's length if delivered or
//!                        corrupted, 0 if lost, the cut if truncated
//! 12 inverted bits (u32) bits the channel inverted (corrupted), else 0
//! ```
//!
//! The record's time is the instant the frame started on the air, as Unix time (the clock's
//! zero plus the hop's instant). The first write error is kept and returned by
//! [`LinkPcap::finish`]; nothing is written after it.

use std::io::Write;

use mslink_link::config::LinkConfig;
use mslink_link::Instant;

use crate::hop::{FrameFate, TappedFrame};

/// The pcap link type of the records: `LINKTYPE_USER0`.
pub const LINKTYPE: u32 = 147;
/// Length of the pseudo-header in front of each frame.
pub const PSEUDO_LEN: usize = 16;
/// Version of the pseudo-header.
pub const VERSION: u8 = 1;

/// The scheme codes of the pseudo-header, in code order.
pub const SCHEMES: [&str; 9] = [
    "raw",
    "xor_fec",
    "go_back_n",
    "selective_repeat",
    "karn_rlp",
    "oos_rlp",
    "persistent",
    "rs_fec",
    "snoop",
];

/// How the frames of one service are laid out (from the link configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceFraming {
    /// Scheme code ([`SCHEMES`]; 255 unknown).
    pub scheme: u8,
    /// The flags byte of the pseudo-header.
    pub flags: u8,
    /// Sequence field width in bytes.
    pub width: u8,
}

/// The framing of every service of a link configuration, in service order.
pub fn framings(link: &LinkConfig) -> Vec<ServiceFraming> {
    let tagged = link.link_format().tagged;
    link.services
        .iter()
        .map(|spec| {
            let scheme = spec.config.scheme();
            let code = SCHEMES.iter().position(|s| *s == scheme).unwrap_or(255) as u8;
            let (width, segmented) = match link.header_format(spec) {
                Ok(h) => (h.width.bytes() as u8, h.segmented),
                Err(_) => (0, false),
            };
            // The link's CRC guards every service but one that corrects errors itself
            // (`Service::uses_link_crc`: Reed-Solomon).
            let crc = link.crc && scheme != "rs_fec";
            let piggyback = matches!(scheme, "go_back_n" | "selective_repeat");
            ServiceFraming {
                scheme: code,
                flags: tagged as u8
                    | (crc as u8) << 1
                    | (segmented as u8) << 2
                    | (piggyback as u8) << 3,
                width,
            }
        })
        .collect()
}

/// The pseudo-header of `f`.
pub fn pseudo_header(f: &TappedFrame, framing: Option<&ServiceFraming>) -> [u8; PSEUDO_LEN] {
    let (channel, arrived, bits) = match f.fate {
        FrameFate::Delivered => (0, f.bytes.len(), 0),
        FrameFate::Lost => (1, 0, 0),
        FrameFate::Truncated { at } => (2, at, 0),
        FrameFate::Corrupted { bits } => (3, f.bytes.len(), bits),
    };
    let s = framing.copied().unwrap_or(ServiceFraming {
        scheme: 255,
        flags: 0,
        width: 0,
    });
    let mut h = [0u8; PSEUDO_LEN];
    h[0] = VERSION;
    h[1] = PSEUDO_LEN as u8;
    h[2] = f.dir.index() as u8;
    h[3] = channel;
    h[4] = f.service as u8;
    h[5] = s.scheme;
    h[6] = s.flags;
    h[7] = s.width;
    h[8..12].copy_from_slice(&(arrived as u32).to_be_bytes());
    h[12..16].copy_from_slice(&(bits as u32).to_be_bytes());
    h
}

/// A pcap file of link frames.
pub struct LinkPcap<W: Write> {
    w: pcap_file::pcap::PcapWriter<W>,
    framings: Vec<ServiceFraming>,
    /// Unix time of the hop clock's zero, in ns.
    zero_unix_ns: u64,
    record: Vec<u8>,
    error: Option<pcap_file::PcapError>,
    frames: u64,
}

impl<W: Write> LinkPcap<W> {
    /// Starts the file on `w` (writes the pcap header); `zero_unix_ns` is the Unix time of the
    /// hop clock's zero.
    pub fn new(w: W, link: &LinkConfig, zero_unix_ns: u64) -> Result<Self, pcap_file::PcapError> {
        let header = pcap_file::pcap::PcapHeader {
            datalink: pcap_file::DataLink::from(LINKTYPE),
            ts_resolution: pcap_file::TsResolution::NanoSecond,
            snaplen: 262_144,
            ..Default::default()
        };
        Ok(LinkPcap {
            w: pcap_file::pcap::PcapWriter::with_header(w, header)?,
            framings: framings(link),
            zero_unix_ns,
            record: Vec::with_capacity(2048),
            error: None,
            frames: 0,
        })
    }

    /// Writes one frame.
    pub fn write(&mut self, f: &TappedFrame) {
        if self.error.is_some() {
            return;
        }
        self.record.clear();
        self.record
            .extend_from_slice(&pseudo_header(f, self.framings.get(f.service)));
        self.record.extend_from_slice(&f.bytes);
        let ts = std::time::Duration::from_nanos(self.zero_unix_ns + f.at.as_nanos());
        let len = self.record.len() as u32;
        let p = pcap_file::pcap::PcapPacket::new(ts, len, &self.record);
        match self.w.write_packet(&p) {
            Ok(_) => self.frames += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Flushes and returns the writer, or the first error.
    pub fn finish(self) -> Result<W, pcap_file::PcapError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut w = self.w.into_writer();
        w.flush().map_err(pcap_file::PcapError::IoError)?;
        Ok(w)
    }
}

/// The Unix time in ns of `clock_now`'s zero, given the wall clock now.
pub fn zero_unix_ns(clock_now: Instant) -> u64 {
    let unix_now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (unix_now.as_nanos() as u64).saturating_sub(clock_now.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EmuConfig;
    use crate::hop::EmulatedHop;
    use mslink_link::wire::{Header, HeaderFormat, LinkFormat, LinkFrame, SeqWidth};
    use mslink_link::{Direction, Duration, Side};

    /// A UDP packet (even `seq`) or a TCP one (odd), numbered `seq`.
    fn ip(len: usize, seq: u32) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[8] = 64;
        p[9] = if seq % 2 == 0 { 17 } else { 6 };
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[28..32].copy_from_slice(&seq.to_be_bytes());
        p
    }

    /// Sends `n` packets left to right through a hop built from `toml_text`, and takes every
    /// frame the tap saw.
    fn run(toml_text: &str, n: u32) -> (EmuConfig, EmulatedHop, Vec<TappedFrame>, Vec<Vec<u8>>) {
        let c: EmuConfig = toml::from_str(toml_text).unwrap();
        let mut h = c
            .build(Instant::ZERO, &mut |_| {
                Err(std::io::Error::other("no files"))
            })
            .unwrap();
        h.set_frame_tap(true);
        let mut now = Instant::ZERO;
        let mut tapped = Vec::new();
        let mut sent = Vec::new();
        // Runs everything due up to `until`, writing out what comes out.
        let drive = |h: &mut EmulatedHop, until: Instant| {
            let mut at = Instant::ZERO;
            loop {
                for side in Side::BOTH {
                    while h.front_deliver(side).is_some() {
                        h.pop_delivered(side);
                    }
                }
                match h.poll_timeout() {
                    Some(t) if t <= until => {
                        at = at.max(t);
                        h.handle_timeout(at);
                    }
                    _ => break,
                }
            }
        };
        for k in 0..n {
            let p = ip(400, k);
            h.handle_packet(now, Side::Left, &p);
            sent.push(p);
            drive(&mut h, now);
            h.drain_tapped(&mut |f| tapped.push(f.clone()));
            now += Duration::from_millis(1);
        }
        drive(&mut h, now + Duration::from_secs(5));
        h.drain_tapped(&mut |f| tapped.push(f.clone()));
        (c, h, tapped, sent)
    }

    const SR: &str = "rate_bps = 10e6\ndelay_ms = 5\nseed = 3\n[error]\nmodel = 'independent'\nloss = 0.2\n[[link.service]]\nname = 'bulk'\nscheme = 'selective_repeat'\ntimeout_ms = 30\nnack_interval_ms = 15\n[[link.service]]\nname = 'media'\nscheme = 'xor_fec'\nblock = 4\n[[link.rule]]\nservice = 'media'\nprotocol = 'udp'\n";

    #[test]
    fn the_tap_sees_every_frame_as_the_ends_emitted_it() {
        let (c, h, tapped, sent) = run(SR, 60);
        let s = h.summary();
        let on_air: u64 = s.directions.iter().map(|d| d.frames.sent).sum();
        assert_eq!(
            tapped.len() as u64,
            on_air,
            "one record per frame on the air"
        );
        let lost = tapped.iter().filter(|f| f.fate == FrameFate::Lost).count() as u64;
        assert_eq!(
            lost,
            s.directions.iter().map(|d| d.frames.lost).sum::<u64>()
        );
        // Every frame parses under the configuration's framing (tag, CRC, header).
        let link = c.link_config();
        let format = LinkFormat {
            tagged: true,
            crc: true,
        };
        let (mut data, mut parity) = (0, 0);
        let mut seen = std::collections::HashSet::new();
        let mut resent = 0;
        for f in &tapped {
            let v = LinkFrame::new_checked(&f.bytes[..], format).expect("CRC holds before the air");
            assert_eq!(v.tag() as usize, f.service);
            let spec = &link.services[f.service];
            let hf = HeaderFormat {
                piggyback_ack: f.service == 0,
                ..link.header_format(spec).unwrap()
            };
            match hf.parse(v.service_bytes()).unwrap() {
                (Header::Data { seq, .. }, off) if f.dir == Direction::LeftToRight => {
                    // Each service carries its packets whole behind its header: UDP on media
                    // (even numbers), TCP on bulk (odd).
                    let k = 2 * seq as usize + if f.service == 0 { 1 } else { 0 };
                    assert_eq!(&v.service_bytes()[off..], &sent[k][..]);
                    if !seen.insert((f.service, seq)) {
                        resent += 1;
                    }
                    data += 1;
                }
                (Header::Parity { count, .. }, _) => {
                    assert_eq!(f.service, 1);
                    assert!(count <= 4);
                    parity += 1;
                }
                _ => {}
            }
        }
        let bulk = s.ends[0].services[0].service;
        assert!(bulk.retransmissions > 0, "20% loss: SR resends");
        assert_eq!(resent, bulk.retransmissions);
        assert_eq!(data, 60 + resent);
        assert_eq!(parity, s.ends[0].services[1].service.parity_sent);
        // Turned off, the tap keeps nothing.
        let mut h = h;
        h.set_frame_tap(false);
        h.handle_packet(Instant::from_secs(10), Side::Left, &ip(400, 0));
        let mut any = false;
        h.drain_tapped(&mut |_| any = true);
        assert!(!any);
    }

    #[test]
    fn pcap_records_are_the_tapped_frames_byte_for_byte() {
        let (c, _, tapped, _) = run(SR, 40);
        let mut w = LinkPcap::new(Vec::new(), &c.link_config(), 1_700_000_000_000_000_000).unwrap();
        for f in &tapped {
            w.write(f);
        }
        assert_eq!(w.frames(), tapped.len() as u64);
        let bytes = w.finish().unwrap();
        let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(u32::from(r.header().datalink), LINKTYPE);
        assert_eq!(
            r.header().ts_resolution,
            pcap_file::TsResolution::NanoSecond
        );
        let mut n = 0;
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            let f = &tapped[n];
            assert_eq!(p.orig_len as usize, PSEUDO_LEN + f.bytes.len());
            assert_eq!(&p.data[PSEUDO_LEN..], &f.bytes[..], "record {n}");
            let h = &p.data[..PSEUDO_LEN];
            assert_eq!(
                (h[0], h[1], h[2] as usize, h[4] as usize),
                (1, 16, f.dir.index(), f.service)
            );
            // SR on service 0 (piggybacked ack), XOR FEC on 1; both tagged, with the CRC.
            assert_eq!(
                (h[5], h[6], h[7]),
                if f.service == 0 {
                    (3, 0x0b, 2)
                } else {
                    (1, 0x03, 2)
                }
            );
            let arrived = u32::from_be_bytes(h[8..12].try_into().unwrap()) as usize;
            match f.fate {
                FrameFate::Lost => assert_eq!((h[3], arrived), (1, 0)),
                FrameFate::Delivered => assert_eq!((h[3], arrived), (0, f.bytes.len())),
                other => panic!("independent loss gave {other:?}"),
            }
            assert_eq!(
                p.timestamp.as_nanos() as u64,
                1_700_000_000_000_000_000 + f.at.as_nanos()
            );
            n += 1;
        }
        assert_eq!(n, tapped.len());
        assert!(n > 40);
    }

    #[test]
    fn framing_flags_follow_the_configuration() {
        let one: EmuConfig =
            toml::from_str("[[link.service]]\nname = 'x'\nscheme = 'raw'\n").unwrap();
        assert_eq!(
            framings(&one.link_config()),
            [ServiceFraming {
                scheme: 0,
                flags: 0x02,
                width: SeqWidth::W16.bytes() as u8
            }]
        );
        let rs: EmuConfig = toml::from_str(
            "[link]\ncrc = false\nseq_bits = 8\n[[link.service]]\nname = 'x'\nscheme = 'rs_fec'\n[[link.service]]\nname = 'y'\nscheme = 'karn_rlp'\n",
        )
        .unwrap();
        let f = framings(&rs.link_config());
        assert_eq!((f[0].scheme, f[0].flags, f[0].width), (7, 0x01, 1));
        assert_eq!((f[1].scheme, f[1].flags, f[1].width), (4, 0x01, 1));
    }
}
