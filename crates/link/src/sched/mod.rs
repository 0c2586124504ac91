//! Frame schedulers: who sends next when several queues share one physical link.
//!
//! Contract. A scheduler owns `n` queues numbered `0..n`, fixed at construction, and tracks only
//! frame *lengths*: the frames themselves stay with their owner (the link keeps them per
//! service), so a scheduler is a pure ordering policy. The driver calls, with non-decreasing
//! `now`:
//!
//! * `enqueue(now, q, len)` when a frame of `len` bytes joins the tail of queue `q`;
//! * `dequeue(now)` when the link is free: the queue whose head frame goes next (that head is
//!   removed), or `None` when every queue is empty;
//! * `observe_input(now, q, bytes)` for each packet the classifier gives queue `q`, before any
//!   link-layer overhead (SCFQ measures its rates from this, 004 §IV);
//! * `report(now, q, delivered)` when the MAC learns the outcome of a transmission from queue
//!   `q` (ELF estimates error rates from this, 003 §6).
//!
//! Work-conserving schedulers never return `None` while a frame is queued. Nothing here reads a
//! clock or allocates per frame on the hot path once queues have grown.
//!
//! Policies (one file each): [`fifo`], [`priority`] (strict), [`wrr`] (weighted round robin in
//! frames), [`drr`] (deficit round robin in bytes), [`wfq`] (finish tags against a
//! work-clocked GPS emulation), [`scfq`] (004 §IV, Golestani's self-clocked fair queueing) and
//! [`elf`] (003 §6, effort-limited fair). A [`SchedulerConfig`] (serde, tagged by `policy`)
//! names one and [`SchedulerConfig::build`] makes it for a given number of queues; a bad
//! configuration is a [`SchedConfigError`] naming the field.

pub mod drr;
pub mod elf;
pub mod error_estimate;
pub mod fifo;
pub mod priority;
pub mod scfq;
mod tag_heap;
pub mod wfq;
pub mod wrr;

#[cfg(test)]
pub(crate) mod testkit;

use crate::time::Instant;

/// Index of a scheduler queue.
pub type QueueId = usize;

/// An ordering policy over `n` FIFO queues of frames.
pub trait Scheduler: Send {
    /// The policy's name, as used in configuration.
    fn name(&self) -> &'static str;
    /// Number of queues.
    fn queues(&self) -> usize;
    /// A frame of `len` bytes joins the tail of queue `q`.
    fn enqueue(&mut self, now: Instant, q: QueueId, len: u32);
    /// Removes and returns the queue whose head frame is sent next.
    fn dequeue(&mut self, now: Instant) -> Option<QueueId>;
    /// Frames queued in all queues.
    fn len(&self) -> usize;
    /// True when no frame is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Classifier input of `bytes` to queue `q` (before link overhead). Default: ignored.
    fn observe_input(&mut self, _now: Instant, _q: QueueId, _bytes: u32) {}
    /// MAC outcome of a transmission from queue `q`. Default: ignored.
    fn report(&mut self, _now: Instant, _q: QueueId, _delivered: bool) {}
    /// MAC outcome of a transmission from queue `q` as the share of its air time that carried
    /// delivered payload: 1 for a frame delivered with no overhead, 0 for a lost one, and in
    /// between for a frame delivered with coding (003 §5: "the air time costs of error coding
    /// and packet shrinking are fractional packets rather than multiple packets, but these
    /// defensive measures still reduce link throughput"). Default: [`Scheduler::report`], the
    /// frame delivered when any of it was.
    fn report_share(&mut self, now: Instant, q: QueueId, share: f64) {
        self.report(now, q, share > 0.0);
    }
}

/// Which scheduling policy a link uses, with that policy's own settings.
///
/// In TOML: `policy = "scfq"` plus the fields of [`scfq::ScfqConfig`], and so on. The default
/// is 004's choice: SCFQ with rates measured from the classifier input.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedulerConfig {
    /// One FIFO over all queues, in arrival order.
    Fifo(fifo::FifoConfig),
    /// Strict priority.
    Priority(priority::PriorityConfig),
    /// Weighted round robin, weights in frames per round.
    Wrr(wrr::WrrConfig),
    /// Deficit round robin, quanta in bytes per round.
    Drr(drr::DrrConfig),
    /// Weighted fair queueing (finish tags against emulated GPS).
    Wfq(wfq::WfqConfig),
    /// Self-clocked fair queueing (004 §IV).
    Scfq(scfq::ScfqConfig),
    /// Effort-limited fair scheduling (003 §6).
    Elf(elf::ElfConfig),
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig::Scfq(scfq::ScfqConfig::default())
    }
}

