//! The tunnel's TOML configuration: addresses, keys, TUN device, session timers and the link.
//!
//! Contract. [`TunnelConfig`] is plain serde data; every table refuses unknown keys (the
//! error names the key and its line) and every optional key has a default. Both ends carry
//! the same `[link]` table (framing is derived from it, not negotiated, docs/engine.md).
//! [`TunnelConfig::validate`] names the offending key. Key files (`*_file`) are read by the
//! driver, not here (no I/O in this module).
//!
//! ```toml
//! listen = "0.0.0.0:51900"
//! peer = "192.0.2.2:51900"        # optional on the responder: learned from the first handshake
//! private_key = "..."             # base64, `mslink tunnel genkey`
//! peer_public_key = "..."         # base64, `mslink tunnel pubkey`
//! # psk = "..."                   # instead of the two keys: pre-shared-key mode
//!
//! [tun]
//! name = "mslink0"
//! address = "10.200.0.1/24"
//! mtu = 1400
//!
//! [session]
//! keepalive_ms = 10000
//!
//! [link]                          # an mslink link configuration (docs/engine.md)
//! crc = false
//! [[link.service]]
//! name = "bulk"
//! scheme = "selective_repeat"
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;

use mslink_link::config::LinkConfig;

use crate::keys::Key;
use crate::wire::{TAG_LEN, TRANSPORT_HEADER_LEN};

/// Timers and limits of the session layer (defaults after WireGuard's protocol constants).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionConfig {
    /// Send an empty keepalive when data arrived but nothing was sent back for this long.
    pub keepalive_ms: u64,
    /// Send something at least this often regardless (0: off); keeps NAT mappings open.
    pub persistent_keepalive_ms: u64,
    /// Start a new handshake when the session we initiated is this old.
    pub rekey_after_secs: u64,
    /// Start a new handshake after sending this many datagrams on one session.
    pub rekey_after_datagrams: u64,
    /// Never use a session older than this (must exceed `rekey_after_secs`).
    pub reject_after_secs: u64,
    /// Resend a handshake initiation that got no response after this long.
    pub handshake_retry_ms: u64,
    /// Initiations processed per second from one source address, at most (0: no limit).
    pub initiations_per_source_per_sec: f64,
    /// Initiations processed per second from all sources together, at most (0: no limit).
    pub initiations_per_sec: f64,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            keepalive_ms: 10_000,
            persistent_keepalive_ms: 0,
            rekey_after_secs: 120,
            rekey_after_datagrams: 1 << 60,
            reject_after_secs: 180,
            handshake_retry_ms: 5_000,
            initiations_per_source_per_sec: 2.0,
            initiations_per_sec: 200.0,
        }
    }
}

/// The TUN device the driver creates.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TunConfig {
    /// Interface name (at most 15 bytes).
    pub name: String,
    /// Address with prefix length, e.g. `10.200.0.1/24` (optional: configure it yourself).
    pub address: Option<String>,
    /// MTU of the interface; must not exceed the link's `mtu`.
    pub mtu: usize,
    /// Length of the kernel's queue in front of the device (packets waiting for the tunnel
    /// to read them); the kernel's default (500) when absent. A longer queue lets TCP bursts
    /// wait instead of being dropped there.
    pub txqueuelen: Option<u32>,
    /// Segmentation offloads: the kernel hands over TCP super-packets of up to 64 KB, which
    /// the tunnel cuts into `mtu`-sized packets for the link, and packets of one flow that
    /// arrive together are written back as one (docs/tunnel.md). Off: one packet per read
    /// and per write.
    pub offload: bool,
}

impl Default for TunConfig {
    fn default() -> Self {
        TunConfig {
            name: "mslink0".into(),
            address: None,
            mtu: 1400,
            txqueuelen: None,
            offload: true,
        }
    }
}

/// Everything `mslink tunnel CONFIG.toml` reads.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TunnelConfig {
    /// UDP address to bind.
    pub listen: SocketAddr,
    /// The peer's UDP address; absent on a responder that learns it from the peer.
    pub peer: Option<SocketAddr>,
    /// Our X25519 private key (base64).
    pub private_key: Option<Key>,
    /// A file holding our private key (base64), instead of `private_key`; a relative path is
    /// relative to the configuration file's folder ([`TunnelConfig::relative_to`]).
    pub private_key_file: Option<PathBuf>,
    /// The peer's X25519 public key (base64).
    pub peer_public_key: Option<Key>,
    /// Pre-shared key (base64): the Noise NNpsk0 mode instead of key pairs.
    pub psk: Option<Key>,
    /// A file holding the pre-shared key, instead of `psk`; relative as `private_key_file`.
    pub psk_file: Option<PathBuf>,
    /// The TUN device.
    pub tun: TunConfig,
    /// Session timers.
    pub session: SessionConfig,
    /// The multi-service link carried inside the tunnel.
    pub link: LinkConfig,
    /// Send runs of equal-sized datagrams to the peer with UDP GSO (`UDP_SEGMENT`): the same
    /// datagrams on the wire, one pass through the kernel's stack per run. Turned off by
    /// itself if the kernel refuses it.
    pub udp_gso: bool,
}

