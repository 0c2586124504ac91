//! A capture of a simulated TCP transfer is ordinary TCP to tshark: good IPv4 and TCP
//! checksums, the data stream's sequence numbers, SACK blocks in the ACKs, nothing malformed;
//! and a capture of many simulated UDP flows reads as plain UDP data, not as the protocols
//! registered on other ports (issue 21: the old default ports were dissected as TAPA, mDNS, ...).
//! The test writes a classic pcap (LINKTYPE_RAW) into a directory it makes and removes.
//! `./dev test` installs tshark and sets MSLINK_REQUIRE_TSHARK=1, so CI cannot skip this.

use std::process::Command;

use mslink_link::Instant;
use mslink_sim::packet::SOURCE_PORT_BASE;
use mslink_sim::{run_with_capture, Scenario};

const SCENARIO: &str = r#"
[sim]
duration_s = 60
drain_s = 0
[[segment]]
kind = "wired"
rate_bps = 10000000
delay_ms = 1
[[segment]]
kind = "wireless"
preset = "wlan"
error = { model = "independent", loss = 0.03 }
error_reverse = { model = "perfect" }
[segment.link]
mtu = 994
[[flow]]
name = "ftp"
app = "ftp"
from = 0
to = 2
size_bytes = 300000
[flow.tcp]
variant = "sack"
mss = 954
"#;

#[test]
fn tshark_dissects_simulated_tcp() {
    if !mslink_link::testkit::tshark_present() {
        return;
    }
    let sc = Scenario::parse(SCENARIO).unwrap();
    sc.validate().unwrap();
    // Both directions of the first (wired) segment: data one way, ACKs the other.
    let mut packets = Vec::new();
    let mut cap = |seg: usize, _dir: usize, t: Instant, p: &[u8]| {
        if seg == 0 {
            packets.push((t, p.to_vec()));
        }
    };
    let r = run_with_capture(
        &sc,
        0,
        &mut |_| Err(std::io::Error::other("no traces")),
        Some(&mut cap),
    )
    .unwrap();
    assert!(r.flows[0].completed);
    let dir = std::env::temp_dir().join(format!("mslink-tcp-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tcp.pcap");
    std::fs::write(&file, mslink_link::testkit::classic_pcap(101, &packets)).unwrap();
    let o = Command::new("tshark")
        .arg("-r")
        .arg(&file)
        .args([
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.relative_sequence_numbers:FALSE",
            "-T",
            "fields",
            "-E",
            "separator=;",
            "-e",
            "ip.checksum.status",
            "-e",
            "tcp.checksum.status",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.seq",
            "-e",
            "tcp.len",
            "-e",
            "tcp.options.sack_le",
            "-e",
            "_ws.malformed",
            "-e",
            "frame.protocols",
        ])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(';').collect()).collect();
    assert_eq!(rows.len(), packets.len());
    let (mut data, mut sacks, mut max_end) = (0, 0, 0u64);
    for r in &rows {
        assert_eq!(&r[..2], &["1", "1"], "checksums good (status 1): {r:?}");
        assert_eq!(r[6], "", "malformed: {r:?}");
        // The default ports carry no registered dissector: the payload is plain data.
        assert!(
            r[7] == "raw:ip:tcp" || r[7] == "raw:ip:tcp:data",
            "dissected as {}",
            r[7]
        );
        if r[2] == SOURCE_PORT_BASE.to_string() {
            data += 1;
            let (seq, len): (u64, u64) = (r[3].parse().unwrap(), r[4].parse().unwrap());
            assert!(len > 0 && len <= 954 && seq % 954 == 0, "{r:?}");
            max_end = max_end.max(seq + len);
        } else if !r[5].is_empty() {
            sacks += 1;
        }
    }
    assert_eq!(max_end, 300_000, "tshark sees the whole stream");
    assert!(
        data >= 315 && sacks > 0,
        "{data} data segments, {sacks} ACKs with SACK"
    );
}

