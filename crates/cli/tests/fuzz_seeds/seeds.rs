//! The seed generators of the fuzz targets: for each target a handful to a few dozen small
//! inputs in the target's own input layout (documented at the top of `fuzz/checks/T.rs`),
//! built from the project's reprs, emitters and state machines rather than typed in.
//!
//! Contract: [`all`] is deterministic (fixed keys, seeds and times; no clock, no entropy).
//! Each target gets genuine inputs of every kind it understands plus a few edge cases, and
//! every seed is run here through its target's checks and asserted to come out as its name
//! says (a header parses to the header emitted, the stack delivers the frame, the link
//! delivers the conversation's packets, a corrupted frame is refused, ...). A change to a
//! format or a selector byte that would make a seed meaningless therefore fails the test
//! instead of silently weakening the corpus. Seed names are `[a-z0-9-]+`.

use std::collections::VecDeque;

use crate::packets::{
    ipv4, ipv4_with, ipv6, ipv6_with, payload, tcp, udp, Tcp, DST4, DST6, SRC4, SRC6, TCP, UDP, V4,
};
use mslink_link::Instant;

/// One seed file.
pub struct Seed {
    /// File name.
    pub name: String,
    /// Contents.
    pub bytes: Vec<u8>,
}

#[derive(Default)]
struct Seeds(Vec<Seed>);

impl Seeds {
    fn add(&mut self, name: impl Into<String>, bytes: Vec<u8>) {
        let name = name.into();
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                && !name.starts_with(crate::FOUND),
            "bad seed name {name:?}"
        );
        assert!(!bytes.is_empty(), "seed {name} is empty");
        self.0.push(Seed { name, bytes });
    }
}

/// Every target's generated seeds, by target name.
pub fn all() -> Vec<(&'static str, Vec<Seed>)> {
    vec![
        ("classifier", classifier()),
        ("link_frame", link_frame()),
        ("link_receive", link_receive()),
        ("rs_decode", rs_decode()),
        ("service_header", service_header()),
        ("stack_headers", stack_headers()),
        ("stack_receive", stack_receive()),
        ("trace_parse", trace_parse()),
        ("tun_offload", tun_offload()),
        ("tunnel_receive", tunnel_receive()),
    ]
}

/// The first selector byte for which `pick` holds (the targets read parameters from bits of
/// their first byte; asking the target's own decoding keeps the seeds in step with it).
fn selector(pick: impl Fn(u8) -> bool) -> u8 {
    (0..=255u8)
        .find(|&s| pick(s))
        .expect("some selector byte picks it")
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// A TCP segment from port 40000 to `dst_port` with `data`.
fn tcp_to(dst_port: u16, flags: u8, data: &[u8]) -> Vec<u8> {
    let h = Tcp {
        src_port: 40000,
        dst_port,
        seq: 1,
        ack: 1,
        flags,
    };
    tcp(h, &[], data)
}

const ACK: u8 = mslink_wire::tcp::ACK;
const PSH: u8 = mslink_wire::tcp::PSH;
const SYN: u8 = mslink_wire::tcp::SYN;
const FIN: u8 = mslink_wire::tcp::FIN;

// ---------------------------------------------------------------------------------------
// service_header: [sel][service header + payload]

fn service_header() -> Vec<Seed> {
    use crate::service_header::{format, run};
    use mslink_link::wire::{FragPos, Header, HeaderFormat, SeqWidth};

    fn seed(f: HeaderFormat, h: Header, tail: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 1 + f.header_len(&h)];
        b[0] = selector(|s| format(s) == f);
        f.emit(&h, &mut b[1..]);
        b.extend_from_slice(tail);
        assert_eq!(run(&b), Some(h), "{f:?} {h:?}");
        b
    }
    let mut out = Seeds::default();
    for width in [SeqWidth::W8, SeqWidth::W16, SeqWidth::W32] {
        let w = width.bytes() * 8;
        for segmented in [false, true] {
            for piggyback_ack in [false, true] {
                let f = HeaderFormat {
                    width,
                    segmented,
                    piggyback_ack,
                };
                let top = (f.seq_space().modulus() - 1) as u32;
                let h = Header::Data {
                    fp: if segmented {
                        FragPos::First
                    } else {
                        FragPos::Whole
                    },
                    seq: top,
                    ack: piggyback_ack.then_some(top / 3),
                };
                let name = format!(
                    "w{w}{}{}-data",
                    if segmented { "-seg" } else { "" },
                    if piggyback_ack { "-piggyback" } else { "" }
                );
                out.add(name, seed(f, h, &payload(12)));
            }
        }
        let f = HeaderFormat::new(width);
        let controls = [
            ("ack", Header::Ack { ack: 5 }, 0),
            (
                "nack",
                Header::Nack {
                    ack: 5,
                    first: 7,
                    more: 0x8000_0005,
                },
                0,
            ),
            ("keepalive", Header::Keepalive { next: 9, base: 3 }, 0),
            (
                "parity",
                Header::Parity {
                    first: 16,
                    count: 8,
                },
                12,
            ),
            (
                "unknown-kind",
                Header::Unknown {
                    kind: [6, 0, 7][width.bytes() / 2],
                },
                4,
            ),
        ];
        for (name, h, tail) in controls {
            out.add(format!("w{w}-{name}"), seed(f, h, &payload(tail)));
        }
    }
    let f16 = HeaderFormat {
        width: SeqWidth::W16,
        segmented: true,
        piggyback_ack: false,
    };
    for (name, fp) in [("middle", FragPos::Middle), ("last", FragPos::Last)] {
        let h = Header::Data {
            fp,
            seq: 300,
            ack: None,
        };
        out.add(format!("w16-seg-data-{name}"), seed(f16, h, &payload(12)));
    }
    // Edges: a control header cut short, and a frame with no header at all.
    let nack = Header::Nack {
        ack: 1,
        first: 2,
        more: 3,
    };
    let mut cut = seed(HeaderFormat::new(SeqWidth::W16), nack, &[]);
    cut.truncate(cut.len() - 2);
    assert_eq!(run(&cut), None);
    out.add("w16-nack-truncated", cut);
    let empty = vec![selector(|s| format(s) == HeaderFormat::new(SeqWidth::W32))];
    assert_eq!(run(&empty), None);
    out.add("w32-empty-frame", empty);
    out.0
}

// ---------------------------------------------------------------------------------------
// link_frame: [sel][tag? service bytes crc?]

