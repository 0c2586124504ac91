//! A fading channel: Gilbert-Elliott in continuous time, with random periods or periods
//! replayed from a trace.
//!
//! Contract. The channel is Good or Bad at every instant, and a frame sent at `now` meets the
//! state the channel is in at `now`, whatever its class, length or the frames before it. In
//! Good a frame is hit with probability `loss_good`, in Bad with `loss_bad`; a hit frame is lost
//! ([`Effect::Loss`], the default) or delivered with one uniformly chosen bit of the frame
//! inverted ([`Effect::Corrupt`]). The Good and Bad periods come from either
//! * random sojourns ([`GeTimeParams`]): exponential with means `good_s` and `bad_s` seconds.
//!   The state at time 0 is drawn from the stationary distribution (Bad with probability
//!   `bad_s / (good_s + bad_s)`), and exponential sojourns are memoryless, so the process is
//!   stationary from t = 0: the long-run fraction of time in Bad is `bad_s / (good_s + bad_s)`
//!   and the loss rate of frames spread evenly in time is
//!   [`GeTimeParams::stationary_loss`]; or
//! * a [`PeriodTrace`]: its periods replayed from t = 0, starting over at the end.
//!
//! The timeline does not depend on the traffic. The random sojourns (and the initial state)
//! are drawn from the model's own ChaCha8 generator, seeded by one `u64` taken from the
//! driver's generator on the model's first frame; the driver's generator is used afterwards
//! only for the per-frame hit decisions and corrupted bit positions. Two models given
//! generators seeded alike therefore see the same Good/Bad timeline whatever frames they are
//! asked about, and when: a class measured alone and beside other classes meets the same
//! channel (the per-frame `gilbert_elliott` model, by contrast, steps once per frame of any
//! class). The seed is the first `u64` the model draws, so in a [`crate::Stack`] put it before
//! any layer whose draws depend on the frame. A replayed trace draws no seed.
//!
//! A period includes its first instant and excludes its last: a frame sent exactly at a change
//! meets the new state. The model is lazy: it holds the current state and the instant of the
//! next change, and advances only up to each frame's `now` (O(1) amortised per frame; no
//! allocation but the bit list of a corrupted frame; whole passes of a trace are skipped in one
//! step). `now` may repeat; an earlier `now` than one already seen meets the current state
//! (time does not go back, nothing panics). Sans-IO: the trace text is read by the driver.
//!
//! The period-trace format, one period per line (`#` starts a comment, blank lines are
//! skipped; durations positive and finite, in seconds):
//!
//! ```text
//! # mslink period trace
//! good 0.5           # 500 ms in Good
//! bad 0.02           # then 20 ms in Bad
//! good 1.2
//! bad 0.004 * 3      # '* COUNT' repeats the period: here 12 ms in Bad
//! ```

use std::sync::Arc;

use crate::exponential::Effect;
use crate::trace::{line_body, TraceError};
use crate::{ErrorModel, Outcome, ParamError};
use mslink_link::{Duration, Instant};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

/// The state of the channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Frames are hit with probability `loss_good`.
    Good,
    /// Frames are hit with probability `loss_bad`.
    Bad,
}

impl State {
    fn flipped(self) -> State {
        match self {
            State::Good => State::Bad,
            State::Bad => State::Good,
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::Good => "good",
            State::Bad => "bad",
        })
    }
}

/// Parameters of the random-period model (`model = "gilbert_elliott_time"`), written as
/// `good_s` and `bad_s`, or as the average loss `loss` and the mean burst `burst_s`
/// (`crate::burst_spec`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(
    try_from = "crate::burst_spec::GeTimeSpec",
    into = "crate::burst_spec::GeTimeSpec"
)]
pub struct GeTimeParams {
    /// Mean Good sojourn, seconds.
    pub good_s: f64,
    /// Mean Bad sojourn, seconds.
    pub bad_s: f64,
    /// Probability that a frame sent in Good is hit.
    pub loss_good: f64,
    /// Probability that a frame sent in Bad is hit.
    pub loss_bad: f64,
    /// Lose hit frames (default) or deliver them with one bit inverted.
    pub effect: Effect,
    /// The average loss and mean burst (seconds) it was given as, if it was
    /// (`crate::burst_spec`); written back that way.
    pub written: Option<crate::burst_spec::LossBurst>,
}

impl GeTimeParams {
    /// The long-run fraction of time in Bad.
    pub fn fraction_bad(&self) -> f64 {
        self.bad_s / (self.good_s + self.bad_s)
    }

