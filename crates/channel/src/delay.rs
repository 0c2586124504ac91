//! Delay models of one link direction: fixed delay, jitter from a distribution with or without
//! reordering, and on/off outages.
//!
//! Contract (sans-IO, deterministic). [`Delay::arrival`]`(sent)` gives when a frame whose last
//! byte left at `sent` arrives: the base delay plus a jitter draw (clamped so no frame arrives
//! before it left). Without reordering a frame never arrives before one sent earlier (it waits
//! for it, as netem does when its jitter must keep order); with reordering each frame keeps its
//! own draw, so a later frame may overtake. Calls come with non-decreasing `sent`. Draws come
//! from the generator given on creation.
//!
//! Jitter distributions (`jitter_ms` is their standard deviation, the mean is 0; netem's set):
//! * `uniform`: uniform on ±√3·σ;
//! * `normal`: normal with deviation σ;
//! * `pareto`: Pareto with shape 3 (x_m = 1), shifted and scaled to mean 0 and deviation σ: a
//!   long tail of late frames, never more than 0.58·σ early;
//! * `paretonormal`: a quarter normal plus three quarters Pareto (as netem's table mixes them),
//!   scaled to deviation σ.
//!
//! [`OnOff`] is an outage process as Mahimahi's `mm-onoff`: alternating on and off periods,
//! fixed or exponentially distributed, starting on at time 0. [`OnOff::available_at`]`(t)`
//! says when a frame ready at `t` may start: `t` itself while on, else the end of the off
//! period. What an outage does to packets that arrive during it is [`OutageMode`]: by default
//! they wait (in the queue, where the discipline applies); with `drop`, as `mm-onoff` does, a
//! packet that arrives while the link is off is dropped ([`OnOff::drops_at`]). Either way no
//! frame starts during an outage. [`OutageDirections`] says which directions have one (each its
//! own process).

use mslink_link::{Duration, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, StandardNormal};

use crate::ParamError;

/// The distribution of the jitter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterDist {
    /// Uniform, mean 0, deviation `jitter_ms`.
    Uniform,
    /// Normal, mean 0, deviation `jitter_ms`.
    #[default]
    Normal,
    /// Pareto (shape 3), mean 0, deviation `jitter_ms`.
    Pareto,
    /// A quarter normal plus three quarters Pareto, mean 0, deviation `jitter_ms`.
    #[serde(alias = "pareto_normal")]
    Paretonormal,
}

impl JitterDist {
    /// The names accepted in configuration files and on the command line.
    pub const NAMES: &'static str = "uniform, normal, pareto, paretonormal";

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "uniform" => JitterDist::Uniform,
            "normal" => JitterDist::Normal,
            "pareto" => JitterDist::Pareto,
            "paretonormal" | "pareto_normal" => JitterDist::Paretonormal,
            _ => return None,
        })
    }

    /// A draw of mean 0 and deviation 1.
    pub fn sample(self, rng: &mut ChaCha8Rng) -> f64 {
        // Pareto(x_m = 1, a = 3): mean 3/2, variance 3/4.
        let pareto = |rng: &mut ChaCha8Rng| {
            let u: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
            (u.powf(-1.0 / 3.0) - 1.5) / 0.75f64.sqrt()
        };
        match self {
            JitterDist::Uniform => (rng.gen::<f64>() * 2.0 - 1.0) * 3f64.sqrt(),
            JitterDist::Normal => StandardNormal.sample(rng),
            JitterDist::Pareto => pareto(rng),
            JitterDist::Paretonormal => {
                let n: f64 = StandardNormal.sample(rng);
                // Var(0.25 N + 0.75 P) = 0.0625 + 0.5625.
                (0.25 * n + 0.75 * pareto(rng)) / 0.625f64.sqrt()
            }
        }
    }
}

/// How the on and off periods are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeriodDist {
    /// Exactly the given lengths.
    Fixed,
    /// Exponential with the given means (mm-onoff).
    #[default]
    Exponential,
}

/// What an outage does to a packet that arrives while the link is off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutageMode {
    /// It waits in the queue (where the discipline applies) and leaves when the link is back.
    #[default]
    Queue,
    /// It is dropped and counted, as Mahimahi's `mm-onoff` drops what arrives while off; what
    /// was queued before the outage waits for its end.
    Drop,
}

