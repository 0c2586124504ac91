//! The report of `mslink reproduce`: claims.json (everything, for programs), report.md (for a
//! repository or a paper's supplement, figures as PNG files beside it) and report.html
//! ([`super::report_html`]: self-contained, figures inline as SVG); the figures are drawn from
//! [`super::report_figures`].
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

use super::judge::{CheckResult, Judged, Mark, Verdict};
use super::ledger::Run;
use super::report_figures::{figures, Figure};
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

/// report.md: the head, the summary, the mutants, the coverage, each paper, the runs.
fn markdown(ctx: &Results, commit: Option<&str>, figures: &[Figure]) -> String {
    let mut s = String::new();
    markdown_head(&mut s, ctx, commit);
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
        markdown_mutants(&mut s, ms);
    }
    if let Some(cov) = &ctx.coverage {
        markdown_coverage(&mut s, cov);
    }
    for (paper, title) in &ctx.ledger.papers {
        let rows: Vec<&Judged> = ctx.judged.iter().filter(|j| j.paper == *paper).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(s, "## {paper}: {title}\n");
        markdown_figures(&mut s, ctx, &rows, figures);
        let _ = writeln!(
            s,
            "| verdict | claim | the paper says | expected | measured |\n|---|---|---|---|---|"
        );
        for j in rows {
            s.push_str(&markdown_claim_row(j));
        }
        s.push('\n');
    }
    markdown_runs(&mut s, ctx);
    s
}

/// The title, what made the report and how to read it, the verdict counts, the mutation score
/// and the note on benchmarks of this machine.
fn markdown_head(s: &mut String, ctx: &Results, commit: Option<&str>) {
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
}

/// The mutants section: each mutant, what it breaks and the claims that caught it.
fn markdown_mutants(s: &mut String, ms: &[super::mutants::MutantResult]) {
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

/// The coverage section: per paper, its statements and how many are checked, inputs of the
/// model or not checked.
fn markdown_coverage(s: &mut String, cov: &super::coverage::Coverage) {
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

/// The figures of the runs a paper's claims (`rows`) are judged on, each run's once, with the
/// command that redraws them.
fn markdown_figures(s: &mut String, ctx: &Results, rows: &[&Judged], figures: &[Figure]) {
    let mut shown = std::collections::BTreeSet::new();
    for j in rows {
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
}

/// A claim's row: verdict, id and place, the paper's words, the band, and what was measured
/// (why we differ, each check, the counterfactual).
fn markdown_claim_row(j: &Judged) -> String {
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
    format!(
        "| {} | `{}` ({}) | \"{}\" | {} | {} |\n",
        j.verdict.word(),
        j.id,
        md(&j.place),
        md(&j.quote),
        md(j.band_text.as_deref().unwrap_or("")),
        md(&measured.join("; "))
    )
}

/// The runs section: each simulation and benchmark run, its points and repetitions, and the
/// command that reruns it.
fn markdown_runs(s: &mut String, ctx: &Results) {
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
