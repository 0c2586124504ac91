//! Error models as configuration: what a scenario or link file says, and how it is built.
//!
//! Contract. [`ErrorModelConfig`] is serde data tagged by `model`; [`ErrorModelConfig::build`]
//! validates every number (probabilities in [0, 1], positive means) and names the key in its
//! error. Trace files are read by the caller's loader (this crate does no I/O), and a
//! malformed trace is reported with its file and line. A loader is either a function that
//! returns a file's text ([`ErrorModelConfig::build`]) or a [`TraceLoader`] that hands over
//! packed traces ([`ErrorModelConfig::build_with`]): a driver that streams files into a
//! [`TraceParser`] never holds a trace's text, and may give every model naming a file the same
//! shared trace.
//!
//! ```toml
//! model = "exponential"
//! mean_bytes = 32768        # 004 Table I WLAN, 3% loss with 1000-byte frames
//! ```
//! Other models: `{ model = "independent", loss = 0.05 }`,
//! `{ model = "gilbert_elliott", p = 0.01, r = 0.2, loss_good = 0.0, loss_bad = 1.0 }` (stepped
//! per frame; or `loss = 0.02, burst_frames = 5`, an average loss and a mean burst,
//! `crate::burst_spec`), `{ model = "gilbert_elliott_time", good_s = 0.5, bad_s = 0.02,
//! loss_good = 0.0, loss_bad = 1.0, effect = "loss" }` (Good and Bad periods in time, a fading
//! channel; or `loss = 0.03, burst_s = 0.02`),
//! `{ model = "period_trace", file = "fade.periods", loss_good = 0.0, loss_bad = 1.0 }` (the
//! same with the periods replayed from a file),
//! `{ model = "pattern", good = 400, bad = 100 }`, `{ model = "trace", file = "walls.trace" }`,
//! `{ model = "ramp", start_s = 50, rise_s = 400 }` (003 Fig. 12: loss rising from 10% to 90%
//! and back, clean before and after), `{ model = "stack", layers = [ ... ] }`,
//! `{ model = "perfect" }`.

use std::sync::Arc;

use crate::exponential::{Effect, Exponential};
use crate::fading::{Fading, GeTimeParams, PeriodTrace};
use crate::gilbert_elliott::{GeParams, GilbertElliott};
use crate::independent::Independent;
use crate::pattern::Pattern;
use crate::ramp::{Ramp, RampShape};
use crate::trace::{PackedTrace, Replay, TraceError, TraceParser};
use crate::{ErrorModel, Stack};

/// Where the trace files named in a configuration come from: the driver reads them (this crate
/// opens no files).
pub trait TraceLoader {
    /// The trace `file` names (as written in the configuration), packed.
    fn load_trace(&mut self, file: &str) -> Result<Arc<PackedTrace>, TraceLoadError>;

    /// The period trace `file` names (`model = "period_trace"`), parsed.
    fn load_periods(&mut self, file: &str) -> Result<Arc<PeriodTrace>, TraceLoadError>;
}

/// Why a trace file could not be loaded (the message of a [`ModelError`] names the file).
#[derive(Debug, thiserror::Error)]
pub enum TraceLoadError {
    /// It could not be read.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// A line is malformed.
    #[error(transparent)]
    Parse(#[from] TraceError),
}

/// A [`TraceLoader`] over a function that returns a file's whole text.
pub struct TextLoader<'a>(pub &'a mut dyn FnMut(&str) -> std::io::Result<String>);

impl TraceLoader for TextLoader<'_> {
    fn load_trace(&mut self, file: &str) -> Result<Arc<PackedTrace>, TraceLoadError> {
        let text = (self.0)(file)?;
        let mut p = TraceParser::new();
        for line in text.lines() {
            p.push_line(line)?;
        }
        Ok(Arc::new(p.finish()))
    }

    fn load_periods(&mut self, file: &str) -> Result<Arc<PeriodTrace>, TraceLoadError> {
        let text = (self.0)(file)?;
        Ok(Arc::new(PeriodTrace::parse(&text)?))
    }
}

