//! `mslink._core`: the Rust side of the Python package.
//!
//! Contract. Everything that decides what a scenario means lives in the Rust crates and is
//! reached from here, never re-implemented in Python: TOML is parsed and written by the `toml`
//! crate ([`parse_toml`], [`dump_toml`]); a document is checked by deserializing it into
//! `mslink_sim::Scenario` and calling its `validate` ([`check`], [`validate`]), and a failure
//! is raised as `ScenarioError` whose `field` attribute is the dotted path of the bad key;
//! sweep grids are expanded by `Scenario::sweep_points` ([`plan`]); runs are
//! `mslink_sim::run` ([`run_jobs`], GIL released), with trace files read by `mslink-lab`, and
//! reused from and kept in `mslink sim`'s result store when given one. The
//! `mslink` command is not here: the package's `mslink` script runs the `mslink` executable
//! (python/mslink/_cli.py). Results cross into Python as the JSON of
//! `RunResult` (the very serialization `summary.json` holds), so the Python tables equal the
//! CLI's files.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod convert;
mod tables;

use std::collections::BTreeMap;
use std::path::PathBuf;

use mslink_lab::campaign::{Store, Traces};
use mslink_sim::{Scenario, ScenarioError as SimError};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "A scenario that does not parse, does not fit the schema or cannot run; `field` is the dotted path of the offending key (empty when the error is not about one key)."
);

/// Raises `ScenarioError(message)` with its `field` attribute set.
fn scenario_error(py: Python<'_>, field: &str, message: String) -> PyErr {
    let e = ScenarioError::new_err(message);
    // Setting an attribute on a fresh exception object cannot fail in practice; if it did,
    // the error still carries its message.
    let _ = e.value(py).setattr("field", field);
    e
}

/// Maps the simulator's error to `ScenarioError`, naming the key when it knows it.
fn sim_error(py: Python<'_>, e: SimError, context: &str) -> PyErr {
    match e {
        SimError::Invalid { key, what } => {
            scenario_error(py, &key, format!("{context}key `{key}`: {what}"))
        }
        SimError::Syntax(s) => scenario_error(py, "", format!("{context}{s}")),
    }
}

/// Deserializes a TOML document into a [`Scenario`], tracking the path of a bad key.
fn typed(py: Python<'_>, doc: toml::Value) -> PyResult<Scenario> {
    serde_path_to_error::deserialize::<_, Scenario>(doc).map_err(|e| {
        let mut field = e.path().to_string();
        if field == "." {
            field.clear();
        }
        // The toml crate appends its own, coarser "in `segment.error`" context: drop it.
        let inner = e.into_inner().to_string();
        let inner = inner
            .lines()
            .filter(|l| !l.starts_with("in `"))
            .collect::<Vec<_>>()
            .join(" ")
            .trim()
            .to_string();
        // An unknown key may fail before the path steps into it: name it too.
        if let Some(rest) = inner.strip_prefix("unknown field `") {
            if let Some(name) = rest.split('`').next() {
                if field.is_empty() {
                    field = name.to_string();
                } else if !field.ends_with(&format!(".{name}")) && field != name {
                    field = format!("{field}.{name}");
                }
            }
        }
        let at = if field.is_empty() {
            String::new()
        } else {
            format!("key `{field}`: ")
        };
        scenario_error(py, &field, format!("{at}{inner}"))
    })
}

/// Parses TOML text into Python values (tables become dicts). Syntax errors name the line.
#[pyfunction]
fn parse_toml(py: Python<'_>, text: &str) -> PyResult<Py<PyAny>> {
    let v: toml::Table =
        toml::from_str(text).map_err(|e| scenario_error(py, "", e.to_string().trim().into()))?;
    convert::to_py(py, &toml::Value::Table(v))
}

