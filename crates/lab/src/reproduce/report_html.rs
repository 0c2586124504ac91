//! report.html of `mslink reproduce`: one self-contained page (figures inline as SVG, no
//! network), navigable: a table of contents with anchors, the summary of failures, undecided
//! claims and known differences first, one badge colour per verdict, tables that wrap to the
//! page width.
//!
//! Contract. A pure function of the results. The page carries a small script that, once loaded,
//! records in `#selfcheck` what the browser test (crates/cli/tests/reproduce.rs) reads: the claim
//! rows and their verdicts, the figures drawn, the internal links whose target is missing, the
//! elements wider than the viewport, and every script error or `console.error` call.

use std::fmt::Write as _;

use super::judge::{Judged, Mark, Verdict};
use super::report::{bench_note, check_line, counterfactual_text, mutation, rerun, summary};
use super::Results;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An anchor-safe id.
fn anchor(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

const STYLE: &str = "*{box-sizing:border-box}body{font-family:system-ui,sans-serif;margin:0 auto;padding:1em 2em;max-width:1200px;color:#222;line-height:1.4}\
table{border-collapse:collapse;width:100%;table-layout:fixed;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;font-size:14px;overflow-wrap:anywhere;word-break:break-word}\
th{background:#f3f3f3;text-align:left}.badge{display:inline-block;padding:2px 8px;border-radius:10px;color:#fff;font-weight:600;font-size:13px}\
.holds{background:#2a7d2a}.inconclusive{background:#2c6fb0}.fails{background:#c0392b}.differs{background:#b9770e}.no-longer-differs{background:#8e44ad}.not-checkable{background:#777}\
figure{margin:1em 0;border:1px solid #ddd;padding:8px;max-width:100%}figure svg{max-width:100%;height:auto;display:block}\
code{background:#f5f5f5;padding:1px 3px;overflow-wrap:anywhere;word-break:break-all}blockquote{margin:0;padding-left:8px;border-left:3px solid #bbb;color:#444}\
.m-inconclusive{color:#2c6fb0}.m-fails{color:#c0392b;font-weight:600}nav ol{columns:2}\
col.v{width:9em}col.c{width:16%}col.q{width:26%}col.b{width:18%}";

const SELFCHECK: &str = "<script>window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message))});\
(function(){var ce=console.error;console.error=function(){window.__errors.push(Array.prototype.join.call(arguments,' '));ce.apply(console,arguments)}})();\
window.addEventListener('load',function(){var rows=document.querySelectorAll('tr.claim');var v={};\
rows.forEach(function(r){var k=r.getAttribute('data-verdict');v[k]=(v[k]||0)+1});\
var figs=Array.prototype.slice.call(document.querySelectorAll('figure svg'));\
var drawn=figs.filter(function(s){var b=s.getBoundingClientRect();return b.width>0&&b.height>0&&s.querySelectorAll('path,polyline,line,circle,rect').length>0}).length;\
var broken=[];document.querySelectorAll('a[href^=\"#\"]').forEach(function(a){var id=decodeURIComponent(a.getAttribute('href').slice(1));if(!document.getElementById(id))broken.push(id)});\
var w=document.documentElement.clientWidth;var wide=[];document.querySelectorAll('body *').forEach(function(e){var b=e.getBoundingClientRect();if(b.width>0&&b.right>w+1&&wide.length<10)wide.push(e.tagName.toLowerCase()+(e.id?'#'+e.id:'')+':'+Math.round(b.right))});\
var el=document.getElementById('selfcheck');el.setAttribute('data-rows',rows.length);el.setAttribute('data-figures',figs.length);\
el.setAttribute('data-drawn',drawn);el.setAttribute('data-verdicts',JSON.stringify(v));el.setAttribute('data-errors',JSON.stringify(window.__errors));\
el.setAttribute('data-broken-links',JSON.stringify(broken));el.setAttribute('data-overflow',JSON.stringify(wide));el.setAttribute('data-width',w);\
el.textContent='Self-check: '+rows.length+' claims, '+drawn+' of '+figs.length+' figures drawn, '+broken.length+' broken links, '+wide.length+' elements wider than the page, '+window.__errors.length+' script errors.'});</script>";

/// A figure of the page: (run id, caption, SVG, the command that redraws it).
type HtmlFigure = (String, String, String, String);

/// The whole page; `figures` are (run id, caption, SVG, the command that redraws it).
pub(super) fn html(ctx: &Results, commit: Option<&str>, figures: &[HtmlFigure]) -> String {
    let mut s = String::new();
    head(&mut s, ctx, commit);
    let sums = summary(ctx);
    contents(&mut s, ctx, &sums);
    for (head, rows) in &sums {
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            s,
            "<h2 id=\"{}\">{}</h2><table><colgroup><col class=\"c\"><col></colgroup><tr><th>claim</th><th></th></tr>",
            anchor(head),
            esc(head)
        );
        for (id, t) in rows {
            let _ = write!(
                s,
                "<tr><td><a href=\"#{}\"><code>{}</code></a></td><td>{}</td></tr>",
                anchor(id),
                esc(id),
                esc(t)
            );
        }
        s.push_str("</table>");
    }
    if let Some(ms) = &ctx.mutants {
        mutants_table(&mut s, ms);
    }
    if let Some(cov) = &ctx.coverage {
        coverage_table(&mut s, cov);
    }
    for (paper, title) in &ctx.ledger.papers {
        paper_section(&mut s, ctx, paper, title, figures);
    }
    runs_table(&mut s, ctx);
    s.push_str("<p><a href=\"#top\">Back to the top</a></p></body></html>\n");
    s
}

