//! The claims ledger: `claims/<paper>.toml`, one file per paper, read and checked.
//!
//! Contract. A ledger file names its paper and holds `[run.NAME]` blocks (a scenario file, its
//! repetitions, overrides, a replacement `sweep`, named axes with the values a reader knows
//! them by, figures) and `[[claim]]` entries (where in the paper, the paper's own words, what
//! it says in a few words, exactly one expectation over cells of runs, and the band that
//! expectation is held to, derived from the paper's number by [`super::band`]). [`load`] reads
//! every `*.toml` of a folder but `mutants.toml` ([`super::mutants`]), in name order, and
//! refuses anything it cannot judge with the file, the claim id or run name and what is wrong:
//! unknown keys, a claim without its quote, a band that is neither derived from the paper nor
//! justified, a scenario that does not parse, an axis whose values do not match its sweep, a
//! cell that selects no point or several, a claim without exactly one expectation, a `differs`
//! without its cause, or with a cause we could remove but no counterfactual run. Paths in a
//! ledger are relative to the ledger's folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use mslink_sim::Scenario;

use super::band::Band;
use super::edit::Edits;
pub use super::spec::{AxisSpec, FigureKind, FigureSpec, ModeSpec};
use super::spec::{FileSpec, RunSpec};

mod claim;
use claim::resolve_claim;

/// The name of the mutants file in the claims folder, which is not a paper's ledger.
pub const MUTANTS_FILE: &str = "mutants.toml";

impl FigureSpec {
    /// Checks the keys of its kind against the run's axes; `select` resolves a point.
    fn check(
        &self,
        axes: &BTreeMap<String, (usize, AxisSpec)>,
        reps: u32,
        select: impl Fn(&BTreeMap<String, toml::Value>) -> Result<(usize, String)>,
    ) -> Result<()> {
        match self.kind {
            FigureKind::Metric => {
                let x = self.x.as_ref().context("needs x = AXIS")?;
                self.metric.as_ref().context("needs metric")?;
                self.y_label.as_ref().context("needs y_label")?;
                if !self.at.is_empty() || self.from_s.is_some() || self.to_s.is_some() {
                    bail!("at, from_s and to_s are for kind = \"seq\" figures");
                }
                for a in std::iter::once(x)
                    .chain(self.series.iter())
                    .chain(self.fixed.keys())
                {
                    if !axes.contains_key(a) {
                        bail!("{a} is not an axis of the run");
                    }
                }
            }
            FigureKind::Seq => {
                if self.x.is_some()
                    || self.series.is_some()
                    || self.metric.is_some()
                    || self.y_label.is_some()
                    || !self.fixed.is_empty()
                    || self.log_y
                    || !self.paper.is_empty()
                {
                    bail!(
                        "a kind = \"seq\" figure has fixed axes (time, sequence number): no x, \
                         series, metric, y_label, fixed, log_y or paper; it takes at, rep, from_s, to_s"
                    );
                }
                select(&self.at).context("at")?;
                if self.rep >= reps {
                    bail!("rep = {}: the run has {reps} repetitions", self.rep);
                }
                if let (Some(a), Some(b)) = (self.from_s, self.to_s) {
                    if a.partial_cmp(&b) != Some(std::cmp::Ordering::Less) {
                        bail!("from_s = {a} is not before to_s = {b}");
                    }
                }
            }
        }
        Ok(())
    }
}