fn link_frame() -> Vec<Seed> {
    use crate::link_frame::{format, run};
    use mslink_link::wire::{Header, HeaderFormat, LinkFormat, SeqWidth};

    fn seed(f: LinkFormat, tag: u8, service: &[u8]) -> Vec<u8> {
        let start = f.tagged as usize;
        let mut b = vec![0u8; start];
        b.extend_from_slice(service);
        let r = f.seal(tag, &mut b, start);
        let mut out = vec![selector(|s| format(s) == f)];
        out.extend_from_slice(&b[r]);
        out
    }
    let hf = HeaderFormat::new(SeqWidth::W8);
    let data = Header::Data {
        fp: mslink_link::wire::FragPos::Whole,
        seq: 5,
        ack: None,
    };
    let mut service = vec![0u8; hf.header_len(&data)];
    hf.emit(&data, &mut service);
    service.extend_from_slice(&payload(24));
    let mut ack = vec![0u8; hf.header_len(&Header::Ack { ack: 6 })];
    hf.emit(&Header::Ack { ack: 6 }, &mut ack);

    let mut out = Seeds::default();
    for (name, tagged, crc) in [
        ("plain", false, false),
        ("tagged", true, false),
        ("crc", false, true),
        ("tagged-crc", true, true),
    ] {
        let f = LinkFormat { tagged, crc };
        let b = seed(f, 3, &service);
        assert_eq!(run(&b), Some(if tagged { 3 } else { 0 }), "{name}");
        out.add(format!("{name}-data"), b);
    }
    let both = LinkFormat {
        tagged: true,
        crc: true,
    };
    let b = seed(both, 7, &ack);
    assert_eq!(run(&b), Some(7));
    out.add("tagged-crc-ack", b);
    let mut bad = seed(both, 3, &service);
    bad[10] ^= 0x10;
    assert_eq!(run(&bad), None);
    out.add("tagged-crc-corrupted", bad);
    let crc_only = LinkFormat {
        tagged: false,
        crc: true,
    };
    let b = seed(crc_only, 0, &[]);
    assert_eq!(run(&b), Some(0));
    out.add("crc-empty-service", b);
    let tagged_only = LinkFormat {
        tagged: true,
        crc: false,
    };
    let b = seed(tagged_only, 1, &[]);
    assert_eq!(run(&b), Some(1));
    out.add("tagged-empty-service", b);
    let mut short = seed(crc_only, 0, &[]);
    short.truncate(3);
    assert_eq!(run(&short), None);
    out.add("crc-too-short", short);
    out.0
}

// ---------------------------------------------------------------------------------------
// classifier: one IP packet; services raw (0), bulk (1), rt (2)

fn classifier() -> Vec<Seed> {
    use crate::classifier::run;
    const RAW: usize = 0;
    const BULK: usize = 1;
    const RT: usize = 2;
    let ef = 46 << 2;
    let small = payload(8);
    let icmp = {
        let mut b = cat(&[&[8, 0, 0, 0, 0, 1, 0, 1], &small]);
        let c = mslink_wire::checksum::checksum(&b);
        b[2..4].copy_from_slice(&c.to_be_bytes());
        b
    };
    let hop_by_hop = [UDP, 0, 1, 4, 0, 0, 0, 0]; // PadN over the 6 option bytes
    let routing = [TCP, 0, 0, 0, 0, 0, 0, 0]; // type 0, no segments left
    let frag_first = [UDP, 0, 0x00, 0x01, 0, 0, 0, 7]; // offset 0, more fragments
    let frag_later = [UDP, 0, 0x00, 0x08, 0, 0, 0, 7]; // offset 1 (8 bytes), last
    let mut cases: Vec<(&str, Vec<u8>, usize, bool)> = vec![
        (
            "ipv4-tcp-http",
            ipv4(0, TCP, &tcp_to(80, SYN, &[])),
            BULK,
            false,
        ),
        (
            "ipv4-tcp-8080",
            ipv4(0, TCP, &tcp_to(8080, ACK, &small)),
            RAW,
            false,
        ),
        (
            "ipv4-tcp-ef",
            ipv4(ef, TCP, &tcp_to(8080, ACK, &small)),
            RT,
            false,
        ),
        (
            "ipv4-udp-ef",
            ipv4(ef, UDP, &udp(5004, 5004, &small)),
            RT,
            false,
        ),
        (
            "ipv4-udp-dns",
            ipv4(0, UDP, &udp(40000, 53, &small)),
            RAW,
            false,
        ),
        (
            "ipv4-udp-5004",
            ipv4(0, UDP, &udp(4000, 5004, &small)),
            RAW,
            false,
        ),
        ("ipv4-icmp-echo", ipv4(0, 1, &icmp), RAW, false),
        (
            "ipv4-options-tcp-smtp",
            ipv4_with(V4::default(), &[1, 1, 1, 0], TCP, &tcp_to(25, SYN, &[])),
            BULK,
            false,
        ),
        (
            "ipv4-first-fragment-tcp-ssh",
            ipv4_with(
                V4 {
                    flags_offset: 0x2000,
                    ..V4::default()
                },
                &[],
                TCP,
                &tcp_to(22, ACK, &small),
            ),
            BULK,
            false,
        ),
        (
            "ipv4-later-fragment-tcp",
            ipv4_with(
                V4 {
                    flags_offset: 0x0003,
                    ..V4::default()
                },
                &[],
                TCP,
                &payload(16),
            ),
            RAW,
            false,
        ),
        (
            "ipv6-udp-rtp",
            ipv6(0, UDP, &udp(40000, 5004, &small)),
            RT,
            false,
        ),
        (
            "ipv6-udp-dns",
            ipv6(0, UDP, &udp(40000, 53, &small)),
            RAW,
            false,
        ),
        (
            "ipv6-tcp-https",
            ipv6(0, TCP, &tcp_to(443, SYN, &[])),
            BULK,
            false,
        ),
        (
            "ipv6-tcp-ef",
            ipv6(ef, TCP, &tcp_to(8080, ACK, &small)),
            RT,
            false,
        ),
        (
            "ipv6-hop-by-hop-udp-5010",
            ipv6_with(0, 0, &hop_by_hop, UDP, &udp(40000, 5010, &small)),
            RT,
            false,
        ),
        (
            "ipv6-routing-tcp-http",
            ipv6_with(0, 43, &routing, TCP, &tcp_to(80, ACK, &small)),
            BULK,
            false,
        ),
        (
            "ipv6-first-fragment-udp-5001",
            ipv6_with(0, 44, &frag_first, UDP, &udp(40000, 5001, &small)),
            RT,
            false,
        ),
        (
            "ipv6-later-fragment",
            ipv6_with(0, 44, &frag_later, 59, &payload(16)),
            RAW,
            false,
        ),
        ("not-ip", b"not an IP packet".to_vec(), RAW, true),
        ("ip-version-5", cat(&[&[0x50], &payload(30)]), RAW, true),
    ];
    let mut cut = ipv4(0, TCP, &tcp_to(80, ACK, &small));
    cut.truncate(30);
    cases.push(("ipv4-truncated", cut, RAW, true));
    let mut bad_ext = ipv6_with(0, 0, &hop_by_hop, UDP, &udp(40000, 5010, &small));
    bad_ext[41] = 200; // the hop-by-hop header claims 1608 bytes
    cases.push(("ipv6-bad-extension-length", bad_ext, RAW, true));

    let mut out = Seeds::default();
    for (name, bytes, service, malformed) in cases {
        let c = run(&bytes);
        assert_eq!((c.service, c.malformed), (service, malformed), "{name}");
        out.add(name, bytes);
    }
    out.0
}

// ---------------------------------------------------------------------------------------
// rs_decode: [sel][received word]

