//! Judging claims: a cell's repetitions become an estimate with a Student-t 95% interval
//! (`mslink_stats`), and each expectation is held against the estimates.
//!
//! Contract. A check *holds* when the whole 95% interval of its statistic lies inside the
//! expectation, *fails* when the whole interval lies outside it, and is *inconclusive* when the
//! interval straddles an edge: then [`reps_needed`] says how many repetitions per point would
//! decide it, from the measured spread (Student-t quantiles, standard errors shrinking as
//! 1/sqrt(n)). Two cells are compared pair by pair, repetition r of one against repetition r of
//! the other (`paired_difference`, `paired_ratio` of `mslink_stats`): repetition r of every point
//! has the same seed, so two schemes that behave alike in a repetition are told apart by what
//! differs between them, not by the run-to-run spread they share. An ordering a >= k·b is judged
//! on the interval of a - k·b (holds when it is wholly >= 0, fails when wholly < 0), a ratio on
//! its delta-method interval, a value or a difference on its own; a trend needs every step
//! strictly on its side (equal neighbours of a deterministic run fail). So fewer repetitions
//! (`--quick`) leave more checks inconclusive, never more holding; a deterministic cell (zero
//! spread over its two repetitions) is decided exactly; a cell measured once has no interval and
//! decides nothing. A claim holds when every check holds and fails when one fails; a known
//! difference (`differs`) is reported as such unless every check holds, which makes it "no
//! longer differs": the entry is out of date.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use mslink_sim::stats::{self, Estimate};
use mslink_sim::world::columns::{flow_metric, ColumnType, FLOW_COLUMNS};
use mslink_sim::world::FlowResult;

use super::ledger::{Cell, Claim, Expect};
use super::seqtrace::{self, SeqTrace};

/// How a derived metric is computed from a flow's results.
type Derive = fn(&FlowResult) -> f64;

/// Metrics computed from a flow's fields: 004's delay metric (§IV: "mean packet delay plus its
/// standard deviation"), and the delivered share.
const DERIVED: [(&str, Derive); 2] = [
    ("delay_mean_plus_std_s", |f| f.delay_mean_s + f.delay_std_s),
    ("delivery_rate", |f| 1.0 - f.loss_rate),
];

/// The numeric columns of a flow's results a claim may name (`mslink_sim::world::columns`),
/// and the derived metrics.
pub fn metrics() -> Vec<String> {
    let mut m: Vec<String> = FLOW_COLUMNS
        .iter()
        .filter(|c| c.ty != ColumnType::Text)
        .map(|c| c.name.to_string())
        .collect();
    m.extend(DERIVED.iter().map(|(k, _)| k.to_string()));
    m.extend(seqtrace::METRICS.iter().map(|(k, _)| k.to_string()));
    m
}

/// Refuses a metric that is not a numeric field of the flow results, naming those that are.
pub fn check_metric(m: &str) -> Result<()> {
    let all = metrics();
    if !all.iter().any(|x| x == m) {
        bail!("no metric {m:?} (metrics: {})", all.join(", "));
    }
    Ok(())
}

/// Metric `m` of flow `f` as a number (true = 1).
pub fn metric_of(f: &FlowResult, m: &str) -> Option<f64> {
    if let Some((_, d)) = DERIVED.iter().find(|(k, _)| *k == m) {
        return Some(d(f));
    }
    flow_metric(f, m)
}

/// One repetition of one point: its flows' results and, for a run that captures them, the
/// sequence traces of its TCP flows by flow name ([`seqtrace`]).
#[derive(Debug, Default)]
pub struct Rep {
    /// Flow results.
    pub flows: Vec<FlowResult>,
    /// Sequence traces by flow name (empty unless the run captures them).
    pub seq: BTreeMap<String, SeqTrace>,
    /// A benchmark run's output, the JSON document its command printed ([`super::bench`]).
    pub bench: Option<serde_json::Value>,
}

