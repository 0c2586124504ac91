//! What a class asks of its scheduler share, and the delay the scheduler then promises it.
//!
//! Contract. Pure functions of a [`LinkConfig`], the link's rate `C` (bits/s on the air) and
//! the expected frame loss `p`; the simulator's scenario notes and summaries use them
//! (`crates/sim/src/budget.rs`), and so can any driver.
//!
//! * [`frame_bytes`]: the bytes a packet takes on the air on a service: the packet, the
//!   service's data header, the service tag and the CRC (per frame, when the service cuts it).
//! * [`repair_overhead`]: the frames a scheme adds per data frame at frame loss `p`: ARQ
//!   repeats a lost frame until it arrives (`p / (1 - p)`) or at most `k` times
//!   (`p + p^2 + ... + p^k`), XOR FEC adds one parity frame per block (`1 / block`), Raw
//!   nothing. Go-Back-N (whose repeats depend on the window in flight), Reed-Solomon FEC
//!   (adaptive: FLEX) and Snoop (TCP's own segments) are not estimated: `None`.
//! * [`shares`]: the air rate `rho_i` the scheduler guarantees each service while every
//!   service is backlogged. SCFQ with static `rates` and WFQ: `r_i / sum r * C` (004 §IV: the
//!   CBR's share is its peak rate before link overhead, 4 : 1 on a 5 Mbit/s WLAN). ELF: the
//!   air share its allocation gives at frame loss `p` (003 §6.2 eq. (1), §6.3), where a
//!   guaranteed flow's weight grows to cover its losses up to its power factor. Policies
//!   without a rate guarantee (FIFO, strict priority, WRR, DRR, SCFQ with measured rates):
//!   `None`.
//! * [`delay_bound`]: the most the scheduler delays a packet of a service whose air load
//!   (framed packets plus repairs) stays within `rho_i`, arriving at most one frame ahead of
//!   it: `L_i / rho_i + Theta_i`, with the latency `Theta_i` of a latency-rate server
//!   (D. Stiliadis, A. Varma, "Latency-Rate Servers: A General Model for Analysis of Traffic
//!   Scheduling Algorithms", IEEE/ACM Trans. Networking 6(5), 1998, Table I):
//!   SCFQ `L_i / rho_i + (V - 1) L_max / C`, WFQ `L_i / rho_i + L_max / C`, with `V` the
//!   services sharing the link, `L_i` the service's frame and `L_max` the largest frame. ELF
//!   tags like SCFQ at its air shares; a best-effort flow beside guaranteed ones is served by
//!   a second SCFQ level inside the best-effort aggregate, whose latency adds to the top
//!   level's (Stiliadis and Varma's result for a chain of latency-rate servers). A class that
//!   retransmits (Selective Repeat, persistent ARQ, Karn's and OOS RLP) on a lossy link sends
//!   its repairs on top of its packets: one frame at any time, and after a bad spell of length
//!   `F` every frame it lost in the spell, at most `F rho_i` bits since it is served at
//!   `rho_i` beside backlogged classes. Its burst is then `sigma_i = L_i + L_i + F rho_i`
//!   rather than `L_i`, and Cruz's bound through a latency-rate server, `sigma_i / rho_i +
//!   Theta_i` (R. L. Cruz, "A Calculus for Network Delay, Part I", IEEE Trans. Information
//!   Theory 37(1), 1991; Stiliadis and Varma, Theorem 1), adds `L_i / rho_i + F`. `F` comes
//!   from the error model (`mslink_channel`'s `fade_s`, at its 95th percentile: the bound is
//!   one a p95 delay can be planned on); memoryless channels have none. The bound counts the
//!   scheduler and the repairs' queueing only: a repair's own round trip (the NACK's trip
//!   and the copy's) and the spell itself delay the class alone too.

use crate::config::LinkConfig;
use crate::sched::elf::{self, ElfFlow};
use crate::sched::SchedulerConfig;
use crate::service::ServiceConfig;

