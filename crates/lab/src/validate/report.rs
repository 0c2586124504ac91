//! The table, CSV and figure of `mslink validate`.
//!
//! Contract. [`report`] summarises the rows per (link, control): mean and Student-t 95%
//! interval of goodput and retransmission rate on each side, and the sim/real ratio of the
//! goodputs with its interval (`mslink_stats::ratio`); a point is "within 10%" when that whole
//! interval lies in [0.9, 1.1], "outside" when it lies wholly outside, else "undecided". It
//! writes `runs.csv` (one line per transfer, numbers only), `report.md` (the settings, what
//! was matched, the table, generated: nothing in it is typed by hand) and `goodput.{png,svg}`
//! into the folder it is given.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use mslink_stats::{estimate, ratio, Estimate};

use super::{matched, Cc, KernelSettings, Link, Loss, Row, Side};

/// One (link, control) of the table.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Index of the link.
    pub link: usize,
    /// Control.
    pub cc: Cc,
    /// Goodput, bit/s: simulated, real.
    pub goodput: [Estimate; 2],
    /// Retransmitted share of segments: simulated, real.
    pub retrans: [Estimate; 2],
    /// Timeouts per transfer: simulated, real.
    pub timeouts: [Estimate; 2],
    /// Median SRTT read every 100 ms, ms: simulated, real (mean over the repetitions).
    pub srtt_p50: [Estimate; 2],
    /// 95th percentile of the same, ms: simulated, real.
    pub srtt_p95: [Estimate; 2],
    /// Goodput sim / real and the half-width of its 95% interval.
    pub ratio: (f64, f64),
}

impl Summary {
    /// "within 10%", "outside 10%" or "undecided" (see the module contract).
    pub fn verdict(&self) -> &'static str {
        let (r, h) = self.ratio;
        if r - h >= 0.9 && r + h <= 1.1 {
            "within 10%"
        } else if r + h < 0.9 || r - h > 1.1 {
            "outside 10%"
        } else {
            "undecided"
        }
    }
}

fn summaries(links: &[Link], rows: &[Row]) -> Vec<Summary> {
    let mut keys: Vec<(usize, Cc)> = rows.iter().map(|r| (r.link, r.cc)).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|(l, _)| *l < links.len())
        .map(|(link, cc)| {
            let of = |side: Side, f: fn(&Row) -> f64| -> Estimate {
                let xs: Vec<f64> = rows
                    .iter()
                    .filter(|r| r.link == link && r.cc == cc && r.side == side)
                    .map(f)
                    .filter(|x| x.is_finite())
                    .collect();
                estimate(&xs)
            };
            let both = |f: fn(&Row) -> f64| [of(Side::Sim, f), of(Side::Real, f)];
            let goodput = both(|r| r.goodput_bps);
            Summary {
                link,
                cc,
                ratio: ratio(&goodput[0], &goodput[1]),
                goodput,
                retrans: both(|r| r.retrans_rate),
                timeouts: both(|r| r.timeouts),
                srtt_p50: both(|r| r.srtt_p50_ms),
                srtt_p95: both(|r| r.srtt_p95_ms),
            }
        })
        .collect()
}

fn pm(e: &Estimate, scale: f64, digits: usize) -> String {
    if e.n == 0 || !e.mean.is_finite() {
        return "-".into();
    }
    if e.half.is_finite() {
        format!("{:.digits$} ± {:.digits$}", e.mean * scale, e.half * scale)
    } else {
        format!("{:.digits$}", e.mean * scale)
    }
}

/// What [`report`] wrote.
pub struct Written {
    /// One per (link, control), in grid order.
    pub summaries: Vec<Summary>,
    /// The text of report.md, for a caller that prints it.
    pub markdown: String,
    /// The files written.
    pub files: Vec<PathBuf>,
}