fn rs_decode() -> Vec<Seed> {
    use crate::rs_decode::{parity, run};
    use mslink_link::fec::{RsCodec, RsError};

    fn codeword(nsym: usize, n: usize) -> Vec<u8> {
        let mut w: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
        RsCodec::new(nsym).unwrap().encode_in_place(&mut w).unwrap();
        w
    }
    /// Alters `k` distinct symbols of `w`.
    fn corrupt(w: &mut [u8], k: usize) {
        for j in 0..k {
            let i = (j * 7 + 3) % w.len();
            w[i] ^= 0x5a + j as u8;
        }
    }
    let seed = |nsym: usize, word: &[u8]| cat(&[&[selector(|s| parity(s) == nsym)], word]);
    let mut out = Seeds::default();
    for (nsym, n) in [
        (1, 9),
        (2, 10),
        (4, 32),
        (8, 64),
        (16, 255),
        (32, 100),
        (64, 200),
    ] {
        let b = seed(nsym, &codeword(nsym, n));
        assert_eq!(run(&b), Some(Ok(0)));
        out.add(format!("p{nsym}-n{n}-clean"), b);
    }
    for (nsym, n, k) in [(2, 10, 1), (8, 64, 4), (16, 255, 8), (64, 200, 32)] {
        let mut w = codeword(nsym, n);
        corrupt(&mut w, k);
        let b = seed(nsym, &w);
        assert_eq!(run(&b), Some(Ok(k)));
        out.add(format!("p{nsym}-n{n}-{k}-errors"), b);
    }
    for (nsym, n, k) in [(1, 9, 1), (4, 32, 3), (8, 64, 6)] {
        let mut w = codeword(nsym, n);
        corrupt(&mut w, k);
        let b = seed(nsym, &w);
        assert_eq!(run(&b), Some(Err(RsError::TooManyErrors)));
        out.add(format!("p{nsym}-n{n}-{k}-errors-too-many"), b);
    }
    let b = seed(16, &codeword(16, 16));
    assert_eq!(run(&b), Some(Ok(0)));
    out.add("p16-parity-only", b);
    let b = seed(8, &payload(5));
    assert!(matches!(run(&b), Some(Err(RsError::BadLength { .. }))));
    out.add("p8-shorter-than-parity", b);
    let b = seed(2, &cat(&[&codeword(2, 255), &payload(45)]));
    assert_eq!(run(&b), Some(Ok(0)), "only the first 255 symbols count");
    out.add("p2-longer-than-255", b);
    out.0
}

// ---------------------------------------------------------------------------------------
// trace_parse: error-trace text

fn trace_parse() -> Vec<Seed> {
    use crate::trace_parse::run;
    use mslink_channel::trace::{Entry, Trace};
    use mslink_channel::Outcome;
    use rand::{RngCore, SeedableRng};

    let mut out = Seeds::default();
    let mut add = |name: &str, text: &[u8], frames: Option<u64>| {
        assert_eq!(run(text).map(|t| t.frames()), frames, "{name}");
        out.add(name, text.to_vec());
    };
    let e = |outcome, count| Entry { outcome, count };
    let every_kind = Trace {
        entries: vec![
            e(Outcome::Delivered, 1),
            e(Outcome::Lost, 3),
            e(Outcome::Truncated { at: 120 }, 1),
            e(
                Outcome::Corrupted {
                    bits: vec![17, 903, 904],
                },
                2,
            ),
            e(Outcome::Delivered, 400),
        ],
    };
    add("every-kind", every_kind.to_text().as_bytes(), Some(407));
    // A walls-like stretch (003 Table 1: some loss and truncation, a quarter of the frames
    // with a burst of inverted bits), drawn with integer arithmetic only so the text is the
    // same on every platform.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let mut walls = Trace::default();
    for _ in 0..40 {
        let r = rng.next_u32() % 100;
        let outcome = if r < 5 {
            Outcome::Lost
        } else if r < 10 {
            Outcome::Truncated {
                at: (rng.next_u32() % 1000) as usize,
            }
        } else if r < 37 {
            let start = rng.next_u32() % 7900;
            let mut bits: Vec<u32> = (0..1 + rng.next_u32() % 12)
                .map(|_| start + rng.next_u32() % 64)
                .collect();
            bits.sort_unstable();
            bits.dedup();
            Outcome::Corrupted { bits }
        } else {
            Outcome::Delivered
        };
        match walls.entries.last_mut() {
            Some(last) if last.outcome == outcome => last.count += 1,
            _ => walls.entries.push(e(outcome, 1)),
        }
    }
    add("walls-like", walls.to_text().as_bytes(), Some(40));
    let doc =
        "# mslink error trace: one frame per line; '#' starts a comment; blank lines are skipped\n\
               ok                 # delivered intact\n\
               loss               # lost\n\
               trunc 120          # only the first 120 bytes arrive\n\
               bits 17 903 904    # delivered with these bit positions inverted\n\
               ok * 400           # any entry may be repeated: '* COUNT'\n";
    add("documented-example", doc.as_bytes(), Some(404));
    add(
        "comments-and-blank-lines",
        b"# nothing but comments\n\n   \n\t# and blanks\n",
        Some(0),
    );
    add("crlf-line-ends", b"ok\r\nloss * 2\r\ntrunc 0\r\n", Some(4));
    add("bits-with-commas", b"bits 1,2,,3 4 4\nbits 0*9\n", Some(10));
    add(
        "no-final-newline",
        b"loss * 18446744073709551615",
        Some(u64::MAX),
    );
    // Malformed lines: each must be refused with an error, never a panic.
    add("trunc-without-count", b"ok\ntrunc\n", None);
    add("zero-repeat", b"ok * 0\n", None);
    add("bit-position-too-large", b"bits 4294967296\n", None);
    add("unknown-entry", b"ok\ndrop\n", None);
    add("trailing-word", b"loss twice\n", None);
    add("bits-without-positions", b"bits\n", None);
    add("not-utf8", b"ok\n\xff\xfe\n", None);

    // Period traces (model = "period_trace"): the same text goes to both parsers; a period
    // trace is no error trace, and an error trace no period trace.
    use crate::trace_parse::periods;
    use mslink_channel::fading::{Period, PeriodTrace, State};
    let mut add_periods = |name: &str, text: &[u8], count: Option<usize>| {
        assert_eq!(run(text).map(|t| t.frames()), None, "{name}");
        let parsed = periods(std::str::from_utf8(text).expect("UTF-8"));
        assert_eq!(parsed.map(|t| t.periods.len()), count, "{name}");
        out.add(name, text.to_vec());
    };
    let p = |state, seconds, count| Period {
        state,
        seconds,
        count,
    };
    let documented = PeriodTrace {
        periods: vec![
            p(State::Good, 0.5, 1),
            p(State::Bad, 0.02, 1),
            p(State::Good, 1.2, 1),
            p(State::Bad, 0.004, 3),
        ],
    };
    add_periods(
        "periods-every-kind",
        documented.to_text().as_bytes(),
        Some(4),
    );
    // A fading stretch: Good for 50-1000 ms, Bad for 1-40 ms, in whole milliseconds drawn
    // with integer arithmetic (the text is the same on every platform).
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    let fading = PeriodTrace {
        periods: (0..30)
            .map(|i| {
                let (state, ms) = if i % 2 == 0 {
                    (State::Good, 50 + rng.next_u32() % 951)
                } else {
                    (State::Bad, 1 + rng.next_u32() % 40)
                };
                p(state, f64::from(ms) / 1000.0, 1)
            })
            .collect(),
    };
    add_periods("periods-fading", fading.to_text().as_bytes(), Some(30));
    add_periods("periods-malformed", b"good 0.5\nbad -0.02\n", None);
    out.0
}

