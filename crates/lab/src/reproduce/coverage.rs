//! Coverage of the papers: `claims/coverage/<paper>.toml` lists every quantitative or
//! comparative statement of a paper, in the paper's order, and maps each to the claims that
//! check it, to the input of our model it is (a parameter of the setup), or to the reason
//! nothing here checks it.
//!
//! Contract. [`load`] returns None when the claims folder has no `coverage/` folder (a small
//! ledger made for a test); otherwise it refuses, naming the file, the statement and the key: a
//! paper of the ledger without its coverage file, a file whose `paper` is not its name, a
//! statement with none or several of `claims`, `input`, `not_checked` (or an empty one), a claim
//! id that is not a claim of that paper, and a claim of the paper that no statement names (a
//! check of nothing the paper says). [`Coverage::summary`] counts each paper's statements by
//! kind.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::ledger::Ledger;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    paper: String,
    #[serde(default)]
    statement: Vec<StatementSpec>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StatementSpec {
    #[serde(rename = "where")]
    place: String,
    text: String,
    claims: Option<Vec<String>>,
    input: Option<String>,
    not_checked: Option<String>,
}

/// What a statement is mapped to.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mapping {
    /// Checked by these claims.
    Claims(Vec<String>),
    /// An input of the model (a parameter of the setup), and where we use it.
    Input(String),
    /// Not checked, and why.
    NotChecked(String),
}

/// One statement of a paper.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Statement {
    /// Section, figure or table.
    #[serde(rename = "where")]
    pub place: String,
    /// The statement, as the paper makes it.
    pub text: String,
    /// What it is mapped to.
    pub mapping: Mapping,
}

/// Every paper's statements.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Coverage {
    /// Paper -> its statements in order.
    pub papers: BTreeMap<String, Vec<Statement>>,
}

/// A paper's statements by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// All statements.
    pub statements: usize,
    /// Checked by claims.
    pub checked: usize,
    /// Inputs of the model.
    pub inputs: usize,
    /// Not checked, with a reason.
    pub not_checked: usize,
}

impl Coverage {
    /// Statement counts per paper.
    pub fn summary(&self) -> BTreeMap<String, Counts> {
        self.papers
            .iter()
            .map(|(p, st)| {
                let mut c = Counts {
                    statements: st.len(),
                    ..Counts::default()
                };
                for s in st {
                    match s.mapping {
                        Mapping::Claims(_) => c.checked += 1,
                        Mapping::Input(_) => c.inputs += 1,
                        Mapping::NotChecked(_) => c.not_checked += 1,
                    }
                }
                (p.clone(), c)
            })
            .collect()
    }
}

/// The coverage files of `claims_dir/coverage`, checked against the whole `ledger`.
pub fn load(claims_dir: &Path, ledger: &Ledger) -> Result<Option<Coverage>> {
    let dir = claims_dir.join("coverage");
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut cov = Coverage::default();
    for paper in ledger.papers.keys() {
        let path = dir.join(format!("{paper}.toml"));
        let statements = load_file(&path, paper, ledger)
            .with_context(|| format!("coverage file {}", path.display()))?;
        cov.papers.insert(paper.clone(), statements);
    }
    Ok(Some(cov))
}

fn load_file(path: &Path, paper: &str, ledger: &Ledger) -> Result<Vec<Statement>> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!("reading it (every paper of the ledger needs its list of statements; paper {paper} has claims)")
    })?;
    let spec: FileSpec = toml::from_str(&text)?;
    if spec.paper != paper {
        bail!("paper = {:?}, but the file is {paper}'s", spec.paper);
    }
    let ids: BTreeSet<&str> = ledger
        .claims
        .iter()
        .filter(|c| c.paper == paper)
        .map(|c| c.id.as_str())
        .collect();
    let mut named = BTreeSet::new();
    let mut out = Vec::with_capacity(spec.statement.len());
    for (i, s) in spec.statement.into_iter().enumerate() {
        let at = || format!("statement {} ({}: {:?})", i + 1, s.place, short(&s.text));
        if s.text.trim().is_empty() || s.place.trim().is_empty() {
            bail!("{}: where and text must not be empty", at());
        }
        let mapping = match (&s.claims, &s.input, &s.not_checked) {
            (Some(c), None, None) => {
                if c.is_empty() {
                    bail!(
                        "{}: claims = [] names no claim; give input or not_checked instead",
                        at()
                    );
                }
                for id in c {
                    if !ids.contains(id.as_str()) {
                        bail!("{}: {id} is not a claim of paper {paper}", at());
                    }
                    named.insert(id.clone());
                }
                Mapping::Claims(c.clone())
            }
            (None, Some(w), None) if !w.trim().is_empty() => Mapping::Input(w.clone()),
            (None, None, Some(w)) if !w.trim().is_empty() => Mapping::NotChecked(w.clone()),
            _ => bail!(
                "{}: needs exactly one of claims = [..], input = \"where we use it\", \
                 not_checked = \"why\" (not empty)",
                at()
            ),
        };
        out.push(Statement {
            place: s.place,
            text: s.text,
            mapping,
        });
    }
    let orphans: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| !named.contains(*id))
        .collect();
    if !orphans.is_empty() {
        bail!(
            "claims no statement names (each claim checks something the paper says: add the \
             statement, or name the claim in it): {}",
            orphans.join(", ")
        );
    }
    Ok(out)
}

fn short(s: &str) -> String {
    let s: String = s.chars().take(60).collect();
    s
}
