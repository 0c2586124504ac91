//! Statistics of repeated runs: mean, sample standard deviation and Student-t 95% confidence
//! intervals, and the intervals of a difference and of a ratio of two such means.
//!
//! Contract. One implementation for every tool that summarises repetitions: `mslink
//! reproduce`'s verdicts, `mslink sim`'s summaries, `mslink bench`'s repetitions and the Python package's
//! `mslink.plot.summarize(error="ci95")`. The 97.5% quantile of Student's t with n - 1 degrees
//! of freedom is used, not the normal 1.96 (which is 30% too narrow at five repetitions:
//! t = 2.776 at 4 degrees of freedom). One observation has no interval (`half` is infinite);
//! identical observations have a zero-width one. Non-finite observations are the caller's
//! error and propagate as NaN.
//!
//! Two quantities measured in the same repetitions (repetition r of two sweep points of a
//! simulation uses the same seed, so they share their random numbers) are compared pair by
//! pair: [`paired_difference`] and [`paired_ratio`] take the per-repetition pairs, which is
//! valid whatever their correlation and much narrower when they share their randomness (two
//! schemes that behave identically in every repetition give a zero-width interval, where the
//! unpaired [`difference`] would see two independent spreads).

#![warn(missing_docs)]
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Mean and 95% confidence interval of `n` observations.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// Observations.
    pub n: usize,
    /// Sample mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator; 0 for one observation).
    pub sd: f64,
    /// Half-width of the Student-t 95% confidence interval of the mean (infinite for n < 2).
    pub half: f64,
}

impl Estimate {
    /// Lower end of the interval.
    pub fn lo(&self) -> f64 {
        self.mean - self.half
    }
    /// Upper end of the interval.
    pub fn hi(&self) -> f64 {
        self.mean + self.half
    }
    /// Standard error of the mean.
    pub fn sem(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sd / (self.n as f64).sqrt()
        }
    }
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (the factor of a two-sided
/// 95% interval); infinite for `df` below 1 (no interval from fewer than two observations).
pub fn t975(df: f64) -> f64 {
    if df.is_nan() || df < 1.0 {
        return f64::INFINITY;
    }
    // statrs' inverse loses precision far past any repetition count (1.83 at 10^7 degrees of
    // freedom); at 10^5 the quantile is within 2e-5 of the normal limit.
    match StudentsT::new(0.0, 1.0, df.min(1e5)) {
        Ok(t) => t.inverse_cdf(0.975),
        Err(_) => f64::INFINITY,
    }
}

/// Percentile `p` (0 to 1) of `sorted` (increasing): the value at rank floor(p (n - 1)), the
/// lower of the two nearest order statistics, so every percentile is an observed value; NaN
/// for no values. One rule for every exact percentile mslink reports (a flow's delays, the
/// kernel's SRTT readings in `mslink validate`).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n => sorted[((p.clamp(0.0, 1.0) * (n - 1) as f64) as usize).min(n - 1)],
    }
}