impl SchedulerConfig {
    /// Consequences of this configuration a user may not expect, one sentence each: ELF
    /// reservations that break 003 §6.3's admission condition.
    pub fn notes(&self) -> Vec<String> {
        match self {
            SchedulerConfig::Elf(c) => c
                .overcommitted()
                .map(|worst| {
                    format!(
                        "ELF reservations break 003 §6.3's admission condition: the sum of \
                         W_i * P_i over reserved flows (W_i = reserved_bps / link_rate_bps, P_i \
                         the power factor) is {worst:.3} > 1, so when every reserved flow is \
                         error-limited they need more air time than the link has and not every \
                         guarantee can hold; lower reserved_bps or power_factor"
                    )
                })
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The policy's name (the `policy` tag).
    pub fn policy(&self) -> &'static str {
        match self {
            SchedulerConfig::Fifo(_) => "fifo",
            SchedulerConfig::Priority(_) => "priority",
            SchedulerConfig::Wrr(_) => "wrr",
            SchedulerConfig::Drr(_) => "drr",
            SchedulerConfig::Wfq(_) => "wfq",
            SchedulerConfig::Scfq(_) => "scfq",
            SchedulerConfig::Elf(_) => "elf",
        }
    }

    /// Builds the scheduler for `queues` queues, checking every setting first.
    pub fn build(&self, queues: usize) -> Result<Box<dyn Scheduler>, SchedConfigError> {
        Ok(match self {
            SchedulerConfig::Fifo(c) => Box::new(fifo::Fifo::new(queues, c)?),
            SchedulerConfig::Priority(c) => Box::new(priority::Priority::new(queues, c)?),
            SchedulerConfig::Wrr(c) => Box::new(wrr::Wrr::new(queues, c)?),
            SchedulerConfig::Drr(c) => Box::new(drr::Drr::new(queues, c)?),
            SchedulerConfig::Wfq(c) => Box::new(wfq::Wfq::new(queues, c)?),
            SchedulerConfig::Scfq(c) => Box::new(scfq::Scfq::new(queues, c)?),
            SchedulerConfig::Elf(c) => Box::new(elf::Elf::new(queues, c)?),
        })
    }
}

/// Why a scheduler configuration was refused. Every variant names the offending field.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SchedConfigError {
    /// A scheduler needs at least one queue.
    #[error("a scheduler needs at least one queue, got 0")]
    NoQueues,
    /// A per-queue list has the wrong length.
    #[error("`{field}` has {got} entries, expected one per queue ({expected})")]
    WrongCount {
        /// The field (e.g. `weights`).
        field: String,
        /// Number of queues.
        expected: usize,
        /// Entries given.
        got: usize,
    },
    /// A value is out of its range (zero, negative, NaN, infinite where not allowed, ...).
    #[error("`{field}` = {value}: expected {expected}")]
    BadValue {
        /// The field, with its index for lists (e.g. `rates[2]`).
        field: String,
        /// The value given.
        value: f64,
        /// What is allowed.
        expected: &'static str,
    },
    /// The priority order is not a permutation of the queues.
    #[error("`order` must list each queue 0..{queues} exactly once: {problem}")]
    NotAPermutation {
        /// Number of queues.
        queues: usize,
        /// What is wrong (a repeated or out-of-range queue).
        problem: String,
    },
    /// Reservations exceed the error-free link (003 §6.3 admission: sum of B_i/B <= 1).
    #[error("reservations in `flows[..].reserved_bps` total {reserved_bps} bit/s, more than `link_rate_bps` = {link_rate_bps}")]
    Overbooked {
        /// Sum of the reserved rates.
        reserved_bps: f64,
        /// The link rate B.
        link_rate_bps: f64,
    },
}

/// Refuses zero queues.
pub(crate) fn check_queues(queues: usize) -> Result<(), SchedConfigError> {
    if queues == 0 {
        Err(SchedConfigError::NoQueues)
    } else {
        Ok(())
    }
}

/// A per-queue list must be empty (meaning "all equal") or have one entry per queue.
pub(crate) fn check_count<T>(
    field: &str,
    list: &[T],
    queues: usize,
) -> Result<(), SchedConfigError> {
    if list.is_empty() || list.len() == queues {
        Ok(())
    } else {
        Err(SchedConfigError::WrongCount {
            field: field.to_string(),
            expected: queues,
            got: list.len(),
        })
    }
}

/// `value` must be finite and strictly positive.
pub(crate) fn check_positive(field: &str, value: f64) -> Result<f64, SchedConfigError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(SchedConfigError::BadValue {
            field: field.to_string(),
            value,
            expected: "a finite number > 0",
        })
    }
}

/// A per-queue list of positive finite numbers; empty gives `default` for every queue.
pub(crate) fn positive_list(
    field: &str,
    list: &[f64],
    queues: usize,
    default: f64,
) -> Result<Vec<f64>, SchedConfigError> {
    check_queues(queues)?;
    check_count(field, list, queues)?;
    if list.is_empty() {
        return Ok(vec![default; queues]);
    }
    list.iter()
        .enumerate()
        .map(|(i, &v)| check_positive(&format!("{field}[{i}]"), v))
        .collect()
}

