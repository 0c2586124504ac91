//! The packet classifier (004 §IV): which service carries each IP packet.
//!
//! Contract. Rules are tried in order; the first whose every given field matches picks the
//! service. Fields: IP version, DS field codepoint (DSCP, the six high bits of IPv4 TOS or IPv6
//! traffic class — 004 §V.A classifies on it because it stays visible under IPsec), IP
//! protocol (the upper-layer protocol after IPv6 extension headers), and source, destination
//! or either port for TCP, UDP, UDP-Lite and SCTP. Fragments other than a first fragment (IPv4
//! or IPv6) carry no ports, so port rules never match them. A packet no rule matches goes to the default
//! service; so does a packet that is not valid IPv4 or IPv6, and [`Classification::malformed`]
//! says so, for the caller to count. Parsing never panics.

use mslink_wire::ip::IpPacket;

/// An inclusive port range; a single port is `lo == hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "PortSpec", into = "PortSpec")]
pub struct PortRange {
    /// Lowest port.
    pub lo: u16,
    /// Highest port.
    pub hi: u16,
}

/// A port as written in a configuration: `5004` or `"5000-5010"`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum PortSpec {
    /// One port.
    One(i64),
    /// `"lo-hi"` or a port as a string.
    Text(String),
}

/// A port or protocol in a rule that cannot be read: what was written and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(String);

impl TryFrom<PortSpec> for PortRange {
    type Error = SpecError;
    fn try_from(s: PortSpec) -> Result<Self, SpecError> {
        let port = |v: i64| {
            u16::try_from(v).map_err(|_| SpecError(format!("port {v} is outside 0-65535")))
        };
        match s {
            PortSpec::One(v) => port(v).map(|p| PortRange { lo: p, hi: p }),
            PortSpec::Text(t) => {
                let parse = |x: &str| {
                    x.trim().parse::<i64>().map_err(|_| {
                        SpecError(format!(
                            "expected a port or a range like \"5000-5010\", found {t:?}"
                        ))
                    })
                };
                let (lo, hi) = match t.split_once('-') {
                    Some((a, b)) => (port(parse(a)?)?, port(parse(b)?)?),
                    None => {
                        let p = port(parse(&t)?)?;
                        (p, p)
                    }
                };
                if lo > hi {
                    return Err(SpecError(format!(
                        "port range {t:?} is empty (low end above high end)"
                    )));
                }
                Ok(PortRange { lo, hi })
            }
        }
    }
}

impl From<PortRange> for PortSpec {
    fn from(r: PortRange) -> Self {
        if r.lo == r.hi {
            PortSpec::One(r.lo as i64)
        } else {
            PortSpec::Text(format!("{}-{}", r.lo, r.hi))
        }
    }
}

impl PortRange {
    fn contains(&self, p: u16) -> bool {
        self.lo <= p && p <= self.hi
    }
}

/// An IP protocol as written in a configuration: a number or a name (`tcp`, `udp`, `icmp`,
/// `icmpv6`, `sctp`, `udplite`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "ProtoSpec", into = "ProtoSpec")]
pub struct Protocol(pub u8);

/// Wire form of [`Protocol`].
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum ProtoSpec {
    /// A protocol number.
    Number(i64),
    /// A protocol name.
    Name(String),
}

impl TryFrom<ProtoSpec> for Protocol {
    type Error = SpecError;
    fn try_from(s: ProtoSpec) -> Result<Self, SpecError> {
        match s {
            ProtoSpec::Number(n) => {
                u8::try_from(n).map(Protocol).map_err(|_| SpecError(format!("protocol number {n} is outside 0-255")))
            }
            ProtoSpec::Name(n) => match n.to_ascii_lowercase().as_str() {
                "icmp" => Ok(Protocol(1)),
                "tcp" => Ok(Protocol(6)),
                "udp" => Ok(Protocol(17)),
                "icmpv6" => Ok(Protocol(58)),
                "sctp" => Ok(Protocol(132)),
                "udplite" => Ok(Protocol(136)),
                _ => Err(SpecError(format!("unknown protocol {n:?}; expected a number or one of tcp, udp, icmp, icmpv6, sctp, udplite"))),
            },
        }
    }
}

impl From<Protocol> for ProtoSpec {
    fn from(p: Protocol) -> Self {
        ProtoSpec::Number(p.0 as i64)
    }
}

