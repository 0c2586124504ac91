//! The report of `mslink reproduce`: claims.json (everything, for programs), report.md (for a
//! repository or a paper's supplement, figures as PNG files beside it) and report.html
//! ([`super::report_html`]: self-contained, figures inline as SVG).
//!
//! Contract. The files are pure functions of the ledger, the options and the runs' results (no
//! dates, no wall-clock figures), written whole and replacing earlier ones. Each starts with
//! what a reader checks first: the verdict counts, then the claims that fail, are undecided
//! (with the repetitions that would decide them) or no longer differ, then every known
//! difference with its cause and what its counterfactual run showed, the mutants and which
//! claims caught them, and each paper's coverage; then, paper by paper, the figures and a row
//! per claim: the paper's words, the band and where it comes from, what was measured.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result};
use mslink_plot::chart::{Chart, Line, Scale};

use super::judge::{self, CheckResult, Judged, Mark, Verdict};
use super::ledger::{FigureKind, FigureSpec, Run};
use super::Results;

/// The commit of the git checkout holding `dir`, `+dirty` with uncommitted tracked changes.
fn commit(ctx: &Results) -> Option<String> {
    crate::provenance::git_commit(&ctx.opts.claims)
}

/// `mslink sim` command that reruns `run` alone (None when the ledger replaces its sweep,
/// which `--set` cannot express); with `--pcap` when the run's sequence traces are read (the
/// pcap files hold the same packets).
fn sim_command(run: &Run, claims_dir: &Path, pcap: bool) -> Option<String> {
    if run.sweep_replaced {
        return None;
    }
    let path = super::lexical(&claims_dir.join(&run.scenario_file));
    let mut c = format!(
        "mslink sim {} --out results/{} --reps {}{}",
        path.display(),
        run.id.replace('/', "-"),
        run.reps,
        if pcap { " --pcap" } else { "" }
    );
    for (k, v) in &run.sets {
        let _ = write!(c, " --set '{k}={v}'");
    }
    Some(c)
}

/// The command that reruns run `id`: `mslink sim` when it can, else `mslink reproduce` for
/// the claims that use it.
pub(super) fn rerun(ctx: &Results, id: &str) -> String {
    if let Some(b) = ctx.benches.iter().find(|b| b.id == id) {
        return b.command();
    }
    ctx.runs
        .iter()
        .find(|r| r.id == id)
        .map(|r| {
            sim_command(r, &ctx.opts.claims, super::captures(ctx.ledger, r))
                .unwrap_or_else(|| rerun_claims(ctx, r))
        })
        .unwrap_or_default()
}

/// `mslink reproduce` for the claims that use `run`.
fn rerun_claims(ctx: &Results, run: &Run) -> String {
    let mut c = String::from("mslink reproduce");
    if ctx.opts.quick {
        c.push_str(" --quick");
    }
    for j in ctx
        .judged
        .iter()
        .filter(|j| j.run.as_deref() == Some(&run.id))
    {
        let _ = write!(c, " --claim {}", j.id);
    }
    let _ = write!(c, " --out results/{}", run.id.replace('/', "-"));
    c
}

/// Writes OUT/claims.json, OUT/report.md, OUT/report.html and OUT/figures/.
pub(super) fn write(out: &Path, ctx: &Results) -> Result<()> {
    let commit = commit(ctx);
    let figures = figures(ctx)?;
    let json = claims_json(ctx, commit.as_deref());
    put(
        out,
        "claims.json",
        &(serde_json::to_string_pretty(&json)? + "\n"),
    )?;
    // report.md shows the figures as PNG files beside it; report.html carries them inline.
    let dir = out.join("figures");
    if dir.is_dir() {
        // Only our own earlier figures live here: a figure of a run not in this report must
        // not survive into it.
        for e in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "png") {
                std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
            }
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut svgs = Vec::new();
    for f in &figures {
        let png = mslink_plot::chart::to_png(&f.chart)
            .with_context(|| format!("drawing the figure of run {}", f.run))?;
        let p = dir.join(f.file());
        std::fs::write(&p, png).with_context(|| format!("writing {}", p.display()))?;
        let svg = mslink_plot::chart::to_svg(&f.chart)
            .with_context(|| format!("drawing the figure of run {}", f.run))?;
        svgs.push((
            f.run.clone(),
            format!("{} — {}", f.caption, f.note),
            svg,
            f.rerun(ctx),
        ));
    }
    put(
        out,
        "report.md",
        &markdown(ctx, commit.as_deref(), &figures),
    )?;
    put(
        out,
        "report.html",
        &super::report_html::html(ctx, commit.as_deref(), &svgs),
    )?;
    Ok(())
}

