//! Gilbert-Elliott channels written as an average loss and a mean burst length.
//!
//! Contract. Both Gilbert-Elliott models ([`GeParams`], stepped per frame, and
//! [`GeTimeParams`], Good and Bad periods in time) read either their chain's own numbers or
//! what a user usually knows of a link: its average frame loss `loss` and how long a burst
//! lasts (`burst_frames` per frame, `burst_s` in time). The conversion is exact for the
//! stationary chain:
//!
//! * the share of frames (or of time) in Bad is `pi = (loss - loss_good) / (loss_bad - loss_good)`,
//!   because the average loss is `(1 - pi) loss_good + pi loss_bad`;
//! * per frame, a Bad run lasts `1/r` frames on average and the share in Bad is `p / (p + r)`,
//!   so `r = 1 / burst_frames` and `p = r pi / (1 - pi)` (with the defaults `loss_good = 0`,
//!   `loss_bad = 1`: `p = loss r / (1 - loss)`);
//! * in time, `bad_s = burst_s` and `good_s = burst_s (1 - pi) / pi`.
//!
//! A burst here is a stay in Bad; with `loss_bad < 1` the frames lost in a row are fewer. Giving
//! both forms, or half of one, is an error that names the keys; so is an average loss the chain
//! cannot reach (at or above `loss_bad`, below `loss_good`) and, per frame, bursts too short
//! for the loss (`p` would exceed 1: Good runs shorter than one frame). A chain given as loss
//! and burst is written back as loss and burst ([`LossBurst`]), so that an override or a sweep
//! of `loss` on it meets one form and derives the chain again.

use serde::{Deserialize, Serialize};

use crate::config::one;
use crate::exponential::Effect;
use crate::fading::GeTimeParams;
use crate::gilbert_elliott::GeParams;

/// How a Gilbert-Elliott chain was written when it was given as an average loss and a mean
/// burst (frames per frame, seconds in time): kept, so that the chain is written back the same
/// way (a scenario's overrides and sweeps then set `loss` or the burst on it, and the chain is
/// derived again).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossBurst {
    /// The average loss.
    pub loss: f64,
    /// The mean burst, in frames (`gilbert_elliott`) or seconds (`gilbert_elliott_time`).
    pub burst: f64,
}

/// `model = "gilbert_elliott"` as written: `p` and `r`, or `loss` and `burst_frames`.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GeSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    r: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    loss: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    burst_frames: Option<f64>,
    #[serde(default)]
    loss_good: f64,
    #[serde(default = "one")]
    loss_bad: f64,
}

/// `model = "gilbert_elliott_time"` as written: `good_s` and `bad_s`, or `loss` and `burst_s`.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GeTimeSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    good_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bad_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    loss: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    burst_s: Option<f64>,
    #[serde(default)]
    loss_good: f64,
    #[serde(default = "one")]
    loss_bad: f64,
    #[serde(default)]
    effect: Effect,
}

/// The two forms a spec may take.
enum Form {
    /// The chain's own pair (`p`, `r` or `good_s`, `bad_s`).
    Own(f64, f64),
    /// Average loss and mean burst.
    LossBurst(f64, f64),
}

/// Which of the two forms a spec uses: the chain's own pair, or loss and burst.
fn form(
    own: (&str, Option<f64>, &str, Option<f64>),
    user: (&str, Option<f64>, &str, Option<f64>),
) -> Result<Form, String> {
    let (a, av, b, bv) = own;
    let (c, cv, d, dv) = user;
    match (av, bv, cv, dv) {
        (Some(x), Some(y), None, None) => Ok(Form::Own(x, y)),
        (None, None, Some(x), Some(y)) => Ok(Form::LossBurst(x, y)),
        (None, None, None, None) => Err(format!("give `{a}` and `{b}`, or `{c}` and `{d}`")),
        _ if (av.is_some() || bv.is_some()) && (cv.is_some() || dv.is_some()) => Err(format!(
            "give either `{a}` and `{b}`, or `{c}` (average loss) and `{d}` (mean burst), not both"
        )),
        (Some(_), None, ..) => Err(format!("`{a}` needs `{b}`")),
        (None, Some(_), ..) => Err(format!("`{b}` needs `{a}`")),
        (.., Some(_), None) => Err(format!("`{c}` (average loss) needs `{d}` (mean burst)")),
        _ => Err(format!("`{d}` (mean burst) needs `{c}` (average loss)")),
    }
}

