//! Dotted-path overrides of a TOML document: `--set KEY=VALUE` of `mslink sim` and
//! `mslink emulate`, sweep points, and `Scenario.set` in Python all go through here, so a key
//! means the same everywhere.
//!
//! Contract. A key is a dotted path (`sim.duration_s`, `link.service.0.window`); a part that
//! is a number indexes an array, and `name[i]` is the same as `name.i`. Missing tables on the
//! way are created; an array element must exist (an index past the end is an error naming the
//! array's length); a key inside a value that is neither table nor array is an error; an empty
//! part is an error. [`parse_value`] reads the value as TOML (`3`, `1e6`, `true`, `"x"`,
//! `[1, 2]`, `{ p = 0.1 }`), and anything that is not TOML as a bare string. Errors name the
//! path up to the part that failed. [`explain`] turns a configuration's "unknown field" or
//! "unknown variant" error into one that names the override that set it (with its array
//! indices, which the deserializer's own path loses) and the nearest valid name.

use std::fmt;

/// Why an override cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverrideError {
    /// The path up to the part that failed (the whole key for a malformed `KEY=VALUE`).
    pub key: String,
    /// What is wrong there.
    pub what: String,
}

impl fmt::Display for OverrideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key `{}`: {}", self.key, self.what)
    }
}

impl std::error::Error for OverrideError {}

fn error(key: impl Into<String>, what: impl Into<String>) -> OverrideError {
    OverrideError {
        key: key.into(),
        what: what.into(),
    }
}

/// Splits `KEY=VALUE` (both trimmed), as `--set` takes it.
pub fn parse_set(arg: &str) -> Result<(String, String), OverrideError> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(error(arg, "expected KEY=VALUE, e.g. sim.seed=3")),
    }
}