/// One classifier rule: every given field must match.
#[derive(Clone, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Name of the service that carries matching packets.
    pub service: String,
    /// IP version, 4 or 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_version: Option<u8>,
    /// DS field codepoint, 0-63.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    /// IP protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Source port (range).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_port: Option<PortRange>,
    /// Destination port (range).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<PortRange>,
    /// Either port (range).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<PortRange>,
}

/// A configuration mistake in a rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClassifierError {
    /// The rule names a service the link does not have.
    #[error("classifier rule {rule}: unknown service {name:?} (services: {known})")]
    UnknownService {
        /// Rule index (0-based).
        rule: usize,
        /// The name given.
        name: String,
        /// The names available.
        known: String,
    },
    /// A field is out of range.
    #[error("classifier rule {rule}: {what}")]
    BadField {
        /// Rule index (0-based).
        rule: usize,
        /// What is wrong.
        what: String,
    },
}

/// The outcome of classifying one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classification {
    /// Index of the chosen service.
    pub service: usize,
    /// True if the packet was not valid IP (it went to the default service).
    pub malformed: bool,
}

/// Header fields the rules look at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowKey {
    /// 4 or 6.
    pub ip_version: u8,
    /// DS codepoint.
    pub dscp: u8,
    /// Upper-layer protocol.
    pub protocol: u8,
    /// Source and destination ports, when the packet has them.
    pub ports: Option<(u16, u16)>,
}

impl FlowKey {
    /// Reads the fields from an IP packet; `None` if it is not valid IPv4 or IPv6.
    pub fn parse(packet: &[u8]) -> Option<FlowKey> {
        let ip = IpPacket::parse(packet).ok()?;
        let has_ports = matches!(ip.protocol, 6 | 17 | 132 | 136);
        let p = ip.payload;
        let ports = (has_ports && ip.is_first_fragment() && p.len() >= 4).then(|| {
            (
                u16::from_be_bytes([p[0], p[1]]),
                u16::from_be_bytes([p[2], p[3]]),
            )
        });
        let (ip_version, dscp, protocol) = (ip.version, ip.dscp(), ip.protocol);
        Some(FlowKey {
            ip_version,
            dscp,
            protocol,
            ports,
        })
    }
}

#[derive(Clone, Debug)]
struct CompiledRule {
    service: usize,
    rule: Rule,
}

impl CompiledRule {
    fn matches(&self, k: &FlowKey) -> bool {
        let r = &self.rule;
        // A port criterion needs ports; each given range must contain the chosen port.
        let ports_ok = match k.ports {
            None => r.src_port.is_none() && r.dst_port.is_none() && r.port.is_none(),
            Some((s, d)) => {
                r.src_port.is_none_or(|x| x.contains(s))
                    && r.dst_port.is_none_or(|x| x.contains(d))
                    && r.port.is_none_or(|x| x.contains(s) || x.contains(d))
            }
        };
        ports_ok
            && r.ip_version.is_none_or(|v| v == k.ip_version)
            && r.dscp.is_none_or(|d| d == k.dscp)
            && r.protocol.is_none_or(|p| p.0 == k.protocol)
    }
}

/// Ordered rules resolved against the link's service names.
#[derive(Clone, Debug)]
pub struct Classifier {
    rules: Vec<CompiledRule>,
    default: usize,
}

impl Classifier {
    /// Resolves `rules` against `services` (names by index); unmatched packets go to `default`.
    pub fn new(rules: &[Rule], services: &[&str], default: usize) -> Result<Self, ClassifierError> {
        let mut out = Vec::with_capacity(rules.len());
        for (i, r) in rules.iter().enumerate() {
            let service = services
                .iter()
                .position(|s| *s == r.service)
                .ok_or_else(|| ClassifierError::UnknownService {
                    rule: i,
                    name: r.service.clone(),
                    known: services.join(", "),
                })?;
            if r.dscp.is_some_and(|d| d > 63) {
                return Err(ClassifierError::BadField {
                    rule: i,
                    what: format!("dscp {} is outside 0-63", r.dscp.unwrap()),
                });
            }
            if r.ip_version.is_some_and(|v| v != 4 && v != 6) {
                return Err(ClassifierError::BadField {
                    rule: i,
                    what: "ip_version must be 4 or 6".into(),
                });
            }
            out.push(CompiledRule {
                service,
                rule: r.clone(),
            });
        }
        Ok(Classifier {
            rules: out,
            default,
        })
    }

