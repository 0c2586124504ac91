//! Line charts as PNG and SVG, drawn with plotters and the embedded font, shared by the
//! `mslink sim` plots and the `mslink bench` / `mslink stack-bench` figures.
//!
//! Contract. [`save`] draws one [`Chart`] to `DIR/STEM.png` and `DIR/STEM.svg` and returns both
//! paths ([`to_png`] and [`to_svg`] return the bytes; the Python package's `mslink.plot` draws
//! through them too, from a chart given as JSON, so every figure of mslink comes from here;
//! [`stacked_to_png`] and [`stacked_to_svg`] put several charts one above the other in one
//! image, sharing one x range and so the same x ticks at the same places); [`line_chart`] is the short form for plain `(x, y)` series. Output is a pure function
//! of the chart: no timestamps, no system fonts (text uses the DejaVu Sans subset of `assets/`),
//! so the same data gives byte-identical files. Axes may be logarithmic: x in powers of two
//! (message sizes, labelled 1, 4, 16, .., 1K, .., 1M) and y in powers of ten; points that a
//! log axis cannot show (zero or negative) are left out. A chart may also be a scatter of points
//! (`scatter`: a packet trace such as 003 Figs. 2, 4 and 7), each line a shape and a colour.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::{io, PlotError};

type Result<T> = std::result::Result<T, PlotError>;

/// Image size in pixels (PNG) or user units (SVG).
const SIZE: (u32, u32) = (960, 600);
/// The embedded font (see `assets/README.md` for its origin and license).
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans-ascii.ttf");

/// Line colours: a ten-colour qualitative palette (Tableau 10), repeated.
const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

/// One line of a chart: `(x, mean, standard deviation)` points in x order.
#[derive(serde::Deserialize)]
pub struct Line {
    /// Legend entry.
    pub label: String,
    /// Points; the deviation is drawn only when the chart has error bars.
    pub points: Vec<(f64, f64, f64)>,
}

/// Corner of the legend box (chosen where a chart's lines leave room).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LegendAt {
    /// Upper right (the default).
    #[default]
    UpperRight,
    /// Upper left.
    UpperLeft,
    /// Lower right.
    LowerRight,
}

/// Axis scales and legend place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct Scale {
    /// x on a base-2 logarithmic axis (sizes in bytes).
    pub log2_x: bool,
    /// y on a base-10 logarithmic axis.
    pub log10_y: bool,
    /// Where the legend goes.
    pub legend: LegendAt,
}

/// A chart, independent of the backend.
#[derive(serde::Deserialize)]
pub struct Chart {
    /// Caption.
    pub title: String,
    /// x axis description.
    pub x_label: String,
    /// y axis description.
    pub y_label: String,
    /// The lines, drawn in palette order.
    pub lines: Vec<Line>,
    /// Category names when x is categorical (x = index).
    #[serde(default)]
    pub categories: Option<Vec<String>>,
    /// Draw ±deviation bars at each point.
    #[serde(default)]
    pub error_bars: bool,
    /// Logarithmic axes.
    #[serde(default)]
    pub scale: Scale,
    /// Mark each point with a dot (lines without error bars only).
    #[serde(default)]
    pub markers: bool,
    /// Points only, no lines between them (a packet trace: one mark per packet, each line's
    /// own shape and colour).
    #[serde(default)]
    pub scatter: bool,
}

fn register_font() -> Result<()> {
    static ONCE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *ONCE.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

/// Draws `series` (label, `(x, y)` points) as lines into `path_stem.png` and `path_stem.svg`
/// (creating the folder); returns the files written.
pub fn line_chart(
    path_stem: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: Vec<(String, Vec<(f64, f64)>)>,
    scale: Scale,
) -> Result<Vec<PathBuf>> {
    let dir = path_stem.parent().unwrap_or(Path::new("."));
    let stem = path_stem
        .file_name()
        .ok_or_else(|| PlotError::NoFileName(path_stem.to_path_buf()))?
        .to_string_lossy();
    let chart = Chart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        lines: series
            .into_iter()
            .map(|(label, pts)| {
                let mut points: Vec<(f64, f64, f64)> =
                    pts.into_iter().map(|(x, y)| (x, y, 0.0)).collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Line { label, points }
            })
            .collect(),
        categories: None,
        error_bars: false,
        scale,
        markers: true,
        scatter: false,
    };
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    save(dir, &stem, &chart)
}

