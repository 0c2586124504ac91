//! `mslink reproduce`: run what the claims ledger needs, judge every claim, try the mutants,
//! write the report.
//!
//! Contract. The ledger (`claims/*.toml`, [`ledger`]) says which runs each claim needs; the runs
//! a selection of claims needs are made once each ([`plan`]), shared between claims, on `jobs`
//! threads, and collected in (run, point, repetition) order ([`exec`]), so the verdicts and
//! every file written are the same at any thread count. [`judge`] turns repetitions into
//! Student-t intervals and verdicts: holds, inconclusive, fails, differs, no longer differs, not
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
mod plan;
mod report;
mod report_figures;
mod report_html;
pub mod seqtrace;
mod spec;

use judge::{Judged, Observations, Verdict};

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
    let (mut ledger, coverage) = chosen_claims(opts)?;
    if opts.list {
        return Ok(Outcome {
            listing: Some(listing(&ledger)),
            ..Outcome::default()
        });
    }
    let out = opts.out.as_deref().context("--out is needed")?;
    if !opts.bench {
        set_aside_timed_claims(&mut ledger);
    }
    let plan = plan::Plan::new(opts, &ledger, progress);
    std::fs::create_dir_all(out).with_context(|| {
        format!(
            "creating the folder {} (--out); give a folder you may write to",
            out.display()
        )
    })?;
    plan.announce();
    let mut made = plan::Made::default();
    plan.make_baseline(&mut made)?;
    let cfs = plan.counterfactual_runs()?;
    plan.make_counterfactuals(&cfs, &mut made)?;
    let mut judged = plan.judge_all(&made.obs, "");
    let extended = if opts.quick {
        BTreeMap::new()
    } else {
        plan.decide_undecided(&cfs, &mut judged, &mut made)?
    };
    let mutant_results = if opts.mutants {
        Some(plan.try_mutants(&judged, &mut made)?)
    } else {
        None
    };
    let mut problems = claim_problems(&ledger, &judged);
    let whole = opts.papers.is_empty() && opts.claim_ids.is_empty();
    let mutation = mutant_results
        .as_ref()
        .map(|ms| mutant_problems(ms, whole, &mut problems));
    let counts = count(&judged);
    let res = Results {
        opts,
        ledger: &ledger,
        runs: plan.runs,
        benches: plan.benches,
        obs: &made.obs,
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
        runs_made: made.runs,
    })
}

/// The ledger with only the claims `--paper` and `--claim` choose (with `--paper`, only those
/// papers' files are read and their coverage checked), and that coverage.
fn chosen_claims(opts: &Options) -> Result<(ledger::Ledger, Option<coverage::Coverage>)> {
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
    Ok((ledger, coverage))
}

/// The `--list` output: id, paper, place and run of each claim, tab-separated.
fn listing(ledger: &ledger::Ledger) -> String {
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
    out
}

/// Without `--bench`: the claims of benchmarks that time this machine are not checkable
/// ([`bench::NOT_RUN`]), so their runs are not made.
fn set_aside_timed_claims(ledger: &mut ledger::Ledger) {
    for c in &mut ledger.claims {
        let timed = c.checks.iter().any(|(_, e)| {
            e.cells().iter().any(|x| {
                x.bench.is_some() && ledger.benches.get(&x.run).is_some_and(|b| !b.deterministic)
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

/// What makes the command fail among the judged claims, one line each: a failing claim, a
/// known difference that no longer differs, an undecided deterministic claim.
fn claim_problems(ledger: &ledger::Ledger, judged: &[Judged]) -> Vec<String> {
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
    for j in judged {
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
    problems
}

/// Adds to `problems` the mutants that fail the command when the `whole` ledger is judged: one
/// that changes no run, one that survives. Returns (caught, applicable) mutants.
fn mutant_problems(
    ms: &[mutants::MutantResult],
    whole: bool,
    problems: &mut Vec<String>,
) -> (usize, usize) {
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
}

/// Verdict word -> number of claims.
pub(crate) fn count(judged: &[Judged]) -> BTreeMap<&'static str, usize> {
    Verdict::ALL
        .iter()
        .map(|v| (v.word(), judged.iter().filter(|j| j.verdict == *v).count()))
        .collect()
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
