//! Each real-time class's load against its scheduler share, hop by hop, and the delay bound
//! the share then promises (what a user needs to plan a class's delay, not only its loss).
//!
//! Contract. [`Scenario::class_budgets`] looks at every wireless segment and direction and
//! every service the classifier gives real-time flows: `cbr` (004 §III.D's media, at its
//! talk-spurt rate) and `ping` (its requests one way, its replies the other). For each such
//! class it adds the flows' peak rates (packets, before link overhead: the share 004 §V
//! gives its media), what the link adds on the air (data header, service tag, CRC:
//! `mslink_link::budget::frame_bytes`) and the repairs or parity its scheme sends at the
//! direction's long-run frame loss (`mslink_link::budget::repair_overhead`, the error model's
//! `mean_frame_loss`), and compares the total with the share the scheduler guarantees the
//! service (`mslink_link::budget::shares`). Where the share suffices, the class's delay bound
//! is the scheduler's (`mslink_link::budget::delay_bound`), with a retransmitting class's
//! repairs after the channel's bad spells at their 95th percentile (the error model's
//! `fade_s`; none when it cannot be told, a trace); where it does not, the class's
//! queue grows through every peak and nothing bounds its delay: [`Scenario::notes`] says so,
//! naming the service, both rates and the share that would suffice. [`Scenario::delay_bounds`]
//! gives each flow the sum of its classes' bounds over the hops it crosses (both ways for a
//! ping), `None` when any hop gives none: the most the schedulers add to the delay the flow
//! would have alone on the link. Everything works on the scenario's flow entries, never on
//! their expanded copies: an entry with `count = N` adds N times its peak, and its copies are
//! classified as its first copy is (so a scenario of 10^8 flows costs no more than one of a
//! few; copies whose ports a rule tells apart are the exception this does not see). TCP, WWW and spray flows have no peak rate to plan with, and
//! `constant` flows are how scenarios load a link with bulk datagrams (a class meant to
//! exceed its share): they are left out, and so are a link's repairs when its error model has
//! no long-run rate (a trace, a ramp).

use mslink_link::budget;
use mslink_link::service::ServiceConfig;

use crate::packet::{self, Stamp};
use crate::scenario::{AppKind, Scenario, SegmentKind};

/// One class (service) in one direction of one wireless segment.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ClassBudget {
    /// Segment index.
    pub segment: usize,
    /// 0: left to right (away from node 0), 1: right to left.
    pub direction: usize,
    /// The service's name.
    pub service: String,
    /// Its scheme.
    pub scheme: String,
    /// The datagram flows it carries in this direction (entries: `name` or `name xN`).
    pub flows: Vec<String>,
    /// Sum of their peak rates, packets before link overhead, bits/s.
    pub peak_bps: f64,
    /// The same on the air, with data header, tag and CRC, bits/s.
    pub framed_bps: f64,
    /// The direction's long-run frame loss (`None`: the model has none).
    pub frame_loss: Option<f64>,
    /// Repair or parity frames per data frame at that loss (`None`: not estimated).
    pub repair_overhead: Option<f64>,
    /// Air rate the class needs at its peak: `framed_bps * (1 + repair_overhead)`.
    pub needed_bps: f64,
    /// Air rate the scheduler guarantees the service (`None`: the policy guarantees none).
    pub share_bps: Option<f64>,
    /// The scheduler's delay bound for the class, seconds, when its share suffices.
    pub delay_bound_s: Option<f64>,
    /// Whether another service of the segment carries any flow (of any kind): only then does
    /// the share bind (the schedulers are work-conserving; a class alone has the whole link).
    pub contended: bool,
}

impl ClassBudget {
    /// Whether the guaranteed share covers the class's peak (`None`: no guarantee to judge).
    pub fn suffices(&self) -> Option<bool> {
        Some(self.needed_bps <= self.share_bps? * (1.0 + 1e-9))
    }
}

