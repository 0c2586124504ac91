//! The checks of the `tun_offload` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: one TUN read, the 10-byte virtio-net header then the packet
//! (crates/io/src/gso.rs). Invariants: the read gives IP packets, or an error and no
//! output; the write planner (crates/io/src/coalesce.rs) carries each resulting packet
//! exactly once, and a coalesced write cut again gives back exactly the packets it carried.
//! Returns what the read gave and the packet count of each planned write.

use mslink_io::coalesce::plan;
use mslink_io::gso::{process, OffloadError, Processed};

/// What one read gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The read's verdict.
    pub processed: Result<Processed, OffloadError>,
    /// Packets carried by each write the planner made of the output.
    pub writes: Vec<usize>,
}

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> Outcome {
    let mut read = data.to_vec();
    let mut out: Vec<Vec<u8>> = Vec::new();
    let res = process(&mut read, &mut Vec::new(), &mut |p| out.push(p.to_vec()));
    if res.is_err() {
        assert!(out.is_empty());
    }
    let mut writes = Vec::new();
    let mut head = Vec::new();
    let mut i = 0;
    while i < out.len() {
        let p = plan(out[i..].iter().map(|p| p.as_slice()), &mut head);
        assert!(p.count >= 1 && i + p.count <= out.len());
        if p.count > 1 {
            let mut w = head.clone();
            for q in &out[i..i + p.count] {
                w.extend_from_slice(&q[p.header_len..]);
            }
            let mut back = Vec::new();
            process(&mut w, &mut Vec::new(), &mut |q| back.push(q.to_vec())).expect("own write");
            assert_eq!(&back[..], &out[i..i + p.count]);
        }
        writes.push(p.count);
        i += p.count;
    }
    Outcome {
        processed: res,
        writes,
    }
}