/// A channel error model as configured.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum ErrorModelConfig {
    /// No errors.
    #[default]
    Perfect,
    /// Independent frame loss.
    Independent {
        /// Frame loss probability.
        loss: f64,
    },
    /// Bit errors at exponentially distributed intervals; give exactly one of the means.
    Exponential {
        /// Mean interval in bits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mean_bits: Option<f64>,
        /// Mean interval in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mean_bytes: Option<f64>,
        /// Lose hit frames (default) or deliver them corrupted.
        #[serde(default)]
        effect: Effect,
    },
    /// Two-state burst model, stepped once per frame.
    GilbertElliott(GeParams),
    /// Two-state burst model in continuous time: exponential Good and Bad periods, met by
    /// every frame sent during them (a fading channel; `crate::fading`).
    GilbertElliottTime(GeTimeParams),
    /// Good and Bad periods replayed from a period-trace file, looping (`crate::fading`).
    PeriodTrace {
        /// Path of the period trace (resolved by the caller's loader).
        file: String,
        /// Probability that a frame sent in Good is hit.
        #[serde(default)]
        loss_good: f64,
        /// Probability that a frame sent in Bad is hit.
        #[serde(default = "one")]
        loss_bad: f64,
        /// Lose hit frames (default) or deliver them with one bit inverted.
        #[serde(default)]
        effect: Effect,
    },
    /// `good` frames, then `bad` lost, repeating.
    Pattern {
        /// Frames delivered per cycle.
        good: u64,
        /// Frames lost per cycle.
        bad: u64,
        /// Frames into the cycle at the start.
        #[serde(default)]
        offset: u64,
        /// Frames shorter than this (bytes) pass and are not counted: the pattern meets
        /// data frames only, not a link service's control frames (default 0: every frame).
        #[serde(default, skip_serializing_if = "is_zero")]
        min_bytes: usize,
    },
    /// Independent loss whose probability ramps up from `low` to `high` and back down in time,
    /// with no loss before and after (003 §7, Fig. 12).
    Ramp {
        /// Seconds without loss before the ramp.
        start_s: f64,
        /// Seconds of the rise from `low` to `high`.
        rise_s: f64,
        /// Seconds of the fall back to `low` (default: `rise_s`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fall_s: Option<f64>,
        /// Loss probability at the ends of the ramp (default 0.1, 003 Fig. 12).
        #[serde(default = "ramp_low")]
        low: f64,
        /// Loss probability at the peak (default 0.9, 003 Fig. 12).
        #[serde(default = "ramp_high")]
        high: f64,
        /// Seconds after which the pattern repeats (default 0: once).
        #[serde(default)]
        period_s: f64,
    },
    /// Replay of a per-frame outcome trace file.
    Trace {
        /// Path of the trace (resolved by the caller's loader).
        file: String,
    },
    /// Several models applied to every frame.
    Stack {
        /// The layers, in order.
        layers: Vec<ErrorModelConfig>,
    },
}

/// Serde's default for `loss_bad`: a frame sent in Bad is hit.
pub(crate) fn one() -> f64 {
    1.0
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn ramp_low() -> f64 {
    0.1
}

fn ramp_high() -> f64 {
    0.9
}

fn seconds(key: &str, v: f64) -> Result<mslink_link::Duration, ModelError> {
    if v >= 0.0 && v.is_finite() {
        Ok(mslink_link::Duration::from_secs_f64(v))
    } else {
        Err(ModelError {
            key: key.into(),
            what: format!("{v} is not a duration in seconds (finite, >= 0)"),
        })
    }
}

/// A model configuration that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("error model key `{key}`: {what}")]
pub struct ModelError {
    /// The offending key.
    pub key: String,
    /// What is wrong and what was expected.
    pub what: String,
}

impl From<crate::ParamError> for ModelError {
    fn from(e: crate::ParamError) -> Self {
        ModelError {
            key: e.key,
            what: e.what,
        }
    }
}

fn probability(key: &str, v: f64) -> Result<f64, ModelError> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(ModelError {
            key: key.into(),
            what: format!("{v} is not a probability in [0, 1]"),
        })
    }
}

impl ErrorModelConfig {
    /// Builds the model; `load` returns the text of a trace file or an error saying why not.
    pub fn build(
        &self,
        load: &mut dyn FnMut(&str) -> std::io::Result<String>,
    ) -> Result<Box<dyn ErrorModel>, ModelError> {
        self.build_with(&mut TextLoader(load))
    }

