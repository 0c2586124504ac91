//! `mslink reproduce`: the options and the printing; the work is `mslink_lab::reproduce`.
//!
//! Contract. Parses the options, hands them to the library with a progress bar (hidden unless
//! standard error is a terminal and `-q` is off) and notes on standard error, prints the verdict
//! counts, and fails (exit status 1) when the library reports a problem: a failing claim, a
//! known difference that no longer differs, an undecided deterministic claim, a surviving
//! mutant.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use mslink_lab::reproduce::{self, Options};

/// Options of `mslink reproduce`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink reproduce --quick --out results/claims-quick\n  mslink reproduce --paper 004 --out results/claims-004\n  mslink reproduce --claim 004-fig2-raw-drop --out results/one --jobs 2\n  mslink reproduce --quick --mutants --out results/mutants   # the ledger against broken engines\n  mslink reproduce --list\n  mslink reproduce --paper 000 --bench --out results/claims-000   # benchmark claims: measures this machine\n\nThe claims ledger (claims/*.toml, one file per paper; docs/reproduce.md explains its format)\nsays, for each checkable claim of the five papers, where the paper makes it, the paper's own\nwords, the scenario that checks it and the expected value or relation, with a band derived\nfrom the paper's number and how precisely it can be read. mslink reproduce runs the scenarios\nthe chosen claims need (each once, shared between claims), judges every claim with 95%\nStudent-t intervals over the repetitions (holds, inconclusive, fails; known differences with\ntheir cause and a counterfactual run without it), and writes OUT/report.html (self-contained:\nfigures, verdicts, commands), OUT/report.md and OUT/claims.json. The full mode adds\nrepetitions where a check is undecided (up to --max-reps per point). It exits with status 1\nwhen a claim fails, a known difference no longer differs, or (with --mutants) a broken engine\npasses every claim. --quick runs fewer repetitions and shorter transfers: more checks stay\nundecided, none holds more easily. Claims that time this machine (papers 000, 002) are judged\nfrom benchmarks only with --bench."
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
    /// Also run the benchmarks that time this machine (`mslink bench`, `mslink stack-bench`)
    /// and judge their claims: a measurement of this machine, not reproducible elsewhere.
    /// Without it those claims are listed as not run.
    #[arg(long)]
    pub bench: bool,
    /// Also judge the ledger against each deliberately broken engine of claims/mutants.toml:
    /// every mutant must make some claim fail.
    #[arg(long)]
    pub mutants: bool,
    /// Most repetitions per point the full mode makes to decide an undecided check.
    #[arg(long, default_value_t = 100)]
    pub max_reps: u32,
}

/// The command line as a reader retypes it.
fn command(a: &ReproduceArgs) -> String {
    let mut c = String::from("mslink reproduce");
    for (on, flag) in [
        (a.quick, " --quick"),
        (a.bench, " --bench"),
        (a.mutants, " --mutants"),
    ] {
        if on {
            c.push_str(flag);
        }
    }
    for p in &a.paper {
        c.push_str(&format!(" --paper {p}"));
    }
    for k in &a.claim {
        c.push_str(&format!(" --claim {k}"));
    }
    if a.claims != std::path::Path::new("claims") {
        c.push_str(&format!(" --claims {}", a.claims.display()));
    }
    if a.max_reps != 100 {
        c.push_str(&format!(" --max-reps {}", a.max_reps));
    }
    if let Some(o) = &a.out {
        c.push_str(&format!(" --out {}", o.display()));
    }
    c
}

/// Runs `mslink reproduce`.
pub fn run(a: &ReproduceArgs) -> Result<()> {
    if a.max_reps < 2 {
        bail!(
            "--max-reps {}: at least 2 (one repetition has no interval)",
            a.max_reps
        );
    }
    let opts = Options {
        claims: a.claims.clone(),
        out: a.out.clone(),
        papers: a.paper.clone(),
        claim_ids: a.claim.clone(),
        quick: a.quick,
        jobs: a
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        bench: a.bench,
        mutants: a.mutants,
        max_reps: a.max_reps,
        exe: crate::convention::mslink_exe().ok(),
        command: command(a),
        list: a.list,
    };
    let progress = crate::convention::Bar::new(a.quiet);
    let started = std::time::Instant::now();
    let o = reproduce::run(&opts, &progress)?;
    if let Some(l) = o.listing {
        print!("{l}");
        return Ok(());
    }
    let out = o.out.clone().unwrap_or_default();
    if a.json {
        let path = out.join("claims.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        println!("{text}");
    }
    if !a.quiet {
        let c = &o.counts;
        let mutation = o.mutation.map_or(String::new(), |(k, n)| {
            format!("; mutants caught: {k} of {n}")
        });
        eprintln!(
            "mslink: {} hold, {} inconclusive, {} fail, {} differ (known), {} no longer differ, {} not checkable{mutation}; {} runs in {:.0} s; report: {}",
            c["holds"],
            c["inconclusive"],
            c["fails"],
            c["differs"],
            c["no longer differs"],
            c["not checkable"],
            o.runs_made,
            started.elapsed().as_secs_f64(),
            out.join("report.html").display()
        );
    }
    if !o.problems.is_empty() {
        bail!(
            "{} problems (details in {}):\n  {}",
            o.problems.len(),
            out.join("report.md").display(),
            o.problems.join("\n  ")
        );
    }
    Ok(())
}