/// Writes a Python document (dict of TOML values) as TOML text.
#[pyfunction]
fn dump_toml(py: Python<'_>, doc: &Bound<'_, PyAny>) -> PyResult<String> {
    let v = convert::from_py(doc, "")?;
    let toml::Value::Table(t) = v else {
        return Err(scenario_error(py, "", "a scenario is a table".into()));
    };
    // Tables come out sorted by key; write the top-level sections in the order people write
    // them (docs/simulator.md): [sim], [cell], [[segment]], [[flow]], [sweep].
    let rank = |k: &str| {
        ["sim", "cell", "segment", "flow", "sweep"]
            .iter()
            .position(|x| *x == k)
            .unwrap_or(5)
    };
    let mut out = String::new();
    let mut order: Vec<&String> = t.keys().collect();
    order.sort_by_key(|k| rank(k));
    let (plain, sections): (Vec<&String>, Vec<&String>) =
        order.into_iter().partition(|k| match t.get(*k) {
            Some(toml::Value::Table(_)) => false,
            Some(toml::Value::Array(a)) => a.is_empty() || !a.iter().all(|x| x.is_table()),
            _ => true,
        });
    for group in [plain, sections] {
        let mut one = toml::Table::new();
        for k in group {
            one.clear();
            one.insert(k.clone(), t[k.as_str()].clone());
            let text = toml::to_string(&one).map_err(|e| scenario_error(py, k, e.to_string()))?;
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push('\n');
            }
            out.push_str(&text);
        }
    }
    Ok(out)
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom: the factor of a two-sided
/// 95% confidence interval (`mslink_sim::stats::t975`, the one `mslink reproduce` uses).
#[pyfunction]
fn t975(df: f64) -> f64 {
    mslink_sim::stats::t975(df)
}

/// Mean, sample standard deviation and Student-t 95% interval of `xs`
/// (`mslink_sim::stats::estimate`): `(n, mean, sd, low, high)`, with NaN bounds when fewer
/// than two observations give no interval.
#[pyfunction]
fn estimate(xs: Vec<f64>) -> (usize, f64, f64, f64, f64) {
    let e = mslink_sim::stats::estimate(&xs);
    let (lo, hi) = if e.half.is_finite() {
        (e.lo(), e.hi())
    } else {
        (f64::NAN, f64::NAN)
    };
    (e.n, e.mean, e.sd, lo, hi)
}

/// The flow metrics `Result.stats()` summarises, in order (`mslink_sim::world::SUMMARISED`,
/// the list `mslink sim`'s stats.csv uses).
#[pyfunction]
fn summarised_metrics() -> Vec<&'static str> {
    mslink_sim::world::SUMMARISED
        .iter()
        .map(|(n, _)| *n)
        .collect()
}

/// The axis title and divisor of per-flow column `column` (`mslink_plot::axes::metric_axis`,
/// the CLI's own), for a chart of TCP and/or datagram flows whose largest value is `max`;
/// `None` for a column that is not a metric.
#[pyfunction]
fn metric_axis(column: &str, tcp: bool, datagram: bool, max: f64) -> Option<(String, f64)> {
    let flows = mslink_plot::axes::Flows { tcp, datagram };
    mslink_plot::axes::metric_axis(column, flows, max).map(|a| (a.title, a.divisor))
}

/// The axis title of sweep key `key` with its unit (`mslink_plot::axes::key_title`).
#[pyfunction]
fn key_title(key: &str) -> String {
    mslink_plot::axes::key_title(key)
}

/// The readable name of a sweep value given as TOML text (`mslink_sim::labels`: "SR (OOS RLP)"
/// for a list of services), as flows.csv shows it.
#[pyfunction]
fn sweep_label(text: &str) -> String {
    mslink_sim::labels::label(text).text()
}

/// Writes one Python value in TOML's inline syntax (what `--set` and `[sweep]` take).
#[pyfunction]
fn value_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(convert::from_py(v, "")?.to_string())
}

/// Checks a document against the scenario schema (types, unknown keys); no range checks.
#[pyfunction]
fn check(py: Python<'_>, doc: &Bound<'_, PyAny>) -> PyResult<()> {
    typed(py, convert::from_py(doc, "")?).map(|_| ())
}

/// The document with every default filled in, as the simulator reads it.
#[pyfunction]
fn normalize(py: Python<'_>, doc: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let sc = typed(py, convert::from_py(doc, "")?)?;
    let v = toml::Value::try_from(&sc).map_err(|e| scenario_error(py, "", e.to_string()))?;
    convert::to_py(py, &v)
}

/// Applies `--set`-style overrides (dotted path, TOML value text), returning the normalized
/// document, exactly as `mslink sim --set` does.
#[pyfunction]
fn with_overrides(
    py: Python<'_>,
    doc: &Bound<'_, PyAny>,
    sets: Vec<(String, String)>,
) -> PyResult<Py<PyAny>> {
    let sc = typed(py, convert::from_py(doc, "")?)?;
    let sc = sc.with_overrides(&sets).map_err(|e| sim_error(py, e, ""))?;
    let v = toml::Value::try_from(&sc).map_err(|e| scenario_error(py, "", e.to_string()))?;
    convert::to_py(py, &v)
}