fn put(out: &Path, name: &str, text: &str) -> Result<()> {
    let p = out.join(name);
    std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
}

fn claims_json(ctx: &Results, commit: Option<&str>) -> serde_json::Value {
    let runs: Vec<serde_json::Value> = ctx
        .runs
        .iter()
        .map(|r| {
            let reps: Vec<usize> = (0..r.points.len())
                .map(|p| ctx.obs.get("", &r.id, p).map_or(0, Vec::len))
                .collect();
            serde_json::json!({
                "id": r.id,
                "scenario": r.scenario_file,
                "scenario_text": r.scenario_text,
                "set": r.sets.iter().map(|(k, v)| serde_json::json!([k, v])).collect::<Vec<_>>(),
                "sweep_points": r.points.len(),
                "reps": r.reps,
                "reps_per_point": reps,
                "deterministic": r.deterministic,
                "seed": r.scenario.sim.seed,
                "command": sim_command(r, &ctx.opts.claims, super::captures(ctx.ledger, r)),
            })
        })
        .collect();
    serde_json::json!({
        "provenance": {
            "mslink_version": env!("CARGO_PKG_VERSION"),
            "git_commit": commit,
            "command": ctx.opts.command,
            "quick": ctx.opts.quick,
            "max_reps": ctx.opts.max_reps,
            "statistics": "mean over repetitions, Student-t 95% confidence intervals; two cells are compared pair by pair over their repetitions (repetition r of every point has the same seed): orderings and differences by the interval of the per-repetition differences, ratios by the delta method with the pairs' covariance; a check holds when the whole interval satisfies the expectation, fails when the whole interval contradicts it, and is inconclusive otherwise",
            "repetition_seeds": "repetition 0 uses the scenario seed; repetition r an independent seed drawn from (seed, r)",
        },
        "counts": super::count(&ctx.judged),
        "coverage": ctx.coverage.as_ref().map(|c| c.summary()),
        "mutants": ctx.mutants,
        "papers": ctx.ledger.papers,
        "claims": ctx.judged,
        "runs": runs,
        "repetitions_added": ctx.extended,
        "bench_runs": ctx.benches.iter().map(|b| serde_json::json!({
            "id": b.id,
            "command": b.command(),
            "reps": b.reps,
            "deterministic": b.deterministic,
            "measures": if b.deterministic { "counts: the same on any machine" } else { "this machine: the numbers are not reproducible elsewhere, nor identical between runs" },
        })).collect::<Vec<_>>(),
    })
}

/// One check in words: "[loss 3.0] a / b = 0.7 ± 0.01 (expected ..) — inconclusive, needs 12".
pub(super) fn check_line(k: &CheckResult) -> String {
    let at = if k.at.is_empty() {
        String::new()
    } else {
        format!("[{}] ", k.at)
    };
    let mark = match (k.mark, k.reps_needed) {
        (Mark::Holds, _) => String::new(),
        (Mark::Inconclusive, Some(n)) => {
            format!(" — undecided: about {n} repetitions per point would decide it")
        }
        (Mark::Inconclusive, None) => " — undecided".into(),
        (Mark::Fails, _) => " — FAILS".into(),
    };
    format!("{at}{}{mark}", k.text)
}

fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A paragraph about the counterfactual of a judged difference.
pub(super) fn counterfactual_text(j: &Judged) -> Option<String> {
    let cf = j.counterfactual.as_ref()?;
    let outcome = match cf.mark {
        Mark::Holds => "the paper's behaviour appears: every check holds",
        Mark::Inconclusive => "undecided at these repetitions",
        Mark::Fails => {
            "the paper's behaviour still does not appear: the stated cause is not (all of) it"
        }
    };
    Some(format!("With {} ({}): {outcome}.", cf.what, cf.edits))
}