    /// The long-run rate of hit frames for frames spread evenly in time:
    /// `(good_s * loss_good + bad_s * loss_bad) / (good_s + bad_s)`.
    pub fn stationary_loss(&self) -> f64 {
        (self.good_s * self.loss_good + self.bad_s * self.loss_bad) / (self.good_s + self.bad_s)
    }
}

/// One line of a period trace: a state held for `seconds`, `count` times over.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Period {
    /// The state.
    pub state: State,
    /// Duration in seconds (positive and finite), as written.
    pub seconds: f64,
    /// Repetitions (at least 1): the state lasts `count * seconds`.
    pub count: u64,
}

impl Period {
    /// How long the line lasts (rounded to whole nanoseconds, saturating).
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.seconds).saturating_mul(self.count)
    }
}

/// The period as one line of the text format (without the line ending).
impl std::fmt::Display for Period {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `f64`'s `Display` writes the shortest text that parses back to the same value.
        write!(f, "{} {}", self.state, self.seconds)?;
        if self.count > 1 {
            write!(f, " * {}", self.count)?;
        }
        Ok(())
    }
}

/// The first line [`PeriodTrace::to_text`] writes.
pub const PERIOD_TEXT_HEADER: &str = "# mslink period trace\n";

/// Good and Bad periods in the order they occur (the module contract gives the text format).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeriodTrace {
    /// The periods, in order.
    pub periods: Vec<Period>,
}

impl PeriodTrace {
    /// Parses the text format; an error names the line and what was expected. Never panics.
    pub fn parse(text: &str) -> Result<PeriodTrace, TraceError> {
        let mut periods = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            if let Some(p) = parse_period(raw, i + 1)? {
                periods.push(p);
            }
        }
        Ok(PeriodTrace { periods })
    }

    /// Writes the trace in the text format, which [`PeriodTrace::parse`] reads back to the
    /// same trace.
    pub fn to_text(&self) -> String {
        let mut out = String::from(PERIOD_TEXT_HEADER);
        for p in &self.periods {
            out.push_str(&p.to_string());
            out.push('\n');
        }
        out
    }

    /// The duration of one pass (saturating).
    pub fn total(&self) -> Duration {
        self.periods
            .iter()
            .fold(Duration::ZERO, |a, p| a + p.duration())
    }

    /// The fraction of one pass spent in Bad (`None` for a trace of no duration).
    pub fn fraction_bad(&self) -> Option<f64> {
        let total = self.total().as_nanos();
        let bad: u64 = self
            .periods
            .iter()
            .filter(|p| p.state == State::Bad)
            .fold(0, |a, p| a.saturating_add(p.duration().as_nanos()));
        (total > 0).then(|| bad as f64 / total as f64)
    }
}

fn parse_period(raw: &str, line: usize) -> Result<Option<Period>, TraceError> {
    let Some((spec, count)) = line_body(raw, line)? else {
        return Ok(None);
    };
    let err = |what: String| TraceError { line, what };
    let mut words = spec.split_whitespace();
    let kind = words.next().unwrap_or("");
    let state = match kind {
        "good" => State::Good,
        "bad" => State::Bad,
        other => {
            return Err(err(format!(
                "unknown period {other:?}; expected `good SECONDS` or `bad SECONDS`"
            )))
        }
    };
    let w = words.next().ok_or_else(|| {
        err(format!(
            "`{kind}` needs a duration in seconds, e.g. `{kind} 0.5`"
        ))
    })?;
    let seconds = w
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or_else(|| {
            err(format!(
                "duration {w:?} is not a positive, finite number of seconds"
            ))
        })?;
    if let Some(extra) = words.next() {
        return Err(err(format!("unexpected {extra:?} after the period")));
    }
    Ok(Some(Period {
        state,
        seconds,
        count,
    }))
}

/// Where the Good and Bad periods come from.
#[derive(Clone, Debug)]
enum Periods {
    Random {
        good: Exp<f64>,
        bad: Exp<f64>,
        p_bad: f64,
        /// The model's own generator, seeded on the first frame (boxed: it is large, and
        /// made once).
        gen: Option<Box<ChaCha8Rng>>,
    },
    Trace {
        trace: Arc<PeriodTrace>,
        total: Duration,
        /// The period after the current one.
        next: usize,
    },
}

