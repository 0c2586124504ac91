//! The figures of `mslink reproduce`'s report: a run's curve figure (a metric against one of
//! its axes, a line per series, the paper's numbers beside them), a run's sequence figure (one
//! flow's data segments against time), and a curve figure again from the runs of a claim's
//! counterfactual.
//!
//! Contract. Pure functions of the results: each point is the mean over the repetitions with
//! its Student-t 95% interval; a [`Figure`] knows its file name under OUT/figures/ and the
//! command that makes it again. [`super::report`] draws them as PNG for report.md and as SVG
//! for report.html.

use anyhow::{Context as _, Result};
use mslink_plot::chart::{Chart, Line, Scale};

use super::judge;
use super::ledger::{FigureKind, FigureSpec, Run};
use super::report::rerun;
use super::Results;

/// A run's figure: run id, caption, what its marks are, chart.
pub(super) struct Figure {
    pub(super) run: String,
    /// Which of the run's figures.
    pub(super) index: usize,
    /// The claim whose counterfactual runs it shows, if not the ledger's own runs.
    pub(super) counterfactual: Option<String>,
    pub(super) caption: String,
    /// What the marks show ("mean and 95% interval per point").
    pub(super) note: String,
    pub(super) chart: Chart,
}

impl Figure {
    /// The command that makes it again: its run's, or, for a counterfactual's figure, the
    /// claim's (only `mslink reproduce` applies a counterfactual's edits).
    pub(super) fn rerun(&self, ctx: &Results) -> String {
        match &self.counterfactual {
            Some(id) => format!(
                "mslink reproduce{} --claim {id} --out results/{id}",
                if ctx.opts.quick { " --quick" } else { "" }
            ),
            None => rerun(ctx, &self.run),
        }
    }

    /// File name under OUT/figures/.
    pub(super) fn file(&self) -> String {
        let run = self.run.replace('/', "-");
        let cf = self
            .counterfactual
            .as_ref()
            .map(|c| format!("-cf-{c}"))
            .unwrap_or_default();
        if self.index == 0 && cf.is_empty() {
            format!("{run}.png")
        } else {
            format!("{run}-{}{cf}.png", self.index + 1)
        }
    }
}

/// The figure of every run that has one; and the same figure from the runs of a claim's
/// counterfactual, where the claim judges that figure's metric (004 Figs. 18-19 again with a
/// share that covers the media's overhead).
pub(super) fn figures(ctx: &Results) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for r in &ctx.runs {
        for (fi, f) in r.figures.iter().enumerate() {
            if f.kind == FigureKind::Seq {
                let flow = f
                    .flow
                    .clone()
                    .or_else(|| r.flow.clone())
                    .unwrap_or_default();
                out.push(seq_figure(ctx, r, fi, f, &flow)?);
                continue;
            }
            out.push(curve_figure(ctx, r, fi, f, None));
            let metric = f.metric.clone().unwrap_or_default();
            for c in &ctx.ledger.claims {
                let Some(cf) = c.differs.as_ref().and_then(|d| d.counterfactual.as_ref()) else {
                    continue;
                };
                let judged = c.checks.iter().any(|(_, e)| {
                    e.cells()
                        .iter()
                        .any(|cell| cell.run == r.id && cell.metric == metric)
                });
                let variant = format!("cf:{}", c.id);
                if judged && ctx.obs.get(&variant, &r.id, 0).is_some() {
                    let mut fig = curve_figure(ctx, r, fi, f, Some((&variant, c.id.as_str())));
                    // The figure's own name ("004 Fig. 19") and whose counterfactual it is: the
                    // whole caption would not fit above the chart.
                    let name = fig.caption.split(':').next().unwrap_or_default();
                    fig.chart.title = format!("{name}: counterfactual of {}", c.id);
                    fig.caption =
                        format!("{} — counterfactual of {}: {}", fig.caption, c.id, cf.what);
                    out.push(fig);
                }
            }
        }
    }
    Ok(out)
}