// ---------------------------------------------------------------------------------------
// stack_receive: [sel][Ethernet or ETHDAA frame to host 1]

fn stack_receive() -> Vec<Seed> {
    use crate::stack_receive::{config, participants, run};
    use mslink_stack::{Architecture, Participants, Stack, StackConfig};

    /// The frame host 2 sends to host 1 (as configured by `sel`) from UDP port 7 to
    /// `dst_port`, addressed to DAA application `app`.
    fn from_host2(sel: u8, dst_port: u16, app: u32, data: &[u8]) -> Vec<u8> {
        let me = config(sel);
        let peer_cfg = StackConfig {
            architecture: me.architecture,
            ilp: me.ilp,
            ..StackConfig::host(2)
        };
        let (mut peer, ids) = Stack::udp_ip_eth(peer_cfg);
        let p = Participants {
            remote_mac: me.station,
            remote_ip: me.address,
            local_port: 7,
            remote_port: dst_port,
            remote_app: app,
            priority: 3,
            udp_checksum: participants(sel).udp_checksum,
            ..Default::default()
        };
        let (ep, _) = peer.open(ids.udp, p, 0, Some(7)).expect("host 2 opens");
        peer.send(Instant::ZERO, ep, data).expect("host 2 sends");
        let mut buf = vec![0u8; 2048];
        let n = peer
            .poll_transmit(Instant::ZERO, &mut buf)
            .expect("a frame");
        cat(&[&[sel], &buf[..n]])
    }
    /// The TCP segments host 2 sends to host 1's TCP endpoint (port 7, DAA application 8),
    /// one per element of `data` (empty: a pure ACK), as frames behind `sel`.
    fn tcp_from_host2(sel: u8, data: &[&[u8]]) -> Vec<Vec<u8>> {
        let me = config(sel);
        let peer_cfg = StackConfig {
            architecture: me.architecture,
            ilp: me.ilp,
            ..StackConfig::host(2)
        };
        let (mut peer, ids) = Stack::udp_ip_eth(peer_cfg);
        let p = Participants {
            remote_mac: me.station,
            remote_ip: me.address,
            local_port: 7,
            remote_port: 7,
            remote_app: 8,
            ..Default::default()
        };
        let (ep, _) = peer.open(ids.tcp, p, 0, Some(8)).expect("host 2 opens");
        data.iter()
            .map(|d| {
                peer.send(Instant::ZERO, ep, d).expect("host 2 sends");
                let mut buf = vec![0u8; 2048];
                let n = peer
                    .poll_transmit(Instant::ZERO, &mut buf)
                    .expect("a frame");
                cat(&[&[sel], &buf[..n]])
            })
            .collect()
    }
    let sel = |arch: Architecture, csum: bool, ilp: bool| {
        selector(|s| {
            let c = config(s);
            c.architecture == arch && c.ilp == ilp && participants(s).udp_checksum == csum
        })
    };
    let delivered = |b: &[u8]| run(b).expect("a frame").delivered;
    let mut out = Seeds::default();
    for arch in Architecture::ALL {
        for (csum, ilp) in [(false, false), (true, false), (false, true), (true, true)] {
            let b = from_host2(sel(arch, csum, ilp), 7, 7, &payload(32));
            let name = format!(
                "{}{}{}",
                arch.name(),
                if csum { "-checksum" } else { "" },
                if ilp { "-ilp" } else { "" }
            );
            assert_eq!(delivered(&b), 1, "{name}");
            out.add(name, b);
        }
    }
    let (llm, daa, illm) = (Architecture::Llm, Architecture::Daa, Architecture::Illm);
    let mut drops: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut b = from_host2(sel(llm, true, false), 7, 7, &payload(32));
    *b.last_mut().unwrap() ^= 1;
    drops.push(("llm-checksum-corrupted", b));
    let mut b = from_host2(sel(llm, false, false), 7, 7, &payload(32));
    b[1 + 14 + 8] ^= 0x40; // the IPv4 TTL: the header checksum fails
    drops.push(("llm-ip-header-corrupted", b));
    let mut b = from_host2(sel(llm, false, false), 7, 7, &payload(32));
    b[1..7].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
    drops.push(("llm-not-for-us", b));
    let mut b = from_host2(sel(llm, false, false), 7, 7, &payload(32));
    b.truncate(1 + 30);
    drops.push(("llm-truncated", b));
    let mut b = from_host2(sel(daa, false, false), 7, 7, &payload(32));
    b[0] = sel(llm, false, false);
    drops.push(("daa-frame-to-llm", b));
    drops.push((
        "daa-unknown-application",
        from_host2(sel(daa, false, false), 7, 9, &payload(32)),
    ));
    drops.push((
        "illm-unknown-port",
        from_host2(sel(illm, false, false), 8, 7, &payload(32)),
    ));
    for arch in Architecture::ALL {
        for ilp in [false, true] {
            let s = sel(arch, false, ilp);
            let suffix = if ilp { "-ilp" } else { "" };
            let segs = tcp_from_host2(s, &[&payload(32), &[]]);
            let st = run(&segs[0]).expect("a frame");
            assert_eq!(st.delivered, 1, "{arch:?} tcp data");
            out.add(format!("{}-tcp{suffix}", arch.name()), segs[0].clone());
            // A pure ACK from host 2 acknowledging nothing new: consumed, not delivered.
            let ack = tcp_from_host2(s, &[&[]]).remove(0);
            let st = run(&ack).expect("a frame");
            assert_eq!((st.delivered, st.consumed), (0, 1), "{arch:?} tcp ack");
            out.add(format!("{}-tcp-ack{suffix}", arch.name()), ack);
        }
        // The second data segment alone is out of order; a corrupted one fails its checksum.
        let segs = tcp_from_host2(sel(arch, false, false), &[&payload(32), &payload(32)]);
        drops.push((
            match arch {
                Architecture::Llm => "llm-tcp-out-of-order",
                Architecture::Daa => "daa-tcp-out-of-order",
                Architecture::Illm => "illm-tcp-out-of-order",
            },
            segs[1].clone(),
        ));
        let mut b = segs[0].clone();
        *b.last_mut().unwrap() ^= 1;
        drops.push((
            match arch {
                Architecture::Llm => "llm-tcp-checksum-corrupted",
                Architecture::Daa => "daa-tcp-checksum-corrupted",
                Architecture::Illm => "illm-tcp-checksum-corrupted",
            },
            b,
        ));
    }
    for (name, b) in drops {
        let st = run(&b).expect("a frame");
        assert_eq!((st.delivered, st.dropped()), (0, 1), "{name}");
        out.add(name, b);
    }
    out.0
}

// ---------------------------------------------------------------------------------------
// stack_headers: any bytes, read as every header format at once

