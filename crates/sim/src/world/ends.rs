//! Which end of a wireless segment is the wireless host and which the base station.
//!
//! Contract. A path runs from node 0 to node `segments.len()`; the nodes at its two ends are
//! hosts, every other node forwards. The end of a wireless segment that sits at such a host
//! is the *wireless host's* end and is built from [`LinkConfig::at_mobile_end`] (a TCP-aware
//! agent such as Berkeley Snoop takes its mobile role there, 004 §III.A); the other end is
//! the base station and keeps the segment's configuration as written. When a single wireless
//! segment joins the two hosts directly, node 0 counts as the base station's side (the
//! server of 004's client-server topology) and the last node as the wireless host.

use mslink_link::config::LinkConfig;

/// The configurations of end 0 (node `seg`) and end 1 (node `seg + 1`) of wireless segment
/// `seg` on a path of `n_segs` segments.
pub(super) fn end_configs(cfg: &LinkConfig, seg: usize, n_segs: usize) -> [LinkConfig; 2] {
    let last = seg + 1 == n_segs;
    // End 1 sits at the last node: the wireless host. End 0 at node 0 is a wireless host
    // unless end 1 already is one (a lone segment between two hosts).
    let mobile = [seg == 0 && !last, last];
    mobile.map(|m| if m { cfg.at_mobile_end() } else { cfg.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mslink_link::service::snoop::SnoopRole;
    use mslink_link::service::ServiceConfig;

    fn snoop() -> LinkConfig {
        toml::from_str("[[service]]\nname = 'tcp'\nscheme = 'snoop'").unwrap()
    }

    fn role(c: &LinkConfig) -> SnoopRole {
        match &c.services[0].config {
            ServiceConfig::Snoop(s) => s.role,
            _ => panic!("not snoop"),
        }
    }

    #[test]
    fn wireless_hosts_get_the_mobile_role() {
        let c = snoop();
        use SnoopRole::{BaseStation as B, Mobile as M};
        // 004 Fig. 1, one wireless link: wired server - base station - wireless client.
        let [a, b] = end_configs(&c, 1, 2);
        assert_eq!((role(&a), role(&b)), (B, M));
        // Two wireless links: host A - BS A - LAN - BS B - host B.
        let [a, b] = end_configs(&c, 0, 3);
        assert_eq!((role(&a), role(&b)), (M, B));
        let [a, b] = end_configs(&c, 2, 3);
        assert_eq!((role(&a), role(&b)), (B, M));
        // A wireless segment between two routers: base stations both.
        let [a, b] = end_configs(&c, 1, 3);
        assert_eq!((role(&a), role(&b)), (B, B));
        // A lone segment between two hosts: node 0 plays the base station.
        let [a, b] = end_configs(&c, 0, 1);
        assert_eq!((role(&a), role(&b)), (B, M));
    }
}