/// Sets a dotted path (`"flow.0.rate_bps"` or `"flow[0].rate_bps"`) of a document to a
/// value, with the rules of `mslink sim --set` (`mslink_sim::overrides`): missing tables are
/// created, array elements must exist. Returns the new document.
#[pyfunction]
fn set_path(
    py: Python<'_>,
    doc: &Bound<'_, PyAny>,
    path: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let mut d = convert::from_py(doc, "")?;
    let v = convert::from_py(value, path)?;
    mslink_sim::overrides::set_path(&mut d, path, v)
        .map_err(|e| scenario_error(py, &e.key, e.to_string()))?;
    convert::to_py(py, &d)
}

/// The parts of a dotted path, `name[i]` read as `name.i` (`mslink_sim::overrides::parts`).
#[pyfunction]
fn key_parts(py: Python<'_>, path: &str) -> PyResult<Vec<String>> {
    mslink_sim::overrides::parts(path).map_err(|e| scenario_error(py, &e.key, e.to_string()))
}

/// Draws a chart given as JSON (the shape of `mslink_plot::chart::Chart`) with the CLI's
/// plotting engine: to `path` as PNG or SVG by its extension (returns `None`), or, without a
/// path, returns the SVG text.
#[pyfunction]
#[pyo3(signature = (chart_json, path=None))]
fn render_chart(
    py: Python<'_>,
    chart_json: &str,
    path: Option<PathBuf>,
) -> PyResult<Option<String>> {
    let chart: mslink_plot::chart::Chart = serde_json::from_str(chart_json)
        .map_err(|e| PyValueError::new_err(format!("chart: {e}")))?;
    let err = |e: mslink_plot::PlotError| PyValueError::new_err(e.to_string());
    py.detach(|| match path {
        None => mslink_plot::chart::to_svg(&chart).map(Some).map_err(err),
        Some(p) => {
            let bytes = match p.extension().and_then(|x| x.to_str()) {
                Some("png") => mslink_plot::chart::to_png(&chart).map_err(err)?,
                Some("svg") => mslink_plot::chart::to_svg(&chart)
                    .map_err(err)?
                    .into_bytes(),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "{}: the file name must end in .png or .svg",
                        p.display()
                    )))
                }
            };
            std::fs::write(&p, bytes)
                .map_err(|e| PyValueError::new_err(format!("writing {}: {e}", p.display())))?;
            Ok(None)
        }
    })
}

/// Full validation: schema, the base scenario's values, and every sweep point's values.
#[pyfunction]
fn validate(py: Python<'_>, doc: &Bound<'_, PyAny>) -> PyResult<()> {
    plan_inner(py, doc, Vec::new()).map(|_| ())
}

/// A sweep expanded for execution.
type Plan = (
    String,                     // base scenario (overrides applied), TOML text
    String,                     // scenario name
    Vec<String>,                // sweep keys, in column order
    Vec<Vec<(String, String)>>, // per point: (key, value text)
    Vec<u32>,                   // repetitions per point
    Vec<String>,                // notes over all points, each once (what `mslink sim` prints)
);

fn plan_inner(
    py: Python<'_>,
    doc: &Bound<'_, PyAny>,
    sets: Vec<(String, String)>,
) -> PyResult<Plan> {
    let base = typed(py, convert::from_py(doc, "")?)?;
    let base = if sets.is_empty() {
        base
    } else {
        base.with_overrides(&sets)
            .map_err(|e| sim_error(py, e, ""))?
    };
    let points = base.sweep_points().map_err(|e| sim_error(py, e, ""))?;
    let keys = points[0].iter().map(|(k, _)| k.clone()).collect();
    let mut reps = Vec::with_capacity(points.len());
    let mut notes = std::collections::BTreeSet::new();
    for point in &points {
        let at = if point.is_empty() {
            String::new()
        } else {
            let d: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("at {}: ", d.join(", "))
        };
        let sc = base
            .with_overrides(point)
            .map_err(|e| sim_error(py, e, &at))?;
        sc.validate().map_err(|e| sim_error(py, e, &at))?;
        notes.extend(sc.notes());
        reps.push(sc.sim.reps);
    }
    let text = toml::to_string(&base).map_err(|e| scenario_error(py, "", e.to_string()))?;
    Ok((
        text,
        base.sim.name.clone(),
        keys,
        points,
        reps,
        notes.into_iter().collect(),
    ))
}

/// Expands a document for a run, as `mslink sim` does: `sets` first (e.g. `sim.reps`,
/// `sim.seed`), then the `[sweep]` grid; every point is validated. Returns (base TOML, name,
/// sweep keys, points, reps per point, notes).
#[pyfunction]
fn plan(py: Python<'_>, doc: &Bound<'_, PyAny>, sets: Vec<(String, String)>) -> PyResult<Plan> {
    plan_inner(py, doc, sets)
}

