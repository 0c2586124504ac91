//! The making of the runs a selection of claims needs, phase by phase, in the order
//! [`super::run`] calls them: the benchmarks, the baseline simulations, the counterfactuals,
//! the repetitions that decide undecided checks, the mutants.
//!
//! Contract. A [`Plan`] is the runs and benchmark runs the chosen claims read, each once,
//! whatever the number of claims that share it. The benchmarks are measured first, one at a
//! time (nothing else of ours runs beside a measurement); a benchmark cell must pick one row
//! with a numeric field in every repetition, and a deterministic run's repetitions must agree
//! on every cell a claim reads, or the command stops. Every simulation goes through
//! [`exec::simulate`] on the plan's threads and is counted in [`Made::runs`]. A mutant's
//! observations are dropped once it is judged.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use mslink_sim::Scenario;

use super::judge::{self, Judged, Mark, Observations};
use super::ledger::{Ledger, Run};
use super::mutants::{self, Mutant, MutantResult};
use super::{bench, exec, Options, Progress};

/// The runs the chosen claims need and how they are made.
pub(super) struct Plan<'a> {
    /// What the command is asked to do.
    opts: &'a Options,
    /// Where progress goes.
    progress: &'a dyn Progress,
    /// The ledger, with only the chosen claims.
    ledger: &'a Ledger,
    /// The simulation runs the claims read, in id order.
    pub(super) runs: Vec<&'a Run>,
    /// The benchmark runs the claims read, in id order.
    pub(super) benches: Vec<&'a bench::BenchRun>,
    /// Run id -> whether it captures its TCP flows' sequence traces.
    capture: BTreeMap<&'a str, bool>,
    /// Threads for simulation runs.
    threads: usize,
}

/// What the plan has made so far.
#[derive(Default)]
pub(super) struct Made {
    /// Every repetition, by (variant, run, point).
    pub(super) obs: Observations,
    /// Simulation runs made (all variants).
    pub(super) runs: usize,
}

/// A claim's counterfactual on one run: (variant `cf:ID`, the run, its point scenarios with
/// the difference's cause removed).
pub(super) type CounterfactualRun<'a> = (String, &'a Run, Vec<Scenario>);

impl<'a> Plan<'a> {
    /// The runs and benchmark runs the claims of `ledger` read.
    pub(super) fn new(opts: &'a Options, ledger: &'a Ledger, progress: &'a dyn Progress) -> Self {
        let needed: std::collections::BTreeSet<String> =
            ledger.claims.iter().flat_map(|c| c.runs()).collect();
        let runs: Vec<&Run> = needed.iter().filter_map(|id| ledger.runs.get(id)).collect();
        let benches: Vec<&bench::BenchRun> = needed
            .iter()
            .filter_map(|id| ledger.benches.get(id))
            .collect();
        let capture = runs
            .iter()
            .map(|r| (r.id.as_str(), super::captures(ledger, r)))
            .collect();
        Plan {
            opts,
            progress,
            ledger,
            runs,
            benches,
            capture,
            threads: opts.jobs.max(1),
        }
    }

    /// Tells the progress what is about to be made.
    pub(super) fn announce(&self) {
        self.progress.note(&format!(
            "{} claims, {} runs of {} scenarios{}{}",
            self.ledger.claims.len(),
            self.runs
                .iter()
                .map(|r| r.points.len() * r.reps as usize)
                .sum::<usize>(),
            self.runs.len(),
            if self.opts.quick { " (--quick)" } else { "" },
            if self.benches.iter().any(|b| !b.deterministic) {
                " and benchmarks of this machine (--bench)"
            } else {
                ""
            }
        ));
    }

    /// The mslink executable the benchmark runs start.
    fn exe(&self) -> Result<PathBuf> {
        self.opts
            .exe
            .clone()
            .context("a benchmark run needs the mslink executable (MSLINK_EXE)")
    }