/// Metric `m` of flow `flow` in repetition `rep`: a field of its results, a derived metric, or
/// a metric of its sequence trace.
pub fn rep_metric(rep: &Rep, flow: &str, m: &str) -> Option<f64> {
    if seqtrace::is_metric(m) {
        return rep.seq.get(flow)?.metric(m);
    }
    let f = rep.flows.iter().find(|f| f.flow == flow)?;
    metric_of(f, m)
}

/// Every repetition of every point of every run, per variant: the baseline (`""`), a claim's
/// counterfactual (`"cf:ID"`) or a mutant (`"mutant:NAME"`). A variant that did not change a
/// run's scenarios has no entries for it and reads the baseline's.
#[derive(Debug, Default)]
pub struct Observations {
    /// (variant, run id, point) -> repetitions in order.
    pub reps: BTreeMap<(String, String, usize), Vec<Rep>>,
}

impl Observations {
    /// The repetitions of `run` at `point` in `variant` (the baseline's where the variant left
    /// the run as it was).
    pub fn get(&self, variant: &str, run: &str, point: usize) -> Option<&Vec<Rep>> {
        self.reps
            .get(&(variant.to_string(), run.to_string(), point))
            .or_else(|| self.reps.get(&(String::new(), run.to_string(), point)))
    }

    /// The repetitions of `run` at `point` in `variant` to add to.
    pub fn entry(&mut self, variant: &str, run: &str, point: usize) -> &mut Vec<Rep> {
        self.reps
            .entry((variant.to_string(), run.to_string(), point))
            .or_default()
    }
}

/// The samples of `cell` in `variant`.
pub fn samples(obs: &Observations, variant: &str, cell: &Cell) -> Vec<f64> {
    obs.get(variant, &cell.run, cell.point)
        .map(|reps| {
            reps.iter()
                .filter_map(|rep| match (&cell.bench, &rep.bench) {
                    (Some(sel), Some(doc)) => super::bench::check(doc, sel, &cell.metric).ok(),
                    (Some(_), None) => None,
                    _ => rep_metric(rep, &cell.flow, &cell.metric),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The estimate of `cell` in `variant` from the observations.
pub fn estimate(obs: &Observations, variant: &str, cell: &Cell) -> Estimate {
    stats::estimate(&samples(obs, variant, cell))
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// The whole interval satisfies the expectation.
    Holds,
    /// The interval straddles the expectation's edge: more repetitions would decide it.
    Inconclusive,
    /// The whole interval contradicts it.
    Fails,
}

impl Mark {
    /// Word shown in reports.
    pub fn word(self) -> &'static str {
        match self {
            Mark::Holds => "holds",
            Mark::Inconclusive => "inconclusive",
            Mark::Fails => "fails",
        }
    }
}

/// One check of a claim, judged.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CheckResult {
    /// The `each` value it was checked at ("" without `each`).
    pub at: String,
    /// Outcome.
    pub mark: Mark,
    /// What was measured and expected, in words and numbers.
    pub text: String,
    /// Repetitions per point that would decide an inconclusive check (none when it is decided,
    /// or when the estimate sits on the expectation's edge or has no spread to scale).
    pub reps_needed: Option<u32>,
    /// The cells' estimates: label, metric, mean, 95% half-width, repetitions.
    pub cells: Vec<CellEstimate>,
}

/// A cell's estimate as reported.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CellEstimate {
    /// Run id.
    pub run: String,
    /// Sweep point index.
    pub point: usize,
    /// Point label.
    pub label: String,
    /// Flow.
    pub flow: String,
    /// Metric.
    pub metric: String,
    /// Mean.
    pub mean: f64,
    /// Half-width of the 95% interval (null when infinite).
    pub ci95: Option<f64>,
    /// Repetitions.
    pub n: usize,
}

/// A claim's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every check holds.
    Holds,
    /// No check fails, but one is undecided at these repetitions.
    Inconclusive,
    /// A check fails.
    Fails,
    /// A known difference from the paper, with its cause.
    Differs,
    /// Marked as a difference, yet every check holds: the entry is out of date.
    NoLongerDiffers,
    /// Nothing here can check it (the reason is given).
    NotCheckable,
}

impl Verdict {
    /// Every verdict, in report order.
    pub const ALL: [Verdict; 6] = [
        Verdict::Holds,
        Verdict::Inconclusive,
        Verdict::Fails,
        Verdict::Differs,
        Verdict::NoLongerDiffers,
        Verdict::NotCheckable,
    ];

    /// Word shown in reports.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Fails => "fails",
            Verdict::Differs => "differs",
            Verdict::NoLongerDiffers => "no longer differs",
            Verdict::NotCheckable => "not checkable",
        }
    }

    /// CSS class and anchor-safe form of the word.
    pub fn class(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Fails => "fails",
            Verdict::Differs => "differs",
            Verdict::NoLongerDiffers => "no-longer-differs",
            Verdict::NotCheckable => "not-checkable",
        }
    }
}

