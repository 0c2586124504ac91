//! Scenario edits: what a counterfactual run or a mutant changes in the scenarios of a run.
//!
//! Contract. An edit is applied to a *resolved* point scenario (after the run's overrides and
//! its sweep point), through its complete serialized form, so values a scenario file leaves at
//! their defaults are edited too (a default SCFQ scheduler is a table `policy = "scfq"` there).
//! [`Edits::apply`] first sets the dotted `set` keys (as `mslink sim --set` does), then, for each
//! edit, visits every table of the scenario (the `sweep` grid excepted: the point is already
//! resolved) and, where a table holds every `tables_with` pair (`"*"` matches any value;
//! numbers compare by value), sets the edit's keys in it or replaces it whole. The result is
//! parsed and validated again, so an edit that makes a scenario invalid is an error naming the
//! scenario's key; it reports how many tables each edit matched, so a counterfactual that
//! changes nothing can be refused.

use anyhow::{bail, Context, Result};
use mslink_sim::{overrides, Scenario};

use super::spec::EditSpec;

/// What one edit does to a matching table.
#[derive(Clone, Debug, PartialEq)]
enum Action {
    /// Set these keys (dotted paths relative to the table).
    Set(Vec<(String, toml::Value)>),
    /// Replace the table.
    Replace(toml::Table),
}

/// One edit, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    tables_with: toml::Table,
    action: Action,
}

/// A list of dotted overrides and table edits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Edits {
    /// `key = value` overrides applied first (a sweep point's keys may be named).
    pub set: Vec<(String, toml::Value)>,
    /// Table edits, in order.
    pub edits: Vec<Edit>,
}