fn stack_headers() -> Vec<Seed> {
    use crate::stack_headers::run;
    use mslink_wire::eth::{DaaFrame, DaaRepr, EthFrame, EthRepr, ETHERTYPE_DAA, ETHERTYPE_IPV4};
    use mslink_wire::tcp::TcpOption;

    let small = payload(8);
    let udp4 = ipv4(0, UDP, &udp(40000, 53, &small));
    let eth = {
        let r = EthRepr {
            dst: [2, 0, 0, 0, 0, 2],
            src: [2, 0, 0, 0, 0, 1],
            ethertype: ETHERTYPE_IPV4,
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut EthFrame::new_unchecked(&mut b[..]));
        cat(&[&b, &udp4])
    };
    let daa = {
        let r = DaaRepr {
            dst: [2, 0, 0, 0, 0, 2],
            src: [2, 0, 0, 0, 0, 1],
            ethertype: ETHERTYPE_DAA,
            app_id: 9,
            priority: 5,
            inner_type: ETHERTYPE_IPV4,
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut DaaFrame::new_unchecked(&mut b[..]));
        cat(&[&b, &udp4])
    };
    let syn = Tcp {
        src_port: 40000,
        dst_port: 80,
        seq: 0x0102_0304,
        ack: 0,
        flags: SYN,
    };
    let syn_options = [
        TcpOption::Mss(1460),
        TcpOption::SackPermitted,
        TcpOption::Timestamps(1, 0),
        TcpOption::Nop,
        TcpOption::WindowScale(7),
    ];
    let blocks = cat(&[
        &100u32.to_be_bytes(),
        &200u32.to_be_bytes(),
        &300u32.to_be_bytes(),
        &400u32.to_be_bytes(),
    ]);
    let sack_options = [
        TcpOption::Nop,
        TcpOption::Nop,
        TcpOption::Timestamps(5, 6),
        TcpOption::Nop,
        TcpOption::Nop,
        TcpOption::Sack(&blocks),
    ];
    let ack = Tcp {
        flags: ACK,
        ack: 99,
        ..syn
    };
    let tcp_syn = tcp(syn, &syn_options, &[]);
    let tcp_sack = tcp(ack, &sack_options, &small);
    let tcp_unknown = tcp(ack, &[TcpOption::Unknown(30, &[1, 2, 3, 4])], &small);
    let mut tcp_bad_option = tcp(ack, &[TcpOption::Mss(1)], &[]);
    tcp_bad_option[21] = 1; // MSS option of length 1
    let hop_dest = [60, 0, 1, 4, 0, 0, 0, 0, UDP, 0, 1, 4, 0, 0, 0, 0];
    let mut bad_checksum = udp4.clone();
    bad_checksum[8] ^= 1;
    let fragment = ipv4_with(
        V4 {
            flags_offset: 0x2000,
            ..V4::default()
        },
        &[],
        UDP,
        &udp(40000, 53, &small),
    );
    let mut v6_cut = ipv6(0, UDP, &udp(40000, 53, &small));
    v6_cut.truncate(50);
    let mut udp_bad_len = udp(1, 2, &small);
    udp_bad_len[4..6].copy_from_slice(&4u16.to_be_bytes());
    let mut udp_alone = udp(1000, 2000, &small);
    crate::packets::fill_l4_checksum(&SRC4, &DST4, UDP, &mut udp_alone);
    let mut tcp_alone = tcp_sack.clone();
    crate::packets::fill_l4_checksum(&SRC6, &DST6, TCP, &mut tcp_alone);

    type Want = fn(&crate::stack_headers::Parsed) -> bool;
    let cases: Vec<(&str, Vec<u8>, Want)> = vec![
        ("eth-ipv4-udp", eth, |p| p.eth),
        ("daa-ipv4-udp", daa, |p| p.daa),
        ("ipv4-udp", udp4.clone(), |p| p.ipv4 && p.ip),
        (
            "ipv4-options-tcp",
            ipv4_with(V4::default(), &[1, 1, 1, 0], TCP, &tcp_syn),
            |p| p.ipv4 && p.ip,
        ),
        ("ipv4-bad-header-checksum", bad_checksum, |p| {
            !p.ipv4 && p.ip
        }),
        ("ipv4-fragment", fragment, |p| !p.ipv4 && p.ip),
        ("ipv6-udp", ipv6(0, UDP, &udp(40000, 53, &small)), |p| {
            p.ipv6 && p.ip
        }),
        ("ipv6-tcp", ipv6(0, TCP, &tcp_sack), |p| p.ipv6 && p.ip),
        (
            "ipv6-hop-by-hop-dest-opts-udp",
            ipv6_with(0, 0, &hop_dest, UDP, &udp(40000, 53, &small)),
            |p| p.ipv6 && p.ip,
        ),
        ("ipv6-truncated", v6_cut, |p| !p.ipv6 && !p.ip),
        ("udp", udp_alone, |p| p.udp),
        ("udp-bad-length", udp_bad_len, |p| !p.udp),
        ("tcp-syn-options", tcp_syn, |p| p.tcp_options == Some(5)),
        ("tcp-sack-timestamps", tcp_alone, |p| {
            p.tcp_options == Some(6)
        }),
        ("tcp-unknown-option", tcp_unknown, |p| {
            p.tcp_options == Some(1)
        }),
        ("tcp-bad-option-length", tcp_bad_option, |p| {
            p.tcp_options == Some(0)
        }),
    ];
    let mut out = Seeds::default();
    for (name, bytes, want) in cases {
        let p = run(&bytes);
        assert!(want(&p), "{name}: {p:?}");
        out.add(name, bytes);
    }
    out.0
}

// ---------------------------------------------------------------------------------------
// tun_offload: [virtio_net_hdr][IP packet]

