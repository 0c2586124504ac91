//! `mslink emulate --pcap-link` and the Wireshark dissector `tools/wireshark/mslink.lua`.
//!
//! * `dissector_reads_every_scheme_as_the_wire_format_does` (no root): frames of every scheme,
//!   tagged and not, with 8-, 16- and 32-bit sequence fields, segmented and whole, made by the
//!   sans-IO hop itself and written by `LinkPcap`, are read by tshark with the dissector; every
//!   header field it shows must be what `mslink_wire`'s parser (or the Reed-Solomon layout)
//!   reads from the same bytes, every CRC must verify, every whole packet must reach the IP
//!   dissector, and the retransmissions it flags must be exactly those the services counted.
//!   Malformed records must give an expert note, never a Lua error.
//! * `emulate_pcap_link_shows_arq_and_fec` (root, namespaces): real runs with selective repeat
//!   and XOR FEC over a lossy hop; the capture holds one record per frame the JSON counts, the
//!   lost ones marked, and tshark shows services, sequence numbers, NACKs, retransmissions,
//!   parity frames and the UDP datagrams inside.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{emulate, scratch, skip_without_root};
use mslink_emu::hop::{FrameFate, TappedFrame};
use mslink_emu::linkpcap::{framings, LinkPcap};
use mslink_emu::{EmuConfig, EmulatedHop};
use mslink_link::wire::{FragPos, Header, HeaderFormat, LinkFormat, LinkFrame};
use mslink_link::{Duration, Instant, Side};

fn dissector() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/wireshark/mslink.lua")
}

/// The fields the tests read, in this order.
const FIELDS: [&str; 14] = [
    "mslink.dir",
    "mslink.service",
    "mslink.channel",
    "mslink.type",
    "mslink.seq",
    "mslink.ack",
    "mslink.fp",
    "mslink.nack.first",
    "mslink.parity.first",
    "mslink.parity.count",
    "mslink.crc_ok",
    "mslink.retransmission",
    "ip.id",
    "udp.dstport",
];

/// tshark's view of `pcap`: per record, the fields of [`FIELDS`] (first occurrence), by name.
fn tshark(pcap: &Path) -> Vec<HashMap<&'static str, String>> {
    let mut c = Command::new("tshark");
    c.arg("-X")
        .arg(format!("lua_script:{}", dissector().display()))
        .arg("-r")
        .arg(pcap)
        .args(["-T", "fields", "-E", "occurrence=f"]);
    for f in FIELDS {
        c.args(["-e", f]);
    }
    let o = c
        .output()
        .expect("tshark runs (./dev installs it: apt-get install tshark)");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "tshark: {err}");
    assert!(!err.contains("Lua"), "the dissector failed to load: {err}");
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            FIELDS
                .iter()
                .copied()
                .zip(l.split('\t').map(str::to_string))
                .collect()
        })
        .collect()
}

/// `tshark -V` of `pcap` (the whole tree, expert notes included).
fn tshark_verbose(pcap: &Path) -> String {
    let o = Command::new("tshark")
        .arg("-X")
        .arg(format!("lua_script:{}", dissector().display()))
        .arg("-r")
        .arg(pcap)
        .arg("-V")
        .output()
        .unwrap();
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn number(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}")),
    }
}

/// An IPv4/UDP packet of `len` bytes with IP identification `id`, valid header checksum.
fn udp(len: usize, id: u16, dport: u16) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    let ck = !mslink_wire::checksum::checksum(&p[..20]);
    p[10..12].copy_from_slice(&ck.to_be_bytes());
    p[20..22].copy_from_slice(&5000u16.to_be_bytes());
    p[22..24].copy_from_slice(&dport.to_be_bytes());
    p[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
    p
}