/// Mean, standard deviation and 95% interval of `xs`.
pub fn estimate(xs: &[f64]) -> Estimate {
    let n = xs.len();
    if n == 0 {
        return Estimate {
            n,
            mean: f64::NAN,
            sd: f64::NAN,
            half: f64::INFINITY,
        };
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = if n > 1 {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let half = if n > 1 {
        t975((n - 1) as f64) * sd / (n as f64).sqrt()
    } else {
        f64::INFINITY
    };
    Estimate { n, mean, sd, half }
}

/// `a - k·b` with the 95% interval of Welch's test (unequal variances, Welch-Satterthwaite
/// degrees of freedom): the evidence for "a is above k times b".
pub fn difference(a: &Estimate, b: &Estimate, k: f64) -> (f64, f64) {
    let d = a.mean - k * b.mean;
    if a.n < 2 || b.n < 2 {
        return (d, f64::INFINITY);
    }
    let va = a.sem().powi(2);
    let vb = (k * b.sem()).powi(2);
    let v = va + vb;
    if v == 0.0 {
        return (d, 0.0);
    }
    let df = v * v / (va * va / (a.n - 1) as f64 + vb * vb / (b.n - 1) as f64);
    (d, t975(df) * v.sqrt())
}

/// `a / b` with a 95% interval by the delta method (first-order propagation of both relative
/// standard errors), with the smaller sample's degrees of freedom.
pub fn ratio(a: &Estimate, b: &Estimate) -> (f64, f64) {
    let r = a.mean / b.mean;
    if a.n < 2 || b.n < 2 {
        return (r, f64::INFINITY);
    }
    let rel = ((a.sem() / a.mean).powi(2) + (b.sem() / b.mean).powi(2)).sqrt();
    if !rel.is_finite() {
        // A zero mean: the ratio's interval is unbounded unless both are exact.
        return (
            r,
            if a.sd == 0.0 && b.sd == 0.0 {
                0.0
            } else {
                f64::INFINITY
            },
        );
    }
    let df = (a.n.min(b.n) - 1) as f64;
    (r, t975(df) * r.abs() * rel)
}

/// `a - k·b` over the pairs `(a[r], b[r])` (the first `min(len)` of each): the mean of the
/// per-pair differences and its Student-t 95% half-width (infinite below two pairs).
pub fn paired_difference(a: &[f64], b: &[f64], k: f64) -> (f64, f64) {
    let n = a.len().min(b.len());
    let d: Vec<f64> = (0..n).map(|i| a[i] - k * b[i]).collect();
    let e = estimate(&d);
    (e.mean, e.half)
}

/// `mean(a) / mean(b)` over the pairs `(a[r], b[r])` (the first `min(len)` of each), with a 95%
/// half-width by the delta method with the pairs' covariance: the spread of `a[r] - R·b[r]`
/// over `|mean(b)|`, Student-t with n - 1 degrees of freedom (infinite below two pairs, when
/// `mean(b)` is 0 and the pairs are not all equal, and when `mean(a)` is 0 and `b` varies: a
/// ratio of 0 measured as 0 in every repetition says nothing of how small it is).
pub fn paired_ratio(a: &[f64], b: &[f64]) -> (f64, f64) {
    let n = a.len().min(b.len());
    if n == 0 {
        return (f64::NAN, f64::INFINITY);
    }
    let ma = a[..n].iter().sum::<f64>() / n as f64;
    let mb = b[..n].iter().sum::<f64>() / n as f64;
    let r = ma / mb;
    if n < 2 {
        return (r, f64::INFINITY);
    }
    if !r.is_finite() {
        let same = a[..n].iter().zip(&b[..n]).all(|(x, y)| x == y);
        return (r, if same { 0.0 } else { f64::INFINITY });
    }
    if ma == 0.0 {
        // a ratio of 0 (say, no loss in any repetition): a - 0·b is 0 whatever b does, so the
        // delta method would call it exact. It is exact only if b is too.
        let b_constant = b[..n].iter().all(|y| *y == b[0]);
        let a_zero = a[..n].iter().all(|x| *x == 0.0);
        return (
            0.0,
            if a_zero && b_constant {
                0.0
            } else {
                f64::INFINITY
            },
        );
    }
    let z: Vec<f64> = (0..n).map(|i| a[i] - r * b[i]).collect();
    let e = estimate(&z);
    (r, e.half / mb.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentile_is_the_lower_nearest_order_statistic() {
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        // ranks floor(0.5 * 9) = 4, floor(0.95 * 9) = 8, 0 and 9.
        assert_eq!(percentile(&xs, 0.5), 5.0);
        assert_eq!(percentile(&xs, 0.95), 9.0);
        assert_eq!((percentile(&xs, 0.0), percentile(&xs, 1.0)), (1.0, 10.0));
        assert_eq!(percentile(&[4.0], 0.99), 4.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn t_quantiles_match_the_published_table() {
        // Two-sided 95% critical values of Student's t (any statistics textbook's table).
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (9.0, 2.262),
            (29.0, 2.045),
            (120.0, 1.980),
        ] {
            assert!((t975(df) - t).abs() < 5e-4, "df {df}: {}", t975(df));
        }
        assert!(t975(0.5).is_infinite());
        assert!((t975(1e7) - 1.95996).abs() < 1e-4);
    }

    #[test]
    fn estimate_of_five_observations() {
        let e = estimate(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(e.n, 5);
        assert_eq!(e.mean, 3.0);
        assert!((e.sd - 2.5f64.sqrt()).abs() < 1e-12);
        // t(4) * sd / sqrt(5) = 2.776 * 1.5811 / 2.2361
        assert!((e.half - 1.9632).abs() < 1e-3, "{}", e.half);
        let one = estimate(&[4.0]);
        assert_eq!((one.mean, one.sd), (4.0, 0.0));
        assert!(one.half.is_infinite());
        let same = estimate(&[2.0; 4]);
        assert_eq!(same.half, 0.0);
    }

    #[test]
    fn difference_and_ratio_intervals() {
        let a = estimate(&[10.0, 11.0, 12.0]);
        let b = estimate(&[5.0, 5.0, 5.0]);
        let (d, h) = difference(&a, &b, 1.0);
        assert_eq!(d, 6.0);
        // Only a varies: Welch's degrees of freedom are a's, 2.
        assert!((h - a.half).abs() < 1e-9);
        let (d2, _) = difference(&a, &b, 2.0);
        assert_eq!(d2, 1.0);
        let (r, rh) = ratio(&a, &b);
        assert_eq!(r, 2.2);
        assert!((rh - 4.303 * 2.2 * (a.sem() / 11.0)).abs() < 1e-3);
        let exact = estimate(&[3.0, 3.0]);
        assert_eq!(difference(&exact, &exact, 1.0), (0.0, 0.0));
    }

    #[test]
    fn pairs_that_move_together_are_compared_pair_by_pair() {
        // Two schemes measured in the same five repetitions, b always 2 below a: the
        // unpaired interval sees two spreads, the paired one none.
        let a = [10.0, 14.0, 9.0, 12.0, 15.0];
        let b = [8.0, 12.0, 7.0, 10.0, 13.0];
        let (d, h) = paired_difference(&a, &b, 1.0);
        assert_eq!((d, h), (2.0, 0.0));
        let (_, welch) = difference(&estimate(&a), &estimate(&b), 1.0);
        assert!(welch > 3.0, "{welch}");
        // Identical in every repetition: the ratio is exactly 1.
        assert_eq!(paired_ratio(&a, &a), (1.0, 0.0));
        // b = a / 2 pair by pair: exactly 2.
        let half: Vec<f64> = a.iter().map(|x| x / 2.0).collect();
        let (r, rh) = paired_ratio(&a, &half);
        assert!((r - 2.0).abs() < 1e-12 && rh < 1e-9, "{r} {rh}");
        // Independent pairs: the delta method's interval, t(4) s_z / (sqrt(5) |mean b|).
        let c = [5.0, 6.0, 4.0, 5.0, 5.0];
        let (r, rh) = paired_ratio(&a, &c);
        let z: Vec<f64> = a.iter().zip(&c).map(|(x, y)| x - r * y).collect();
        let want = estimate(&z).half / 5.0;
        assert!(
            (r - 2.4).abs() < 1e-12 && (rh - want).abs() < 1e-12,
            "{r} {rh}"
        );
        assert!(paired_difference(&[1.0], &[2.0], 1.0).1.is_infinite());
        assert!(paired_ratio(&[1.0, 2.0], &[0.0, 0.0]).1.is_infinite());
        // No loss in any repetition beside, some alone: undecided, not exactly 0.
        assert_eq!(
            paired_ratio(&[0.0, 0.0, 0.0], &[1e-4, 3e-4, 2e-4]).1,
            f64::INFINITY
        );
        assert_eq!(paired_ratio(&[0.0, 0.0], &[2.0, 2.0]), (0.0, 0.0));
    }
}