/// The share in Bad that gives average loss `loss` with hit probabilities `loss_good` in Good
/// and `loss_bad` in Bad; it must be in [0, 1).
fn share_bad(loss: f64, loss_good: f64, loss_bad: f64) -> Result<f64, String> {
    for (k, v) in [
        ("loss", loss),
        ("loss_good", loss_good),
        ("loss_bad", loss_bad),
    ] {
        if !(0.0..=1.0).contains(&v) {
            return Err(format!("`{k}` {v} is not a probability in [0, 1]"));
        }
    }
    if loss_bad <= loss_good {
        return Err(format!(
            "`loss` needs `loss_bad` ({loss_bad}) above `loss_good` ({loss_good}): the bursts are \
             where Bad loses more"
        ));
    }
    if loss < loss_good || loss >= loss_bad {
        return Err(format!(
            "`loss` {loss} must be at least `loss_good` ({loss_good}) and below `loss_bad` \
             ({loss_bad}): the average of the two states' losses"
        ));
    }
    Ok((loss - loss_good) / (loss_bad - loss_good))
}

impl TryFrom<GeSpec> for GeParams {
    type Error = String;

    fn try_from(s: GeSpec) -> Result<Self, String> {
        let (p, r) = match form(
            ("p", s.p, "r", s.r),
            ("loss", s.loss, "burst_frames", s.burst_frames),
        )? {
            Form::Own(p, r) => (p, r),
            Form::LossBurst(loss, burst) => {
                if !(burst.is_finite() && burst >= 1.0) {
                    return Err(format!(
                        "`burst_frames` {burst} is not a mean burst length in frames (1 or more)"
                    ));
                }
                let pi = share_bad(loss, s.loss_good, s.loss_bad)?;
                let r = 1.0 / burst;
                let p = r * pi / (1.0 - pi);
                if p > 1.0 {
                    return Err(format!(
                        "`loss` {loss} with bursts of {burst} frames needs Good runs shorter than \
                         one frame (p = {p:.3}); use longer bursts (at least {:.3} frames)",
                        (1.0 - pi) / pi
                    ));
                }
                (p, r)
            }
        };
        Ok(GeParams {
            p,
            r,
            loss_good: s.loss_good,
            loss_bad: s.loss_bad,
            written: s
                .loss
                .zip(s.burst_frames)
                .map(|(loss, burst)| LossBurst { loss, burst }),
        })
    }
}

impl From<GeParams> for GeSpec {
    fn from(g: GeParams) -> Self {
        let (own, written) = match g.written {
            Some(w) => (None, Some(w)),
            None => (Some((g.p, g.r)), None),
        };
        GeSpec {
            p: own.map(|o| o.0),
            r: own.map(|o| o.1),
            loss: written.map(|w| w.loss),
            burst_frames: written.map(|w| w.burst),
            loss_good: g.loss_good,
            loss_bad: g.loss_bad,
        }
    }
}

impl TryFrom<GeTimeSpec> for GeTimeParams {
    type Error = String;

    fn try_from(s: GeTimeSpec) -> Result<Self, String> {
        let (good_s, bad_s) = match form(
            ("good_s", s.good_s, "bad_s", s.bad_s),
            ("loss", s.loss, "burst_s", s.burst_s),
        )? {
            Form::Own(g, b) => (g, b),
            Form::LossBurst(loss, burst) => {
                if !(burst.is_finite() && burst > 0.0) {
                    return Err(format!(
                        "`burst_s` {burst} is not a mean burst length in seconds (positive and \
                         finite)"
                    ));
                }
                let pi = share_bad(loss, s.loss_good, s.loss_bad)?;
                if pi == 0.0 {
                    return Err(format!(
                        "`loss` {loss} equals `loss_good`: no time in Bad; use \
                         `model = \"independent\"` for loss without bursts"
                    ));
                }
                (burst * (1.0 - pi) / pi, burst)
            }
        };
        Ok(GeTimeParams {
            good_s,
            bad_s,
            loss_good: s.loss_good,
            loss_bad: s.loss_bad,
            effect: s.effect,
            written: s
                .loss
                .zip(s.burst_s)
                .map(|(loss, burst)| LossBurst { loss, burst }),
        })
    }
}