/// Drives a hop built from `toml_text` in virtual time: `n` packets each way (ports 7001 and
/// 7002 alternating), then 10 s to settle; returns the hop and every frame it put on the air.
fn frames_of(toml_text: &str, n: u16, len: usize) -> (EmuConfig, EmulatedHop, Vec<TappedFrame>) {
    let c: EmuConfig = toml::from_str(toml_text).unwrap();
    let mut h = c
        .build(Instant::ZERO, &mut |_| {
            Err(std::io::Error::other("no files"))
        })
        .unwrap();
    h.set_frame_tap(true);
    let mut out = Vec::new();
    let drive = |h: &mut EmulatedHop, until: Instant, out: &mut Vec<TappedFrame>| loop {
        for side in Side::BOTH {
            while h.front_deliver(side).is_some() {
                h.pop_delivered(side);
            }
        }
        h.drain_tapped(&mut |f| out.push(f.clone()));
        match h.poll_timeout() {
            Some(t) if t <= until => h.handle_timeout(t),
            _ => break,
        }
    };
    let mut now = Instant::ZERO;
    for k in 0..n {
        let port = 7001 + k % 2;
        h.handle_packet(now, Side::Left, &udp(len, k, port));
        h.handle_packet(now, Side::Right, &udp(len, 10_000 + k, port));
        drive(&mut h, now, &mut out);
        now += Duration::from_millis(2);
    }
    drive(&mut h, now + Duration::from_secs(10), &mut out);
    (c, h, out)
}

/// What the dissector must show for one frame, read with the crate's own parsers.
#[derive(Debug, Default, PartialEq)]
struct Expect {
    ftype: String,
    seq: Option<u64>,
    ack: Option<u64>,
    fp: Option<u64>,
    nack_first: Option<u64>,
    parity: Option<(u64, u64)>,
    /// IP identification of a whole packet carried.
    ip_id: Option<u64>,
}

/// The Reed-Solomon service's frame (crates/link/src/service/rs_fec/frame.rs), systematic
/// bytes read in place.
fn expect_rs(b: &[u8]) -> Expect {
    let b0 = b[0];
    if b0 & 0x80 != 0 {
        return Expect {
            ftype: "report".into(),
            ack: Some(u64::from(u16::from_be_bytes([b[1], b[2]]))),
            ..Default::default()
        };
    }
    let len = (usize::from(b0 & 7) << 8) | usize::from(b[1]);
    let nsym = usize::from(b[2]);
    let whole = (b0 >> 3) & 0xf == 0;
    let mut data = Vec::new();
    let mut off = 12;
    while data.len() < len + 4 {
        let take = (255 - nsym).min(len + 4 - data.len());
        data.extend_from_slice(&b[off..off + take]);
        off += take + nsym;
    }
    Expect {
        ftype: "data".into(),
        seq: Some(u64::from(u16::from_be_bytes([b[3], b[4]]))),
        fp: Some(u64::from(b0 >> 5 & 3)),
        ip_id: whole.then(|| u64::from(u16::from_be_bytes([data[4], data[5]]))),
        ..Default::default()
    }
}

fn expect(c: &EmuConfig, f: &TappedFrame) -> Expect {
    let link = c.link_config();
    let spec = &link.services[f.service];
    let scheme = spec.config.scheme();
    let crc = link.crc && scheme != "rs_fec";
    let view = LinkFrame::new_checked(
        &f.bytes[..],
        LinkFormat {
            tagged: link.link_format().tagged,
            crc,
        },
    )
    .expect("a frame as sent passes its own CRC");
    let sb = view.service_bytes();
    let hf = HeaderFormat {
        piggyback_ack: matches!(scheme, "go_back_n" | "selective_repeat"),
        ..link.header_format(spec).unwrap()
    };
    if scheme == "rs_fec" {
        return expect_rs(sb);
    }
    if matches!(scheme, "raw" | "snoop") && !hf.segmented {
        return Expect {
            ftype: "data".into(),
            ip_id: Some(u64::from(u16::from_be_bytes([sb[4], sb[5]]))),
            ..Default::default()
        };
    }
    let (h, off) = hf.parse(sb).unwrap();
    let n = |x: u32| Some(u64::from(x));
    match h {
        Header::Data { fp, seq, ack } => Expect {
            ftype: "data".into(),
            seq: n(seq),
            ack: ack.map(u64::from),
            fp: hf.segmented.then_some(fp as u64),
            ip_id: (fp == FragPos::Whole)
                .then(|| u64::from(u16::from_be_bytes([sb[off + 4], sb[off + 5]]))),
            ..Default::default()
        },
        Header::Ack { ack } => Expect {
            ftype: "ack".into(),
            ack: n(ack),
            ..Default::default()
        },
        Header::Nack { ack, first, .. } => Expect {
            ftype: "nack".into(),
            ack: n(ack),
            nack_first: n(first),
            ..Default::default()
        },
        Header::Keepalive { .. } => Expect {
            ftype: "keepalive".into(),
            ..Default::default()
        },
        Header::Parity { first, count } => Expect {
            ftype: "parity".into(),
            parity: Some((u64::from(first), u64::from(count))),
            ..Default::default()
        },
        Header::Unknown { kind } => panic!("the services sent an unknown kind {kind}"),
    }
}

