//! Plots of `mslink sim` results as PNG and SVG, drawn with plotters so the CLI needs no
//! Python.
//!
//! Contract. [`SimPlots`] gathers the results of one `mslink sim` invocation run by run, as
//! the runs finish, and writes files under `DIR/plots/`, returning their paths ([`write_plots`]
//! does it for runs held all at once):
//!
//! * `timeseries_p<point>.png|svg`, for each sweep point whose runs have a moving-window series:
//!   throughput of every flow against time, averaged over the repetitions (003 Figs. 11-12);
//! * `sweep_<metric>.png|svg` when the scenario has more than one sweep point, for `throughput`,
//!   `loss_rate` and `delay_mean`: the metric of every flow (and every combination of the other
//!   sweep keys) against the swept parameter, mean over repetitions with Student-t 95%
//!   confidence intervals as error bars (none for one repetition; 004 Figs. 2, 7-10), and
//!   `delay_p95` when datagram flows report delay percentiles. The x axis is the first sweep
//!   key whose values are all numbers (and differ); without one, the first key that varies, as
//!   categories. A key that sets wireless segments' error models is drawn as the frame loss it
//!   gave, in percent, measured in the runs ([`measured_frame_loss`]), as the papers draw it.
//!   Values are named by `mslink_sim::labels` ("SR (OOS RLP)").
//!
//! Output is a pure function of the results: the same results give byte-identical files (no
//! timestamps, no system fonts: the drawing is [`crate::chart`]'s, with its embedded font).
//! Many flows are capped at [`MAX_LINES`] lines per chart, named in the title.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mslink_sim::RunResult;

use crate::axes::{key_title, metric_axis, rate_unit, Flows};
use crate::chart::{save, Chart, Line, Scale};
use crate::{io, PlotError};

/// Most lines drawn in one chart (the rest are left out and the title says so).
pub const MAX_LINES: usize = 12;
/// Most sweep points that get a time-series chart each.
pub const MAX_TIMESERIES_CHARTS: usize = 64;

/// What the plots are drawn from, all at once (see [`SimPlots`] to feed runs as they finish).
pub struct PlotInput<'a> {
    /// Scenario name (chart titles).
    pub scenario: &'a str,
    /// Sweep keys, in the order of each point's values.
    pub keys: &'a [String],
    /// Sweep points: `(key, value)` per key.
    pub points: &'a [Vec<(String, String)>],
    /// Every run with its sweep point.
    pub runs: Vec<(usize, &'a RunResult)>,
}

/// Values over repetitions, per x (as `f64` bits, ordered) and series name.
type Series = BTreeMap<String, BTreeMap<u64, Vec<f64>>>;
/// A flow metric for the sweep charts.
type Metric = fn(&mslink_sim::world::FlowResult) -> f64;

/// The sweep charts' metrics: file stem, `flows.csv` column (its axis: [`metric_axis`]),
/// value. The last one is drawn only when some datagram flow has delay percentiles (TCP flows
/// report zeros).
const SWEEP_METRICS: [(&str, &str, Metric); 4] = [
    ("throughput", "throughput_bps", |f| f.throughput_bps),
    ("loss_rate", "loss_rate", |f| f.loss_rate),
    ("delay_mean", "delay_mean_s", |f| f.delay_mean_s),
    ("delay_p95", "delay_p95_s", |f| f.delay_p95_s),
];

/// Writes every plot of `input` under `dir/plots`; returns the files written.
pub fn write_plots(dir: &Path, input: &PlotInput) -> Result<Vec<PathBuf>, PlotError> {
    let mut plots = SimPlots::new(input.scenario, input.keys, input.points);
    for (point, r) in &input.runs {
        plots.add(*point, r);
    }
    plots.write(dir)
}

/// The plots of one `mslink sim` invocation, gathered run by run as the runs finish (in job
/// order), holding what the charts draw and nothing that grows with the repetitions beyond
/// their values: the drawn flows' series, each drawn sweep line's metrics per point and
/// repetition, and counts of the rest.
pub struct SimPlots<'a> {
    scenario: &'a str,
    keys: &'a [String],
    points: &'a [Vec<(String, String)>],
    timeseries: BTreeMap<usize, PointSeries>,
    sweep: Option<SweepAcc>,
}

