//! Test support shared by the scheduler files (compiled for tests only).
//!
//! Contract: [`run_ops`] drives any [`Scheduler`] through a list of [`Op`]s against a model
//! that knows only how many frames each queue holds, and checks what every policy must
//! satisfy: `dequeue` returns `None` exactly when nothing is queued (work conservation), only
//! ever names a queue that holds a frame, and `len()` agrees with the model. It returns the
//! dequeue trace so a policy's own tests can compare it, op for op, with a naive reference
//! model (which is how FIFO-within-a-queue and the length bookkeeping are checked: a model that
//! keeps per-queue FIFOs of lengths must make the very same choices). [`de`] deserializes a
//! config from a tiny in-memory value tree, so serde behaviour is tested without a format crate.

use super::{QueueId, Scheduler};
use crate::time::{Duration, Instant};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One driver action.
#[derive(Clone, Debug)]
pub enum Op {
    /// `enqueue(now, q, len)`.
    Enqueue(QueueId, u32),
    /// `dequeue(now)`.
    Dequeue,
    /// `observe_input(now, q, bytes)`.
    Input(QueueId, u32),
    /// `report(now, q, delivered)`.
    Report(QueueId, bool),
    /// Time moves on by this many nanoseconds.
    Advance(u64),
}

/// A proptest strategy of driver actions over `n` queues, frames of 1..=`max_len` bytes.
pub fn op_strategy(n: usize, max_len: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..n, 1..=max_len).prop_map(|(q, l)| Op::Enqueue(q, l)),
        4 => Just(Op::Dequeue),
        1 => (0..n, 1..=max_len).prop_map(|(q, b)| Op::Input(q, b)),
        1 => (0..n, any::<bool>()).prop_map(|(q, d)| Op::Report(q, d)),
        1 => (0u64..50_000_000).prop_map(Op::Advance),
    ]
}

/// A seeded random workload of `count` actions (for smoke tests outside proptest).
pub fn fixed_workload(n: usize, count: usize, seed: u64) -> Vec<Op> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| match rng.gen_range(0..11) {
            0..=3 => Op::Enqueue(rng.gen_range(0..n), rng.gen_range(1..=1500)),
            4..=7 => Op::Dequeue,
            8 => Op::Input(rng.gen_range(0..n), rng.gen_range(1..=1500)),
            9 => Op::Report(rng.gen_range(0..n), rng.gen_bool(0.7)),
            _ => Op::Advance(rng.gen_range(0..50_000_000)),
        })
        .collect()
}

/// Runs `ops` on `s` (with `n` queues), checking the universal invariants; returns the result
/// of every `dequeue`, in order. Finishes by draining the scheduler.
pub fn run_ops(s: &mut dyn Scheduler, n: usize, ops: &[Op]) -> Vec<Option<QueueId>> {
    let mut now = Instant::from_secs(1);
    let mut counts = vec![0usize; n];
    let mut total = 0usize;
    let mut trace = Vec::new();
    let dequeue = |s: &mut dyn Scheduler, now, counts: &mut [usize], total: &mut usize| {
        let got = s.dequeue(now);
        match got {
            None => assert_eq!(*total, 0, "{}: None with {total} frames queued", s.name()),
            Some(q) => {
                assert!(q < n, "{}: queue {q} out of range", s.name());
                assert!(counts[q] > 0, "{}: dequeued empty queue {q}", s.name());
                counts[q] -= 1;
                *total -= 1;
            }
        }
        got
    };
    for op in ops {
        match *op {
            Op::Enqueue(q, len) => {
                s.enqueue(now, q, len);
                counts[q] += 1;
                total += 1;
            }
            Op::Dequeue => trace.push(dequeue(s, now, &mut counts, &mut total)),
            Op::Input(q, b) => s.observe_input(now, q, b),
            Op::Report(q, d) => s.report(now, q, d),
            Op::Advance(ns) => now += Duration::from_nanos(ns),
        }
        assert_eq!(s.len(), total, "{}: len disagrees with the model", s.name());
    }
    while total > 0 {
        trace.push(dequeue(s, now, &mut counts, &mut total));
    }
    assert_eq!(s.dequeue(now), None);
    assert!(s.is_empty());
    trace
}

/// Runs `ops` on two fresh schedulers from `make` and checks they agree (determinism).
pub fn check_deterministic(
    make: impl Fn() -> Box<dyn Scheduler>,
    n: usize,
    ops: &[Op],
) -> Vec<Option<QueueId>> {
    let a = run_ops(make().as_mut(), n, ops);
    let b = run_ops(make().as_mut(), n, ops);
    assert_eq!(a, b, "same inputs gave different orders");
    a
}

/// A value tree for deserializing configs in tests.
#[derive(Clone, Debug)]
pub enum Val {
    /// A string.
    S(&'static str),
    /// An unsigned integer.
    I(u64),
    /// A float.
    F(f64),
    /// A list of floats.
    L(Vec<f64>),
    /// A list of values.
    Seq(Vec<Val>),
    /// A map (a table).
    M(Vec<(&'static str, Val)>),
}

/// Deserializes `T` from the table `pairs`; errors as text.
pub fn de<T: serde::de::DeserializeOwned>(pairs: &[(&'static str, Val)]) -> Result<T, String> {
    T::deserialize(ValDe(Val::M(pairs.to_vec()))).map_err(|e| e.to_string())
}

/// Serde deserializer over a [`Val`].
pub struct ValDe(Val);

type DeError = serde::de::value::Error;

impl<'de> serde::de::IntoDeserializer<'de, DeError> for Val {
    type Deserializer = ValDe;
    fn into_deserializer(self) -> ValDe {
        ValDe(self)
    }
}

impl<'de> serde::Deserializer<'de> for ValDe {
    type Error = DeError;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        use serde::de::value::{MapDeserializer, SeqDeserializer};
        match self.0 {
            Val::S(s) => v.visit_borrowed_str(s),
            Val::I(i) => v.visit_u64(i),
            Val::F(f) => v.visit_f64(f),
            Val::L(l) => v.visit_seq(SeqDeserializer::new(l.into_iter().map(Val::F))),
            Val::Seq(s) => v.visit_seq(SeqDeserializer::new(s.into_iter())),
            Val::M(m) => v.visit_map(MapDeserializer::new(m.into_iter())),
        }
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        v.visit_some(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}
