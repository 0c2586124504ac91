//! tshark dissects a capture of the LLM stack's frames as ordinary Ethernet/IPv4/UDP with good
//! checksums (issue 7, "Done when"). The capture is a classic pcap file the test writes itself
//! into a directory it makes and removes. Needs `tshark` on the PATH; without it the test says so
//! on stderr and checks nothing else, unless `MSLINK_REQUIRE_TSHARK` is set (CI).

// A test that drives real sockets and files: rule 1 (crates/stack/clippy.toml) binds the protocol modules.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::Write;
use std::process::Command;

use mslink_link::Instant;
use mslink_stack::{Architecture, Participants, Stack, StackConfig};

/// Classic pcap (LINKTYPE_ETHERNET) of `frames`, one second apart.
fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let timed: Vec<(Instant, Vec<u8>)> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (Instant::from_secs(i as u64), f.clone()))
        .collect();
    mslink_link::testkit::classic_pcap(1, &timed)
}

#[test]
fn tshark_dissects_our_frames() {
    if !mslink_link::testkit::tshark_present() {
        return;
    }
    let mut frames = Vec::new();
    let sizes = [1usize, 100, 500, 1000, 1400];
    for ck in [false, true] {
        let (mut s, ids) = Stack::udp_ip_eth(StackConfig {
            architecture: Architecture::Llm,
            ..Default::default()
        });
        let p = Participants {
            remote_mac: [2, 0, 0, 0, 0, 2],
            remote_ip: [10, 0, 0, 2],
            local_port: 40000,
            remote_port: 9,
            udp_checksum: ck,
            ..Default::default()
        };
        let (e, _) = s.open(ids.udp, p, 0, None).unwrap();
        for n in sizes {
            s.send(Instant::ZERO, e, &vec![0x61u8; n]).unwrap();
            frames.push(s.poll_transmit_msg().unwrap().bytes().to_vec());
        }
    }
    let dir = std::env::temp_dir().join(format!("mslink-stack-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("llm.pcap");
    std::fs::File::create(&file)
        .unwrap()
        .write_all(&pcap(&frames))
        .unwrap();
    let out = Command::new("tshark")
        .args([
            "-r",
            file.to_str().unwrap(),
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-T",
            "fields",
            "-E",
            "separator=,",
        ])
        .args([
            "-e",
            "eth.type",
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "ip.checksum.status",
            "-e",
            "udp.srcport",
            "-e",
            "udp.dstport",
            "-e",
            "udp.length",
            "-e",
            "udp.checksum.status",
            "-e",
            "_ws.expert",
        ])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), frames.len(), "{text}");
    for (i, line) in lines.iter().enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let n = sizes[i % sizes.len()];
        let ck = i >= sizes.len();
        assert_eq!(&f[..3], &["0x0800", "10.0.0.1", "10.0.0.2"], "{line}");
        assert_eq!(f[3], "1", "IP header checksum good (status 1): {line}");
        assert_eq!(&f[4..7], &["40000", "9", &(n + 8).to_string()], "{line}");
        // UDP checksum: good (1) when sent, not present (3) when off (tshark proto_checksum_enum_e).
        assert_eq!(f[7], if ck { "1" } else { "3" }, "{line}");
        assert!(f.get(8).is_none_or(|x| x.is_empty()), "expert info: {line}");
    }
}
