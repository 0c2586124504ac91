//! Judging claims: a cell's repetitions become an estimate with a Student-t 95% interval
//! (`mslink_sim::stats`), and each expectation is held against the estimates.
//!
//! Contract. A relation is judged with the tolerance its statistics give, and no other: an
//! ordering "a above b" *holds* when a - b is positive, holds *within noise* when it is not but
//! the 95% interval of a - b (Welch) still reaches zero, and *fails* when the whole interval is
//! below zero; a value or ratio holds when its interval meets the expected range. So fewer
//! repetitions (`--quick`) widen every tolerance by exactly what the statistics justify, and a
//! deterministic cell (zero variance) is judged strictly, as is a cell measured once (no interval
//! can be estimated from one repetition). A claim holds when every one of its
//! checks does; a claim marked as a known difference is reported as such, with its checks.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use mslink_sim::stats::{self, Estimate};
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

/// The numeric fields of a flow's results a claim may name, and the derived metrics.
pub fn metrics() -> Vec<String> {
    let v = serde_json::to_value(FlowResult::default()).unwrap_or_default();
    let mut m: Vec<String> = v
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(_, x)| x.is_number() || x.is_boolean())
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
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
    let v = serde_json::to_value(f).ok()?;
    let x = v.get(m)?;
    x.as_f64()
        .or_else(|| x.as_bool().map(|b| f64::from(u8::from(b))))
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

/// Every repetition of every point of every run: (run id, point) -> reps.
pub type Observations = BTreeMap<(String, usize), Vec<Rep>>;

/// The estimate of `cell` from the observations (missing ones are a bug in the planner).
pub fn estimate(obs: &Observations, cell: &Cell) -> Estimate {
    let xs: Vec<f64> = obs
        .get(&(cell.run.clone(), cell.point))
        .map(|reps| {
            reps.iter()
                .filter_map(|rep| match (&cell.bench, &rep.bench) {
                    (Some(sel), Some(doc)) => super::bench::check(doc, sel, &cell.metric).ok(),
                    (Some(_), None) => None,
                    _ => rep_metric(rep, &cell.flow, &cell.metric),
                })
                .collect()
        })
        .unwrap_or_default();
    stats::estimate(&xs)
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// The estimate satisfies the relation.
    Holds,
    /// It does not, but the 95% interval still reaches the relation.
    WithinNoise,
    /// The whole interval contradicts it.
    Fails,
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
    /// The cells' estimates: label, metric, mean, 95% half-width, repetitions.
    pub cells: Vec<CellEstimate>,
}

/// A cell's estimate as reported.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CellEstimate {
    /// Run id.
    pub run: String,
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
    /// Every check holds (possibly within noise).
    Holds,
    /// A check fails.
    Fails,
    /// A deliberate, documented difference from the paper.
    Differs,
    /// Nothing here can check it (the reason is given).
    NotCheckable,
}

