//! What the simulator costs on one machine, for the estimate's time: seconds per event (at a
//! run's number of flows), per flow, per run and per byte of trace file.
//!
//! Contract. [`Costs`] is either [`Costs::builtin`] (figures measured on the developers'
//! machine, named in [`Costs::source`]) or a calibration of the machine at hand, made by `mslink
//! sim --calibrate` (`mslink_lab::campaign::calibrate`: short probe runs through the whole
//! campaign, files and plots included) and read back with [`Costs::from_json`]. A run of `n`
//! flows and `e` events takes `run_s + n * flow_s + e * event_s(n)`; a trace file of `b` bytes
//! is read once in `b * trace_byte_s`. [`Costs::event_s`] interpolates the per-event cost
//! between the calibrated flow counts, linearly in log10 of the flows (an event costs more as
//! the flows' state leaves the caches), holds the first figure below the first count and
//! extends the last slope above the last (never falling). Nothing here reads a clock.

use serde::{Deserialize, Serialize};

/// Per-unit costs of simulating on one machine (seconds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    /// Seconds per event at runs of `flows` flows: `[flows, seconds]` pairs, flows ascending.
    pub event_s: Vec<[f64; 2]>,
    /// Seconds per flow and run besides its events: building its state and writing its rows
    /// (flows table, summary.json, stats.csv, plots).
    pub flow_s: f64,
    /// Seconds per run besides its flows and events: building the world, writing the run's
    /// summary entry and its share of the plots.
    pub run_s: f64,
    /// Seconds per byte of trace file, read and packed once per invocation.
    pub trace_byte_s: f64,
    /// Where the figures come from: the machine (CPU model) and the date of the calibration.
    pub source: String,
}

/// Why a calibration file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CostsError {
    /// Not JSON of the expected shape.
    #[error("not a calibration: {0}")]
    Json(#[from] serde_json::Error),
    /// A figure that no machine has.
    #[error("{0}")]
    Invalid(String),
}

impl Costs {
    /// The figures measured on the developers' machine (2 vCPUs AMD EPYC Zen 5, `mslink sim
    /// --calibrate` on 2026-11-29; docs/PERFORMANCE.md, "How close the estimate comes").
    pub fn builtin() -> Costs {
        Costs {
            event_s: vec![[2.0, 1.08e-7], [2e3, 1.74e-7], [1e5, 4.9e-7]],
            flow_s: 1.04e-5,
            run_s: 2.8e-4,
            trace_byte_s: 1.23e-8,
            source: "built in: measured on 2 vCPUs AMD EPYC Zen 5, 2026-11-29 \
                     (`mslink sim --calibrate` measures this machine)"
                .to_string(),
        }
    }

    /// Reads a calibration as `mslink sim --calibrate` writes it, checked.
    pub fn from_json(text: &str) -> Result<Costs, CostsError> {
        let c: Costs = serde_json::from_str(text)?;
        c.check()?;
        Ok(c)
    }

    /// Every figure finite and positive, at least one event cost, flows ascending.
    pub fn check(&self) -> Result<(), CostsError> {
        let bad = |what: &str, v: f64| {
            Err(CostsError::Invalid(format!(
                "{what} = {v}: must be a positive number of seconds"
            )))
        };
        for (what, v) in [
            ("flow_s", self.flow_s),
            ("run_s", self.run_s),
            ("trace_byte_s", self.trace_byte_s),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(what, v);
            }
        }
        if self.event_s.is_empty() {
            return Err(CostsError::Invalid(
                "event_s: no [flows, seconds] pair".to_string(),
            ));
        }
        for (i, [n, s]) in self.event_s.iter().enumerate() {
            if !(s.is_finite() && *s > 0.0) {
                return bad(&format!("event_s[{i}]"), *s);
            }
            if !(n.is_finite() && *n >= 1.0) || (i > 0 && *n <= self.event_s[i - 1][0]) {
                return Err(CostsError::Invalid(format!(
                    "event_s[{i}]: flows = {n}: flow counts must be at least 1 and ascending"
                )));
            }
        }
        Ok(())
    }

    /// Seconds per event in a run of `flows` flows (see the module contract).
    pub fn event_s(&self, flows: f64) -> f64 {
        let pts = &self.event_s;
        let x = flows.max(1.0).log10();
        let at = |i: usize| (pts[i][0].log10(), pts[i][1]);
        if pts.len() == 1 || x <= at(0).0 {
            return pts[0][1];
        }
        // The segment that holds x, or the last one, extended.
        let i = (1..pts.len())
            .find(|&i| x <= at(i).0)
            .unwrap_or(pts.len() - 1);
        let ((x0, y0), (x1, y1)) = (at(i - 1), at(i));
        let slope = ((y1 - y0) / (x1 - x0)).max(0.0);
        if x > x1 {
            y1 + slope * (x - x1)
        } else {
            y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        }
    }

    /// Seconds one run of `flows` flows and `events` events takes on one thread.
    pub fn run_time(&self, flows: f64, events: f64) -> f64 {
        self.run_s + flows * self.flow_s + events * self.event_s(flows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(pts: &[[f64; 2]]) -> Costs {
        Costs {
            event_s: pts.to_vec(),
            ..Costs::builtin()
        }
    }

    #[test]
    fn event_cost_follows_log_flows_and_extends_the_last_slope() {
        let c = costs(&[[10.0, 1.0], [1000.0, 3.0]]);
        assert_eq!(c.event_s(1.0), 1.0, "held below the first count");
        assert!((c.event_s(100.0) - 2.0).abs() < 1e-12);
        assert!((c.event_s(1000.0) - 3.0).abs() < 1e-12);
        assert!((c.event_s(1e5) - 5.0).abs() < 1e-12, "one per decade on");
        let falling = costs(&[[1.0, 2.0], [100.0, 1.0]]);
        assert_eq!(falling.event_s(1e6), 1.0, "never falls past the last count");
        assert_eq!(costs(&[[5.0, 4.0]]).event_s(1e9), 4.0);
        let run = c.run_time(100.0, 1e3);
        assert!((run - (c.run_s + 100.0 * c.flow_s + 2e3)).abs() < 1e-9);
    }

    #[test]
    fn calibrations_are_checked() {
        let good = serde_json::to_value(Costs::builtin()).unwrap();
        let text = |v: &serde_json::Value| v.to_string();
        assert_eq!(Costs::from_json(&text(&good)).unwrap(), Costs::builtin());
        let with = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut v = good.clone();
            f(&mut v);
            Costs::from_json(&text(&v)).unwrap_err().to_string()
        };
        let e = with(&|v| v["flow_s"] = (-1.0).into());
        assert!(e.contains("flow_s = -1"), "{e}");
        let e = with(&|v| v["event_s"][1][0] = 1.0.into());
        assert!(e.contains("event_s[1]: flows = 1"), "{e}");
        let e = with(&|v| v["event_s"] = serde_json::json!([]));
        assert!(e.contains("event_s: no"), "{e}");
        let e = with(&|v| {
            let o = v.as_object_mut().unwrap();
            let r = o.remove("run_s").unwrap();
            o.insert("runs_s".into(), r);
        });
        assert!(e.contains("unknown field"), "{e}");
    }
}
