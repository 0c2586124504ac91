//! `mslink reproduce`: run what the claims ledger needs, judge every claim, try the mutants,
//! write the report.
//!
//! Contract. The ledger (`claims/*.toml`, [`ledger`]) says which runs each claim needs; the runs
//! a selection of claims needs are made once each, shared between claims, on `jobs` threads,
//! and collected in (run, point, repetition) order ([`exec`]), so the verdicts and every file
//! written are the same at any thread count. [`judge`] turns repetitions into Student-t
//! intervals and verdicts: holds, inconclusive, fails, differs, no longer differs, not
//! checkable. A known difference whose cause is ours is re-made without it (its
//! counterfactual) and judged again. In the full mode, checks left inconclusive get the
//! repetitions [`judge::reps_needed`] computes, up to `max_reps` per point, in up to three
//! rounds (more repetitions only add to what was made). With `mutants`, every mutant of
//! `claims/mutants.toml` ([`mutants`]) is made and judged too, and each must make some claim
//! fail. [`report`] writes OUT/claims.json, OUT/report.md and OUT/report.html (these and
//! OUT/figures/ are replaced on every run; nothing else in OUT is touched).
//!
//! The [`Outcome`] lists what makes the command fail: a failing claim, a known difference that
//! no longer differs, an undecided deterministic claim, an out-of-date coverage file (refused at
//! load), and, with mutants, a mutant no claim catches.
//!
//! Benchmark runs that time something ([`bench`]: `[run.NAME] bench = [ARGS]`) measure this
//! machine, so they run only with `bench`, one repetition at a time and before the simulations;
//! without it their claims are listed as not checkable ([`bench::NOT_RUN`]). Deterministic
//! benchmark runs (counts, not times) run in every mode.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub mod band;
pub mod bench;
pub mod coverage;
pub mod edit;
pub mod exec;
pub mod judge;
pub mod ledger;
pub mod mutants;
mod report;
mod report_html;
pub mod seqtrace;
mod spec;

use judge::{Judged, Mark, Observations, Verdict};

/// What `mslink reproduce` is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// The claims folder.
    pub claims: PathBuf,
    /// Where the report goes (None with `list`).
    pub out: Option<PathBuf>,
    /// Only the claims of these papers.
    pub papers: Vec<String>,
    /// Only these claims.
    pub claim_ids: Vec<String>,
    /// Fewer repetitions and shorter runs.
    pub quick: bool,
    /// Threads for simulation runs.
    pub jobs: usize,
    /// Also run the benchmarks that time this machine.
    pub bench: bool,
    /// Also make and judge every mutant.
    pub mutants: bool,
    /// Most repetitions per point the full mode adds to decide inconclusive checks.
    pub max_reps: u32,
    /// The mslink executable the benchmark runs start.
    pub exe: Option<PathBuf>,
    /// The command line as the report shows it.
    pub command: String,
    /// Only list the chosen claims.
    pub list: bool,
}

pub use crate::progress::{Progress, Silent};

/// What a run of `mslink reproduce` found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Verdict word -> claims.
    pub counts: BTreeMap<&'static str, usize>,
    /// What makes the command fail, one line each.
    pub problems: Vec<String>,
    /// (killed, mutants) with `mutants`.
    pub mutation: Option<(usize, usize)>,
    /// The listing, with `list`.
    pub listing: Option<String>,
    /// The report files' folder.
    pub out: Option<PathBuf>,
    /// Simulation runs made (all variants).
    pub runs_made: usize,
}

/// Everything the report is made from.
pub(crate) struct Results<'a> {
    pub opts: &'a Options,
    pub ledger: &'a ledger::Ledger,
    pub runs: Vec<&'a ledger::Run>,
    pub benches: Vec<&'a bench::BenchRun>,
    pub obs: &'a Observations,
    pub judged: Vec<Judged>,
    pub coverage: Option<coverage::Coverage>,
    pub mutants: Option<Vec<mutants::MutantResult>>,
    /// Repetitions added to decide inconclusive checks, per run.
    pub extended: BTreeMap<String, usize>,
}

