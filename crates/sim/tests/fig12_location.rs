//! 003 Fig. 12 from the simulated cell: a location-dependent loss ramp (10% to 90% and back)
//! at the station of "video" and "FTP1", none at the station of "audio" and "FTP2", ELF with
//! lag compensation. The four phases of 003 §7's description are checked on the moving-window
//! throughput. Every threshold is computed here from the scenario's own numbers (rates, power
//! factors, ramp) with 003 §6's formulas, never copied from a run.

use mslink_channel::ErrorModelConfig;
use mslink_link::sched::SchedulerConfig;
use mslink_sim::{run, Scenario};
use std::collections::BTreeMap;

const TEXT: &str = include_str!("../../../scenarios/003/fig12_elf_location.toml");

/// The scenario's numbers.
struct Setup {
    link: f64,
    /// Reservations (bit/s) and power factors of audio and video; power factor of the FTPs.
    audio: (f64, f64),
    video: (f64, f64),
    p_be: f64,
    /// Ramp: start, rise, fall (s), low, high.
    ramp: (f64, f64, f64, f64, f64),
    window: f64,
}

fn setup(sc: &Scenario) -> Setup {
    let cell = sc.cell.as_ref().unwrap();
    let SchedulerConfig::Elf(elf) = &cell.scheduler else {
        panic!("ELF cell")
    };
    let f = &elf.flows;
    assert!(f[2].power_factor == f[3].power_factor && f[2].weight == f[3].weight);
    let ErrorModelConfig::Ramp {
        start_s,
        rise_s,
        fall_s,
        low,
        high,
        ..
    } = cell.stations[0].error
    else {
        panic!("station A has the ramp")
    };
    assert_eq!(cell.stations[1].error, ErrorModelConfig::Perfect);
    Setup {
        link: cell.rate_bps,
        audio: (f[0].reserved_bps.unwrap(), f[0].power_factor),
        video: (f[1].reserved_bps.unwrap(), f[1].power_factor),
        p_be: f[2].power_factor,
        ramp: (start_s, rise_s, fall_s.unwrap_or(rise_s), low, high),
        window: sc.sim.timeseries_window_s,
    }
}

impl Setup {
    /// Loss rate at station A at time `t`.
    fn loss(&self, t: f64) -> f64 {
        let (start, rise, fall, low, high) = self.ramp;
        if t < start || t >= start + rise + fall {
            0.0
        } else if t < start + rise {
            low + (high - low) * (t - start) / rise
        } else {
            high - (high - low) * (t - start - rise) / fall
        }
    }
    /// Time on the rise at which the loss reaches `e`.
    fn rising_to(&self, e: f64) -> f64 {
        let (start, rise, _, low, high) = self.ramp;
        start + (e - low) / (high - low) * rise
    }
    fn end(&self) -> f64 {
        self.ramp.0 + self.ramp.1 + self.ramp.2
    }
    /// `W_i = B_i / B` (003 §6.3).
    fn w(&self, (b, _): (f64, f64)) -> f64 {
        b / self.link
    }
}

/// Per window end time (s): flow name -> throughput (bit/s).
type Series = BTreeMap<u64, BTreeMap<String, f64>>;

fn series(lag: bool) -> (Setup, Series) {
    let sc = Scenario::parse(TEXT)
        .unwrap()
        .with_overrides(&[("cell.scheduler.lag_compensation".into(), lag.to_string())])
        .unwrap();
    sc.validate().unwrap();
    let s = setup(&sc);
    let r = run(&sc, 0, &mut |_| Err(std::io::Error::other("no files"))).unwrap();
    let mut out = Series::new();
    for p in r.timeseries {
        out.entry(p.time_s.round() as u64)
            .or_default()
            .insert(p.flow, p.throughput_bps);
    }
    (s, out)
}

