//! Making the runs the claims need: simulation repetitions on `--jobs` threads, benchmark
//! commands one at a time, for the baseline ledger and for its variants (a claim's
//! counterfactual, a mutant).
//!
//! Contract. A [`Batch`] is one variant of one run with the repetitions to make at each point;
//! [`simulate`] makes every repetition of every batch on `threads` threads and appends the
//! results to the observations in (batch, point, repetition) order, so what is recorded is the
//! same at any thread count, and repetition `r` of a point is always made with the seed of
//! repetition `r` (more repetitions extend a point, they never change the ones made). A
//! variant's scenarios are the run's point scenarios with the variant's edits applied
//! ([`variant_scenarios`]); a variant that leaves every point as it was is not made at all and
//! reads the baseline's repetitions. Benchmark commands ([`measure`]) run alone, one
//! repetition after the other.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use anyhow::{Context, Result};
use mslink_sim::Scenario;

use super::bench::BenchRun;
use super::edit::Edits;
use super::judge::{Observations, Rep};
use super::ledger::Run;
use super::seqtrace;
use super::Progress;
use crate::TraceFiles;

/// One variant of one run and the repetitions to make at each of its points.
pub struct Batch<'a> {
    /// `""` for the baseline, `"cf:ID"`, `"mutant:NAME"`.
    pub variant: String,
    /// The run.
    pub run: &'a Run,
    /// Its point scenarios in this variant.
    pub scenarios: &'a [Scenario],
    /// (point, repetitions to make).
    pub points: Vec<(usize, Range<u32>)>,
    /// Whether its TCP flows' sequence traces are captured.
    pub capture: bool,
}

/// The point scenarios of `run` with `edits` applied, or None when no point changes.
pub fn variant_scenarios(run: &Run, edits: &Edits) -> Result<Option<Vec<Scenario>>> {
    let mut out = Vec::with_capacity(run.point_scenarios.len());
    let mut changed = false;
    for (i, sc) in run.point_scenarios.iter().enumerate() {
        let (e, _) = edits
            .apply(sc)
            .with_context(|| format!("run {}, sweep point {i}", run.id))?;
        changed |= e != *sc;
        out.push(e);
    }
    Ok(changed.then_some(out))
}

/// Makes every repetition of every batch; results go to `obs` in batch, point, repetition
/// order.
pub fn simulate(
    batches: &[Batch],
    threads: usize,
    progress: &dyn Progress,
    obs: &mut Observations,
) -> Result<()> {
    struct Job {
        batch: usize,
        point: usize,
        rep: u32,
    }
    let jobs: Vec<Job> = batches
        .iter()
        .enumerate()
        .flat_map(|(batch, b)| {
            b.points.iter().flat_map(move |(point, reps)| {
                reps.clone().map(move |rep| Job {
                    batch,
                    point: *point,
                    rep,
                })
            })
        })
        .collect();
    if jobs.is_empty() {
        return Ok(());
    }
    // Trace files are read relative to each scenario's folder, once per folder.
    let mut traces: BTreeMap<&Path, TraceFiles> = BTreeMap::new();
    for b in batches {
        let dir = b.run.scenario_path.parent().unwrap_or(Path::new(""));
        traces
            .entry(dir)
            .or_insert_with(|| TraceFiles::new(dir.to_path_buf()));
    }
    progress.phase(jobs.len() as u64, "runs");
    let results =
        crate::parallel::parallel_ordered(jobs.len(), threads, &|| progress.tick(), |i| {
            let j = &jobs[i];
            let b = &batches[j.batch];
            let dir = b.run.scenario_path.parent().unwrap_or(Path::new(""));
            let mut t = &traces[dir];
            let sc = &b.scenarios[j.point];
            if !b.capture {
                return mslink_sim::run_with(sc, j.rep, &mut t, None)
                    .map(|r| Rep {
                        flows: r.flows,
                        ..Rep::default()
                    })
                    .map_err(anyhow::Error::from);
            }
            // The packets `mslink sim --pcap` would write, read as they are captured.
            let mut seq = seqtrace::Capture::new(sc);
            let mut hook = |seg: usize, dir: usize, at: mslink_link::Instant, p: &[u8]| {
                seq.packet(seg, dir, at.as_secs_f64(), p);
            };
            let r = mslink_sim::run_with(sc, j.rep, &mut t, Some(&mut hook))?;
            Ok(Rep {
                flows: r.flows,
                seq: seq.traces,
                bench: None,
            })
        });
    progress.done();
    for (j, r) in jobs.iter().zip(results) {
        let b = &batches[j.batch];
        let what = if b.variant.is_empty() {
            String::new()
        } else {
            format!(" ({})", b.variant)
        };
        let rep = r.with_context(|| {
            format!(
                "run {}{what}, sweep point {}, repetition {}",
                b.run.id, j.point, j.rep
            )
        })?;
        obs.entry(&b.variant, &b.run.id, j.point).push(rep);
    }
    Ok(())
}

/// Runs benchmark command `b` (with `extra` arguments) `b.reps` times, one after the other,
/// with the executable `exe`, recording each output under `variant`.
pub fn measure(
    b: &BenchRun,
    exe: &Path,
    extra: &[String],
    variant: &str,
    progress: &dyn Progress,
    obs: &mut Observations,
) -> Result<()> {
    for rep in 0..b.reps {
        if !b.deterministic {
            progress.note(&format!(
                "measuring this machine: `{}` ({} of {})",
                b.command(),
                rep + 1,
                b.reps
            ));
        }
        let doc = b.run_once(exe, extra).with_context(|| {
            format!(
                "claims file {}, bench run {}, repetition {rep}",
                b.file.display(),
                b.id
            )
        })?;
        obs.entry(variant, &b.id, 0).push(Rep {
            bench: Some(doc),
            ..Rep::default()
        });
    }
    Ok(())
}
