//! A capture of a simulated TCP transfer is ordinary TCP to tshark: good IPv4 and TCP
//! checksums, the data stream's sequence numbers, SACK blocks in the ACKs, nothing malformed.
//! The test writes a classic pcap (LINKTYPE_RAW) into a directory it makes and removes.
//! `./dev test` installs tshark and sets MSLINK_REQUIRE_TSHARK=1, so CI cannot skip this.

use std::process::Command;

use mslink_link::Instant;
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
            // Zero payload on a well-known port would otherwise be dissected as that protocol.
            "-d",
            "tcp.port==5000,data",
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
        if r[2] == "40000" {
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