/// The summary a reader sees first, as (heading, rows of (claim id, text)).
pub(super) fn summary(ctx: &Results) -> Vec<(&'static str, Vec<(String, String)>)> {
    let pick =
        |v: Verdict| -> Vec<&Judged> { ctx.judged.iter().filter(|j| j.verdict == v).collect() };
    let mut out = Vec::new();
    // The checks of each claim with `verdict` that carry `mark`, in words.
    let marked = |verdict: Verdict, mark: Mark| -> Vec<(String, String)> {
        pick(verdict)
            .iter()
            .map(|j| {
                let k: Vec<String> = j
                    .checks
                    .iter()
                    .filter(|k| k.mark == mark)
                    .map(check_line)
                    .collect();
                (j.id.clone(), k.join("; "))
            })
            .collect()
    };
    out.push(("Claims that fail", marked(Verdict::Fails, Mark::Fails)));
    let nld: Vec<(String, String)> = pick(Verdict::NoLongerDiffers)
        .iter()
        .map(|j| {
            (
                j.id.clone(),
                format!(
                    "marked as a difference ({}), yet every check holds: the entry is out of date",
                    j.reason.as_deref().unwrap_or("")
                ),
            )
        })
        .collect();
    out.push(("Known differences that no longer differ", nld));
    out.push((
        "Undecided claims",
        marked(Verdict::Inconclusive, Mark::Inconclusive),
    ));
    let dif: Vec<(String, String)> = pick(Verdict::Differs)
        .iter()
        .map(|j| {
            let mut t = format!(
                "{} (cause: {})",
                j.reason.as_deref().unwrap_or(""),
                j.cause.map_or("", |c| c.word())
            );
            if let Some(cf) = counterfactual_text(j) {
                t.push(' ');
                t.push_str(&cf);
            }
            (j.id.clone(), t)
        })
        .collect();
    out.push(("Known differences from the papers", dif));
    out
}