/// Gilbert-Elliott in continuous time (see the module contract).
#[derive(Clone, Debug)]
pub struct Fading {
    periods: Periods,
    /// `None` until the first frame.
    state: Option<State>,
    /// When the current period ends ([`Instant::MAX`]: never).
    next_change: Instant,
    loss_good: f64,
    loss_bad: f64,
    effect: Effect,
}

fn check_probability(key: &str, v: f64) -> Result<f64, ParamError> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(ParamError::new(
            key,
            format!("{v} is not a probability in [0, 1]"),
        ))
    }
}

fn check_mean(key: &str, v: f64) -> Result<Exp<f64>, ParamError> {
    if v.is_finite() && v > 0.0 {
        Ok(Exp::new(1.0 / v).expect("positive finite rate"))
    } else {
        Err(ParamError::new(
            key,
            format!("{v} is not a mean duration in seconds (positive and finite)"),
        ))
    }
}

impl Fading {
    /// Random exponential periods; every number is checked and a bad one named by its key.
    pub fn random(params: GeTimeParams) -> Result<Self, ParamError> {
        let good = check_mean("good_s", params.good_s)?;
        let bad = check_mean("bad_s", params.bad_s)?;
        Ok(Fading {
            periods: Periods::Random {
                good,
                bad,
                p_bad: params.fraction_bad(),
                gen: None,
            },
            state: None,
            next_change: Instant::ZERO,
            loss_good: check_probability("loss_good", params.loss_good)?,
            loss_bad: check_probability("loss_bad", params.loss_bad)?,
            effect: params.effect,
        })
    }

    /// The periods of `trace`, replayed from time zero and looped (any number of models may
    /// share the trace). A trace of no duration is refused (key `file`).
    pub fn replay(
        trace: Arc<PeriodTrace>,
        loss_good: f64,
        loss_bad: f64,
        effect: Effect,
    ) -> Result<Self, ParamError> {
        let total = trace.total();
        if total == Duration::ZERO {
            return Err(ParamError::new(
                "file",
                if trace.periods.is_empty() {
                    "the period trace has no periods (only blank lines or comments); \
                     write `good SECONDS` and `bad SECONDS` lines, or use `model = \"perfect\"` \
                     for a channel without errors"
                } else {
                    "the period trace lasts no time (every period is shorter than a nanosecond)"
                },
            ));
        }
        Ok(Fading {
            periods: Periods::Trace {
                trace,
                total,
                next: 0,
            },
            state: None,
            next_change: Instant::ZERO,
            loss_good: check_probability("loss_good", loss_good)?,
            loss_bad: check_probability("loss_bad", loss_bad)?,
            effect,
        })
    }

    /// The state of the channel at `now`, advancing the timeline up to it (an earlier `now`
    /// than one already seen gives the current state). On the first call a random model takes
    /// its seed, one `u64`, from `rng`; nothing else is drawn.
    pub fn state_at(&mut self, now: Instant, rng: &mut dyn RngCore) -> State {
        let mut state = match self.state {
            Some(s) => s,
            None => self.start(rng),
        };
        // `next_change` only grows (every period lasts at least a nanosecond, or a trace pass
        // lasts some time), so this ends; `Instant::MAX` means the current period never ends.
        while now >= self.next_change && self.next_change != Instant::MAX {
            state = self.step(now, state);
        }
        self.state = Some(state);
        state
    }

    /// The first period, starting at time zero.
    fn start(&mut self, rng: &mut dyn RngCore) -> State {
        match &mut self.periods {
            Periods::Random {
                good,
                bad,
                p_bad,
                gen,
            } => {
                let mut g = ChaCha8Rng::seed_from_u64(rng.next_u64());
                let state = if g.gen_bool(*p_bad) {
                    State::Bad
                } else {
                    State::Good
                };
                self.next_change = Instant::ZERO + sojourn(good, bad, state, &mut g);
                *gen = Some(Box::new(g));
                state
            }
            Periods::Trace { trace, next, .. } => {
                let first = trace.periods[0];
                self.next_change = Instant::ZERO + first.duration();
                *next = 1 % trace.periods.len();
                first.state
            }
        }
    }