impl Written {
    /// The summaries as `mslink validate --json` prints them: one object per (link, control)
    /// with both goodputs, their ratio and its half-width, and the verdict.
    pub fn json(&self, links: &[Link]) -> serde_json::Value {
        self.summaries
            .iter()
            .map(|s| {
                serde_json::json!({
                    "link": links[s.link].label(),
                    "cc": s.cc.name(),
                    "sim_goodput_bps": s.goodput[0],
                    "real_goodput_bps": s.goodput[1],
                    "ratio": s.ratio.0,
                    "ratio_half": s.ratio.1,
                    "verdict": s.verdict(),
                })
            })
            .collect()
    }

    /// The table lines of report.md (what `mslink validate` prints).
    pub fn table(&self) -> String {
        let lines: Vec<&str> = self
            .markdown
            .lines()
            .filter(|l| l.starts_with('|'))
            .collect();
        lines.join("\n")
    }
}

/// Writes runs.csv, report.md and the goodput figure into `dir`; `command` is the command
/// line that produced them, `machine` the CPU line.
pub fn report(
    dir: &Path,
    links: &[Link],
    rows: &[Row],
    settings: Option<&KernelSettings>,
    command: &str,
    machine: &str,
) -> Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut files = Vec::new();
    let p = dir.join("runs.csv");
    std::fs::write(&p, runs_csv(links, rows))
        .with_context(|| format!("writing {}", p.display()))?;
    files.push(p);

    let sums = summaries(links, rows);
    let md = markdown(links, &sums, settings, command, machine);
    let p = dir.join("report.md");
    std::fs::write(&p, &md).with_context(|| format!("writing {}", p.display()))?;
    files.push(p);

    let chart = goodput_chart(links, &sums);
    files.extend(mslink_plot::chart::save(dir, "goodput", &chart).context("drawing goodput")?);
    Ok(Written {
        summaries: sums,
        markdown: md,
        files,
    })
}

/// runs.csv: one line per transfer, the link's settings and what was measured, numbers only.
fn runs_csv(links: &[Link], rows: &[Row]) -> String {
    let mut csv = String::from(
        "rate_bps,rtt_ms,loss,burst_frames,cc,side,rep,goodput_bps,retrans_rate,timeouts,srtt_p50_ms,srtt_p95_ms\n",
    );
    for r in rows {
        let l = &links[r.link];
        let (loss, burst) = match l.loss {
            Loss::Independent(p) => (p, 1.0),
            Loss::Bursty { loss, burst_frames } => (loss, burst_frames),
        };
        let _ = writeln!(
            csv,
            "{},{},{loss},{burst},{},{},{},{},{},{},{},{}",
            l.rate_bps,
            l.rtt_ms,
            r.cc.name(),
            r.side.name(),
            r.rep,
            r.goodput_bps,
            r.retrans_rate,
            r.timeouts,
            r.srtt_p50_ms,
            r.srtt_p95_ms
        );
    }
    csv
}

/// report.md: what made it, the kernel's settings, what the simulator is given to match the
/// kernel, the table of `sums` and the verdict counts.
fn markdown(
    links: &[Link],
    sums: &[Summary],
    settings: Option<&KernelSettings>,
    command: &str,
    machine: &str,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# The simulator's TCP against the kernel's\n");
    let _ = writeln!(
        md,
        "Generated by `{command}` on {machine}; every number below comes from `runs.csv` beside this file.\n"
    );
    if let Some(s) = settings {
        let _ = writeln!(
            md,
            "Kernel {} (inside the emulated namespace):\n",
            s.release
        );
        for (k, v) in &s.sysctls {
            let _ = writeln!(md, "- `net.ipv4.{k} = {v}`");
        }
        md.push('\n');
    }
    let _ = writeln!(md, "What the simulator is given to match the kernel:\n");
    for (what, how) in matched() {
        let _ = writeln!(md, "- **{what}**: {how}");
    }
    // Transfers per point on each side (the most any point has: a point's own count is the
    // same for every point of one run).
    let most = |side: usize| sums.iter().map(|s| s.goodput[side].n).max().unwrap_or(0);
    let _ = writeln!(
        md,
        "\n{} real and {} simulated transfers per point. Mean ± 95% interval (Student t) over the repetitions; ratio = sim / real goodput with its 95% interval (delta method, with the degrees of freedom of the side with fewer transfers). SRTT p50 and p95: percentiles of the sender's smoothed RTT read every 100 ms of a transfer (the kernel's `tcpi_rtt` at the end of each of iperf3's 0.1-s intervals, the simulator's SRTT at the same ticks), averaged over the repetitions.\n",
        most(1),
        most(0)
    );
    let _ = writeln!(
        md,
        "| link | cc | real Mbit/s | sim Mbit/s | sim/real | verdict | real retx % | sim retx % | real RTOs | sim RTOs | real SRTT p50 ms | sim SRTT p50 ms | real SRTT p95 ms | sim SRTT p95 ms |"
    );
    let _ = writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for s in sums {
        md.push_str(&table_row(links, s));
    }
    let counts = ["within 10%", "outside 10%", "undecided"]
        .map(|v| sums.iter().filter(|s| s.verdict() == v).count());
    let _ = writeln!(
        md,
        "\n{} points: {} within 10%, {} outside, {} undecided.",
        sums.len(),
        counts[0],
        counts[1],
        counts[2]
    );
    md.push_str(&not_within(links, sums));
    md
}