/// Peak rate of a datagram flow, bits/s of packets, or `None` when it has none to plan with.
fn peak_bps(app: AppKind, rate_bps: f64) -> Option<f64> {
    matches!(app, AppKind::Cbr | AppKind::Ping).then_some(rate_bps)
}

impl Scenario {
    /// Every real-time class's budget (module docs), segments in order, then direction, then
    /// service.
    pub fn class_budgets(&self) -> Vec<ClassBudget> {
        self.class_map().0
    }

    /// Each flow entry's delay bound over its path (module docs), in `flows` order (every
    /// copy of an entry has its entry's).
    pub fn delay_bounds(&self) -> Vec<Option<f64>> {
        let (classes, crossings) = self.class_map();
        crossings
            .into_iter()
            .map(|c| {
                let c = c?;
                c.iter()
                    .map(|&k| classes[k].delay_bound_s)
                    .sum::<Option<f64>>()
            })
            .collect()
    }

    /// The classes, and for each flow entry the classes it crosses (`None` for a flow
    /// without a peak rate).
    fn class_map(&self) -> (Vec<ClassBudget>, Vec<Option<Vec<usize>>>) {
        let mut classes: Vec<ClassBudget> = Vec::new();
        let mut crossings = Vec::with_capacity(self.flows.len());
        let hops = self.wireless_hops();
        let mut probe = Vec::new();
        for (i, name, f) in self.flow_entries() {
            let Some(peak) = peak_bps(f.app, f.rate_bps) else {
                crossings.push(None);
                continue;
            };
            let peak = peak * f.count as f64;
            let mut legs = vec![(f.from, f.to)];
            if f.app == AppKind::Ping {
                legs.push((f.to, f.from));
            }
            let mut mine = Vec::new();
            for (from, to) in legs {
                probe_packet(&mut probe, i, f, from, to);
                let direction = usize::from(to < from);
                for hop in hops[from.min(to)..from.max(to)].iter().flatten() {
                    let (seg, c, names) = (hop.segment, &hop.config, &hop.names);
                    let service = hop.classifier.classify(&probe).service;
                    let k = match classes.iter().position(|b| {
                        (b.segment, b.direction, b.service.as_str())
                            == (seg, direction, names[service].as_str())
                    }) {
                        Some(k) => k,
                        None => {
                            classes.push(ClassBudget {
                                segment: seg,
                                direction,
                                service: names[service].to_string(),
                                scheme: c.services[service].config.scheme().into(),
                                flows: Vec::new(),
                                peak_bps: 0.0,
                                framed_bps: 0.0,
                                frame_loss: None,
                                repair_overhead: None,
                                needed_bps: 0.0,
                                share_bps: None,
                                delay_bound_s: None,
                                contended: false,
                            });
                            classes.len() - 1
                        }
                    };
                    let b = &mut classes[k];
                    b.flows.push(name.clone());
                    b.peak_bps += peak;
                    let on_air = budget::frame_bytes(c, service, f.packet_bytes);
                    b.framed_bps += peak * on_air as f64 / f.packet_bytes.max(1) as f64;
                    mine.push(k);
                }
            }
            crossings.push(Some(mine));
        }
        let used = self.services_used();
        for b in &mut classes {
            b.contended = used
                .iter()
                .any(|(seg, service)| *seg == b.segment && *service != b.service);
            let s = &self.segments[b.segment];
            let Some(hop) = &hops[b.segment] else {
                continue;
            };
            let c = &hop.config;
            let service = service_index(c, &b.service);
            let model = match (b.direction, &s.error_reverse) {
                (1, Some(m)) => m,
                _ => &s.error,
            };
            b.frame_loss = model.mean_frame_loss(c.frame_size);
            let p = b.frame_loss.unwrap_or(0.0);
            let scheme = &c.services[service].config;
            b.repair_overhead = match (b.frame_loss, scheme) {
                (Some(p), _) => budget::repair_overhead(scheme, p),
                // No long-run loss to estimate repairs from: only schemes whose overhead does
                // not depend on it are known.
                (None, ServiceConfig::Raw(_) | ServiceConfig::XorFec(_)) => {
                    budget::repair_overhead(scheme, 0.0)
                }
                (None, _) => None,
            };
            b.needed_bps = b.framed_bps * (1.0 + b.repair_overhead.unwrap_or(0.0));
            b.share_bps = budget::shares(c, s.rate(), p)[service];
            if b.suffices() == Some(true) {
                // The bound holds for the class's largest frame.
                let frame = self.flows_frame(c, service, &b.flows);
                // The channel's bad spells at their 95th percentile, in frames of this link.
                let frame_s = c.frame_size as f64 * 8.0 / s.rate();
                b.delay_bound_s = model
                    .fade_s(0.95, frame_s)
                    .and_then(|fade| budget::delay_bound(c, s.rate(), p, service, frame, fade));
            }
        }
        (classes, crossings)
    }

