//! Where a claim's tolerance comes from: the paper's number and how precisely it can be read,
//! or a reason written beside a hand-made band, or nothing (a plain relation).
//!
//! Contract. A band is derived, never typed: for `ratio`, `difference` and `value` the
//! expected range is `[min(paper) - pm - allowance, max(paper) + pm + allowance]`; for `above`
//! the factor is `min(paper) - pm - allowance` (a >= factor * b), for `below` `max(paper) + pm
//! + allowance`. Without `paper`, a range (`within`) or a factor other than 1 is a hand band
//! and needs `band_reason`, which the report prints. [`derive`] refuses everything else,
//! naming the key: `within` or `factor` beside `paper`, `paper` without `precision`,
//! `precision` or `allowance` without `paper`, an allowance without its reason, a hand band
//! without its reason, a reason beside a derived band, and any number on `monotone`.

use anyhow::{bail, Result};

use super::spec::ClaimSpec;

/// The kind of expectation a band belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `ratio`, `difference`, `value`: a range.
    Range,
    /// `above`: a lower factor.
    Above,
    /// `below`: an upper factor.
    Below,
    /// `monotone`: no number.
    Trend,
}

/// Where the tolerance comes from.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Source {
    /// The paper's number(s), their reading precision and an optional model allowance.
    Paper {
        /// Lowest and highest number the paper gives (equal for one number).
        paper: [f64; 2],
        /// Reading precision (±, the expectation's unit).
        pm: f64,
        /// How the precision was read.
        how: String,
        /// Model allowance (±) and why.
        allowance: Option<(f64, String)>,
    },
    /// A band written by hand, with the reason the report prints.
    Hand {
        /// Why this band.
        reason: String,
    },
    /// The relation itself, no number (an ordering or a trend).
    Plain,
}

/// A claim's expectation numbers: the range or factor, and where they come from.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Band {
    /// Where it comes from.
    #[serde(flatten)]
    pub source: Source,
    /// Expected range (ratio, difference, value).
    pub range: Option<[f64; 2]>,
    /// Factor (above, below): a >= factor * b, or a <= factor * b.
    pub factor: Option<f64>,
}

impl Band {
    /// How the report states the band's origin, e.g. "paper 0.7 ± 0.05 (\"30%\" is a round
    /// figure)".
    pub fn describe(&self) -> String {
        use super::judge::sig;
        match &self.source {
            Source::Paper {
                paper,
                pm,
                how,
                allowance,
            } => {
                let p = if paper[0] == paper[1] {
                    sig(paper[0])
                } else {
                    format!("{} to {}", sig(paper[0]), sig(paper[1]))
                };
                let mut s = format!("from the paper: {p} ± {} ({how})", sig(*pm));
                if let Some((a, why)) = allowance {
                    s.push_str(&format!(", model allowance ± {} ({why})", sig(*a)));
                }
                s
            }
            Source::Hand { reason } => format!("band chosen by hand: {reason}"),
            Source::Plain => "the relation itself (no number)".into(),
        }
    }
}

fn positive(x: f64, key: &str) -> Result<()> {
    if !(x >= 0.0 && x.is_finite()) {
        bail!("{key} must be a finite number of 0 or more, got {x}");
    }
    Ok(())
}

/// The band of claim `c` for an expectation of `kind`.
pub(super) fn derive(c: &ClaimSpec, kind: Kind) -> Result<Band> {
    if let Some(a) = &c.allowance {
        if c.paper.is_none() {
            bail!("allowance needs paper = ... (an allowance widens the paper's number)");
        }
        positive(a.pm, "allowance.pm")?;
        if a.why.trim().is_empty() {
            bail!("allowance.why is empty: say why the model is allowed this much");
        }
    }
    if c.precision.is_some() && c.paper.is_none() {
        bail!("precision needs paper = ... (the number it is the precision of)");
    }
    if let Some(p) = c.paper {
        return from_paper(c, p.bounds(), kind);
    }
    let reason = c.band_reason.as_ref().map(|r| r.trim().to_string());
    if reason.as_ref().is_some_and(String::is_empty) {
        bail!("band_reason is empty");
    }
    match kind {
        Kind::Range => hand_range(c, reason),
        Kind::Above | Kind::Below => hand_factor(c, reason),
        Kind::Trend => {
            if c.within.is_some() || c.factor.is_some() || reason.is_some() {
                bail!("monotone takes no within, factor or band_reason: a trend has no number");
            }
            Ok(Band {
                source: Source::Plain,
                range: None,
                factor: None,
            })
        }
    }
}