/// Runs `mslink reproduce`.
pub fn run(opts: &Options, progress: &dyn Progress) -> Result<Outcome> {
    // With --paper, only those papers' files are read (and their coverage checked).
    let mut ledger = ledger::load(&opts.claims, opts.quick, &opts.papers)?;
    let coverage = coverage::load(&opts.claims, &ledger)?;
    for p in &opts.papers {
        if !ledger.papers.contains_key(p) {
            bail!(
                "--paper {p}: no such paper in the ledger (papers: {})",
                ledger.papers.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    for c in &opts.claim_ids {
        if !ledger.claims.iter().any(|k| k.id == *c) {
            bail!("--claim {c}: no such claim (mslink reproduce --list shows them)");
        }
    }
    ledger.claims.retain(|c| {
        (opts.papers.is_empty() || opts.papers.contains(&c.paper))
            && (opts.claim_ids.is_empty() || opts.claim_ids.contains(&c.id))
    });
    if opts.list {
        let mut out = String::new();
        for c in &ledger.claims {
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\n",
                c.id,
                c.paper,
                c.place,
                c.run.as_deref().unwrap_or("-")
            ));
        }
        return Ok(Outcome {
            listing: Some(out),
            ..Outcome::default()
        });
    }
    let out = opts.out.as_deref().context("--out is needed")?;
    // Claims of benchmarks that time this machine: judged only with --bench.
    if !opts.bench {
        for c in &mut ledger.claims {
            let timed = c.checks.iter().any(|(_, e)| {
                e.cells().iter().any(|x| {
                    x.bench.is_some()
                        && ledger.benches.get(&x.run).is_some_and(|b| !b.deterministic)
                })
            });
            if timed {
                c.checks.clear();
                c.differs = None;
                c.band = None;
                c.not_checkable = Some(bench::NOT_RUN.to_string());
            }
        }
    }
    let needed: BTreeSet<String> = ledger.claims.iter().flat_map(|c| c.runs()).collect();
    let runs: Vec<&ledger::Run> = needed.iter().filter_map(|id| ledger.runs.get(id)).collect();
    let benches: Vec<&bench::BenchRun> = needed
        .iter()
        .filter_map(|id| ledger.benches.get(id))
        .collect();
    std::fs::create_dir_all(out).with_context(|| {
        format!(
            "creating the folder {} (--out); give a folder you may write to",
            out.display()
        )
    })?;
    let exe = || {
        opts.exe
            .clone()
            .context("a benchmark run needs the mslink executable (MSLINK_EXE)")
    };
    let threads = opts.jobs.max(1);
    let capture: BTreeMap<&str, bool> = runs
        .iter()
        .map(|r| (r.id.as_str(), captures(&ledger, r)))
        .collect();
    progress.note(&format!(
        "{} claims, {} runs of {} scenarios{}{}",
        ledger.claims.len(),
        runs.iter()
            .map(|r| r.points.len() * r.reps as usize)
            .sum::<usize>(),
        runs.len(),
        if opts.quick { " (--quick)" } else { "" },
        if benches.iter().any(|b| !b.deterministic) {
            " and benchmarks of this machine (--bench)"
        } else {
            ""
        }
    ));
    let mut obs = Observations::default();
    let mut made = 0usize;
    // Benchmarks first, one at a time: nothing else of ours runs beside a measurement.
    for b in &benches {
        exec::measure(b, &exe()?, &[], "", progress, &mut obs)?;
    }
    check_bench_cells(&ledger, &obs)?;
    let base: Vec<exec::Batch> = runs
        .iter()
        .map(|r| exec::Batch {
            variant: String::new(),
            run: r,
            scenarios: &r.point_scenarios,
            points: (0..r.points.len()).map(|p| (p, 0..r.reps)).collect(),
            capture: capture[r.id.as_str()],
        })
        .collect();
    made += base.iter().map(batch_len).sum::<usize>();
    exec::simulate(&base, threads, progress, &mut obs)?;
    check_deterministic(&ledger, &obs)?;
    // Counterfactuals: each claim's runs with its difference's cause removed.
    let mut cf_scenarios: Vec<(String, &ledger::Run, Vec<mslink_sim::Scenario>)> = Vec::new();
    for c in &ledger.claims {
        let Some(cf) = c.differs.as_ref().and_then(|d| d.counterfactual.as_ref()) else {
            continue;
        };
        for id in c.runs() {
            let r = &ledger.runs[&id];
            if let Some(sc) = exec::variant_scenarios(r, &cf.edits)
                .with_context(|| format!("claim {}, counterfactual", c.id))?
            {
                cf_scenarios.push((format!("cf:{}", c.id), r, sc));
            }
        }
    }
    let cf_batches: Vec<exec::Batch> = cf_scenarios
        .iter()
        .map(|(v, r, sc)| exec::Batch {
            variant: v.clone(),
            run: r,
            scenarios: sc,
            points: (0..r.points.len()).map(|p| (p, 0..r.reps)).collect(),
            capture: capture[r.id.as_str()],
        })
        .collect();
    made += cf_batches.iter().map(batch_len).sum::<usize>();
    exec::simulate(&cf_batches, threads, progress, &mut obs)?;
    let deterministic = |id: &str| {
        ledger.runs.get(id).is_some_and(|r| r.deterministic)
            || ledger.benches.get(id).is_some_and(|b| b.deterministic)
    };
    let judge_all = |obs: &Observations, variant: &str| -> Vec<Judged> {
        ledger
            .claims
            .iter()
            .map(|c| judge::judge_claim(obs, variant, c, &deterministic))
            .collect()
    };
    let mut judged = judge_all(&obs, "");
    // The full mode decides what it can: more repetitions where a check is undecided.
    let mut extended: BTreeMap<String, usize> = BTreeMap::new();
    if !opts.quick {
        for _round in 0..3 {
            let want = wanted_reps(&judged, &obs, opts.max_reps, &deterministic);
            if want.is_empty() {
                break;
            }
            let mut batches = Vec::new();
            for ((variant, run, point), (have, target)) in &want {
                let Some(r) = ledger.runs.get(run) else {
                    continue;
                };
                let scenarios = if variant.is_empty() {
                    &r.point_scenarios
                } else {
                    match cf_scenarios
                        .iter()
                        .find(|(v, cr, _)| v == variant && cr.id == *run)
                    {
                        Some((_, _, sc)) => sc,
                        None => &r.point_scenarios,
                    }
                };
                // A variant that reads the baseline's repetitions extends the baseline.
                let variant = if scenarios.as_ptr() == r.point_scenarios.as_ptr() {
                    String::new()
                } else {
                    variant.clone()
                };
                *extended.entry(run.clone()).or_default() += (*target - *have) as usize;
                batches.push(exec::Batch {
                    variant,
                    run: r,
                    scenarios,
                    points: vec![(*point, *have..*target)],
                    capture: capture[r.id.as_str()],
                });
            }
            // Two variants may ask for the same baseline point: make it once.
            batches.sort_by(|a, b| {
                (&a.variant, &a.run.id, a.points[0].0).cmp(&(&b.variant, &b.run.id, b.points[0].0))
            });
            batches.dedup_by(|a, b| {
                a.variant == b.variant && a.run.id == b.run.id && a.points[0].0 == b.points[0].0
            });
            progress.note(&format!(
                "{} undecided points get more repetitions",
                batches.len()
            ));
            made += batches.iter().map(batch_len).sum::<usize>();
            exec::simulate(&batches, threads, progress, &mut obs)?;
            judged = judge_all(&obs, "");
        }
    }
    // Mutants: the same ledger on deliberately broken engines.
    let mutant_results = if opts.mutants {
        let all = mutants::load(&opts.claims)?;
        let mut results = Vec::new();
        for m in &all {
            let variant = m.variant();
            let mut scen: Vec<(&ledger::Run, Vec<mslink_sim::Scenario>)> = Vec::new();
            for r in &runs {
                if let Some(sc) = exec::variant_scenarios(r, &m.edits)
                    .with_context(|| format!("mutant {}", m.name))?
                {
                    scen.push((r, sc));
                }
            }
            let mut changed: Vec<String> = scen.iter().map(|(r, _)| r.id.clone()).collect();
            if let Some((cmd, extra)) = &m.bench {
                for b in benches
                    .iter()
                    .filter(|b| b.deterministic && b.args.first() == Some(cmd))
                {
                    exec::measure(b, &exe()?, extra, &variant, progress, &mut obs)?;
                    changed.push(b.id.clone());
                }
            }
            let batches: Vec<exec::Batch> = scen
                .iter()
                .map(|(r, sc)| exec::Batch {
                    variant: variant.clone(),
                    run: r,
                    scenarios: sc,
                    points: (0..r.points.len()).map(|p| (p, 0..r.reps)).collect(),
                    capture: capture[r.id.as_str()],
                })
                .collect();
            progress.note(&format!(
                "mutant {}: {} runs changed",
                m.name,
                changed.len()
            ));
            made += batches.iter().map(batch_len).sum::<usize>();
            exec::simulate(&batches, threads, progress, &mut obs)?;
            let mutated = judge_all(&obs, &variant);
            let killed_by = mutants::kills(&judged, &mutated);
            results.push(mutants::MutantResult {
                name: m.name.clone(),
                what: m.what.clone(),
                breaks: m.breaks.clone(),
                killed: !killed_by.is_empty(),
                runs_changed: changed,
                killed_by,
            });
            // What a mutant made is not needed any more.
            obs.reps.retain(|(v, _, _), _| *v != variant);
        }
        Some(results)
    } else {
        None
    };
    let mut problems = Vec::new();
    // A measurement of this machine may fall either side of a known difference from one run
    // to the next: there "no longer differs" is reported, not failed.
    let timed: BTreeSet<&str> = ledger
        .claims
        .iter()
        .filter(|c| {
            c.runs()
                .iter()
                .any(|r| ledger.benches.get(r).is_some_and(|b| !b.deterministic))
        })
        .map(|c| c.id.as_str())
        .collect();
    for j in &judged {
        match j.verdict {
            Verdict::Fails => problems.push(format!("claim {} fails", j.id)),
            Verdict::NoLongerDiffers if timed.contains(j.id.as_str()) => {}
            Verdict::NoLongerDiffers => problems.push(format!(
                "claim {} is marked as a known difference, but every check holds: update its entry",
                j.id
            )),
            Verdict::Inconclusive if j.deterministic => problems.push(format!(
                "claim {} is undecided although every run it reads is deterministic",
                j.id
            )),
            _ => {}
        }
    }
    let whole = opts.papers.is_empty() && opts.claim_ids.is_empty();
    let mutation = mutant_results.as_ref().map(|ms| {
        for m in ms {
            if !m.applies() {
                if whole {
                    problems.push(format!(
                        "mutant {} changes no run of the ledger: its edits match no table ({})",
                        m.name, m.what
                    ));
                }
            } else if !m.killed && whole {
                // Judged on part of the ledger, a mutant of another paper's engine may survive:
                // the report lists it; the whole ledger must catch every mutant.
                problems.push(format!(
                    "mutant {} survives: no claim fails when {} (add the paper statement that should catch it: {})",
                    m.name, m.what, m.breaks
                ));
            }
        }
        (
            ms.iter().filter(|m| m.killed).count(),
            ms.iter().filter(|m| m.applies()).count(),
        )
    });
    let counts = count(&judged);
    let res = Results {
        opts,
        ledger: &ledger,
        runs,
        benches,
        obs: &obs,
        judged,
        coverage,
        mutants: mutant_results,
        extended,
    };
    report::write(out, &res)?;
    Ok(Outcome {
        counts,
        problems,
        mutation,
        listing: None,
        out: Some(out.to_path_buf()),
        runs_made: made,
    })
}

fn batch_len(b: &exec::Batch) -> usize {
    b.points.iter().map(|(_, r)| r.len()).sum()
}

/// Verdict word -> number of claims.
pub(crate) fn count(judged: &[Judged]) -> BTreeMap<&'static str, usize> {
    Verdict::ALL
        .iter()
        .map(|v| (v.word(), judged.iter().filter(|j| j.verdict == *v).count()))
        .collect()
}