/// Bytes a packet of `len` bytes takes on the air on service `service` (all its frames).
pub fn frame_bytes(cfg: &LinkConfig, service: usize, len: usize) -> usize {
    let Some(spec) = cfg.services.get(service) else {
        return len;
    };
    let width = cfg.seq_width().unwrap_or_default();
    let per_frame = cfg.link_format().overhead() + spec.config.data_header_bytes(width);
    let frames = if cfg.segments(spec) {
        // A segmented service also spends the fragment position, within its header.
        len.div_ceil(cfg.frame_size.saturating_sub(per_frame).max(1))
    } else {
        1
    };
    len + frames.max(1) * per_frame
}

/// Frames a scheme adds per data frame at frame loss `p` (module docs); `None` when it is not
/// estimated.
pub fn repair_overhead(scheme: &ServiceConfig, p: f64) -> Option<f64> {
    let p = p.clamp(0.0, 0.999_999);
    let limited = |k: u32| (1..=k).map(|n| p.powi(n as i32)).sum::<f64>();
    match scheme {
        ServiceConfig::Raw(_) => Some(0.0),
        ServiceConfig::SelectiveRepeat(_) | ServiceConfig::Persistent(_) => Some(p / (1.0 - p)),
        ServiceConfig::KarnRlp(c) | ServiceConfig::OosRlp(c) => {
            Some(limited(c.max_retransmissions))
        }
        ServiceConfig::XorFec(c) if c.parity => Some(1.0 / c.block.max(1) as f64),
        ServiceConfig::XorFec(_) => Some(0.0),
        ServiceConfig::GoBackN(_) | ServiceConfig::RsFec(_) | ServiceConfig::Snoop(_) => None,
    }
}

/// The air rate (bits/s) the scheduler guarantees each service of `cfg` on a link of
/// `link_bps` at frame loss `p`; `None` where the policy guarantees none (module docs).
pub fn shares(cfg: &LinkConfig, link_bps: f64, p: f64) -> Vec<Option<f64>> {
    let n = cfg.services.len();
    let proportional = |w: &[f64]| -> Vec<Option<f64>> {
        let total: f64 = w.iter().sum();
        if w.len() != n || total <= 0.0 {
            return vec![None; n];
        }
        w.iter().map(|r| Some(r / total * link_bps)).collect()
    };
    match &cfg.scheduler {
        SchedulerConfig::Scfq(c) => match &c.rates {
            Some(r) => proportional(r),
            None => vec![None; n],
        },
        SchedulerConfig::Wfq(c) if c.weights.is_empty() => proportional(&vec![1.0; n]),
        SchedulerConfig::Wfq(c) => proportional(&c.weights),
        SchedulerConfig::Elf(c) => elf_flows(c, n, p)
            .map(|flows| {
                let rate = if c.link_rate_bps > 0.0 {
                    c.link_rate_bps
                } else {
                    link_bps
                };
                elf::allocate(rate, &flows)
                    .iter()
                    .map(|s| Some(s.air_share * link_bps))
                    .collect()
            })
            .unwrap_or_else(|| vec![None; n]),
        _ => vec![None; n],
    }
}

/// ELF's flows as the closed form sees them, every one at error rate `p`.
fn elf_flows(c: &elf::ElfConfig, n: usize, p: f64) -> Option<Vec<ElfFlow>> {
    if !c.flows.is_empty() && c.flows.len() != n {
        return None;
    }
    if c.flows.iter().any(|f| f.reserved_bps.is_some()) && c.link_rate_bps <= 0.0 {
        return None;
    }
    Some(
        (0..n)
            .map(|i| {
                let f = c.flows.get(i).cloned().unwrap_or_default();
                ElfFlow {
                    reserved_bps: f.reserved_bps,
                    weight: f.weight,
                    power_factor: f.power_factor,
                    error_rate: f.error_rate.unwrap_or(p),
                }
            })
            .collect(),
    )
}

