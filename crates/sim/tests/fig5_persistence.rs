//! 003 Fig. 5 through the simulator: Karn's RLP with at most k retransmissions over
//! independent loss p leaves an end-to-end loss of p^(k+1), for every point of the scenario's
//! grid (p = 0.1..0.7, k = 0..8), within 4 binomial sigmas.

use mslink_sim::{run, Scenario};

#[test]
fn end_to_end_loss_is_p_to_the_k_plus_1() {
    let sc = Scenario::parse(include_str!("../../../scenarios/003/fig5_persistence.toml")).unwrap();
    for point in sc.sweep_points().unwrap() {
        let get = |key: &str| {
            point
                .iter()
                .find(|(k, _)| k == key)
                .unwrap()
                .1
                .parse::<f64>()
                .unwrap()
        };
        let (p, k) = (
            get("segment.0.error.loss"),
            get("segment.0.link.service.0.max_retransmissions"),
        );
        let s = sc.with_overrides(&point).unwrap();
        s.validate().unwrap();
        let f = run(&s, 0, &mut |_| Err(std::io::Error::other("no traces")))
            .unwrap()
            .flows
            .remove(0);
        let want = p.powi(k as i32 + 1);
        let sd = (want * (1.0 - want) / f.sent as f64).sqrt().max(1e-6);
        assert!(
            (f.loss_rate - want).abs() < 4.0 * sd,
            "p = {p}, k = {k}: {} vs {want} (sd {sd})",
            f.loss_rate
        );
    }
}