    /// Whether nothing random reaches run `id`'s cells.
    fn deterministic(&self, id: &str) -> bool {
        self.ledger.runs.get(id).is_some_and(|r| r.deterministic)
            || self.ledger.benches.get(id).is_some_and(|b| b.deterministic)
    }

    /// Every chosen claim, judged in `variant`.
    pub(super) fn judge_all(&self, obs: &Observations, variant: &str) -> Vec<Judged> {
        self.ledger
            .claims
            .iter()
            .map(|c| judge::judge_claim(obs, variant, c, &|id| self.deterministic(id)))
            .collect()
    }

    /// Every point and repetition of `run` in `variant`, from `scenarios`.
    fn whole<'b>(
        &self,
        variant: String,
        run: &'b Run,
        scenarios: &'b [Scenario],
    ) -> exec::Batch<'b> {
        exec::Batch {
            variant,
            run,
            scenarios,
            points: (0..run.points.len()).map(|p| (p, 0..run.reps)).collect(),
            capture: self.capture[run.id.as_str()],
        }
    }

    /// Makes `batches`, counting them in `made`.
    fn simulate(&self, batches: &[exec::Batch], made: &mut Made) -> Result<()> {
        made.runs += batches.iter().map(batch_len).sum::<usize>();
        exec::simulate(batches, self.threads, self.progress, &mut made.obs)
    }

    /// The benchmarks first, one at a time, then every simulation run as the ledger has it;
    /// both checked for what the claims read of them.
    pub(super) fn make_baseline(&self, made: &mut Made) -> Result<()> {
        for b in &self.benches {
            exec::measure(b, &self.exe()?, &[], "", self.progress, &mut made.obs)?;
        }
        check_bench_cells(self.ledger, &made.obs)?;
        let base: Vec<exec::Batch> = self
            .runs
            .iter()
            .map(|r| self.whole(String::new(), r, &r.point_scenarios))
            .collect();
        self.simulate(&base, made)?;
        check_deterministic(self.ledger, &made.obs)
    }

    /// Each claim's runs with its difference's cause removed, where a counterfactual changes
    /// them.
    pub(super) fn counterfactual_runs(&self) -> Result<Vec<CounterfactualRun<'a>>> {
        let mut out = Vec::new();
        for c in &self.ledger.claims {
            let Some(cf) = c.differs.as_ref().and_then(|d| d.counterfactual.as_ref()) else {
                continue;
            };
            for id in c.runs() {
                let r = &self.ledger.runs[&id];
                if let Some(sc) = exec::variant_scenarios(r, &cf.edits)
                    .with_context(|| format!("claim {}, counterfactual", c.id))?
                {
                    out.push((format!("cf:{}", c.id), r, sc));
                }
            }
        }
        Ok(out)
    }

    /// Makes every counterfactual run.
    pub(super) fn make_counterfactuals(
        &self,
        cfs: &[CounterfactualRun<'a>],
        made: &mut Made,
    ) -> Result<()> {
        let batches: Vec<exec::Batch> = cfs
            .iter()
            .map(|(v, r, sc)| self.whole(v.clone(), r, sc))
            .collect();
        self.simulate(&batches, made)
    }

    /// The full mode decides what it can: up to three rounds of more repetitions where a check
    /// is undecided, `judged` judged again after each. Returns the repetitions added per run.
    pub(super) fn decide_undecided(
        &self,
        cfs: &[CounterfactualRun<'a>],
        judged: &mut Vec<Judged>,
        made: &mut Made,
    ) -> Result<BTreeMap<String, usize>> {
        let mut extended: BTreeMap<String, usize> = BTreeMap::new();
        for _round in 0..3 {
            let want = wanted_reps(judged, &made.obs, self.opts.max_reps, &|id| {
                self.deterministic(id)
            });
            if want.is_empty() {
                break;
            }
            let batches = self.extension_batches(&want, cfs, &mut extended);
            self.progress.note(&format!(
                "{} undecided points get more repetitions",
                batches.len()
            ));
            self.simulate(&batches, made)?;
            *judged = self.judge_all(&made.obs, "");
        }
        Ok(extended)
    }

    /// The batches that bring each wanted (variant, run, point) to its repetitions, each point
    /// once; the repetitions added are counted per run in `extended`.
    fn extension_batches<'b>(
        &'b self,
        want: &BTreeMap<(String, String, usize), (u32, u32)>,
        cfs: &'b [CounterfactualRun<'a>],
        extended: &mut BTreeMap<String, usize>,
    ) -> Vec<exec::Batch<'b>> {
        let mut batches = Vec::new();
        for ((variant, run, point), (have, target)) in want {
            let Some(r) = self.ledger.runs.get(run) else {
                continue;
            };
            let scenarios = if variant.is_empty() {
                &r.point_scenarios
            } else {
                match cfs.iter().find(|(v, cr, _)| v == variant && cr.id == *run) {
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
                capture: self.capture[r.id.as_str()],
            });
        }
        // Two variants may ask for the same baseline point: make it once.
        batches.sort_by(|a, b| {
            (&a.variant, &a.run.id, a.points[0].0).cmp(&(&b.variant, &b.run.id, b.points[0].0))
        });
        batches.dedup_by(|a, b| {
            a.variant == b.variant && a.run.id == b.run.id && a.points[0].0 == b.points[0].0
        });
        batches
    }

    /// Mutants: the same ledger on deliberately broken engines, each judged against `judged`.
    pub(super) fn try_mutants(
        &self,
        judged: &[Judged],
        made: &mut Made,
    ) -> Result<Vec<MutantResult>> {
        let all = mutants::load(&self.opts.claims)?;
        let mut results = Vec::new();
        for m in &all {
            results.push(self.try_mutant(m, judged, made)?);
        }
        Ok(results)
    }

    /// Makes the runs mutant `m` changes, judges the claims on them and drops what it made.
    fn try_mutant(&self, m: &Mutant, judged: &[Judged], made: &mut Made) -> Result<MutantResult> {
        let variant = m.variant();
        let mut scen: Vec<(&Run, Vec<Scenario>)> = Vec::new();
        for r in &self.runs {
            if let Some(sc) = exec::variant_scenarios(r, &m.edits)
                .with_context(|| format!("mutant {}", m.name))?
            {
                scen.push((r, sc));
            }
        }
        let mut changed: Vec<String> = scen.iter().map(|(r, _)| r.id.clone()).collect();
        if let Some((cmd, extra)) = &m.bench {
            for b in self
                .benches
                .iter()
                .filter(|b| b.deterministic && b.args.first() == Some(cmd))
            {
                exec::measure(
                    b,
                    &self.exe()?,
                    extra,
                    &variant,
                    self.progress,
                    &mut made.obs,
                )?;
                changed.push(b.id.clone());
            }
        }
        let batches: Vec<exec::Batch> = scen
            .iter()
            .map(|(r, sc)| self.whole(variant.clone(), r, sc))
            .collect();
        self.progress.note(&format!(
            "mutant {}: {} runs changed",
            m.name,
            changed.len()
        ));
        self.simulate(&batches, made)?;
        let mutated = self.judge_all(&made.obs, &variant);
        let killed_by = mutants::kills(judged, &mutated);
        let result = MutantResult {
            name: m.name.clone(),
            what: m.what.clone(),
            breaks: m.breaks.clone(),
            killed: !killed_by.is_empty(),
            runs_changed: changed,
            killed_by,
        };
        // What a mutant made is not needed any more.
        made.obs.reps.retain(|(v, _, _), _| *v != variant);
        Ok(result)
    }
}

/// The repetitions a batch makes.
fn batch_len(b: &exec::Batch) -> usize {
    b.points.iter().map(|(_, r)| r.len()).sum()
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
fn check_bench_cells(ledger: &Ledger, obs: &Observations) -> Result<()> {
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
fn check_deterministic(ledger: &Ledger, obs: &Observations) -> Result<()> {
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