    /// Every (segment, service) some flow of `flows` crosses, whatever its kind (a TCP flow's
    /// data and acknowledgements, a WWW flow's requests and replies: both directions).
    fn services_used(&self) -> Vec<(usize, String)> {
        let hops = self.wireless_hops();
        let mut used: Vec<(usize, String)> = Vec::new();
        let mut probe = Vec::new();
        for (i, _, f) in self.flow_entries() {
            probe_packet(&mut probe, i, f, f.from, f.to);
            for hop in hops[f.from.min(f.to)..f.from.max(f.to)].iter().flatten() {
                let name = hop.names[hop.classifier.classify(&probe).service].clone();
                if !used.contains(&(hop.segment, name.clone())) {
                    used.push((hop.segment, name));
                }
            }
        }
        used
    }

    /// Each segment's link configuration and classifier, built once (`None` for a wired
    /// segment, or a link whose rules do not build: validation reports those).
    fn wireless_hops(&self) -> Vec<Option<Hop>> {
        self.segments
            .iter()
            .enumerate()
            .map(|(segment, s)| {
                if s.kind != SegmentKind::Wireless {
                    return None;
                }
                let config = s.link_config();
                let names: Vec<String> = config
                    .service_names()
                    .iter()
                    .map(|n| n.to_string())
                    .collect();
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                let classifier = mslink_link::classifier::Classifier::new(
                    &config.rules,
                    &refs,
                    config.default_index().unwrap_or(0),
                )
                .ok()?;
                Some(Hop {
                    segment,
                    config,
                    names,
                    classifier,
                })
            })
            .collect()
    }

