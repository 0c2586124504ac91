//! docs/simulator.md's table of the flows table's columns is the one declaration of them
//! (`mslink_sim::world::columns`), made by `markdown_table`.

#[test]
fn the_column_table_in_the_docs_is_the_declared_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/simulator.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = (
        "<!-- flow-columns: begin -->\n",
        "<!-- flow-columns: end -->",
    );
    let a = doc.find(begin).expect("begin marker") + begin.len();
    let b = doc.find(end).expect("end marker");
    let want = mslink_sim::world::columns::markdown_table();
    assert!(
        doc[a..b] == want,
        "{}'s flow column table differs from crates/sim/src/world/columns.rs; between the markers it should read:\n{want}",
        path.display()
    );
}