/// A run the claims need: a scenario with its sweep grid resolved.
#[derive(Debug)]
pub struct Run {
    /// `PAPER/NAME`, unique across the ledger.
    pub id: String,
    /// The scenario file as given (relative to the ledger folder) and resolved.
    pub scenario_file: String,
    /// Its path.
    pub scenario_path: PathBuf,
    /// Scenario text, for provenance.
    pub scenario_text: String,
    /// The scenario with overrides, the ledger's sweep and the mode's repetitions applied.
    pub scenario: Scenario,
    /// Overrides applied (key, TOML text), for the commands that rerun it.
    pub sets: Vec<(String, String)>,
    /// Whether the ledger replaced the scenario's sweep (which `mslink sim --set` cannot
    /// express, so only `mslink reproduce` reruns it).
    pub sweep_replaced: bool,
    /// Repetitions per point.
    pub reps: u32,
    /// Nothing random reaches its cells: made twice, the repetitions must agree.
    pub deterministic: bool,
    /// Sweep keys in the grid's order, and each point's value indices and overrides.
    pub keys: Vec<String>,
    /// (value index per key, overrides) per point.
    pub points: Vec<mslink_sim::scenario::SweepPoint>,
    /// The scenario of each point, validated (every repetition runs it as it is).
    pub point_scenarios: Vec<Scenario>,
    /// Axis alias -> (position in `keys`, spec).
    pub axes: BTreeMap<String, (usize, AxisSpec)>,
    /// Default flow of its cells.
    pub flow: Option<String>,
    /// Its figures.
    pub figures: Vec<FigureSpec>,
}

/// Where a cell is: a run, a point, a flow, a metric (or, for a benchmark run, a row of its
/// output and a field of it).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Cell {
    /// Run id.
    pub run: String,
    /// Sweep point index.
    pub point: usize,
    /// Flow name.
    pub flow: String,
    /// Metric (a field of the flow's results).
    pub metric: String,
    /// How a reader names it: its axis values, "loss 1.5, scheme Raw".
    pub label: String,
    /// For a benchmark run: the row of its output (`point` is 0, `flow` the array's name).
    pub bench: Option<super::bench::Rows>,
}

/// What a claim expects.
#[derive(Clone, Debug)]
pub enum Expect {
    /// a ≥ factor · b (statistically: not significantly below).
    Above(Cell, Cell, f64),
    /// a ≤ factor · b.
    Below(Cell, Cell, f64),
    /// a / b within [lo, hi].
    Ratio(Cell, Cell, [f64; 2]),
    /// a - b within [lo, hi].
    Difference(Cell, Cell, [f64; 2]),
    /// a within [lo, hi].
    Value(Cell, [f64; 2]),
    /// Each cell above (decreasing) or below (increasing) the next.
    Monotone(Vec<Cell>, bool),
}

/// Why a known difference arises (docs/reproduce.md, "Known differences").
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A model parameter we have, set otherwise than the paper (or one the paper does not
    /// state): a counterfactual run sets it as the paper had it.
    Parameter,
    /// A mechanism we have that can be switched: a counterfactual run switches it.
    Mechanism,
    /// A mechanism the model does not have.
    Missing,
    /// Nobody knows yet.
    Open,
}

impl Cause {
    fn parse(s: &str) -> Result<Cause> {
        Ok(match s {
            "parameter" => Cause::Parameter,
            "mechanism" => Cause::Mechanism,
            "missing" => Cause::Missing,
            "open" => Cause::Open,
            other => bail!(
                "cause = {other:?}: expected \"parameter\" (a model parameter we have), \
                 \"mechanism\" (a mechanism we have), \"missing\" (a mechanism the model \
                 lacks) or \"open\" (unknown)"
            ),
        })
    }

    /// How the report names it.
    pub fn word(self) -> &'static str {
        match self {
            Cause::Parameter => "a model parameter",
            Cause::Mechanism => "a mechanism of the model",
            Cause::Missing => "a mechanism the model lacks",
            Cause::Open => "an open question",
        }
    }
}

/// The same runs re-made with a difference's cause removed or set as the paper had it.
#[derive(Clone, Debug)]
pub struct Counterfactual {
    /// What it changes, in words.
    pub what: String,
    /// The changes.
    pub edits: Edits,
}

/// A known difference from the paper.
#[derive(Clone, Debug)]
pub struct Differs {
    /// Why we differ.
    pub reason: String,
    /// What kind of cause.
    pub cause: Cause,
    /// The run without the cause, where we have the cause.
    pub counterfactual: Option<Counterfactual>,
}