fn tun_offload() -> Vec<Seed> {
    use crate::tun_offload::{run, Outcome};
    use mslink_io::coalesce::plan;
    use mslink_io::gso::{
        OffloadError, Processed, VnetHdr, F_NEEDS_CSUM, GSO_ECN, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4,
    };
    use mslink_wire::checksum::pseudo_header;

    fn read(h: VnetHdr, p: &[u8]) -> Vec<u8> {
        cat(&[&h.to_bytes(), p])
    }
    /// `p` with the pseudo-header sum in its transport checksum field (at `l3 + at`), as the
    /// kernel leaves a packet whose checksum it offloads.
    fn partial(mut p: Vec<u8>, l3: usize, proto: u8, at: usize) -> Vec<u8> {
        let len = p.len() - l3;
        let ps = if l3 == 20 {
            pseudo_header(&SRC4, &DST4, proto, len)
        } else {
            pseudo_header(&SRC6, &DST6, proto, len)
        };
        p[l3 + at..l3 + at + 2].copy_from_slice(&ps.fold().to_be_bytes());
        p
    }
    /// `n` consecutive segments of one TCP flow (`last` bytes in the last one), as Linux's
    /// GSO cuts them: the IPv4 identification counting up, PSH on the last.
    fn segments(v6: bool, n: usize, size: usize, last: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|k| {
                let len = if k + 1 == n { last } else { size };
                let h = Tcp {
                    src_port: 40000,
                    dst_port: 80,
                    seq: 1000 + (k * size) as u32,
                    ack: 1,
                    flags: if k + 1 == n { ACK | PSH } else { ACK },
                };
                let t = tcp(h, &[], &payload(len));
                if v6 {
                    ipv6(0, TCP, &t)
                } else {
                    let h = V4 {
                        ident: 100 + k as u16,
                        ..V4::default()
                    };
                    ipv4_with(h, &[], TCP, &t)
                }
            })
            .collect()
    }
    /// The write the emulator's planner makes of `segs`: one GSO read carrying all of them.
    fn coalesced(segs: &[Vec<u8>]) -> Vec<u8> {
        let mut head = Vec::new();
        let p = plan(segs.iter().map(|s| s.as_slice()), &mut head);
        assert_eq!(p.count, segs.len(), "the planner coalesces them");
        let mut w = head;
        for s in segs {
            w.extend_from_slice(&s[p.header_len..]);
        }
        w
    }
    let ok = |processed: Processed, writes: &[usize]| Outcome {
        processed: Ok(processed),
        writes: writes.to_vec(),
    };
    let err = |e: OffloadError| Outcome {
        processed: Err(e),
        writes: Vec::new(),
    };
    let small = payload(40);
    let udp4 = ipv4(0, UDP, &udp(40000, 5004, &small));
    let tcp6 = ipv6(0, TCP, &tcp_to(80, ACK | PSH, &small));
    let tso4 = coalesced(&segments(false, 4, 100, 60));
    let tso6 = coalesced(&segments(true, 3, 120, 120));
    let hdr = VnetHdr::parse(&tso4).unwrap();
    let with_hdr = |r: &[u8], h: VnetHdr| cat(&[&h.to_bytes(), &r[10..]]);

    let mut cases: Vec<(&str, Vec<u8>, Outcome)> = vec![
        (
            "plain-ipv4-udp",
            read(VnetHdr::default(), &udp4),
            ok(Processed::Plain, &[1]),
        ),
        (
            "plain-ipv6-tcp",
            read(VnetHdr::default(), &tcp6),
            ok(Processed::Plain, &[1]),
        ),
        (
            "needs-csum-ipv4-udp",
            read(
                VnetHdr {
                    flags: F_NEEDS_CSUM,
                    csum_start: 20,
                    csum_offset: 6,
                    ..VnetHdr::default()
                },
                &partial(udp4.clone(), 20, UDP, 6),
            ),
            ok(Processed::Checksummed, &[1]),
        ),
        (
            "needs-csum-ipv6-tcp",
            read(
                VnetHdr {
                    flags: F_NEEDS_CSUM,
                    csum_start: 40,
                    csum_offset: 16,
                    ..VnetHdr::default()
                },
                &partial(tcp6.clone(), 40, TCP, 16),
            ),
            ok(Processed::Checksummed, &[1]),
        ),
        ("tso-ipv4", tso4.clone(), ok(Processed::Segmented(4), &[4])),
        ("tso-ipv6", tso6.clone(), ok(Processed::Segmented(3), &[3])),
    ];
    // ECN: CWR on the super-packet stays on the first segment only, which the planner then
    // writes alone.
    let mut ecn = with_hdr(
        &tso4,
        VnetHdr {
            gso_type: GSO_TCPV4 | GSO_ECN,
            ..hdr
        },
    );
    ecn[10 + 20 + 13] |= 0x80;
    cases.push((
        "tso-ipv4-ecn-cwr",
        ecn,
        ok(Processed::Segmented(4), &[1, 3]),
    ));
    let mut fin = tso4.clone();
    fin[10 + 20 + 13] |= FIN;
    cases.push(("tso-ipv4-fin", fin, ok(Processed::Segmented(4), &[3, 1])));
    let one = segments(false, 1, 100, 100).remove(0);
    cases.push((
        "tso-ipv4-one-segment",
        read(
            VnetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: GSO_TCPV4,
                hdr_len: 40,
                gso_size: 1000,
                csum_start: 20,
                csum_offset: 16,
            },
            &partial(one, 20, TCP, 16),
        ),
        ok(Processed::Checksummed, &[1]),
    ));
    let uso = |v6: bool| {
        let t = udp(40000, 5004, &payload(250));
        let (p, l3) = if v6 {
            (ipv6(0, UDP, &t), 40)
        } else {
            (ipv4(0, UDP, &t), 20)
        };
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_UDP_L4,
            hdr_len: (l3 + 8) as u16,
            gso_size: 100,
            csum_start: l3 as u16,
            csum_offset: 6,
        };
        read(h, &partial(p, l3, UDP, 6))
    };
    cases.push((
        "uso-ipv4",
        uso(false),
        ok(Processed::Segmented(3), &[1, 1, 1]),
    ));
    cases.push((
        "uso-ipv6",
        uso(true),
        ok(Processed::Segmented(3), &[1, 1, 1]),
    ));
    // Reads the offloads refuse, whole and without output.
    cases.push((
        "short-read",
        vec![0; 5],
        err(OffloadError::ShortRead { len: 5 }),
    ));
    let t = with_hdr(&tso4, VnetHdr { gso_type: 3, ..hdr });
    cases.push(("unknown-gso-type", t, err(OffloadError::GsoType(3))));
    let t = with_hdr(
        &uso(false),
        VnetHdr {
            gso_type: GSO_UDP_L4 | GSO_ECN,
            ..VnetHdr::parse(&uso(false)).unwrap()
        },
    );
    cases.push((
        "uso-with-ecn",
        t,
        err(OffloadError::GsoType(GSO_UDP_L4 | GSO_ECN)),
    ));
    let t = read(
        VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: 64,
            csum_offset: 6,
            ..VnetHdr::default()
        },
        &udp4,
    );
    cases.push((
        "csum-past-the-end",
        t,
        err(OffloadError::CsumRange {
            start: 64,
            offset: 6,
            len: udp4.len(),
        }),
    ));
    // Refused for what the packet is, not its header: the exact message is the module's.
    let mut refused: Vec<(&str, Vec<u8>)> = vec![
        (
            "tso-without-needs-csum",
            with_hdr(&tso4, VnetHdr { flags: 0, ..hdr }),
        ),
        (
            "tso-gso-size-zero",
            with_hdr(&tso4, VnetHdr { gso_size: 0, ..hdr }),
        ),
        (
            "tso-v6-type-on-ipv4",
            with_hdr(
                &tso4,
                VnetHdr {
                    gso_type: GSO_TCPV6,
                    ..hdr
                },
            ),
        ),
    ];
    let mut frag = tso4.clone();
    frag[10 + 6] |= 0x20; // more fragments
    refused.push(("tso-ipv4-fragment", frag));
    let mut short_total = tso4.clone();
    short_total[10 + 3] -= 1; // IPv4 total length one short of the read
    refused.push(("tso-ipv4-length-mismatch", short_total));

    let mut out = Seeds::default();
    for (name, bytes, want) in cases {
        assert_eq!(run(&bytes), want, "{name}");
        out.add(name, bytes);
    }
    for (name, bytes) in refused {
        let got = run(&bytes);
        assert!(
            matches!(got.processed, Err(OffloadError::Packet { .. })) && got.writes.is_empty(),
            "{name}: {got:?}"
        );
        out.add(name, bytes);
    }
    out.0
}

// ---------------------------------------------------------------------------------------
// link_receive: records [len][dt][bytes] into an end of the all-services link

