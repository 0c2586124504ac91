//! `mslink reproduce`: run what the claims ledger needs, judge every claim, write the report.
//!
//! Contract. The ledger (`claims/*.toml`, [`ledger`]) says which runs each claim needs; the runs
//! a selection of claims needs are executed once each, shared between claims, on `--jobs`
//! threads, and collected in (run, point, repetition) order, so the verdicts and every file
//! written are the same at any `--jobs`. [`judge`] turns repetitions into Student-t intervals
//! and verdicts; [`report`] writes OUT/claims.json, OUT/report.md and OUT/report.html (these
//! three files are replaced on every run; nothing else in OUT is touched). The command fails
//! (exit status 1) when a claim fails; claims marked as known differences and claims nothing
//! here can check are listed apart, with their reasons, and do not fail it.
//!
//! Benchmark runs ([`bench`]: `[run.NAME] bench = [ARGS]`) measure this machine, so they run
//! only with `--bench`, one repetition at a time and before the simulations; without it their
//! claims are listed as not checkable ([`bench::NOT_RUN`]) and the files stay the same at any
//! `--jobs`. With it, the report names each bench command and says the numbers are this
//! machine's.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub mod bench;
pub mod judge;
pub mod ledger;
mod report;
pub mod seqtrace;

/// Options of `mslink reproduce`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink reproduce --quick --out results/claims-quick\n  mslink reproduce --paper 004 --out results/claims-004\n  mslink reproduce --claim 004-fig2-raw-drop --out results/one --jobs 2\n  mslink reproduce --list\n  mslink reproduce --paper 000 --bench --out results/claims-000   # benchmark claims: measures this machine\n\nThe claims ledger (claims/*.toml, one file per paper; docs/reproduce.md explains its format)\nsays, for each checkable claim of the five papers, where the paper makes it, what it says,\nthe scenario that checks it and the expected value or relation. mslink reproduce runs the\nscenarios the chosen claims need (each once, shared between claims), judges every claim with\n95% Student-t intervals over the repetitions, and writes OUT/report.html (self-contained:\nfigures, verdicts, commands), OUT/report.md and OUT/claims.json. It exits with status 1 when\na claim fails. --quick runs fewer repetitions and shorter transfers: the intervals widen,\nand so does what counts as holding. Claims about end systems (papers 000, 002) are judged\nfrom benchmarks (mslink bench, mslink stack-bench) only with --bench: their numbers are\nthis machine's, not deterministic, so without --bench they are listed as not run."
)]
pub struct ReproduceArgs {
    /// Folder for report.html, report.md and claims.json (created if missing).
    #[arg(long, required_unless_present = "list")]
    pub out: Option<PathBuf>,
    /// Only the claims of these papers (000 .. 004); repeatable.
    #[arg(long)]
    pub paper: Vec<String>,
    /// Only these claims (ids as in the ledger); repeatable.
    #[arg(long)]
    pub claim: Vec<String>,
    /// Fewer repetitions and shorter runs (what `./dev test` runs).
    #[arg(long)]
    pub quick: bool,
    /// Runs in parallel (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// The claims ledger folder.
    #[arg(long, default_value = "claims")]
    pub claims: PathBuf,
    /// List the chosen claims (id, paper, where, run) and stop.
    #[arg(long)]
    pub list: bool,
    /// No progress bar or summary (warnings and errors still show).
    #[arg(short, long)]
    pub quiet: bool,
    /// Also print claims.json on standard output.
    #[arg(long)]
    pub json: bool,
    /// Also run the benchmarks the chosen claims name (`mslink bench`, `mslink stack-bench`)
    /// and judge their claims: a measurement of this machine, not reproducible elsewhere.
    /// Without it those claims are listed as not run.
    #[arg(long)]
    pub bench: bool,
}

/// A simulation job: one repetition of one point of one run.
struct Job<'a> {
    run: &'a ledger::Run,
    point: usize,
    rep: u32,
}