/// Runs jobs `(point overrides, rep)` of the base scenario `base_toml` (from [`plan`]) and
/// returns `(tables, runs, reused)`: the rows of every run as columns (see [`tables`]), each
/// run's `RunResult` as JSON (what `summary.json` holds), in job order, and how many runs came
/// from the result store. Trace files come from `files` (name to text) or else from
/// `base_dir`. With `store` (a folder, `mslink_lab::campaign::Store`, the one `mslink sim
/// --store` keeps), a run already in it is read back instead of made, and a run made is put
/// into it: the same key and the same bytes as the CLI's, so either reuses the other's runs.
/// The GIL is released while the simulator runs and the tables are built.
#[pyfunction]
#[pyo3(signature = (base_toml, jobs, base_dir, files, store=None))]
fn run_jobs(
    py: Python<'_>,
    base_toml: &str,
    jobs: Vec<(Vec<(String, String)>, u32)>,
    base_dir: PathBuf,
    files: BTreeMap<String, String>,
    store: Option<PathBuf>,
) -> PyResult<(Py<PyAny>, Vec<String>, usize)> {
    let base = Scenario::parse(base_toml).map_err(|e| sim_error(py, e, ""))?;
    let out = py.detach(|| {
        let mut load = |f: &str| match files.get(f) {
            Some(t) => Ok(t.clone()),
            None => mslink_lab::read_trace_file(&base_dir.join(f)),
        };
        let traces = mslink_lab::TraceFiles::new(base_dir.clone());
        let mut store = match &store {
            Some(d) => Some(Store::open(d).map_err(Failure::Store)?),
            None => None,
        };
        let mut tables = tables::Tables::default();
        let mut runs = Vec::with_capacity(jobs.len());
        let mut reused = 0;
        for (i, (point, rep)) in jobs.iter().enumerate() {
            let ctx = format!("run (rep {rep}): ");
            let sc = base
                .with_overrides(point)
                .map_err(|e| Failure::Sim(ctx.clone(), e))?;
            // With a store: the run's key, and the run if it is kept there.
            let (key, kept) = match store.as_mut() {
                Some(st) => {
                    let key = st
                        .key_of(&sc, *rep, Traces::Texts(&files, &traces))
                        .map_err(Failure::Store)?;
                    let kept = st.get_run(&key).map_err(Failure::Store)?;
                    (Some(key), kept)
                }
                None => (None, None),
            };
            let r = match kept {
                Some(r) => {
                    reused += 1;
                    r
                }
                None => {
                    let mut r = mslink_sim::run(&sc, *rep, &mut load)
                        .map_err(|e| Failure::Sim(ctx.clone(), e))?;
                    if let (Some(st), Some(key)) = (&store, &key) {
                        st.put_run(key, &mut r).map_err(Failure::Store)?;
                    }
                    r
                }
            };
            tables.push(i, &r);
            runs.push(serde_json::to_string(&r).expect("RunResult serializes to JSON"));
        }
        Ok::<_, Failure>((tables, runs, reused))
    });
    let (tables, runs, reused) = out.map_err(|f| match f {
        Failure::Sim(ctx, e) => sim_error(py, e, &ctx),
        // The store's errors name the file (reading, writing, a run that does not read back).
        Failure::Store(e) => PyOSError::new_err(format!("result store: {e:#}")),
    })?;
    Ok((tables.into_py(py)?, runs, reused))
}

/// Why [`run_jobs`] stopped: a run that cannot be made, or the result store.
enum Failure {
    Sim(String, SimError),
    Store(anyhow::Error),
}

/// The columns of the flows table after `rep` and `seed`, in order: the one declaration in
/// `mslink_sim::world::columns`, which flows.csv and flows.parquet follow too.
#[pyfunction]
fn flow_columns() -> Vec<&'static str> {
    mslink_sim::world::columns::table_columns()
        .map(|c| c.name)
        .collect()
}

/// The module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(parse_toml, m)?)?;
    m.add_function(wrap_pyfunction!(dump_toml, m)?)?;
    m.add_function(wrap_pyfunction!(value_text, m)?)?;
    m.add_function(wrap_pyfunction!(t975, m)?)?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(summarised_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_label, m)?)?;
    m.add_function(wrap_pyfunction!(metric_axis, m)?)?;
    m.add_function(wrap_pyfunction!(key_title, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(with_overrides, m)?)?;
    m.add_function(wrap_pyfunction!(set_path, m)?)?;
    m.add_function(wrap_pyfunction!(key_parts, m)?)?;
    m.add_function(wrap_pyfunction!(render_chart, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(run_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(flow_columns, m)?)?;
    Ok(())
}
