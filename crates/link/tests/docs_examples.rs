//! Every TOML example in docs/engine.md parses as a link configuration, and the complete
//! configuration example also validates: the docs cannot drift from the code.

use mslink_link::config::LinkConfig;

fn toml_blocks(doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in doc.lines() {
        match (&mut cur, line.trim_start()) {
            (None, "```toml") => cur = Some(String::new()),
            (Some(b), "```") => {
                out.push(std::mem::take(b));
                cur = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    out
}

#[test]
fn engine_doc_examples_parse() {
    let doc = include_str!("../../../docs/engine.md");
    let blocks = toml_blocks(doc);
    assert!(blocks.len() >= 3, "expected several toml examples");
    for b in &blocks {
        let c: LinkConfig =
            toml::from_str(b).unwrap_or_else(|e| panic!("docs/engine.md example fails:\n{b}\n{e}"));
        if b.contains("frame_size") {
            c.validate().unwrap_or_else(|e| {
                panic!("docs/engine.md full example does not validate:\n{b}\n{e}")
            });
        }
    }
}
