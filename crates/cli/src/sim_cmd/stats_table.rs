//! stats.csv of `mslink sim`: each flow's metrics at each sweep point over the repetitions,
//! as mean, standard deviation and Student-t 95% confidence interval.
//!
//! Contract. One row per (point, flow, metric), points in sweep order, flows in the order the
//! runs list them, metrics in `mslink_sim::world::SUMMARISED` order (the Python API's
//! `Result.stats()` gives the same rows from the same list and statistics). The statistics are `mslink_sim::stats`' (the
//! ones `mslink reproduce` judges with and the plots draw): `ci95_low`/`ci95_high` are empty
//! when a point ran once (no interval from one observation). A flow missing from some
//! repetitions is summarised over those it appears in (`n` says how many). The sweep columns
//! hold the readable labels flows.csv has.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use anyhow::Result;
use mslink_sim::labels::Label;
use mslink_sim::world::{FlowResult, SUMMARISED};
use mslink_sim::RunResult;

use super::{csv_field, Job};

/// One point's flows: where each is in the list, and the list (first-seen order) of each
/// flow's rows over the repetitions.
type PointFlows<'a> = (HashMap<&'a str, usize>, Vec<(&'a str, Vec<&'a FlowResult>)>);

/// Writes stats.csv of scenario `name`.
pub(super) fn write_stats(
    w: &mut impl Write,
    name: &str,
    labels: &[Vec<Label>],
    keys: &[String],
    jobs: &[Job],
    results: &[RunResult],
) -> Result<()> {
    w.write_all(b"scenario,point,")?;
    for k in keys {
        write!(w, "{},", csv_field(k))?;
    }
    w.write_all(b"flow,metric,n,mean,sd,ci95_low,ci95_high\n")?;
    // point -> flows in first-seen order, each with its rows over the repetitions (and where
    // each flow's entry is, so a million flows cost a million lookups, not 10^12 compares).
    let mut per_point: BTreeMap<usize, PointFlows> = BTreeMap::new();
    for (job, r) in jobs.iter().zip(results) {
        let (index, flows) = per_point.entry(job.point).or_default();
        for f in &r.flows {
            let i = *index.entry(&f.flow).or_insert_with(|| {
                flows.push((&f.flow, Vec::new()));
                flows.len() - 1
            });
            flows[i].1.push(f);
        }
    }
    let name = csv_field(name);
    for (point, (_, flows)) in per_point {
        let sweep: String = labels[point]
            .iter()
            .map(|v| format!("{},", csv_field(&v.text())))
            .collect();
        for (flow, rows) in flows {
            let flow = csv_field(flow);
            for (metric, of) in SUMMARISED {
                let xs: Vec<f64> = rows.iter().map(|f| of(f)).collect();
                let e = mslink_sim::stats::estimate(&xs);
                let (lo, hi) = if e.half.is_finite() {
                    (e.lo().to_string(), e.hi().to_string())
                } else {
                    (String::new(), String::new())
                };
                writeln!(
                    w,
                    "{name},{point},{sweep}{flow},{metric},{},{},{},{lo},{hi}",
                    e.n, e.mean, e.sd
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let sc = mslink_sim::Scenario::parse("").unwrap();
        let jobs: Vec<Job> = [(0, 0), (0, 1), (0, 2), (1, 0)]
            .iter()
            .map(|&(point, rep)| Job {
                point,
                rep,
                scenario: &sc,
            })
            .collect();
        let results = vec![
            run(0, &[("a", 1.0), ("b", 10.0)]),
            run(1, &[("a", 2.0), ("b", 10.0)]),
            run(2, &[("a", 3.0), ("b", 10.0)]),
            run(0, &[("a", 5.0)]),
        ];
        let labels = vec![vec![Label::Number(1.0)], vec![Label::Text("SR".into())]];
        let mut out = Vec::new();
        write_stats(&mut out, "s", &labels, &["k".into()], &jobs, &results).unwrap();
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
}