/// What the sweep charts gather.
struct SweepAcc {
    /// The x key.
    xi: usize,
    categorical: bool,
    /// Wireless segments whose error model the x key sets (none: not a loss axis).
    loss_segments: Vec<usize>,
    /// x value -> segment -> per direction: frames damaged, sent, bytes sent.
    frames: BTreeMap<String, BTreeMap<usize, [Frames; 2]>>,
    /// Series labels in first-seen order, the first [`MAX_LINES`] only.
    order: Vec<String>,
    /// Every label seen (for the title's count).
    seen: std::collections::HashSet<String>,
    /// Drawn label -> point -> per repetition, each metric of [`SWEEP_METRICS`].
    values: BTreeMap<String, BTreeMap<usize, Vec<[f64; 4]>>>,
    /// Largest throughput of any flow, drawn or not (the unit of the y axis).
    max_throughput: f64,
    /// Some flow has delay percentiles.
    any_p95: bool,
    /// The kinds of flow drawn (what `loss_rate` and `delay_mean_s` mean).
    flows: Flows,
    /// Runs of point 0 (the repetitions).
    reps: usize,
}

impl<'a> SimPlots<'a> {
    /// Plots of scenario `scenario` swept over `keys` at `points`.
    pub fn new(scenario: &'a str, keys: &'a [String], points: &'a [Vec<(String, String)>]) -> Self {
        let sweep = (points.len() > 1)
            .then(|| sweep_axis(keys, points))
            .flatten()
            .map(|(xi, categorical)| SweepAcc {
                xi,
                categorical,
                loss_segments: if categorical {
                    Vec::new()
                } else {
                    error_segments(&keys[xi])
                },
                frames: BTreeMap::new(),
                order: Vec::new(),
                seen: Default::default(),
                values: BTreeMap::new(),
                max_throughput: 0.0,
                any_p95: false,
                flows: Flows::default(),
                reps: 0,
            });
        SimPlots {
            scenario,
            keys,
            points,
            timeseries: BTreeMap::new(),
            sweep,
        }
    }

    /// Adds one run of sweep point `point`.
    pub fn add(&mut self, point: usize, r: &RunResult) {
        if point < MAX_TIMESERIES_CHARTS {
            let ps = self.timeseries.entry(point).or_default();
            for p in &r.timeseries {
                ps.max = ps.max.max(p.throughput_bps);
                if !ps.seen.contains(&p.flow) {
                    ps.seen.insert(p.flow.clone());
                    if ps.drawn.len() < MAX_LINES {
                        ps.drawn.push(p.flow.clone());
                    }
                }
                if !ps.drawn.contains(&p.flow) {
                    continue;
                }
                ps.values
                    .entry(p.flow.clone())
                    .or_default()
                    .entry(p.time_s.to_bits())
                    .or_default()
                    .push(p.throughput_bps);
            }
        }
        let Some(sw) = &mut self.sweep else { return };
        if point == 0 {
            sw.reps += 1;
        }
        let value = &self.points[point][sw.xi].1;
        if !sw.loss_segments.is_empty() {
            let at = sw.frames.entry(value.clone()).or_default();
            for &i in &sw.loss_segments {
                let Some(s) = r.segments.get(i) else { continue };
                let e = at.entry(i).or_default();
                for (acc, d) in e.iter_mut().zip(&s.directions) {
                    acc.0 += d.lost + d.truncated + d.corrupted;
                    acc.1 += d.sent;
                    acc.2 += d.bytes;
                }
            }
        }
        let others: Vec<String> = self.points[point]
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != sw.xi)
            .map(|(_, (_, v))| short_value(v))
            .collect();
        for f in &r.flows {
            sw.max_throughput = sw.max_throughput.max(f.throughput_bps);
            sw.any_p95 |= f.delay_p95_s > 0.0;
            sw.flows.add(&f.transport);
            let mut label = f.flow.clone();
            if !others.is_empty() {
                label = format!("{label} {}", others.join(" "));
            }
            if !sw.seen.contains(&label) {
                sw.seen.insert(label.clone());
                if sw.order.len() < MAX_LINES {
                    sw.order.push(label.clone());
                }
            }
            if let Some(per_point) = sw.values.get_mut(&label) {
                per_point
                    .entry(point)
                    .or_default()
                    .push(SWEEP_METRICS.map(|(_, _, m)| m(f)));
            } else if sw.order.contains(&label) {
                let mut per_point = BTreeMap::new();
                per_point.insert(point, vec![SWEEP_METRICS.map(|(_, _, m)| m(f))]);
                sw.values.insert(label, per_point);
            }
        }
    }

    /// Writes every plot under `dir/plots`; returns the files written.
    pub fn write(self, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
        let out = dir.join("plots");
        std::fs::create_dir_all(&out).map_err(io(format!("creating {}", out.display())))?;
        let mut files = Vec::new();
        for (point, chart) in self.timeseries_charts() {
            files.extend(save(&out, &format!("timeseries_p{point}"), &chart)?);
        }
        for (stem, chart) in self.sweep_charts() {
            files.extend(save(&out, &stem, &chart)?);
        }
        Ok(files)
    }
}

