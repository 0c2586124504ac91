//! Link configuration: services, classifier rules, scheduler and framing, as read from TOML.
//!
//! Contract. [`LinkConfig`] is plain serde data with defaults for every optional key;
//! [`LinkConfig::validate`] checks everything a link needs before it is built and names the
//! offending key in its error. Both ends of a link must be built from the same configuration:
//! framing (service tags, sequence width, segmentation) is derived from it, not negotiated.
//!
//! ```toml
//! frame_size = 1000        # bytes on the wire per frame, framing included (004 Table I)
//! mtu = 1500               # largest packet accepted from above
//! seq_bits = 8             # width of sequence fields: 8, 16 or 32
//! crc = true               # CRC-32 on every frame (services that correct errors skip it)
//! default_service = "best_effort"
//!
//! [scheduler]
//! policy = "scfq"
//!
//! [[service]]
//! name = "best_effort"
//! scheme = "raw"
//!
//! [[service]]
//! name = "tcp"
//! scheme = "selective_repeat"
//!
//! [[rule]]
//! service = "tcp"
//! protocol = "tcp"
//! ```

use crate::classifier::{Classifier, ClassifierError, Rule};
use crate::sched::SchedulerConfig;
use crate::service::ServiceConfig;
use crate::wire::{HeaderFormat, LinkFormat, SeqWidth};

/// One named service of a link.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServiceSpec {
    /// The name classifier rules refer to. The service tag on the wire is the index of the
    /// service in the list.
    pub name: String,
    /// The scheme and its tuning.
    #[serde(flatten)]
    pub config: ServiceConfig,
}

/// Everything that defines one multi-service link (both ends use the same).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// Largest frame on the wire in bytes, service tag, headers and CRC included.
    pub frame_size: usize,
    /// Largest packet accepted from above; larger packets are refused and counted.
    pub mtu: usize,
    /// Width of sequence and acknowledgement fields in bits: 8, 16 or 32.
    pub seq_bits: u32,
    /// Whether frames carry a CRC-32 (services that correct errors themselves never do).
    pub crc: bool,
    /// The service for packets no rule matches and for packets that are not IP; the first
    /// service when absent.
    pub default_service: Option<String>,
    /// The frame scheduler sharing the link among services.
    pub scheduler: SchedulerConfig,
    /// The services, in tag order.
    #[serde(rename = "service")]
    pub services: Vec<ServiceSpec>,
    /// Classifier rules, first match wins.
    #[serde(rename = "rule")]
    pub rules: Vec<Rule>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            frame_size: 1500,
            mtu: 1500,
            seq_bits: 16,
            crc: true,
            default_service: None,
            scheduler: SchedulerConfig::default(),
            services: vec![ServiceSpec {
                name: "raw".into(),
                config: ServiceConfig::Raw(Default::default()),
            }],
            rules: Vec::new(),
        }
    }
}

