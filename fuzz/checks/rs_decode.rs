//! The checks of the `rs_decode` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: `[sel][word...]`: `sel % 64 + 1` parity symbols, the received word is the first
//! (at most 255) bytes after it. Invariant: the decoder never panics; when it claims success
//! the word is a codeword, when it fails the word is left as it was. Returns the decoder's
//! verdict (`None` for an empty input).

use mslink_link::fec::{RsCodec, RsError};

/// Codecs for 1-64 parity symbols, built once (building one computes its tables).
static CODECS: std::sync::OnceLock<Vec<RsCodec>> = std::sync::OnceLock::new();

/// The parity count a selector byte picks.
pub fn parity(sel: u8) -> usize {
    sel as usize % 64 + 1
}

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> Option<Result<usize, RsError>> {
    let (&sel, rest) = data.split_first()?;
    let codecs = CODECS.get_or_init(|| {
        (1..=64)
            .map(|n| RsCodec::new(n).expect("1-64 parity symbols are valid"))
            .collect()
    });
    let codec = &codecs[parity(sel) - 1];
    let n = rest.len().min(255);
    let mut word = rest[..n].to_vec();
    let before = word.clone();
    let verdict = codec.decode(&mut word);
    match verdict {
        Ok(_) => {
            let mut again = word.clone();
            assert_eq!(
                codec.decode(&mut again),
                Ok(0),
                "a corrected word must be a codeword"
            );
        }
        Err(_) => assert_eq!(word, before, "a failed decode leaves the word untouched"),
    }
    Some(verdict)
}