/// One claim, resolved.
#[derive(Debug)]
pub struct Claim {
    /// Id, e.g. `004-fig2-raw-drop`.
    pub id: String,
    /// Paper number, e.g. `004`.
    pub paper: String,
    /// Section, figure or table.
    pub place: String,
    /// The claim in a few words.
    pub says: String,
    /// The paper's words.
    pub quote: String,
    /// The run it is judged on (none: not checkable).
    pub run: Option<String>,
    /// The expectation, once per value of an `each` axis (empty when not checkable).
    pub checks: Vec<(String, Expect)>,
    /// Where the expectation's numbers come from (none when not checkable).
    pub band: Option<Band>,
    /// A known difference from the paper.
    pub differs: Option<Differs>,
    /// Why this claim cannot be checked here.
    pub not_checkable: Option<String>,
}

impl Claim {
    /// The run ids its checks read.
    pub fn runs(&self) -> std::collections::BTreeSet<String> {
        self.checks
            .iter()
            .flat_map(|(_, e)| e.cells().into_iter().map(|c| c.run.clone()))
            .collect()
    }
}

impl Expect {
    /// The cells it reads.
    pub fn cells(&self) -> Vec<&Cell> {
        match self {
            Expect::Above(a, b, _)
            | Expect::Below(a, b, _)
            | Expect::Ratio(a, b, _)
            | Expect::Difference(a, b, _) => vec![a, b],
            Expect::Value(a, _) => vec![a],
            Expect::Monotone(cs, _) => cs.iter().collect(),
        }
    }
}

/// The whole ledger.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Paper number -> title.
    pub papers: BTreeMap<String, String>,
    /// Runs by id.
    pub runs: BTreeMap<String, Run>,
    /// Benchmark runs by id.
    pub benches: BTreeMap<String, super::bench::BenchRun>,
    /// Claims in file order.
    pub claims: Vec<Claim>,
}

/// Reads every `*.toml` of `dir` (only `<paper>.toml` of the papers in `only`, when it is not
/// empty), in name order, for the full or the quick mode.
pub fn load(dir: &Path, quick: bool, only: &[String]) -> Result<Ledger> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| {
            format!(
                "reading the claims folder {} (run from a clone of mslink, or give --claims DIR)",
                dir.display()
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "toml")
                && p.file_name().is_some_and(|n| n != MUTANTS_FILE)
                && (only.is_empty()
                    || p.file_stem()
                        .is_some_and(|s| only.iter().any(|o| s == o.as_str())))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        if only.is_empty() {
            bail!("no claims files (*.toml) in {}", dir.display());
        }
        bail!(
            "--paper {}: no such claims file in {} (a paper's claims are in <paper>.toml)",
            only.join(", "),
            dir.display()
        );
    }
    let mut ledger = Ledger::default();
    for f in files {
        load_file(&f, quick, &mut ledger)
            .with_context(|| format!("claims file {}", f.display()))?;
    }
    Ok(ledger)
}

fn load_file(path: &Path, quick: bool, ledger: &mut Ledger) -> Result<()> {
    let text = std::fs::read_to_string(path).context("reading it")?;
    let spec: FileSpec = toml::from_str(&text)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    if ledger
        .papers
        .insert(spec.paper.clone(), spec.title.clone())
        .is_some()
    {
        bail!("paper {} has another claims file", spec.paper);
    }
    for (name, r) in &spec.run {
        if r.bench.is_some() {
            let b = resolve_bench(path, &spec.paper, name, r, quick)
                .with_context(|| format!("run {name}"))?;
            ledger.benches.insert(b.id.clone(), b);
            continue;
        }
        let run =
            resolve_run(dir, &spec.paper, name, r, quick).with_context(|| format!("run {name}"))?;
        ledger.runs.insert(run.id.clone(), run);
    }
    let mut seen = std::collections::BTreeSet::new();
    for c in &spec.claim {
        if !seen.insert(c.id.clone()) || ledger.claims.iter().any(|k| k.id == c.id) {
            bail!("claim {}: the id is used twice", c.id);
        }
        let claim =
            resolve_claim(&spec.paper, c, ledger).with_context(|| format!("claim {}", c.id))?;
        ledger.claims.push(claim);
    }
    Ok(())
}