impl Edit {
    /// Checks an edit as written.
    pub fn from_spec(e: &EditSpec) -> Result<Edit> {
        if e.tables_with.is_empty() {
            bail!("tables_with = {{}} would match every table: name the key = value pairs of the tables to edit");
        }
        let action = match (&e.set, &e.replace) {
            (Some(set), None) if !set.is_empty() => {
                Action::Set(set.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            }
            (None, Some(r)) => Action::Replace(r.clone()),
            _ => bail!(
                "an edit has exactly one of set = {{ .. }} (not empty) and replace = {{ .. }}"
            ),
        };
        Ok(Edit {
            tables_with: e.tables_with.clone(),
            action,
        })
    }

    /// How the report names it: "tables with scheme = go_back_n: timeout_ms = 500".
    pub fn describe(&self) -> String {
        let with = self
            .tables_with
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        match &self.action {
            Action::Set(kv) => format!(
                "where {with}: {}",
                kv.iter()
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Action::Replace(t) => format!("{with} replaced by {}", toml::Value::Table(t.clone())),
        }
    }
}

fn same(a: &toml::Value, b: &toml::Value) -> bool {
    if b.as_str() == Some("*") {
        return true;
    }
    let num = |v: &toml::Value| v.as_float().or(v.as_integer().map(|i| i as f64));
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn matches(t: &toml::Table, with: &toml::Table) -> bool {
    with.iter()
        .all(|(k, want)| t.get(k).is_some_and(|v| same(v, want)))
}

/// Visits `v` (not its `skip` key at the top), editing matching tables; counts them.
fn walk(v: &mut toml::Value, e: &Edit, top: bool, hits: &mut usize) -> Result<()> {
    match v {
        toml::Value::Table(t) => {
            if matches(t, &e.tables_with) {
                *hits += 1;
                match &e.action {
                    Action::Replace(r) => {
                        *v = toml::Value::Table(r.clone());
                        return Ok(());
                    }
                    Action::Set(kv) => {
                        for (k, val) in kv {
                            overrides::set_path(v, k, val.clone())
                                .map_err(|err| anyhow::anyhow!("{err}"))?;
                        }
                    }
                }
            }
            if let toml::Value::Table(t) = v {
                for (k, child) in t.iter_mut() {
                    if top && k == "sweep" {
                        continue;
                    }
                    walk(child, e, false, hits)?;
                }
            }
        }
        toml::Value::Array(a) => {
            for child in a {
                walk(child, e, false, hits)?;
            }
        }
        _ => {}
    }
    Ok(())
}

impl Edits {
    /// Checks a list of edits as written, with the dotted overrides.
    pub fn from_specs(set: &[(String, toml::Value)], specs: &[EditSpec]) -> Result<Edits> {
        let edits = specs
            .iter()
            .enumerate()
            .map(|(i, e)| Edit::from_spec(e).with_context(|| format!("edit {i}")))
            .collect::<Result<Vec<_>>>()?;
        Ok(Edits {
            set: set.to_vec(),
            edits,
        })
    }

    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.edits.is_empty()
    }

    /// Every change in words, for the report.
    pub fn describe(&self) -> String {
        self.set
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .chain(self.edits.iter().map(Edit::describe))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// `sc` edited, validated, with the number of tables each edit matched.
    pub fn apply(&self, sc: &Scenario) -> Result<(Scenario, Vec<usize>)> {
        let mut v = toml::Value::try_from(sc).context("serializing the scenario")?;
        for (k, val) in &self.set {
            overrides::set_path(&mut v, k, val.clone()).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let mut hits = Vec::with_capacity(self.edits.len());
        for e in &self.edits {
            let mut n = 0;
            walk(&mut v, e, true, &mut n).with_context(|| e.describe())?;
            hits.push(n);
        }
        let out: Scenario = v
            .try_into()
            .map_err(|e: toml::de::Error| anyhow::anyhow!("the edited scenario: {e}"))?;
        out.validate()
            .map_err(|e| anyhow::anyhow!("the edited scenario: {e}"))?;
        Ok((out, hits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SC: &str = r#"
[sim]
duration_s = 10
[[segment]]
kind = "wireless"
preset = "wlan"
[segment.link]
seq_bits = 8
[segment.link.scheduler]
policy = "scfq"
rates = [4.0, 1.0]
[[segment.link.service]]
name = "tcp"
scheme = "karn_rlp"
max_retransmissions = 3
[[segment.link.service]]
name = "cbr"
scheme = "oos_rlp"
max_retransmissions = 1
[[segment.link.rule]]
service = "cbr"
protocol = "udp"
[[flow]]
name = "media"
app = "cbr"
from = 0
to = 1
rate_bps = 1000000
packet_bytes = 500
"#;

    fn edit(t: &str) -> EditSpec {
        toml::from_str(t).unwrap()
    }

    #[test]
    fn tables_holding_the_pairs_are_edited() {
        let sc = Scenario::parse(SC).unwrap();
        let e = Edits::from_specs(
            &[],
            &[edit(
                "tables_with = { scheme = \"oos_rlp\" }\nset = { max_retransmissions = 0 }",
            )],
        )
        .unwrap();
        let (out, hits) = e.apply(&sc).unwrap();
        assert_eq!(hits, vec![1]);
        let v = toml::Value::try_from(&out).unwrap();
        let svc = &v["segment"][0]["link"]["service"];
        assert_eq!(svc[1]["max_retransmissions"].as_integer(), Some(0));
        assert_eq!(svc[0]["max_retransmissions"].as_integer(), Some(3));
    }

    #[test]
    fn a_table_is_replaced_and_defaults_are_visible() {
        let sc = Scenario::parse(SC).unwrap();
        let e = Edits::from_specs(
            &[],
            &[edit(
                "tables_with = { policy = \"scfq\" }\nreplace = { policy = \"priority\" }",
            )],
        )
        .unwrap();
        let (out, hits) = e.apply(&sc).unwrap();
        assert_eq!(hits, vec![1]);
        assert_eq!(
            out.segments[0].link.as_ref().unwrap().scheduler.policy(),
            "priority"
        );
        // "*" matches any value, numbers by value.
        let e = Edits::from_specs(
            &[],
            &[edit("tables_with = { max_retransmissions = \"*\" }\nset = { max_retransmissions = 2.0 }")],
        );
        // 2.0 is not an integer count: the edited scenario is refused, naming it.
        let err = e.unwrap().apply(&sc).unwrap_err();
        assert!(format!("{err:#}").contains("edited scenario"), "{err:#}");
    }

    #[test]
    fn bad_edits_are_refused() {
        assert!(Edit::from_spec(&edit("tables_with = {}\nset = { a = 1 }")).is_err());
        assert!(Edit::from_spec(&edit("tables_with = { a = 1 }")).is_err());
        assert!(Edit::from_spec(&edit(
            "tables_with = { a = 1 }\nset = { a = 2 }\nreplace = { a = 3 }"
        ))
        .is_err());
    }
}