/// A per-queue list of integers >= 1; empty gives `default` for every queue.
pub(crate) fn nonzero_list(
    field: &str,
    list: &[u32],
    queues: usize,
    default: u32,
) -> Result<Vec<u32>, SchedConfigError> {
    check_queues(queues)?;
    check_count(field, list, queues)?;
    if list.is_empty() {
        return Ok(vec![default; queues]);
    }
    list.iter()
        .enumerate()
        .map(|(i, &v)| {
            if v == 0 {
                Err(SchedConfigError::BadValue {
                    field: format!("{field}[{i}]"),
                    value: 0.0,
                    expected: "an integer >= 1",
                })
            } else {
                Ok(v)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::testkit::{de, run_ops, Val};
    use super::*;

    fn every_policy() -> Vec<SchedulerConfig> {
        vec![
            SchedulerConfig::Fifo(fifo::FifoConfig::default()),
            SchedulerConfig::Priority(priority::PriorityConfig::default()),
            SchedulerConfig::Wrr(wrr::WrrConfig::default()),
            SchedulerConfig::Drr(drr::DrrConfig::default()),
            SchedulerConfig::Wfq(wfq::WfqConfig::default()),
            SchedulerConfig::Scfq(scfq::ScfqConfig::default()),
            SchedulerConfig::Elf(elf::ElfConfig::default()),
        ]
    }

    #[test]
    fn every_policy_builds_and_names_itself() {
        for c in every_policy() {
            let s = c.build(4).unwrap();
            assert_eq!(s.name(), c.policy());
            assert_eq!(s.queues(), 4);
            assert!(s.is_empty());
        }
    }

    #[test]
    fn zero_queues_is_refused_by_every_policy() {
        for c in every_policy() {
            assert_eq!(c.build(0).err(), Some(SchedConfigError::NoQueues), "{c:?}");
        }
    }

    #[test]
    fn default_is_measured_scfq() {
        match SchedulerConfig::default() {
            SchedulerConfig::Scfq(c) => assert!(c.rates.is_none()),
            other => panic!("default should be SCFQ, got {other:?}"),
        }
    }

    #[test]
    fn config_deserializes_by_policy_tag() {
        let c: SchedulerConfig = de(&[("policy", Val::S("fifo"))]).unwrap();
        assert_eq!(c, SchedulerConfig::Fifo(fifo::FifoConfig::default()));
        let c: SchedulerConfig = de(&[
            ("policy", Val::S("wfq")),
            ("weights", Val::L(vec![1.0, 2.0])),
        ])
        .unwrap();
        assert_eq!(
            c,
            SchedulerConfig::Wfq(wfq::WfqConfig {
                weights: vec![1.0, 2.0]
            })
        );
        let c: SchedulerConfig = de(&[
            ("policy", Val::S("scfq")),
            ("rates", Val::L(vec![3.0, 1.0])),
        ])
        .unwrap();
        let SchedulerConfig::Scfq(s) = c else {
            panic!("not scfq")
        };
        assert_eq!(s.rates, Some(vec![3.0, 1.0]));
        assert_eq!(s.window_ms, scfq::ScfqConfig::default().window_ms);
    }

    #[test]
    fn config_refuses_unknown_fields_and_policies() {
        let e = de::<SchedulerConfig>(&[("policy", Val::S("fifo")), ("wieghts", Val::I(1))]);
        assert!(e.unwrap_err().contains("wieghts"));
        let e = de::<SchedulerConfig>(&[("policy", Val::S("lottery"))]);
        assert!(e.unwrap_err().contains("lottery"));
    }

    #[test]
    fn bad_numbers_name_their_field() {
        let c = SchedulerConfig::Wfq(wfq::WfqConfig {
            weights: vec![1.0, f64::NAN, 2.0],
        });
        let e = c.build(3).err().unwrap();
        assert!(matches!(&e, SchedConfigError::BadValue { field, .. } if field == "weights[1]"));
        assert!(e.to_string().contains("weights[1]"), "{e}");
        let c = SchedulerConfig::Scfq(scfq::ScfqConfig {
            rates: Some(vec![1.0, -2.0]),
            ..Default::default()
        });
        let e = c.build(2).err().unwrap();
        assert!(e.to_string().contains("rates[1]"), "{e}");
        let c = SchedulerConfig::Drr(drr::DrrConfig {
            quanta: vec![1500, 0],
        });
        assert!(c.build(2).err().unwrap().to_string().contains("quanta[1]"));
        let c = SchedulerConfig::Wrr(wrr::WrrConfig {
            weights: vec![1, 2, 3],
        });
        let e = c.build(2).err().unwrap();
        assert_eq!(
            e,
            SchedConfigError::WrongCount {
                field: "weights".into(),
                expected: 2,
                got: 3
            }
        );
        assert!(e.to_string().contains("`weights` has 3 entries"), "{e}");
    }

    #[test]
    fn every_policy_survives_a_mixed_workload() {
        // A smoke run through the shared harness; each policy's own file has the property
        // tests against its reference model.
        for c in every_policy() {
            let mut s = c.build(5).unwrap();
            let ops = super::testkit::fixed_workload(5, 2_000, 7);
            run_ops(s.as_mut(), 5, &ops);
        }
    }
}