/// A chart line `label`: per x (its f64 bits), the mean of the values over repetitions and
/// the half-width of its Student-t 95% interval (0 for one repetition), divided by `scale`,
/// in x order.
fn line(label: &str, by_x: &BTreeMap<u64, Vec<f64>>, scale: f64) -> Line {
    let mut points: Vec<(f64, f64, f64)> = by_x
        .iter()
        .map(|(x, v)| {
            let e = mslink_sim::stats::estimate(v);
            let half = if e.half.is_finite() { e.half } else { 0.0 };
            (f64::from_bits(*x), e.mean / scale, half / scale)
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Line {
        label: label.to_string(),
        points,
    }
}

/// A sweep value's readable name for a legend (`mslink_sim::labels`: "SR (OOS RLP)", 131072).
fn short_value(v: &str) -> String {
    truncate(&mslink_sim::labels::label(v).text(), 32)
}

fn truncate(v: &str, n: usize) -> String {
    if v.chars().count() > n {
        format!("{}...", v.chars().take(n - 3).collect::<String>())
    } else {
        v.to_string()
    }
}

/// Axis labels for categorical sweep values: their readable names, numbered when that leaves
/// two alike.
fn category_labels(values: &[String]) -> Vec<String> {
    let short: Vec<String> = values
        .iter()
        .map(|v| truncate(&short_value(v), 16))
        .collect();
    let unique = short
        .iter()
        .enumerate()
        .all(|(i, a)| !short[..i].contains(a));
    if unique {
        short
    } else {
        short
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{i}: {s}"))
            .collect()
    }
}

/// Last dotted component of a key (`segment.1.error.mean_bytes` -> `mean_bytes`).
fn short_key(k: &str) -> &str {
    k.rsplit('.')
        .find(|p| p.parse::<usize>().is_err())
        .unwrap_or(k)
}

fn describe_point(point: &[(String, String)]) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{}={}", short_key(k), short_value(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The time series of one sweep point, gathered over its repetitions.
#[derive(Default)]
struct PointSeries {
    /// The flows drawn (the first [`MAX_LINES`] seen), in first-seen order.
    drawn: Vec<String>,
    /// Every flow seen (for the title's count).
    seen: std::collections::HashSet<String>,
    /// Flow -> time -> values over repetitions, for the flows drawn only: 10,000 flows over
    /// 1,000 windows keep 12 flows' points here, not 10 million.
    values: Series,
    /// The largest value of any flow, drawn or not (the y axis spans them all).
    max: f64,
}

/// The x axis of the sweep charts: the first key whose values are all numbers and differ,
/// else the first that varies (categorical); none when nothing varies.
fn sweep_axis(keys: &[String], points: &[Vec<(String, String)>]) -> Option<(usize, bool)> {
    let varies = |i: usize| {
        let first = &points[0][i].1;
        points.iter().any(|p| &p[i].1 != first)
    };
    let numeric = |i: usize| points.iter().all(|p| number(&p[i].1).is_some());
    let xi = (0..keys.len())
        .find(|&i| varies(i) && numeric(i))
        .or_else(|| (0..keys.len()).find(|&i| varies(i)))?;
    Some((xi, !numeric(xi)))
}

/// A sweep value as a finite number, if it is one.
fn number(v: &str) -> Option<f64> {
    match mslink_sim::labels::label(v) {
        mslink_sim::labels::Label::Number(x) if x.is_finite() => Some(x),
        _ => None,
    }
}

/// The wireless segments whose error model sweep key `k` sets (`segment.N.error.*`, every
/// alternative of an `a|b` key); empty when it sets anything else.
fn error_segments(k: &str) -> Vec<usize> {
    k.split('|')
        .map(|k| {
            let p: Vec<&str> = k.split('.').collect();
            match p[..] {
                ["segment", n, "error", _, ..] => n.parse().ok(),
                _ => None,
            }
        })
        .collect::<Option<Vec<usize>>>()
        .unwrap_or_default()
}

/// Frames damaged, frames sent and bytes sent in one direction of a segment.
type Frames = (u64, u64, u64);

impl SweepAcc {
    /// When the x key sets the error model of wireless segments, the frame loss those
    /// segments showed at each of the key's values, in percent: frames lost, truncated or
    /// corrupted over frames sent in the segment's data direction (the one that carried more
    /// bytes: the other carries acknowledgements and control frames, short and rarely hit),
    /// summed over every run at that value (004 Table I's measure). So an error model's
    /// parameter (a mean error interval in bytes, say) is drawn as the loss it gave, in the
    /// papers' axes. None when the key sets something else, a value saw no frames, or two
    /// values gave the same loss (they would fall on one x); the label names the segments.
    fn measured_frame_loss(&self) -> Option<(String, BTreeMap<String, f64>)> {
        if self.loss_segments.is_empty() {
            return None;
        }
        let by_value: BTreeMap<String, f64> = self
            .frames
            .iter()
            .map(|(v, per_seg)| {
                let (bad, sent) = per_seg
                    .values()
                    .map(|d| if d[1].2 > d[0].2 { d[1] } else { d[0] })
                    .fold((0, 0), |a, d| (a.0 + d.0, a.1 + d.1));
                (sent > 0).then(|| (v.clone(), bad as f64 / sent as f64 * 100.0))
            })
            .collect::<Option<_>>()?;
        let mut xs: Vec<u64> = by_value.values().map(|x| x.to_bits()).collect();
        xs.sort_unstable();
        xs.dedup();
        if xs.len() < by_value.len() {
            return None;
        }
        let names: Vec<String> = self.loss_segments.iter().map(|s| s.to_string()).collect();
        let label = format!(
            "frame loss (%, measured on segment{} {})",
            if names.len() > 1 { "s" } else { "" },
            names.join(" and ")
        );
        Some((label, by_value))
    }
}

impl SimPlots<'_> {
    fn timeseries_charts(&self) -> Vec<(usize, Chart)> {
        let mut charts = Vec::new();
        for (point, ps) in &self.timeseries {
            let order = &ps.drawn;
            if order.is_empty() {
                continue;
            }
            let (unit, scale) = rate_unit(ps.max);
            let shown = order.len();
            let lines = order
                .iter()
                .map(|f| line(f, &ps.values[f], scale))
                .collect();
            let mut title = format!("{}: moving-window throughput", self.scenario);
            if self.points.len() > 1 {
                title.push_str(&format!(" ({})", describe_point(&self.points[*point])));
            }
            if shown < ps.seen.len() {
                title.push_str(&format!(" [first {shown} of {} flows]", ps.seen.len()));
            }
            charts.push((
                *point,
                Chart {
                    title,
                    x_label: "time (s)".into(),
                    y_label: format!("throughput ({unit})"),
                    lines,
                    categories: None,
                    error_bars: false,
                    scale: Scale::default(),
                    markers: false,
                    scatter: false,
                },
            ));
        }
        charts
    }

    fn sweep_charts(&self) -> Vec<(String, Chart)> {
        let Some(sw) = &self.sweep else {
            return Vec::new();
        };
        let xi = sw.xi;
        let mut categories: Vec<String> = Vec::new();
        if sw.categorical {
            for p in self.points {
                if !categories.contains(&p[xi].1) {
                    categories.push(p[xi].1.clone());
                }
            }
        }
        let loss_axis = sw.measured_frame_loss();
        let x_of = |point: usize| -> f64 {
            let v = &self.points[point][xi].1;
            if let Some((_, by_value)) = &loss_axis {
                by_value.get(v).copied().unwrap_or(f64::NAN)
            } else if sw.categorical {
                categories.iter().position(|c| c == v).unwrap_or(0) as f64
            } else {
                number(v).unwrap_or(0.0)
            }
        };
        let x_label = match &loss_axis {
            Some((label, _)) => label.clone(),
            None => key_title(&self.keys[xi]),
        };
        let drawn = if sw.any_p95 { 4 } else { 3 };
        let mut charts = Vec::new();
        for (m, (stem, column, _)) in SWEEP_METRICS.iter().enumerate().take(drawn) {
            // Drawn series -> x -> values over repetitions.
            let mut series = Series::new();
            for label in &sw.order {
                let by_x = series.entry(label.clone()).or_default();
                for (point, reps) in sw.values.get(label).into_iter().flatten() {
                    by_x.entry(x_of(*point).to_bits())
                        .or_default()
                        .extend(reps.iter().map(|r| r[m]));
                }
            }
            let axis = metric_axis(column, sw.flows, sw.max_throughput)
                .expect("the sweep metrics are flow columns");
            let (y_label, scale) = (axis.title, axis.divisor);
            let y_name = y_label.as_str();
            let shown = sw.order.len();
            let lines = sw
                .order
                .iter()
                .map(|l| line(l, &series[l], scale))
                .collect();
            let reps = sw.reps;
            let mut title = if reps > 1 {
                format!(
                    "{}: {y_name} (mean and 95% CI, {reps} repetitions)",
                    self.scenario
                )
            } else {
                format!("{}: {y_name} (one repetition)", self.scenario)
            };
            if shown < sw.seen.len() {
                title.push_str(&format!(" [first {shown} of {}]", sw.seen.len()));
            }
            charts.push((
                format!("sweep_{stem}"),
                Chart {
                    title,
                    x_label: x_label.clone(),
                    y_label,
                    lines,
                    categories: sw.categorical.then(|| category_labels(&categories)),
                    error_bars: reps > 1,
                    scale: Scale::default(),
                    markers: true,
                    // Categories have no order between them: points, not lines.
                    scatter: sw.categorical,
                },
            ));
        }
        charts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_and_axis_names_are_readable() {
        let t = r#"{ name = "cbr", scheme = "karn_rlp", max_retransmissions = 1 }"#;
        assert_eq!(short_value(t), "Karn's RLP");
        assert_eq!(short_value("131072"), "131072");
        let raw = r#"{ name = "cbr", scheme = "raw" }"#.to_string();
        let karn = t.to_string();
        assert_eq!(
            category_labels(&[raw.clone(), karn.clone()]),
            ["Raw", "Karn's RLP"]
        );
        // Two Karn's RLP settings would look alike: numbered.
        let karn3 = karn.replace("= 1", "= 3");
        assert_eq!(
            category_labels(&[raw, karn, karn3]),
            ["0: Raw", "1: Karn's RLP", "2: Karn's RLP"]
        );
    }

    #[test]
    fn error_bars_are_student_t_intervals() {
        let mut by_x = BTreeMap::new();
        by_x.insert(1f64.to_bits(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        by_x.insert(2f64.to_bits(), vec![3.0]);
        let l = line("x", &by_x, 1.0);
        // t(0.975, 4) * sqrt(2.5) / sqrt(5) = 1.9632; one repetition has no bar.
        assert_eq!(l.points[0].1, 3.0);
        assert!((l.points[0].2 - 1.9632).abs() < 1e-3);
        assert_eq!(l.points[1], (2.0, 3.0, 0.0));
    }
}