    /// Notes on classes whose share does not cover their peak while another class shares the
    /// link (module docs), one per class.
    pub(crate) fn budget_notes(&self) -> Vec<String> {
        self.class_budgets()
            .iter()
            .filter(|b| b.contended && b.suffices() == Some(false))
            .map(|b| {
                let s = &self.segments[b.segment];
                let c = s.link_config();
                let mbit = |x: f64| format!("{:.3} Mbit/s", x / 1e6);
                let share = b.share_bps.unwrap_or(0.0);
                let repairs = match (b.repair_overhead, b.frame_loss) {
                    (Some(o), _) if o > 0.0 && b.scheme == "xor_fec" => {
                        format!(", plus {:.1}% parity frames", o * 100.0)
                    }
                    (Some(o), Some(p)) if o > 0.0 => format!(
                        ", plus {:.1}% repairs at {:.1}% frame loss",
                        o * 100.0,
                        p * 100.0
                    ),
                    (None, _) => format!(
                        ", plus repairs {} does not let us estimate",
                        if b.frame_loss.is_none() {
                            "the error model"
                        } else {
                            "the scheme"
                        }
                    ),
                    _ => String::new(),
                };
                let suffice = match &c.scheduler {
                    mslink_link::sched::SchedulerConfig::Scfq(sc) => sc
                        .rates
                        .as_ref()
                        .filter(|r| r.len() == c.services.len())
                        .map(|r| {
                            let own = service_index(&c, &b.service);
                            format!(
                                " (rates {})",
                                rates_that_suffice(r, own, b.needed_bps, s.rate())
                            )
                        })
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                format!(
                    "segment[{}].link: service `{}` ({}) carries {} {} at up to {} ({} on the \
                     air with its header, tag and CRC{repairs}: {}), above the {} share the \
                     {} scheduler guarantees it: its queue grows through every peak and its \
                     delay has no bound; a share of {}{suffice} would suffice",
                    b.segment,
                    b.service,
                    b.scheme,
                    b.flows.join(", "),
                    if b.direction == 0 {
                        "left to right"
                    } else {
                        "right to left"
                    },
                    mbit(b.peak_bps),
                    mbit(b.framed_bps),
                    mbit(b.needed_bps),
                    mbit(share),
                    c.scheduler.policy(),
                    mbit(b.needed_bps),
                )
            })
            .collect()
    }
}

/// One wireless segment as the budget sees it: its link and how it classifies.
struct Hop {
    segment: usize,
    config: mslink_link::config::LinkConfig,
    names: Vec<String>,
    classifier: mslink_link::classifier::Classifier,
}

/// The packet flow entry `f` (its first copy is flow `first`) sends from node `from` to `to`,
/// as the classifier sees it: the world's own packet (`packet::build`), a TCP one for a TCP
/// or WWW flow (protocol 6; the ports sit where UDP's do).
fn probe_packet(
    out: &mut Vec<u8>,
    first: usize,
    f: &crate::scenario::Flow,
    from: usize,
    to: usize,
) {
    let port = if f.port == 0 {
        packet::app_port(first)
    } else {
        f.port
    };
    let stamp = Stamp {
        flow: first as u32,
        seq: 0,
        sent_ns: 0,
    };
    packet::build(out, f.packet_bytes.max(40), from, to, f.dscp, port, stamp);
    if matches!(f.app, AppKind::Ftp | AppKind::Www) {
        out[9] = 6;
    }
}

/// The index of the service named `name` (classes are named after services of `c`).
fn service_index(c: &mslink_link::config::LinkConfig, name: &str) -> usize {
    c.services.iter().position(|x| x.name == name).unwrap_or(0)
}

impl Scenario {
    /// Each flow entry with the index its first copy has among the expanded flows, and its
    /// name as the classes list it (`name`, or `name xN` for N copies).
    fn flow_entries(&self) -> impl Iterator<Item = (usize, String, &crate::scenario::Flow)> + '_ {
        let mut first = 0;
        self.flows.iter().enumerate().map(move |(e, f)| {
            let at = first;
            first += f.count;
            let base = if f.name.is_empty() {
                format!("flow{e}")
            } else {
                f.name.clone()
            };
            let name = if f.count == 1 {
                base
            } else {
                format!("{base} x{}", f.count)
            };
            (at, name, f)
        })
    }

    /// The largest frame any of the entries named `flows` puts on `service`.
    fn flows_frame(
        &self,
        c: &mslink_link::config::LinkConfig,
        service: usize,
        flows: &[String],
    ) -> usize {
        self.flow_entries()
            .filter(|(_, n, _)| flows.contains(n))
            .map(|(_, _, f)| budget::frame_bytes(c, service, f.packet_bytes))
            .max()
            .unwrap_or(c.frame_size)
            .min(c.frame_size)
    }
}

/// SCFQ rates that give service `own` the air rate `needed_bps` on a link of `link_bps`,
/// the others keeping their proportions (and the rates their sum).
fn rates_that_suffice(rates: &[f64], own: usize, needed_bps: f64, link_bps: f64) -> String {
    let total: f64 = rates.iter().sum();
    let want = (needed_bps / link_bps * total).min(total);
    let others = total - rates[own];
    let scale = if others > 0.0 {
        (total - want) / others
    } else {
        1.0
    };
    let fmt = |x: f64| {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let out: Vec<String> = rates
        .iter()
        .enumerate()
        .map(|(i, r)| fmt(if i == own { want } else { r * scale }))
        .collect();
    format!("[{}]", out.join(", "))
}
