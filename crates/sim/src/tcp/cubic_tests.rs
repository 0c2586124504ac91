//! RFC 9438 behaviour of [`Cubic`]: the window is driven by hand, one round trip at a time,
//! each round acknowledging the whole window one segment per ACK at evenly spaced times.

use super::*;
use crate::tcp::segment::{Segment, ACK};
use crate::tcp::{Sender, TcpConfig, Variant, WindowGrowth};

const MSS: u64 = 1000;

fn at(s: f64) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(s)
}

fn ack(now: f64, flight: u64, rtt: f64) -> AckInfo {
    AckInfo {
        now: at(now),
        acked: MSS,
        flight,
        mss: MSS,
        rtt: Some(Duration::from_secs_f64(rtt)),
        xcp_feedback: None,
        ca_rtt: None,
        una: 0,
        snd_max: 0,
    }
}

/// Window in segments.
fn w(c: &Cubic) -> f64 {
    c.cwnd() as f64 / MSS as f64
}

/// One round trip starting at `t`: the window's worth of ACKs spread over `rtt`, the sender
/// window-limited (flight = cwnd before each ACK). Returns `t + rtt`.
fn round(c: &mut Cubic, t: f64, rtt: f64) -> f64 {
    let n = (c.cwnd() / MSS).max(1);
    for i in 0..n {
        let f = c.cwnd();
        c.on_ack(&ack(t + rtt * i as f64 / n as f64, f, rtt));
    }
    t + rtt
}

/// A controller that has just lost at a window of `w_max` segments (RFC 9438 §4.6).
fn after_loss(w_max: u64) -> Cubic {
    let mut c = Cubic::new(1, MSS, Counting::PerAck);
    c.set_cwnd(w_max * MSS);
    c.on_loss(w_max * MSS, MSS);
    c
}

/// RFC 9438 §4.2 Figure 2 with cwnd_epoch = beta_cubic * W_max: K = cbrt(W_max (1 - beta) / C).
#[test]
fn k_follows_the_closed_form() {
    for w_max in [20u64, 250, 1000] {
        let mut c = after_loss(w_max);
        assert_eq!(c.ssthresh(), (w_max as f64 * BETA * MSS as f64) as u64);
        assert_eq!(c.cwnd(), c.ssthresh(), "§4.6: cwnd = ssthresh");
        assert_eq!(c.k(), None, "the stage starts at its first ACK");
        round(&mut c, 10.0, 0.1);
        let k = (w_max as f64 * (1.0 - BETA) / C).cbrt();
        let got = c.k().unwrap();
        assert!((got - k).abs() < 1e-9, "W_max {w_max}: K {got} vs {k}");
        assert_eq!(c.w_max(), w_max as f64);
    }
}

/// RFC 9438 §4.2-§4.5: after a loss at W_max = 1000 segments (K = 9.09 s) with a 100 ms RTT,
/// the window tracks W_cubic(t) = C (t - K)^3 + W_max, concave before K and convex after it.
/// The window reaches W_cubic(t + RTT) about one round after computing it, so the tolerance
/// is the curve's slope times one RTT, plus one segment.
#[test]
fn window_after_a_loss_follows_w_cubic() {
    let (w_max, rtt) = (1000.0, 0.1);
    let mut c = after_loss(1000);
    let k = (w_max * (1.0 - BETA) / C).cbrt();
    let mut t = 0.0;
    let mut checked = 0;
    for n in 1..=130 {
        t = round(&mut c, t, rtt);
        let checkpoint = [10, 20, 40, 60, 80, 91, 100, 110, 120, 130].contains(&n);
        if checkpoint {
            let want = Cubic::w_cubic(k, w_max, t);
            let slope = 3.0 * C * (t - k).powi(2);
            let tol = slope * rtt + 1.0;
            assert!(
                (w(&c) - want).abs() <= tol,
                "t = {t:.1} s: cwnd {:.1} vs W_cubic {want:.1} (±{tol:.1})",
                w(&c)
            );
            // The Reno-friendly estimate stays below: this is the cubic region.
            assert!(c.w_est().unwrap() < want - 20.0);
            checked += 1;
        }
    }
    assert_eq!(checked, 10);
    // Convex region: beyond W_max at 13 s.
    assert!(w(&c) > w_max + 15.0, "{}", w(&c));
}

