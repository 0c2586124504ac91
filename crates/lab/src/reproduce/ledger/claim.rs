//! A `[[claim]]` entry of a ledger file, resolved: its quote, its one expectation over cells
//! of the runs declared before it (once per value of an `each` axis), the band that
//! expectation is held to ([`crate::reproduce::band`]), and its known difference with the counterfactual
//! that removes the cause.
//!
//! Contract. As [`super::load`] states: anything that cannot be judged is refused with what is
//! wrong (the caller adds the file and the claim id): a claim without its quote, without
//! exactly one expectation, a cell that names no run, flow or metric, or selects no point or
//! several, a `differs` without its cause, or with a cause we could remove but no
//! counterfactual, and a counterfactual edit that changes none of the runs the claim reads.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};

use super::{show, Cause, Cell, Claim, Counterfactual, Differs, Expect, Ledger, Run};
use crate::reproduce::band::{self, Band};
use crate::reproduce::edit::Edits;
use crate::reproduce::spec::ClaimSpec;
use crate::reproduce::{bench, judge};

/// The run, flow, metric and rows a claim names for all its cells.
struct Defaults<'a> {
    run: Option<&'a str>,
    flow: Option<&'a str>,
    metric: Option<&'a str>,
    rows: Option<&'a str>,
}

/// Cell `t` of a claim of `paper`: what it leaves unnamed comes from the claim's defaults `d`,
/// and `extra` (the claim's `each` value) joins its axis selection.
fn cell(
    paper: &str,
    t: &toml::Table,
    d: &Defaults,
    extra: &BTreeMap<String, toml::Value>,
    ledger: &Ledger,
) -> Result<Cell> {
    let mut sel: BTreeMap<String, toml::Value> = extra.clone();
    let mut run = d.run.map(str::to_string);
    let mut flow = d.flow.map(str::to_string);
    let mut metric = d.metric.map(str::to_string);
    let mut rows = d.rows.map(str::to_string);
    for (k, v) in t {
        let text = || {
            v.as_str()
                .map(str::to_string)
                .with_context(|| format!("{k} must be a string"))
        };
        match k.as_str() {
            "run" => run = Some(text()?),
            "flow" => flow = Some(text()?),
            "metric" => metric = Some(text()?),
            "rows" => rows = Some(text()?),
            _ => {
                sel.insert(k.clone(), v.clone());
            }
        }
    }
    let run = run.context("no run named (on the claim or the cell)")?;
    let id = if run.contains('/') {
        run
    } else {
        format!("{paper}/{run}")
    };
    if ledger.benches.contains_key(&id) {
        // A benchmark's rows are known once it has run: bench::check reads them.
        let rows = rows.with_context(|| {
            format!("run {id} is a bench: name rows = \"ARRAY\" (on the claim or the cell)")
        })?;
        let metric = metric.context("no metric named (on the claim or the cell)")?;
        if sel.is_empty() {
            bail!("a cell of bench run {id} names the field values that pick its row");
        }
        let b = bench::Rows { rows, fields: sel };
        return Ok(Cell {
            run: id,
            point: 0,
            flow: b.rows.clone(),
            metric,
            label: b.label(),
            bench: Some(b),
        });
    }
    if rows.is_some() {
        bail!("rows = ... is for bench runs; run {id} is a simulation");
    }
    let r = ledger.runs.get(&id).with_context(|| {
        format!("no run {id} (runs are declared before the claims that use them)")
    })?;
    let flow = flow
        .or_else(|| r.flow.clone())
        .with_context(|| format!("no flow named (on the claim, the cell or run {id})"))?;
    let cell_flows = r
        .scenario
        .cell
        .iter()
        .flat_map(|c| c.flows.iter().map(|f| &f.name));
    if !r
        .scenario
        .flows
        .iter()
        .map(|f| &f.name)
        .chain(cell_flows)
        .any(|n| *n == flow)
    {
        bail!("run {id} has no flow {flow:?}");
    }
    let metric = metric.context("no metric named (on the claim or the cell)")?;
    judge::check_metric(&metric)?;
    let (point, mut label) = r.select(&sel)?;
    if r.flow.as_deref() != Some(flow.as_str()) || label.is_empty() {
        label = if label.is_empty() {
            flow.clone()
        } else {
            format!("{label}, {flow}")
        };
    }
    Ok(Cell {
        run: id,
        point,
        flow,
        metric,
        label,
        bench: None,
    })
}

