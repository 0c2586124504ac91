//! Benchmark runs of the claims ledger: `[run.NAME] bench = [ARGS]` runs the mslink executable
//! the caller names (the CLI gives its own, or `MSLINK_EXE`) with ARGS, `reps` times, and reads
//! the JSON document it prints; a claim's cell picks one row of a named array of that document
//! by field values and reads one numeric field of it.
//!
//! Contract. A benchmark that times something measures this machine, so its numbers are neither
//! deterministic nor portable: [`super::run`] executes such runs only with `--bench`, one
//! repetition after the other and before any simulation (never beside one another or beside
//! simulations, which would disturb them), and without `--bench` their claims are reported as
//! not checkable with [`NOT_RUN`]. A run marked `deterministic` prints counts, not times (e.g.
//! `stack-bench --count`): it runs in every mode, twice, and its two outputs must agree. A command that fails is an error that carries its stderr; a selection that
//! matches no row or several, or a field that is missing or not a number, is an error naming
//! the ledger file, the claim and the rows that were there ([`check`]). Every repetition gives
//! one sample per cell, judged with the same Student-t machinery as simulation repetitions.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

/// Why a benchmark claim is not judged without `--bench`.
pub const NOT_RUN: &str = "not run: pass --bench (a measurement of this machine)";

/// A `[run.NAME]` with `bench = [...]`.
#[derive(Debug, Clone)]
pub struct BenchRun {
    /// `PAPER/NAME`.
    pub id: String,
    /// Arguments to the mslink binary, e.g. `["bench", "local", "--quick", "--json", "-q"]`.
    pub args: Vec<String>,
    /// Times the command is run (each run gives one sample per cell).
    pub reps: u32,
    /// It prints counts, not times: made in every mode, judged exactly.
    pub deterministic: bool,
    /// The ledger file that declares it (for errors).
    pub file: PathBuf,
}

impl BenchRun {
    /// The command as a reader types it: `mslink bench local --quick --json -q`.
    pub fn command(&self) -> String {
        let mut c = String::from("mslink");
        for a in &self.args {
            c.push(' ');
            if a.is_empty() || a.contains(|ch: char| ch.is_whitespace() || ch == '\'') {
                c.push_str(&format!("'{}'", a.replace('\'', "'\\''")));
            } else {
                c.push_str(a);
            }
        }
        c
    }