    /// Consequences of valid numbers a user may not expect, one sentence each: a per-frame
    /// Gilbert-Elliott chain that never leaves a state (`r = 0`: once Bad, always Bad, and the
    /// stationary start is Bad; `p = 0`: always Good).
    pub fn notes(&self) -> Vec<String> {
        match self {
            ErrorModelConfig::GilbertElliott(g) if g.r == 0.0 && g.p > 0.0 => vec![format!(
                "gilbert_elliott with r = 0 never leaves Bad, and starts there (its share of Bad, \
                 p / (p + r), is 1): every frame is hit with loss_bad = {}; for bursts, r is \
                 the chance per frame of leaving Bad (mean burst 1/r frames), or give `loss` \
                 and `burst_frames`",
                g.loss_bad
            )],
            ErrorModelConfig::GilbertElliott(g) if g.p == 0.0 => vec![format!(
                "gilbert_elliott with p = 0 never enters Bad: every frame is hit with \
                 loss_good = {}; for bursts, p is the chance per frame of entering Bad",
                g.loss_good
            )],
            ErrorModelConfig::Stack { layers } => layers.iter().flat_map(|l| l.notes()).collect(),
            _ => Vec::new(),
        }
    }

    /// The trace files the model reads, per-frame and period traces alike, as named (each
    /// once, in order of appearance).
    pub fn trace_files(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_trace_files(&mut out);
        out
    }

    fn collect_trace_files<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            ErrorModelConfig::Trace { file } | ErrorModelConfig::PeriodTrace { file, .. }
                if !out.contains(&file.as_str()) =>
            {
                out.push(file)
            }
            ErrorModelConfig::Stack { layers } => {
                for l in layers {
                    l.collect_trace_files(out);
                }
            }
            _ => {}
        }
    }

    /// Builds the model, taking trace files from `traces`.
    pub fn build_with(
        &self,
        traces: &mut dyn TraceLoader,
    ) -> Result<Box<dyn ErrorModel>, ModelError> {
        Ok(match self {
            ErrorModelConfig::Perfect => Box::new(Stack::new(Vec::new())),
            ErrorModelConfig::Independent { loss } => {
                Box::new(Independent::new(probability("loss", *loss)?))
            }
            ErrorModelConfig::Exponential {
                mean_bits,
                mean_bytes,
                effect,
            } => exponential(*mean_bits, *mean_bytes, *effect)?,
            ErrorModelConfig::GilbertElliott(p) => {
                probability("p", p.p)?;
                probability("r", p.r)?;
                probability("loss_good", p.loss_good)?;
                probability("loss_bad", p.loss_bad)?;
                Box::new(GilbertElliott::new(*p))
            }
            ErrorModelConfig::GilbertElliottTime(p) => {
                Box::new(Fading::random(*p).map_err(ModelError::from)?)
            }
            ErrorModelConfig::PeriodTrace {
                file,
                loss_good,
                loss_bad,
                effect,
            } => {
                // The numbers first: a mistake in them is reported without reading the file.
                probability("loss_good", *loss_good)?;
                probability("loss_bad", *loss_bad)?;
                let trace = traces.load_periods(file).map_err(|e| ModelError {
                    key: "file".into(),
                    what: format!("{file}: {e}"),
                })?;
                Box::new(
                    Fading::replay(trace, *loss_good, *loss_bad, *effect).map_err(|e| {
                        ModelError {
                            what: if e.key == "file" {
                                format!("{file}: {}", e.what)
                            } else {
                                e.what
                            },
                            key: e.key,
                        }
                    })?,
                )
            }
            ErrorModelConfig::Pattern {
                good,
                bad,
                offset,
                min_bytes,
            } => Box::new(Pattern::new(*good, *bad, *offset).counting_from(*min_bytes)),
            ErrorModelConfig::Ramp {
                start_s,
                rise_s,
                fall_s,
                low,
                high,
                period_s,
            } => ramp(*start_s, *rise_s, *fall_s, *low, *high, *period_s)?,
            ErrorModelConfig::Trace { file } => replay(file, traces)?,
            ErrorModelConfig::Stack { layers } => Box::new(Stack::new(
                layers
                    .iter()
                    .map(|l| l.build_with(traces))
                    .collect::<Result<_, _>>()?,
            )),
        })
    }
}