/// Writes `dir/stem.png` and `dir/stem.svg`.
pub fn save(dir: &Path, stem: &str, chart: &Chart) -> Result<Vec<PathBuf>> {
    let png_path = dir.join(format!("{stem}.png"));
    std::fs::write(&png_path, to_png(chart)?)
        .map_err(io(format!("writing {}", png_path.display())))?;
    let svg_path = dir.join(format!("{stem}.svg"));
    std::fs::write(&svg_path, to_svg(chart)?)
        .map_err(io(format!("writing {}", svg_path.display())))?;
    Ok(vec![png_path, svg_path])
}

/// The chart as a PNG image (960 x 600).
pub fn to_png(chart: &Chart) -> Result<Vec<u8>> {
    register_font()?;
    let (w, h) = SIZE;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(&root, chart)?;
        root.present()
            .map_err(|e| PlotError::Draw(format!("drawing {} as PNG: {e}", chart.title)))?;
    }
    encode_png(&rgb, w, h)
}

/// `rgb` (w x h pixels, 8-bit RGB) as PNG bytes.
fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>> {
    let mut png_bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png_bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Best);
        let mut writer = enc.write_header()?;
        writer.write_image_data(rgb)?;
    }
    Ok(png_bytes)
}

/// The chart as SVG text.
pub fn to_svg(chart: &Chart) -> Result<String> {
    register_font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&root, chart)?;
        root.present()
            .map_err(|e| PlotError::Draw(format!("drawing {} as SVG: {e}", chart.title)))?;
    }
    Ok(svg)
}

/// Charts stacked top to bottom in one PNG image (960 wide, 600 high per chart).
pub fn stacked_to_png(charts: &[Chart]) -> Result<Vec<u8>> {
    register_font()?;
    let (w, h) = (SIZE.0, SIZE.1 * charts.len().max(1) as u32);
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        let x = shared_x(charts);
        for (area, chart) in root
            .split_evenly((charts.len().max(1), 1))
            .iter()
            .zip(charts)
        {
            draw_in(area, chart, x)?;
        }
        root.present()
            .map_err(|e| PlotError::Draw(format!("drawing a PNG: {e}")))?;
    }
    encode_png(&rgb, w, h)
}

/// Charts stacked top to bottom in one SVG image.
pub fn stacked_to_svg(charts: &[Chart]) -> Result<String> {
    register_font()?;
    let size = (SIZE.0, SIZE.1 * charts.len().max(1) as u32);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let x = shared_x(charts);
        for (area, chart) in root
            .split_evenly((charts.len().max(1), 1))
            .iter()
            .zip(charts)
        {
            draw_in(area, chart, x)?;
        }
        root.present()
            .map_err(|e| PlotError::Draw(format!("drawing an SVG: {e}")))?;
    }
    Ok(svg)
}

/// A size in bytes for an axis label: 1, 512, 1K, 64K, 1M.
fn bytes_label(v: f64) -> String {
    let v = v.round() as u64;
    if v >= 1 << 20 && v % (1 << 20) == 0 {
        format!("{}M", v >> 20)
    } else if v >= 1 << 10 && v % (1 << 10) == 0 {
        format!("{}K", v >> 10)
    } else {
        v.to_string()
    }
}