/// The section of report.md on the points with real transfers that are not within 10%: the
/// mean ratio, whether it lies in the band, and each side's spread (half-width of its
/// goodput's 95% interval over its mean), which says whether more transfers could decide it.
fn not_within(links: &[Link], sums: &[Summary]) -> String {
    let open: Vec<&Summary> = sums
        .iter()
        .filter(|s| s.goodput[1].n > 0 && s.verdict() != "within 10%")
        .collect();
    if open.is_empty() {
        return String::new();
    }
    let spread = |e: &Estimate| {
        if e.half.is_finite() && e.mean > 0.0 {
            format!("{:.1}", 100.0 * e.half / e.mean)
        } else {
            "-".into()
        }
    };
    let mut md = String::from(
        "\n## The points not within 10%\n\nA side's spread is the half-width of its goodput's 95% interval over its mean. Where the mean ratio lies in [0.9, 1.1] and the interval does not, the transfers' own spread leaves the point undecided (more or longer transfers decide it); where the mean lies outside, the simulator differs by more than its mean's distance from the band.\n\n| link | cc | sim/real | verdict | mean in [0.9, 1.1] | real spread % | sim spread % |\n|---|---|---|---|---|---|---|\n",
    );
    for s in open {
        let (r, h) = s.ratio;
        let _ = writeln!(
            md,
            "| {} | {} | {r:.2} ± {h:.2} | {} | {} | {} | {} |",
            links[s.link].label(),
            s.cc.name(),
            s.verdict(),
            if (0.9..=1.1).contains(&r) {
                "yes"
            } else {
                "no"
            },
            spread(&s.goodput[1]),
            spread(&s.goodput[0]),
        );
    }
    md
}

/// The table row of one (link, control): both sides' goodput, their ratio and verdict (none
/// without real transfers), retransmissions, timeouts and the real RTT.
fn table_row(links: &[Link], s: &Summary) -> String {
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        links[s.link].label(),
        s.cc.name(),
        pm(&s.goodput[1], 1e-6, 2),
        pm(&s.goodput[0], 1e-6, 2),
        if s.goodput[1].n == 0 {
            "-".to_string()
        } else {
            format!("{:.2} ± {:.2}", s.ratio.0, s.ratio.1)
        },
        if s.goodput[1].n == 0 {
            "-"
        } else {
            s.verdict()
        },
        pm(&s.retrans[1], 100.0, 2),
        pm(&s.retrans[0], 100.0, 2),
        pm(&s.timeouts[1], 1.0, 1),
        pm(&s.timeouts[0], 1.0, 1),
        pm(&s.srtt_p50[1], 1.0, 1),
        pm(&s.srtt_p50[0], 1.0, 1),
        pm(&s.srtt_p95[1], 1.0, 1),
        pm(&s.srtt_p95[0], 1.0, 1),
    )
}

