//! Plots of `mslink sim` results as PNG and SVG, drawn with plotters so the CLI needs no
//! Python.
//!
//! Contract. [`write_plots`] turns the results of one `mslink sim` invocation into files under
//! `DIR/plots/` and returns their paths:
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

use crate::chart::{save, Chart, Line, Scale};
use crate::{io, PlotError};

/// Most lines drawn in one chart (the rest are left out and the title says so).
pub const MAX_LINES: usize = 12;
/// Most sweep points that get a time-series chart each.
pub const MAX_TIMESERIES_CHARTS: usize = 64;

/// What the plots are drawn from.
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

/// Writes every plot of `input` under `dir/plots`; returns the files written.
pub fn write_plots(dir: &Path, input: &PlotInput) -> Result<Vec<PathBuf>, PlotError> {
    let out = dir.join("plots");
    std::fs::create_dir_all(&out).map_err(io(format!("creating {}", out.display())))?;
    let mut files = Vec::new();
    for (point, chart) in timeseries_charts(input) {
        files.extend(save(&out, &format!("timeseries_p{point}"), &chart)?);
    }
    if input.points.len() > 1 {
        for (stem, chart) in sweep_charts(input) {
            files.extend(save(&out, &stem, &chart)?);
        }
    }
    Ok(files)
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

/// An axis title for a sweep key: its last named component with the unit its suffix gives,
/// after the component before it when the name is one generic word
/// (`segment.1.error.mean_bytes` -> "error mean (bytes)", `host.0.nic_delay_us` -> "nic delay
/// (us)").
fn axis_title(k: &str) -> String {
    let parts: Vec<&str> = k
        .split('|')
        .next()
        .unwrap_or(k)
        .split('.')
        .filter(|p| p.parse::<usize>().is_err())
        .collect();
    let last = parts.last().copied().unwrap_or(k);
    let (stem, unit) = [
        ("_bytes", "bytes"),
        ("_bps", "bit/s"),
        ("_ms", "ms"),
        ("_us", "us"),
        ("_ns", "ns"),
        ("_s", "s"),
    ]
    .iter()
    .find_map(|(suffix, unit)| last.strip_suffix(suffix).map(|s| (s, Some(*unit))))
    .unwrap_or((last, None));
    // A lone generic word ("mean", "loss") says more with the component before it.
    let mut title = match parts.len() {
        n if n >= 2 && !stem.contains('_') => format!("{} {stem}", parts[n - 2]),
        _ => stem.to_string(),
    }
    .replace('_', " ");
    if let Some(u) = unit {
        title.push_str(&format!(" ({u})"));
    }
    title
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

/// Throughput axis unit for a largest value in bit/s.
fn rate_unit(max_bps: f64) -> (&'static str, f64) {
    if max_bps >= 1e7 {
        ("Mbit/s", 1e6)
    } else {
        ("kbit/s", 1e3)
    }
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

fn timeseries_charts(input: &PlotInput) -> Vec<(usize, Chart)> {
    let mut per_point: BTreeMap<usize, PointSeries> = BTreeMap::new();
    for (point, r) in &input.runs {
        if *point >= MAX_TIMESERIES_CHARTS {
            continue;
        }
        let ps = per_point.entry(*point).or_default();
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
    let mut charts = Vec::new();
    for (point, ps) in per_point {
        let PointSeries {
            drawn: order,
            seen,
            values: flows,
            max,
        } = ps;
        if order.is_empty() {
            continue;
        }
        let (unit, scale) = rate_unit(max);
        let shown = order.len();
        let lines = order.iter().map(|f| line(f, &flows[f], scale)).collect();
        let mut title = format!("{}: moving-window throughput", input.scenario);
        if input.points.len() > 1 {
            title.push_str(&format!(" ({})", describe_point(&input.points[point])));
        }
        if shown < seen.len() {
            title.push_str(&format!(" [first {shown} of {} flows]", seen.len()));
        }
        charts.push((
            point,
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

/// Frames damaged, frames sent and bytes sent in one direction of a segment.
type Frames = (u64, u64, u64);

/// When sweep key `xi` sets the error model of wireless segments (`segment.N.error.*`, every
/// alternative of an `a|b` key), the frame loss those segments showed at each of the key's
/// values, in percent: frames lost, truncated or corrupted over frames sent in the segment's
/// data direction, summed over every run at that value (004 Table I's measure). So an error
/// model's parameter (a mean error interval in bytes, say) is drawn as the loss it gave, in
/// the papers' axes.
/// None when the key sets something else, a value saw no frames, or two values gave the same
/// loss (they would fall on one x); the axis label names the segments.
fn measured_frame_loss(input: &PlotInput, xi: usize) -> Option<(String, BTreeMap<String, f64>)> {
    let segs: Vec<usize> = input.keys[xi]
        .split('|')
        .map(|k| {
            let p: Vec<&str> = k.split('.').collect();
            match p[..] {
                ["segment", n, "error", _, ..] => n.parse().ok(),
                _ => None,
            }
        })
        .collect::<Option<_>>()?;
    // value -> segment -> per direction.
    let mut frames: BTreeMap<&str, BTreeMap<usize, [Frames; 2]>> = BTreeMap::new();
    for (point, r) in &input.runs {
        let at = frames.entry(&input.points[*point][xi].1).or_default();
        for &i in &segs {
            let Some(s) = r.segments.get(i) else { continue };
            let e = at.entry(i).or_default();
            for (acc, d) in e.iter_mut().zip(&s.directions) {
                acc.0 += d.lost + d.truncated + d.corrupted;
                acc.1 += d.sent;
                acc.2 += d.bytes;
            }
        }
    }
    // Each segment's data direction (the one that carried more bytes): the other carries
    // acknowledgements and control frames, short and rarely hit, which would dilute the rate.
    let by_value: BTreeMap<String, f64> = frames
        .iter()
        .map(|(v, per_seg)| {
            let (bad, sent) = per_seg
                .values()
                .map(|d| if d[1].2 > d[0].2 { d[1] } else { d[0] })
                .fold((0, 0), |a, d| (a.0 + d.0, a.1 + d.1));
            (sent > 0).then(|| (v.to_string(), bad as f64 / sent as f64 * 100.0))
        })
        .collect::<Option<_>>()?;
    let mut xs: Vec<u64> = by_value.values().map(|x| x.to_bits()).collect();
    xs.sort_unstable();
    xs.dedup();
    if xs.len() < by_value.len() {
        return None;
    }
    let names: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
    let label = format!(
        "frame loss (%, measured on segment{} {})",
        if segs.len() > 1 { "s" } else { "" },
        names.join(" and ")
    );
    Some((label, by_value))
}

fn sweep_charts(input: &PlotInput) -> Vec<(String, Chart)> {
    let varies = |i: usize| {
        let first = &input.points[0][i].1;
        input.points.iter().any(|p| &p[i].1 != first)
    };
    let number = |v: &str| match mslink_sim::labels::label(v) {
        mslink_sim::labels::Label::Number(x) if x.is_finite() => Some(x),
        _ => None,
    };
    let numeric = |i: usize| input.points.iter().all(|p| number(&p[i].1).is_some());
    let Some(xi) = (0..input.keys.len())
        .find(|&i| varies(i) && numeric(i))
        .or_else(|| (0..input.keys.len()).find(|&i| varies(i)))
    else {
        return Vec::new();
    };
    let categorical = !numeric(xi);
    let mut categories: Vec<String> = Vec::new();
    if categorical {
        for p in input.points {
            if !categories.contains(&p[xi].1) {
                categories.push(p[xi].1.clone());
            }
        }
    }
    let loss_axis = (!categorical)
        .then(|| measured_frame_loss(input, xi))
        .flatten();
    let x_of = |point: usize| -> f64 {
        let v = &input.points[point][xi].1;
        if let Some((_, by_value)) = &loss_axis {
            by_value[v]
        } else if categorical {
            categories.iter().position(|c| c == v).unwrap_or(0) as f64
        } else {
            number(v).unwrap_or(0.0)
        }
    };
    let x_label = match &loss_axis {
        Some((label, _)) => label.clone(),
        None => axis_title(&input.keys[xi]),
    };
    let mut metrics: Vec<(&str, &str, Metric)> = vec![
        ("throughput", "throughput", |f| f.throughput_bps),
        ("loss_rate", "residual loss (%)", |f| f.loss_rate * 100.0),
        ("delay_mean", "mean delay (ms)", |f| f.delay_mean_s * 1e3),
    ];
    // Datagram flows have one-way delay percentiles (TCP flows report zeros).
    if input
        .runs
        .iter()
        .any(|(_, r)| r.flows.iter().any(|f| f.delay_p95_s > 0.0))
    {
        metrics.push(("delay_p95", "95th percentile delay (ms)", |f| {
            f.delay_p95_s * 1e3
        }));
    }
    let mut charts = Vec::new();
    for (stem, y_name, metric) in metrics {
        // Series (flow, other keys) in first-seen order -> x -> values over repetitions.
        let mut order: Vec<String> = Vec::new();
        let mut series = Series::new();
        for (point, r) in &input.runs {
            let others: Vec<String> = input.points[*point]
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != xi)
                .map(|(_, (_, v))| short_value(v))
                .collect();
            for f in &r.flows {
                let mut label = f.flow.clone();
                if !others.is_empty() {
                    label = format!("{label} {}", others.join(" "));
                }
                if !series.contains_key(&label) {
                    order.push(label.clone());
                }
                series
                    .entry(label)
                    .or_default()
                    .entry(x_of(*point).to_bits())
                    .or_default()
                    .push(metric(f));
            }
        }
        let (y_label, scale) = if stem == "throughput" {
            let max = series
                .values()
                .flat_map(|s| s.values().flatten())
                .fold(0.0f64, |a, &b| a.max(b));
            let (unit, scale) = rate_unit(max);
            (format!("{y_name} ({unit})"), scale)
        } else {
            (y_name.to_string(), 1.0)
        };
        let shown = order.len().min(MAX_LINES);
        let lines = order
            .iter()
            .take(shown)
            .map(|l| line(l, &series[l], scale))
            .collect();
        let reps = input.runs.iter().filter(|(p, _)| *p == 0).count();
        let mut title = if reps > 1 {
            format!(
                "{}: {y_name} (mean and 95% CI, {reps} repetitions)",
                input.scenario
            )
        } else {
            format!("{}: {y_name} (one repetition)", input.scenario)
        };
        if shown < order.len() {
            title.push_str(&format!(" [first {shown} of {}]", order.len()));
        }
        charts.push((
            format!("sweep_{stem}"),
            Chart {
                title,
                x_label: x_label.clone(),
                y_label,
                lines,
                categories: categorical.then(|| category_labels(&categories)),
                error_bars: reps > 1,
                scale: Scale::default(),
                markers: true,
                scatter: false,
            },
        ));
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_and_axis_names_are_readable() {
        let t = r#"{ name = "cbr", scheme = "karn_rlp", max_retransmissions = 1 }"#;
        assert_eq!(short_value(t), "Karn's RLP");
        assert_eq!(short_value("131072"), "131072");
        assert_eq!(
            axis_title("segment.1.error.mean_bytes"),
            "error mean (bytes)"
        );
        assert_eq!(
            axis_title("segment.0.error.loss|segment.2.error.loss"),
            "error loss"
        );
        assert_eq!(axis_title("host.0.nic_delay_us"), "nic delay (us)");
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