/// Which directions of a link have outages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutageDirections {
    /// Both, each its own process.
    #[default]
    Both,
    /// Direction 0 only, left to right (the emulator's uplink: out of the shell).
    #[serde(alias = "left_to_right")]
    Uplink,
    /// Direction 1 only, right to left (the emulator's downlink: into the shell).
    #[serde(alias = "right_to_left")]
    Downlink,
}

impl OutageDirections {
    /// True if direction `dir` (0: left to right, 1: right to left) has outages.
    pub fn includes(self, dir: usize) -> bool {
        match self {
            OutageDirections::Both => true,
            OutageDirections::Uplink => dir == 0,
            OutageDirections::Downlink => dir == 1,
        }
    }
}

/// An on/off outage process: `on_ms` of service, `off_ms` of outage, alternating.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnOffConfig {
    /// On period (or its mean), ms.
    pub on_ms: f64,
    /// Off period (or its mean), ms.
    pub off_ms: f64,
    /// Fixed or exponential periods.
    #[serde(default)]
    pub dist: PeriodDist,
    /// What happens to packets arriving during an outage (default: they wait).
    #[serde(default, skip_serializing_if = "is_queue")]
    pub mode: OutageMode,
    /// Which directions have outages (default: both).
    #[serde(default, skip_serializing_if = "is_both")]
    pub direction: OutageDirections,
}

fn is_queue(m: &OutageMode) -> bool {
    *m == OutageMode::Queue
}

fn is_both(d: &OutageDirections) -> bool {
    *d == OutageDirections::Both
}

impl OnOffConfig {
    /// Checks the periods; the error names the key.
    pub fn validate(&self, prefix: &str) -> Result<(), ParamError> {
        for (k, v) in [("on_ms", self.on_ms), ("off_ms", self.off_ms)] {
            if !(v.is_finite() && v > 0.0 && v <= 3_600_000.0) {
                return Err(ParamError::new(
                    format!("{prefix}{k}"),
                    format!("must be a time in (0, 3600000] ms, got {v}"),
                ));
            }
        }
        Ok(())
    }
}

/// The state of an on/off process.
#[derive(Clone, Debug)]
pub struct OnOff {
    config: OnOffConfig,
    rng: ChaCha8Rng,
    on: bool,
    /// The current period, [start, end).
    start: Instant,
    end: Instant,
}

impl OnOff {
    /// A process per `config` (validated), on from time 0.
    pub fn new(config: OnOffConfig, rng: ChaCha8Rng) -> Self {
        let mut s = OnOff {
            config,
            rng,
            on: true,
            start: Instant::ZERO,
            end: Instant::ZERO,
        };
        s.end = Instant::ZERO + s.draw(true);
        s
    }

    fn draw(&mut self, on: bool) -> Duration {
        let mean = if on {
            self.config.on_ms
        } else {
            self.config.off_ms
        };
        let ms = match self.config.dist {
            PeriodDist::Fixed => mean,
            PeriodDist::Exponential => Exp::new(1.0 / mean)
                .expect("validated")
                .sample(&mut self.rng),
        };
        // At least a nanosecond, so time always advances.
        Duration::from_nanos(((ms * 1e6) as u64).max(1))
    }

    /// When a frame ready at `t` may start: `t` while on, the end of the outage while off.
    /// `t` may be a little earlier than a previous query, but not before the previous period.
    pub fn available_at(&mut self, t: Instant) -> Instant {
        while t >= self.end {
            self.on = !self.on;
            self.start = self.end;
            let d = self.draw(self.on);
            self.end = self.start + d;
        }
        match (self.on, t >= self.start) {
            (true, true) => t,
            (false, true) => self.end,
            // Before the current period: in the previous one, the opposite state.
            (true, false) => self.start,
            (false, false) => t,
        }
    }

    /// True if the link is on at `t` (advancing the process to `t`).
    pub fn is_on(&mut self, t: Instant) -> bool {
        self.available_at(t) == t
    }

    /// True if a packet arriving at `t` is dropped: the mode is [`OutageMode::Drop`] and the
    /// link is off at `t`. Queue mode never drops (and does not advance the process).
    pub fn drops_at(&mut self, t: Instant) -> bool {
        self.config.mode == OutageMode::Drop && !self.is_on(t)
    }
}