/// The same lossy transfer with `handshake` and `timestamps`: the capture starts with a SYN
/// and a SYN-ACK carrying MSS, window scale, SACK-permitted and timestamps (RFC 9293 §3.5,
/// RFC 7323 §2-3, RFC 2018 §2), every segment carries TSval/TSecr, the data stream starts at
/// sequence 0 (the SYN took 2^32 - 1), and it ends with a FIN from each side; the flow
/// completes with every byte delivered exactly once, in order, despite the losses.
#[test]
fn tshark_dissects_handshake_fin_and_timestamps() {
    let sc = Scenario::parse(SCENARIO)
        .unwrap()
        .with_overrides(&[
            ("flow.0.tcp.handshake".into(), "true".into()),
            ("flow.0.tcp.timestamps".into(), "true".into()),
            ("flow.0.tcp.mss".into(), "942".into()),
        ])
        .unwrap();
    sc.validate().unwrap();
    // 954 + 40 + 12 bytes of timestamps exceeds the wireless mtu of 994.
    let too_big = Scenario::parse(SCENARIO)
        .unwrap()
        .with_overrides(&[("flow.0.tcp.timestamps".into(), "true".into())])
        .unwrap();
    let e = too_big.validate().unwrap_err().to_string();
    assert!(e.contains("tcp.mss") && e.contains("52 bytes"), "{e}");
    let mut packets = Vec::new();
    let mut cap = |seg: usize, _dir: usize, t: Instant, p: &[u8]| {
        if seg == 0 {
            packets.push((t, p.to_vec()));
        }
    };
    let r = run_with_capture(
        &sc,
        0,
        &mut |_| Err(std::io::Error::other("no traces")),
        Some(&mut cap),
    )
    .unwrap();
    let f = &r.flows[0];
    assert!(f.completed && f.bytes == 300_000, "{f:?}");
    assert!(f.retransmits > 0 && f.malformed == 0, "{f:?}");
    if !mslink_link::testkit::tshark_present() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("mslink-tcp-tshark-hs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tcp.pcap");
    std::fs::write(&file, mslink_link::testkit::classic_pcap(101, &packets)).unwrap();
    let fields = [
        "ip.checksum.status",
        "tcp.checksum.status",
        "tcp.srcport",
        "tcp.seq",
        "tcp.len",
        "tcp.flags.syn",
        "tcp.flags.fin",
        "tcp.options.mss_val",
        "tcp.options.wscale.shift",
        "tcp.options.sack_perm",
        "tcp.options.timestamp.tsval",
        "tcp.options.timestamp.tsecr",
        "_ws.malformed",
        "tcp.ack",
    ];
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(&file).args([
        "-o",
        "tcp.check_checksum:TRUE",
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "tcp.relative_sequence_numbers:FALSE",
        "-T",
        "fields",
        "-E",
        "separator=;",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(';').collect()).collect();
    assert_eq!(rows.len(), packets.len());
    let sender = SOURCE_PORT_BASE.to_string();
    // SYN: ISS 2^32 - 1, the options; SYN-ACK: the same options, echoing the SYN's TSval.
    let (syn, synack) = (&rows[0], &rows[1]);
    assert_eq!(
        (syn[2], syn[3], syn[5], syn[6]),
        (sender.as_str(), "4294967295", "1", "0")
    );
    // recv_buffer_bytes 65536: shift 1; tshark shows SACK-permitted as its bytes (04 02).
    assert_eq!((syn[7], syn[8], syn[9]), ("942", "1", "0402"), "{syn:?}");
    assert_eq!(syn[11], "0", "TSecr of a SYN");
    assert_ne!(synack[2], sender);
    assert_eq!(
        (synack[5], synack[7], synack[8], synack[9]),
        ("1", "942", "1", "0402")
    );
    assert_eq!(synack[13], "0", "the SYN-ACK acknowledges ISS + 1");
    let (mut fins, mut max_end) = ([0, 0], 0u64);
    for r in &rows {
        assert_eq!(&r[..2], &["1", "1"], "checksums good: {r:?}");
        assert_eq!(r[12], "", "malformed: {r:?}");
        assert!(
            !r[10].is_empty() && !r[11].is_empty(),
            "TSval/TSecr on {r:?}"
        );
        let from_sender = r[2] == sender;
        if r[6] == "1" {
            fins[usize::from(!from_sender)] += 1;
        }
        if from_sender && r[5] == "0" {
            let (seq, len): (u64, u64) = (r[3].parse().unwrap(), r[4].parse().unwrap());
            assert!(seq % 942 == 0 || len == 0, "{r:?}");
            if len > 0 {
                max_end = max_end.max(seq + len);
            }
        }
    }
    assert_eq!(max_end, 300_000);
    assert!(fins[0] >= 1 && fins[1] >= 1, "a FIN each way: {fins:?}");
    // The last packet is the sender's ACK of the receiver's FIN.
    let last = rows.last().unwrap();
    assert_eq!(
        (last[2], last[3], last[6]),
        (sender.as_str(), "300001", "0"),
        "{last:?}"
    );
}

/// Many CBR flows on their default ports: tshark dissects every packet as UDP carrying data.
#[test]
fn tshark_dissects_simulated_udp_flows_as_plain_data() {
    if !mslink_link::testkit::tshark_present() {
        return;
    }
    let flows = 1000;
    let sc = Scenario::parse(&format!(
        "[sim]\nduration_s = 0.05\ndrain_s = 0\n\
         [[segment]]\nkind = \"wired\"\nrate_bps = 1e9\ndelay_ms = 1\n\
         [[flow]]\nname = \"cbr\"\napp = \"cbr\"\nfrom = 0\nto = 1\ncount = {flows}\n\
         rate_bps = 64000\npacket_bytes = 160\n"
    ))
    .unwrap();
    sc.validate().unwrap();
    let mut packets = Vec::new();
    let mut cap = |_seg: usize, _dir: usize, t: Instant, p: &[u8]| packets.push((t, p.to_vec()));
    run_with_capture(
        &sc,
        0,
        &mut |_| Err(std::io::Error::other("no traces")),
        Some(&mut cap),
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("mslink-udp-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("udp.pcap");
    std::fs::write(&file, mslink_link::testkit::classic_pcap(101, &packets)).unwrap();
    let o = Command::new("tshark")
        .arg("-r")
        .arg(&file)
        .args(["-T", "fields", "-e", "udp.srcport", "-e", "frame.protocols"])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut sources = std::collections::BTreeSet::new();
    for line in text.lines() {
        let (port, protocols) = line.split_once('\t').unwrap();
        assert_eq!(protocols, "raw:ip:udp:data", "from port {port}");
        sources.insert(port.to_string());
    }
    assert_eq!(sources.len(), flows, "every flow's packets were looked at");
}