impl Verdict {
    /// Word shown in reports.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Fails => "fails",
            Verdict::Differs => "differs",
            Verdict::NotCheckable => "not checkable",
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

fn report(obs: &Observations, c: &Cell) -> (Estimate, CellEstimate) {
    let e = estimate(obs, c);
    (
        e,
        CellEstimate {
            run: c.run.clone(),
            label: c.label.clone(),
            flow: c.flow.clone(),
            metric: c.metric.clone(),
            mean: e.mean,
            ci95: e.half.is_finite().then_some(e.half),
            n: e.n,
        },
    )
}

/// The tolerance an interval half-width gives: none when there is no interval (one
/// repetition cannot estimate its noise, so it is judged strictly rather than excused).
fn tolerance(h: f64) -> f64 {
    if h.is_finite() {
        h
    } else {
        0.0
    }
}

fn mark_order(d: f64, h: f64) -> Mark {
    let h = tolerance(h);
    if d >= 0.0 {
        Mark::Holds
    } else if d + h >= 0.0 {
        Mark::WithinNoise
    } else {
        Mark::Fails
    }
}

fn mark_range(x: f64, h: f64, [lo, hi]: [f64; 2]) -> Mark {
    let h = tolerance(h);
    if (lo..=hi).contains(&x) {
        Mark::Holds
    } else if x + h >= lo && x - h <= hi {
        Mark::WithinNoise
    } else {
        Mark::Fails
    }
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

/// Judges one expectation.
pub fn judge(obs: &Observations, at: &str, e: &Expect) -> CheckResult {
    let (mark, text, cells) = match e {
        Expect::Above(a, b, k) | Expect::Below(a, b, k) => {
            let above = matches!(e, Expect::Above(..));
            let (ea, ca) = report(obs, a);
            let (eb, cb) = report(obs, b);
            let (d, h) = if above {
                stats::difference(&ea, &eb, *k)
            } else {
                let (d, h) = stats::difference(&ea, &eb, *k);
                (-d, h)
            };
            let rel = if above { "≥" } else { "≤" };
            let b_label = named(b, a);
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
                    b_label,
                    pm(&eb),
                    interval(d, h)
                ),
                vec![ca, cb],
            )
        }
        Expect::Ratio(a, b, range) => {
            let (ea, ca) = report(obs, a);
            let (eb, cb) = report(obs, b);
            let (r, h) = stats::ratio(&ea, &eb);
            (
                mark_range(r, h, *range),
                format!(
                    "{} = {} (expected {} to {})",
                    pair(a, "/", b),
                    interval(r, h),
                    sig(range[0]),
                    sig(range[1])
                ),
                vec![ca, cb],
            )
        }
        Expect::Difference(a, b, range) => {
            let (ea, ca) = report(obs, a);
            let (eb, cb) = report(obs, b);
            let (d, h) = stats::difference(&ea, &eb, 1.0);
            (
                mark_range(d, h, *range),
                format!(
                    "{} = {} (expected {} to {})",
                    pair(a, "-", b),
                    interval(d, h),
                    sig(range[0]),
                    sig(range[1])
                ),
                vec![ca, cb],
            )
        }
        Expect::Value(a, range) => {
            let (ea, ca) = report(obs, a);
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
            )
        }
        Expect::Monotone(cs, decreasing) => {
            let est: Vec<(Estimate, CellEstimate)> = cs.iter().map(|c| report(obs, c)).collect();
            let mut mark = Mark::Holds;
            for w in est.windows(2) {
                let (d, h) = if *decreasing {
                    stats::difference(&w[0].0, &w[1].0, 1.0)
                } else {
                    stats::difference(&w[1].0, &w[0].0, 1.0)
                };
                // Strictly: equal neighbours do not make a trend.
                let m = if d > 0.0 {
                    Mark::Holds
                } else {
                    mark_order(d.min(-f64::MIN_POSITIVE), h)
                };
                mark = mark.max(m);
            }
            let values: Vec<String> = est.iter().map(|(e, _)| pm(e)).collect();
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
                est.into_iter().map(|(_, c)| c).collect(),
            )
        }
    };
    CheckResult {
        at: at.to_string(),
        mark,
        text,
        cells,
    }
}

impl PartialOrd for Mark {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Mark {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let rank = |m: &Mark| match m {
            Mark::Holds => 0,
            Mark::WithinNoise => 1,
            Mark::Fails => 2,
        };
        rank(self).cmp(&rank(other))
    }
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
    /// The claim.
    pub says: String,
    /// The run it was judged on.
    pub run: Option<String>,
    /// Verdict.
    pub verdict: Verdict,
    /// Why it differs, or why it cannot be checked.
    pub reason: Option<String>,
    /// Each check.
    pub checks: Vec<CheckResult>,
}