/// The band derived from the paper's numbers `[lo, hi]`: widened by the reading precision and
/// the model allowance; no hand band beside it.
fn from_paper(c: &ClaimSpec, [lo, hi]: [f64; 2], kind: Kind) -> Result<Band> {
    let Some(prec) = &c.precision else {
        bail!(
            "paper = ... needs precision = {{ pm = X, how = \"...\" }}: how precisely the \
             number can be read"
        );
    };
    positive(prec.pm, "precision.pm")?;
    if prec.how.trim().is_empty() {
        bail!("precision.how is empty: say how the number was read");
    }
    if !lo.is_finite() || !hi.is_finite() {
        bail!("paper = ...: not a finite number");
    }
    if c.within.is_some() {
        bail!(
            "within = [..] beside paper = ...: the band is derived from paper, precision and \
             allowance; remove within"
        );
    }
    if c.factor.is_some() {
        bail!(
            "factor beside paper = ...: the factor is derived from paper, precision and \
             allowance; remove factor"
        );
    }
    if c.band_reason.is_some() {
        bail!("band_reason beside paper = ...: a derived band needs no reason; remove it");
    }
    let a = c.allowance.as_ref().map_or(0.0, |a| a.pm);
    let wide = prec.pm + a;
    let source = Source::Paper {
        paper: [lo, hi],
        pm: prec.pm,
        how: prec.how.clone(),
        allowance: c.allowance.as_ref().map(|a| (a.pm, a.why.clone())),
    };
    Ok(match kind {
        Kind::Range => Band {
            source,
            range: Some([lo - wide, hi + wide]),
            factor: None,
        },
        Kind::Above => Band {
            source,
            range: None,
            factor: Some(lo - wide),
        },
        Kind::Below => Band {
            source,
            range: None,
            factor: Some(hi + wide),
        },
        Kind::Trend => bail!("paper = ... on monotone: a trend has no number"),
    })
}

/// A range without the paper's number (`ratio`, `difference`, `value`): a hand band,
/// `within`, with its `reason`.
fn hand_range(c: &ClaimSpec, reason: Option<String>) -> Result<Band> {
    let Some(w) = c.within else {
        bail!(
            "needs the paper's number (paper = X with precision = {{ pm, how }}) or a \
             hand band (within = [lo, hi] with band_reason)"
        );
    };
    if w[0].is_nan() || w[1].is_nan() || w[0] > w[1] {
        bail!("within = [{}, {}]: lo above hi", w[0], w[1]);
    }
    let Some(reason) = reason else {
        bail!(
            "within = [{}, {}] without paper = ...: a hand band needs band_reason = \
             \"...\" (why this band; the report prints it), or give the paper's number \
             and its precision instead",
            w[0],
            w[1]
        );
    };
    if c.factor.is_some() {
        bail!("factor is for above and below");
    }
    Ok(Band {
        source: Source::Hand { reason },
        range: Some(w),
        factor: None,
    })
}

