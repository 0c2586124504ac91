//! The bracket text naming the link in a shell's prompt (`MSLINK_PROMPT`).
//!
//! Contract. [`prompt_text`] is pure: from the link file's path (if any) and the configuration
//! it makes a short label, `[mslink wlan exponential sr+oos]` or `[mslink 10Mbit/s 20ms 5% sr]`,
//! holding only characters a shell's prompt shows literally.

use std::path::Path;

use crate::EmuConfig;

/// A number without trailing zeros: 10, 86.4, 0.059.
fn short_number(x: f64) -> String {
    let t = format!("{x:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The bracket text naming the link in a shell's prompt (`MSLINK_PROMPT`), as Mahimahi's
/// `[delay 20 ms]`: the link file's stem, else the capacity (trace stem or rate) and the
/// one-way delay; the loss (independent: its percentage; other models: their name); the
/// services' schemes, abbreviated as 004's tables do (SR, GBN, ...) in lower case, joined
/// by `+`. E.g. `[mslink wlan exponential sr+oos]`, `[mslink 10Mbit/s 20ms 5% sr]`.
pub fn prompt_text(link: Option<&Path>, cfg: &EmuConfig) -> String {
    let mut words = vec!["mslink".to_string()];
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    match link {
        Some(file) => words.push(stem(file)),
        None => {
            if let Some(trace) = &cfg.capacity_trace {
                words.push(stem(Path::new(trace)));
            } else if cfg.rate_bps > 0.0 {
                let (div, unit) = match cfg.rate_bps {
                    r if r >= 1e9 => (1e9, "Gbit/s"),
                    r if r >= 1e6 => (1e6, "Mbit/s"),
                    r if r >= 1e3 => (1e3, "kbit/s"),
                    _ => (1.0, "bit/s"),
                };
                words.push(format!("{}{unit}", short_number(cfg.rate_bps / div)));
            }
            if cfg.delay_ms > 0.0 {
                words.push(format!("{}ms", short_number(cfg.delay_ms)));
            }
        }
    }
    use mslink_channel::ErrorModelConfig as E;
    match &cfg.error {
        E::Perfect => {}
        E::Independent { loss } => words.push(format!("{}%", short_number(loss * 100.0))),
        other => {
            let name = serde_json::to_value(other)
                .ok()
                .and_then(|v| v["model"].as_str().map(str::to_string));
            words.extend(name);
        }
    }
    let schemes: Vec<&str> = cfg
        .link
        .services
        .iter()
        .map(|s| match s.config.scheme() {
            "selective_repeat" => "sr",
            "go_back_n" => "gbn",
            "karn_rlp" => "karn",
            "oos_rlp" => "oos",
            "persistent" => "parq",
            "xor_fec" => "xor",
            "rs_fec" => "rs",
            other => other,
        })
        .collect();
    words.push(schemes.join("+"));
    // Only what a prompt shows literally: bash and zsh expand `\`, `$`, `!`, backquotes.
    let text: String = words
        .join(" ")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || " ._+-%/".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("[{}]", text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_names_the_link() {
        let cfg = |text: &str| toml::from_str::<EmuConfig>(text).unwrap();
        let c = cfg(
            "rate_bps = 10e6\ndelay_ms = 20\n[error]\nmodel = 'independent'\nloss = 0.05\n\
                     [[link.service]]\nname = 'tcp'\nscheme = 'selective_repeat'\n",
        );
        assert_eq!(prompt_text(None, &c), "[mslink 10Mbit/s 20ms 5% sr]");
        // The file's stem stands for its rate and delay; every service is named.
        let wlan = concat!(env!("CARGO_MANIFEST_DIR"), "/../../links/wlan.toml");
        let c = cfg(&std::fs::read_to_string(wlan).unwrap());
        assert_eq!(
            prompt_text(Some(Path::new(wlan)), &c),
            "[mslink wlan exponential sr+oos]"
        );
        // Defaults: an unlimited, perfect link with one raw service.
        assert_eq!(prompt_text(None, &cfg("")), "[mslink raw]");
        let c = cfg(
            "rate_bps = 86400\ndelay_ms = 100\ncapacity_trace = 'traces/12mbps.mahi'\n\
                     [error]\nmodel = 'independent'\nloss = 0.059\n",
        );
        assert_eq!(prompt_text(None, &c), "[mslink 12mbps 100ms 5.9% raw]");
        // Nothing a shell would expand gets into it.
        let odd = prompt_text(Some(Path::new("$(rm -rf x)`.toml")), &cfg(""));
        assert!(!odd.contains(['$', '`', '(', '\\']), "{odd}");
    }
}