/// A conversation between the target's link ("me", driven through the target's own `step`,
/// so its state is exactly the target's) and a peer link, written down as the target's input
/// records: frames the peer sends become frame records (even `dt`), packets given to me
/// become packet records (odd `dt`), and what me sends reaches the peer. Time runs in
/// milliseconds; an empty frame record (`dt` even) lets time pass when me's timers are due.
struct Conversation {
    me: mslink_link::link::MultiServiceLink,
    peer: mslink_link::link::MultiServiceLink,
    records: Vec<u8>,
    last: u64,
    inbox: VecDeque<Vec<u8>>,
    lose_peer: Vec<usize>,
    corrupt_peer: Vec<usize>,
    lose_me: Vec<usize>,
    peer_sent: usize,
    me_sent: usize,
    buf: Vec<u8>,
}

impl Conversation {
    fn new(peer: &mslink_link::config::LinkConfig) -> Self {
        use mslink_link::link::MultiServiceLink;
        Conversation {
            me: MultiServiceLink::new(crate::link_receive::config()).unwrap(),
            peer: MultiServiceLink::new(peer).unwrap(),
            records: Vec::new(),
            last: 0,
            inbox: VecDeque::new(),
            lose_peer: Vec::new(),
            corrupt_peer: Vec::new(),
            lose_me: Vec::new(),
            peer_sent: 0,
            me_sent: 0,
            buf: Vec::new(),
        }
    }

    /// Appends a record at `now` and runs it on me; what me sends reaches the peer unless
    /// it is one of the frames to lose.
    fn record(&mut self, now: u64, bytes: &[u8]) {
        let dt = u8::try_from(now - self.last).expect("dt fits a byte");
        let len = u8::try_from(bytes.len()).expect("record fits 255 bytes");
        self.records.extend_from_slice(&[len, dt]);
        self.records.extend_from_slice(bytes);
        self.last = now;
        let t = Instant::from_millis(now);
        let mut sent = Vec::new();
        crate::link_receive::step(&mut self.me, t, dt, bytes, &mut self.buf, &mut |f| {
            sent.push(f.to_vec())
        });
        for f in sent {
            if !self.lose_me.contains(&self.me_sent) {
                self.peer.handle_frame(t, &f);
            }
            self.me_sent += 1;
        }
        while self.peer.poll_deliver().is_some() {}
    }

    /// Runs until every scripted packet is in and `done` holds (then 20 ms more, for the last
    /// acknowledgements), or `until` ms.
    fn run(
        mut self,
        me_packets: &[(u64, Vec<u8>)],
        peer_packets: &[(u64, Vec<u8>)],
        done: impl Fn(&Self) -> bool,
        until: u64,
    ) -> Self {
        let (mut me_next, mut peer_next) = (0, 0);
        let mut linger: Option<u64> = None;
        for now in 1..=until {
            let t = Instant::from_millis(now);
            while peer_next < peer_packets.len() && peer_packets[peer_next].0 <= now {
                self.peer
                    .handle_packet(t, &peer_packets[peer_next].1)
                    .expect("the peer takes it");
                peer_next += 1;
            }
            self.peer.handle_timeout(t);
            while self.peer.poll_transmit(t, &mut self.buf).is_some() {
                if self.corrupt_peer.contains(&self.peer_sent) {
                    // A byte near the end: payload, or the CRC of a link CRC.
                    let i = self.buf.len().saturating_sub(10);
                    self.buf[i] ^= 0x21;
                }
                if !self.lose_peer.contains(&self.peer_sent) {
                    self.inbox.push_back(self.buf.clone());
                }
                self.peer_sent += 1;
                self.buf.clear();
            }
            let dt = now - self.last;
            if dt % 2 == 1 {
                if me_next < me_packets.len() && me_packets[me_next].0 <= now {
                    self.record(now, &me_packets[me_next].1);
                    me_next += 1;
                }
            } else {
                while let Some(f) = self.inbox.pop_front() {
                    self.record(now, &f);
                }
                let due = self.me.poll_timeout().is_some_and(|d| d <= t);
                if self.last != now && (due || dt >= 250) {
                    self.record(now, &[]);
                }
            }
            let quiet = me_next == me_packets.len()
                && peer_next == peer_packets.len()
                && self.inbox.is_empty()
                && done(&self);
            match linger {
                None if quiet => linger = Some(now + 20),
                Some(end) if now >= end => break,
                _ => {}
            }
        }
        self
    }

    /// The records, after checking that the target's own run of them ends where me did.
    fn finish(self, name: &str) -> Vec<u8> {
        assert_eq!(
            crate::link_receive::run(&self.records),
            self.me.stats(),
            "{name}: the target's link follows the conversation"
        );
        self.records
    }
}

fn link_receive() -> Vec<Seed> {
    use crate::link_receive::{config, run};
    use mslink_link::link::MultiServiceLink;

    let base = config();
    let names: Vec<String> = base.services.iter().map(|s| s.name.clone()).collect();
    let index = |name: &str| names.iter().position(|n| n == name).unwrap();
    let small = |port: u16| ipv4(0, UDP, &udp(40000, port, &payload(20)));
    let large = |port: u16| ipv4(0, UDP, &udp(40000, port, &payload(222)));
    let mut out = Seeds::default();

    // The peer sends on each service in turn (its classifier sends everything there): three
    // packets, the middle one cut into two frames, and the peer's second frame is lost.
    // Reed-Solomon frames are whole 255-byte blocks (no cutting, and a record holds at most
    // 255 bytes): three small packets, the second frame lost and the third damaged, which
    // the receiver repairs.
    for (i, name) in names.iter().enumerate() {
        let mut cfg = base.clone();
        cfg.default_service = Some(name.clone());
        cfg.rules.clear();
        let mut c = Conversation::new(&cfg);
        c.lose_peer = vec![1];
        let scheme = base.services[i].config.scheme();
        let packets = if scheme == "rs_fec" {
            c.corrupt_peer = vec![2];
            [(1, small(1)), (3, small(2)), (5, small(3))]
        } else {
            [(1, small(1)), (3, large(2)), (5, small(3))]
        };
        let want = if scheme == "raw" { 2 } else { 3 };
        let done = |c: &Conversation| c.me.stats().services[i].packets_delivered >= want;
        let c = c.run(&[], &packets, done, 3000);
        let got = c.me.stats().services[i].packets_delivered;
        assert_eq!(got, want, "from-peer-{name} ({scheme}): packets delivered");
        out.add(format!("from-peer-{name}"), c.finish(name));
    }

    // The target's link sends (packets from above, classified by the fixture's rules) and the
    // peer, with the same configuration, answers; the target's second frame is lost.
    let tcp_small = ipv4(0, TCP, &tcp_to(80, ACK | PSH, &payload(20)));
    let tcp_large = ipv4(0, TCP, &tcp_to(80, ACK | PSH, &payload(210)));
    let ef = |n| ipv4(46 << 2, UDP, &udp(40000, 9, &payload(n)));
    let to_peer: [(&str, Vec<Vec<u8>>); 4] = [
        ("sr", vec![tcp_small.clone(), tcp_large, tcp_small]),
        ("oos", vec![ef(20), ef(222), ef(20)]),
        ("xor", vec![small(5000), large(5005), small(5010)]),
        (
            "raw",
            vec![
                b"not IP: the default service".to_vec(),
                small(53),
                small(53),
            ],
        ),
    ];
    for (name, packets) in to_peer {
        let i = index(name);
        let mut c = Conversation::new(base);
        c.lose_me = vec![1];
        let script: Vec<(u64, Vec<u8>)> = packets
            .into_iter()
            .enumerate()
            .map(|(k, p)| (1 + 2 * k as u64, p))
            .collect();
        let want = if name == "raw" { 2 } else { 3 };
        let done = |c: &Conversation| c.peer.stats().services[i].packets_delivered >= want;
        let c = c.run(&script, &[], done, 3000);
        let stats = c.me.stats();
        assert_eq!(stats.services[i].packets_in, 3, "to-peer-{name}");
        assert_eq!(
            c.peer.stats().services[i].packets_delivered,
            want,
            "to-peer-{name}: packets delivered"
        );
        out.add(format!("to-peer-{name}"), c.finish(name));
    }

    // Frames the link refuses: a corrupted CRC, a tag naming no service, too short.
    let genuine = {
        let mut peer = MultiServiceLink::new(base).unwrap();
        peer.handle_packet(Instant::ZERO, &tcp_to(80, ACK, &payload(20)))
            .unwrap();
        let mut f = Vec::new();
        peer.poll_transmit(Instant::ZERO, &mut f).expect("a frame");
        f
    };
    let frame_record = |f: &[u8]| cat(&[&[f.len() as u8, 0], f]);
    let mut bad = genuine.clone();
    bad[5] ^= 0x01;
    let b = frame_record(&bad);
    assert_eq!(run(&b).frames_bad_crc, 1);
    out.add("bad-crc", b);
    let mut unknown = genuine.clone();
    unknown[0] = names.len() as u8;
    let b = frame_record(&unknown);
    assert_eq!(run(&b).frames_unknown_service, 1);
    out.add("unknown-service-tag", b);
    let b = cat(&[&frame_record(&genuine[..3]), &frame_record(&[])]);
    assert_eq!(run(&b).frames_truncated, 2);
    out.add("truncated-and-empty", b);
    out.0
}

