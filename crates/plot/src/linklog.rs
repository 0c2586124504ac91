//! The figure of a per-packet link log (`mslink graph`, Mahimahi's `mm-throughput-graph` and
//! `mm-delay-graph` in one image).
//!
//! Contract: [`write`] draws a [`LinkLogFigure`] (already binned by the caller) to one file,
//! PNG or SVG by its extension: on top, throughput over time in Mbit/s per window (capacity,
//! arrivals into the link, departures out of it, each with its mean in the legend; a log
//! without capacity lines has no capacity curve); below, the per-packet delay in ms at each
//! packet's arrival time. More than [`MAX_DELAY_POINTS`] packets are drawn as the maximum and
//! minimum delay per slice of time instead of one point each, so the figure stays small.
//! Like every mslink figure, the output is a pure function of its data.

use std::path::{Path, PathBuf};

use crate::chart::{stacked_to_png, stacked_to_svg, Chart, LegendAt, Line, Scale};
use crate::{io, PlotError};

/// Per-packet delays drawn one by one up to this many; beyond, per-slice max and min.
pub const MAX_DELAY_POINTS: usize = 20_000;

/// What the figure shows.
pub struct LinkLogFigure {
    /// Caption of the throughput panel (the delay panel's says "per-packet delay").
    pub title: String,
    /// Window width in ms.
    pub window_ms: u64,
    /// Per window: (start in s, capacity, arrivals, departures in Mbit/s).
    pub rates: Vec<(f64, f64, f64, f64)>,
    /// Means over the log in Mbit/s: capacity (None without capacity lines), arrivals,
    /// departures.
    pub means: (Option<f64>, f64, f64),
    /// Per departure: (arrival time in s, delay in ms).
    pub delays: Vec<(f64, f64)>,
    /// The 95th percentile of the delays in ms, for the caption.
    pub delay_p95_ms: Option<f64>,
}

fn line(label: String, pts: impl Iterator<Item = (f64, f64)>) -> Line {
    Line {
        label,
        points: pts.map(|(x, y)| (x, y, 0.0)).collect(),
    }
}

/// Per-packet delays, or per-slice max and min when there are too many.
fn delay_lines(delays: &[(f64, f64)]) -> Vec<Line> {
    if delays.len() <= MAX_DELAY_POINTS {
        let mut pts = delays.to_vec();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        return vec![line("per packet".into(), pts.into_iter())];
    }
    let (t0, t1) = delays
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &(t, _)| {
            (a.min(t), b.max(t))
        });
    let slices = 1000usize;
    let width = ((t1 - t0) / slices as f64).max(1e-3);
    let mut max = vec![f64::NEG_INFINITY; slices];
    let mut min = vec![f64::INFINITY; slices];
    for &(t, d) in delays {
        let i = (((t - t0) / width) as usize).min(slices - 1);
        max[i] = max[i].max(d);
        min[i] = min[i].min(d);
    }
    let at = |i: usize| t0 + (i as f64 + 0.5) * width;
    let ms = (width * 1e3).round();
    vec![
        line(
            format!("max per {ms} ms"),
            (0..slices)
                .filter(|&i| max[i].is_finite())
                .map(|i| (at(i), max[i])),
        ),
        line(
            format!("min per {ms} ms"),
            (0..slices)
                .filter(|&i| min[i].is_finite())
                .map(|i| (at(i), min[i])),
        ),
    ]
}

/// The two charts of the figure.
pub fn charts(fig: &LinkLogFigure) -> [Chart; 2] {
    let (cap, arr, dep) = fig.means;
    let mut lines = Vec::new();
    if let Some(c) = cap {
        lines.push(line(
            format!("capacity (mean {c:.2})"),
            fig.rates.iter().map(|r| (r.0, r.1)),
        ));
    }
    lines.push(line(
        format!("arrivals (mean {arr:.2})"),
        fig.rates.iter().map(|r| (r.0, r.2)),
    ));
    lines.push(line(
        format!("departures (mean {dep:.2})"),
        fig.rates.iter().map(|r| (r.0, r.3)),
    ));
    let throughput = Chart {
        title: fig.title.clone(),
        x_label: "time (s)".into(),
        y_label: format!("throughput (Mbit/s, {} ms windows)", fig.window_ms),
        lines,
        categories: None,
        error_bars: false,
        scale: Scale {
            legend: LegendAt::UpperRight,
            ..Scale::default()
        },
        markers: false,
        scatter: false,
    };
    let delay = Chart {
        title: match fig.delay_p95_ms {
            Some(p) => format!("per-packet delay (95th percentile {p:.0} ms)"),
            None => "per-packet delay (no departures)".into(),
        },
        x_label: "arrival time (s)".into(),
        y_label: "delay (ms)".into(),
        lines: delay_lines(&fig.delays),
        categories: None,
        error_bars: false,
        scale: Scale::default(),
        markers: false,
        scatter: false,
    };
    [throughput, delay]
}

