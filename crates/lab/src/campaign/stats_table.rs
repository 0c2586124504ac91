//! stats.csv of `mslink sim`: each flow's metrics at each sweep point over the repetitions,
//! as mean, standard deviation and Student-t 95% confidence interval.
//!
//! Contract. One row per (point, flow, metric), points in sweep order, flows in the order the
//! runs list them, metrics in `mslink_sim::world::SUMMARISED` order (the Python API's
//! `Result.stats()` gives the same rows from the same list and statistics). The statistics are `mslink_sim::stats`' (the
//! ones `mslink reproduce` judges with and the plots draw): `ci95_low`/`ci95_high` are empty
//! when a point ran once (no interval from one observation). A flow missing from some
//! repetitions is summarised over those it appears in (`n` says how many). The sweep columns
//! hold the readable labels flows.csv has. With `--stats summary` ([`StatsMode::Summary`]) a
//! point has one row per metric instead, flow `*`: each repetition contributes the mean of the
//! metric over that run's flows, so the interval is over repetitions of the all-flows mean
//! (a million flows give 11 rows per point, not 11 million).

use std::collections::HashMap;
use std::io::Write;

use anyhow::Result;
use mslink_sim::labels::Label;
use mslink_sim::world::SUMMARISED;
use mslink_sim::RunResult;

use super::csv_field;

/// What stats.csv holds (`--stats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum StatsMode {
    /// No stats.csv.
    None,
    /// One row per sweep point, flow and metric.
    Flows,
    /// One row per sweep point and metric, over the mean of all flows (flow `*`).
    Summary,
}

/// The flow name of `--stats summary` rows.
pub(crate) const ALL_FLOWS: &str = "*";

/// stats.csv being written: the rows of each sweep point go out when the runs move on to the
/// next point (jobs come point by point, each point's repetitions together), so what is held
/// is one point's metrics, whatever the number of points.
pub(crate) struct StatsTable<W: Write> {
    w: W,
    name: String,
    /// The point being gathered, its sweep columns, and its flows in first-seen order with
    /// each one's metrics per repetition (and where each flow is in that list).
    point: Option<(usize, String)>,
    flows: Vec<(String, Vec<[f64; SUMMARISED.len()]>)>,
    index: HashMap<String, usize>,
    /// Rows per flow, or the all-flows mean (`Summary`).
    summary: bool,
}

impl<W: Write> StatsTable<W> {
    /// Starts stats.csv of scenario `name` with sweep `keys` on `w`; `summary`: one row per
    /// point and metric, over the mean of all flows.
    pub(crate) fn new(mut w: W, name: &str, keys: &[String], summary: bool) -> Result<Self> {
        w.write_all(b"scenario,point,")?;
        for k in keys {
            write!(w, "{},", csv_field(k))?;
        }
        w.write_all(b"flow,metric,n,mean,sd,ci95_low,ci95_high\n")?;
        Ok(StatsTable {
            w,
            name: csv_field(name),
            point: None,
            flows: Vec::new(),
            index: HashMap::new(),
            summary,
        })
    }

    /// Adds run `r` of `point` (sweep `labels`).
    pub(crate) fn push(&mut self, point: usize, labels: &[Label], r: &RunResult) -> Result<()> {
        if self.point.as_ref().is_some_and(|(p, _)| *p != point) {
            self.flush()?;
        }
        if self.point.is_none() {
            let sweep = labels
                .iter()
                .map(|v| format!("{},", csv_field(&v.text())))
                .collect();
            self.point = Some((point, sweep));
        }
        if self.summary {
            if r.flows.is_empty() {
                return Ok(());
            }
            let n = r.flows.len() as f64;
            let mean = SUMMARISED.map(|(_, of)| r.flows.iter().map(of).sum::<f64>() / n);
            match self.flows.first_mut() {
                Some(all) => all.1.push(mean),
                None => self.flows.push((ALL_FLOWS.to_string(), vec![mean])),
            }
            return Ok(());
        }
        for f in &r.flows {
            let values = SUMMARISED.map(|(_, of)| of(f));
            match self.index.get(&f.flow) {
                Some(&i) => self.flows[i].1.push(values),
                None => {
                    self.index.insert(f.flow.clone(), self.flows.len());
                    self.flows.push((f.flow.clone(), vec![values]));
                }
            }
        }
        Ok(())
    }