/// (variant, run, point) -> (repetitions made, repetitions wanted) for the undecided checks of
/// non-deterministic runs, capped at `max_reps`.
fn wanted_reps(
    judged: &[Judged],
    obs: &Observations,
    max_reps: u32,
    deterministic: &dyn Fn(&str) -> bool,
) -> BTreeMap<(String, String, usize), (u32, u32)> {
    let mut want: BTreeMap<(String, String, usize), (u32, u32)> = BTreeMap::new();
    for j in judged {
        let mut sets: Vec<(String, &Vec<judge::CheckResult>)> = vec![(String::new(), &j.checks)];
        if let Some(cf) = &j.counterfactual {
            sets.push((format!("cf:{}", j.id), &cf.checks));
        }
        for (variant, checks) in sets {
            for k in checks.iter().filter(|k| k.mark == Mark::Inconclusive) {
                // A check the cap cannot decide is left as it is: more repetitions would not
                // settle it.
                let Some(need) = k.reps_needed.filter(|&n| n <= max_reps) else {
                    continue;
                };
                for c in &k.cells {
                    if deterministic(&c.run) || c.point == usize::MAX {
                        continue;
                    }
                    let have = obs.get(&variant, &c.run, c.point).map_or(0, |v| v.len()) as u32;
                    let target = need;
                    if target > have {
                        let e = want
                            .entry((variant.clone(), c.run.clone(), c.point))
                            .or_insert((have, have));
                        e.1 = e.1.max(target);
                    }
                }
            }
        }
    }
    want
}

