//! Heaps of timestamped queue heads for the fair-queueing schedulers (004 §IV: "the scheduler
//! organizes the queues in a sorted heap, based on their heads").
//!
//! Contract: [`TagHeap`] is an indexed binary min-heap of `(tag, id)` pairs, at most one per
//! id, ordered by tag and then by id (so equal tags go to the lower id, deterministically).
//! Besides insert and peek it can change or remove any id's key in O(log n), which the
//! schedulers need when a queue's rate changes under a waiting head. Tags must never be NaN.
//! [`Head`] is the same pair ordered for `std`'s max-heap (lowest pops first), used where no
//! key changes are needed. No allocation after construction.

use std::cmp::Ordering;

/// A `(tag, queue)` pair ordered so that `std::collections::BinaryHeap` pops the lowest
/// `(tag, q)` first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Head {
    pub(crate) tag: f64,
    pub(crate) q: u32,
}

impl Ord for Head {
    fn cmp(&self, o: &Self) -> Ordering {
        o.tag.total_cmp(&self.tag).then_with(|| o.q.cmp(&self.q))
    }
}
impl PartialOrd for Head {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl PartialEq for Head {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Head {}

const ABSENT: u32 = u32::MAX;

/// Indexed binary min-heap keyed `(tag, id)`.
#[derive(Clone, Debug)]
pub(crate) struct TagHeap {
    heap: Vec<(f64, u32)>,
    /// Position of each id in `heap`, or `ABSENT`.
    pos: Vec<u32>,
}

#[inline]
fn less(a: (f64, u32), b: (f64, u32)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
}

impl TagHeap {
    /// An empty heap for ids `0..ids`.
    pub(crate) fn new(ids: usize) -> Self {
        assert!(ids < ABSENT as usize);
        TagHeap {
            heap: Vec::with_capacity(ids),
            pos: vec![ABSENT; ids],
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    pub(crate) fn contains(&self, id: usize) -> bool {
        self.pos[id] != ABSENT
    }

    /// The tag of `id` (which must be present).
    #[inline]
    pub(crate) fn tag(&self, id: usize) -> f64 {
        self.heap[self.pos[id] as usize].0
    }

    /// The id with the lowest `(tag, id)`.
    #[inline]
    pub(crate) fn peek(&self) -> Option<usize> {
        self.heap.first().map(|&(_, id)| id as usize)
    }

    /// Adds `id` (which must be absent) with `tag`.
    #[inline]
    pub(crate) fn insert(&mut self, id: usize, tag: f64) {
        debug_assert!(!self.contains(id) && !tag.is_nan());
        let i = self.heap.len();
        self.heap.push((tag, id as u32));
        self.pos[id] = i as u32;
        self.sift_up(i);
    }

    /// Changes the tag of `id` (which must be present).
    #[inline]
    pub(crate) fn update(&mut self, id: usize, tag: f64) {
        debug_assert!(!tag.is_nan());
        let i = self.pos[id] as usize;
        let old = self.heap[i].0;
        self.heap[i].0 = tag;
        if tag < old {
            self.sift_up(i);
        } else {
            self.sift_down(i);
        }
    }

    /// Removes `id` (which must be present).
    #[inline]
    pub(crate) fn remove(&mut self, id: usize) {
        let i = self.pos[id] as usize;
        self.pos[id] = ABSENT;
        let last = self.heap.pop().expect("remove from an empty heap");
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[last.1 as usize] = i as u32;
            if i > 0 && less(last, self.heap[(i - 1) / 2]) {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
    }

    /// Subtracts `base` from every tag and restores the heap order (ties may have formed).
    pub(crate) fn shift_down_by(&mut self, base: f64) {
        for h in &mut self.heap {
            h.0 -= base;
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        let item = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if !less(item, p) {
                break;
            }
            self.heap[i] = p;
            self.pos[p.1 as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = item;
        self.pos[item.1 as usize] = i as u32;
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let item = self.heap[i];
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && less(self.heap[r], self.heap[l]) {
                r
            } else {
                l
            };
            let child = self.heap[c];
            if !less(child, item) {
                break;
            }
            self.heap[i] = child;
            self.pos[child.1 as usize] = i as u32;
            i = c;
        }
        self.heap[i] = item;
        self.pos[item.1 as usize] = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Clone, Debug)]
    enum HOp {
        Set(usize, u16),
        Remove(usize),
        PopMin,
        Shift(u16),
    }

    fn hop() -> impl Strategy<Value = HOp> {
        prop_oneof![
            4 => (0usize..40, 0u16..200).prop_map(|(i, t)| HOp::Set(i, t)),
            1 => (0usize..40).prop_map(HOp::Remove),
            2 => Just(HOp::PopMin),
            1 => (0u16..50).prop_map(HOp::Shift),
        ]
    }

    proptest! {
        #[test]
        fn behaves_like_a_sorted_map(ops in proptest::collection::vec(hop(), 0..500)) {
            let mut h = TagHeap::new(40);
            let mut model: BTreeMap<usize, f64> = BTreeMap::new();
            for op in ops {
                match op {
                    HOp::Set(id, t) => {
                        let t = f64::from(t);
                        if h.contains(id) { h.update(id, t) } else { h.insert(id, t) }
                        model.insert(id, t);
                    }
                    HOp::Remove(id) => {
                        if h.contains(id) { h.remove(id) }
                        model.remove(&id);
                    }
                    HOp::PopMin => {
                        let want = model.iter()
                            .min_by(|a, b| a.1.total_cmp(b.1).then(a.0.cmp(b.0)))
                            .map(|(&id, _)| id);
                        prop_assert_eq!(h.peek(), want);
                        if let Some(id) = want {
                            h.remove(id);
                            model.remove(&id);
                        }
                    }
                    HOp::Shift(b) => {
                        h.shift_down_by(f64::from(b));
                        for t in model.values_mut() { *t -= f64::from(b); }
                    }
                }
                for (&id, &t) in &model {
                    prop_assert!(h.contains(id));
                    prop_assert_eq!(h.tag(id), t);
                }
                prop_assert_eq!(h.is_empty(), model.is_empty());
            }
        }
    }
}