/// RFC 9438 §4.4/§4.5: around t = K the curve is flat at W_max, so a window near its old
/// maximum stays there for seconds (the plateau) instead of growing 1 SMSS per RTT.
#[test]
fn window_plateaus_at_w_max() {
    let (w_max, rtt) = (500.0, 0.1);
    let mut c = after_loss(500);
    let k = (w_max * (1.0 - BETA) / C).cbrt();
    let mut t = 0.0;
    let mut plateau = Vec::new();
    while t < k + 1.0 {
        t = round(&mut c, t, rtt);
        if (k - 1.0..=k + 1.0).contains(&t) {
            plateau.push(w(&c));
        }
    }
    assert!(plateau.len() >= 18, "{} rounds", plateau.len());
    let (lo, hi) = plateau
        .iter()
        .fold((f64::MAX, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
    assert!(lo >= w_max - 2.0 && hi <= w_max + 2.0, "{lo}..{hi}");
}

/// RFC 9438 §4.2: the target is at most 1.5 cwnd, so the window grows at most by half per
/// round trip even when the curve one RTT ahead is far higher (here a 10 s RTT after a loss
/// at 100 segments: W_cubic(10 s) = 177 segments against cwnd = 70).
#[test]
fn target_is_clamped_to_one_and_a_half_cwnd() {
    let mut c = after_loss(100);
    let k = (100.0 * (1.0 - BETA) / C).cbrt();
    assert!(Cubic::w_cubic(k, 100.0, 10.0) > 170.0);
    round(&mut c, 0.0, 10.0);
    assert!((104.0..=105.5).contains(&w(&c)), "{}", w(&c));
}

/// RFC 9438 §4.3: with a short RTT and a small window, Reno's estimate W_est (growing by
/// alpha_cubic = 3(1-beta)/(1+beta) per RTT, then by 1 once it passes cwnd_prior) is above
/// W_cubic, and cwnd follows W_est.
#[test]
fn reno_friendly_region_wins_at_short_rtt_and_small_windows() {
    let rtt = 0.001;
    let mut c = after_loss(10);
    let mut t = 0.0;
    for _ in 0..5 {
        t = round(&mut c, t, rtt);
    }
    let k = (10.0 * (1.0 - BETA) / C).cbrt();
    let cubic = Cubic::w_cubic(k, 10.0, t + rtt);
    assert!(cubic < 7.1, "{cubic}");
    // Five rounds of about alpha_cubic (0.53) each.
    assert!(
        (9.1..=7.0 + 5.0 * ALPHA + 0.01).contains(&w(&c)),
        "{}",
        w(&c)
    );
    assert!((w(&c) - c.w_est().unwrap()).abs() < 0.01);
    // Past cwnd_prior = 10, alpha_cubic = 1: about one segment per round.
    let w0 = w(&c);
    for _ in 0..3 {
        t = round(&mut c, t, rtt);
    }
    let w1 = w(&c);
    for _ in 0..20 {
        t = round(&mut c, t, rtt);
    }
    assert!(w0 < 10.0 && w1 >= 10.0);
    let grew = w(&c) - w1;
    assert!((18.5..=20.5).contains(&grew), "{grew} segments in 20 RTTs");
    assert!(Cubic::w_cubic(k, 10.0, t) < w(&c) - 15.0);
}

/// RFC 9438 §4.7: a loss before the window regains W_max lowers W_max to
/// cwnd (1 + beta_cubic) / 2; a loss beyond it sets W_max = cwnd.
#[test]
fn fast_convergence_lowers_w_max_on_an_early_loss() {
    let mut c = after_loss(100);
    assert_eq!(c.w_max(), 100.0);
    c.set_cwnd(80 * MSS);
    c.on_loss(80 * MSS, MSS);
    assert!(
        (c.w_max() - 80.0 * (1.0 + BETA) / 2.0).abs() < 1e-9,
        "{}",
        c.w_max()
    );
    assert_eq!(c.ssthresh(), 56 * MSS, "§4.6 from cwnd");
    round(&mut c, 0.0, 0.1);
    let k = ((68.0 - 56.0) / C).cbrt();
    assert!((c.k().unwrap() - k).abs() < 1e-9, "K from cwnd_epoch");
    // Beyond the old maximum: no fast convergence.
    c.set_cwnd(90 * MSS);
    c.on_loss(90 * MSS, MSS);
    assert_eq!(c.w_max(), 90.0);
}

/// The Linux flavour reduces as `bictcp_recalc_ssthresh` does, on whole segments with the
/// products rounded down: 8 segments leave 5 (the RFC's 0.7 x 8 = 5.6 in bytes), a window of
/// 8.6 segments counts as 8, fast convergence lowers W_max to 8 x 1741 / 2048 = 6 segments
/// (not 6.8), and at least 2 segments are left.
#[test]
fn the_linux_flavour_reduces_on_whole_segments_rounded_down() {
    let linux = || Cubic::new(10, MSS, Counting::Bytes).flavour(CubicFlavour::Linux);
    let mut c = linux();
    c.set_cwnd(8 * MSS + 600);
    c.on_loss(8 * MSS, MSS);
    assert_eq!((c.ssthresh(), c.cwnd(), c.w_max()), (5 * MSS, 5 * MSS, 8.0));
    // An early loss (below the last W_max): fast convergence, rounded down.
    c.set_cwnd(7 * MSS);
    c.on_loss(7 * MSS, MSS);
    assert_eq!((c.ssthresh(), c.w_max()), (4 * MSS, 5.0));
    // Never below 2 segments.
    c.set_cwnd(2 * MSS);
    c.on_loss(2 * MSS, MSS);
    assert_eq!(c.ssthresh(), 2 * MSS);
    // The RFC flavour keeps the product in bytes.
    let mut r = Cubic::new(10, MSS, Counting::Bytes);
    r.set_cwnd(8 * MSS);
    r.on_loss(8 * MSS, MSS);
    assert_eq!((r.ssthresh(), r.w_max()), (5600, 8.0));
}

/// RFC 9438 §4.8: a timeout sets ssthresh = beta_cubic * cwnd and cwnd = 1 SMSS; slow start
/// runs up to ssthresh; the next stage's curve has K = 0 and W_max = cwnd_epoch. A backed-off
/// timeout with nothing acknowledged in between keeps ssthresh (as Linux's tcp_enter_loss).
#[test]
fn timeout_resets_to_one_segment_with_ssthresh_beta_cwnd() {
    let mut c = after_loss(200);
    c.set_cwnd(100 * MSS);
    c.on_timeout(100 * MSS, MSS);
    assert_eq!((c.cwnd(), c.ssthresh()), (MSS, 70 * MSS));
    c.on_timeout(100 * MSS, MSS);
    assert_eq!((c.cwnd(), c.ssthresh()), (MSS, 70 * MSS), "same episode");
    // Slow start: the window doubles per round until ssthresh.
    let mut t = 0.0;
    for k in 1..=6 {
        t = round(&mut c, t, 0.1);
        assert_eq!(c.cwnd(), MSS << k, "round {k}");
        assert_eq!(c.k(), None);
    }
    while c.cwnd() < c.ssthresh() {
        let f = c.cwnd();
        c.on_ack(&ack(t, f, 0.1));
    }
    let epoch = w(&c);
    let f = c.cwnd();
    c.on_ack(&ack(t, f, 0.1));
    assert_eq!(c.k(), Some(0.0));
    assert_eq!(c.w_max(), epoch);
    // A later timeout, after new data was acknowledged, reduces again.
    let cw = c.cwnd();
    c.on_timeout(cw, MSS);
    assert_eq!(c.ssthresh(), (cw as f64 * BETA) as u64);
}

/// RFC 9438 §5.8: an ACK that finds the sender not window-limited (the receiver's window
/// bounds the flight) does not grow the window, in slow start or in congestion avoidance.
#[test]
fn application_limited_acks_do_not_grow_the_window() {
    let mut c = Cubic::new(10, MSS, Counting::PerAck);
    for i in 0..100 {
        c.on_ack(&ack(i as f64 * 0.01, 4 * MSS, 0.1));
    }
    assert_eq!(c.cwnd(), 10 * MSS);
    let mut c = after_loss(100);
    round(&mut c, 0.0, 0.1);
    let w0 = c.cwnd();
    for i in 0..1000 {
        c.on_ack(&ack(0.1 + i as f64 * 0.01, 20 * MSS, 0.1));
    }
    assert_eq!(c.cwnd(), w0);
}

fn cubic_sender(variant: Variant) -> Sender {
    let c = TcpConfig {
        variant,
        congestion_control: WindowGrowth::Cubic,
        mss: MSS as u32,
        initial_window: 10,
        send_buffer_bytes: 1 << 20,
        recv_buffer_bytes: 1 << 20,
        ..TcpConfig::default()
    };
    Sender::new(&c, 1_000_000)
}

fn ack_seg(n: u64) -> Segment {
    Segment {
        ack: n,
        flags: ACK,
        window: 1 << 20,
        ..Segment::default()
    }
}

/// Ten segments out, 0-4 acknowledged (slow start: 20 sent, 15 in flight, cwnd 15), then three
/// duplicates: fast retransmit with CUBIC's ssthresh = 0.7 cwnd.
fn into_recovery(s: &mut Sender) {
    let t = Instant::ZERO;
    while s.poll_transmit(t).is_some() {}
    for k in 1..=5 {
        s.handle_ack(t, &ack_seg(k * MSS));
        while s.poll_transmit(t).is_some() {}
    }
    for _ in 0..3 {
        s.handle_ack(t, &ack_seg(5 * MSS));
        while s.poll_transmit(t).is_some() {}
    }
    assert!(s.in_recovery());
    assert_eq!(s.ssthresh(), 10_500, "RFC 9438 §4.6: 0.7 x 15 segments");
}

/// The sender's recovery code works with CUBIC's ssthresh: Reno inflates to ssthresh + 3 SMSS
/// (RFC 5681 §3.2 step 3) and deflates to ssthresh on the new ACK; NewReno's full ACK sets
/// min(ssthresh, FlightSize + SMSS) (RFC 6582 §3.2 step 3); SACK recovers at cwnd = ssthresh.
#[test]
fn recovery_variants_use_cubic_ssthresh() {
    let mut s = cubic_sender(Variant::Reno);
    into_recovery(&mut s);
    assert_eq!(s.cwnd(), 10_500 + 3 * MSS);
    s.handle_ack(Instant::ZERO, &ack_seg(6 * MSS));
    assert!(!s.in_recovery());
    assert_eq!(s.cwnd(), 10_500);

    let mut s = cubic_sender(Variant::NewReno);
    into_recovery(&mut s);
    assert_eq!(s.cwnd(), 10_500 + 3 * MSS);
    s.handle_ack(Instant::ZERO, &ack_seg(20 * MSS));
    assert!(!s.in_recovery());
    assert_eq!(s.cwnd(), 2 * MSS, "min(ssthresh, FlightSize + SMSS)");

    let mut s = cubic_sender(Variant::Sack);
    into_recovery(&mut s);
    assert_eq!(s.cwnd(), 10_500);
}

/// `congestion_control = "cubic"` is refused with XCP, naming the key.
#[test]
fn cubic_with_xcp_is_a_named_error() {
    let c = TcpConfig {
        congestion_control: WindowGrowth::Cubic,
        xcp: true,
        ..TcpConfig::default()
    };
    assert_eq!(c.validate().unwrap_err().0, "congestion_control");
    assert_eq!(c.transport_name(), "reno+cubic");
    assert_eq!(TcpConfig::default().transport_name(), "reno");
}