/// A tick value without floating-point noise: at most six significant digits, no trailing
/// zeros (0.30000000000000004 is "0.3"), and from 10,000 on with an SI prefix (2000000 is
/// "2M"), so a tick never grows wide enough to run into the axis title.
fn number_label(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    if v.abs() >= 1e4 {
        let (d, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
            .into_iter()
            .find(|(d, _)| v.abs() >= *d)
            .expect("at least 1e4");
        // Round ticks only (a linear axis's): an exact value such as 131072 stays whole.
        let scaled = number_label(v / d);
        if scaled.trim_start_matches('-').replace('.', "").len() <= 3 {
            return format!("{scaled}{prefix}");
        }
    }
    let digits = (5 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn decade_label(e: i32) -> String {
    match e {
        -3..=0 => format!("{}", 10f64.powi(e)),
        1..=5 => format!("{}", 10u64.pow(e as u32)),
        _ => format!("1e{e}"),
    }
}

/// Label at integer positions of a log axis, nothing elsewhere.
fn at_integer(v: f64) -> Option<i32> {
    let i = v.round();
    ((v - i).abs() < 1e-6).then_some(i as i32)
}

/// The points of `line` in axis coordinates (log axes transformed), `(x, y, deviation)`.
fn axis_points(line: &Line, scale: Scale) -> Vec<(f64, f64, f64)> {
    line.points
        .iter()
        .filter(|&&(x, m, _)| (!scale.log2_x || x > 0.0) && (!scale.log10_y || m > 0.0))
        .filter(|&&(x, m, _)| x.is_finite() && m.is_finite())
        .map(|&(x, m, s)| {
            let x = if scale.log2_x { x.log2() } else { x };
            let m = if scale.log10_y { m.log10() } else { m };
            (x, m, s)
        })
        .collect()
}

/// The x range of `chart`'s data in axis coordinates, if it has any point.
fn x_extent(chart: &Chart) -> Option<(f64, f64)> {
    let (x0, x1) = chart
        .lines
        .iter()
        .flat_map(|l| axis_points(l, chart.scale))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (x, _, _)| {
            (a.min(x), b.max(x))
        });
    x0.is_finite().then_some((x0, x1))
}

/// The x range stacked charts share: the union of theirs, so one time axis lines up across
/// panels (same range, same ticks at the same places). None if no chart has data.
fn shared_x(charts: &[Chart]) -> Option<(f64, f64)> {
    charts
        .iter()
        .filter_map(x_extent)
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<()>
where
    DB::ErrorType: 'static,
{
    draw_in(root, chart, None)
}

/// Draws `chart`; `x`: the x range to use instead of its data's (stacked charts share one).
fn draw_in<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    x: Option<(f64, f64)>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| {
        PlotError::Draw(format!("plotting {}: {e}", chart.title))
    };
    root.fill(&WHITE).map_err(e)?;
    // The legend goes in a panel right of the plot, clear of every curve.
    let (root, legend_area) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
    let root = &root;
    let scale = chart.scale;
    let error_bars = chart.error_bars && !scale.log10_y;
    let lines: Vec<Vec<(f64, f64, f64)>> =
        chart.lines.iter().map(|l| axis_points(l, scale)).collect();
    let ((x0, x1), (y0, y1)) = ranges(chart, &lines, error_bars, x);
    let mut cc = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    let cats = chart.categories.clone();
    let n_cats = cats.as_ref().map_or(0, Vec::len);
    let x_fmt = move |x: &f64| match &cats {
        Some(c) => match at_integer(*x) {
            Some(i) if i >= 0 && (i as usize) < c.len() => c[i as usize].clone(),
            _ => String::new(),
        },
        None if scale.log2_x => at_integer(*x)
            .map(|i| bytes_label(2f64.powi(i)))
            .unwrap_or_default(),
        None => number_label(*x),
    };
    let y_fmt = |y: &f64| at_integer(*y).map(decade_label).unwrap_or_default();
    let mut mesh = cc.configure_mesh();
    mesh.x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_label_formatter(&x_fmt)
        .label_style(("sans-serif", 13));
    let y_num = |y: &f64| number_label(*y);
    if scale.log10_y {
        mesh.y_label_formatter(&y_fmt);
    } else if chart.scatter {
        mesh.y_label_formatter(&y_num);
    }
    if n_cats > 0 {
        mesh.x_labels(n_cats + 2);
    } else if scale.log2_x {
        // One label per power of two when they fit, else every other one.
        mesh.x_labels(((x1 - x0).ceil() as usize + 1).min(24));
    }
    mesh.draw().map_err(e)?;
    for (i, pts) in lines.iter().enumerate() {
        let (r, g, b) = PALETTE[i % PALETTE.len()];
        let color = RGBColor(r, g, b).to_rgba();
        let style = ShapeStyle::from(color).stroke_width(2);
        let xy = pts.iter().map(|&(x, m, _)| (x, m));
        if !chart.scatter {
            if dashed(i) {
                cc.draw_series(DashedLineSeries::new(xy, 8, 5, style))
                    .map_err(e)?;
            } else {
                cc.draw_series(LineSeries::new(xy, style)).map_err(e)?;
            }
        }
        if error_bars {
            cc.draw_series(pts.iter().map(|&(x, m, s)| {
                ErrorBar::new_vertical(x, (m - s).max(0.0), m, m + s, color.filled(), 8)
            }))
            .map_err(e)?;
        }
        if chart.markers || error_bars || chart.scatter {
            // A shape per line, so curves that coincide stay visible.
            for &(x, m, _) in pts {
                cc.plotting_area()
                    .draw(&marker((x, m), i, color))
                    .map_err(e)?;
            }
        }
    }
    legend(&legend_area, chart).map_err(e)?;
    Ok(())
}

/// The x and y ranges of `chart`'s axes over its points `lines` (with `error_bars`, their
/// tops too); `x`: the x range to use instead of the data's.
fn ranges(
    chart: &Chart,
    lines: &[Vec<(f64, f64, f64)>],
    error_bars: bool,
    x: Option<(f64, f64)>,
) -> ((f64, f64), (f64, f64)) {
    let scale = chart.scale;
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
    for &(x, m, s) in lines.iter().flatten() {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(m);
        y1 = y1.max(if error_bars { m + s } else { m });
    }
    if let Some(shared) = x {
        (x0, x1) = shared;
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if chart.categories.is_some() {
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    } else if x1 <= x0 {
        (x0, x1) = (x0 - 1.0, x1 + 1.0);
    }
    let (y0, y1) = if scale.log10_y {
        if !y0.is_finite() {
            (0.0, 1.0)
        } else {
            // Whole decades, at least one.
            let (a, b) = (y0.floor(), y1.ceil());
            (a, if b > a { b } else { a + 1.0 })
        }
    } else if chart.scatter && y0.is_finite() {
        // A trace zoomed in far from zero: its own range, with a margin.
        let pad = ((y1 - y0) * 0.05).max(1e-9);
        ((y0 - pad).max(0.0), y1 + pad)
    } else {
        (0.0, if y1 > 0.0 { y1 * 1.1 } else { 1.0 })
    };
    ((x0, x1), (y0, y1))
}

/// Width of the legend panel right of the plot.
const LEGEND_WIDTH: u32 = 230;

/// Whether line `i` is dashed (every other line, so that neighbours in the palette differ
/// in two ways).
fn dashed(i: usize) -> bool {
    i % 2 == 1
}

/// The marker of line `i` at `at`: circle, triangle, square, diamond, cross, in turn.
fn marker<'a, DB: DrawingBackend + 'a, C: Clone + 'a>(
    at: C,
    i: usize,
    color: RGBAColor,
) -> DynElement<'a, DB, C> {
    let fill = ShapeStyle::from(color).filled();
    let stroke = ShapeStyle::from(color).stroke_width(2);
    let e = EmptyElement::at(at);
    match i % 5 {
        0 => (e + Circle::new((0, 0), 4, fill)).into_dyn(),
        1 => (e + Polygon::new(vec![(0, -5), (5, 4), (-5, 4)], fill)).into_dyn(),
        2 => (e + Rectangle::new([(-4, -4), (4, 4)], fill)).into_dyn(),
        3 => (e + Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], fill)).into_dyn(),
        _ => (e
            + PathElement::new(vec![(-4, -4), (4, 4)], stroke)
            + PathElement::new(vec![(-4, 4), (4, -4)], stroke))
        .into_dyn(),
    }
}

