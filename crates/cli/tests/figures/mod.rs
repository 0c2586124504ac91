//! Checks shared by the CLI tests of the bench figures: a PNG that decodes at the chart size
//! with something drawn, and an SVG that parses as XML with lines and the expected words.

use std::path::Path;

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// `stem.png` starts with the PNG signature, decodes to 960x600 and is not blank.
pub fn check_png(stem: &Path) {
    let path = stem.with_extension("png");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(bytes[..8], PNG_SIGNATURE, "{}", path.display());
    let mut reader = png::Decoder::new(&bytes[..]).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (960, 600), "{}", path.display());
    let drawn = buf[..info.buffer_size()]
        .chunks(3)
        .filter(|p| p != &[255, 255, 255])
        .count();
    assert!(
        drawn > 5_000,
        "{}: {drawn} non-white pixels",
        path.display()
    );
}

/// `stem.svg` parses as XML with an `svg` root, draws lines and contains every word of `words`.
pub fn check_svg(stem: &Path, words: &[&str]) {
    let path = stem.with_extension("svg");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc =
        roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let lines = doc
        .descendants()
        .filter(|n| matches!(n.tag_name().name(), "polyline" | "path"))
        .count();
    assert!(lines > 0, "{}: nothing drawn", path.display());
    let all: String = doc
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join(" ");
    for w in words {
        assert!(all.contains(w), "{}: no {w:?} in {all}", path.display());
    }
}

/// Both files of a figure.
pub fn check_figure(stem: &Path, words: &[&str]) {
    check_png(stem);
    check_svg(stem, words);
}