/// Runs `mslink reproduce`.
pub fn run(args: &ReproduceArgs) -> Result<()> {
    let mut ledger = ledger::load(&args.claims, args.quick)?;
    for p in &args.paper {
        if !ledger.papers.contains_key(p) {
            bail!(
                "--paper {p}: no such paper in the ledger (papers: {})",
                ledger.papers.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    for c in &args.claim {
        if !ledger.claims.iter().any(|k| k.id == *c) {
            bail!("--claim {c}: no such claim (mslink reproduce --list shows them)");
        }
    }
    ledger.claims.retain(|c| {
        (args.paper.is_empty() || args.paper.contains(&c.paper))
            && (args.claim.is_empty() || args.claim.contains(&c.id))
    });
    if args.list {
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
        print!("{out}");
        return Ok(());
    }
    let out = args.out.as_deref().context("--out is needed")?;
    // Benchmark claims: judged only with --bench.
    if !args.bench {
        for c in &mut ledger.claims {
            let reads_bench = c
                .checks
                .iter()
                .any(|(_, e)| cells(e).iter().any(|x| x.bench.is_some()));
            if reads_bench {
                c.checks.clear();
                c.differs = None;
                c.not_checkable = Some(bench::NOT_RUN.to_string());
            }
        }
    }
    let bench_ids: std::collections::BTreeSet<String> = ledger
        .claims
        .iter()
        .flat_map(|c| {
            c.checks.iter().flat_map(|(_, e)| {
                cells(e)
                    .into_iter()
                    .filter(|x| x.bench.is_some())
                    .map(|x| x.run.clone())
            })
        })
        .collect();
    let benches: Vec<&bench::BenchRun> = bench_ids
        .iter()
        .filter_map(|id| ledger.benches.get(id))
        .collect();
    // The runs the chosen claims need, each once.
    let needed: std::collections::BTreeSet<&str> = ledger
        .claims
        .iter()
        .flat_map(|c| {
            c.checks
                .iter()
                .flat_map(|(_, e)| cells(e).into_iter().map(|x| x.run.as_str()))
        })
        .collect();
    let runs: Vec<&ledger::Run> = needed
        .iter()
        .filter_map(|id| ledger.runs.get(*id))
        .collect();
    let jobs: Vec<Job> = runs
        .iter()
        .flat_map(|r| {
            (0..r.points.len())
                .flat_map(move |point| (0..r.reps).map(move |rep| Job { run: r, point, rep }))
        })
        .collect();
    crate::convention::out_dir(out, "--out")?;
    let threads = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    if !args.quiet {
        eprintln!(
            "mslink: {} claims, {} runs of {} scenarios{}{}",
            ledger.claims.len(),
            jobs.len(),
            runs.len(),
            if args.quick { " (--quick)" } else { "" },
            if benches.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} benchmark runs of {} commands (--bench: this machine)",
                    benches.iter().map(|b| b.reps as usize).sum::<usize>(),
                    benches.len()
                )
            }
        );
    }
    let traces: Vec<crate::TraceFiles> = runs
        .iter()
        .map(|r| {
            crate::TraceFiles::new(
                r.scenario_path
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default(),
            )
        })
        .collect();
    // Runs whose figures or claims read sequence traces capture their TCP flows' packets.
    let capture: Vec<bool> = runs.iter().map(|r| captures(&ledger, r)).collect();
    let started = std::time::Instant::now();
    // Benchmarks first, one at a time: nothing else of ours runs beside a measurement.
    let mut obs = judge::Observations::new();
    for b in &benches {
        for rep in 0..b.reps {
            if !args.quiet {
                eprintln!(
                    "mslink: measuring this machine: `{}` ({} of {})",
                    b.command(),
                    rep + 1,
                    b.reps
                );
            }
            let doc = b.run_once().with_context(|| {
                format!(
                    "claims file {}, bench run {}, repetition {rep}",
                    b.file.display(),
                    b.id
                )
            })?;
            obs.entry((b.id.clone(), 0)).or_default().push(judge::Rep {
                bench: Some(doc),
                ..judge::Rep::default()
            });
        }
    }
    // Every bench cell must pick one row with a numeric field in every repetition.
    for c in &ledger.claims {
        for (_, e) in &c.checks {
            for x in cells(e) {
                let Some(sel) = &x.bench else { continue };
                let file = ledger
                    .benches
                    .get(&x.run)
                    .map(|b| b.file.display().to_string())
                    .unwrap_or_default();
                for (i, rep) in obs
                    .get(&(x.run.clone(), 0))
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
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
    let bar = crate::convention::bar(jobs.len() as u64, "runs", args.quiet);
    let results = crate::sim_cmd::parallel_ordered(jobs.len(), threads, &bar, |i| {
        let j = &jobs[i];
        let ri = runs
            .iter()
            .position(|r| std::ptr::eq(*r, j.run))
            .unwrap_or(0);
        let mut t = &traces[ri];
        let sc = &j.run.point_scenarios[j.point];
        if !capture[ri] {
            return mslink_sim::run_with(sc, j.rep, &mut t, None)
                .map(|r| judge::Rep {
                    flows: r.flows,
                    ..judge::Rep::default()
                })
                .map_err(anyhow::Error::from);
        }
        // The packets `mslink sim --pcap` would write, read as they are captured.
        let mut seq = seqtrace::Capture::new(sc);
        let mut hook = |seg: usize, dir: usize, at: mslink_link::Instant, p: &[u8]| {
            seq.packet(seg, dir, at.as_secs_f64(), p);
        };
        let r = mslink_sim::run_with(sc, j.rep, &mut t, Some(&mut hook))?;
        Ok(judge::Rep {
            flows: r.flows,
            seq: seq.traces,
            bench: None,
        })
    });
    bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    for (j, r) in jobs.iter().zip(results) {
        let rep = r.with_context(|| {
            format!(
                "run {}, sweep point {}, repetition {}",
                j.run.id, j.point, j.rep
            )
        })?;
        obs.entry((j.run.id.clone(), j.point))
            .or_default()
            .push(rep);
    }
    let judged: Vec<judge::Judged> = ledger
        .claims
        .iter()
        .map(|c| judge::judge_claim(&obs, c))
        .collect();
    let ctx = report::Context {
        args,
        ledger: &ledger,
        runs: &runs,
        benches: &benches,
        obs: &obs,
        judged: &judged,
    };
    report::write(out, &ctx)?;
    let count = |v: judge::Verdict| judged.iter().filter(|j| j.verdict == v).count();
    if args.json {
        let path = out.join("claims.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        println!("{text}");
    }
    if !args.quiet {
        eprintln!(
            "mslink: {} hold, {} fail, {} differ (known), {} not checkable; {:.0} s; report: {}",
            count(judge::Verdict::Holds),
            count(judge::Verdict::Fails),
            count(judge::Verdict::Differs),
            count(judge::Verdict::NotCheckable),
            wall,
            out.join("report.html").display()
        );
    }
    let failed: Vec<&str> = judged
        .iter()
        .filter(|j| j.verdict == judge::Verdict::Fails)
        .map(|j| j.id.as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} claims fail: {} (details in {})",
            failed.len(),
            failed.join(", "),
            out.join("report.md").display()
        );
    }
    Ok(())
}

/// The cells an expectation reads.
fn cells(e: &ledger::Expect) -> Vec<&ledger::Cell> {
    use ledger::Expect::*;
    match e {
        Above(a, b, _) | Below(a, b, _) | Ratio(a, b, _) | Difference(a, b, _) => vec![a, b],
        Value(a, _) => vec![a],
        Monotone(cs, _) => cs.iter().collect(),
    }
}

/// Whether `run` captures its TCP flows' sequence traces: a figure or a chosen claim reads them.
fn captures(ledger: &ledger::Ledger, run: &ledger::Run) -> bool {
    run.figures
        .iter()
        .any(|f| f.kind == ledger::FigureKind::Seq)
        || ledger.claims.iter().any(|c| {
            c.checks.iter().any(|(_, e)| {
                cells(e)
                    .iter()
                    .any(|x| x.run == run.id && seqtrace::is_metric(&x.metric))
            })
        })
}