fn shown(r: &HashMap<&str, String>) -> Expect {
    let opt = |k: &str| r.get(k).filter(|s| !s.is_empty()).map(|s| number(s));
    Expect {
        ftype: r["mslink.type"].clone(),
        seq: opt("mslink.seq"),
        ack: opt("mslink.ack"),
        fp: opt("mslink.fp"),
        nack_first: opt("mslink.nack.first"),
        parity: opt("mslink.parity.first").zip(opt("mslink.parity.count")),
        ip_id: opt("ip.id"),
    }
}

/// Top-level keys of every case: 20 Mbit/s, 3 ms, a fixed seed.
const TOP: &str = "rate_bps = 20e6\ndelay_ms = 3\nseed = 5\n";
/// 15% independent frame loss in both directions.
const LOSSY: &str = "[error]\nmodel = 'independent'\nloss = 0.15\n";

#[test]
fn dissector_reads_every_scheme_as_the_wire_format_does() {
    let cases: Vec<(&str, String, usize)> = vec![
        (
            "selective repeat, 16-bit",
            format!("{TOP}{LOSSY}[[link.service]]\nname = 'a'\nscheme = 'selective_repeat'\ntimeout_ms = 20\nnack_interval_ms = 10\n"),
            400,
        ),
        (
            "go-back-N, 8-bit, segmented",
            format!("{TOP}frame_bytes = 300\n{LOSSY}[link]\nseq_bits = 8\n[[link.service]]\nname = 'a'\nscheme = 'go_back_n'\ntimeout_ms = 20\n"),
            700,
        ),
        (
            "Karn's RLP and XOR FEC, tagged, 8-bit",
            format!("{TOP}{LOSSY}[link]\nseq_bits = 8\n[[link.service]]\nname = 'a'\nscheme = 'karn_rlp'\n[[link.service]]\nname = 'b'\nscheme = 'xor_fec'\nblock = 4\n[[link.rule]]\nservice = 'b'\ndst_port = 7002\n"),
            300,
        ),
        (
            "OOS RLP and raw, tagged, 32-bit, segmented",
            format!("{TOP}frame_bytes = 400\n{LOSSY}[link]\nseq_bits = 32\n[[link.service]]\nname = 'a'\nscheme = 'oos_rlp'\n[[link.service]]\nname = 'b'\nscheme = 'raw'\n[[link.rule]]\nservice = 'b'\ndst_port = 7002\n"),
            900,
        ),
        (
            "persistent ARQ and snoop, tagged",
            format!("{TOP}{LOSSY}[[link.service]]\nname = 'a'\nscheme = 'persistent'\n[[link.service]]\nname = 'b'\nscheme = 'snoop'\n[[link.rule]]\nservice = 'b'\ndst_port = 7002\n"),
            500,
        ),
        (
            "Reed-Solomon (robust) and raw, tagged",
            format!("{TOP}{LOSSY}[[link.service]]\nname = 'a'\nscheme = 'rs_fec'\npolicy = 'robust'\n[[link.service]]\nname = 'b'\nscheme = 'raw'\n[[link.rule]]\nservice = 'b'\ndst_port = 7002\n"),
            600,
        ),
    ];
    let dir = std::env::temp_dir().join(format!("mslink-dissector-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, toml_text, len) in &cases {
        let (c, h, frames) = frames_of(toml_text, 60, *len);
        let pcap = dir.join("link.pcap");
        let mut w = LinkPcap::new(
            std::fs::File::create(&pcap).unwrap(),
            &c.link_config(),
            1_700_000_000_000_000_000,
        )
        .unwrap();
        for f in &frames {
            w.write(f);
        }
        w.finish().unwrap();
        let rows = tshark(&pcap);
        assert_eq!(rows.len(), frames.len(), "{name}: one row per frame");
        let crc = framings(&c.link_config());
        let mut resent: HashMap<(usize, usize), u64> = HashMap::new();
        let mut types: HashMap<String, u64> = HashMap::new();
        for (i, (f, r)) in frames.iter().zip(&rows).enumerate() {
            let want = expect(&c, f);
            assert_eq!(shown(r), want, "{name}: frame {} ({f:?})", i + 1);
            assert_eq!(number(&r["mslink.dir"]) as usize, f.dir.index(), "{name}");
            assert_eq!(number(&r["mslink.service"]) as usize, f.service, "{name}");
            let lost = f.fate == FrameFate::Lost;
            assert_eq!(r["mslink.channel"], if lost { "1" } else { "0" }, "{name}");
            if crc[f.service].flags & 0x02 != 0 {
                assert_eq!(r["mslink.crc_ok"], "1", "{name}: frame {}", i + 1);
            } else {
                assert_eq!(r["mslink.crc_ok"], "", "{name}: no link CRC");
            }
            if r["mslink.retransmission"] == "1" {
                *resent.entry((f.dir.index(), f.service)).or_default() += 1;
            }
            *types.entry(want.ftype).or_default() += 1;
        }
        // The retransmissions the dissector found are the ones the services counted.
        let s = h.summary();
        for d in 0..2 {
            for (svc, row) in s.ends[d].services.iter().enumerate() {
                assert_eq!(
                    resent.get(&(d, svc)).copied().unwrap_or(0),
                    row.service.retransmissions,
                    "{name}: direction {d}, service {svc} ({})",
                    row.scheme
                );
            }
        }
        assert!(
            types.get("data").copied().unwrap_or(0) > 100,
            "{name}: {types:?}"
        );
        assert!(
            types.len() > 1 || name.contains("raw"),
            "{name}: control frames too: {types:?}"
        );
    }
    // A record the dissector cannot make sense of: an expert note, never a Lua error.
    let bad = dir.join("bad.pcap");
    let header = pcap_file::pcap::PcapHeader {
        datalink: pcap_file::DataLink::USER0,
        ..Default::default()
    };
    let mut w =
        pcap_file::pcap::PcapWriter::with_header(std::fs::File::create(&bad).unwrap(), header)
            .unwrap();
    let pseudo = |scheme: u8, flags: u8, width: u8, frame: &[u8]| {
        let mut r = vec![1, 16, 0, 0, 0, scheme, flags, width, 0, 0, 0, 0, 0, 0, 0, 0];
        r.extend_from_slice(frame);
        r
    };
    let records = [
        vec![2u8, 16, 0, 0],                  // unknown version
        pseudo(3, 0x0b, 2, &[]),              // no frame
        pseudo(3, 0x0b, 2, &[0, 1, 2, 3, 4]), // shorter than tag + CRC + header
        pseudo(3, 0x08, 2, &[0xA0, 0, 1]),    // a NACK cut short
        pseudo(7, 0x00, 1, &[0, 9, 9]),       // a Reed-Solomon header cut short
        pseudo(
            7,
            0x00,
            1,
            &[0x07, 0xff, 0, 0, 1, 9, 0, 0, 0, 0, 0, 0, 1, 2],
        ), // blocks missing
        pseudo(1, 0x00, 3, &[0, 1, 2]),       // an impossible width
        pseudo(4, 0x00, 4, &[0xC0, 0, 0, 0, 1]), // a parity frame without its count
    ];
    for r in &records {
        let p = pcap_file::pcap::PcapPacket::new(std::time::Duration::ZERO, r.len() as u32, r);
        w.write_packet(&p).unwrap();
    }
    drop(w);
    let v = tshark_verbose(&bad);
    assert!(!v.contains("Lua Error"), "{v}");
    assert_eq!(
        v.matches("[Expert Info (Error/Malformed)").count(),
        records.len(),
        "{v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emulate_pcap_link_shows_arq_and_fec() {
    if skip_without_root() {
        return;
    }
    let d = scratch("pcaplink");
    for scheme in ["selective_repeat", "xor_fec"] {
        let pcap = format!("{scheme}.pcap");
        let mut args = vec!["--pair", "--scheme", scheme, "--loss", "0.1", "--seed", "7"];
        args.extend(["--set", "delay_ms=5"]);
        if scheme == "selective_repeat" {
            args.extend(["--set", "link.service.0.timeout_ms=30"]);
            args.extend(["--set", "link.service.0.nack_interval_ms=15"]);
        }
        args.extend(["--pcap-link", &pcap, "--until", "both"]);
        args.extend([
            "--right",
            "python3 traffic.py udp-server 7003 recv.txt 1.0",
            "--left",
            "sleep 0.5; python3 traffic.py udp-client $MSLINK_RIGHT 7003 300 400 500",
        ]);
        let v = emulate(&d, &args);
        let rows = tshark(&d.join(&pcap));
        // One record per frame on the air, both directions; the lost ones marked.
        let sent: u64 = ["left_to_right", "right_to_left"]
            .iter()
            .map(|k| v[k]["frames"]["sent"].as_u64().unwrap())
            .sum();
        let lost: u64 = ["left_to_right", "right_to_left"]
            .iter()
            .map(|k| v[k]["frames"]["lost"].as_u64().unwrap())
            .sum();
        assert_eq!(rows.len() as u64, sent, "{scheme}");
        assert!(lost > 10, "{scheme}: 10% loss");
        assert_eq!(
            rows.iter().filter(|r| r["mslink.channel"] == "1").count() as u64,
            lost,
            "{scheme}"
        );
        let end = &v["ends"]["left"]["services"][0];
        assert_eq!(end["scheme"], scheme);
        let count = |pred: &dyn Fn(&HashMap<&str, String>) -> bool| {
            rows.iter().filter(|r| pred(r)).count() as u64
        };
        // Every datagram left to right is a UDP packet to port 7003 inside a data frame, and
        // each first transmission has its own sequence number.
        let data_lr = count(&|r| r["mslink.dir"] == "0" && r["mslink.type"] == "data");
        let udp_lr = count(&|r| {
            r["mslink.dir"] == "0" && r["mslink.type"] == "data" && r["udp.dstport"] == "7003"
        });
        let firsts: std::collections::HashSet<&str> = rows
            .iter()
            .filter(|r| r["mslink.dir"] == "0" && r["mslink.type"] == "data")
            .map(|r| r["mslink.seq"].as_str())
            .collect();
        assert_eq!(
            data_lr, udp_lr,
            "{scheme}: the IP dissector read every packet"
        );
        assert_eq!(
            firsts.len(),
            300,
            "{scheme}: 300 datagrams, one sequence number each"
        );
        assert!(rows.iter().all(|r| r["mslink.crc_ok"] == "1"));
        let retrans = count(&|r| r["mslink.retransmission"] == "1");
        if scheme == "selective_repeat" {
            assert_eq!(retrans, end["service"]["retransmissions"].as_u64().unwrap());
            assert!(retrans >= 10, "{retrans}");
            assert!(count(&|r| r["mslink.dir"] == "1" && r["mslink.type"] == "nack") > 0);
            assert_eq!(data_lr, 300 + retrans);
        } else {
            let parity = count(&|r| r["mslink.type"] == "parity");
            assert_eq!(parity, end["service"]["parity_sent"].as_u64().unwrap());
            assert!(parity >= 300 / 12, "{parity}");
            assert!(rows
                .iter()
                .filter(|r| r["mslink.type"] == "parity")
                .all(|r| !r["mslink.parity.first"].is_empty()
                    && !r["mslink.parity.count"].is_empty()));
            assert_eq!((retrans, data_lr), (0, 300));
        }
    }
}