/// Mean of `flow` over the windows lying wholly inside `[from, to]`.
fn mean(s: &Setup, ts: &Series, flow: &str, from: f64, to: f64) -> f64 {
    let v: Vec<f64> = ts
        .iter()
        .filter(|(&t, _)| t as f64 - s.window >= from - 1e-9 && t as f64 <= to + 1e-9)
        .map(|(_, m)| m[flow])
        .collect();
    assert!(!v.is_empty(), "no window in [{from}, {to}]");
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn fig12_four_phases_of_a_location_dependent_ramp() {
    let (s, ts) = series(true);
    let (w_a, w_v) = (s.w(s.audio), s.w(s.video));
    let (p_a, p_v) = (s.audio.1, s.video.1);
    let e_c = |p: f64| (p - 1.0) / p; // 003 §6.2: crossover error rate
    let t_ftp1 = s.rising_to(e_c(s.p_be));
    let t_video = s.rising_to(e_c(p_v));
    let (start, end) = (s.ramp.0, s.end());
    assert!(start < t_ftp1 && t_ftp1 < t_video && t_video < start + s.ramp.1);

    // Power-factor bounds hold throughout: video never takes more air than P_v * W_v, and
    // the FTP flows are never starved: with audio and video at their full power, the best-
    // effort aggregate keeps 1 - P_v W_v - P_a W_a of the air, FTP2 (error-free) at least
    // 1 / (1 + P_be) of it. 5% allows for the slot granularity of a 10 s window.
    let ftp2_floor = (1.0 - p_v * w_v - p_a * w_a) / (1.0 + s.p_be) * s.link;
    for (t, m) in &ts {
        assert!(
            m["video"] <= 1.05 * p_v * w_v * s.link,
            "t={t}: video {}",
            m["video"]
        );
        assert!(m["ftp2"] >= 0.95 * ftp2_floor, "t={t}: ftp2 {}", m["ftp2"]);
    }

    // Phase 1, from the ramp's start to FTP1's crossover: both flows of station A are in
    // their outcome regions; video keeps its reservation and the FTP flows get equal
    // throughput (FTP2 bears part of FTP1's burden).
    let (v1, f1, f2) = (
        mean(&s, &ts, "video", start, t_ftp1),
        mean(&s, &ts, "ftp1", start, t_ftp1),
        mean(&s, &ts, "ftp2", start, t_ftp1),
    );
    assert!(
        (v1 - s.video.0).abs() < 0.02 * s.video.0,
        "phase 1 video {v1}"
    );
    assert!((f1 / f2 - 1.0).abs() < 0.05, "phase 1 ftp {f1} vs {f2}");
    // ... and both are below their error-free share: the errors cost the whole cell.
    let be_clean = (1.0 - w_v - w_a) / 2.0 * s.link;
    assert!(f2 < 0.95 * be_clean, "phase 1 ftp2 {f2} vs {be_clean}");

    // Phase 2, between the two crossovers: video still holds its reservation, FTP1 is in its
    // effort region and falls behind FTP2. With A_FTP1 = P_be, A_FTP2 = 1 (003 §6.2),
    // FTP1 / FTP2 = P_be (1 - E); require at least half of that gap at the phase's midpoint.
    let mid = (t_ftp1 + t_video) / 2.0;
    let (v2, f1, f2) = (
        mean(&s, &ts, "video", t_ftp1, t_video),
        mean(&s, &ts, "ftp1", t_ftp1, t_video),
        mean(&s, &ts, "ftp2", t_ftp1, t_video),
    );
    let ratio = s.p_be * (1.0 - s.loss(mid));
    assert!(
        (v2 - s.video.0).abs() < 0.03 * s.video.0,
        "phase 2 video {v2}"
    );
    assert!(
        f1 / f2 < 1.0 - (1.0 - ratio) / 2.0,
        "phase 2 ftp {f1} vs {f2}"
    );

    // Phase 3, from video's crossover over the peak: video and FTP1 hold fixed air shares
    // (P_v W_v, and P_be / (1 + P_be) of the aggregate) and share every further increase;
    // FTP2's throughput stays at its effort-region value. Checked at the peak's windows.
    let peak = start + s.ramp.1;
    let (lo, hi) = (peak - 50.0, peak + 50.0);
    let e = s.loss(peak - 25.0); // mean loss over [peak - 50, peak + 50]: symmetric ramp
    let (v3, f1, f2) = (
        mean(&s, &ts, "video", lo, hi),
        mean(&s, &ts, "ftp1", lo, hi),
        mean(&s, &ts, "ftp2", lo, hi),
    );
    let a_be = 1.0 - p_v * w_v - w_a;
    let want_v = p_v * w_v * (1.0 - e) * s.link;
    let want_f1 = a_be * s.p_be / (1.0 + s.p_be) * (1.0 - e) * s.link;
    let want_f2 = a_be / (1.0 + s.p_be) * s.link;
    assert!(v3 < 0.5 * s.video.0, "phase 3 video {v3}");
    assert!(
        (v3 - want_v).abs() < 0.15 * want_v,
        "phase 3 video {v3} vs {want_v}"
    );
    assert!(
        (f1 - want_f1).abs() < 0.25 * want_f1,
        "phase 3 ftp1 {f1} vs {want_f1}"
    );
    assert!(
        (f2 - want_f2).abs() < 0.03 * want_f2,
        "phase 3 ftp2 {f2} vs {want_f2}"
    );

    // Phase 4, after the ramp: lag compensation. Video, behind its reservation, runs at its
    // full power P_v W_v B, above the reservation; FTP1, behind FTP2, gets P_be : 1.
    let v4 = mean(&s, &ts, "video", end, end + 2.0 * s.window);
    let full = p_v * w_v * s.link;
    assert!(
        v4 > (s.video.0 + full) / 2.0,
        "phase 4 video {v4} vs {full}"
    );
    let (f1, f2) = (
        mean(&s, &ts, "ftp1", end, end + 15.0 * s.window),
        mean(&s, &ts, "ftp2", end, end + 15.0 * s.window),
    );
    assert!(f1 / f2 > (1.0 + s.p_be) / 2.0, "phase 4 ftp {f1} vs {f2}");
}

#[test]
fn fig12_without_lag_compensation_nothing_is_made_up() {
    // The same run with eq. (1) alone: after the ramp, video is back at its reservation and
    // the FTP flows at equal shares, so the phase-4 behaviour above is the compensation's.
    let (s, ts) = series(false);
    let end = s.end() + s.window; // one window for the estimator to forget the losses
    let v = mean(&s, &ts, "video", end, end + 10.0 * s.window);
    assert!((v - s.video.0).abs() < 0.02 * s.video.0, "video {v}");
    let (f1, f2) = (
        mean(&s, &ts, "ftp1", end, end + 10.0 * s.window),
        mean(&s, &ts, "ftp2", end, end + 10.0 * s.window),
    );
    assert!((f1 / f2 - 1.0).abs() < 0.02, "ftp {f1} vs {f2}");
}