/// Number with 3 significant digits, an interval when finite.
pub fn pm(e: &Estimate) -> String {
    if e.half.is_finite() {
        format!("{} ± {}", sig(e.mean), sig(e.half))
    } else {
        sig(e.mean)
    }
}

/// `x` to 3 significant digits: plain from 0.001 to 10,000, with an SI prefix above (4.69 M),
/// in exponent form below.
pub fn sig(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    for (scale, prefix) in [(1e9, " G"), (1e6, " M"), (1e4, " k")] {
        if a >= scale {
            let k = if prefix == " k" { 1e3 } else { scale };
            return format!("{}{prefix}", sig(x / k));
        }
    }
    if a < 1e-3 {
        return format!("{x:.2e}");
    }
    let digits = (2 - a.log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

fn report(obs: &Observations, variant: &str, c: &Cell) -> (Vec<f64>, Estimate, CellEstimate) {
    let xs = samples(obs, variant, c);
    let e = stats::estimate(&xs);
    (
        xs,
        e,
        CellEstimate {
            run: c.run.clone(),
            point: c.point,
            label: c.label.clone(),
            flow: c.flow.clone(),
            metric: c.metric.clone(),
            mean: e.mean,
            ci95: e.half.is_finite().then_some(e.half),
            n: e.n,
        },
    )
}

/// An ordering: `d` (a - k·b, oriented so that the relation wants d >= 0) with half-width `h`.
fn mark_order(d: f64, h: f64) -> Mark {
    if d.is_nan() || h.is_nan() {
        Mark::Inconclusive
    } else if d - h >= 0.0 {
        Mark::Holds
    } else if d + h < 0.0 {
        Mark::Fails
    } else {
        Mark::Inconclusive
    }
}

/// A trend step: the relation wants d > 0 strictly.
fn mark_step(d: f64, h: f64) -> Mark {
    if d.is_nan() || h.is_nan() {
        Mark::Inconclusive
    } else if d - h > 0.0 {
        Mark::Holds
    } else if d + h <= 0.0 {
        Mark::Fails
    } else {
        Mark::Inconclusive
    }
}

fn mark_range(x: f64, h: f64, [lo, hi]: [f64; 2]) -> Mark {
    if x.is_nan() || h.is_nan() {
        Mark::Inconclusive
    } else if x - h >= lo && x + h <= hi {
        Mark::Holds
    } else if x + h < lo || x - h > hi {
        Mark::Fails
    } else {
        Mark::Inconclusive
    }
}

/// How far `x` is from the edge that decides it against `[lo, hi]`.
fn range_margin(x: f64, [lo, hi]: [f64; 2]) -> f64 {
    if x < lo {
        lo - x
    } else if x > hi {
        x - hi
    } else {
        (x - lo).min(hi - x)
    }
}

/// Repetitions per point that would bring the half-width `h`, measured with `n` repetitions,
/// below `margin`: the smallest m with h · (t(m-1) / t(n-1)) · sqrt(n / m) < margin. None when
/// nothing is to decide (h is 0), when the estimate sits on the edge (margin 0), when one
/// repetition gives no spread to scale, or past 100,000.
pub fn reps_needed(margin: f64, h: f64, n: usize) -> Option<u32> {
    if margin.is_nan() || margin <= 0.0 || !h.is_finite() || h <= 0.0 || n < 2 {
        return None;
    }
    if h < margin {
        return Some(n as u32);
    }
    let t0 = stats::t975((n - 1) as f64);
    let at = |m: usize| h * (stats::t975((m - 1) as f64) / t0) * (n as f64 / m as f64).sqrt();
    let mut hi = n.max(2);
    while at(hi) >= margin {
        hi *= 2;
        if hi > 100_000 {
            return None;
        }
    }
    let mut lo = hi / 2;
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if at(mid) < margin {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi as u32)
}

fn interval(d: f64, h: f64) -> String {
    if h.is_finite() {
        format!("{} ± {}", sig(d), sig(h))
    } else {
        sig(d)
    }
}

/// How cell `c` is named beside `other`: its label, with its metric when the two differ.
fn named(c: &Cell, other: &Cell) -> String {
    if c.metric == other.metric {
        c.label.clone()
    } else {
        format!("{} {}", c.label, c.metric)
    }
}

/// Two cells joined by `op`: "loss 1.5 / loss 0.8 of throughput_bps", or each with its metric
/// when they differ: "ftp probe_segments / ftp stalls".
fn pair(a: &Cell, op: &str, b: &Cell) -> String {
    if a.metric == b.metric {
        format!("{} {op} {} of {}", a.label, b.label, a.metric)
    } else {
        format!("{} {op} {}", named(a, b), named(b, a))
    }
}

fn min_n(cells: &[CellEstimate]) -> usize {
    cells.iter().map(|c| c.n).min().unwrap_or(0)
}

/// Judges one expectation in `variant`.
pub fn judge(obs: &Observations, variant: &str, at: &str, e: &Expect) -> CheckResult {
    let (mark, text, cells, margin, h) = match e {
        Expect::Above(a, b, k) | Expect::Below(a, b, k) => {
            let above = matches!(e, Expect::Above(..));
            let (xa, ea, ca) = report(obs, variant, a);
            let (xb, eb, cb) = report(obs, variant, b);
            let (d, h) = stats::paired_difference(&xa, &xb, *k);
            let d = if above { d } else { -d };
            let rel = if above { "≥" } else { "≤" };
            let k_text = if *k == 1.0 {
                String::new()
            } else {
                format!("{} × ", sig(*k))
            };
            (
                mark_order(d, h),
                format!(
                    "{} {} ({}) {rel} {k_text}{} ({}); margin {}",
                    a.label,
                    a.metric,
                    pm(&ea),
                    named(b, a),
                    pm(&eb),
                    interval(d, h)
                ),
                vec![ca, cb],
                d.abs(),
                h,
            )
        }
        Expect::Ratio(a, b, range) | Expect::Difference(a, b, range) => {
            let (xa, _, ca) = report(obs, variant, a);
            let (xb, _, cb) = report(obs, variant, b);
            let (op, (x, h)) = if matches!(e, Expect::Ratio(..)) {
                ("/", stats::paired_ratio(&xa, &xb))
            } else {
                ("-", stats::paired_difference(&xa, &xb, 1.0))
            };
            (
                mark_range(x, h, *range),
                format!(
                    "{} = {} (expected {} to {})",
                    pair(a, op, b),
                    interval(x, h),
                    sig(range[0]),
                    sig(range[1])
                ),
                vec![ca, cb],
                range_margin(x, *range),
                h,
            )
        }
        Expect::Value(a, range) => {
            let (_, ea, ca) = report(obs, variant, a);
            (
                mark_range(ea.mean, ea.half, *range),
                format!(
                    "{} {} = {} (expected {} to {})",
                    a.label,
                    a.metric,
                    pm(&ea),
                    sig(range[0]),
                    sig(range[1])
                ),
                vec![ca],
                range_margin(ea.mean, *range),
                ea.half,
            )
        }
        Expect::Monotone(cs, decreasing) => {
            let est: Vec<(Vec<f64>, Estimate, CellEstimate)> =
                cs.iter().map(|c| report(obs, variant, c)).collect();
            let mut mark = Mark::Holds;
            // The undecided step that needs the most repetitions decides the count.
            let mut worst: Option<(f64, f64)> = None;
            for w in est.windows(2) {
                let (d, h) = if *decreasing {
                    stats::paired_difference(&w[0].0, &w[1].0, 1.0)
                } else {
                    stats::paired_difference(&w[1].0, &w[0].0, 1.0)
                };
                let m = mark_step(d, h);
                if m == Mark::Inconclusive && worst.is_none_or(|(wm, wh)| d.abs() / h < wm / wh) {
                    worst = Some((d.abs(), h));
                }
                mark = mark.max(m);
            }
            let values: Vec<String> = est.iter().map(|(_, e, _)| pm(e)).collect();
            let (margin, h) = worst.unwrap_or((0.0, 0.0));
            (
                mark,
                format!(
                    "{} {} along {}: {}",
                    cs.first().map_or("", |c| c.metric.as_str()),
                    if *decreasing { "falls" } else { "rises" },
                    cs.iter()
                        .map(|c| c.label.as_str())
                        .collect::<Vec<_>>()
                        .join(" → "),
                    values.join(", ")
                ),
                est.into_iter().map(|(_, _, c)| c).collect(),
                margin,
                h,
            )
        }
    };
    let reps_needed = if mark == Mark::Inconclusive {
        reps_needed(margin, h, min_n(&cells))
    } else {
        None
    };
    CheckResult {
        at: at.to_string(),
        mark,
        text,
        reps_needed,
        cells,
    }
}

/// A counterfactual's outcome: the same checks on runs without the difference's cause.
#[derive(Debug, serde::Serialize)]
pub struct CounterfactualResult {
    /// What it changes, in words.
    pub what: String,
    /// The edits, in words.
    pub edits: String,
    /// Holds: the paper's behaviour appears once the cause is removed.
    pub mark: Mark,
    /// Each check.
    pub checks: Vec<CheckResult>,
}

/// A claim with its verdict and checks.
#[derive(Debug, serde::Serialize)]
pub struct Judged {
    /// Id.
    pub id: String,
    /// Paper.
    pub paper: String,
    /// Section, figure or table.
    #[serde(rename = "where")]
    pub place: String,
    /// The claim in a few words.
    pub says: String,
    /// The paper's words.
    pub quote: String,
    /// The run it was judged on.
    pub run: Option<String>,
    /// Verdict.
    pub verdict: Verdict,
    /// Where the expectation's numbers come from.
    pub band: Option<super::band::Band>,
    /// The same in words.
    pub band_text: Option<String>,
    /// Why it differs, or why it cannot be checked.
    pub reason: Option<String>,
    /// The kind of cause of a difference.
    pub cause: Option<super::ledger::Cause>,
    /// Every cell read comes from a deterministic run (decided exactly).
    pub deterministic: bool,
    /// Repetitions per point that would decide it (the most any inconclusive check needs).
    pub reps_needed: Option<u32>,
    /// Each check.
    pub checks: Vec<CheckResult>,
    /// The difference's counterfactual, judged.
    pub counterfactual: Option<CounterfactualResult>,
}

/// The worst mark of `checks` (holds when there is none).
pub fn overall(checks: &[CheckResult]) -> Mark {
    checks.iter().map(|k| k.mark).max().unwrap_or(Mark::Holds)
}

/// Judges claim `c` in `variant` against the observations; `deterministic(run)` says which
/// runs are.
pub fn judge_claim(
    obs: &Observations,
    variant: &str,
    c: &Claim,
    deterministic: &dyn Fn(&str) -> bool,
) -> Judged {
    let checks: Vec<CheckResult> = c
        .checks
        .iter()
        .map(|(at, e)| judge(obs, variant, at, e))
        .collect();
    let mark = overall(&checks);
    let verdict = if c.not_checkable.is_some() {
        Verdict::NotCheckable
    } else if c.differs.is_some() {
        if mark == Mark::Holds {
            Verdict::NoLongerDiffers
        } else {
            Verdict::Differs
        }
    } else {
        match mark {
            Mark::Holds => Verdict::Holds,
            Mark::Inconclusive => Verdict::Inconclusive,
            Mark::Fails => Verdict::Fails,
        }
    };
    let counterfactual = c
        .differs
        .as_ref()
        .and_then(|d| d.counterfactual.as_ref())
        .map(|cf| {
            let v = format!("cf:{}", c.id);
            let checks: Vec<CheckResult> = c
                .checks
                .iter()
                .map(|(at, e)| judge(obs, &v, at, e))
                .collect();
            CounterfactualResult {
                what: cf.what.clone(),
                edits: cf.edits.describe(),
                mark: overall(&checks),
                checks,
            }
        });
    let runs = c.runs();
    Judged {
        id: c.id.clone(),
        paper: c.paper.clone(),
        place: c.place.clone(),
        says: c.says.clone(),
        quote: c.quote.clone(),
        run: c.run.clone(),
        verdict,
        band_text: c.band.as_ref().map(super::band::Band::describe),
        band: c.band.clone(),
        reason: c
            .differs
            .as_ref()
            .map(|d| d.reason.clone())
            .or_else(|| c.not_checkable.clone()),
        cause: c.differs.as_ref().map(|d| d.cause),
        deterministic: !runs.is_empty() && runs.iter().all(|r| deterministic(r)),
        reps_needed: checks.iter().filter_map(|k| k.reps_needed).max(),
        checks,
        counterfactual,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(cells: &[(usize, &[f64])]) -> Observations {
        let mut o = Observations::default();
        for (point, xs) in cells {
            let reps = xs
                .iter()
                .map(|x| Rep {
                    flows: vec![FlowResult {
                        flow: "f".into(),
                        throughput_bps: *x,
                        ..Default::default()
                    }],
                    ..Rep::default()
                })
                .collect();
            o.reps.insert((String::new(), "p/r".into(), *point), reps);
        }
        o
    }

    fn cell(point: usize) -> Cell {
        Cell {
            run: "p/r".into(),
            point,
            flow: "f".into(),
            metric: "throughput_bps".into(),
            label: format!("point {point}"),
            bench: None,
        }
    }

    fn mark(o: &Observations, e: Expect) -> Mark {
        judge(o, "", "", &e).mark
    }

    #[test]
    fn orderings_hold_only_when_the_whole_interval_does() {
        let o = obs(&[
            (0, &[10.0, 11.0, 12.0]),
            (1, &[5.0, 5.5, 6.0]),
            (2, &[10.5, 12.5, 11.5]),
        ]);
        assert_eq!(mark(&o, Expect::Above(cell(0), cell(1), 1.0)), Mark::Holds);
        assert_eq!(mark(&o, Expect::Below(cell(0), cell(1), 1.0)), Mark::Fails);
        // 11 vs 11.5 with overlapping spreads: undecided, and more repetitions would tell.
        let k = judge(&o, "", "", &Expect::Above(cell(0), cell(2), 1.0));
        assert_eq!(k.mark, Mark::Inconclusive);
        assert!(k.reps_needed.is_some_and(|n| n > 3), "{:?}", k.reps_needed);
        // Pair by pair each repetition of point 0 is exactly twice point 1's: decided at once,
        // where the unpaired spreads of the two points would straddle 0.
        assert_eq!(mark(&o, Expect::Above(cell(0), cell(1), 2.0)), Mark::Holds);
        assert_eq!(
            mark(&o, Expect::Ratio(cell(0), cell(1), [2.0, 2.0])),
            Mark::Holds
        );
        assert_eq!(mark(&o, Expect::Above(cell(1), cell(0), 1.0)), Mark::Fails);
    }

    #[test]
    fn deterministic_cells_are_decided_exactly() {
        let o = obs(&[(0, &[4.0, 4.0]), (1, &[4.1, 4.1]), (2, &[4.0, 4.0])]);
        assert_eq!(mark(&o, Expect::Above(cell(0), cell(1), 1.0)), Mark::Fails);
        assert_eq!(mark(&o, Expect::Above(cell(0), cell(2), 1.0)), Mark::Holds);
        assert_eq!(
            mark(&o, Expect::Ratio(cell(0), cell(1), [0.9, 0.97])),
            Mark::Fails
        );
        assert_eq!(
            mark(&o, Expect::Ratio(cell(0), cell(1), [0.9, 0.98])),
            Mark::Holds
        );
        assert_eq!(mark(&o, Expect::Value(cell(1), [4.2, 5.0])), Mark::Fails);
        let k = judge(&o, "", "", &Expect::Value(cell(1), [4.0, 5.0]));
        assert_eq!((k.mark, k.reps_needed), (Mark::Holds, None));
    }

    #[test]
    fn one_repetition_decides_nothing() {
        let o = obs(&[(0, &[4.0]), (1, &[4.1])]);
        for e in [
            Expect::Above(cell(0), cell(1), 1.0),
            Expect::Value(cell(0), [4.05, 5.0]),
            Expect::Value(cell(0), [3.0, 4.5]),
        ] {
            let k = judge(&o, "", "", &e);
            assert_eq!((k.mark, k.reps_needed), (Mark::Inconclusive, None), "{e:?}");
        }
    }

    #[test]
    fn monotone_trends_need_every_step() {
        let o = obs(&[
            (0, &[9.0, 9.0]),
            (1, &[7.0, 7.0]),
            (2, &[7.0, 7.0]),
            (3, &[3.0, 3.0]),
        ]);
        let down = Expect::Monotone(vec![cell(0), cell(1), cell(3)], true);
        assert_eq!(mark(&o, down), Mark::Holds);
        let flat = Expect::Monotone(vec![cell(0), cell(1), cell(2)], true);
        assert_eq!(mark(&o, flat), Mark::Fails);
        let up = Expect::Monotone(vec![cell(3), cell(1)], false);
        assert_eq!(mark(&o, up), Mark::Holds);
    }

    #[test]
    fn fewer_repetitions_leave_more_undecided_never_more_holding() {
        // The same means; two repetitions (t = 12.7) cannot decide what five (t = 2.78) do.
        let few = obs(&[(0, &[10.0, 12.0]), (1, &[11.0, 13.0])]);
        let many = obs(&[
            (0, &[10.0, 12.0, 10.0, 12.0, 11.0]),
            (1, &[12.0, 12.0, 12.0, 12.0, 12.0]),
        ]);
        assert_eq!(
            mark(&few, Expect::Value(cell(0), [14.0, 20.0])),
            Mark::Inconclusive
        );
        assert_eq!(
            mark(&many, Expect::Value(cell(0), [14.0, 20.0])),
            Mark::Fails
        );
        assert_eq!(
            mark(&few, Expect::Value(cell(0), [0.0, 100.0])),
            Mark::Inconclusive
        );
        assert_eq!(
            mark(&many, Expect::Value(cell(0), [0.0, 100.0])),
            Mark::Holds
        );
    }

    #[test]
    fn the_repetitions_needed_follow_the_t_quantiles() {
        // Half-width 2 at n = 5 (t = 2.776): below 1 needs sd·t(m-1)/sqrt(m) < 1 with
        // sd = 2·sqrt(5)/2.776 = 1.611: m = 13 (t(12) = 2.179: 1.611·2.179/3.606 = 0.974).
        assert_eq!(reps_needed(1.0, 2.0, 5), Some(13));
        assert_eq!(reps_needed(0.0, 2.0, 5), None);
        assert_eq!(reps_needed(1.0, f64::INFINITY, 1), None);
        assert_eq!(reps_needed(1.0, 0.5, 5), Some(5));
        assert_eq!(reps_needed(1e-9, 2.0, 5), None);
    }

    #[test]
    fn a_difference_whose_checks_hold_no_longer_differs() {
        use super::super::ledger::{Cause, Claim, Differs};
        let o = obs(&[(0, &[10.0, 10.0]), (1, &[5.0, 5.0])]);
        let mut c = Claim {
            id: "x".into(),
            paper: "004".into(),
            place: String::new(),
            says: String::new(),
            quote: "q".into(),
            run: Some("p/r".into()),
            checks: vec![(String::new(), Expect::Above(cell(0), cell(1), 1.0))],
            band: None,
            differs: Some(Differs {
                reason: "r".into(),
                cause: Cause::Open,
                counterfactual: None,
            }),
            not_checkable: None,
        };
        let det = |_: &str| true;
        let j = judge_claim(&o, "", &c, &det);
        assert_eq!(j.verdict, Verdict::NoLongerDiffers);
        assert!(j.deterministic);
        c.checks = vec![(String::new(), Expect::Below(cell(0), cell(1), 1.0))];
        assert_eq!(judge_claim(&o, "", &c, &det).verdict, Verdict::Differs);
        c.differs = None;
        assert_eq!(judge_claim(&o, "", &c, &det).verdict, Verdict::Fails);
    }

    #[test]
    fn numbers_read_at_three_significant_digits() {
        assert_eq!(sig(4_693_627.0), "4.69 M");
        assert_eq!(sig(40_721.0), "40.7 k");
        assert_eq!(sig(1234.0), "1234");
        assert_eq!(sig(0.00712), "0.00712");
        assert_eq!(sig(6.1e-4), "6.10e-4");
        assert_eq!(sig(-2.5), "-2.50");
        assert_eq!(sig(0.0), "0");
    }

    #[test]
    fn metrics_are_the_numeric_flow_fields() {
        let m = metrics();
        for k in [
            "throughput_bps",
            "loss_rate",
            "delay_mean_s",
            "completed",
            "timeouts",
        ] {
            assert!(m.iter().any(|x| x == k), "{k} in {m:?}");
        }
        assert!(check_metric("flow").is_err());
        assert!(check_metric("throughput")
            .unwrap_err()
            .to_string()
            .contains("throughput_bps"));
    }

    #[test]
    fn sequence_metrics_come_from_the_flow_trace() {
        let mut t = SeqTrace::default();
        t.push(0.0, 0, 100);
        t.push(2.0, 0, 100); // the timer resends it: a probe
        t.push(2.1, 100, 100);
        let rep = Rep {
            flows: vec![FlowResult {
                flow: "f".into(),
                ..Default::default()
            }],
            seq: BTreeMap::from([("f".to_string(), t)]),
            bench: None,
        };
        assert_eq!(rep_metric(&rep, "f", "probe_segments"), Some(1.0));
        assert_eq!(rep_metric(&rep, "f", "stalls"), Some(1.0));
        assert_eq!(rep_metric(&rep, "g", "stalls"), None);
        assert!(check_metric("longest_stall_s").is_ok());
        assert!(check_metric("retransmitted_share").is_ok());
    }
}