/// Every bench cell picks one row with a numeric field in every repetition.
fn check_bench_cells(ledger: &ledger::Ledger, obs: &Observations) -> Result<()> {
    for c in &ledger.claims {
        for (_, e) in &c.checks {
            for x in e.cells() {
                let Some(sel) = &x.bench else { continue };
                let file = ledger
                    .benches
                    .get(&x.run)
                    .map(|b| b.file.display().to_string())
                    .unwrap_or_default();
                for (i, rep) in obs.get("", &x.run, 0).into_iter().flatten().enumerate() {
                    if let Some(doc) = &rep.bench {
                        bench::check(doc, sel, &x.metric).with_context(|| {
                            format!(
                                "claims file {file}, claim {}: bench run {}, repetition {i}",
                                c.id, x.run
                            )
                        })?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// A deterministic run's repetitions agree on every cell a claim reads.
fn check_deterministic(ledger: &ledger::Ledger, obs: &Observations) -> Result<()> {
    for c in &ledger.claims {
        for (_, e) in &c.checks {
            for x in e.cells() {
                let det = ledger.runs.get(&x.run).is_some_and(|r| r.deterministic)
                    || ledger.benches.get(&x.run).is_some_and(|b| b.deterministic);
                if !det {
                    continue;
                }
                let xs = judge::samples(obs, "", x);
                if xs.windows(2).any(|w| w[0] != w[1]) {
                    bail!(
                        "run {} is declared deterministic, but its repetitions differ at {} ({}): \
                         {:?}; something random reaches this cell (claim {}): give the run reps \
                         instead",
                        x.run,
                        x.label,
                        x.metric,
                        xs,
                        c.id
                    );
                }
            }
        }
    }
    Ok(())
}

/// Whether `run` captures its TCP flows' sequence traces: a figure or a claim reads them.
pub(crate) fn captures(ledger: &ledger::Ledger, run: &ledger::Run) -> bool {
    run.figures
        .iter()
        .any(|f| f.kind == ledger::FigureKind::Seq)
        || ledger.claims.iter().any(|c| {
            c.checks.iter().any(|(_, e)| {
                e.cells()
                    .iter()
                    .any(|x| x.run == run.id && seqtrace::is_metric(&x.metric))
            })
        })
}

/// `path` with `a/..` pairs folded away (claims/../scenarios/x -> scenarios/x), for commands
/// a reader copies.
pub(crate) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
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