/// The goodput figure: per link, each control's real and simulated goodput with its interval.
fn goodput_chart(links: &[Link], sums: &[Summary]) -> mslink_plot::chart::Chart {
    let mut lines = Vec::new();
    for cc in [Cc::Reno, Cc::Cubic] {
        for (side, i) in [(Side::Real, 1), (Side::Sim, 0)] {
            let points: Vec<(f64, f64, f64)> = sums
                .iter()
                .filter(|s| s.cc == cc)
                .map(|s| {
                    let e = &s.goodput[i];
                    let half = if e.half.is_finite() { e.half } else { 0.0 };
                    (s.link as f64, e.mean / 1e6, half / 1e6)
                })
                .collect();
            if !points.is_empty() {
                lines.push(mslink_plot::chart::Line {
                    label: format!("{} {}", side.name(), cc.name()),
                    points,
                });
            }
        }
    }
    mslink_plot::chart::Chart {
        title: "Goodput: the simulator against the kernel on the same link".into(),
        x_label: "link".into(),
        y_label: "goodput (Mbit/s)".into(),
        lines,
        categories: Some(links.iter().map(Link::label).collect()),
        error_bars: true,
        scale: Default::default(),
        markers: true,
        scatter: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(side: Side, rep: u32, g: f64) -> Row {
        Row {
            link: 0,
            cc: Cc::Reno,
            side,
            rep,
            goodput_bps: g,
            retrans_rate: 0.01,
            timeouts: 0.0,
            srtt_p50_ms: if side == Side::Real { 21.0 } else { 22.0 },
            srtt_p95_ms: 30.0 + f64::from(rep),
        }
    }

    #[test]
    fn a_point_is_within_outside_or_undecided_by_its_whole_interval() {
        let links = super::super::Grid::Quick.links();
        let close = [
            row(Side::Sim, 0, 5.0e6),
            row(Side::Sim, 1, 5.02e6),
            row(Side::Real, 0, 5.01e6),
            row(Side::Real, 1, 5.03e6),
        ];
        assert_eq!(summaries(&links, &close)[0].verdict(), "within 10%");
        let far = [
            row(Side::Sim, 0, 4.0e6),
            row(Side::Sim, 1, 4.01e6),
            row(Side::Real, 0, 5.6e6),
            row(Side::Real, 1, 5.62e6),
        ];
        assert_eq!(summaries(&links, &far)[0].verdict(), "outside 10%");
        let one = [row(Side::Sim, 0, 5.0e6), row(Side::Real, 0, 5.0e6)];
        assert_eq!(summaries(&links, &one)[0].verdict(), "undecided");
    }

    #[test]
    fn the_report_is_written_from_the_rows() {
        let dir = std::env::temp_dir().join(format!("mslink-validate-{}", std::process::id()));
        let links = super::super::Grid::Quick.links();
        let rows = [
            row(Side::Sim, 0, 4.0e6),
            row(Side::Sim, 1, 4.01e6),
            row(Side::Real, 0, 5.6e6),
            row(Side::Real, 1, 5.62e6),
        ];
        let w = report(&dir, &links, &rows, None, "mslink validate", "test").unwrap();
        let (s, files) = (w.summaries, w.files);
        assert_eq!(s.len(), 1);
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            md.contains("| 10 Mbit/s, 20 ms, 1% | reno | 5.61 ± "),
            "{md}"
        );
        assert!(md.contains("outside 10%"));
        // The point outside is listed with its mean ratio out of the band and both spreads
        // (real 5.61 ± 0.127 Mbit/s: 2.3%; sim 4.005 ± 0.064: 1.6%).
        assert!(
            md.contains(
                "| 10 Mbit/s, 20 ms, 1% | reno | 0.71 ± 0.02 | outside 10% | no | 2.3 | 1.6 |"
            ),
            "{md}"
        );
        // Both sides' SRTT percentiles: p50 21 real, 22 sim; p95 30 and 31 on each side.
        assert!(md.contains("| 21.0 ± 0.0 | 22.0 ± 0.0 | 30.5 ± "), "{md}");
        let csv = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
        assert_eq!(csv.lines().count(), 5);
        assert!(files.iter().any(|f| f.ends_with("goodput.svg")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
