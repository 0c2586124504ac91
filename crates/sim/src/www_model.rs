//! The WWW browsing workload of 004 §III.C: what each transaction transfers.
//!
//! Contract. [`WwwModel::sample_page`] draws one *transaction*: the client's request for a
//! page, the page (primary object) the server returns, and one request/reply pair per
//! embedded object, fetched one after another. The simulator's `www` application runs one
//! transaction at a time without pauses and measures the server-to-client application bytes
//! divided by the time to the end of the last completed transaction (004 §III.C).
//!
//! Distributions. 004 used the empirical distributions of ns-2's HTTP module, which come from
//! Mah's packet-trace study (INFOCOM '97). We do not ship those tables; we use parametric
//! distributions with the shape Mah reports — request sizes of a few hundred bytes; reply sizes
//! heavy-tailed with a median of about 2 KB and a mean several times larger; most pages with no
//! embedded objects and a mean of under three files per page — every parameter configurable:
//!
//! - request bytes: log-normal, median `request_median_bytes`, shape `request_sigma`;
//! - reply (page and object) bytes: with probability `1 - reply_tail_prob` log-normal (median
//!   `reply_median_bytes`, shape `reply_sigma`), else Pareto (scale `reply_tail_scale_bytes`,
//!   index `reply_tail_alpha`); all clipped to `[reply_min_bytes, reply_max_bytes]`;
//! - embedded objects: none with probability `no_objects_prob`, else `1 + Geometric` with mean
//!   `objects_mean_if_any`, capped at `objects_max`.

use mslink_channel::ParamError;
use rand::Rng;
use rand_distr::{Distribution, Geometric, LogNormal, Pareto};

/// Parameters of the WWW workload.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WwwModel {
    /// Median request size, bytes.
    pub request_median_bytes: f64,
    /// Log-normal shape of request sizes.
    pub request_sigma: f64,
    /// Median reply size (body of the distribution), bytes.
    pub reply_median_bytes: f64,
    /// Log-normal shape of reply sizes.
    pub reply_sigma: f64,
    /// Share of replies drawn from the Pareto tail.
    pub reply_tail_prob: f64,
    /// Pareto scale of the tail, bytes.
    pub reply_tail_scale_bytes: f64,
    /// Pareto index of the tail.
    pub reply_tail_alpha: f64,
    /// Smallest reply, bytes.
    pub reply_min_bytes: u64,
    /// Largest reply, bytes.
    pub reply_max_bytes: u64,
    /// Probability that a page has no embedded objects.
    pub no_objects_prob: f64,
    /// Mean number of embedded objects on pages that have some.
    pub objects_mean_if_any: f64,
    /// Most embedded objects on one page.
    pub objects_max: u32,
}

impl Default for WwwModel {
    fn default() -> Self {
        WwwModel {
            request_median_bytes: 250.0,
            request_sigma: 0.4,
            reply_median_bytes: 2048.0,
            reply_sigma: 1.2,
            reply_tail_prob: 0.07,
            reply_tail_scale_bytes: 10_240.0,
            reply_tail_alpha: 1.2,
            reply_min_bytes: 100,
            reply_max_bytes: 2_000_000,
            no_objects_prob: 0.55,
            objects_mean_if_any: 4.0,
            objects_max: 150,
        }
    }
}

/// One request and the reply it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// Client-to-server bytes.
    pub request_bytes: u64,
    /// Server-to-client bytes.
    pub reply_bytes: u64,
}

/// One transaction: the page, then each embedded object, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The page first, then its embedded objects.
    pub exchanges: Vec<Exchange>,
}

impl Page {
    /// Server-to-client application bytes of the whole transaction.
    pub fn reply_bytes(&self) -> u64 {
        self.exchanges.iter().map(|e| e.reply_bytes).sum()
    }
}