    /// The service for `packet`.
    pub fn classify(&self, packet: &[u8]) -> Classification {
        match FlowKey::parse(packet) {
            None => Classification {
                service: self.default,
                malformed: true,
            },
            Some(k) => Classification {
                service: self.classify_key(&k),
                malformed: false,
            },
        }
    }

    /// The service for already-parsed header fields.
    pub fn classify_key(&self, k: &FlowKey) -> usize {
        self.rules
            .iter()
            .find(|r| r.matches(k))
            .map_or(self.default, |r| r.service)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn udp4(dscp: u8, sport: u16, dport: u16) -> Vec<u8> {
        let b = PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(sport, dport);
        let mut out = Vec::new();
        b.write(&mut out, &[1, 2, 3]).unwrap();
        out[1] = dscp << 2;
        out
    }

    fn tcp6(tc: u8, sport: u16, dport: u16) -> Vec<u8> {
        let b = PacketBuilder::ipv6([1; 16], [2; 16], 64).tcp(sport, dport, 1, 1000);
        let mut out = Vec::new();
        b.write(&mut out, &[9; 10]).unwrap();
        out[0] = 0x60 | tc >> 4;
        out[1] = (tc & 0x0f) << 4 | (out[1] & 0x0f);
        out
    }

    fn toml_rules(s: &str) -> Vec<Rule> {
        #[derive(serde::Deserialize)]
        struct R {
            rule: Vec<Rule>,
        }
        toml::from_str::<R>(s).unwrap().rule
    }

    #[test]
    fn first_matching_rule_wins_and_default_catches_the_rest() {
        let rules = toml_rules(
            r#"
            [[rule]]
            service = "cbr"
            dscp = 46
            [[rule]]
            service = "bulk"
            protocol = "tcp"
            [[rule]]
            service = "cbr"
            protocol = 17
            dst_port = "5000-5010"
            "#,
        );
        let c = Classifier::new(&rules, &["raw", "bulk", "cbr"], 0).unwrap();
        assert_eq!(c.classify(&udp4(46, 1, 2)).service, 2);
        assert_eq!(c.classify(&udp4(0, 1, 5004)).service, 2);
        assert_eq!(c.classify(&udp4(0, 1, 5011)).service, 0);
        assert_eq!(c.classify(&tcp6(0, 80, 1234)).service, 1);
        assert_eq!(
            c.classify(&tcp6(46 << 2, 80, 1234)).service,
            2,
            "IPv6 traffic class carries the DSCP"
        );
        let bad = c.classify(&[0x45, 0, 0]);
        assert_eq!((bad.service, bad.malformed), (0, true));
    }

    #[test]
    fn either_port_and_source_port() {
        let rules = toml_rules(
            r#"
            [[rule]]
            service = "a"
            src_port = 53
            [[rule]]
            service = "b"
            port = 80
            "#,
        );
        let c = Classifier::new(&rules, &["d", "a", "b"], 0).unwrap();
        assert_eq!(c.classify(&udp4(0, 53, 9)).service, 1);
        assert_eq!(c.classify(&udp4(0, 9, 80)).service, 2);
        assert_eq!(c.classify(&tcp6(0, 80, 9)).service, 2);
        assert_eq!(c.classify(&udp4(0, 9, 9)).service, 0);
    }

    #[test]
    fn configuration_errors_name_the_rule() {
        let e = Classifier::new(
            &[Rule {
                service: "nope".into(),
                ..Default::default()
            }],
            &["raw"],
            0,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "classifier rule 0: unknown service \"nope\" (services: raw)"
        );
        let e = Classifier::new(
            &[Rule {
                service: "raw".into(),
                dscp: Some(64),
                ..Default::default()
            }],
            &["raw"],
            0,
        )
        .unwrap_err();
        assert!(e.to_string().contains("dscp 64"));
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct R {
            rule: Vec<Rule>,
        }
        let e = toml::from_str::<R>("[[rule]]\nservice='a'\ndst_port='9-1'").unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = toml::from_str::<R>("[[rule]]\nservice='a'\nprotocol='tpc'").unwrap_err();
        assert!(e.to_string().contains("unknown protocol"), "{e}");
        let e = toml::from_str::<R>("[[rule]]\nservice='a'\nport=70000").unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn classify_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80)) {
            let c = Classifier::new(&[Rule { service: "a".into(), port: Some(PortRange { lo: 1, hi: 9 }), ..Default::default() }], &["d", "a"], 0).unwrap();
            let out = c.classify(&bytes);
            proptest::prop_assert!(out.service < 2);
        }
    }
}