/// A link configuration that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum LinkConfigError {
    /// A key has a value out of range.
    #[error("link config key `{key}`: {what}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// What is wrong and what was expected.
        what: String,
    },
    /// A classifier rule is wrong.
    #[error(transparent)]
    Classifier(#[from] ClassifierError),
    /// The scheduler configuration is wrong.
    #[error("link config key `scheduler`: {0}")]
    Scheduler(#[from] crate::sched::SchedConfigError),
}

/// Most bytes a data header of any scheme takes (GBN/SR: sequence and ack).
fn max_data_header(width: SeqWidth) -> usize {
    2 * width.bytes()
}

impl LinkConfig {
    /// Framing options derived from this configuration.
    pub fn link_format(&self) -> LinkFormat {
        LinkFormat {
            tagged: self.services.len() > 1,
            crc: self.crc,
        }
    }

    /// The sequence field width.
    pub fn seq_width(&self) -> Result<SeqWidth, LinkConfigError> {
        SeqWidth::from_bits(self.seq_bits).ok_or_else(|| LinkConfigError::Invalid {
            key: "seq_bits",
            what: format!(
                "{} is not a supported width; expected 8, 16 or 32",
                self.seq_bits
            ),
        })
    }

    /// Whether `spec`'s packets must be cut into several frames: true when the largest packet
    /// plus the link's framing and the service's own data header does not fit one frame. Both
    /// ends derive it from the same configuration, so it needs no negotiation; a service with
    /// a small header (Raw: none) keeps whole packets where one with a larger header must cut.
    pub fn segments(&self, spec: &ServiceSpec) -> bool {
        let width = self.seq_width().unwrap_or_default();
        self.mtu + self.link_format().overhead() + spec.config.data_header_bytes(width)
            > self.frame_size
    }

    /// Consequences of this configuration a user may not expect, one sentence each (the
    /// simulator prints them before a run): a service that segments packets (each fragment is
    /// a frame the channel can lose, so a packet's loss grows with the number of its frames,
    /// and the fragment position takes two sequence bits, which may clamp the window), a
    /// window larger than its sequence space allows, and the scheduler's own notes (ELF
    /// reservations beyond 003 §6.3's admission condition).
    pub fn notes(&self) -> Vec<String> {
        let Ok(width) = self.seq_width() else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        for spec in &self.services {
            let Ok(format) = self.header_format(spec) else {
                continue;
            };
            let limit = crate::service::go_back_n::clamp_window(u64::MAX, format.seq_space());
            let clamped = spec.config.window().filter(|&w| w > limit);
            let header = spec.config.data_header_bytes(width);
            let framing = self.link_format().overhead();
            let clamp = |w: u64| {
                format!(
                    "window {w} is clamped to {limit}, the most its {}-bit sequence numbers allow",
                    format.seq_space().bits()
                )
            };
            if self.segments(spec) {
                let whole = self.frame_size.saturating_sub(framing + header);
                let frames = self.mtu.div_ceil(whole.max(1));
                let window = clamped.map_or(String::new(), |w| {
                    format!(
                        "; the fragment position takes two sequence bits, and its {}",
                        clamp(w)
                    )
                });
                // What one lost fragment does depends on whether the service repairs it.
                let fate = match spec.config {
                    ServiceConfig::Raw(_) | ServiceConfig::Snoop(_) => format!(
                        "is lost if any of them is, so its loss is up to {frames} times the \
                         frame loss"
                    ),
                    ServiceConfig::XorFec(_) => format!(
                        "is lost if any of them is lost and not rebuilt from parity, so its \
                         loss is up to {frames} times a frame's residual loss"
                    ),
                    _ => format!(
                        "is lost if the service gives up on any of them, so its residual loss \
                         is up to {frames} times a frame's, and every fragment is a frame to \
                         repair"
                    ),
                };
                notes.push(format!(
                    "service `{}` ({}): segments packets (mtu {} + {framing} bytes of framing + \
                     its {header}-byte header > frame_size {}): a packet over {whole} bytes \
                     takes up to {frames} frames and {fate}; set mtu to the largest packet sent \
                     (at most {whole} keeps every packet whole){window}",
                    spec.name,
                    spec.config.scheme(),
                    self.mtu,
                    self.frame_size,
                ));
            } else if let Some(w) = clamped {
                notes.push(format!(
                    "service `{}` ({}): {}",
                    spec.name,
                    spec.config.scheme(),
                    clamp(w)
                ));
            }
        }
        notes.extend(self.scheduler.notes());
        notes
    }

    /// Whether any service of the link segments packets.
    pub fn segmented(&self) -> bool {
        self.services.iter().any(|s| self.segments(s))
    }

    /// The service header format `spec` starts from (each scheme sets its own
    /// `piggyback_ack`).
    pub fn header_format(&self, spec: &ServiceSpec) -> Result<HeaderFormat, LinkConfigError> {
        Ok(HeaderFormat {
            width: self.seq_width()?,
            segmented: self.segments(spec),
            piggyback_ack: false,
        })
    }

    /// Index of the default service.
    pub fn default_index(&self) -> Result<usize, LinkConfigError> {
        match &self.default_service {
            None => Ok(0),
            Some(name) => self
                .services
                .iter()
                .position(|s| &s.name == name)
                .ok_or_else(|| LinkConfigError::Invalid {
                    key: "default_service",
                    what: format!(
                        "no service is named {name:?} (services: {})",
                        self.service_names().join(", ")
                    ),
                }),
        }
    }

    /// The configuration of the wireless host's end of this link: the same, except that TCP-
    /// aware agents (Snoop) that belong at the base station are switched to their mobile role
    /// (004 §III.A: Snoop "does not retransmit in the direction from the wireless host").
    pub fn at_mobile_end(&self) -> LinkConfig {
        let mut c = self.clone();
        for s in &mut c.services {
            if let ServiceConfig::Snoop(sc) = &mut s.config {
                sc.role = crate::service::snoop::SnoopRole::Mobile;
            }
        }
        c
    }

    /// Service names in tag order.
    pub fn service_names(&self) -> Vec<&str> {
        self.services.iter().map(|s| s.name.as_str()).collect()
    }

    /// Checks everything [`crate::link::MultiServiceLink::new`] needs.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        let width = self.seq_width()?;
        if self.services.is_empty() {
            return Err(LinkConfigError::Invalid {
                key: "service",
                what: "a link needs at least one [[service]]".into(),
            });
        }
        if self.services.len() > 256 {
            return Err(LinkConfigError::Invalid {
                key: "service",
                what: format!(
                    "{} services, but the one-byte service tag allows 256",
                    self.services.len()
                ),
            });
        }
        for (i, s) in self.services.iter().enumerate() {
            if s.name.is_empty() {
                return Err(LinkConfigError::Invalid {
                    key: "service.name",
                    what: format!("service {i} has an empty name"),
                });
            }
            if self.services[..i].iter().any(|o| o.name == s.name) {
                return Err(LinkConfigError::Invalid {
                    key: "service.name",
                    what: format!("two services are named {:?}", s.name),
                });
            }
        }
        let framing = self.link_format().overhead() + max_data_header(width);
        if self.frame_size <= framing {
            return Err(LinkConfigError::Invalid {
                key: "frame_size",
                what: format!(
                    "{} bytes leaves no room for data after {framing} bytes of framing",
                    self.frame_size
                ),
            });
        }
        if self.mtu == 0 || self.mtu > 65_535 {
            return Err(LinkConfigError::Invalid {
                key: "mtu",
                what: format!("{} is outside 1-65535", self.mtu),
            });
        }
        let default = self.default_index()?;
        Classifier::new(&self.rules, &self.service_names(), default)?;
        self.scheduler.build(self.services.len())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_example_parses_and_validates() {
        let toml_text = crate::testkit::doc_toml_example(include_str!("config.rs"));
        let c: LinkConfig = toml::from_str(&toml_text).unwrap();
        c.validate().unwrap();
        assert_eq!(c.service_names(), vec!["best_effort", "tcp"]);
        assert!(c.link_format().tagged);
        assert!(
            c.segmented(),
            "1500-byte packets need several 1000-byte frames"
        );
    }

    #[test]
    fn notes_name_every_service_that_segments() {
        // The trap: 16-bit sequence numbers (the default) add a byte to Karn's RLP's and XOR
        // FEC's header, and a 995-byte packet no longer fits a 1000-byte frame.
        let text = |bits: u32| {
            format!(
                "frame_size = 1000\nmtu = 995\nseq_bits = {bits}\n\
                 [[service]]\nname = \"a\"\nscheme = \"karn_rlp\"\n\
                 [[service]]\nname = \"b\"\nscheme = \"xor_fec\"\n\
                 [[service]]\nname = \"c\"\nscheme = \"raw\"\n"
            )
        };
        let cut: LinkConfig = toml::from_str(&text(16)).unwrap();
        cut.validate().unwrap();
        let notes = cut.notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        for (n, name) in notes.iter().zip(["`a` (karn_rlp)", "`b` (xor_fec)"]) {
            for part in [
                name,
                "segments",
                "mtu 995",
                "over 993 bytes",
                "up to 2 frames",
            ] {
                assert!(n.contains(part), "{part}: {n}");
            }
        }
        // One-byte fields: 995 + tag + CRC + 1 = 1001 still cuts; mtu 994 fits.
        let fits: LinkConfig = toml::from_str(&text(8).replace("mtu = 995", "mtu = 994")).unwrap();
        assert!(fits.notes().is_empty(), "{:?}", fits.notes());
    }

    #[test]
    fn notes_name_elf_reservations_beyond_admission() {
        let text = |video_pf: f64| {
            format!(
                "frame_size = 1000\nmtu = 990\n\
                 [[service]]\nname = \"a\"\nscheme = \"raw\"\n\
                 [[service]]\nname = \"v\"\nscheme = \"raw\"\n\
                 [scheduler]\npolicy = \"elf\"\nlink_rate_bps = 800000\n\
                 [[scheduler.flows]]\nreserved_bps = 8000\npower_factor = 3.0\n\
                 [[scheduler.flows]]\nreserved_bps = 350000\npower_factor = {video_pf}\n"
            )
        };
        // 003 Table 2: 0.01 * 3 + 0.4375 * 2.5 = 1.124 > 1.
        let over: LinkConfig = toml::from_str(&text(2.5)).unwrap();
        over.validate().unwrap();
        let notes = over.notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("1.124 > 1"), "{}", notes[0]);
        // 0.03 + 0.4375 * 2.2 = 0.9925: admitted.
        let ok: LinkConfig = toml::from_str(&text(2.2)).unwrap();
        assert!(ok.notes().is_empty(), "{:?}", ok.notes());
    }

    #[test]
    fn notes_name_a_window_clamped_by_segmentation() {
        let text = |mtu: usize| {
            format!(
                "frame_size = 100\nmtu = {mtu}\nseq_bits = 8\n\
                 [[service]]\nname = \"tcp\"\nscheme = \"selective_repeat\"\n\
                 [[service]]\nname = \"cbr\"\nscheme = \"raw\"\n"
            )
        };
        // 93 + tag + CRC + SR's 2 bytes = 100: whole frames, 7-bit sequence numbers, the
        // default window of 32 fits.
        let fits: LinkConfig = toml::from_str(&text(93)).unwrap();
        fits.validate().unwrap();
        assert!(fits.notes().is_empty(), "{:?}", fits.notes());
        // One byte more: SR segments, keeps 5 bits, and its window is clamped to 15.
        let cut: LinkConfig = toml::from_str(&text(94)).unwrap();
        cut.validate().unwrap();
        let notes = cut.notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        for part in [
            "`tcp`",
            "window 32",
            "clamped to 15",
            "5-bit",
            "segments",
            "mtu 94",
        ] {
            assert!(notes[0].contains(part), "{part}: {}", notes[0]);
        }
        // A window asked for within the space is not clamped, but segmenting is still worth
        // its own note: a 94-byte packet takes two frames and is lost if either is.
        let small: LinkConfig = toml::from_str(&text(94).replace(
            "scheme = \"selective_repeat\"",
            "scheme = \"selective_repeat\"\nwindow = 8",
        ))
        .unwrap();
        let notes = small.notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(!notes[0].contains("clamped"), "{}", notes[0]);
        for part in ["`tcp`", "segments", "over 93 bytes", "up to 2 frames"] {
            assert!(notes[0].contains(part), "{part}: {}", notes[0]);
        }
    }

    #[test]
    fn hscsd_frames_segment_packets() {
        let c = LinkConfig {
            frame_size: 100,
            seq_bits: 8,
            ..Default::default()
        };
        c.validate().unwrap();
        assert!(c.segmented());
        assert_eq!(
            c.header_format(&c.services[0])
                .unwrap()
                .seq_space()
                .modulus(),
            32
        );
    }

    #[test]
    fn segmentation_is_decided_per_service() {
        // 96-byte packets on 100-byte frames with a CRC: Raw (no header) fits them whole,
        // Selective Repeat (2-byte header in 8-bit mode) must cut them.
        let c: LinkConfig = toml::from_str(
            "frame_size = 100\nmtu = 96\nseq_bits = 8\ncrc = true\n[[service]]\nname = 'raw'\nscheme = 'raw'",
        )
        .unwrap();
        assert!(!c.segments(&c.services[0]));
        let sr: LinkConfig = toml::from_str(
            "frame_size = 100\nmtu = 96\nseq_bits = 8\n[[service]]\nname = 'sr'\nscheme = 'selective_repeat'",
        )
        .unwrap();
        assert!(sr.segments(&sr.services[0]));
        assert_eq!(
            sr.header_format(&sr.services[0])
                .unwrap()
                .seq_space()
                .modulus(),
            32
        );
    }

    #[test]
    fn errors_name_the_key() {
        let bad = |s: &str| {
            toml::from_str::<LinkConfig>(s)
                .map_err(|e| e.to_string())
                .and_then(|c| c.validate().map_err(|e| e.to_string()))
        };
        assert!(bad("seq_bits = 12").unwrap_err().contains("`seq_bits`"));
        assert!(bad("frame_size = 3").unwrap_err().contains("`frame_size`"));
        assert!(bad("default_service = 'x'")
            .unwrap_err()
            .contains("`default_service`"));
        assert!(
            bad("[[service]]\nname='a'\nscheme='raw'\n[[service]]\nname='a'\nscheme='raw'")
                .unwrap_err()
                .contains("two services")
        );
        assert!(bad("[[service]]\nname='a'\nscheme='warp'")
            .unwrap_err()
            .contains("warp"));
        assert!(bad("[[service]]\nname='a'\nscheme='raw'\nqueue_limt=3")
            .unwrap_err()
            .contains("queue_limt"));
        assert!(bad("frame_sise = 3").unwrap_err().contains("frame_sise"));
        assert!(bad("[[rule]]\nservice='tcp'")
            .unwrap_err()
            .contains("unknown service"));
    }
}