/// Claim `c` of `paper`, resolved against the runs of `ledger` declared before it.
pub(super) fn resolve_claim(paper: &str, c: &ClaimSpec, ledger: &Ledger) -> Result<Claim> {
    let mut claim = Claim {
        id: c.id.clone(),
        paper: paper.to_string(),
        place: c.place.clone(),
        says: c.says.clone(),
        quote: quote(c)?,
        run: c.run.as_ref().map(|r| {
            if r.contains('/') {
                r.clone()
            } else {
                format!("{paper}/{r}")
            }
        }),
        checks: Vec::new(),
        band: None,
        differs: None,
        not_checkable: c.not_checkable.clone(),
    };
    let kinds = [
        c.above.is_some(),
        c.below.is_some(),
        c.ratio.is_some(),
        c.difference.is_some(),
        c.value.is_some(),
        c.monotone.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if c.not_checkable.is_some() {
        if kinds != 0 || c.run.is_some() || c.differs.is_some() {
            bail!("a not_checkable claim has no run, no expectation and no differs");
        }
        return Ok(claim);
    }
    if kinds != 1 {
        bail!(
            "needs exactly one of above, below, ratio, difference, value, monotone (has {kinds})"
        );
    }
    let b = band::derive(c, band_kind(c))?;
    claim.differs = resolve_differs(c)?;
    let d = Defaults {
        run: c.run.as_deref(),
        flow: c.flow.as_deref(),
        metric: c.metric.as_deref(),
        rows: c.rows.as_deref(),
    };
    let run_id = claim.run.clone().context("no run")?;
    if ledger.benches.contains_key(&run_id) {
        if c.each.is_some() || c.monotone.is_some() {
            bail!("each and monotone need a run's axes; run {run_id} is a bench");
        }
    } else if !ledger.runs.contains_key(&run_id) {
        bail!("no run {run_id}");
    }
    let run = ledger.runs.get(&run_id);
    for extra in each_selection(c, run, &run_id)? {
        let name = extra
            .iter()
            .map(|(k, v)| format!("{k} {}", show(v)))
            .collect::<Vec<_>>()
            .join(", ");
        let cl = |t: &toml::Table| cell(paper, t, &d, &extra, ledger);
        let e = expectation(c, &b, run, &run_id, &cl)?;
        claim.checks.push((name, e));
    }
    claim.band = Some(b);
    check_counterfactual(&claim, ledger)?;
    Ok(claim)
}

/// The paper's own words of `c`, trimmed; a claim without them is refused.
fn quote(c: &ClaimSpec) -> Result<String> {
    Ok(c.quote
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .context(
            "needs quote = \"...\": the paper's own words, the sentence this claim checks \
             (`says` is our summary of it)",
        )?
        .to_string())
}

/// The kind of band `c`'s one expectation is held to.
fn band_kind(c: &ClaimSpec) -> band::Kind {
    if c.above.is_some() {
        band::Kind::Above
    } else if c.below.is_some() {
        band::Kind::Below
    } else if c.monotone.is_some() {
        band::Kind::Trend
    } else {
        band::Kind::Range
    }
}

/// The axis values `c` is checked at, one selection per check: each value of its `each` axis
/// (or `each_values`), or one empty selection without `each`.
fn each_selection(
    c: &ClaimSpec,
    run: Option<&Run>,
    run_id: &str,
) -> Result<Vec<BTreeMap<String, toml::Value>>> {
    let each: Vec<BTreeMap<String, toml::Value>> = match &c.each {
        None => vec![BTreeMap::new()],
        Some(alias) => {
            let all = run
                .and_then(|r| r.axis_values(alias))
                .with_context(|| format!("each: {alias} is not an axis of run {run_id}"))?;
            let values = c.each_values.clone().unwrap_or_else(|| all.to_vec());
            values
                .into_iter()
                .map(|v| BTreeMap::from([(alias.clone(), v)]))
                .collect()
        }
    };
    if c.each_values.is_some() && c.each.is_none() {
        bail!("each_values needs each = AXIS");
    }
    Ok(each)
}

/// The one expectation of `c` over the cells `cl` resolves, held to band `held_to`.
fn expectation(
    c: &ClaimSpec,
    held_to: &Band,
    run: Option<&Run>,
    run_id: &str,
    cl: &dyn Fn(&toml::Table) -> Result<Cell>,
) -> Result<Expect> {
    let range = held_to.range.unwrap_or([f64::NEG_INFINITY, f64::INFINITY]);
    let factor = held_to.factor.unwrap_or(1.0);
    Ok(if let Some([a, b]) = &c.above {
        Expect::Above(cl(a)?, cl(b)?, factor)
    } else if let Some([a, b]) = &c.below {
        Expect::Below(cl(a)?, cl(b)?, factor)
    } else if let Some([a, b]) = &c.ratio {
        Expect::Ratio(cl(a)?, cl(b)?, range)
    } else if let Some([a, b]) = &c.difference {
        Expect::Difference(cl(a)?, cl(b)?, range)
    } else if let Some(a) = &c.value {
        Expect::Value(cl(a)?, range)
    } else {
        monotone(c, run, run_id, cl)?
    })
}

/// A `monotone` expectation: the cells at each value of its `along` axis (the rest of the
/// point fixed by `at`), in the axis's order, each above or below the next.
fn monotone(
    c: &ClaimSpec,
    run: Option<&Run>,
    run_id: &str,
    cl: &dyn Fn(&toml::Table) -> Result<Cell>,
) -> Result<Expect> {
    let dir = c.monotone.as_deref().unwrap_or_default();
    let decreasing = match dir {
        "decreasing" => true,
        "increasing" => false,
        other => bail!("monotone = {other:?}: expected \"decreasing\" or \"increasing\""),
    };
    let along = c.along.as_deref().context("monotone needs along = AXIS")?;
    let values = run
        .and_then(|r| r.axis_values(along))
        .with_context(|| format!("along: {along} is not an axis of run {run_id}"))?;
    let at = c.at.clone().unwrap_or_default();
    let cells = values
        .iter()
        .map(|v| {
            let mut t = at.clone();
            t.insert(along.to_string(), v.clone());
            cl(&t)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Expect::Monotone(cells, decreasing))
}

/// Every edit of a claim's counterfactual must change some scenario the claim reads (a run it
/// does not match is read as it is); a counterfactual re-makes simulation runs only.
fn check_counterfactual(claim: &Claim, ledger: &Ledger) -> Result<()> {
    let Some(cf) = claim
        .differs
        .as_ref()
        .and_then(|d| d.counterfactual.as_ref())
    else {
        return Ok(());
    };
    let mut matched = vec![0; cf.edits.edits.len()];
    for id in claim.runs() {
        if ledger.benches.contains_key(&id) {
            bail!("counterfactual: run {id} is a bench; a counterfactual re-makes simulation runs");
        }
        let r = &ledger.runs[&id];
        for (i, sc) in r.point_scenarios.iter().enumerate() {
            let (_, hits) = cf
                .edits
                .apply(sc)
                .with_context(|| format!("counterfactual on run {id}, sweep point {i}"))?;
            for (m, h) in matched.iter_mut().zip(hits) {
                *m += h;
            }
        }
    }
    if let Some(k) = matched.iter().position(|&m| m == 0) {
        bail!(
            "counterfactual edit {k} ({}) matches no table of the runs the claim reads ({}): \
             it would change nothing",
            cf.edits.edits[k].describe(),
            claim.runs().into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// The known difference of `c`, checked: a cause, and a counterfactual where the cause is ours.
fn resolve_differs(c: &ClaimSpec) -> Result<Option<Differs>> {
    let Some(reason) = &c.differs else {
        if c.cause.is_some() || c.counterfactual.is_some() {
            bail!("cause and counterfactual belong to a differs = \"...\" entry");
        }
        return Ok(None);
    };
    if reason.trim().is_empty() {
        bail!("differs is empty: say why we differ");
    }
    let cause = Cause::parse(c.cause.as_deref().context(
        "differs needs cause = \"parameter\" | \"mechanism\" | \"missing\" | \"open\"",
    )?)?;
    let counterfactual = match (&c.counterfactual, cause) {
        (Some(cf), Cause::Parameter | Cause::Mechanism) => {
            if cf.what.trim().is_empty() {
                bail!("counterfactual.what is empty: say what it changes");
            }
            let set: Vec<(String, toml::Value)> =
                cf.set.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let edits = Edits::from_specs(&set, &cf.edit).context("counterfactual")?;
            if edits.is_empty() {
                bail!("counterfactual changes nothing: give set = {{ .. }} or edit = [ .. ]");
            }
            Some(Counterfactual {
                what: cf.what.clone(),
                edits,
            })
        }
        (None, Cause::Parameter | Cause::Mechanism) => bail!(
            "cause = {:?} is {}: it needs counterfactual = {{ what = \"...\", set = {{ .. }} or \
             edit = [ .. ] }}, the same runs with that cause removed or set as the paper had it",
            c.cause.as_deref().unwrap_or_default(),
            cause.word()
        ),
        (Some(_), _) => bail!(
            "a counterfactual needs a cause we can remove (parameter or mechanism), not {}",
            cause.word()
        ),
        (None, _) => None,
    };
    Ok(Some(Differs {
        reason: reason.clone(),
        cause,
        counterfactual,
    }))
}