    /// Writes the gathered point's rows.
    fn flush(&mut self) -> Result<()> {
        let Some((point, sweep)) = self.point.take() else {
            return Ok(());
        };
        let name = &self.name;
        for (flow, reps) in self.flows.drain(..) {
            let flow = csv_field(&flow);
            for (m, (metric, _)) in SUMMARISED.iter().enumerate() {
                let xs: Vec<f64> = reps.iter().map(|r| r[m]).collect();
                let e = mslink_sim::stats::estimate(&xs);
                let (lo, hi) = if e.half.is_finite() {
                    (e.lo().to_string(), e.hi().to_string())
                } else {
                    (String::new(), String::new())
                };
                writeln!(
                    self.w,
                    "{name},{point},{sweep}{flow},{metric},{},{},{},{lo},{hi}",
                    e.n, e.mean, e.sd
                )?;
            }
        }
        self.index.clear();
        Ok(())
    }

    /// Writes the last point's rows and flushes.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.flush()?;
        self.w.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mslink_sim::world::FlowResult;

    fn run(rep: u32, throughputs: &[(&str, f64)]) -> RunResult {
        RunResult {
            rep,
            flows: throughputs
                .iter()
                .map(|(n, t)| FlowResult {
                    flow: n.to_string(),
                    throughput_bps: *t,
                    ..FlowResult::default()
                })
                .collect(),
            ..RunResult::default()
        }
    }

    #[test]
    fn rows_carry_student_t_intervals_per_point_and_flow() {
        let results = [
            (0, run(0, &[("a", 1.0), ("b", 10.0)])),
            (0, run(1, &[("a", 2.0), ("b", 10.0)])),
            (0, run(2, &[("a", 3.0), ("b", 10.0)])),
            (1, run(0, &[("a", 5.0)])),
        ];
        let labels = [vec![Label::Number(1.0)], vec![Label::Text("SR".into())]];
        let mut out = Vec::new();
        let mut t = StatsTable::new(&mut out, "s", &["k".into()], false).unwrap();
        for (point, r) in &results {
            t.push(*point, &labels[*point], r).unwrap();
        }
        t.finish().unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(
            rows[0],
            "scenario,point,k,flow,metric,n,mean,sd,ci95_low,ci95_high"
        );
        assert_eq!(rows.len(), 1 + 3 * SUMMARISED.len());
        // a at point 0: mean 2, sd 1, half-width t(0.975, 2) / sqrt(3) = 2.4841.
        let a: Vec<&str> = rows[1].split(',').collect();
        assert_eq!(&a[..7], ["s", "0", "1", "a", "throughput_bps", "3", "2"]);
        let (lo, hi): (f64, f64) = (a[8].parse().unwrap(), a[9].parse().unwrap());
        assert!((hi - 2.0 - 2.4841).abs() < 1e-3 && (2.0 - lo - 2.4841).abs() < 1e-3);
        // b never varies: a zero-width interval.
        let b = rows[1 + SUMMARISED.len()];
        assert!(b.ends_with("b,throughput_bps,3,10,0,10,10"), "{b}");
        // Point 1 ran once: no interval.
        let once = rows[1 + 2 * SUMMARISED.len()];
        assert!(once.ends_with("1,SR,a,throughput_bps,1,5,0,,"), "{once}");
    }

    #[test]
    fn summary_rows_are_over_repetitions_of_the_all_flows_mean() {
        // Two runs of one point: all-flows means 5.5 and 6.5.
        let results = [
            run(0, &[("a", 1.0), ("b", 10.0)]),
            run(1, &[("a", 3.0), ("b", 10.0)]),
        ];
        let mut out = Vec::new();
        let mut t = StatsTable::new(&mut out, "s", &[], true).unwrap();
        for r in &results {
            t.push(0, &[], r).unwrap();
        }
        t.finish().unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 1 + SUMMARISED.len());
        let first: Vec<&str> = rows[1].split(',').collect();
        assert_eq!(&first[..6], ["s", "0", "*", "throughput_bps", "2", "6"]);
    }
}