    /// The period after the one ending at `next_change`; `now` is at or past that end.
    fn step(&mut self, now: Instant, state: State) -> State {
        let end = self.next_change;
        match &mut self.periods {
            Periods::Random { good, bad, gen, .. } => {
                let g = gen.as_mut().expect("seeded by the first frame");
                let state = state.flipped();
                self.next_change = end.saturating_add(sojourn(good, bad, state, g));
                state
            }
            Periods::Trace { trace, total, next } => {
                let mut start = end;
                if *next == 0 {
                    // A new pass begins at `end`: skip the passes that end before `now`.
                    let passes = now.saturating_since(start).as_nanos() / total.as_nanos();
                    start = start.saturating_add(total.saturating_mul(passes));
                }
                let p = trace.periods[*next];
                *next = (*next + 1) % trace.periods.len();
                self.next_change = start.saturating_add(p.duration());
                p.state
            }
        }
    }
}

/// A sojourn in `state`, at least a nanosecond (so that time always moves on).
fn sojourn(good: &Exp<f64>, bad: &Exp<f64>, state: State, g: &mut ChaCha8Rng) -> Duration {
    let d = match state {
        State::Good => good.sample(g),
        State::Bad => bad.sample(g),
    };
    Duration::from_secs_f64(d).max(Duration::from_nanos(1))
}