    /// Runs the command once with executable `exe` (and `extra` arguments after the ledger's)
    /// and parses what it prints.
    pub fn run_once(&self, exe: &std::path::Path, extra: &[String]) -> Result<serde_json::Value> {
        let out = std::process::Command::new(exe)
            .args(&self.args)
            .args(extra)
            .stdin(std::process::Stdio::null())
            .output()
            .with_context(|| format!("starting `{}` ({})", self.command(), exe.display()))?;
        if !out.status.success() {
            bail!(
                "`{}` failed ({}): {}",
                self.command(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        serde_json::from_slice(&out.stdout).with_context(|| {
            format!(
                "`{}` did not print one JSON document (pass --json); stderr: {}",
                self.command(),
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
    }
}

/// Which row of a bench's JSON a cell reads: the array `rows`, and the field values that pick
/// exactly one of its rows.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Rows {
    /// Name of a top-level array of the document, e.g. `pingpong`.
    pub rows: String,
    /// Field -> value, e.g. `backend = "shm"`, `size = 64`.
    pub fields: BTreeMap<String, toml::Value>,
}

impl Rows {
    /// How a reader names the row: "shm, poll, size 64".
    pub fn label(&self) -> String {
        // Names first ("shm, poll"), then the numbers and flags with their field ("size 64").
        let (names, rest): (Vec<_>, Vec<_>) = self.fields.iter().partition(|(_, v)| v.is_str());
        let parts: Vec<String> = names
            .into_iter()
            .chain(rest)
            .map(|(k, v)| match v {
                toml::Value::String(s) => s.clone(),
                other => format!("{k} {other}"),
            })
            .collect();
        format!("{} [{}]", self.rows, parts.join(", "))
    }
}

/// Whether JSON value `j` is the TOML value `t` (numbers by value).
fn matches(j: &serde_json::Value, t: &toml::Value) -> bool {
    match t {
        toml::Value::String(s) => j.as_str() == Some(s.as_str()),
        toml::Value::Integer(i) => j.as_f64() == Some(*i as f64),
        toml::Value::Float(f) => j.as_f64() == Some(*f),
        toml::Value::Boolean(b) => j.as_bool() == Some(*b),
        _ => false,
    }
}

/// Field `metric` of the one row of `doc` that `sel` picks, or what is wrong.
pub fn check(doc: &serde_json::Value, sel: &Rows, metric: &str) -> Result<f64> {
    let Some(all) = doc.get(&sel.rows).and_then(|v| v.as_array()) else {
        let arrays: Vec<&str> = doc
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(_, v)| v.is_array())
                    .map(|(k, _)| k.as_str())
                    .collect()
            })
            .unwrap_or_default();
        bail!(
            "rows = {:?}: the output has no such array (its arrays: {})",
            sel.rows,
            arrays.join(", ")
        );
    };
    let hits: Vec<&serde_json::Value> = all
        .iter()
        .filter(|r| {
            sel.fields
                .iter()
                .all(|(k, v)| r.get(k).is_some_and(|x| matches(x, v)))
        })
        .collect();
    let want = sel
        .fields
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let row = match hits.as_slice() {
        [one] => *one,
        [] => {
            let keys: Vec<String> = all
                .first()
                .and_then(|r| r.as_object())
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            bail!(
                "no row of {} has {want} ({} rows; their fields: {})",
                sel.rows,
                all.len(),
                keys.join(", ")
            )
        }
        many => bail!(
            "{} rows of {} have {want}: name more fields to pick one",
            many.len(),
            sel.rows
        ),
    };
    let Some(x) = row.get(metric) else {
        let keys: Vec<String> = row
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        bail!(
            "metric {metric:?}: the row of {} with {want} has no such field (fields: {})",
            sel.rows,
            keys.join(", ")
        );
    };
    x.as_f64()
        .with_context(|| format!("metric {metric:?} of that row is {x}, not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> serde_json::Value {
        serde_json::json!({
            "pingpong": [
                {"backend": "shm", "mode": "poll", "size": 64, "p50_us": 0.9},
                {"backend": "tcp", "mode": "poll", "size": 64, "p50_us": 6.0},
                {"backend": "tcp", "mode": "block", "size": 64, "p50_us": 70.0}
            ],
            "ratio": 3.0
        })
    }

    fn sel(fields: &[(&str, toml::Value)]) -> Rows {
        Rows {
            rows: "pingpong".into(),
            fields: fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
    }

    #[test]
    fn a_cell_reads_the_one_row_its_fields_pick() {
        let s = sel(&[
            ("backend", "tcp".into()),
            ("mode", "poll".into()),
            ("size", 64.into()),
        ]);
        assert_eq!(check(&doc(), &s, "p50_us").unwrap(), 6.0);
        assert_eq!(s.label(), "pingpong [tcp, poll, size 64]");
    }

    #[test]
    fn bad_selections_say_what_is_there() {
        let many = check(&doc(), &sel(&[("backend", "tcp".into())]), "p50_us").unwrap_err();
        assert!(many.to_string().contains("2 rows"), "{many}");
        let none = check(&doc(), &sel(&[("backend", "udp".into())]), "p50_us").unwrap_err();
        assert!(
            none.to_string().contains("backend, mode, p50_us, size"),
            "{none}"
        );
        let s = sel(&[("backend", "shm".into())]);
        let field = check(&doc(), &s, "p99_us").unwrap_err();
        assert!(field.to_string().contains("fields: backend"), "{field}");
        let rows = check(
            &doc(),
            &Rows {
                rows: "rtt".into(),
                ..s
            },
            "p50_us",
        )
        .unwrap_err();
        assert!(rows.to_string().contains("its arrays: pingpong"), "{rows}");
    }

    #[test]
    fn the_command_reads_as_typed() {
        let b = BenchRun {
            id: "000/vi".into(),
            args: vec!["bench".into(), "local".into(), "--quick".into()],
            reps: 2,
            deterministic: false,
            file: PathBuf::new(),
        };
        assert_eq!(b.command(), "mslink bench local --quick");
    }
}
