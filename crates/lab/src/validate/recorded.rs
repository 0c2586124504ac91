//! The real side of `mslink validate` as an earlier run recorded it beside its report: the
//! kernel's rows of `runs.csv` and its settings in `kernel.txt`.
//!
//! Contract. The iperf3 documents in `OUT/real/` stay on the machine that measured them (they
//! are large and git-ignored); what a report needs of them is in `OUT/runs.csv` (every
//! transfer's numbers, written as Rust prints an `f64`, which reads back to the same value)
//! and `OUT/kernel.txt` (the kernel release and TCP settings, the format of `real/sysctl.txt`).
//! So `--reuse-real` re-checks the simulator against the kernel on any machine with a clone:
//! [`rows`] reads the kernel's rows of an earlier `runs.csv` for the points and repetitions
//! asked, matched by the link's settings, the control and the repetition, and refuses a file
//! whose transfers were of another length (`seconds`), whose header lacks a column, or whose
//! line does not parse, naming the file, the line and the column.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::{Cc, Options, Row, Side};

/// The settings file beside `runs.csv` (the format of `real/sysctl.txt`: the kernel release,
/// then `key=value` lines).
pub const SETTINGS: &str = "kernel.txt";

/// The columns of runs.csv, in order.
pub const COLUMNS: [&str; 13] = [
    "rate_bps",
    "rtt_ms",
    "loss",
    "burst_frames",
    "cc",
    "side",
    "rep",
    "seconds",
    "goodput_bps",
    "retrans_rate",
    "timeouts",
    "srtt_p50_ms",
    "srtt_p95_ms",
];

/// The kernel's rows of `csv` (an earlier run's runs.csv) for the links of `o`, keyed by
/// (index into `o.links`, control, repetition); rows of links `o` does not have are skipped.
pub fn rows(o: &Options, csv: &Path) -> Result<BTreeMap<(usize, Cc, u32), Row>> {
    let text =
        std::fs::read_to_string(csv).with_context(|| format!("reading {}", csv.display()))?;
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = lines.next().map_or(vec![], |(_, h)| h.split(',').collect());
    let col = |name: &str| {
        header.iter().position(|h| *h == name).with_context(|| {
            format!(
                "{}: no `{name}` column (a runs.csv of mslink validate has {})",
                csv.display(),
                COLUMNS.join(",")
            )
        })
    };
    let at: Vec<usize> = COLUMNS.iter().map(|c| col(c)).collect::<Result<_>>()?;
    let mut out = BTreeMap::new();
    for (i, line) in lines {
        let f: Vec<&str> = line.split(',').collect();
        let field = |c: usize| -> Result<&str> {
            f.get(at[c]).copied().with_context(|| {
                format!(
                    "{} line {}: no `{}` field",
                    csv.display(),
                    i + 1,
                    COLUMNS[c]
                )
            })
        };
        let num = |c: usize| -> Result<f64> {
            let s = field(c)?;
            s.parse::<f64>().with_context(|| {
                format!(
                    "{} line {}: `{}` is {s:?}, not a number",
                    csv.display(),
                    i + 1,
                    COLUMNS[c]
                )
            })
        };
        if field(5)? != Side::Real.name() {
            continue;
        }
        let seconds = num(7)?;
        if seconds != o.seconds {
            bail!(
                "{} line {}: a {seconds} s transfer, not {} s: give the earlier run's --seconds",
                csv.display(),
                i + 1,
                o.seconds
            );
        }
        let (rate, rtt, loss, burst) = (num(0)?, num(1)?, num(2)?, num(3)?);
        let Some(li) = o.links.iter().position(|l| {
            l.rate_bps == rate && l.rtt_ms == rtt && l.loss.columns() == (loss, burst)
        }) else {
            continue;
        };
        let cc =
            Cc::parse(field(4)?).with_context(|| format!("{} line {}", csv.display(), i + 1))?;
        let rep = field(6)?.parse::<u32>().with_context(|| {
            format!(
                "{} line {}: `rep` is not a repetition number",
                csv.display(),
                i + 1
            )
        })?;
        let row = Row {
            link: li,
            cc,
            side: Side::Real,
            rep,
            goodput_bps: num(8)?,
            retrans_rate: num(9)?,
            timeouts: num(10)?,
            srtt_p50_ms: num(11)?,
            srtt_p95_ms: num(12)?,
        };
        out.insert((li, cc, rep), row);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::{report, Grid, Options};
    use super::*;

    fn options(dir: &Path, seconds: f64) -> Options {
        let ccs = vec![Cc::Reno, Cc::Cubic];
        Options {
            reps: 2,
            sim_reps: 2,
            ..Options::for_test(Grid::Full.links(), ccs, seconds, dir.join("real"))
        }
    }

    fn row(link: usize, cc: Cc, side: Side, rep: u32, goodput_bps: f64) -> Row {
        Row {
            link,
            cc,
            side,
            rep,
            goodput_bps,
            retrans_rate: 0.0123456789,
            timeouts: f64::NAN,
            srtt_p50_ms: 20.000000000000004,
            srtt_p95_ms: 1.0 / 3.0,
        }
    }

    #[test]
    fn the_kernel_rows_a_report_wrote_read_back_to_the_same_numbers() {
        let dir = crate::scratch("recorded-read-back");
        let o = options(&dir, 10.0);
        let written = vec![
            row(35, Cc::Cubic, Side::Real, 1, 1_234_567.891_011_12),
            row(35, Cc::Cubic, Side::Sim, 1, 9.0),
            row(2, Cc::Reno, Side::Real, 0, 0.1 + 0.2),
        ];
        report::report(&dir, &o.links, &written, 10.0, None, "cmd", "cpu").unwrap();
        let got = rows(&o, &dir.join("runs.csv")).unwrap();
        assert_eq!(got.len(), 2, "only the real side's rows");
        let a = &got[&(35, Cc::Cubic, 1)];
        assert_eq!(a.goodput_bps, 1_234_567.891_011_12);
        assert_eq!(a.srtt_p50_ms, 20.000000000000004);
        assert_eq!(a.srtt_p95_ms, 1.0 / 3.0);
        assert!(a.timeouts.is_nan());
        assert_eq!(got[&(2, Cc::Reno, 0)].goodput_bps, 0.1 + 0.2);
    }

    #[test]
    fn another_length_a_missing_column_or_a_bad_number_is_refused_by_line_and_column() {
        let dir = crate::scratch("recorded-refused");
        let csv = dir.join("runs.csv");
        let head = COLUMNS.join(",");
        let line = "10000000,200,0.02,4,cubic,real,2,60,1534000,0.02,0,210,230";
        std::fs::write(&csv, format!("{head}\n{line}\n")).unwrap();
        let e = rows(&options(&dir, 10.0), &csv).unwrap_err();
        assert!(
            format!("{e:#}").contains("line 2: a 60 s transfer, not 10 s"),
            "{e:#}"
        );
        assert_eq!(rows(&options(&dir, 60.0), &csv).unwrap().len(), 1);

        std::fs::write(&csv, format!("{}\n{line}\n", head.replace(",seconds", ""))).unwrap();
        let e = rows(&options(&dir, 60.0), &csv).unwrap_err();
        assert!(format!("{e:#}").contains("no `seconds` column"), "{e:#}");

        let bad = line.replace("1534000", "fast");
        std::fs::write(&csv, format!("{head}\n{bad}\n")).unwrap();
        let e = rows(&options(&dir, 60.0), &csv).unwrap_err();
        assert!(
            format!("{e:#}").contains("line 2: `goodput_bps` is \"fast\", not a number"),
            "{e:#}"
        );
    }
}