/// Judges a claim against the observations.
pub fn judge_claim(obs: &Observations, c: &Claim) -> Judged {
    let checks: Vec<CheckResult> = c.checks.iter().map(|(at, e)| judge(obs, at, e)).collect();
    let verdict = if c.not_checkable.is_some() {
        Verdict::NotCheckable
    } else if c.differs.is_some() {
        Verdict::Differs
    } else if checks.iter().any(|k| k.mark == Mark::Fails) {
        Verdict::Fails
    } else {
        Verdict::Holds
    };
    Judged {
        id: c.id.clone(),
        paper: c.paper.clone(),
        place: c.place.clone(),
        says: c.says.clone(),
        run: c.run.clone(),
        verdict,
        reason: c.differs.clone().or_else(|| c.not_checkable.clone()),
        checks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(cells: &[(usize, &[f64])]) -> Observations {
        let mut o = Observations::new();
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
            o.insert(("p/r".into(), *point), reps);
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

    #[test]
    fn orderings_hold_fail_or_stay_within_noise() {
        let o = obs(&[
            (0, &[10.0, 11.0, 12.0]),
            (1, &[5.0, 5.5, 6.0]),
            (2, &[10.5, 12.5, 11.5]),
        ]);
        assert_eq!(
            judge(&o, "", &Expect::Above(cell(0), cell(1), 1.0)).mark,
            Mark::Holds
        );
        assert_eq!(
            judge(&o, "", &Expect::Below(cell(0), cell(1), 1.0)).mark,
            Mark::Fails
        );
        // 11 vs 11.5 with overlapping spreads: not a contradiction at 95%.
        assert_eq!(
            judge(&o, "", &Expect::Above(cell(0), cell(2), 1.0)).mark,
            Mark::WithinNoise
        );
        // 11 ≥ 2 × 5.5 exactly.
        assert_eq!(
            judge(&o, "", &Expect::Above(cell(0), cell(1), 2.0)).mark,
            Mark::Holds
        );
        assert_eq!(
            judge(&o, "", &Expect::Above(cell(1), cell(0), 1.0)).mark,
            Mark::Fails
        );
    }

    #[test]
    fn deterministic_cells_are_judged_strictly() {
        let o = obs(&[(0, &[4.0, 4.0]), (1, &[4.1, 4.1])]);
        assert_eq!(
            judge(&o, "", &Expect::Above(cell(0), cell(1), 1.0)).mark,
            Mark::Fails
        );
        assert_eq!(
            judge(&o, "", &Expect::Ratio(cell(0), cell(1), [0.9, 0.97])).mark,
            Mark::Fails
        );
        assert_eq!(
            judge(&o, "", &Expect::Ratio(cell(0), cell(1), [0.9, 0.98])).mark,
            Mark::Holds
        );
        assert_eq!(
            judge(&o, "", &Expect::Value(cell(1), [4.2, 5.0])).mark,
            Mark::Fails
        );
    }

    #[test]
    fn one_repetition_is_judged_without_tolerance() {
        let o = obs(&[(0, &[4.0]), (1, &[4.1])]);
        assert_eq!(
            judge(&o, "", &Expect::Above(cell(0), cell(1), 1.0)).mark,
            Mark::Fails
        );
        assert_eq!(
            judge(&o, "", &Expect::Value(cell(0), [4.05, 5.0])).mark,
            Mark::Fails
        );
        assert_eq!(
            judge(&o, "", &Expect::Value(cell(0), [3.0, 4.0])).mark,
            Mark::Holds
        );
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
        assert_eq!(judge(&o, "", &down).mark, Mark::Holds);
        let flat = Expect::Monotone(vec![cell(0), cell(1), cell(2)], true);
        assert_eq!(judge(&o, "", &flat).mark, Mark::Fails);
        let up = Expect::Monotone(vec![cell(3), cell(1)], false);
        assert_eq!(judge(&o, "", &up).mark, Mark::Holds);
    }

    #[test]
    fn fewer_repetitions_widen_the_tolerance() {
        // The same means; two repetitions (t = 12.7) cannot contradict what five (t = 2.78) do.
        let few = obs(&[(0, &[10.0, 12.0]), (1, &[11.0, 13.0])]);
        let many = obs(&[
            (0, &[10.0, 12.0, 10.0, 12.0, 11.0]),
            (1, &[12.0, 12.0, 12.0, 12.0, 12.0]),
        ]);
        assert_eq!(
            judge(&few, "", &Expect::Value(cell(0), [14.0, 20.0])).mark,
            Mark::WithinNoise
        );
        assert_eq!(
            judge(&many, "", &Expect::Value(cell(0), [14.0, 20.0])).mark,
            Mark::Fails
        );
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