impl Default for TunnelConfig {
    fn default() -> Self {
        TunnelConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], 51900)),
            peer: None,
            private_key: None,
            private_key_file: None,
            peer_public_key: None,
            psk: None,
            psk_file: None,
            udp_gso: true,
            tun: TunConfig::default(),
            session: SessionConfig::default(),
            link: LinkConfig {
                // The AEAD tag already rejects every corrupted datagram.
                crc: false,
                ..LinkConfig::default()
            },
        }
    }
}

/// A configuration that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A key has a value out of range or conflicts with another.
    #[error("tunnel config key `{key}`: {what}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// What is wrong and what was expected.
        what: String,
    },
    /// The `[link]` table is wrong.
    #[error("tunnel config table `[link]`: {0}")]
    Link(#[from] mslink_link::config::LinkConfigError),
}

fn invalid(key: &'static str, what: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        what: what.into(),
    }
}

impl TunnelConfig {
    /// Bytes a datagram adds around one link frame (header and tag).
    pub const DATAGRAM_OVERHEAD: usize = TRANSPORT_HEADER_LEN + TAG_LEN;

    /// Makes relative key file paths relative to `dir`, the folder of the configuration file
    /// (as a scenario's trace files are), so a configuration reads the same keys from any
    /// working directory.
    pub fn relative_to(mut self, dir: &std::path::Path) -> Self {
        for f in [&mut self.private_key_file, &mut self.psk_file]
            .into_iter()
            .flatten()
        {
            if f.is_relative() {
                *f = dir.join(&*f);
            }
        }
        self
    }

    /// Checks everything the driver needs, except that key files exist.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let keys = self.private_key.is_some() || self.private_key_file.is_some();
        let psk = self.psk.is_some() || self.psk_file.is_some();
        if self.private_key.is_some() && self.private_key_file.is_some() {
            return Err(invalid(
                "private_key_file",
                "give private_key or private_key_file, not both",
            ));
        }
        if self.psk.is_some() && self.psk_file.is_some() {
            return Err(invalid("psk_file", "give psk or psk_file, not both"));
        }
        match (keys, psk) {
            (true, true) => return Err(invalid(
                "psk",
                "choose key pairs (private_key + peer_public_key) or a pre-shared key, not both",
            )),
            (false, false) => {
                return Err(invalid(
                    "private_key",
                    "missing: give private_key (or private_key_file) and peer_public_key, or psk",
                ))
            }
            (true, false) if self.peer_public_key.is_none() => {
                return Err(invalid(
                    "peer_public_key",
                    "missing: the peer's public key (base64)",
                ))
            }
            _ => {}
        }
        if self.tun.name.is_empty() || self.tun.name.len() > 15 {
            return Err(invalid(
                "tun.name",
                format!("{:?} must be 1-15 bytes", self.tun.name),
            ));
        }
        if let Some(a) = &self.tun.address {
            parse_cidr(a).map_err(|w| invalid("tun.address", w.to_string()))?;
        }
        if self.tun.mtu < 68 || self.tun.mtu > self.link.mtu {
            return Err(invalid(
                "tun.mtu",
                format!(
                    "{} must be between 68 and the link mtu ({})",
                    self.tun.mtu, self.link.mtu
                ),
            ));
        }
        let s = &self.session;
        if s.reject_after_secs <= s.rekey_after_secs {
            return Err(invalid(
                "session.reject_after_secs",
                format!(
                    "{} must exceed rekey_after_secs ({})",
                    s.reject_after_secs, s.rekey_after_secs
                ),
            ));
        }
        for (key, rate) in [
            (
                "session.initiations_per_source_per_sec",
                s.initiations_per_source_per_sec,
            ),
            ("session.initiations_per_sec", s.initiations_per_sec),
        ] {
            if !(rate.is_finite() && rate >= 0.0) {
                return Err(invalid(
                    key,
                    format!("{rate} must be a rate >= 0 (0: no limit)"),
                ));
            }
        }
        if s.handshake_retry_ms == 0 || s.rekey_after_datagrams == 0 {
            return Err(invalid(
                "session",
                "handshake_retry_ms and rekey_after_datagrams must be positive",
            ));
        }
        self.link.validate()?;
        Ok(())
    }
}