/// Draws the figure to `path`: SVG if it ends in `.svg`, PNG if in `.png` (any case); the
/// folder must exist. Returns the path written.
pub fn write(path: &Path, fig: &LinkLogFigure) -> Result<PathBuf, PlotError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let charts = charts(fig);
    let bytes = match ext.as_str() {
        "svg" => stacked_to_svg(&charts)?.into_bytes(),
        "png" => stacked_to_png(&charts)?,
        _ => return Err(PlotError::Format(path.to_path_buf())),
    };
    std::fs::write(path, bytes).map_err(io(format!("writing {}", path.display())))?;
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(n: usize) -> LinkLogFigure {
        LinkLogFigure {
            title: "up.log".into(),
            window_ms: 500,
            rates: (0..10).map(|i| (i as f64 * 0.5, 12.0, 8.0, 7.5)).collect(),
            means: (Some(12.0), 8.0, 7.5),
            delays: (0..n).map(|i| (i as f64 * 1e-3, (i % 50) as f64)).collect(),
            delay_p95_ms: Some(47.0),
        }
    }

    #[test]
    fn many_delays_become_max_and_min_per_slice() {
        let few = charts(&fig(100));
        assert_eq!(few[1].lines.len(), 1);
        assert_eq!(few[1].lines[0].points.len(), 100);
        assert_eq!(few[0].lines.len(), 3);
        let many = charts(&fig(50_000));
        assert_eq!(many[1].lines.len(), 2);
        assert!(many[1].lines[0].points.len() <= 1000);
        // Each 50 ms slice holds about 50 packets, whose delays cycle through 0..=49.
        let max = &many[1].lines[0].points;
        assert!(max.iter().all(|p| p.1 >= 45.0), "{:?}", &max[..5]);
        assert!(many[1].lines[1].points.iter().all(|p| p.1 <= 4.0));
        let no_capacity = LinkLogFigure {
            means: (None, 1.0, 1.0),
            ..fig(1)
        };
        assert_eq!(charts(&no_capacity)[0].lines.len(), 2);
    }

    /// The x-axis tick labels of each panel of a stacked SVG, as (label, x position): numeric
    /// text anchored at its middle (y-axis labels are anchored at their end, captions and axis
    /// descriptions are not numbers).
    fn x_ticks(svg: &str) -> [Vec<(String, String)>; 2] {
        let mut panels: [Vec<(String, String)>; 2] = Default::default();
        for el in svg.split("<text").skip(1) {
            let (attrs, rest) = el.split_once('>').unwrap();
            let text = rest.split("</text>").next().unwrap().trim().to_string();
            let attr = |name: &str| {
                attrs
                    .split(&format!(" {name}=\""))
                    .nth(1)
                    .and_then(|v| v.split('"').next())
                    .map(str::to_string)
            };
            if attr("text-anchor").as_deref() != Some("middle") || text.parse::<f64>().is_err() {
                continue;
            }
            let y: f64 = attr("y").unwrap().parse().unwrap();
            panels[usize::from(y >= 600.0)].push((text, attr("x").unwrap()));
        }
        panels
    }

    #[test]
    fn both_panels_share_one_time_axis() {
        // Windows start at 0..4.5 s; the last packets arrive at 4.999 s: before the panels
        // shared their range, the same tick sat at different places in each.
        let f = fig(5000);
        let svg = stacked_to_svg(&charts(&f)).unwrap();
        let [top, bottom] = x_ticks(&svg);
        assert!(top.len() >= 5, "{top:?}");
        assert_eq!(top, bottom);
    }

    #[test]
    fn the_extension_picks_the_format() {
        let dir = std::env::temp_dir().join(format!("mslink-plot-linklog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = fig(300);
        let svg = write(&dir.join("a.svg"), &f).unwrap();
        assert!(std::fs::read_to_string(svg).unwrap().starts_with("<svg"));
        let png = write(&dir.join("a.PNG"), &f).unwrap();
        assert_eq!(&std::fs::read(png).unwrap()[1..4], b"PNG");
        assert!(matches!(
            write(&dir.join("a.pdf"), &f),
            Err(PlotError::Format(_))
        ));
        // Same data, same bytes.
        assert_eq!(
            stacked_to_svg(&charts(&f)).unwrap(),
            stacked_to_svg(&charts(&f)).unwrap()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
