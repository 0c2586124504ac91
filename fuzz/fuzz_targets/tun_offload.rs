//! Fuzz target: the TUN offloads (crates/emu/src/gso.rs, coalesce.rs) on arbitrary reads.
//! A read either gives IP packets or an error with no output; whatever packets come out, the
//! write planner carries each exactly once, and a coalesced write cut again gives them back.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_emu::coalesce::plan;
use mslink_emu::gso::process;

fuzz_target!(|data: &[u8]| {
    let mut read = data.to_vec();
    let mut out: Vec<Vec<u8>> = Vec::new();
    let res = process(&mut read, &mut Vec::new(), &mut |p| out.push(p.to_vec()));
    if res.is_err() {
        assert!(out.is_empty());
    }
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
        i += p.count;
    }
});
