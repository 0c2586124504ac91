//! Closed-form check of XOR FEC (004 §III.D): over independent frame loss p, with one parity
//! frame per block of k data frames, a data frame is lost for good exactly when it is lost and
//! at least one of the k other frames of its block (k - 1 data and the parity) is lost too:
//! residual loss p * (1 - (1 - p)^k). At p = 3% and k = 12 that is 0.92%: 004's "the 3% native
//! loss rate is reduced to 1%".

use mslink_link::config::LinkConfig;
use mslink_link::hop::{Fate, Hop};
use mslink_link::link::MultiServiceLink;
use mslink_link::{Duration, Instant, Side};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn residual(p: f64, k: usize, packets: u32, seed: u64) -> f64 {
    let text = format!("frame_size = 300\nmtu = 200\n[[service]]\nname = \"x\"\nscheme = \"xor_fec\"\nblock = {k}\nblock_timeout_ms = 1000\n");
    let config: LinkConfig = toml::from_str(&text).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut hop = Hop::new(
        MultiServiceLink::new(&config).unwrap(),
        MultiServiceLink::new(&config).unwrap(),
        0,
        Duration::from_millis(1),
        Box::new(move |_, _| {
            if rng.gen_bool(p) {
                Fate::Lose
            } else {
                Fate::Deliver
            }
        }),
        Box::new(|_, _| Fate::Deliver),
    );
    let mut got = 0u64;
    let packet = |i: u32| {
        let mut v = vec![0x45u8; 100];
        v[20..24].copy_from_slice(&i.to_be_bytes());
        v
    };
    // Whole blocks only: the sender never falls silent mid-block, so every block is k frames.
    for i in 0..packets {
        hop.send(Side::Left, &packet(i)).unwrap();
        hop.run_until(Instant::from_micros(i as u64));
        while hop.recv(Side::Right).is_some() {
            got += 1;
        }
    }
    hop.run_idle(Instant::from_secs(10));
    while hop.recv(Side::Right).is_some() {
        got += 1;
    }
    1.0 - got as f64 / packets as f64
}

#[test]
fn xor_fec_residual_loss_matches_closed_form() {
    for (p, k) in [(0.03, 12usize), (0.1, 8), (0.2, 4), (0.05, 1)] {
        let n = 12 * 20_000u32;
        let got = residual(p, k, n, (k as u64) << 8 | (p * 100.0) as u64);
        let want = p * (1.0 - (1.0 - p).powi(k as i32));
        // Frames of one block are not independent in their fate, so allow for the block
        // correlation: 5 binomial sigmas of the frame count.
        let sd = (want * (1.0 - want) / n as f64).sqrt();
        eprintln!("p = {p}, k = {k}: residual {got:.5}, closed form {want:.5}");
        assert!(
            (got - want).abs() < 5.0 * sd,
            "p = {p}, k = {k}: residual {got} vs {want} (sd {sd})"
        );
    }
}
