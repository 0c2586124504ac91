//! The report of `mslink reproduce`: claims.json (everything, for programs), report.md (for a
//! repository or a paper's supplement) and report.html (self-contained: inline SVG figures
//! from mslink-plot, a verdict badge per claim, 95% intervals, provenance and the commands that
//! rerun each claim and figure).
//!
//! Contract. The three files are pure functions of the ledger, the options and the runs'
//! results (no dates, no wall-clock figures), written whole and replacing earlier ones.
//! report.html carries a small script that counts, once the page has loaded, the claim rows,
//! the verdicts and the figures actually drawn, and records them with any script error in
//! `#selfcheck`; the browser test (crates/cli/tests/reproduce.rs) reads that element.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result};
use mslink_plot::chart::{Chart, Line, Scale};

use super::bench::BenchRun;
use super::judge::{self, Judged, Mark, Observations, Verdict};
use super::ledger::{FigureKind, Ledger, Run};
use super::ReproduceArgs;

/// What the report is made from.
pub struct Context<'a> {
    pub args: &'a ReproduceArgs,
    pub ledger: &'a Ledger,
    pub runs: &'a [&'a Run],
    pub benches: &'a [&'a BenchRun],
    pub obs: &'a Observations,
    pub judged: &'a [Judged],
}

/// The command that produced this report.
fn command(args: &ReproduceArgs) -> String {
    let mut c = String::from("mslink reproduce");
    if args.quick {
        c.push_str(" --quick");
    }
    if args.bench {
        c.push_str(" --bench");
    }
    for p in &args.paper {
        let _ = write!(c, " --paper {p}");
    }
    for k in &args.claim {
        let _ = write!(c, " --claim {k}");
    }
    if args.claims != Path::new("claims") {
        let _ = write!(c, " --claims {}", args.claims.display());
    }
    if let Some(o) = &args.out {
        let _ = write!(c, " --out {}", o.display());
    }
    c
}

/// `mslink sim` command that reruns `run` alone (None when the ledger replaces its sweep,
/// which `--set` cannot express); with `--pcap` when the run's sequence traces are read (the
/// pcap files hold the same packets).
fn sim_command(run: &Run, claims_dir: &Path, pcap: bool) -> Option<String> {
    if run.sweep_replaced {
        return None;
    }
    let path = lexical(&claims_dir.join(&run.scenario_file));
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

/// `path` with `a/..` pairs folded away (claims/../scenarios/x -> scenarios/x), for commands
/// a reader copies.
fn lexical(path: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir
                if matches!(
                    out.components().next_back(),
                    Some(std::path::Component::Normal(_))
                ) =>
            {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn counts(judged: &[Judged]) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for v in [
        Verdict::Holds,
        Verdict::Fails,
        Verdict::Differs,
        Verdict::NotCheckable,
    ] {
        m.insert(v.word(), judged.iter().filter(|j| j.verdict == v).count());
    }
    m
}

/// Writes OUT/claims.json, OUT/report.md and OUT/report.html.
pub fn write(out: &Path, ctx: &Context) -> Result<()> {
    let commit = crate::convention::git_commit(&ctx.args.claims);
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
        svgs.push((f.run.clone(), format!("{} — {}", f.caption, f.note), svg));
    }
    put(
        out,
        "report.md",
        &markdown(ctx, commit.as_deref(), &figures),
    )?;
    put(out, "report.html", &html(ctx, commit.as_deref(), &svgs))?;
    Ok(())
}

fn put(out: &Path, name: &str, text: &str) -> Result<()> {
    let p = out.join(name);
    std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
}

fn claims_json(ctx: &Context, commit: Option<&str>) -> serde_json::Value {
    let runs: Vec<serde_json::Value> = ctx
        .runs
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id,
                "scenario": r.scenario_file,
                "scenario_text": r.scenario_text,
                "set": r.sets.iter().map(|(k, v)| serde_json::json!([k, v])).collect::<Vec<_>>(),
                "sweep_points": r.points.len(),
                "reps": r.reps,
                "seed": r.scenario.sim.seed,
                "command": sim_command(r, &ctx.args.claims, super::captures(ctx.ledger, r)),
            })
        })
        .collect();
    serde_json::json!({
        "provenance": {
            "mslink_version": env!("CARGO_PKG_VERSION"),
            "git_commit": commit,
            "command": command(ctx.args),
            "quick": ctx.args.quick,
            "statistics": "mean over repetitions, Student-t 95% confidence intervals; orderings by Welch's interval of the difference, ratios by the delta method",
            "repetition_seeds": "repetition 0 uses the scenario seed; repetition r an independent seed drawn from (seed, r)",
        },
        "counts": counts(ctx.judged),
        "papers": ctx.ledger.papers,
        "claims": ctx.judged,
        "runs": runs,
        "bench_runs": ctx.benches.iter().map(|b| serde_json::json!({
            "id": b.id,
            "command": b.command(),
            "reps": b.reps,
            "measures": "this machine: the numbers are not reproducible elsewhere, nor identical between runs",
        })).collect::<Vec<_>>(),
    })
}