/// Labels longer than this are cut with an ellipsis, so the legend panel holds them.
const LEGEND_CHARS: usize = 30;

/// The legend panel: per line its colour, dash and marker, and its label.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    let top = 50;
    for (i, line) in chart.lines.iter().enumerate() {
        let (r, g, b) = PALETTE[i % PALETTE.len()];
        let color = RGBColor(r, g, b).to_rgba();
        let style = ShapeStyle::from(color).stroke_width(2);
        let y = top + 22 * i as i32;
        if chart.scatter {
            // No line to show: the marker alone.
        } else if dashed(i) {
            area.draw(&PathElement::new(vec![(8, y), (16, y)], style))?;
            area.draw(&PathElement::new(vec![(22, y), (30, y)], style))?;
        } else {
            area.draw(&PathElement::new(vec![(8, y), (30, y)], style))?;
        }
        if chart.markers || chart.error_bars || chart.scatter {
            area.draw(&marker((19, y), i, color))?;
        }
        let label: String = if line.label.chars().count() > LEGEND_CHARS {
            let cut: String = line.label.chars().take(LEGEND_CHARS - 1).collect();
            // The embedded font is ASCII only.
            format!("{cut}...")
        } else {
            line.label.clone()
        };
        area.draw(&Text::new(label, (38, y - 7), font.clone()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_numbers_have_no_float_noise() {
        assert_eq!(number_label(0.1 + 0.2), "0.3");
        assert_eq!(number_label(2e6), "2M");
        assert_eq!(number_label(25_000.0), "25k");
        assert_eq!(number_label(-1.5e9), "-1.5G");
        assert_eq!(number_label(9999.0), "9999");
        assert_eq!(number_label(0.5), "0.5");
        assert_eq!(number_label(100.0), "100");
        assert_eq!(number_label(131072.0), "131072");
        assert_eq!(number_label(0.000125), "0.000125");
        assert_eq!(number_label(-2.5), "-2.5");
        assert_eq!(number_label(0.0), "0");
    }

    #[test]
    fn log_axis_labels() {
        assert_eq!(bytes_label(1.0), "1");
        assert_eq!(bytes_label(512.0), "512");
        assert_eq!(bytes_label(65536.0), "64K");
        assert_eq!(bytes_label((1u64 << 20) as f64), "1M");
        assert_eq!(decade_label(-2), "0.01");
        assert_eq!(decade_label(0), "1");
        assert_eq!(decade_label(3), "1000");
        assert_eq!(decade_label(7), "1e7");
        assert_eq!(at_integer(3.0000000001), Some(3));
        assert_eq!(at_integer(2.5), None);
    }

    #[test]
    fn log_axes_drop_points_they_cannot_show() {
        let l = Line {
            label: "x".into(),
            points: vec![(0.0, 1.0, 0.0), (4.0, 0.0, 0.0), (8.0, 100.0, 0.0)],
        };
        let s = Scale {
            log2_x: true,
            log10_y: true,
            ..Scale::default()
        };
        // 8 = 2^3, 100 = 10^2; the zero x and the zero y are left out.
        assert_eq!(axis_points(&l, s), vec![(3.0, 2.0, 0.0)]);
        assert_eq!(axis_points(&l, Scale::default()).len(), 3);
    }
}
