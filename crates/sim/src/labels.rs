//! Readable, typed names for sweep values: what a results table's column or a figure's legend
//! shows instead of the TOML text of the value.
//!
//! Contract. [`label`] reads one sweep value (TOML text, as `Scenario::sweep_points` gives it)
//! and names it: numbers stay numbers (typed columns, numeric axes), a service table becomes
//! its scheme's short name with any non-default settings that set it apart left to the raw
//! column ("SR"), a list of services becomes the first one with the others in parentheses
//! ("SR (OOS RLP)", 004's multi-service configurations), an error model its model and
//! parameters ("pattern good=95 bad=5"), a device its kind, and anything else its compact
//! TOML text. The same text always gives the same label.

use crate::overrides::parse_value;

/// A sweep value's name.
#[derive(Clone, Debug, PartialEq)]
pub enum Label {
    /// A number (integer or float, as written).
    Number(f64),
    /// A name.
    Text(String),
}

impl Label {
    /// As text: numbers as written by `f64`'s shortest round-trip form.
    pub fn text(&self) -> String {
        match self {
            Label::Number(x) => format!("{x}"),
            Label::Text(t) => t.clone(),
        }
    }
}

/// The label of a sweep value given as TOML text.
pub fn label(value_text: &str) -> Label {
    let v = parse_value(value_text);
    match &v {
        toml::Value::Integer(i) => Label::Number(*i as f64),
        toml::Value::Float(x) => Label::Number(*x),
        _ => Label::Text(name(&v)),
    }
}

fn name(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(x) => format!("{x}"),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(items) => {
            let names: Vec<String> = items.iter().map(name).collect();
            match names.split_first() {
                None => "none".into(),
                Some((first, [])) => first.clone(),
                Some((first, rest)) => format!("{first} ({})", rest.join(", ")),
            }
        }
        toml::Value::Table(t) => {
            if let Some(s) = t.get("scheme").and_then(|s| s.as_str()) {
                return mslink_link::service::scheme_title(s)
                    .map(str::to_string)
                    .unwrap_or_else(|| s.to_string());
            }
            for tag in ["model", "kind"] {
                if let Some(m) = t.get(tag).and_then(|s| s.as_str()) {
                    let rest: Vec<String> = t
                        .iter()
                        .filter(|(k, _)| k.as_str() != tag)
                        .map(|(k, x)| format!("{k}={}", name(x)))
                        .collect();
                    return if rest.is_empty() {
                        m.to_string()
                    } else {
                        format!("{m} {}", rest.join(" "))
                    };
                }
            }
            v.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_get_readable_names() {
        assert_eq!(label("131072"), Label::Number(131072.0));
        assert_eq!(label("0.05"), Label::Number(0.05));
        assert_eq!(label("true"), Label::Text("true".into()));
        assert_eq!(
            label(r#"{ name = "tcp", scheme = "selective_repeat", timeout_ms = 20 }"#),
            Label::Text("SR".into())
        );
        assert_eq!(
            label(r#"[{ name = "tcp", scheme = "selective_repeat" }, { name = "cbr", scheme = "oos_rlp", max_retransmissions = 1 }]"#)
                .text(),
            "SR (OOS RLP)"
        );
        assert_eq!(
            label(r#"{ model = "pattern", min_bytes = 200, good = 95, bad = 5 }"#).text(),
            "pattern bad=5 good=95 min_bytes=200"
        );
        assert_eq!(
            label(r#"{ kind = "drop_tail", limit = 50 }"#).text(),
            "drop_tail limit=50"
        );
        assert_eq!(label(r#""walls""#).text(), "walls");
        assert_eq!(label("12.5").text(), "12.5");
    }
}