/// The scheduler's delay bound (seconds) for a packet of service `service` whose frames are
/// `frame` bytes, on a link of `link_bps` at frame loss `p` whose bad spells last `fade_s`
/// (module docs); `None` when the policy guarantees no rate.
pub fn delay_bound(
    cfg: &LinkConfig,
    link_bps: f64,
    p: f64,
    service: usize,
    frame: usize,
    fade_s: f64,
) -> Option<f64> {
    let rho = shares(cfg, link_bps, p);
    let own = (*rho.get(service)?)?;
    if own <= 0.0 {
        return None;
    }
    let bits = |b: usize| b as f64 * 8.0;
    let l_max = bits(cfg.frame_size.max(frame));
    let v = cfg.services.len() as f64;
    // One frame ahead of the class's rate (sigma = L_i), then the server's latency; a class
    // that retransmits on a lossy link is a repair frame and a spell's repairs further ahead.
    let retransmits = matches!(
        cfg.services[service].config,
        ServiceConfig::SelectiveRepeat(_)
            | ServiceConfig::Persistent(_)
            | ServiceConfig::KarnRlp(_)
            | ServiceConfig::OosRlp(_)
    );
    let repairs = if retransmits && (p > 0.0 || fade_s > 0.0) {
        bits(frame) / own + fade_s
    } else {
        0.0
    };
    let ahead = bits(frame) / own + repairs;
    Some(match &cfg.scheduler {
        SchedulerConfig::Wfq(_) => ahead + bits(frame) / own + l_max / link_bps,
        SchedulerConfig::Elf(c) => {
            let guaranteed = |i: usize| c.flows.get(i).is_some_and(|f| f.reserved_bps.is_some());
            let g = (0..cfg.services.len()).filter(|&i| guaranteed(i)).count();
            if g == 0 || guaranteed(service) {
                // One SCFQ level: the guaranteed flows and the best-effort aggregate (or,
                // with no reservation, every flow).
                let entries = if g == 0 { v } else { g as f64 + 1.0 };
                ahead + bits(frame) / own + (entries - 1.0) * l_max / link_bps
            } else {
                // Two levels: the aggregate at the top, this flow inside it.
                let be: f64 = (0..cfg.services.len())
                    .filter(|&i| !guaranteed(i))
                    .filter_map(|i| rho[i])
                    .sum();
                let inner = (cfg.services.len() - g) as f64;
                let top = l_max / be + g as f64 * l_max / link_bps;
                ahead + bits(frame) / own + (inner - 1.0) * l_max / be + top
            }
        }
        _ => ahead + bits(frame) / own + (v - 1.0) * l_max / link_bps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(text: &str) -> LinkConfig {
        toml::from_str(text).unwrap()
    }

    /// 004's one-WLAN configuration: SCFQ 4 : 1 on 5 Mbit/s, 993-byte packets in 1000-byte
    /// frames (tag, one-byte OOS RLP header, CRC: 1 + 1 + 4 = 6 bytes, plus the packet).
    const WLAN: &str = "frame_size = 1000\nmtu = 993\nseq_bits = 8\n\
        [scheduler]\npolicy = 'scfq'\nrates = [4.0, 1.0]\n\
        [[service]]\nname = 'tcp'\nscheme = 'raw'\n\
        [[service]]\nname = 'cbr'\nscheme = 'oos_rlp'\nmax_retransmissions = 1\n";

    #[test]
    fn shares_and_frames_of_004s_wlan_link() {
        let c = link(WLAN);
        assert_eq!(frame_bytes(&c, 1, 993), 999);
        assert_eq!(frame_bytes(&c, 0, 993), 998);
        assert_eq!(shares(&c, 5e6, 0.03), vec![Some(4e6), Some(1e6)]);
        // OOS RLP with one retransmission at 3% frame loss repeats 3% of its frames.
        let o = repair_overhead(&c.services[1].config, 0.03).unwrap();
        assert!((o - 0.03).abs() < 1e-12);
        // Loss-free: L_i / rho_i twice (one frame ahead, one in the latency) + L_max / C.
        let b = delay_bound(&c, 5e6, 0.0, 1, 999, 0.0).unwrap();
        let want = 2.0 * 999.0 * 8.0 / 1e6 + 1000.0 * 8.0 / 5e6;
        assert!((b - want).abs() < 1e-12, "{b} vs {want}");
        // At 3% independent loss the retransmitting class is one repair frame further ahead,
        // and after 48 ms spells a spell's worth of repairs too.
        let b = delay_bound(&c, 5e6, 0.03, 1, 999, 0.0).unwrap();
        let want = 3.0 * 999.0 * 8.0 / 1e6 + 1000.0 * 8.0 / 5e6;
        assert!((b - want).abs() < 1e-12, "{b} vs {want}");
        let f = delay_bound(&c, 5e6, 0.03, 1, 999, 0.048).unwrap();
        assert!((f - want - 0.048).abs() < 1e-12, "{f}");
        // Raw repairs nothing: its bound does not grow with loss.
        let raw = delay_bound(&c, 5e6, 0.03, 0, 998, 0.048).unwrap();
        let want = 2.0 * 998.0 * 8.0 / 4e6 + 1000.0 * 8.0 / 5e6;
        assert!((raw - want).abs() < 1e-12, "{raw} vs {want}");
    }

    #[test]
    fn overheads_follow_each_scheme() {
        let sr: ServiceConfig = toml::from_str("scheme = 'selective_repeat'").unwrap();
        assert!((repair_overhead(&sr, 0.5).unwrap() - 1.0).abs() < 1e-9);
        let karn: ServiceConfig =
            toml::from_str("scheme = 'karn_rlp'\nmax_retransmissions = 3").unwrap();
        let want = 0.1 + 0.01 + 0.001;
        assert!((repair_overhead(&karn, 0.1).unwrap() - want).abs() < 1e-12);
        let xor: ServiceConfig = toml::from_str("scheme = 'xor_fec'\nblock = 12").unwrap();
        assert!((repair_overhead(&xor, 0.0).unwrap() - 1.0 / 12.0).abs() < 1e-12);
        let gbn: ServiceConfig = toml::from_str("scheme = 'go_back_n'").unwrap();
        assert_eq!(repair_overhead(&gbn, 0.1), None);
    }

    #[test]
    fn no_rate_guarantee_no_bound() {
        let c = link(&WLAN.replace("rates = [4.0, 1.0]\n", ""));
        assert_eq!(shares(&c, 5e6, 0.0), vec![None, None]);
        assert_eq!(delay_bound(&c, 5e6, 0.0, 1, 999, 0.0), None);
    }

    #[test]
    fn elf_guaranteed_flows_keep_their_reservation_within_their_power() {
        let c = link(
            "frame_size = 1000\nmtu = 993\n\
             [scheduler]\npolicy = 'elf'\nlink_rate_bps = 5e6\n\
             [[scheduler.flows]]\n\
             [[scheduler.flows]]\nreserved_bps = 1e6\npower_factor = 2.0\n\
             [[service]]\nname = 'tcp'\nscheme = 'raw'\n\
             [[service]]\nname = 'cbr'\nscheme = 'raw'\n",
        );
        // Error-free: the reservation exactly; at 10% loss, 1 / 0.9 of it (outcome region).
        let s0 = shares(&c, 5e6, 0.0);
        assert!((s0[1].unwrap() - 1e6).abs() < 1e-3);
        let s1 = shares(&c, 5e6, 0.1);
        assert!((s1[1].unwrap() - 1e6 / 0.9).abs() < 1e-3);
        assert!(delay_bound(&c, 5e6, 0.0, 1, 998, 0.0).is_some());
        // The best-effort flow pays both levels.
        let be = delay_bound(&c, 5e6, 0.0, 0, 998, 0.0).unwrap();
        assert!(be > 998.0 * 8.0 / 4e6, "{be}");
    }
}