// ---------------------------------------------------------------------------------------
// tunnel_receive: records [op][len][dt][bytes] between two tunnel ends

fn tunnel_receive() -> Vec<Seed> {
    use crate::tunnel_receive::{ends, run, A_ADDR, B_ADDR, START_NS};
    use std::net::SocketAddr;

    fn rec(out: &mut Vec<u8>, op: u8, dt: u8, bytes: &[u8]) {
        let len = u8::try_from(bytes.len()).expect("record fits 255 bytes");
        out.extend_from_slice(&[op, len, dt]);
        out.extend_from_slice(bytes);
    }
    // IPv4 packets with TOS 0: as op 1 bytes they reach B unaltered (byte 1 is the XOR mask).
    let tcp_pkt = |k: u32| {
        let h = Tcp {
            src_port: 40000,
            dst_port: 80,
            seq: 1 + 40 * k,
            ack: 1,
            flags: ACK | PSH,
        };
        ipv4(0, TCP, &tcp(h, &[], &payload(40)))
    };
    let udp_pkt = || ipv4(0, UDP, &udp(40000, 53, &payload(30)));
    let handshake_then = |n: u32| {
        let mut b = Vec::new();
        for k in 0..n {
            rec(&mut b, 1, if k == 0 { 0 } else { 5 }, &tcp_pkt(k));
        }
        b
    };
    let mut out = Seeds::default();

    let b = handshake_then(3);
    let s = run(&b);
    assert!(
        s.handshakes_answered == 1 && s.frames_received >= 2,
        "{s:?}"
    );
    out.add("handshake-tcp", b);

    let mut b = Vec::new();
    for k in 0..3 {
        rec(&mut b, 1, if k == 0 { 0 } else { 5 }, &udp_pkt());
    }
    let s = run(&b);
    assert!(s.frames_received >= 2, "{s:?}");
    out.add("handshake-udp", b);

    let b = handshake_then(12);
    let s = run(&b);
    assert!(s.handshakes_answered >= 2, "rekeyed: {s:?}");
    out.add("rekey-after-8-datagrams", b);

    let mut b = handshake_then(3);
    for k in [0u8, 1, 2, 2] {
        rec(&mut b, 2, 1, &[k]);
    }
    let s = run(&b);
    assert!(s.rejected.replayed >= 1, "{s:?}");
    out.add("replays", b);

    let mut b = handshake_then(2);
    let mut altered = tcp_pkt(2);
    altered[1] = 0x04; // TOS 4: every datagram A sends reaches B with a byte XORed with 4
    rec(&mut b, 1, 5, &altered);
    let s = run(&b);
    assert!(s.rejected.total() >= 1, "{s:?}");
    out.add("altered-datagram", b);

    let mut b = Vec::new();
    for k in 0..3 {
        rec(&mut b, 0x81, if k == 0 { 0 } else { 5 }, &tcp_pkt(k));
    }
    let s = run(&b);
    assert!(s.frames_received >= 1, "{s:?}");
    out.add("from-another-address", b);

    let mut b = handshake_then(2);
    for _ in 0..3 {
        rec(&mut b, 3, 2, &udp_pkt());
    }
    let s = run(&b);
    assert!(s.frames_sent >= 3, "{s:?}");
    out.add("responder-sends", b);

    // A genuine session as raw datagrams (op 0): recorded from a pair of ends built exactly as
    // the target builds them, B fed the same datagrams at the same times.
    let (mut a, mut b_end) = ends();
    let a_addr: SocketAddr = A_ADDR.parse().unwrap();
    let b_addr: SocketAddr = B_ADDR.parse().unwrap();
    let mut records = Vec::new();
    let (mut now, mut last) = (START_NS, START_NS);
    let mut buf = Vec::new();
    for k in 0..4u32 {
        now += 5_000_000;
        let t = Instant::from_nanos(now);
        a.handle_packet(t, &tcp_pkt(k)).unwrap();
        a.handle_timeout(t);
        while a.poll_transmit(t, &mut buf).is_some() {
            let dt = ((now - last) / 1_000_000) as u8;
            last = now;
            rec(&mut records, 0, dt, &buf);
            b_end.handle_datagram(t, a_addr, &mut buf.clone());
            b_end.handle_timeout(t);
            let mut back = Vec::new();
            while b_end.poll_transmit(t, &mut back).is_some() {
                a.handle_datagram(t, b_addr, &mut back.clone());
            }
            while b_end.poll_deliver().is_some() {}
        }
    }
    let s = run(&records);
    assert_eq!(s, b_end.stats(), "the target's B follows the recording");
    assert!(
        s.handshakes_answered == 1 && s.frames_received >= 3,
        "{s:?}"
    );
    out.add("raw-genuine-session", records);

    let mut b = Vec::new();
    rec(&mut b, 0, 0, b"\x09\x01\x00\x00 an unknown kind");
    rec(&mut b, 0, 0, &[3, 1, 0]);
    rec(&mut b, 0, 0, &cat(&[&[3, 1, 0, 0], &[0x55; 28]]));
    let s = run(&b);
    assert_eq!(s.rejected.total(), 3, "{s:?}");
    out.add("garbage-datagrams", b);
    out.0
}
