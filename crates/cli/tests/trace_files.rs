//! A large error trace file is streamed and held packed (issue 16: a 100 MB trace cost 1 GB of
//! RAM): its stored size is a fraction of the file, checked in process on the trace itself (no
//! timing, no RSS), and replay gives the frames the file lists.

use mslink_channel::trace::Replay;
use mslink_channel::{ErrorModel, Outcome};
use mslink_link::Instant;
use rand::SeedableRng;

/// One block of the file: outcomes alternating, so merging runs cannot help, and every kind of
/// entry.
const BLOCK: &str = "ok\nloss\n";
const TAIL: &str = "trunc 120\nbits 17 903\n";
const PAIRS: usize = 500;

fn frame(i: u64) -> Outcome {
    let per_block = 2 * PAIRS as u64 + 2;
    match i % per_block {
        k if k < 2 * PAIRS as u64 => {
            if k % 2 == 0 {
                Outcome::Delivered
            } else {
                Outcome::Lost
            }
        }
        k if k == 2 * PAIRS as u64 => Outcome::Truncated { at: 120 },
        _ => Outcome::Corrupted {
            bits: vec![17, 903],
        },
    }
}

#[test]
fn a_32_mb_trace_is_held_in_under_a_third_of_its_size() {
    let path = std::env::temp_dir().join(format!("mslink-big-{}.trace", std::process::id()));
    let block = format!("{}{TAIL}", BLOCK.repeat(PAIRS));
    let blocks = 32_000_000 / block.len();
    {
        use std::io::Write;
        let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        writeln!(w, "# {blocks} blocks").unwrap();
        for _ in 0..blocks {
            w.write_all(block.as_bytes()).unwrap();
        }
    }
    let file_bytes = std::fs::metadata(&path).unwrap().len() as usize;
    let t = mslink_cli::read_error_trace(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let frames_per_block = 2 * PAIRS as u64 + 2;
    assert_eq!(t.frames(), blocks as u64 * frames_per_block);
    // One byte per ok/loss line (3-5 bytes of text), a few for the others: about a quarter.
    assert!(
        t.heap_bytes() < file_bytes / 3,
        "{} bytes held for a {file_bytes}-byte file",
        t.heap_bytes()
    );
    let mut replay = Replay::packed(std::sync::Arc::new(t));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    for i in 0..3 * frames_per_block {
        assert_eq!(
            replay.outcome(Instant::ZERO, 1000, &mut rng),
            frame(i),
            "frame {i}"
        );
    }
}