/// The page's head and its first lines: the title, what made the report and how to read it,
/// the verdict counts as badges, the self-check line, the mutation score and the note on
/// benchmarks of this machine.
fn head(s: &mut String, ctx: &Results, commit: Option<&str>) {
    let c = super::count(&ctx.judged);
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">{SELFCHECK}<title>mslink reproduce</title><style>{STYLE}</style></head><body>"
    );
    let _ = write!(
        s,
        "<h1 id=\"top\">The papers' claims, checked by mslink</h1><p>Made by <code>{}</code> — mslink {}, commit {}. \
         Values are means over repetitions with Student-t 95% intervals. A check <b>holds</b> when the whole interval \
         satisfies the expectation, <b>fails</b> when the whole interval contradicts it, and is <b>inconclusive</b> \
         otherwise (the report says how many repetitions would decide it). Every band is the paper's number widened by \
         how precisely it can be read, or carries the reason it was chosen by hand.</p>",
        esc(&ctx.opts.command),
        env!("CARGO_PKG_VERSION"),
        esc(commit.unwrap_or("unknown"))
    );
    let _ = write!(s, "<p id=\"counts\"");
    for v in Verdict::ALL {
        let _ = write!(s, " data-{}=\"{}\"", v.class(), c[v.word()]);
    }
    s.push('>');
    for v in Verdict::ALL {
        let _ = write!(
            s,
            "<span class=\"badge {}\">{} {}</span> ",
            v.class(),
            c[v.word()],
            v.word()
        );
    }
    s.push_str("</p><p id=\"selfcheck\">Self-check did not run (scripts off?).</p>");
    if let Some((k, n)) = mutation(ctx) {
        let _ = write!(
            s,
            "<p id=\"mutation\" data-killed=\"{k}\" data-mutants=\"{n}\"><b>Mutation score: {k} of {n} mutants caught</b> (<a href=\"#mutants\">mutants</a>).</p>"
        );
    }
    if !ctx.benches.iter().all(|b| b.deterministic) {
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
        let _ = write!(s, "<p id=\"bench-note\">{html}</p>");
    }
}

/// The table of contents: the summary's non-empty sections, the mutants, the coverage, each
/// paper with claims, the runs.
fn contents(s: &mut String, ctx: &Results, sums: &[(&'static str, Vec<(String, String)>)]) {
    s.push_str("<nav id=\"contents\"><h2>Contents</h2><ol>");
    for (head, rows) in sums {
        if !rows.is_empty() {
            let _ = write!(
                s,
                "<li><a href=\"#{}\">{} ({})</a></li>",
                anchor(head),
                esc(head),
                rows.len()
            );
        }
    }
    if ctx.mutants.is_some() {
        s.push_str("<li><a href=\"#mutants\">Mutants</a></li>");
    }
    if ctx.coverage.is_some() {
        s.push_str("<li><a href=\"#coverage\">Coverage of the papers</a></li>");
    }
    for (paper, title) in &ctx.ledger.papers {
        if ctx.judged.iter().any(|j| j.paper == *paper) {
            let _ = write!(
                s,
                "<li><a href=\"#paper-{}\">{} — {}</a></li>",
                anchor(paper),
                esc(paper),
                esc(title)
            );
        }
    }
    s.push_str("<li><a href=\"#runs\">Runs</a></li></ol></nav>");
}

/// The mutants section: each mutant, what it breaks and links to the claims that caught it.
fn mutants_table(s: &mut String, ms: &[super::mutants::MutantResult]) {
    s.push_str("<h2 id=\"mutants\">Mutants</h2><p>Each mutant is a deliberately broken engine; a claim that holds (or is undecided) on the engine and fails on the mutant catches it.</p><table><tr><th>mutant</th><th>what it breaks</th><th>should break</th><th>caught by</th></tr>");
    for m in ms {
        let caught = if !m.applies() {
            "does not apply to the chosen claims (changes none of their runs)".to_string()
        } else if m.killed {
            m.killed_by
                .iter()
                .map(|k| format!("<a href=\"#{}\"><code>{}</code></a>", anchor(k), esc(k)))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            "<b class=\"m-fails\">nothing: the mutant survives</b>".into()
        };
        let _ = write!(
            s,
            "<tr class=\"mutant\" data-killed=\"{}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{caught}</td></tr>",
            m.killed,
            esc(&m.name),
            esc(&m.what),
            esc(&m.breaks)
        );
    }
    s.push_str("</table>");
}

/// The coverage section: per paper, its statements and how many are checked, inputs of the
/// model or not checked.
fn coverage_table(s: &mut String, cov: &super::coverage::Coverage) {
    s.push_str("<h2 id=\"coverage\">Coverage of the papers</h2><p>Every quantitative or comparative statement of each paper (<code>claims/coverage/</code>), mapped to the claims that check it, to the model input it is, or to the reason nothing here checks it.</p><table><tr><th>paper</th><th>statements</th><th>checked by claims</th><th>inputs of the model</th><th>not checked</th></tr>");
    for (p, k) in cov.summary() {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p),
            k.statements,
            k.checked,
            k.inputs,
            k.not_checked
        );
    }
    s.push_str("</table>");
}

