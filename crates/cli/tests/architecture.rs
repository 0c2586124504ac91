//! The repository's record of its own architecture holds: the crate graph in
//! docs/architecture.md is the one the `Cargo.toml` files declare (normal and
//! target-specific dependencies), and nothing in the code,
//! docs or Python package points at files outside the repository.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `package name -> mslink crates in [dependencies]` for every workspace member.
fn declared() -> BTreeMap<String, BTreeSet<String>> {
    let ws: toml::Table =
        toml::from_str(&std::fs::read_to_string(root().join("Cargo.toml")).unwrap()).unwrap();
    let members = ws["workspace"]["members"].as_array().unwrap();
    let mut graph = BTreeMap::new();
    for m in members {
        let dir = root().join(m.as_str().unwrap());
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let t: toml::Table = toml::from_str(&text).unwrap();
        let name = t["package"]["name"].as_str().unwrap().to_string();
        // [dependencies] and every [target.'cfg(..)'.dependencies].
        let mut tables: Vec<&toml::Table> = t
            .get("dependencies")
            .and_then(|d| d.as_table())
            .into_iter()
            .collect();
        if let Some(targets) = t.get("target").and_then(|x| x.as_table()) {
            for tt in targets.values() {
                tables.extend(tt.get("dependencies").and_then(|d| d.as_table()));
            }
        }
        let deps = tables
            .iter()
            .flat_map(|d| d.keys())
            .filter(|k| k.starts_with("mslink-"))
            .cloned()
            .collect();
        graph.insert(name, deps);
    }
    graph
}

/// The same map read from the table between the crate-graph markers of docs/architecture.md.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = doc
        .find("<!-- crate-graph: begin -->")
        .expect("begin marker");
    let end = doc.find("<!-- crate-graph: end -->").expect("end marker");
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split(',')
            .map(|s| s.trim().trim_matches('`').to_string())
            .filter(|s| s.starts_with("mslink-"))
            .collect()
    };
    doc[start..end]
        .lines()
        .filter(|l| l.starts_with("| `mslink-"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            (
                cells[1].trim().trim_matches('`').to_string(),
                names(cells[2]),
            )
        })
        .collect()
}

#[test]
fn crate_graph_in_the_docs_matches_cargo() {
    let (want, got) = (declared(), documented());
    assert!(want.len() >= 10, "workspace members read: {want:?}");
    assert_eq!(
        got, want,
        "docs/architecture.md's crate table differs from the Cargo.toml files"
    );
}

#[test]
fn dependencies_point_down_the_table() {
    // Each crate may depend only on crates listed above it.
    let doc = documented();
    let order: Vec<String> = {
        let text = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
        text.lines()
            .filter(|l| l.starts_with("| `mslink-"))
            .map(|l| {
                l.split('|')
                    .nth(1)
                    .unwrap()
                    .trim()
                    .trim_matches('`')
                    .to_string()
            })
            .collect()
    };
    for (i, name) in order.iter().enumerate() {
        for d in &doc[name] {
            let j = order.iter().position(|o| o == d).unwrap_or(usize::MAX);
            assert!(j < i, "{name} depends on {d}, which is not above it");
        }
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with('.') || name == "target" || name == "__pycache__" {
            continue;
        }
        if p.is_dir() {
            files(&p, out);
        } else if matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("rs" | "md" | "toml" | "py")
        ) {
            out.push(p);
        }
    }
}

#[test]
fn nothing_points_outside_the_repository() {
    let mut all = vec![root().join("README.md")];
    for d in [
        "crates",
        "docs",
        "python",
        "fuzz",
        "examples",
        "scenarios",
        "tests",
    ] {
        if root().join(d).is_dir() {
            files(&root().join(d), &mut all);
        }
    }
    // The forbidden words are assembled so that this file does not match itself.
    let design = format!("{}.md", "DESIGN");
    let shared = format!("../{}/", "shared");
    let bad: Vec<String> = all
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).ok()?;
            (text.contains(&design) || text.contains(&shared)).then(|| p.display().to_string())
        })
        .collect();
    assert!(
        bad.is_empty(),
        "files citing paths outside the repository: {bad:?}"
    );
}

#[test]
fn every_crate_warns_of_missing_docs() {
    for (name, _) in declared() {
        let dir = root()
            .join("crates")
            .join(name.trim_start_matches("mslink-"));
        let lib = ["src/lib.rs", "src/main.rs"]
            .iter()
            .map(|f| dir.join(f))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{name}: no src/lib.rs or src/main.rs"));
        let text = std::fs::read_to_string(&lib).unwrap();
        assert!(
            text.contains("#![warn(missing_docs)]") || text.contains("#![deny(missing_docs)]"),
            "{}: no #![warn(missing_docs)]",
            lib.display()
        );
    }
}