/// One curve figure of run `r` (its `fi`-th), from the ledger's runs or, with `cf` = (variant,
/// claim id), from that claim's counterfactual runs.
fn curve_figure(
    ctx: &Results,
    r: &Run,
    fi: usize,
    f: &FigureSpec,
    cf: Option<(&str, &str)>,
) -> Figure {
    let variant = cf.map_or("", |(v, _)| v);
    let flow = f
        .flow
        .clone()
        .or_else(|| r.flow.clone())
        .unwrap_or_default();
    let x = f.x.as_deref().unwrap_or_default();
    let metric = f.metric.clone().unwrap_or_default();
    let (xpos, xaxis) = &r.axes[x];
    let numeric = xaxis
        .values
        .iter()
        .all(|v| v.as_float().is_some() || v.as_integer().is_some());
    let xval = |i: usize| -> f64 {
        let v = &xaxis.values[i];
        if numeric {
            v.as_float()
                .or(v.as_integer().map(|n| n as f64))
                .unwrap_or(i as f64)
        } else {
            i as f64
        }
    };
    let series: Vec<(String, Option<(usize, usize)>)> = match &f.series {
        None => vec![(flow.clone(), None)],
        Some(a) => {
            let (pos, ax) = &r.axes[a];
            ax.values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    // A number alone says little in a legend: "p = 0.1".
                    let name = match v {
                        toml::Value::String(t) => t.clone(),
                        other => format!("{a} = {other}"),
                    };
                    (name, Some((*pos, i)))
                })
                .collect()
        }
    };
    let fixed: Vec<(usize, usize)> = f
        .fixed
        .iter()
        .filter_map(|(a, v)| {
            let (pos, ax) = &r.axes[a];
            ax.values.iter().position(|x| x == v).map(|i| (*pos, i))
        })
        .collect();
    let mut lines = Vec::new();
    for (name, sel) in &series {
        let mut points = Vec::new();
        for (pi, (idx, _)) in r.points.iter().enumerate() {
            if sel.is_some_and(|(pos, i)| idx[pos] != i)
                || fixed.iter().any(|(pos, i)| idx[*pos] != *i)
            {
                continue;
            }
            let cell = super::ledger::Cell {
                run: r.id.clone(),
                point: pi,
                flow: flow.clone(),
                metric: metric.clone(),
                label: String::new(),
                bench: None,
            };
            let e = judge::estimate(ctx.obs, variant, &cell);
            let half = if e.half.is_finite() { e.half } else { 0.0 };
            points.push((xval(idx[*xpos]), e.mean * f.y_scale, half * f.y_scale));
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        lines.push(Line {
            label: name.clone(),
            points,
        });
        if let Some(paper) = f.paper.get(name) {
            // `nan` where the paper gives no number at that x.
            lines.push(Line {
                label: format!("{name} (paper)"),
                points: paper
                    .iter()
                    .enumerate()
                    .filter(|(_, y)| y.is_finite())
                    .map(|(i, y)| (xval(i), *y, 0.0))
                    .collect(),
            });
        }
    }
    let chart = Chart {
        title: f.title.clone(),
        x_label: xaxis.label.clone(),
        y_label: f.y_label.clone().unwrap_or_default(),
        lines,
        categories: (!numeric).then(|| xaxis.values.iter().map(label).collect()),
        error_bars: true,
        scale: Scale {
            log10_y: f.log_y,
            ..Scale::default()
        },
        markers: true,
        scatter: false,
    };
    Figure {
        run: r.id.clone(),
        index: fi,
        counterfactual: cf.map(|(_, id)| id.to_string()),
        caption: f.title.clone(),
        note: "mean and 95% interval per point".into(),
        chart,
    }
}

/// A sequence figure (003 Figs. 2, 4, 7): every data segment of `flow` that its sender put on
/// its hop in one repetition of one point, time against sequence number, new data and
/// retransmissions as two marks.
fn seq_figure(ctx: &Results, r: &Run, index: usize, f: &FigureSpec, flow: &str) -> Result<Figure> {
    let (point, at) = r.select(&f.at)?;
    let trace = ctx
        .obs
        .get("", &r.id, point)
        .and_then(|reps| reps.get(f.rep as usize))
        .and_then(|rep| rep.seq.get(flow))
        .with_context(|| format!("run {}: no sequence trace of flow {flow}", r.id))?;
    let from = f.from_s.unwrap_or(f64::NEG_INFINITY);
    let to = f.to_s.unwrap_or(f64::INFINITY);
    let mut new = Vec::new();
    let mut resent = Vec::new();
    for p in trace
        .packets
        .iter()
        .filter(|p| (from..=to).contains(&p.t_s))
    {
        let y = p.seq as f64 / 1024.0;
        if p.retransmit {
            resent.push((p.t_s, y, 0.0));
        } else {
            new.push((p.t_s, y, 0.0));
        }
    }
    let n = |v: &Vec<(f64, f64, f64)>| v.len();
    let chart = Chart {
        title: f.title.clone(),
        x_label: "time (s)".into(),
        y_label: "sequence number (KB)".into(),
        lines: vec![
            Line {
                label: format!("new data ({})", n(&new)),
                points: new,
            },
            Line {
                label: format!("retransmitted ({})", n(&resent)),
                points: resent,
            },
        ],
        categories: None,
        error_bars: false,
        scale: Scale::default(),
        markers: true,
        scatter: true,
    };
    let window = match (f.from_s, f.to_s) {
        (None, None) => String::new(),
        (a, b) => format!(
            ", {} s to {} s",
            a.map_or("start".into(), judge::sig),
            b.map_or("end".into(), judge::sig)
        ),
    };
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" at {at}")
    };
    Ok(Figure {
        run: r.id.clone(),
        index,
        counterfactual: None,
        caption: f.title.clone(),
        note: format!(
            "each data segment of {flow} as its sender put it on the hop (the packets that \
             mslink sim --pcap writes), repetition {}{at}{window}; first byte in KB (1024 bytes), \
             retransmissions by TCP marked apart",
            f.rep
        ),
        chart,
    })
}

pub(super) fn label(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