/// TOML text of a value, as `--set` takes it.
pub fn toml_text(v: &toml::Value) -> String {
    v.to_string()
}

/// Repetitions per point of run `r` in the full or quick mode: two for a deterministic run
/// (the two are compared), else `reps` (or `quick.reps`), at least 1.
fn reps_of(r: &RunSpec, quick: bool) -> Result<u32> {
    if r.deterministic {
        if r.reps.is_some() || r.quick.reps.is_some() {
            bail!(
                "a deterministic run has no reps: it is made twice and the two must agree \
                 (remove reps)"
            );
        }
        return Ok(2);
    }
    let full = r
        .reps
        .context("needs reps = N (repetitions per point), or deterministic = true")?;
    let reps = if quick {
        r.quick.reps.unwrap_or(full)
    } else {
        full
    };
    if reps == 0 {
        bail!("reps must be at least 1");
    }
    Ok(reps)
}

/// A `[run.NAME]` with `bench = [...]`: only `reps` and `quick = { reps }` go with it.
fn resolve_bench(
    file: &Path,
    paper: &str,
    name: &str,
    r: &RunSpec,
    quick: bool,
) -> Result<super::bench::BenchRun> {
    let args = r.bench.clone().unwrap_or_default();
    if r.scenario.is_some() {
        bail!("a run has a scenario or a bench, not both");
    }
    if r.sweep.is_some()
        || !r.set.is_empty()
        || !r.quick.set.is_empty()
        || !r.axis.is_empty()
        || r.flow.is_some()
        || r.figure.is_some()
        || !r.figures.is_empty()
    {
        bail!("a bench run takes bench, reps (or deterministic) and quick = {{ reps }} only (no set, sweep, axis, flow or figure)");
    }
    if args.is_empty() {
        bail!("bench = []: name the mslink command, e.g. [\"bench\", \"local\", \"--quick\", \"--json\", \"-q\"]");
    }
    let reps = reps_of(r, quick)?;
    Ok(super::bench::BenchRun {
        id: format!("{paper}/{name}"),
        args,
        reps,
        deterministic: r.deterministic,
        file: file.to_path_buf(),
    })
}