/// An exponential error model of `mean_bits` (or `mean_bytes`) between errors.
fn exponential(
    mean_bits: Option<f64>,
    mean_bytes: Option<f64>,
    effect: Effect,
) -> Result<Box<dyn ErrorModel>, ModelError> {
    let mean = match (mean_bits, mean_bytes) {
        (Some(b), None) => b,
        (None, Some(b)) => b * 8.0,
        _ => {
            return Err(ModelError {
                key: "mean_bits".into(),
                what: "give exactly one of `mean_bits` and `mean_bytes`".into(),
            })
        }
    };
    Ok(Box::new(Exponential::new(mean, effect).ok_or_else(
        || {
            ModelError {
                key: if mean_bits.is_some() {
                    "mean_bits"
                } else {
                    "mean_bytes"
                }
                .into(),
                what: format!("mean must be positive and finite, got {mean}"),
            }
        },
    )?))
}

/// A ramp of the loss probability from `low` to `high` and back (`period_s` 0: once).
fn ramp(
    start_s: f64,
    rise_s: f64,
    fall_s: Option<f64>,
    low: f64,
    high: f64,
    period_s: f64,
) -> Result<Box<dyn ErrorModel>, ModelError> {
    let shape = RampShape {
        start: seconds("start_s", start_s)?,
        rise: seconds("rise_s", rise_s)?,
        fall: seconds("fall_s", fall_s.unwrap_or(rise_s))?,
        low: probability("low", low)?,
        high: probability("high", high)?,
        period: seconds("period_s", period_s)?,
    };
    let span = shape.start + shape.rise + shape.fall;
    if shape.period > mslink_link::Duration::ZERO && shape.period < span {
        return Err(ModelError {
            key: "period_s".into(),
            what: format!(
                "{period_s} is shorter than start_s + rise_s + fall_s = {}",
                span.as_secs_f64()
            ),
        });
    }
    Ok(Box::new(Ramp::new(shape)))
}