/// Delay settings of a link direction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DelayConfig {
    /// Base one-way delay.
    pub base: Duration,
    /// Deviation of the jitter, ms (0: none).
    pub jitter_ms: f64,
    /// Distribution of the jitter.
    pub dist: JitterDist,
    /// Whether a frame may overtake one sent earlier.
    pub reorder: bool,
}

/// The delay model of one direction.
#[derive(Clone, Debug)]
pub struct Delay {
    config: DelayConfig,
    rng: ChaCha8Rng,
    last: Instant,
}

impl Delay {
    /// A model per `config`, drawing from `rng`.
    pub fn new(config: DelayConfig, rng: ChaCha8Rng) -> Self {
        Delay {
            config,
            rng,
            last: Instant::ZERO,
        }
    }

    /// A fixed delay.
    pub fn fixed(base: Duration) -> Self {
        Self::new(
            DelayConfig {
                base,
                ..DelayConfig::default()
            },
            crate::streams::stream(0, "fixed"),
        )
    }

    /// True if frames may arrive out of order.
    pub fn reorders(&self) -> bool {
        self.config.reorder && self.config.jitter_ms > 0.0
    }

    /// When a frame whose last byte left at `sent` arrives.
    pub fn arrival(&mut self, sent: Instant) -> Instant {
        let c = &self.config;
        let mut d = c.base.as_nanos() as f64;
        if c.jitter_ms > 0.0 {
            d += c.dist.sample(&mut self.rng) * c.jitter_ms * 1e6;
        }
        let at = sent + Duration::from_nanos(d.max(0.0) as u64);
        if c.reorder {
            return at;
        }
        self.last = self.last.max(at);
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streams::stream;

    fn moments(dist: JitterDist) -> (f64, f64, f64, f64) {
        let mut r = stream(3, "jitter");
        let xs: Vec<f64> = (0..200_000).map(|_| dist.sample(&mut r)).collect();
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let min = xs.iter().cloned().fold(f64::MAX, f64::min);
        let max = xs.iter().cloned().fold(f64::MIN, f64::max);
        (mean, var.sqrt(), min, max)
    }

    #[test]
    fn distributions_have_mean_zero_and_unit_deviation() {
        for d in [
            JitterDist::Uniform,
            JitterDist::Normal,
            JitterDist::Pareto,
            JitterDist::Paretonormal,
        ] {
            let (mean, sd, min, max) = moments(d);
            assert!(mean.abs() < 0.02, "{d:?} mean {mean}");
            // Pareto(3) has no finite fourth moment: its sample deviation converges slowly.
            let tol = if d == JitterDist::Uniform || d == JitterDist::Normal {
                0.02
            } else {
                0.1
            };
            assert!((sd - 1.0).abs() < tol, "{d:?} sd {sd}");
            match d {
                JitterDist::Uniform => assert!(min >= -1.7321 && max <= 1.7321),
                JitterDist::Pareto => {
                    assert!(min >= -0.578, "{min}");
                    assert!(max > 5.0, "a long tail: {max}");
                }
                _ => {}
            }
        }
    }

    #[test]
    fn without_reordering_arrivals_keep_order() {
        let cfg = |reorder| DelayConfig {
            base: Duration::from_millis(20),
            jitter_ms: 10.0,
            dist: JitterDist::Normal,
            reorder,
        };
        let mut keep = Delay::new(cfg(false), stream(1, "d"));
        let mut free = Delay::new(cfg(true), stream(1, "d"));
        let (mut prev_keep, mut overtakes) = (Instant::ZERO, 0);
        let mut prev_free = Instant::ZERO;
        let (mut lo, mut hi) = (u64::MAX, 0);
        for k in 0..10_000u64 {
            let sent = Instant::from_micros(k * 500);
            let a = keep.arrival(sent);
            assert!(a >= prev_keep && a >= sent);
            prev_keep = a;
            let b = free.arrival(sent);
            assert!(b >= sent);
            if b < prev_free {
                overtakes += 1;
            }
            prev_free = prev_free.max(b);
            let d = b.saturating_since(sent).as_nanos();
            lo = lo.min(d);
            hi = hi.max(d);
        }
        assert!(overtakes > 1000, "{overtakes}");
        // 20 ± 10 ms normal, clamped at 0: a spread of tens of ms.
        assert!(hi - lo > 40_000_000, "{lo}..{hi}");
        // Same seed, same draws.
        let mut again = Delay::new(cfg(true), stream(1, "d"));
        let mut first = Delay::new(cfg(true), stream(1, "d"));
        for k in 0..100 {
            let t = Instant::from_millis(k);
            assert_eq!(again.arrival(t), first.arrival(t));
        }
    }

    #[test]
    fn fixed_delay_adds() {
        let mut d = Delay::fixed(Duration::from_millis(20));
        assert_eq!(d.arrival(Instant::from_millis(1)), Instant::from_millis(21));
        assert!(!d.reorders());
    }

    #[test]
    fn on_off_alternates_fixed_periods() {
        let c = OnOffConfig {
            on_ms: 100.0,
            off_ms: 50.0,
            dist: PeriodDist::Fixed,
            ..OnOffConfig::default()
        };
        let mut o = OnOff::new(c, stream(1, "onoff"));
        let ms = Instant::from_millis;
        assert_eq!(o.available_at(ms(10)), ms(10));
        assert_eq!(o.available_at(ms(120)), ms(150));
        assert_eq!(o.available_at(ms(150)), ms(150));
        // Slightly earlier than the last query: still answered.
        assert_eq!(o.available_at(ms(149)), ms(150));
        assert_eq!(o.available_at(ms(260)), ms(300));
        assert!(o.is_on(ms(990)));
        assert!(!o.is_on(ms(1010)));
        // Queue mode (the default) never drops, on or off.
        assert!(!o.drops_at(ms(1010)));
    }

    /// Drop mode, as mm-onoff: a packet arriving while off is dropped, one arriving while on
    /// is not; the process is the same as in queue mode (same seed, same periods).
    #[test]
    fn drop_mode_drops_what_arrives_while_off() {
        let c = OnOffConfig {
            on_ms: 30.0,
            off_ms: 20.0,
            dist: PeriodDist::Exponential,
            mode: OutageMode::Drop,
            ..OnOffConfig::default()
        };
        let queue = OnOffConfig {
            mode: OutageMode::Queue,
            ..c.clone()
        };
        let mut d = OnOff::new(c, stream(3, "onoff"));
        let mut q = OnOff::new(queue, stream(3, "onoff"));
        let mut dropped = 0;
        for k in 0..100_000u64 {
            let t = Instant::from_micros(k * 100);
            let off = !q.is_on(t);
            assert_eq!(d.drops_at(t), off, "at {t:?}");
            dropped += usize::from(off);
        }
        // About 40% of the time is off.
        assert!((35_000..45_000).contains(&dropped), "{dropped}");
    }

    #[test]
    fn directions_and_modes_parse_with_their_names() {
        let c: OnOffConfig =
            toml::from_str("on_ms = 1\noff_ms = 2\nmode = 'drop'\ndirection = 'uplink'").unwrap();
        assert_eq!(
            (c.mode, c.direction),
            (OutageMode::Drop, OutageDirections::Uplink)
        );
        assert!(c.direction.includes(0) && !c.direction.includes(1));
        let c: OnOffConfig =
            toml::from_str("on_ms = 1\noff_ms = 2\ndirection = 'right_to_left'").unwrap();
        assert_eq!(
            (c.mode, c.direction),
            (OutageMode::Queue, OutageDirections::Downlink)
        );
        assert!(OutageDirections::Both.includes(0) && OutageDirections::Both.includes(1));
        let e = toml::from_str::<OnOffConfig>("on_ms = 1\noff_ms = 2\nmode = 'lose'").unwrap_err();
        assert!(e.to_string().contains("drop"), "{e}");
    }

    #[test]
    fn exponential_on_off_has_the_configured_duty_cycle() {
        let c = OnOffConfig {
            on_ms: 300.0,
            off_ms: 100.0,
            dist: PeriodDist::Exponential,
            ..OnOffConfig::default()
        };
        assert!(c.validate("onoff.").is_ok());
        let mut o = OnOff::new(c.clone(), stream(2, "onoff"));
        let on = (0..400_000u64)
            .filter(|k| o.is_on(Instant::from_millis(*k)))
            .count();
        let duty = on as f64 / 400_000.0;
        assert!((duty - 0.75).abs() < 0.03, "{duty}");
        let bad = OnOffConfig { off_ms: 0.0, ..c };
        assert!(bad
            .validate("onoff.")
            .unwrap_err()
            .to_string()
            .contains("onoff.off_ms"));
    }
}