/// A paper's section (nothing when none of its claims is chosen): the figures of the runs its
/// claims are judged on, each run's once, then a row per claim.
fn paper_section(s: &mut String, ctx: &Results, paper: &str, title: &str, figures: &[HtmlFigure]) {
    let rows: Vec<&Judged> = ctx.judged.iter().filter(|j| j.paper == *paper).collect();
    if rows.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "<h2 id=\"paper-{}\">{} — {}</h2>",
        anchor(paper),
        esc(paper),
        esc(title)
    );
    let mut shown = std::collections::BTreeSet::new();
    for j in &rows {
        if let Some(run) = j.run.as_deref() {
            if shown.insert(run) {
                for (n, (id, caption, svg, cmd)) in
                    figures.iter().filter(|f| f.0 == run).enumerate()
                {
                    let _ = write!(
                        s,
                        "<figure id=\"fig-{}-{n}\">{svg}<figcaption>{}. Rerun: <code>{}</code></figcaption></figure>",
                        anchor(id),
                        esc(caption),
                        esc(cmd)
                    );
                }
            }
        }
    }
    s.push_str("<table><colgroup><col class=\"v\"><col class=\"c\"><col class=\"q\"><col class=\"b\"><col></colgroup><tr><th>verdict</th><th>claim</th><th>the paper says</th><th>expected</th><th>measured</th></tr>");
    for j in rows {
        s.push_str(&claim_row(j));
    }
    s.push_str("</table>");
}

/// The runs section: each simulation and benchmark run, its points and repetitions, its seed
/// and the command that reruns it.
fn runs_table(s: &mut String, ctx: &Results) {
    s.push_str("<h2 id=\"runs\">Runs</h2><table><tr><th>run</th><th>scenario</th><th>points × reps</th><th>seed</th><th>rerun</th></tr>");
    for r in &ctx.runs {
        let added = ctx
            .extended
            .get(&r.id)
            .map_or(String::new(), |n| format!(" (+{n} to decide)"));
        let _ = write!(
            s,
            "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{} × {}{}{added}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(&r.id),
            esc(&r.scenario_file),
            r.points.len(),
            r.reps,
            if r.deterministic { ", deterministic" } else { "" },
            r.scenario.sim.seed,
            esc(&rerun(ctx, &r.id))
        );
    }
    for b in &ctx.benches {
        let _ = write!(
            s,
            "<tr><td><code>{}</code></td><td>bench, {}: <code>{c}</code></td><td>1 × {}</td><td>-</td><td><code>{c}</code></td></tr>",
            esc(&b.id),
            if b.deterministic { "counts" } else { "this machine" },
            b.reps,
            c = esc(&b.command())
        );
    }
    s.push_str("</table>");
}

/// A claim's row: verdict badge, id and place, the paper's words, the band, and what was
/// measured (why we differ, each check, the counterfactual).
fn claim_row(j: &Judged) -> String {
    let mut measured = String::new();
    if let Some(r) = &j.reason {
        let _ = write!(
            measured,
            "<p><b>{}:</b> {}{}</p>",
            if j.verdict == Verdict::NotCheckable {
                "Why"
            } else {
                "Why we differ"
            },
            esc(r),
            j.cause
                .map_or(String::new(), |c| format!(" <i>(cause: {})</i>", c.word()))
        );
    }
    for k in &j.checks {
        let cls = match k.mark {
            Mark::Holds => "",
            Mark::Inconclusive => " class=\"m-inconclusive\"",
            Mark::Fails => " class=\"m-fails\"",
        };
        let _ = write!(measured, "<div{cls}>{}</div>", esc(&check_line(k)));
    }
    if let Some(cf) = counterfactual_text(j) {
        let _ = write!(
            measured,
            "<p class=\"counterfactual\"><b>Counterfactual.</b> {}</p>",
            esc(&cf)
        );
    }
    let cls = j.verdict.class();
    format!(
        "<tr class=\"claim\" data-verdict=\"{cls}\" id=\"{a}\"><td><span class=\"badge {cls}\">{}</span></td><td><code>{}</code><br>{}<br><small>{}</small></td><td><blockquote>{}</blockquote></td><td>{}</td><td>{measured}</td></tr>",
        j.verdict.word(),
        esc(&j.id),
        esc(&j.place),
        esc(&j.says),
        esc(&j.quote),
        esc(j.band_text.as_deref().unwrap_or("")),
        a = anchor(&j.id),
    )
}