/// The replay of the error trace `file`, refused when it has no entries.
fn replay(file: &str, traces: &mut dyn TraceLoader) -> Result<Box<dyn ErrorModel>, ModelError> {
    let trace = traces.load_trace(file).map_err(|e| ModelError {
        key: "file".into(),
        what: format!("{file}: {e}"),
    })?;
    if trace.is_empty() {
        // Replaying nothing would be a perfect channel: almost surely not meant.
        return Err(ModelError {
            key: "file".into(),
            what: format!(
                "{file}: the trace has no entries (only blank lines or comments); \
an empty trace would deliver every frame: use `model = \"perfect\"` \
for that, or `mslink trace gen` to make a trace"
            ),
        });
    }
    Ok(Box::new(Replay::packed(trace)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_that_never_leaves_a_state_gets_a_note() {
        let notes = |t: &str| toml::from_str::<ErrorModelConfig>(t).unwrap().notes();
        let stuck = notes("model = 'gilbert_elliott'\np = 0.01\nr = 0");
        assert!(
            stuck.len() == 1 && stuck[0].contains("never leaves Bad"),
            "{stuck:?}"
        );
        let good = notes("model = 'gilbert_elliott'\np = 0\nr = 0.1");
        assert!(
            good.len() == 1 && good[0].contains("never enters Bad"),
            "{good:?}"
        );
        let nested =
            notes("model = 'stack'\nlayers = [{ model = 'gilbert_elliott', p = 0.1, r = 0 }]");
        assert_eq!(nested.len(), 1);
        assert!(notes("model = 'gilbert_elliott'\nloss = 0.02\nburst_frames = 5").is_empty());
    }
    use crate::Outcome;
    use mslink_link::Instant;
    use rand::SeedableRng;

    fn no_files(_: &str) -> std::io::Result<String> {
        Err(std::io::Error::other("no such file"))
    }

    /// The period trace `fade.periods` of the documented form; no other file.
    fn fade_periods(f: &str) -> std::io::Result<String> {
        match f {
            "fade.periods" => Ok("# fade\ngood 0.5\nbad 0.02\n".into()),
            _ => no_files(f),
        }
    }

    #[test]
    fn every_documented_form_parses_and_builds() {
        for text in [
            "model = 'exponential'\nmean_bytes = 32768",
            "model = 'independent'\nloss = 0.05",
            "model = 'gilbert_elliott'\np = 0.01\nr = 0.2\nloss_good = 0.0\nloss_bad = 1.0",
            "model = 'pattern'\ngood = 400\nbad = 100",
            "model = 'perfect'",
            "model = 'ramp'\nstart_s = 50\nrise_s = 400",
            "model = 'ramp'\nstart_s = 1\nrise_s = 2\nfall_s = 3\nlow = 0.2\nhigh = 0.5\nperiod_s = 10",
            "model = 'stack'\nlayers = [{ model = 'independent', loss = 0.1 }, { model = 'pattern', good = 1, bad = 0 }]",
            "model = 'gilbert_elliott_time'\ngood_s = 0.5\nbad_s = 0.02\nloss_good = 0.0\nloss_bad = 1.0\neffect = 'loss'",
            "model = 'gilbert_elliott_time'\ngood_s = 0.5\nbad_s = 0.02",
            "model = 'gilbert_elliott_time'\ngood_s = 2\nbad_s = 1\nloss_bad = 0.3\neffect = 'corrupt'",
            "model = 'period_trace'\nfile = 'fade.periods'\nloss_good = 0.0\nloss_bad = 1.0\neffect = 'loss'",
            "model = 'period_trace'\nfile = 'fade.periods'",
            "model = 'stack'\nlayers = [{ model = 'period_trace', file = 'fade.periods', effect = 'corrupt' }, { model = 'independent', loss = 0.01 }]",
        ] {
            let c: ErrorModelConfig = toml::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            c.build(&mut fade_periods).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    #[test]
    fn defaults_and_round_trip_of_the_time_forms() {
        let c: ErrorModelConfig =
            toml::from_str("model = 'gilbert_elliott_time'\ngood_s = 0.5\nbad_s = 0.02").unwrap();
        let ErrorModelConfig::GilbertElliottTime(p) = &c else {
            panic!("{c:?}")
        };
        assert_eq!(
            (p.loss_good, p.loss_bad, p.effect),
            (0.0, 1.0, Effect::Loss)
        );
        assert!((p.stationary_loss() - 0.02 / 0.52).abs() < 1e-12);
        let c2: ErrorModelConfig = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
        assert_eq!(c2, c);
        let t: ErrorModelConfig =
            toml::from_str("model = 'period_trace'\nfile = 'fade.periods'").unwrap();
        assert_eq!(
            t,
            ErrorModelConfig::PeriodTrace {
                file: "fade.periods".into(),
                loss_good: 0.0,
                loss_bad: 1.0,
                effect: Effect::Loss
            }
        );
        // The period trace is one of the files the configuration needs, each named once.
        let s: ErrorModelConfig = toml::from_str(
            "model = 'stack'\nlayers = [{ model = 'period_trace', file = 'fade.periods' }, \
             { model = 'trace', file = 'w.trace' }, { model = 'period_trace', file = 'fade.periods' }]",
        )
        .unwrap();
        assert_eq!(s.trace_files(), ["fade.periods", "w.trace"]);
        // The file is replayed: Bad from 500 ms for 20 ms.
        let mut m = t.build(&mut fade_periods).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        for (ms, want) in [
            (0, Outcome::Delivered),
            (505, Outcome::Lost),
            (520, Outcome::Delivered),
            (1025, Outcome::Lost),
        ] {
            assert_eq!(
                m.outcome(Instant::from_millis(ms), 10, &mut rng),
                want,
                "{ms} ms"
            );
        }
    }

    #[test]
    fn an_empty_period_trace_is_an_error_not_a_perfect_channel() {
        let c: ErrorModelConfig =
            toml::from_str("model = 'period_trace'\nfile = 'e.periods'").unwrap();
        for text in ["", "\n\n", "# only a comment\n"] {
            let msg = c
                .build(&mut |_| Ok(text.into()))
                .err()
                .expect("refused")
                .to_string();
            assert!(
                msg.contains("`file`") && msg.contains("e.periods") && msg.contains("no periods"),
                "{msg}"
            );
        }
        let msg = c
            .build(&mut |_| Ok("good 1e-12\n".into()))
            .err()
            .expect("refused")
            .to_string();
        assert!(
            msg.contains("e.periods") && msg.contains("lasts no time"),
            "{msg}"
        );
    }

    #[test]
    fn an_empty_trace_file_is_an_error_not_a_perfect_channel() {
        let c: ErrorModelConfig = toml::from_str("model = 'trace'\nfile = 'e.trace'").unwrap();
        for text in ["", "\n\n", "# only a comment\n  # and another\n"] {
            let err = c.build(&mut |_| Ok(text.into())).err().expect("refused");
            let msg = err.to_string();
            assert!(
                msg.contains("e.trace") && msg.contains("no entries"),
                "{msg}"
            );
        }
        assert!(c.build(&mut |_| Ok("loss\nok * 9\n".into())).is_ok());
    }

    #[test]
    fn errors_name_key_file_and_line() {
        let bad = |t: &str| -> String {
            match toml::from_str::<ErrorModelConfig>(t) {
                Err(e) => e.to_string(),
                Ok(c) => c
                    .build(&mut |_| Ok("ok\nlos\n".into()))
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default(),
            }
        };
        assert!(bad("model = 'independent'\nloss = 1.5").contains("`loss`"));
        assert!(bad("model = 'independent'\nlos = 0.1").contains("los"));
        assert!(bad("model = 'exponential'").contains("exactly one"));
        assert!(bad("model = 'exponential'\nmean_bits = -3.0").contains("`mean_bits`"));
        assert!(bad("model = 'gilbert_elliott'\np = 2.0\nr = 0.1").contains("`p`"));
        assert!(bad("model = 'warp'").contains("warp"));
        assert!(bad("model = 'ramp'\nstart_s = 1\nrise_s = -2").contains("`rise_s`"));
        assert!(bad("model = 'ramp'\nstart_s = 1\nrise_s = 2\nhigh = 1.2").contains("`high`"));
        assert!(bad("model = 'ramp'\nstart_s = 1\nrise_s = 2\nperiod_s = 2").contains("`period_s`"));
        assert!(bad("model = 'ramp'\nrise_s = 2").contains("start_s"));
        assert_eq!(bad("model = 'trace'\nfile = 'walls.trace'"), "error model key `file`: walls.trace: line 2: unknown entry \"los\"; expected ok, loss, trunc N or bits P ...");
        assert!(
            bad("model = 'gilbert_elliott_time'\ngood_s = 0\nbad_s = 0.1").contains("`good_s`")
        );
        assert!(
            bad("model = 'gilbert_elliott_time'\ngood_s = 1\nbad_s = -0.1").contains("`bad_s`")
        );
        assert!(bad("model = 'gilbert_elliott_time'\ngood_s = 1\nbad_s = inf").contains("`bad_s`"));
        assert!(
            bad("model = 'gilbert_elliott_time'\ngood_s = 1\nbad_s = 1\nloss_bad = 2")
                .contains("`loss_bad`")
        );
        assert!(bad("model = 'gilbert_elliott_time'\ngood_s = 1").contains("bad_s"));
        assert!(
            bad("model = 'gilbert_elliott_time'\ngood_s = 1\nbad_s = 1\nefect = 'loss'")
                .contains("efect")
        );
        assert!(
            bad("model = 'gilbert_elliott_time'\ngood_s = 1\nbad_s = 1\neffect = 'garble'")
                .contains("garble")
        );
        assert!(bad("model = 'period_trace'\nfile = 'f'\nloss_good = -1").contains("`loss_good`"));
        assert!(bad("model = 'period_trace'").contains("file"));
        let periods = |text: &'static str| {
            let c: ErrorModelConfig =
                toml::from_str("model = 'period_trace'\nfile = 'fade.periods'").unwrap();
            c.build(&mut |_| Ok(text.into())).err().unwrap().to_string()
        };
        assert_eq!(periods("good 1\n\nbda 2\n"), "error model key `file`: fade.periods: line 3: unknown period \"bda\"; expected `good SECONDS` or `bad SECONDS`");
        assert!(periods("good 1\nbad -2\n").contains("fade.periods: line 2: duration \"-2\""));
        let c: ErrorModelConfig = toml::from_str("model = 'period_trace'\nfile = 'y'").unwrap();
        assert!(c
            .build(&mut no_files)
            .err()
            .unwrap()
            .to_string()
            .contains("y: no such file"));
        let c: ErrorModelConfig = toml::from_str("model = 'trace'\nfile = 'x'").unwrap();
        assert!(c
            .build(&mut no_files)
            .err()
            .unwrap()
            .to_string()
            .contains("x: no such file"));
    }

    #[test]
    fn stack_combines_layers() {
        let c: ErrorModelConfig =
            toml::from_str("model = 'stack'\nlayers = [{ model = 'pattern', good = 1, bad = 1 }, { model = 'perfect' }]").unwrap();
        let mut m = c.build(&mut no_files).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        assert_eq!(m.outcome(Instant::ZERO, 10, &mut rng), Outcome::Delivered);
        assert_eq!(m.outcome(Instant::ZERO, 10, &mut rng), Outcome::Lost);
    }
}