/// A factor without the paper's number (`above`, `below`): the plain relation (factor 1, no
/// reason) or a hand factor with its `reason`.
fn hand_factor(c: &ClaimSpec, reason: Option<String>) -> Result<Band> {
    if c.within.is_some() {
        bail!("within is for ratio, difference and value; above/below take factor");
    }
    match (c.factor, reason) {
        (None, None) => Ok(Band {
            source: Source::Plain,
            range: None,
            factor: Some(1.0),
        }),
        (None, Some(_)) => {
            bail!("band_reason without a band: the plain relation needs no reason")
        }
        (Some(k), reason) => {
            if !k.is_finite() {
                bail!("factor = {k}: not a finite number");
            }
            match reason {
                Some(reason) => Ok(Band {
                    source: Source::Hand { reason },
                    range: None,
                    factor: Some(k),
                }),
                None if k == 1.0 => Ok(Band {
                    source: Source::Plain,
                    range: None,
                    factor: Some(1.0),
                }),
                None => bail!(
                    "factor = {k} without paper = ...: a hand factor needs band_reason = \
                     \"...\" (why this factor; the report prints it), or give the \
                     paper's number and its precision instead"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(extra: &str) -> ClaimSpec {
        toml::from_str(&format!(
            "id = \"x\"\nwhere = \"w\"\nsays = \"s\"\nquote = \"q\"\nrun = \"r\"\n{extra}"
        ))
        .unwrap()
    }

    #[test]
    fn a_paper_number_gives_the_band() {
        let b = derive(
            &claim("paper = 0.7\nprecision = { pm = 0.05, how = \"a round 30%\" }"),
            Kind::Range,
        )
        .unwrap();
        let r = b.range.unwrap();
        assert!(
            (r[0] - 0.65).abs() < 1e-12 && (r[1] - 0.75).abs() < 1e-12,
            "{r:?}"
        );
        let b = derive(
            &claim(
                "paper = [1.617, 1.624]\nprecision = { pm = 0.0005, how = \"printed\" }\n\
                 allowance = { pm = 0.01, why = \"w\" }",
            ),
            Kind::Range,
        )
        .unwrap();
        let r = b.range.unwrap();
        assert!(
            (r[0] - 1.6065).abs() < 1e-9 && (r[1] - 1.6345).abs() < 1e-9,
            "{r:?}"
        );
        let above = derive(
            &claim("paper = 2.25\nprecision = { pm = 0.005, how = \"printed\" }"),
            Kind::Above,
        )
        .unwrap();
        assert!((above.factor.unwrap() - 2.245).abs() < 1e-12);
        let below = derive(
            &claim("paper = 0.2\nprecision = { pm = 0.05, how = \"h\" }"),
            Kind::Below,
        )
        .unwrap();
        assert!((below.factor.unwrap() - 0.25).abs() < 1e-12);
        assert!(b.describe().contains("from the paper"), "{}", b.describe());
    }

    #[test]
    fn a_fitted_band_is_refused() {
        // A range typed by hand with no reason: the loader names the fix.
        let e = derive(&claim("within = [0.6, 0.8]"), Kind::Range).unwrap_err();
        assert!(e.to_string().contains("band_reason"), "{e}");
        let e = derive(&claim("factor = 1.1"), Kind::Above).unwrap_err();
        assert!(e.to_string().contains("band_reason"), "{e}");
        // A band moved beside the paper's number.
        let e = derive(
            &claim("paper = 0.7\nprecision = { pm = 0.05, how = \"h\" }\nwithin = [0.5, 0.9]"),
            Kind::Range,
        )
        .unwrap_err();
        assert!(e.to_string().contains("remove within"), "{e}");
        let e = derive(&claim("paper = 0.7"), Kind::Range).unwrap_err();
        assert!(e.to_string().contains("precision"), "{e}");
        let e = derive(
            &claim("paper = 0.7\nprecision = { pm = 0.05, how = \"h\" }\nallowance = { pm = 0.1, why = \" \" }"),
            Kind::Range,
        )
        .unwrap_err();
        assert!(e.to_string().contains("allowance.why"), "{e}");
        let e = derive(&claim("within = [0, 1]"), Kind::Trend).unwrap_err();
        assert!(e.to_string().contains("trend"), "{e}");
        let e = derive(&claim(""), Kind::Range).unwrap_err();
        assert!(e.to_string().contains("paper = X"), "{e}");
    }

    #[test]
    fn hand_bands_and_plain_relations() {
        let b = derive(
            &claim("within = [0, 0.25]\nband_reason = \"under a quarter: 'collapses'\""),
            Kind::Range,
        )
        .unwrap();
        assert_eq!(b.range, Some([0.0, 0.25]));
        assert!(matches!(b.source, Source::Hand { .. }));
        let plain = derive(&claim(""), Kind::Above).unwrap();
        assert_eq!(plain.factor, Some(1.0));
        assert_eq!(plain.source, Source::Plain);
        let e = derive(&claim("band_reason = \"r\""), Kind::Below).unwrap_err();
        assert!(e.to_string().contains("no reason"), "{e}");
    }
}