/// A value in TOML syntax, or the text itself as a string when it is not TOML.
pub fn parse_value(text: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

/// The parts of a dotted key, `name[i]` read as `name.i`; a part in double quotes is one name
/// whatever it holds, as in TOML (`sweep."segment.1.error.loss"` is `sweep` and
/// `segment.1.error.loss`, a sweep key).
pub fn parts(key: &str) -> Result<Vec<String>, OverrideError> {
    let mut out = Vec::new();
    let mut rest = key;
    loop {
        let (name, mut tail) = match rest.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted
                    .find('"')
                    .ok_or_else(|| error(key, "unclosed `\"` in the key"))?;
                (&quoted[..end], &quoted[end + 1..])
            }
            None => {
                let end = rest.find(['.', '[']).unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        if !name.is_empty() || !tail.starts_with('[') {
            out.push(name.to_string());
        }
        while let Some(r) = tail.strip_prefix('[') {
            let (idx, after) = r
                .split_once(']')
                .ok_or_else(|| error(key, "unclosed `[` in the key"))?;
            out.push(idx.to_string());
            tail = after;
        }
        match tail.strip_prefix('.') {
            Some(next) => rest = next,
            None if tail.is_empty() => break,
            None => {
                return Err(error(
                    key,
                    format!("unexpected `{tail}` after an index or a quoted name"),
                ))
            }
        }
    }
    if let Some(i) = out.iter().position(|p| p.is_empty()) {
        return Err(error(
            out[..i].join("."),
            format!("empty part in the key {key:?}"),
        ));
    }
    Ok(out)
}

/// Sets `key` in `root` to `value` under the rules of the module contract.
pub fn set_path(
    root: &mut toml::Value,
    key: &str,
    value: toml::Value,
) -> Result<(), OverrideError> {
    let parts = parts(key)?;
    let mut cur = root;
    for (depth, part) in parts.iter().enumerate() {
        let last = depth + 1 == parts.len();
        let here = parts[..=depth].join(".");
        cur = match cur {
            toml::Value::Table(t) => {
                if last {
                    t.insert(part.clone(), value);
                    return Ok(());
                }
                t.entry(part.clone())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            }
            toml::Value::Array(a) => {
                let i: usize = part
                    .parse()
                    .map_err(|_| error(&here, "expected an array index"))?;
                let n = a.len();
                let slot = a.get_mut(i).ok_or_else(|| {
                    error(&here, format!("index {i} is past the end ({n} elements)"))
                })?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            _ => {
                return Err(error(
                    &here,
                    "is not a table or array, cannot set a key inside it",
                ))
            }
        };
    }
    Ok(())
}

/// [`set_path`] on a table (a whole document).
pub fn set_in_table(
    root: &mut toml::Table,
    key: &str,
    value: toml::Value,
) -> Result<(), OverrideError> {
    let mut v = toml::Value::Table(std::mem::take(root));
    let r = set_path(&mut v, key, value);
    if let toml::Value::Table(t) = v {
        *root = t;
    }
    r
}

#[cfg(test)]
mod parts_tests {
    use super::*;

    #[test]
    fn quoted_parts_are_one_name_and_indices_read_as_parts() {
        let p = |k: &str| parts(k).map_err(|e| e.to_string());
        assert_eq!(
            p("segment[1].link.rate_bps").unwrap(),
            ["segment", "1", "link", "rate_bps"]
        );
        assert_eq!(p("segment.1.error").unwrap(), ["segment", "1", "error"]);
        assert_eq!(
            p("sweep.\"segment.1.link.service\"").unwrap(),
            ["sweep", "segment.1.link.service"]
        );
        assert_eq!(p("\"a.b\"[2].c").unwrap(), ["a.b", "2", "c"]);
        assert!(p("sweep.\"segment.1")
            .unwrap_err()
            .contains("unclosed `\"`"));
        assert!(p("a[1]x").unwrap_err().contains("unexpected `x`"));
        assert!(p("a..b").unwrap_err().contains("empty part"));
        assert!(p("a[1").unwrap_err().contains("unclosed `[`"));
    }
}

#[cfg(test)]
mod explain_tests {
    use super::*;

    #[test]
    fn unknown_names_get_their_key_and_the_nearest_valid_one() {
        let msg = "unknown field `rate_bp`, expected one of `kind`, `preset`, `rate_bps`, `delay_ms`\nin `segment`";
        let sets = vec![("segment.1.rate_bp".to_string(), "2e6".to_string())];
        let e = explain(msg, &sets);
        assert!(
            e.starts_with(
                "key `segment.1.rate_bp`: unknown field `rate_bp` (did you mean `rate_bps`?)"
            ),
            "{e}"
        );
        let msg = "unknown variant `selective_repat`, expected one of `raw`, `xor_fec`, `selective_repeat`";
        let sets = vec![(
            "segment.1.link.service.0.scheme".to_string(),
            "selective_repat".to_string(),
        )];
        let e = explain(msg, &sets);
        assert!(
            e.contains("(did you mean `selective_repeat`?)")
                && e.starts_with("key `segment.1.link.service.0.scheme`"),
            "{e}"
        );
        // Nothing close: no hint; another kind of message: unchanged.
        assert!(
            !explain("unknown field `zzz`, expected one of `kind`", &[]).contains("did you mean")
        );
        assert_eq!(
            explain("invalid type: string", &sets),
            "invalid type: string"
        );
        // A value refused inside a table: the override that leads there is named, index and
        // all; two that could have are both named; one elsewhere is not.
        let msg = "`burst_s` 0 is not a mean burst length\nin `segment.error`";
        let one = vec![("segment.1.error".to_string(), "{}".to_string())];
        assert!(explain(msg, &one).starts_with("key `segment.1.error`: `burst_s`"));
        let two = vec![
            ("segment.0.error.loss".to_string(), "0.1".to_string()),
            ("segment.2.error".to_string(), "{}".to_string()),
        ];
        assert!(explain(msg, &two).starts_with("keys `segment.0.error.loss`, `segment.2.error`:"));
        let elsewhere = vec![("sim.duration_s".to_string(), "1".to_string())];
        assert_eq!(explain(msg, &elsewhere), msg);
        assert_eq!(nearest("varient", &["variant", "mss"]), Some("variant"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> toml::Value {
        toml::from_str("a = 1\n[[flow]]\nrate = 2\n[[flow]]\nrate = 3\n").unwrap()
    }

    #[test]
    fn dotted_and_indexed_keys_reach_the_same_place() {
        let mut a = doc();
        let mut b = doc();
        set_path(&mut a, "flow.1.rate", parse_value("7")).unwrap();
        set_path(&mut b, "flow[1].rate", parse_value("7")).unwrap();
        assert_eq!(a, b);
        assert_eq!(a["flow"][1]["rate"].as_integer(), Some(7));
    }

    #[test]
    fn missing_tables_are_created_but_array_elements_must_exist() {
        let mut d = doc();
        set_path(&mut d, "error.p", parse_value("0.05")).unwrap();
        assert_eq!(d["error"]["p"].as_float(), Some(0.05));
        let e = set_path(&mut d, "flow.5.rate", parse_value("1")).unwrap_err();
        assert_eq!(e.key, "flow.5");
        assert!(e.what.contains("2 elements"), "{e}");
        let e = set_path(&mut d, "a.b", parse_value("1")).unwrap_err();
        assert_eq!(e.key, "a.b");
        let e = set_path(&mut d, "flow.x", parse_value("1")).unwrap_err();
        assert_eq!(e.what, "expected an array index");
    }

    #[test]
    fn malformed_keys_are_errors() {
        for k in ["", "a..b", "a.", "flow[1", "flow[1]x"] {
            assert!(set_path(&mut doc(), k, parse_value("1")).is_err(), "{k:?}");
        }
        assert!(parse_set("noequals").is_err());
        assert!(parse_set(" =3").is_err());
        assert_eq!(
            parse_set(" sim.seed = 3 ").unwrap(),
            ("sim.seed".to_string(), "3".to_string())
        );
    }

    #[test]
    fn values_are_toml_or_bare_strings() {
        assert_eq!(parse_value("1e6").as_float(), Some(1e6));
        assert_eq!(parse_value("true").as_bool(), Some(true));
        assert_eq!(parse_value("walls").as_str(), Some("walls"));
        assert_eq!(parse_value("\"a b\"").as_str(), Some("a b"));
        assert!(parse_value("{ p = 0.1 }").is_table());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(key in "[a-z0-9.\\[\\]]{0,12}", value in "\\PC{0,8}") {
            let _ = set_path(&mut doc(), &key, parse_value(&value));
        }
    }
}

/// The nearest of `candidates` to `word` when it is close enough to be a slip of the keyboard
/// (Jaro-Winkler similarity of at least 0.8), for "did you mean" hints.
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(word, c), *c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// The word between the first pair of backticks after `marker` in `msg`.
fn quoted_after<'a>(msg: &'a str, marker: &str) -> Option<&'a str> {
    let rest = &msg[msg.find(marker)? + marker.len()..];
    let start = rest.find('`')? + 1;
    let len = rest[start..].find('`')?;
    Some(&rest[start..start + len])
}

/// `msg` (a deserializer's error about a configuration) with the override among `sets` that
/// caused it named, array indices and all, and the nearest valid field or variant suggested:
/// "unknown field `rate_bp`, expected one of ..." after `--set segment.1.rate_bp=2e6` becomes
/// "key `segment.1.rate_bp`: unknown field `rate_bp` (did you mean `rate_bps`?), expected one
/// of ...". Messages of another kind come back as they are.
pub fn explain(msg: &str, sets: &[(String, String)]) -> String {
    let (word, field) = match (
        quoted_after(msg, "unknown field"),
        quoted_after(msg, "unknown variant"),
    ) {
        (Some(w), _) => (w, true),
        (None, Some(w)) => (w, false),
        _ => return with_override_named(msg, sets),
    };
    let expected: Vec<&str> = msg
        .find("expected")
        .map(|i| msg[i..].split('`').skip(1).step_by(2).collect::<Vec<_>>())
        .unwrap_or_default();
    let hint =
        nearest(word, &expected).map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
    let unknown = format!("`{word}`");
    let out = msg.replacen(&unknown, &format!("{unknown}{hint}"), 1);
    // The override that wrote the word: as a key's last part, or as its value.
    let by = sets.iter().find(|(k, v)| {
        if field {
            k.rsplit('.').next() == Some(word)
        } else {
            parse_value(v).as_str() == Some(word)
        }
    });
    match by {
        Some((k, _)) if k.starts_with("--") => format!("{k}: {out}"),
        Some((k, _)) => format!("key `{k}`: {out}"),
        None => with_override_named(&out, sets),
    }
}

/// `msg` with the override named whose key leads to the table the message ends in ("...\nin
/// `segment.error`", where the deserializer has dropped the array indices): the key keeps
/// them (`segment.1.error`). Several such overrides are all named; none leaves `msg` as it is.
fn with_override_named(msg: &str, sets: &[(String, String)]) -> String {
    let Some(path) = msg
        .rfind("in `")
        .and_then(|i| quoted_after(&msg[i..], "in"))
    else {
        return msg.to_string();
    };
    let keys: Vec<String> = sets
        .iter()
        .filter(|(k, _)| !k.starts_with("--"))
        .filter(|(k, _)| {
            let plain: Vec<&str> = k
                .split('.')
                .filter(|p| p.parse::<usize>().is_err())
                .collect();
            let plain = plain.join(".");
            plain == path || plain.starts_with(&format!("{path}."))
        })
        .map(|(k, _)| format!("`{k}`"))
        .collect();
    match keys.len() {
        0 => msg.to_string(),
        1 => format!("key {}: {msg}", keys[0]),
        _ => format!("keys {}: {msg}", keys.join(", ")),
    }
}