impl WwwModel {
    /// Checks every parameter; the error names the key.
    pub fn validate(&self) -> Result<(), ParamError> {
        let positive = [
            ("request_median_bytes", self.request_median_bytes),
            ("reply_median_bytes", self.reply_median_bytes),
            ("reply_tail_scale_bytes", self.reply_tail_scale_bytes),
            ("reply_tail_alpha", self.reply_tail_alpha),
            ("objects_mean_if_any", self.objects_mean_if_any),
        ];
        for (k, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(ParamError::new(
                    k,
                    format!("must be a positive number, got {v}"),
                ));
            }
        }
        for (k, v) in [
            ("request_sigma", self.request_sigma),
            ("reply_sigma", self.reply_sigma),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ParamError::new(k, format!("must be >= 0, got {v}")));
            }
        }
        for (k, v) in [
            ("reply_tail_prob", self.reply_tail_prob),
            ("no_objects_prob", self.no_objects_prob),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(ParamError::new(
                    k,
                    format!("must be a probability in [0, 1], got {v}"),
                ));
            }
        }
        if self.objects_mean_if_any < 1.0 {
            return Err(ParamError::new(
                "objects_mean_if_any",
                format!(
                    "must be >= 1 (pages that have objects have one at least), got {}",
                    self.objects_mean_if_any
                ),
            ));
        }
        if self.reply_min_bytes == 0 || self.reply_min_bytes > self.reply_max_bytes {
            return Err(ParamError::new(
                "reply_min_bytes",
                format!(
                    "({}) must be >= 1 and <= `reply_max_bytes` ({})",
                    self.reply_min_bytes, self.reply_max_bytes
                ),
            ));
        }
        Ok(())
    }

    fn request<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let d =
            LogNormal::new(self.request_median_bytes.ln(), self.request_sigma).expect("validated");
        (d.sample(rng).round() as u64).max(1)
    }

    /// One reply size.
    pub fn reply<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let x = if rng.gen_bool(self.reply_tail_prob) {
            Pareto::new(self.reply_tail_scale_bytes, self.reply_tail_alpha)
                .expect("validated")
                .sample(rng)
        } else {
            LogNormal::new(self.reply_median_bytes.ln(), self.reply_sigma)
                .expect("validated")
                .sample(rng)
        };
        (x.round() as u64).clamp(self.reply_min_bytes, self.reply_max_bytes)
    }

    /// Number of embedded objects on one page.
    pub fn objects<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        if rng.gen_bool(self.no_objects_prob) {
            return 0;
        }
        // 1 + Geometric(p) has mean 1 + (1-p)/p = 1/p.
        let p = 1.0 / self.objects_mean_if_any;
        let extra = Geometric::new(p).expect("validated").sample(rng);
        (1 + extra).min(u64::from(self.objects_max)) as u32
    }

    /// Draws one transaction.
    pub fn sample_page<R: Rng + ?Sized>(&self, rng: &mut R) -> Page {
        let n = self.objects(rng);
        let mut exchanges = Vec::with_capacity(n as usize + 1);
        for _ in 0..=n {
            exchanges.push(Exchange {
                request_bytes: self.request(rng),
                reply_bytes: self.reply(rng),
            });
        }
        Page { exchanges }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn sample_statistics_match_the_configured_distributions() {
        let m = WwwModel::default();
        m.validate().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let n = 200_000;
        let mut objects = 0u64;
        let mut zero = 0u64;
        let mut replies = Vec::with_capacity(n);
        let mut requests = Vec::with_capacity(n);
        for _ in 0..n {
            let k = m.objects(&mut rng);
            objects += u64::from(k);
            zero += u64::from(k == 0);
            replies.push(m.reply(&mut rng));
            requests.push(m.request(&mut rng));
        }
        // Objects: P(0) = 0.55; mean = 0.45 × 4 = 1.8 (the cap at 150 is never reached in practice).
        let p0 = zero as f64 / n as f64;
        assert!((p0 - 0.55).abs() < 0.005, "P(no objects) {p0}");
        let mean_obj = objects as f64 / n as f64;
        assert!((mean_obj - 1.8).abs() < 0.03, "mean objects {mean_obj}");
        // Medians: the log-normal body holds 93% of replies, so the overall median sits just
        // below the body's 0.5/0.93 quantile: exp(ln 2048 + 1.2 × Φ⁻¹(0.5376)) ≈ 2048 × e^{0.113}.
        replies.sort_unstable();
        let med = replies[n / 2] as f64;
        let expect = 2048.0 * (1.2f64 * 0.0944).exp();
        assert!(
            (med / expect - 1.0).abs() < 0.05,
            "reply median {med} vs {expect}"
        );
        requests.sort_unstable();
        let rmed = requests[n / 2] as f64;
        assert!((rmed / 250.0 - 1.0).abs() < 0.03, "request median {rmed}");
        // Heavy tail: the mean is well above the median.
        let mean = replies.iter().sum::<u64>() as f64 / n as f64;
        assert!(mean > 2.0 * med, "mean {mean}, median {med}");
        assert!(*replies.first().unwrap() >= 100 && *replies.last().unwrap() <= 2_000_000);
    }

    #[test]
    fn a_page_is_the_primary_plus_its_objects() {
        let m = WwwModel {
            no_objects_prob: 0.0,
            objects_mean_if_any: 1.0,
            ..WwwModel::default()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let p = m.sample_page(&mut rng);
        assert_eq!(
            p.exchanges.len(),
            2,
            "mean 1 given some: exactly one object"
        );
        assert_eq!(
            p.reply_bytes(),
            p.exchanges[0].reply_bytes + p.exchanges[1].reply_bytes
        );
    }

    #[test]
    fn validation_names_the_key() {
        let m = WwwModel {
            reply_tail_prob: 1.5,
            ..WwwModel::default()
        };
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .contains("reply_tail_prob"));
        let m = WwwModel {
            reply_min_bytes: 10,
            reply_max_bytes: 5,
            ..WwwModel::default()
        };
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .contains("reply_min_bytes"));
    }
}