/// Parses `a.b.c.d/len` (IPv4) or `x::y/len` (IPv6) into address and prefix length.
pub fn parse_cidr(s: &str) -> Result<(std::net::IpAddr, u8), CidrError> {
    let (a, p) = s
        .split_once('/')
        .ok_or_else(|| CidrError::NoPrefix(s.to_string()))?;
    let addr: std::net::IpAddr = a
        .parse()
        .map_err(|_| CidrError::NotAnAddress(a.to_string()))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len: u8 = p
        .parse()
        .ok()
        .filter(|l| *l <= max)
        .ok_or_else(|| CidrError::BadPrefix(p.to_string(), max))?;
    Ok((addr, len))
}

/// Why an `ADDRESS/PREFIX` text cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// No `/prefix` part.
    #[error("{0:?} lacks a /prefix length")]
    NoPrefix(String),
    /// The address part is not an IPv4 or IPv6 address.
    #[error("{0:?} is not an IP address")]
    NotAnAddress(String),
    /// The prefix length is not a number up to the address's width.
    #[error("prefix length {0:?} is not 0-{1}")]
    BadPrefix(String, u8),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_example() -> String {
        mslink_link::testkit::doc_toml_example(include_str!("config.rs"))
    }

    #[test]
    fn documented_example_parses_once_keys_are_filled_in() {
        let k = Key([5; 32]).to_base64();
        let text = doc_example().replace("\"...\"", &format!("\"{k}\""));
        let c: TunnelConfig = toml::from_str(&text).unwrap();
        c.validate().unwrap();
        assert_eq!(c.tun.mtu, 1400);
        assert_eq!(c.link.services[0].name, "bulk");
        assert!(c.peer.is_some());
    }

    #[test]
    fn relative_key_files_are_read_beside_the_configuration() {
        let c = TunnelConfig {
            psk_file: Some("psk".into()),
            private_key_file: Some("/etc/mslink/a.key".into()),
            ..TunnelConfig::default()
        }
        .relative_to(std::path::Path::new("/srv/tunnel"));
        assert_eq!(c.psk_file, Some("/srv/tunnel/psk".into()));
        assert_eq!(c.private_key_file, Some("/etc/mslink/a.key".into()));
        let here = TunnelConfig {
            psk_file: Some("psk".into()),
            ..TunnelConfig::default()
        }
        .relative_to(std::path::Path::new(""));
        assert_eq!(
            here.psk_file,
            Some("psk".into()),
            "a file named without a folder"
        );
    }

    #[test]
    fn errors_name_the_key() {
        let k = Key([5; 32]).to_base64();
        let bad = |s: &str| {
            toml::from_str::<TunnelConfig>(s)
                .map_err(|e| e.to_string())
                .and_then(|c| c.validate().map_err(|e| e.to_string()))
                .unwrap_err()
        };
        assert!(bad("lisen = '0.0.0.0:1'").contains("lisen"));
        assert!(bad("[tun]\nnmae = 'x'").contains("nmae"));
        assert!(bad("private_key = 'abc'").contains("base64"));
        assert!(bad("").contains("`private_key`"));
        assert!(bad(&format!("private_key = '{k}'")).contains("`peer_public_key`"));
        assert!(bad(&format!("psk = '{k}'\nprivate_key = '{k}'")).contains("`psk`"));
        assert!(bad(&format!("psk = '{k}'\n[tun]\nmtu = 9000")).contains("`tun.mtu`"));
        assert!(bad(&format!("psk = '{k}'\n[tun]\naddress = '10.0.0.1'")).contains("`tun.address`"));
        assert!(
            bad(&format!("psk = '{k}'\n[session]\nreject_after_secs = 1"))
                .contains("reject_after_secs")
        );
        assert!(bad(&format!("psk = '{k}'\n[link]\nseq_bits = 12")).contains("seq_bits"));
        assert!(bad(&format!("psk = '{k}'\n[link]\nframe_sise = 1")).contains("frame_sise"));
    }

    #[test]
    fn cidr() {
        assert_eq!(parse_cidr("10.0.0.1/24").unwrap().1, 24);
        assert_eq!(parse_cidr("fd00::1/64").unwrap().1, 64);
        assert!(parse_cidr("10.0.0.1/33").is_err());
    }
}