fn verdict_line(j: &Judged) -> String {
    j.checks
        .iter()
        .map(|k| {
            let at = if k.at.is_empty() {
                String::new()
            } else {
                format!("[{}] ", k.at)
            };
            let mark = match k.mark {
                Mark::Holds => "",
                Mark::WithinNoise => " (within noise)",
                Mark::Fails => " (FAILS)",
            };
            format!("{at}{}{mark}", k.text)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn markdown(ctx: &Context, commit: Option<&str>, figures: &[Figure]) -> String {
    let mut s = String::new();
    let c = counts(ctx.judged);
    let _ = writeln!(s, "# mslink reproduce: the papers' claims, checked\n");
    let _ = writeln!(
        s,
        "Made by `{}` (mslink {}, commit {}). Each value is the mean over the repetitions with its \
         Student-t 95% interval; an ordering holds *within noise* when the interval of the \
         difference still reaches the relation.\n",
        command(ctx.args),
        env!("CARGO_PKG_VERSION"),
        commit.unwrap_or("unknown")
    );
    let _ = writeln!(
        s,
        "**{} hold, {} fail, {} differ (known differences), {} not checkable.**\n",
        c["holds"], c["fails"], c["differs"], c["not checkable"]
    );
    if !ctx.benches.is_empty() {
        let _ = writeln!(s, "{}\n", bench_note(ctx));
    }
    for (paper, title) in &ctx.ledger.papers {
        let rows: Vec<&Judged> = ctx
            .judged
            .iter()
            .filter(|j| j.paper == *paper && matches!(j.verdict, Verdict::Holds | Verdict::Fails))
            .collect();
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
                let cmd = rerun(ctx, run);
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
            "| verdict | claim | where | says | measured |\n|---|---|---|---|---|"
        );
        for j in rows {
            let _ = writeln!(
                s,
                "| {} | `{}` | {} | {} | {} |",
                j.verdict.word(),
                j.id,
                md(&j.place),
                md(&j.says),
                md(&verdict_line(j))
            );
        }
        s.push('\n');
    }
    let differs: Vec<&Judged> = ctx
        .judged
        .iter()
        .filter(|j| j.verdict == Verdict::Differs)
        .collect();
    if !differs.is_empty() {
        let _ = writeln!(s, "## Known differences from the papers\n");
        let _ = writeln!(
            s,
            "| claim | where | says | why we differ | measured |\n|---|---|---|---|---|"
        );
        for j in differs {
            let _ = writeln!(
                s,
                "| `{}` | {} {} | {} | {} | {} |",
                j.id,
                j.paper,
                md(&j.place),
                md(&j.says),
                md(j.reason.as_deref().unwrap_or("")),
                md(&verdict_line(j))
            );
        }
        s.push('\n');
    }
    let nc: Vec<&Judged> = ctx
        .judged
        .iter()
        .filter(|j| j.verdict == Verdict::NotCheckable)
        .collect();
    if !nc.is_empty() {
        let _ = writeln!(s, "## Claims not checkable here\n");
        let _ = writeln!(s, "| claim | where | says | why |\n|---|---|---|---|");
        for j in nc {
            let _ = writeln!(
                s,
                "| `{}` | {} {} | {} | {} |",
                j.id,
                j.paper,
                md(&j.place),
                md(&j.says),
                md(j.reason.as_deref().unwrap_or(""))
            );
        }
        s.push('\n');
    }
    let _ = writeln!(s, "## Runs\n");
    let _ = writeln!(
        s,
        "| run | scenario | points × reps | rerun |\n|---|---|---|---|"
    );
    for r in ctx.runs {
        let _ = writeln!(
            s,
            "| `{}` | `{}` | {} × {} | `{}` |",
            r.id,
            r.scenario_file,
            r.points.len(),
            r.reps,
            rerun(ctx, &r.id)
        );
    }
    for b in ctx.benches {
        let _ = writeln!(
            s,
            "| `{}` | bench, this machine: `{}` | 1 × {} | `{}` |",
            b.id,
            b.command(),
            b.reps,
            b.command()
        );
    }
    s
}

/// What a report with benchmark runs says about them.
fn bench_note(ctx: &Context) -> String {
    let cmds: Vec<String> = ctx
        .benches
        .iter()
        .map(|b| format!("`{}` ({} runs)", b.command(), b.reps))
        .collect();
    format!(
        "With --bench: the claims of runs {} are measurements of this machine, by {}; each run \
         of a command is one repetition. Their numbers are this machine's and change between \
         runs.",
        ctx.benches
            .iter()
            .map(|b| format!("`{}`", b.id))
            .collect::<Vec<_>>()
            .join(", "),
        cmds.join(", ")
    )
}

/// The command that reruns run `id`: `mslink sim` when it can, else `mslink reproduce` for
/// the claims that use it.
fn rerun(ctx: &Context, id: &str) -> String {
    if let Some(b) = ctx.benches.iter().find(|b| b.id == id) {
        return b.command();
    }
    ctx.runs
        .iter()
        .find(|r| r.id == id)
        .map(|r| {
            sim_command(r, &ctx.args.claims, super::captures(ctx.ledger, r))
                .unwrap_or_else(|| rerun_claims(ctx, r))
        })
        .unwrap_or_default()
}

/// `mslink reproduce` for the claims that use `run`.
fn rerun_claims(ctx: &Context, run: &Run) -> String {
    let mut c = String::from("mslink reproduce");
    if ctx.args.quick {
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

fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A run's figure: run id, caption, what its marks are, chart.
struct Figure {
    run: String,
    /// Which of the run's figures.
    index: usize,
    caption: String,
    /// What the marks show ("mean and 95% interval per point").
    note: String,
    chart: Chart,
}

impl Figure {
    /// File name under OUT/figures/.
    fn file(&self) -> String {
        let run = self.run.replace('/', "-");
        if self.index == 0 {
            format!("{run}.png")
        } else {
            format!("{run}-{}.png", self.index + 1)
        }
    }
}

/// The figure of every run that has one.
fn figures(ctx: &Context) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for r in ctx.runs {
        for (fi, f) in r.figures.iter().enumerate() {
            let flow = f
                .flow
                .clone()
                .or_else(|| r.flow.clone())
                .unwrap_or_default();
            if f.kind == FigureKind::Seq {
                out.push(seq_figure(ctx, r, fi, f, &flow)?);
                continue;
            }
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
                    let e = judge::estimate(ctx.obs, &cell);
                    let half = if e.half.is_finite() { e.half } else { 0.0 };
                    points.push((xval(idx[*xpos]), e.mean * f.y_scale, half * f.y_scale));
                }
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                lines.push(Line {
                    label: name.clone(),
                    points,
                });
                if let Some(paper) = f.paper.get(name) {
                    lines.push(Line {
                        label: format!("{name} (paper)"),
                        points: paper
                            .iter()
                            .enumerate()
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
            out.push(Figure {
                run: r.id.clone(),
                index: fi,
                caption: f.title.clone(),
                note: "mean and 95% interval per point".into(),
                chart,
            });
        }
    }
    Ok(out)
}

/// A sequence figure (003 Figs. 2, 4, 7): every data segment of `flow` that its sender put on
/// its hop in one repetition of one point, time against sequence number, new data and
/// retransmissions as two marks.
fn seq_figure(
    ctx: &Context,
    r: &Run,
    index: usize,
    f: &super::ledger::FigureSpec,
    flow: &str,
) -> Result<Figure> {
    let (point, at) = r.select(&f.at)?;
    let trace = ctx
        .obs
        .get(&(r.id.clone(), point))
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

fn label(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}\
table{border-collapse:collapse;width:100%;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;font-size:14px}\
th{background:#f3f3f3}.badge{display:inline-block;padding:2px 8px;border-radius:10px;color:#fff;font-weight:600;white-space:nowrap}\
.holds{background:#2a7d2a}.fails{background:#c0392b}.differs{background:#b9770e}.not-checkable{background:#777}\
figure{margin:1em 0;border:1px solid #ddd;padding:8px}figure svg{max-width:100%;height:auto}\
code{background:#f5f5f5;padding:1px 3px}.noise{color:#b9770e}.fail{color:#c0392b;font-weight:600}";

const SELFCHECK: &str = "<script>window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message))});\
document.addEventListener('DOMContentLoaded',function(){var rows=document.querySelectorAll('tr.claim');var v={};\
rows.forEach(function(r){var k=r.getAttribute('data-verdict');v[k]=(v[k]||0)+1});\
var figs=Array.prototype.slice.call(document.querySelectorAll('figure svg'));\
var drawn=figs.filter(function(s){var b=s.getBoundingClientRect();return b.width>0&&b.height>0&&s.querySelectorAll('path,polyline,line,circle,rect').length>0}).length;\
var el=document.getElementById('selfcheck');el.setAttribute('data-rows',rows.length);el.setAttribute('data-figures',figs.length);\
el.setAttribute('data-drawn',drawn);el.setAttribute('data-verdicts',JSON.stringify(v));el.setAttribute('data-errors',JSON.stringify(window.__errors));\
el.textContent='Self-check: '+rows.length+' claims, '+drawn+' of '+figs.length+' figures drawn, '+window.__errors.length+' script errors.'});</script>";

fn html(ctx: &Context, commit: Option<&str>, figures: &[(String, String, String)]) -> String {
    let c = counts(ctx.judged);
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">{SELFCHECK}<title>mslink reproduce</title><style>{STYLE}</style></head><body>"
    );
    let _ = write!(
        s,
        "<h1>The papers' claims, checked by mslink</h1><p>Made by <code>{}</code> — mslink {}, commit {}. \
         Values are means over repetitions with Student-t 95% intervals; an ordering holds <span class=\"noise\">within noise</span> \
         when the interval of the difference still reaches the relation.</p>",
        esc(&command(ctx.args)),
        env!("CARGO_PKG_VERSION"),
        esc(commit.unwrap_or("unknown"))
    );
    let _ = write!(
        s,
        "<p id=\"counts\" data-holds=\"{h}\" data-fails=\"{f}\" data-differs=\"{d}\" data-not-checkable=\"{n}\">\
         <span class=\"badge holds\">{h} hold</span> <span class=\"badge fails\">{f} fail</span> \
         <span class=\"badge differs\">{d} differ</span> <span class=\"badge not-checkable\">{n} not checkable</span></p>\
         <p id=\"selfcheck\">Self-check did not run (scripts off?).</p>{b}",
        b = if ctx.benches.is_empty() {
            String::new()
        } else {
            // The note's `code` spans as <code>.
            let html: String = esc(&bench_note(ctx))
                .split('`')
                .enumerate()
                .map(|(i, part)| {
                    if i % 2 == 1 {
                        format!("<code>{part}</code>")
                    } else {
                        part.to_string()
                    }
                })
                .collect();
            format!("<p id=\"bench-note\">{html}</p>")
        },
        h = c["holds"],
        f = c["fails"],
        d = c["differs"],
        n = c["not checkable"]
    );
    for (paper, title) in &ctx.ledger.papers {
        let rows: Vec<&Judged> = ctx.judged.iter().filter(|j| j.paper == *paper).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = write!(s, "<h2>{} — {}</h2>", esc(paper), esc(title));
        let mut shown = std::collections::BTreeSet::new();
        for j in &rows {
            if let Some(run) = j.run.as_deref() {
                if shown.insert(run) {
                    for (n, (id, caption, svg)) in figures.iter().filter(|f| f.0 == run).enumerate()
                    {
                        let cmd = rerun(ctx, id);
                        let _ = write!(
                            s,
                            "<figure id=\"fig-{}-{n}\">{svg}<figcaption>{}. Rerun: <code>{}</code></figcaption></figure>",
                            esc(&id.replace('/', "-")),
                            esc(caption),
                            esc(&cmd)
                        );
                    }
                }
            }
        }
        let _ = write!(s, "<table><tr><th>verdict</th><th>claim</th><th>where</th><th>says</th><th>measured</th></tr>");
        for j in rows {
            let cls = j.verdict.word().replace(' ', "-");
            let mut measured = String::new();
            if let Some(r) = &j.reason {
                let _ = write!(
                    measured,
                    "<p><b>{}:</b> {}</p>",
                    if j.verdict == Verdict::Differs {
                        "Why we differ"
                    } else {
                        "Why"
                    },
                    esc(r)
                );
            }
            for k in &j.checks {
                let cls = match k.mark {
                    Mark::Holds => "",
                    Mark::WithinNoise => " class=\"noise\"",
                    Mark::Fails => " class=\"fail\"",
                };
                let at = if k.at.is_empty() {
                    String::new()
                } else {
                    format!("[{}] ", esc(&k.at))
                };
                let _ = write!(measured, "<div{cls}>{at}{}</div>", esc(&k.text));
            }
            let _ = write!(
                s,
                "<tr class=\"claim\" data-verdict=\"{cls}\" id=\"{id}\"><td><span class=\"badge {cls}\">{}</span></td><td><code>{id}</code></td><td>{}</td><td>{}</td><td>{measured}</td></tr>",
                j.verdict.word(),
                esc(&j.place),
                esc(&j.says),
                id = esc(&j.id)
            );
        }
        s.push_str("</table>");
    }
    s.push_str("<h2>Runs</h2><table><tr><th>run</th><th>scenario</th><th>points × reps</th><th>seed</th><th>rerun</th></tr>");
    for r in ctx.runs {
        let _ = write!(
            s,
            "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{} × {}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(&r.id),
            esc(&r.scenario_file),
            r.points.len(),
            r.reps,
            r.scenario.sim.seed,
            esc(&rerun(ctx, &r.id))
        );
    }
    for b in ctx.benches {
        let _ = write!(
            s,
            "<tr><td><code>{}</code></td><td>bench, this machine: <code>{c}</code></td><td>1 × {}</td><td>-</td><td><code>{c}</code></td></tr>",
            esc(&b.id),
            b.reps,
            c = esc(&b.command())
        );
    }
    s.push_str("</table></body></html>\n");
    s
}
