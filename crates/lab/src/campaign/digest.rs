//! The short table `mslink sim` prints when its runs are done: each datagram flow's residual
//! loss, packets still queued at the end, 95th-percentile delay beside the scheduler's delay
//! bound, and playback miss, per sweep point (means over the repetitions; stats.csv has the
//! intervals).
//!
//! Contract. Rows come in the order the runs first list them, (point, flow) once each, TCP
//! and WWW flows left out (their loss and delay are the transport's). At most [`MAX_ROWS`]
//! rows are kept; a larger sweep says how many it left out and points at stats.csv, so the
//! table costs nothing that grows with a sweep. The bound column is `mslink_sim::budget`'s:
//! the most the link schedulers add to the flow's delay beyond what it has alone, "none" when
//! its class's share does not cover its peak (the scenario's notes say which and why).

use std::collections::HashMap;
use std::fmt::Write as _;

use mslink_sim::labels::Label;
use mslink_sim::RunResult;

/// Rows kept and printed at most.
pub(crate) const MAX_ROWS: usize = 24;

#[derive(Default)]
struct Row {
    point: usize,
    flow: String,
    playback_ms: f64,
    n: u32,
    loss: f64,
    unsent: f64,
    p95: f64,
    miss: f64,
    bound: Option<f64>,
}

/// The table being gathered.
#[derive(Default)]
pub(crate) struct Digest {
    rows: Vec<Row>,
    index: HashMap<(usize, String), usize>,
    left_out: usize,
}

impl Digest {
    /// Adds run `r` of sweep point `point`, whose scenario is `sc`.
    pub(crate) fn push(&mut self, point: usize, sc: &mslink_sim::Scenario, r: &RunResult) {
        for (at, f) in r
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.transport == "udp")
        {
            let key = (point, f.flow.clone());
            let i = match self.index.get(&key) {
                Some(&i) => i,
                None if self.rows.len() >= MAX_ROWS => {
                    self.left_out += 1;
                    self.index.insert(key, usize::MAX);
                    continue;
                }
                None => {
                    // The flow's entry: the runs list the copies of each entry in order.
                    let mut first = 0;
                    let playback_ms = sc
                        .flows
                        .iter()
                        .find(|e| {
                            first += e.count;
                            at < first
                        })
                        .map_or(f64::NAN, |e| e.playback_ms);
                    self.rows.push(Row {
                        point,
                        flow: f.flow.clone(),
                        playback_ms,
                        bound: f.delay_bound_s,
                        ..Row::default()
                    });
                    self.index.insert(key, self.rows.len() - 1);
                    self.rows.len() - 1
                }
            };
            let Some(row) = self.rows.get_mut(i) else {
                continue;
            };
            row.n += 1;
            row.loss += f.loss_rate;
            row.unsent += f.unsent as f64;
            row.p95 += f.delay_p95_s;
            row.miss += f.playback_miss_rate;
        }
    }

    /// The table, with each point's sweep `labels`; empty when no datagram flow ran.
    pub(crate) fn render(&self, labels: &[Vec<Label>]) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let ms = |s: f64| format!("{:.1} ms", s * 1e3);
        let mut cells = vec![[
            "point".to_string(),
            "flow".into(),
            "loss".into(),
            "unsent".into(),
            "p95 delay".into(),
            "sched. bound".into(),
            "playback miss".into(),
        ]];
        for r in &self.rows {
            let n = f64::from(r.n.max(1));
            let point = labels
                .get(r.point)
                .filter(|l| !l.is_empty())
                .map(|l| l.iter().map(Label::text).collect::<Vec<_>>().join(", "))
                .map_or(r.point.to_string(), |t| format!("{} ({t})", r.point));
            cells.push([
                point,
                r.flow.clone(),
                format!("{:.2}%", r.loss / n * 100.0),
                format!("{:.1}", r.unsent / n),
                ms(r.p95 / n),
                r.bound.map_or("none".into(), |b| format!("+{}", ms(b))),
                format!("{:.2}% at {:.0} ms", r.miss / n * 100.0, r.playback_ms),
            ]);
        }
        let mut widths = [0usize; 7];
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let runs = self.rows.iter().map(|r| r.n).max().unwrap_or(0);
        let mut out = format!(
            "datagram flows, mean of {runs} run{} per point (stats.csv has the intervals; \
             sched. bound: the most the link schedulers add to the delay alone, none when a \
             class's share is below its peak):\n",
            if runs == 1 { "" } else { "s" }
        );
        for row in &cells {
            let mut line = String::from(" ");
            for (w, c) in widths.iter().zip(row) {
                let _ = write!(line, "  {c:<w$}");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if self.left_out > 0 {
            let _ = writeln!(
                out,
                "  ... and {} more (point, flow) pairs: see flows.csv",
                self.left_out
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mslink_sim::world::FlowResult;

    fn flow(name: &str, transport: &str, loss: f64, bound: Option<f64>) -> FlowResult {
        FlowResult {
            flow: name.into(),
            transport: transport.into(),
            loss_rate: loss,
            delay_p95_s: 0.04,
            delay_bound_s: bound,
            unsent: 2,
            ..FlowResult::default()
        }
    }

    #[test]
    fn means_per_point_and_flow_without_tcp() {
        let sc = mslink_sim::Scenario::parse(
            "[[segment]]\nkind = 'wired'\n[[flow]]\nname = 'ftp'\napp = 'ftp'\nfrom = 0\nto = 1\n\
             [[flow]]\nname = 'media'\napp = 'cbr'\nfrom = 0\nto = 1\nplayback_ms = 150\n",
        )
        .unwrap();
        let mut d = Digest::default();
        for loss in [0.01, 0.03] {
            let r = RunResult {
                flows: vec![
                    flow("ftp", "reno", 0.0, None),
                    flow("media", "udp", loss, Some(0.0122)),
                ],
                ..RunResult::default()
            };
            d.push(0, &sc, &r);
        }
        let text = d.render(&[vec![Label::Text("SR".into())]]);
        assert!(text.contains("mean of 2 runs"), "{text}");
        let row = text.lines().find(|l| l.contains("media")).unwrap();
        for want in ["0 (SR)", "2.00%", "2.0", "40.0 ms", "+12.2 ms", "at 150 ms"] {
            assert!(row.contains(want), "{want} in {row}");
        }
        assert!(!text.contains("ftp"), "{text}");
    }

    #[test]
    fn a_large_sweep_keeps_a_bounded_table() {
        let sc = mslink_sim::Scenario::parse("[[segment]]\nkind = 'wired'\n").unwrap();
        let mut d = Digest::default();
        for point in 0..MAX_ROWS + 5 {
            let r = RunResult {
                flows: vec![flow("media", "udp", 0.0, None)],
                ..RunResult::default()
            };
            d.push(point, &sc, &r);
        }
        let text = d.render(&[]);
        assert_eq!(
            text.lines().filter(|l| l.contains("media")).count(),
            MAX_ROWS
        );
        assert!(text.contains("5 more"), "{text}");
        assert!(text.contains("none"), "{text}");
    }
}