fn resolve_run(dir: &Path, paper: &str, name: &str, r: &RunSpec, quick: bool) -> Result<Run> {
    let scenario = r
        .scenario
        .as_deref()
        .context("needs scenario = FILE (or bench = [ARGS])")?;
    let scenario_path = dir.join(scenario);
    let scenario_text = std::fs::read_to_string(&scenario_path)
        .with_context(|| format!("reading scenario {}", scenario_path.display()))?;
    let mut sc = Scenario::parse(&scenario_text)
        .with_context(|| format!("scenario {}", scenario_path.display()))?;
    let sweep_replaced = r.sweep.as_ref().is_some_and(|w| *w != sc.sweep);
    if let Some(sweep) = &r.sweep {
        sc.sweep = sweep.clone();
    }
    let mut set: BTreeMap<String, toml::Value> = r.set.clone();
    if quick {
        set.extend(r.quick.set.clone());
    }
    let reps = reps_of(r, quick)?;
    let sets: Vec<(String, String)> = set.iter().map(|(k, v)| (k.clone(), toml_text(v))).collect();
    let mut sc = if sets.is_empty() {
        sc
    } else {
        sc.with_overrides(&sets)
            .with_context(|| format!("scenario {} with the run's set", scenario_path.display()))?
    };
    sc.sim.reps = reps;
    let keys: Vec<String> = sc.sweep.keys().cloned().collect();
    let points = sc
        .sweep_grid()
        .with_context(|| format!("scenario {}", scenario_path.display()))?;
    let point_scenarios = points
        .iter()
        .enumerate()
        .map(|(i, (_, p))| {
            sc.with_overrides(p)
                .and_then(|s| s.validate().map(|_| s))
                .with_context(|| format!("scenario {}, sweep point {i}", scenario_path.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut axes = BTreeMap::new();
    for (alias, a) in &r.axis {
        let Some(pos) = keys.iter().position(|k| *k == a.key) else {
            bail!(
                "axis {alias}: {} is not a sweep key (the sweep has: {})",
                a.key,
                keys.join(", ")
            );
        };
        let n = sc.sweep[&a.key].as_array().map_or(0, Vec::len);
        if a.values.len() != n {
            bail!(
                "axis {alias}: {} values given, the sweep of {} has {n}",
                a.values.len(),
                a.key
            );
        }
        axes.insert(alias.clone(), (pos, a.clone()));
    }
    if axes.len() != keys.len() {
        let named: Vec<&str> = axes.values().map(|(_, a)| a.key.as_str()).collect();
        let missing: Vec<&str> = keys
            .iter()
            .map(String::as_str)
            .filter(|k| !named.contains(k))
            .collect();
        bail!(
            "every sweep key needs an [axis] (missing: {})",
            missing.join(", ")
        );
    }
    let figures: Vec<FigureSpec> = r.figure.iter().chain(&r.figures).cloned().collect();
    for f in &figures {
        if let Some(flow) = &f.flow {
            let cell_flows = sc.cell.iter().flat_map(|c| c.flows.iter().map(|f| &f.name));
            if !sc
                .flows
                .iter()
                .map(|f| &f.name)
                .chain(cell_flows)
                .any(|n| n == flow)
            {
                bail!("figure {:?}: no flow {flow:?} in the scenario", f.title);
            }
        }
    }
    let run = Run {
        id: format!("{paper}/{name}"),
        scenario_file: scenario.to_string(),
        scenario_path,
        scenario_text,
        scenario: sc,
        sets,
        sweep_replaced,
        reps,
        deterministic: r.deterministic,
        keys,
        points,
        point_scenarios,
        axes,
        flow: r.flow.clone(),
        figures,
    };
    for f in &run.figures {
        f.check(&run.axes, run.reps, |sel| run.select(sel))
            .with_context(|| format!("figure {:?}", f.title))?;
    }
    Ok(run)
}

/// Whether reader-facing value `v` is the one written in a selector, `w`.
fn same_value(v: &toml::Value, w: &toml::Value) -> bool {
    match (
        v.as_float().or(v.as_integer().map(|i| i as f64)),
        w.as_float().or(w.as_integer().map(|i| i as f64)),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => v == w,
    }
}

fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Run {
    /// The point whose axis values are `sel` (every axis named), and its label.
    pub fn select(&self, sel: &BTreeMap<String, toml::Value>) -> Result<(usize, String)> {
        let mut want: Vec<Option<usize>> = vec![None; self.keys.len()];
        let mut label = Vec::new();
        for (alias, v) in sel {
            let Some((pos, a)) = self.axes.get(alias) else {
                bail!(
                    "{alias} is not an axis of run {} (its axes: {})",
                    self.id,
                    self.axes.keys().cloned().collect::<Vec<_>>().join(", ")
                );
            };
            let Some(i) = a.values.iter().position(|x| same_value(x, v)) else {
                bail!(
                    "{alias} = {} is not one of its values ({})",
                    show(v),
                    a.values.iter().map(show).collect::<Vec<_>>().join(", ")
                );
            };
            want[*pos] = Some(i);
            label.push(format!("{alias} {}", show(v)));
        }
        if let Some(pos) = want.iter().position(Option::is_none) {
            let alias = self
                .axes
                .iter()
                .find(|(_, (p, _))| *p == pos)
                .map(|(a, _)| a.clone())
                .unwrap_or_default();
            bail!("the cell does not say which {alias} of run {}", self.id);
        }
        let want: Vec<usize> = want.into_iter().map(|w| w.unwrap_or(0)).collect();
        let point = self
            .points
            .iter()
            .position(|(idx, _)| *idx == want)
            .context("no such point")?;
        Ok((point, label.join(", ")))
    }

    /// The reader-facing values of axis `alias`.
    pub fn axis_values(&self, alias: &str) -> Option<&[toml::Value]> {
        self.axes.get(alias).map(|(_, a)| a.values.as_slice())
    }
}