fn markdown(ctx: &Results, commit: Option<&str>, figures: &[Figure]) -> String {
    let mut s = String::new();
    let c = super::count(&ctx.judged);
    let _ = writeln!(s, "# mslink reproduce: the papers' claims, checked\n");
    let _ = writeln!(
        s,
        "Made by `{}` (mslink {}, commit {}). Each value is the mean over the repetitions with its \
         Student-t 95% interval; a check *holds* when the whole interval satisfies the \
         expectation, *fails* when the whole interval contradicts it, and is *undecided* \
         (inconclusive) otherwise. Every band is the paper's number widened by how precisely it \
         can be read, or carries the reason it was chosen.\n",
        ctx.opts.command,
        env!("CARGO_PKG_VERSION"),
        commit.unwrap_or("unknown")
    );
    let _ = writeln!(
        s,
        "**{} hold, {} inconclusive, {} fail, {} differ (known differences), {} no longer differ, {} not checkable.**\n",
        c["holds"], c["inconclusive"], c["fails"], c["differs"], c["no longer differs"], c["not checkable"]
    );
    if let Some((k, n)) = mutation(ctx) {
        let _ = writeln!(s, "**Mutation score: {k} of {n} mutants caught.**\n");
    }
    if !ctx.benches.iter().all(|b| b.deterministic) {
        let _ = writeln!(s, "{}\n", bench_note(ctx));
    }
    for (head, rows) in summary(ctx) {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(s, "## {head}\n\n| claim | |\n|---|---|");
        for (id, t) in rows {
            let _ = writeln!(s, "| `{id}` | {} |", md(&t));
        }
        s.push('\n');
    }
    if let Some(ms) = &ctx.mutants {
        let _ = writeln!(
            s,
            "## Mutants\n\nEach mutant is a deliberately broken engine; a claim that holds on the \
             engine and fails on the mutant catches it.\n\n| mutant | what it breaks | should \
             break | caught by |\n|---|---|---|---|"
        );
        for m in ms {
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} |",
                m.name,
                md(&m.what),
                md(&m.breaks),
                if m.killed {
                    m.killed_by
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                } else {
                    "**nothing: the mutant survives**".into()
                }
            );
        }
        s.push('\n');
    }
    if let Some(cov) = &ctx.coverage {
        let _ = writeln!(
            s,
            "## Coverage of the papers\n\nEvery quantitative or comparative statement of each paper \
             (`claims/coverage/`), mapped to the claims that check it, to the model input it is, \
             or to the reason nothing here checks it.\n\n| paper | statements | checked by claims | \
             inputs of the model | not checked |\n|---|---|---|---|---|"
        );
        for (p, k) in cov.summary() {
            let _ = writeln!(
                s,
                "| {p} | {} | {} | {} | {} |",
                k.statements, k.checked, k.inputs, k.not_checked
            );
        }
        s.push('\n');
    }
    for (paper, title) in &ctx.ledger.papers {
        let rows: Vec<&Judged> = ctx.judged.iter().filter(|j| j.paper == *paper).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(s, "## {paper}: {title}\n");
        let mut shown = std::collections::BTreeSet::new();
        for j in &rows {
            let Some(run) = j.run.as_deref() else {
                continue;
            };
            if !shown.insert(run) {
                continue;
            }
            for f in figures.iter().filter(|f| f.run == run) {
                let cmd = f.rerun(ctx);
                let _ = writeln!(
                    s,
                    "![{c}](figures/{})\n\n*{c}: {}.* Rerun: `{cmd}`\n",
                    f.file(),
                    f.note,
                    c = f.caption
                );
            }
        }
        let _ = writeln!(
            s,
            "| verdict | claim | the paper says | expected | measured |\n|---|---|---|---|---|"
        );
        for j in rows {
            let mut measured: Vec<String> = j.checks.iter().map(check_line).collect();
            if let Some(r) = &j.reason {
                measured.insert(
                    0,
                    format!(
                        "*{}:* {r}",
                        if j.verdict == Verdict::NotCheckable {
                            "Why"
                        } else {
                            "Why we differ"
                        }
                    ),
                );
            }
            if let Some(cf) = counterfactual_text(j) {
                measured.push(cf);
            }
            let _ = writeln!(
                s,
                "| {} | `{}` ({}) | \"{}\" | {} | {} |",
                j.verdict.word(),
                j.id,
                md(&j.place),
                md(&j.quote),
                md(j.band_text.as_deref().unwrap_or("")),
                md(&measured.join("; "))
            );
        }
        s.push('\n');
    }
    let _ = writeln!(s, "## Runs\n");
    let _ = writeln!(
        s,
        "| run | scenario | points × reps | rerun |\n|---|---|---|---|"
    );
    for r in &ctx.runs {
        let added = ctx
            .extended
            .get(&r.id)
            .map_or(String::new(), |n| format!(" (+{n} to decide)"));
        let _ = writeln!(
            s,
            "| `{}` | `{}` | {} × {}{}{added} | `{}` |",
            r.id,
            r.scenario_file,
            r.points.len(),
            r.reps,
            if r.deterministic {
                ", deterministic"
            } else {
                ""
            },
            rerun(ctx, &r.id)
        );
    }
    for b in &ctx.benches {
        let _ = writeln!(
            s,
            "| `{}` | bench{}: `{}` | 1 × {} | `{}` |",
            b.id,
            if b.deterministic {
                ", counts"
            } else {
                ", this machine"
            },
            b.command(),
            b.reps,
            b.command()
        );
    }
    s
}

/// (caught, applicable) mutants.
pub(super) fn mutation(ctx: &Results) -> Option<(usize, usize)> {
    ctx.mutants.as_ref().map(|ms| {
        (
            ms.iter().filter(|m| m.killed).count(),
            ms.iter().filter(|m| m.applies()).count(),
        )
    })
}

/// What a report with benchmark runs that time this machine says about them.
pub(super) fn bench_note(ctx: &Results) -> String {
    let timed: Vec<_> = ctx.benches.iter().filter(|b| !b.deterministic).collect();
    let cmds: Vec<String> = timed
        .iter()
        .map(|b| format!("`{}` ({} runs)", b.command(), b.reps))
        .collect();
    format!(
        "With --bench: the claims of runs {} are measurements of this machine, by {}; each run \
         of a command is one repetition. Their numbers are this machine's and change between \
         runs.",
        timed
            .iter()
            .map(|b| format!("`{}`", b.id))
            .collect::<Vec<_>>()
            .join(", "),
        cmds.join(", ")
    )
}

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
