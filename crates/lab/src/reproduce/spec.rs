//! The claims ledger as written: the serde shapes of `claims/<paper>.toml`, before anything is
//! resolved against scenarios (docs/reproduce.md describes every key).
//!
//! Contract. Unknown keys are refused (`deny_unknown_fields`) so a misspelt key is an error
//! naming it, not a silently ignored expectation. Nothing here checks consistency between keys;
//! [`super::ledger`] and [`super::band`] do, naming the file, the claim and the key.

use std::collections::BTreeMap;

/// One ledger file as written.
#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSpec {
    pub paper: String,
    pub title: String,
    #[serde(default)]
    pub run: BTreeMap<String, RunSpec>,
    #[serde(default)]
    pub claim: Vec<ClaimSpec>,
}

/// Repetitions and overrides of one mode (full or quick).
#[derive(serde::Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct ModeSpec {
    /// Repetitions per sweep point.
    pub reps: Option<u32>,
    /// Overrides (scenario key -> value).
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
}

/// `[run.NAME]` as written.
#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct RunSpec {
    pub scenario: Option<String>,
    /// Arguments to the mslink binary for a benchmark run, instead of a scenario.
    pub bench: Option<Vec<String>>,
    pub reps: Option<u32>,
    /// Nothing random reaches the cells: made twice, the two must agree, judged exactly.
    #[serde(default)]
    pub deterministic: bool,
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
    #[serde(default)]
    pub quick: ModeSpec,
    pub sweep: Option<toml::Table>,
    pub flow: Option<String>,
    #[serde(default)]
    pub axis: BTreeMap<String, AxisSpec>,
    pub figure: Option<FigureSpec>,
    #[serde(default)]
    pub figures: Vec<FigureSpec>,
}

/// `[run.NAME.axis.ALIAS]`: a sweep key under a short name, with reader-facing values.
#[derive(serde::Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    /// The sweep key.
    pub key: String,
    /// Axis label with its unit, e.g. "frame loss (%)".
    pub label: String,
    /// What each sweep value is called, in the sweep's order (numbers plot on a numeric axis).
    pub values: Vec<toml::Value>,
}

/// What a figure shows.
#[derive(serde::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FigureKind {
    /// A metric against a sweep axis: mean and 95% interval per point.
    #[default]
    Metric,
    /// The TCP sequence-number trace of one repetition of one point (003 Figs. 2, 4, 7):
    /// every data segment the flow's sender put on its hop, new data and retransmissions
    /// marked apart ([`super::seqtrace`]).
    Seq,
}

/// `[run.NAME.figure]` (or each of `[[run.NAME.figures]]`): a paper's figure drawn from this
/// run.
#[derive(serde::Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    /// `"metric"` (the default) or `"seq"`.
    #[serde(default)]
    pub kind: FigureKind,
    /// Caption, e.g. "004 Fig. 2: FTP over one WLAN link".
    pub title: String,
    /// Axis alias on x (metric figures).
    pub x: Option<String>,
    /// Axis alias giving one line per value (none: one line).
    pub series: Option<String>,
    /// Metric on y (metric figures).
    pub metric: Option<String>,
    /// y label with unit (metric figures; a sequence figure's is fixed).
    pub y_label: Option<String>,
    /// Factor from the metric's unit to the label's (1e-6: bit/s to Mbit/s).
    #[serde(default = "one")]
    pub y_scale: f64,
    /// The flow drawn (default: the run's).
    pub flow: Option<String>,
    /// Values of other axes this figure holds fixed.
    #[serde(default)]
    pub fixed: BTreeMap<String, toml::Value>,
    /// y on a logarithmic axis (powers of ten).
    #[serde(default)]
    pub log_y: bool,
    /// The paper's own numbers where it prints them: series value -> y per x, in x order, in
    /// the label's unit (after `y_scale`); `nan` where it gives none at that x.
    #[serde(default)]
    pub paper: BTreeMap<String, Vec<f64>>,
    /// Sequence figures: the point drawn, a value for every axis of the run.
    #[serde(default)]
    pub at: BTreeMap<String, toml::Value>,
    /// Sequence figures: the repetition drawn (default 0).
    #[serde(default)]
    pub rep: u32,
    /// Sequence figures: the time window drawn, seconds (default: the whole transfer).
    pub from_s: Option<f64>,
    /// End of that window.
    pub to_s: Option<f64>,
}

fn one() -> f64 {
    1.0
}

/// The paper's number: one value, or a range the paper gives ("between 61.7% and 62.4%").
#[derive(serde::Deserialize, Debug, Clone, Copy)]
#[serde(untagged)]
pub(super) enum PaperValue {
    One(f64),
    Range([f64; 2]),
}

impl PaperValue {
    /// (lowest, highest).
    pub fn bounds(self) -> [f64; 2] {
        match self {
            PaperValue::One(x) => [x, x],
            PaperValue::Range([a, b]) => [a.min(b), a.max(b)],
        }
    }
}

/// `precision = { pm = X, how = "..." }`: how precisely the paper's number can be read.
#[derive(serde::Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct PrecisionSpec {
    pub pm: f64,
    pub how: String,
}

/// `allowance = { pm = X, why = "..." }`: a model allowance the claim states and justifies.
#[derive(serde::Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct AllowanceSpec {
    pub pm: f64,
    pub why: String,
}

/// One scenario edit as written: every table holding `tables_with` gets `set`, or is
/// replaced by `replace`.
#[derive(serde::Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct EditSpec {
    /// Key = value pairs a table must hold to be edited (`"*"` matches any value).
    pub tables_with: toml::Table,
    /// Keys set inside each matching table (dotted paths relative to it).
    pub set: Option<toml::Table>,
    /// The table that replaces each matching table.
    pub replace: Option<toml::Table>,
}

/// `counterfactual = { what, set, edit }` of a `differs` claim.
#[derive(serde::Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct CounterfactualSpec {
    pub what: String,
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
    #[serde(default)]
    pub edit: Vec<EditSpec>,
}

/// A `[[claim]]` as written.
#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct ClaimSpec {
    pub id: String,
    #[serde(rename = "where")]
    pub place: String,
    pub says: String,
    pub quote: Option<String>,
    pub run: Option<String>,
    pub metric: Option<String>,
    pub flow: Option<String>,
    pub rows: Option<String>,
    pub each: Option<String>,
    pub each_values: Option<Vec<toml::Value>>,
    pub above: Option<[toml::Table; 2]>,
    pub below: Option<[toml::Table; 2]>,
    pub factor: Option<f64>,
    pub ratio: Option<[toml::Table; 2]>,
    pub difference: Option<[toml::Table; 2]>,
    pub value: Option<toml::Table>,
    pub within: Option<[f64; 2]>,
    pub monotone: Option<String>,
    pub along: Option<String>,
    pub at: Option<toml::Table>,
    pub paper: Option<PaperValue>,
    pub precision: Option<PrecisionSpec>,
    pub allowance: Option<AllowanceSpec>,
    pub band_reason: Option<String>,
    pub differs: Option<String>,
    pub cause: Option<String>,
    pub counterfactual: Option<CounterfactualSpec>,
    pub not_checkable: Option<String>,
}