impl ErrorModel for Fading {
    fn outcome(&mut self, now: Instant, len: usize, rng: &mut dyn RngCore) -> Outcome {
        let p = match self.state_at(now, rng) {
            State::Good => self.loss_good,
            State::Bad => self.loss_bad,
        };
        let hit = p >= 1.0 || (p > 0.0 && rng.gen_bool(p));
        if !hit {
            return Outcome::Delivered;
        }
        match self.effect {
            Effect::Loss => Outcome::Lost,
            Effect::Corrupt => {
                let bits = u32::try_from(len.saturating_mul(8)).unwrap_or(u32::MAX);
                if bits == 0 {
                    // Nothing on the air to invert.
                    return Outcome::Delivered;
                }
                Outcome::Corrupted {
                    bits: vec![rng.gen_range(0..bits)],
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::RngCore;

    fn at_ms(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    fn params(good_s: f64, bad_s: f64, loss_good: f64, loss_bad: f64) -> GeTimeParams {
        GeTimeParams {
            good_s,
            bad_s,
            loss_good,
            loss_bad,
            effect: Effect::Loss,
            written: None,
        }
    }

    #[test]
    fn long_run_loss_matches_the_closed_form() {
        // Frames 1 ms apart for 2000 s: about 40 000 Bad periods of 10 ms, so the measured rate
        // is within a few percent of the closed form.
        let p = params(0.2, 0.01, 0.002, 0.7);
        let mut m = Fading::random(p).unwrap();
        let mut r = rng(3);
        let n = 2_000_000u64;
        let lost = (0..n)
            .filter(|&i| m.outcome(at_ms(i), 1000, &mut r) == Outcome::Lost)
            .count();
        let rate = lost as f64 / n as f64;
        let want = (0.2 * 0.002 + 0.01 * 0.7) / 0.21;
        assert!((p.stationary_loss() - want).abs() < 1e-12);
        assert!((rate - want).abs() / want < 0.04, "{rate} vs {want}");
    }

    #[test]
    fn mean_sojourns_and_time_in_bad_match_the_parameters() {
        // Sample the timeline every 100 us for 2000 s; measure the runs of Bad and Good.
        let p = params(0.5, 0.02, 0.0, 1.0);
        let mut m = Fading::random(p).unwrap();
        let mut r = rng(8);
        let step_us = 100u64;
        let (mut bad_runs, mut good_runs, mut bad_samples, mut good_samples) = (0u64, 0u64, 0, 0);
        let mut last = None;
        let samples = 20_000_000u64;
        for i in 0..samples {
            let s = m.state_at(Instant::from_micros(i * step_us), &mut r);
            if last != Some(s) {
                match s {
                    State::Bad => bad_runs += 1,
                    State::Good => good_runs += 1,
                }
                last = Some(s);
            }
            match s {
                State::Bad => bad_samples += 1,
                State::Good => good_samples += 1,
            }
        }
        let mean_bad = bad_samples as f64 * step_us as f64 * 1e-6 / bad_runs as f64;
        let mean_good = good_samples as f64 * step_us as f64 * 1e-6 / good_runs as f64;
        // About 3800 periods of each: the means are within 5% (a sampled run also misses
        // periods shorter than the step, a fraction 1 - exp(-0.1 / 20) = 0.5% of Bad ones).
        assert!((mean_bad - 0.02).abs() / 0.02 < 0.05, "Bad: {mean_bad}");
        assert!((mean_good - 0.5).abs() / 0.5 < 0.05, "Good: {mean_good}");
        let frac = bad_samples as f64 / samples as f64;
        assert!(
            (frac - p.fraction_bad()).abs() / p.fraction_bad() < 0.05,
            "{frac}"
        );
    }

    #[test]
    fn the_timeline_does_not_depend_on_the_traffic() {
        // Loss 1 in Bad and 0 in Good: a frame's outcome is the state it meets. One model sees
        // a frame every 1 ms, the other every 7 ms, with its generator also drawn from between
        // frames; at every instant both see, they agree, and the states do change.
        let p = params(0.05, 0.01, 0.0, 1.0);
        let (mut a, mut b) = (Fading::random(p).unwrap(), Fading::random(p).unwrap());
        let (mut ra, mut rb) = (rng(42), rng(42));
        let mut at_a = Vec::new();
        for i in 0..70_000u64 {
            at_a.push(a.outcome(at_ms(i), 100, &mut ra) == Outcome::Lost);
        }
        let mut changes = 0;
        for j in 0..10_000u64 {
            let lost = b.outcome(at_ms(7 * j), 100, &mut rb) == Outcome::Lost;
            rb.next_u64();
            assert_eq!(lost, at_a[(7 * j) as usize], "at {} ms", 7 * j);
            changes += usize::from(j > 0 && at_a[(7 * j) as usize] != at_a[(7 * j - 7) as usize]);
        }
        assert!(changes > 100, "{changes} changes seen");
        // Another seed, another timeline.
        let mut c = Fading::random(p).unwrap();
        let mut rc = rng(43);
        let differ = (0..70_000u64)
            .filter(|&i| (c.outcome(at_ms(i), 100, &mut rc) == Outcome::Lost) != at_a[i as usize])
            .count();
        assert!(differ > 1000, "{differ}");
    }

    #[test]
    fn time_never_goes_back() {
        let mut m = Fading::random(params(0.01, 0.01, 0.0, 1.0)).unwrap();
        let mut r = rng(1);
        let s = m.state_at(at_ms(500), &mut r);
        for ms in [500, 3, 0, 499] {
            assert_eq!(m.state_at(at_ms(ms), &mut r), s, "{ms}");
        }
        // The extreme instant: every period has ended; nothing panics or loops forever.
        let mut t = Fading::replay(
            Arc::new(PeriodTrace::parse("good 1\nbad 1").unwrap()),
            0.0,
            1.0,
            Effect::Loss,
        )
        .unwrap();
        t.state_at(Instant::MAX, &mut r);
        t.state_at(Instant::ZERO, &mut r);
        let mut huge = Fading::random(params(1e300, 1e300, 0.0, 1.0)).unwrap();
        huge.state_at(Instant::MAX, &mut r);
    }

    #[test]
    fn a_period_trace_replays_exactly_and_loops() {
        let trace =
            PeriodTrace::parse("# t\ngood 0.5\nbad 0.02\ngood 0.1 * 2 # 200 ms\nbad 0.08\n")
                .unwrap();
        assert_eq!(trace.total(), Duration::from_millis(800));
        assert_eq!(trace.fraction_bad(), Some(0.1 / 0.8));
        let mut m = Fading::replay(Arc::new(trace), 0.0, 1.0, Effect::Loss).unwrap();
        let mut r = rng(0);
        // Bad during [500, 520) and [720, 800) ms of every 800 ms pass.
        let bad = |ms: u64| matches!(ms % 800, 500..=519 | 720..=799);
        for ms in [
            0, 499, 500, 519, 520, 719, 720, 799, 800, 1299, 1300, 1319, 1320, 2399, 2400,
        ] {
            let want = if bad(ms) { State::Bad } else { State::Good };
            assert_eq!(m.state_at(at_ms(ms), &mut r), want, "{ms} ms");
        }
        // Far ahead (whole passes skipped), then every millisecond of two passes.
        let base = 800 * 1_000_000;
        for ms in base..base + 1600 {
            let lost = m.outcome(at_ms(ms), 10, &mut r) == Outcome::Lost;
            assert_eq!(lost, bad(ms), "{ms} ms");
        }
        // A trace draws nothing from the driver's generator with loss 0 and 1.
        assert_eq!(r.next_u64(), rng(0).next_u64());
    }

    #[test]
    fn a_trace_of_one_period_or_same_state_periods_works() {
        let mut m = Fading::replay(
            Arc::new(PeriodTrace::parse("bad 0.001").unwrap()),
            0.0,
            1.0,
            Effect::Loss,
        )
        .unwrap();
        let mut r = rng(0);
        for ms in [0, 1, 5, 1_000_000] {
            assert_eq!(m.state_at(at_ms(ms), &mut r), State::Bad);
        }
        let empty = Fading::replay(Arc::new(PeriodTrace::default()), 0.0, 1.0, Effect::Loss);
        assert!(empty.unwrap_err().to_string().contains("no periods"));
        let tiny = PeriodTrace::parse("good 1e-12\nbad 1e-11").unwrap();
        let e = Fading::replay(Arc::new(tiny), 0.0, 1.0, Effect::Loss).unwrap_err();
        assert!(e.to_string().contains("lasts no time"), "{e}");
    }

    #[test]
    fn corrupt_effect_inverts_exactly_one_bit_inside_the_frame() {
        let mut m = Fading::random(GeTimeParams {
            effect: Effect::Corrupt,
            ..params(0.01, 0.01, 0.3, 1.0)
        })
        .unwrap();
        let mut r = rng(5);
        let frame = vec![0x5au8; 37];
        let mut corrupted = 0;
        for i in 0..5000u64 {
            match m.outcome(at_ms(i), frame.len(), &mut r) {
                Outcome::Delivered => {}
                Outcome::Corrupted { bits } => {
                    assert_eq!(bits.len(), 1);
                    assert!(bits[0] < 37 * 8);
                    let got = Outcome::Corrupted { bits }.apply(&frame).unwrap();
                    let flipped: u32 = got
                        .iter()
                        .zip(&frame)
                        .map(|(a, b)| (a ^ b).count_ones())
                        .sum();
                    assert_eq!(flipped, 1);
                    corrupted += 1;
                }
                o => panic!("{o:?}"),
            }
        }
        assert!(corrupted > 1000, "{corrupted}");
        // A frame of no bytes has no bit to invert.
        assert_eq!(m.outcome(at_ms(6000), 0, &mut r), Outcome::Delivered);
    }

    #[test]
    fn parameters_are_checked_by_key() {
        let key = |p: GeTimeParams| Fading::random(p).unwrap_err().key;
        assert_eq!(key(params(0.0, 1.0, 0.0, 1.0)), "good_s");
        assert_eq!(key(params(1.0, f64::INFINITY, 0.0, 1.0)), "bad_s");
        assert_eq!(key(params(1.0, f64::NAN, 0.0, 1.0)), "bad_s");
        assert_eq!(key(params(1.0, 1.0, -0.1, 1.0)), "loss_good");
        assert_eq!(key(params(1.0, 1.0, 0.0, 1.5)), "loss_bad");
    }

    #[test]
    fn parse_errors_name_the_line() {
        let e = PeriodTrace::parse("good 1\n\nbda 2\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string()
                .starts_with("line 3: unknown period \"bda\"; expected `good SECONDS`"),
            "{e}"
        );
        for (text, says) in [
            ("good", "needs a duration"),
            ("bad 0", "not a positive, finite"),
            ("bad -1", "not a positive, finite"),
            ("bad inf", "not a positive, finite"),
            ("bad NaN", "not a positive, finite"),
            ("good 1 2", "unexpected \"2\""),
            ("good 1 * 0", "at least 1"),
            ("loss", "unknown period"),
        ] {
            let e = PeriodTrace::parse(text).unwrap_err();
            assert!(e.line == 1 && e.to_string().contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn parses_the_documented_example() {
        let t = PeriodTrace::parse(
            "# mslink period trace\ngood 0.5           # 500 ms in Good\nbad 0.02\n\
             good 1.2\nbad 0.004 * 3      # 12 ms\n",
        )
        .unwrap();
        assert_eq!(t.periods.len(), 4);
        assert_eq!(t.periods[3].duration(), Duration::from_millis(12));
        assert_eq!(PeriodTrace::parse(&t.to_text()).unwrap(), t);
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in "\\PC{0,200}") {
            let _ = PeriodTrace::parse(&text);
        }

        #[test]
        fn text_round_trip(periods in proptest::collection::vec((any::<bool>(), 1e-9f64..1e6, 1u64..50), 0..20)) {
            let t = PeriodTrace { periods: periods.into_iter().map(|(bad, seconds, count)| Period {
                state: if bad { State::Bad } else { State::Good },
                seconds,
                count,
            }).collect() };
            prop_assert_eq!(PeriodTrace::parse(&t.to_text()).unwrap(), t);
        }
    }
}
