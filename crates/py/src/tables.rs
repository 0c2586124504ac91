//! Run results as columns, the shape pandas builds DataFrames from fastest.
//!
//! Contract. [`Tables::push`] appends one run's rows to four tables -- `flows` (the columns of
//! the CLI's `flows.csv` after the sweep columns), `timeseries` (`timeseries.csv`), `links`
//! (one row per segment direction) and `services` (one row per service at each link end,
//! nested counters flattened as `service.<name>`), and `runs` (events executed and simulated
//! seconds of each run) -- each row tagged with `job`, the run's
//! index in the batch, from which Python adds the scenario, point and sweep columns.
//! [`Tables::into_py`] hands each table over as `{column: list}` plus a `{column: kind}`
//! schema (`"i"` int64, `"f"` float64, `"s"` str), so empty tables keep their types.

use mslink_sim::world::columns::{table_columns, Cell};
use mslink_sim::RunResult;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One column.
enum Col {
    I(Vec<i64>),
    F(Vec<f64>),
    S(Vec<String>),
}

/// A table: columns in order.
#[derive(Default)]
struct Table(Vec<(String, Col)>);

impl Table {
    fn col(&mut self, name: &str, make: fn() -> Col) -> &mut Col {
        let i = match self.0.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                self.0.push((name.to_string(), make()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }
    fn i(&mut self, name: &str, v: i64) {
        if let Col::I(c) = self.col(name, || Col::I(Vec::new())) {
            c.push(v)
        }
    }
    fn f(&mut self, name: &str, v: f64) {
        if let Col::F(c) = self.col(name, || Col::F(Vec::new())) {
            c.push(v)
        }
    }
    fn s(&mut self, name: &str, v: &str) {
        if let Col::S(c) = self.col(name, || Col::S(Vec::new())) {
            c.push(v.to_string())
        }
    }
    /// A JSON value (from a counters struct), objects flattened with `.`.
    fn json(&mut self, name: &str, v: &serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let key = if name.is_empty() {
                        k.clone()
                    } else {
                        format!("{name}.{k}")
                    };
                    self.json(&key, x);
                }
            }
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => self.i(name, i),
                None => self.f(name, n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => self.s(name, s),
            serde_json::Value::Bool(b) => self.i(name, *b as i64),
            // Arrays and nulls do not occur in link counters; keep a readable trace if they do.
            other => self.s(name, &other.to_string()),
        }
    }

    fn into_py(self, py: Python<'_>) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
        let cols = PyDict::new(py);
        let kinds = PyDict::new(py);
        for (name, c) in self.0 {
            match c {
                Col::I(v) => {
                    cols.set_item(&name, v)?;
                    kinds.set_item(&name, "i")?;
                }
                Col::F(v) => {
                    cols.set_item(&name, v)?;
                    kinds.set_item(&name, "f")?;
                }
                Col::S(v) => {
                    cols.set_item(&name, v)?;
                    kinds.set_item(&name, "s")?;
                }
            }
        }
        Ok((cols.into_any().unbind(), kinds.into_any().unbind()))
    }
}

/// The tables of a batch of runs.
#[derive(Default)]
pub struct Tables {
    flows: Table,
    timeseries: Table,
    links: Table,
    services: Table,
    runs: Table,
}

/// Direction names, left to right and right to left (as in the CLI's pcap file names).
const DIRECTIONS: [&str; 2] = ["ltr", "rtl"];
/// Link ends.
const ENDS: [&str; 2] = ["left", "right"];

impl Tables {
    /// Appends run `job` of the batch.
    pub fn push(&mut self, job: usize, r: &RunResult) {
        let job = job as i64;
        let (rep, seed) = (r.rep as i64, r.seed as i64);
        let t = &mut self.runs;
        t.i("job", job);
        t.i("rep", rep);
        t.i("seed", seed);
        t.i("events", r.events as i64);
        t.f("simulated_s", r.simulated_s);
        for f in &r.flows {
            let t = &mut self.flows;
            t.i("job", job);
            t.i("rep", rep);
            t.i("seed", seed);
            for c in table_columns() {
                match (c.get)(f) {
                    Cell::Text(v) => t.s(c.name, v),
                    Cell::Count(n) => t.i(c.name, n as i64),
                    Cell::Float(x) => t.f(c.name, x),
                    Cell::Flag(b) => t.i(c.name, i64::from(b)),
                }
            }
        }
        for p in &r.timeseries {
            let t = &mut self.timeseries;
            t.i("job", job);
            t.i("rep", rep);
            t.s("flow", &p.flow);
            t.f("time_s", p.time_s);
            t.f("throughput_bps", p.throughput_bps);
        }
        for seg in &r.segments {
            for (d, dir) in seg.directions.iter().enumerate() {
                let t = &mut self.links;
                t.i("job", job);
                t.i("rep", rep);
                t.i("seed", seed);
                t.i("segment", seg.segment as i64);
                t.s("kind", &seg.kind);
                t.s("direction", DIRECTIONS[d]);
                t.i("sent", dir.sent as i64);
                t.i("bytes", dir.bytes as i64);
                t.i("lost", dir.lost as i64);
                t.i("truncated", dir.truncated as i64);
                t.i("corrupted", dir.corrupted as i64);
                t.i("queue_drops", dir.queue_drops as i64);
                t.i("refused", dir.refused as i64);
            }
            for (e, end) in seg.ends.iter().enumerate() {
                for row in &end.services {
                    let t = &mut self.services;
                    t.i("job", job);
                    t.i("rep", rep);
                    t.i("seed", seed);
                    t.i("segment", seg.segment as i64);
                    t.s("end", ENDS[e.min(1)]);
                    let v = serde_json::to_value(row).expect("counters serialize to JSON");
                    t.json("", &v);
                }
            }
        }
    }

    /// `{table: ({column: list}, {column: kind})}`.
    pub fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let d = PyDict::new(py);
        d.set_item("flows", self.flows.into_py(py)?)?;
        d.set_item("timeseries", self.timeseries.into_py(py)?)?;
        d.set_item("links", self.links.into_py(py)?)?;
        d.set_item("services", self.services.into_py(py)?)?;
        d.set_item("runs", self.runs.into_py(py)?)?;
        Ok(d.into_any().unbind())
    }
}
