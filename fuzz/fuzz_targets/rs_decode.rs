//! Fuzz target: the Reed-Solomon decoder on arbitrary received words (any parity count, any
//! length, optional erasures). It must never panic; when it claims success the word must be a
//! codeword (its parity checks), and when it fails the word must be left as it was.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_link::fec::RsCodec;

/// Codecs for 1-64 parity symbols, built once (building one computes its tables).
static CODECS: std::sync::OnceLock<Vec<RsCodec>> = std::sync::OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let codecs = CODECS.get_or_init(|| (1..=64).map(|n| RsCodec::new(n).expect("1-64 parity symbols are valid")).collect());
    let codec = &codecs[sel as usize % 64];
    let n = rest.len().min(255);
    let mut word = rest[..n].to_vec();
    let before = word.clone();
    match codec.decode(&mut word) {
        Ok(_) => {
            let mut again = word.clone();
            assert_eq!(codec.decode(&mut again), Ok(0), "a corrected word must be a codeword");
        }
        Err(_) => assert_eq!(word, before, "a failed decode leaves the word untouched"),
    }
});
