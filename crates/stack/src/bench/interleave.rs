//! Interleaved repetitions and paired ratios: how `mslink stack-bench` compares the
//! architectures of 002 (LLM, DAA, ILLM) in one cell without mistaking the machine's drift for
//! an architecture effect (issue 34).
//!
//! Contract. A cell has `k` contestants (the architectures, or architecture and ILP setting);
//! [`measure_interleaved`] measures each once per repetition, in the order of [`order`]:
//! forward in even repetitions, backward in odd ones (`0 1 2`, `2 1 0`, `0 1 2`, ...), so over
//! two repetitions every contestant has the same mean position in time and a steady drift of
//! the machine adds the same to each. Every repetition's figure is kept (`result[c][r]`:
//! contestant `c`, repetition `r`). [`compare`] sets two contestants' repetitions side by side
//! pair by pair: the ratio of their mean round trips with the paired Student-t 95% interval of
//! `mslink_stats::paired_ratio` (the spread of `a[r] - R·b[r]` over the repetitions, so what
//! moves both contestants of a repetition alike cancels), and a [`Verdict`]: faster or slower
//! when the interval excludes 1, inconclusive otherwise (also with fewer than two repetitions,
//! whose interval is infinite). Nothing here reads a clock: the caller's closure measures.

use serde::Serialize;

/// The order in which repetition `rep` measures `k` contestants: `0..k` when `rep` is even,
/// `k-1..=0` when odd.
pub fn order(k: usize, rep: u32) -> Vec<usize> {
    if rep % 2 == 0 {
        (0..k).collect()
    } else {
        (0..k).rev().collect()
    }
}

/// `reps` (at least 1) repetitions of `k` contestants, each measured once per repetition by
/// `measure(contestant)` in [`order`]; returns every figure, `result[contestant][rep]`. The
/// first error ends the measurement.
pub fn measure_interleaved<E>(
    k: usize,
    reps: u32,
    mut measure: impl FnMut(usize) -> Result<f64, E>,
) -> Result<Vec<Vec<f64>>, E> {
    let reps = reps.max(1);
    let mut out = vec![Vec::with_capacity(reps as usize); k];
    for rep in 0..reps {
        for c in order(k, rep) {
            out[c].push(measure(c)?);
        }
    }
    Ok(out)
}

/// What a paired ratio says about the contestant in the numerator against the one in the
/// denominator (round trips: below 1 is faster).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The whole 95% interval of the ratio is below 1.
    Faster,
    /// The whole 95% interval of the ratio is above 1.
    Slower,
    /// The interval contains 1 (or is infinite): the repetitions do not decide.
    Inconclusive,
}

impl Verdict {
    /// The word printed in tables and written to CSV.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// A ratio of mean round trips with its paired 95% interval and verdict (fields in
/// alphabetical order, as the JSON documents keep their keys).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PairedRatio {
    /// Half-width of the ratio's Student-t 95% interval (infinite below two repetitions).
    pub ci95: f64,
    /// mean(a) / mean(b).
    pub ratio: f64,
    /// [`Verdict::Faster`] or [`Verdict::Slower`] when `ratio ± ci95` excludes 1.
    pub verdict: Verdict,
}

/// `a` against `b`, repetition `r` of one paired with repetition `r` of the other (measured
/// back to back in the same repetition by [`measure_interleaved`]).
pub fn compare(a: &[f64], b: &[f64]) -> PairedRatio {
    let (ratio, ci95) = mslink_stats::paired_ratio(a, b);
    let verdict = if !(ratio.is_finite() && ci95.is_finite()) {
        Verdict::Inconclusive
    } else if ratio + ci95 < 1.0 {
        Verdict::Faster
    } else if ratio - ci95 > 1.0 {
        Verdict::Slower
    } else {
        Verdict::Inconclusive
    };
    PairedRatio {
        ci95,
        ratio,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `reps` repetitions of three identical contestants (1 µs each) measured through
    /// [`measure_interleaved`] by a fake whose figures grow by 1% per call (a machine slowly
    /// slowing down).
    fn drifting(reps: u32) -> Vec<Vec<f64>> {
        let mut t = 0.0;
        measure_interleaved(3, reps, |_| {
            t += 1.0;
            Ok::<_, ()>(1.0 + 0.01 * t)
        })
        .unwrap()
    }

    #[test]
    fn every_repetition_measures_every_contestant_once_in_alternating_order() {
        let mut calls = Vec::new();
        let reps = measure_interleaved(3, 4, |c| {
            calls.push(c);
            Ok::<_, ()>(c as f64)
        })
        .unwrap();
        assert_eq!(calls, [0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0]);
        assert_eq!(reps, [vec![0.0; 4], vec![1.0; 4], vec![2.0; 4]]);
        // Zero repetitions asked: one is made.
        assert_eq!(
            measure_interleaved(2, 0, |_| Ok::<_, ()>(1.0))
                .unwrap()
                .len(),
            2
        );
        assert_eq!(order(3, 7), [2, 1, 0]);
    }

    #[test]
    fn the_first_error_ends_the_measurement() {
        let mut calls = 0;
        let r = measure_interleaved(3, 5, |c| {
            calls += 1;
            if c == 2 {
                Err("down")
            } else {
                Ok(1.0)
            }
        });
        assert_eq!((r, calls), (Err("down"), 3));
    }

    #[test]
    fn a_known_ratio_is_decided_and_identical_figures_are_not() {
        // b around 1 µs with ±1% noise, a = 1.1·b with its own ±1%.
        let noise = [0.0, 0.01, -0.01, 0.005, -0.005, 0.008];
        let b: Vec<f64> = noise.iter().map(|e| 1.0 + e).collect();
        let a: Vec<f64> = b
            .iter()
            .zip(noise.iter().rev())
            .map(|(x, e)| 1.1 * x * (1.0 + e))
            .collect();
        let slower = compare(&a, &b);
        assert_eq!(slower.verdict, Verdict::Slower);
        assert!((slower.ratio - 1.1).abs() < 0.01, "{slower:?}");
        assert!(slower.ci95 > 0.0 && slower.ci95 < 0.05, "{slower:?}");
        assert_eq!(compare(&b, &a).verdict, Verdict::Faster);
        let same = compare(&b, &b);
        assert_eq!((same.ratio, same.ci95), (1.0, 0.0));
        assert_eq!(same.verdict, Verdict::Inconclusive);
        // One repetition has no interval: nothing is decided.
        assert_eq!(compare(&a[..1], &b[..1]).verdict, Verdict::Inconclusive);
    }

    #[test]
    fn a_steady_drift_gives_identical_contestants_no_verdict_when_interleaved() {
        for reps in [5, 6, 10] {
            let m = drifting(reps);
            for c in [1, 2] {
                let r = compare(&m[c], &m[0]);
                assert_eq!(r.verdict, Verdict::Inconclusive, "{reps} reps, {c}: {r:?}");
            }
        }
        // The old order, every repetition of one contestant and then the next: the same drift
        // reads as the last contestant being slower.
        let sequential = |k: usize, reps: u32| {
            let mut m = vec![Vec::new(); k];
            let mut t = 0.0;
            for col in m.iter_mut() {
                for _ in 0..reps {
                    col.push(1.0 + 0.01 * t);
                    t += 1.0;
                }
            }
            m
        };
        let m = sequential(3, 5);
        assert_eq!(compare(&m[2], &m[0]).verdict, Verdict::Slower);
        assert_eq!(compare(&m[1], &m[0]).verdict, Verdict::Slower);
    }
}
