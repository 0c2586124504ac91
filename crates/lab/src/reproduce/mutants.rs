//! Mutants the ledger must kill: deliberately broken engines, each a configuration override of
//! the runs (`claims/mutants.toml`), so that a ledger which cannot tell a broken scheduler from a
//! working one is itself shown to be broken.
//!
//! Contract. A mutant is a list of scenario edits ([`super::edit`]) applied to every point of
//! every simulation run, and optionally extra arguments for the deterministic benchmark runs of
//! one command (the protocol-stack counts of `stack-bench`). [`load`] refuses a mutant without
//! a name, a description or the paper statement it should break, a duplicated name, or one that
//! changes nothing. A mutant is *killed* when at least one claim that does not fail on the
//! unbroken engine (and is not a known difference) fails on the mutant ([`kills`]); the report
//! lists, per mutant, the runs it changed and the claims that caught it, and the mutation score
//! is killed / all.

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::edit::Edits;
use super::judge::{Judged, Verdict};
use super::spec::EditSpec;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    #[serde(default)]
    mutant: Vec<MutantSpec>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MutantSpec {
    name: String,
    what: String,
    breaks: String,
    #[serde(default)]
    edit: Vec<EditSpec>,
    #[serde(default)]
    set: toml::Table,
    /// Extra arguments for deterministic bench runs whose command starts with `bench_command`.
    #[serde(default)]
    bench_args: Vec<String>,
    bench_command: Option<String>,
}

/// One mutant, checked.
#[derive(Clone, Debug)]
pub struct Mutant {
    /// Short name, e.g. `scfq-strict-priority`.
    pub name: String,
    /// What it breaks, in words.
    pub what: String,
    /// The paper statement it should make fail.
    pub breaks: String,
    /// Scenario edits.
    pub edits: Edits,
    /// (command, extra arguments) for deterministic bench runs of that command.
    pub bench: Option<(String, Vec<String>)>,
}

impl Mutant {
    /// The observation variant of this mutant.
    pub fn variant(&self) -> String {
        format!("mutant:{}", self.name)
    }
}

/// The mutants of `claims_dir/mutants.toml`.
pub fn load(claims_dir: &Path) -> Result<Vec<Mutant>> {
    let path = claims_dir.join(super::ledger::MUTANTS_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the mutants file {}", path.display()))?;
    let spec: FileSpec =
        toml::from_str(&text).with_context(|| format!("mutants file {}", path.display()))?;
    let mut out: Vec<Mutant> = Vec::new();
    for m in spec.mutant {
        let name = m.name.clone();
        let mutant = (|| -> Result<Mutant> {
            if m.name.trim().is_empty() || m.what.trim().is_empty() || m.breaks.trim().is_empty() {
                bail!("name, what and breaks must not be empty");
            }
            if out.iter().any(|k| k.name == m.name) {
                bail!("the name is used twice");
            }
            let set: Vec<(String, toml::Value)> =
                m.set.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let edits = Edits::from_specs(&set, &m.edit)?;
            let bench = match (m.bench_command, m.bench_args.is_empty()) {
                (Some(c), false) => Some((c, m.bench_args)),
                (None, true) => None,
                _ => bail!("bench_args and bench_command go together"),
            };
            if edits.is_empty() && bench.is_none() {
                bail!("changes nothing: give edit = [..], set = {{..}} or bench_args");
            }
            Ok(Mutant {
                name: m.name,
                what: m.what,
                breaks: m.breaks,
                edits,
                bench,
            })
        })()
        .with_context(|| format!("mutants file {}, mutant {name}", path.display()))?;
        out.push(mutant);
    }
    if out.is_empty() {
        bail!("mutants file {}: no [[mutant]]", path.display());
    }
    Ok(out)
}

/// A mutant, judged.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MutantResult {
    /// Name.
    pub name: String,
    /// What it breaks.
    pub what: String,
    /// The statement it should break.
    pub breaks: String,
    /// The runs it changed.
    pub runs_changed: Vec<String>,
    /// Claims that do not fail on the engine but fail on the mutant.
    pub killed_by: Vec<String>,
    /// Whether some claim caught it.
    pub killed: bool,
}

impl MutantResult {
    /// Whether it changed anything the chosen claims read (a mutant of one paper's engine
    /// changes nothing in another paper's runs).
    pub fn applies(&self) -> bool {
        !self.runs_changed.is_empty()
    }
}

/// The claims that catch a mutant: those that hold or are undecided on the engine
/// (`baseline`) and fail on the mutant (`mutated`, the same claims in the same order).
pub fn kills(baseline: &[Judged], mutated: &[Judged]) -> Vec<String> {
    baseline
        .iter()
        .zip(mutated)
        .filter(|(b, m)| {
            matches!(b.verdict, Verdict::Holds | Verdict::Inconclusive)
                && m.verdict == Verdict::Fails
        })
        .map(|(b, _)| b.id.clone())
        .collect()
}
