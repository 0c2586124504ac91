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