#[test]
fn protocol_crates_forbid_clocks_sleeps_threads_sockets_and_files() {
    // docs/architecture.md rule 1, enforced by clippy with each protocol crate's clippy.toml;
    // the tunnel's and the stack's drivers allow it module by module.
    for krate in ["wire", "link", "channel", "tunnel", "stack"] {
        let path = root().join("crates").join(krate).join("clippy.toml");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let conf: toml::Table = toml::from_str(&text).unwrap();
        let listed = |key: &str| -> BTreeSet<String> {
            conf.get(key)
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten()
                .filter_map(|v| v.get("path").or(Some(v)).and_then(|p| p.as_str()))
                .map(str::to_string)
                .collect()
        };
        let (methods, types) = (listed("disallowed-methods"), listed("disallowed-types"));
        for m in [
            "std::time::Instant::now",
            "std::time::SystemTime::now",
            "std::thread::sleep",
            "std::thread::spawn",
            "std::fs::read_to_string",
            "std::fs::File::open",
        ] {
            assert!(
                methods.contains(m),
                "{}: {m} is not disallowed",
                path.display()
            );
        }
        for t in [
            "std::time::Instant",
            "std::net::UdpSocket",
            "std::net::TcpStream",
        ] {
            assert!(
                types.contains(t),
                "{}: {t} is not disallowed",
                path.display()
            );
        }
    }
}
#[test]
fn the_cli_is_argument_parsing_and_printing() {
    // docs/architecture.md: the experiment pipeline, the emulator verb and the benchmarks' files
    // and tables are libraries; what is left in mslink-cli is options, checks and output.
    let n = rust_lines(&root().join("crates/cli/src"));
    assert!(
        n < 2_000,
        "crates/cli/src holds {n} lines of Rust; move what is not argument parsing or printing into the library it belongs to"
    );
}

/// Lines of every `.rs` file under `dir`.
fn rust_lines(dir: &Path) -> usize {
    let mut all = Vec::new();
    files(dir, &mut all);
    all.iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| std::fs::read_to_string(p).unwrap().lines().count())
        .sum()
}

/// Non-test functions over [`MAX_FN_LINES`] lines in `crates/*/src` (from the `fn` line to its
/// closing brace, found by indentation as rustfmt lays code out), as `file:fn`.
fn long_functions() -> BTreeSet<String> {
    let mut all = Vec::new();
    files(&root().join("crates"), &mut all);
    let mut long = BTreeSet::new();
    for p in all
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
    {
        let rel = p.strip_prefix(root()).unwrap_or(p).display().to_string();
        let rel = rel.trim_start_matches("./").replace("../", "");
        if !rel.contains("/src/") {
            continue;
        }
        let text = std::fs::read_to_string(p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // Unit tests sit at the end of a file, behind #[cfg(test)].
        let end = lines
            .iter()
            .position(|l| l.trim() == "#[cfg(test)]")
            .unwrap_or(lines.len());
        let mut i = 0;
        while i < end {
            let l = lines[i];
            let t = l.trim_start();
            let name = [
                "pub fn ",
                "pub(crate) fn ",
                "pub(super) fn ",
                "fn ",
                "const fn ",
                "pub const fn ",
            ]
            .iter()
            .find_map(|k| t.strip_prefix(k))
            .map(|r| {
                r.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next()
                    .unwrap_or("")
            });
            let Some(name) = name else {
                i += 1;
                continue;
            };
            let indent = l.len() - t.len();
            let mut j = i;
            while j < lines.len()
                && !lines[j].trim_end().ends_with('{')
                && !lines[j].trim_end().ends_with(';')
            {
                j += 1;
            }
            if j >= lines.len() || lines[j].trim_end().ends_with(';') {
                i = j + 1;
                continue;
            }
            let close = format!("{}}}", " ".repeat(indent));
            let mut k = j + 1;
            while k < lines.len() && !lines[k].starts_with(&close) {
                k += 1;
            }
            if k - i + 1 > MAX_FN_LINES {
                long.insert(format!("{rel}:{name}"));
            }
            i = k + 1;
        }
    }
    long
}

/// docs/architecture.md: no non-test function over this many lines.
const MAX_FN_LINES: usize = 120;

/// The functions still over the limit, which may only shrink (none left).
const LONG_FUNCTIONS_LEFT: &[&str] = &[];

#[test]
fn no_function_is_longer_than_the_limit() {
    let long = long_functions();
    let allowed: BTreeSet<String> = LONG_FUNCTIONS_LEFT.iter().map(|s| s.to_string()).collect();
    let new: Vec<&String> = long.difference(&allowed).collect();
    assert!(
        new.is_empty(),
        "functions over {MAX_FN_LINES} lines: {new:?}; split them by phase"
    );
    let fixed: Vec<&String> = allowed.difference(&long).collect();
    assert!(
        fixed.is_empty(),
        "now within {MAX_FN_LINES} lines, take them out of LONG_FUNCTIONS_LEFT: {fixed:?}"
    );
}