impl From<GeTimeParams> for GeTimeSpec {
    fn from(g: GeTimeParams) -> Self {
        let (own, written) = match g.written {
            Some(w) => (None, Some(w)),
            None => (Some((g.good_s, g.bad_s)), None),
        };
        GeTimeSpec {
            good_s: own.map(|o| o.0),
            bad_s: own.map(|o| o.1),
            loss: written.map(|w| w.loss),
            burst_s: written.map(|w| w.burst),
            loss_good: g.loss_good,
            loss_bad: g.loss_bad,
            effect: g.effect,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::fading::GeTimeParams;
    use crate::gilbert_elliott::GeParams;

    fn ge(text: &str) -> Result<GeParams, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    fn ge_time(text: &str) -> Result<GeTimeParams, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn loss_and_burst_give_the_chain_whose_stationary_loss_and_burst_they_are() {
        let g = ge("loss = 0.02\nburst_frames = 5").unwrap();
        assert!((g.r - 0.2).abs() < 1e-15);
        // p = L r / (1 - L) with loss_bad = 1.
        assert!((g.p - 0.02 * 0.2 / 0.98).abs() < 1e-15);
        assert!((g.stationary_loss() - 0.02).abs() < 1e-12);
        let g = ge("loss = 0.05\nburst_frames = 4\nloss_good = 0.01\nloss_bad = 0.5").unwrap();
        assert!((g.stationary_loss() - 0.05).abs() < 1e-12);
        assert!((1.0 / g.r - 4.0).abs() < 1e-12);
        let t = ge_time("loss = 0.03\nburst_s = 0.02").unwrap();
        assert_eq!(t.bad_s, 0.02);
        assert!((t.stationary_loss() - 0.03).abs() < 1e-12);
        assert!((t.good_s - 0.02 * 0.97 / 0.03).abs() < 1e-12);
    }

    #[test]
    fn a_chain_is_written_back_in_the_form_it_was_given() {
        // So that a later override of `loss` (a sweep, `--set`) meets one form, not two.
        let g = ge("loss = 0.02\nburst_frames = 5").unwrap();
        let text = toml::to_string(&g).unwrap();
        assert!(
            text.contains("loss = 0.02") && !text.contains("p ="),
            "{text}"
        );
        let mut v: toml::Value = toml::from_str(&text).unwrap();
        v.as_table_mut()
            .unwrap()
            .insert("loss".into(), toml::Value::Float(0.05));
        let again: GeParams = v.try_into().unwrap();
        assert!((again.stationary_loss() - 0.05).abs() < 1e-12);
        let own = ge("p = 0.01\nr = 0.2").unwrap();
        assert_eq!(ge(&toml::to_string(&own).unwrap()).unwrap(), own);
        let t = ge_time("loss = 0.03\nburst_s = 0.02").unwrap();
        let text = toml::to_string(&t).unwrap();
        assert!(
            text.contains("burst_s = 0.02") && !text.contains("good_s"),
            "{text}"
        );
        assert_eq!(ge_time(&text).unwrap(), t);
    }

    #[test]
    fn the_chains_own_numbers_still_read_as_before() {
        let g = ge("p = 0.01\nr = 0.2").unwrap();
        assert_eq!((g.p, g.r, g.loss_good, g.loss_bad), (0.01, 0.2, 0.0, 1.0));
        let t = ge_time("good_s = 0.5\nbad_s = 0.02\neffect = 'corrupt'").unwrap();
        assert_eq!((t.good_s, t.bad_s), (0.5, 0.02));
    }

    #[test]
    fn mixed_half_or_unreachable_forms_are_refused_by_name() {
        let e = ge("p = 0.01\nloss = 0.02\nburst_frames = 5").unwrap_err();
        assert!(e.contains("not both"), "{e}");
        assert!(ge("p = 0.01").unwrap_err().contains("`p` needs `r`"));
        assert!(ge("loss = 0.01")
            .unwrap_err()
            .contains("needs `burst_frames`"));
        assert!(ge("").unwrap_err().contains("`loss` and `burst_frames`"));
        assert!(ge("loss = 1.0\nburst_frames = 5")
            .unwrap_err()
            .contains("below `loss_bad`"));
        assert!(ge("loss = 0.02\nburst_frames = 0.5")
            .unwrap_err()
            .contains("`burst_frames`"));
        // 60% loss in bursts of one frame: Good would last 0.67 frames.
        let e = ge("loss = 0.6\nburst_frames = 1").unwrap_err();
        assert!(e.contains("at least 0.667 frames"), "{e}");
        assert!(ge_time("loss = 0.0\nburst_s = 0.1")
            .unwrap_err()
            .contains("independent"));
        assert!(ge_time("loss = 0.1\nburst_s = 0")
            .unwrap_err()
            .contains("`burst_s`"));
        assert!(ge_time("loss = 0.1\nbad_s = 0.1")
            .unwrap_err()
            .contains("not both"));
        assert!(ge_time("loss = 0.1\nburst_s = 1\nloss_bad = 0")
            .unwrap_err()
            .contains("above"));
        assert!(ge("loss = 0.1\nburst_frames = 3\nlos_bad = 1")
            .unwrap_err()
            .contains("los_bad"));
    }
}
