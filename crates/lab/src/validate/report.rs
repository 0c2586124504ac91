//! The table, CSV and figure of `mslink validate`.
//!
//! Contract. [`report`] summarises the rows per (link, control): mean and Student-t 95%
//! interval of goodput and retransmission rate on each side, and the sim/real ratio of the
//! goodputs over the pairs of repetitions that met the same losses (the same repetition number
//! on both sides: [`super::channel_seed`]), with its interval (`mslink_stats::paired_ratio`);
//! a point is "within 10%" when that whole interval lies in [0.9, 1.1], "outside" when it
//! lies wholly outside, else "undecided". The ratio over all transfers taken as independent
//! samples (`mslink_stats::ratio`) stands beside it: what the simulator says of the link
//! without the kernel's draws. It
//! writes `runs.csv` (one line per transfer, numbers only), `report.md` (the settings, what
//! was matched, the table, generated: nothing in it is typed by hand) and `goodput.{png,svg}`
//! into the folder it is given.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use mslink_stats::{estimate, paired_ratio, ratio, Estimate};

use super::{matched, Cc, KernelSettings, Link, Row, Side};

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
    /// Goodput sim / real over the pairs of repetitions, and the half-width of its 95%
    /// interval: the verdict's.
    pub ratio: (f64, f64),
    /// The number of those pairs.
    pub pairs: usize,
    /// Goodput sim / real over all transfers as independent samples, with its half-width.
    pub unpaired: (f64, f64),
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
            let (sim, real) = pairs(rows, link, cc);
            Summary {
                link,
                cc,
                ratio: paired_ratio(&sim, &real),
                pairs: sim.len(),
                unpaired: ratio(&goodput[0], &goodput[1]),
                goodput,
                retrans: both(|r| r.retrans_rate),
                timeouts: both(|r| r.timeouts),
                srtt_p50: both(|r| r.srtt_p50_ms),
                srtt_p95: both(|r| r.srtt_p95_ms),
            }
        })
        .collect()
}

/// The goodputs of (`link`, `cc`) of each repetition both sides made, in repetition order:
/// simulated, real.
fn pairs(rows: &[Row], link: usize, cc: Cc) -> (Vec<f64>, Vec<f64>) {
    let of = |side: Side| {
        let mut v: Vec<(u32, f64)> = rows
            .iter()
            .filter(|r| r.link == link && r.cc == cc && r.side == side)
            .filter(|r| r.goodput_bps.is_finite())
            .map(|r| (r.rep, r.goodput_bps))
            .collect();
        v.sort_by_key(|x| x.0);
        v
    };
    let real = of(Side::Real);
    of(Side::Sim)
        .into_iter()
        .filter_map(|(rep, g)| {
            let k = real.binary_search_by_key(&rep, |x| x.0).ok()?;
            Some((g, real[k].1))
        })
        .unzip()
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
                    "pairs": s.pairs,
                    "unpaired_ratio": s.unpaired.0,
                    "unpaired_ratio_half": s.unpaired.1,
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
    seconds: f64,
    settings: Option<&KernelSettings>,
    command: &str,
    machine: &str,
) -> Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut files = Vec::new();
    let p = dir.join("runs.csv");
    std::fs::write(&p, runs_csv(links, rows, seconds))
        .with_context(|| format!("writing {}", p.display()))?;
    files.push(p);
    if let Some(s) = settings {
        // Beside runs.csv, so a clone can re-check the simulator (`recorded.rs`).
        let p = dir.join(super::recorded::SETTINGS);
        std::fs::write(&p, s.to_text()).with_context(|| format!("writing {}", p.display()))?;
        files.push(p);
    }

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

/// runs.csv: one line per transfer, the link's settings, the transfer's length and what was
/// measured, numbers only (`recorded.rs` reads the kernel's rows back).
fn runs_csv(links: &[Link], rows: &[Row], seconds: f64) -> String {
    let mut csv = super::recorded::COLUMNS.join(",");
    csv.push('\n');
    for r in rows {
        let l = &links[r.link];
        let (loss, burst) = l.loss.columns();
        let _ = writeln!(
            csv,
            "{},{},{loss},{burst},{},{},{},{seconds},{},{},{},{},{}",
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
        "\n{} real and {} simulated transfers per point. Repetition r of both sides draws its losses from the same seed, so the two meet the same lost frames in the same order (common random numbers). Mean ± 95% interval (Student t) over the repetitions; sim/real = the simulated over the real goodput of the repetitions both sides made, with its 95% interval by the delta method over the pairs (Student t, one degree of freedom fewer than the pairs): the verdict's; all transfers = the same ratio over every transfer of each side as independent samples (delta method, with the degrees of freedom of the side with fewer transfers), what the simulator says of the link without the kernel's draws. SRTT p50 and p95: percentiles of the sender's smoothed RTT read every 100 ms of a transfer (the kernel's `tcpi_rtt` at the end of each of iperf3's 0.1-s intervals, the simulator's SRTT at the same ticks), averaged over the repetitions.\n",
        most(1),
        most(0)
    );
    let _ = writeln!(
        md,
        "| link | cc | real Mbit/s | sim Mbit/s | sim/real | verdict | all transfers | real retx % | sim retx % | real RTOs | sim RTOs | real SRTT p50 ms | sim SRTT p50 ms | real SRTT p95 ms | sim SRTT p95 ms |"
    );
    let _ = writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
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
/// mean ratio, whether it lies in the band, the spread of the pairs' ratio and each side's
/// spread (half-width of a 95% interval over its mean), which say whether more transfers
/// could decide it.
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
        "\n## The points not within 10%\n\nA spread is the half-width of a 95% interval over its mean: of the pairs' ratio (what decides the verdict), and of each side's goodput (how much the repetitions' draws move it). Where the mean ratio lies in [0.9, 1.1] and the interval does not, the pairs' spread leaves the point undecided (more or longer transfers decide it); where the mean lies outside, the simulator differs by more than its mean's distance from the band.\n\n| link | cc | sim/real | verdict | mean in [0.9, 1.1] | pairs' spread % | real spread % | sim spread % |\n|---|---|---|---|---|---|---|---|\n",
    );
    for s in open {
        let (r, h) = s.ratio;
        let _ = writeln!(
            md,
            "| {} | {} | {r:.2} ± {h:.2} | {} | {} | {} | {} | {} |",
            links[s.link].label(),
            s.cc.name(),
            s.verdict(),
            if (0.9..=1.1).contains(&r) {
                "yes"
            } else {
                "no"
            },
            if h.is_finite() && r > 0.0 {
                format!("{:.1}", 100.0 * h / r)
            } else {
                "-".into()
            },
            spread(&s.goodput[1]),
            spread(&s.goodput[0]),
        );
    }
    md
}

/// The table row of one (link, control): both sides' goodput, their ratio over the pairs and
/// verdict, the ratio over all transfers (none without real transfers), retransmissions,
/// timeouts and the SRTT percentiles.
fn table_row(links: &[Link], s: &Summary) -> String {
    let ratio = |(r, h): (f64, f64)| {
        if s.goodput[1].n == 0 {
            "-".to_string()
        } else if h.is_finite() {
            format!("{r:.2} ± {h:.2}")
        } else {
            format!("{r:.2}")
        }
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        links[s.link].label(),
        s.cc.name(),
        pm(&s.goodput[1], 1e-6, 2),
        pm(&s.goodput[0], 1e-6, 2),
        ratio(s.ratio),
        if s.goodput[1].n == 0 {
            "-"
        } else {
            s.verdict()
        },
        ratio(s.unpaired),
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
/// One category per link reported (all of the grid's, or those `--only` picked).
fn goodput_chart(links: &[Link], sums: &[Summary]) -> mslink_plot::chart::Chart {
    let mut shown: Vec<usize> = sums.iter().map(|s| s.link).collect();
    shown.dedup();
    let x = |link: usize| shown.iter().position(|&l| l == link).unwrap_or(0) as f64;
    let mut lines = Vec::new();
    for cc in [Cc::Reno, Cc::Cubic] {
        for (side, i) in [(Side::Real, 1), (Side::Sim, 0)] {
            let points: Vec<(f64, f64, f64)> = sums
                .iter()
                .filter(|s| s.cc == cc)
                .map(|s| {
                    let e = &s.goodput[i];
                    let half = if e.half.is_finite() { e.half } else { 0.0 };
                    (x(s.link), e.mean / 1e6, half / 1e6)
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
        categories: Some(shown.iter().map(|&l| links[l].label()).collect()),
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
    fn the_figure_has_a_category_per_link_reported() {
        let links = super::super::Grid::Full.links();
        let at = |link, cc, side| Row {
            link,
            cc,
            ..row(side, 0, 1e6)
        };
        let rows = [
            at(3, Cc::Cubic, Side::Sim),
            at(35, Cc::Reno, Side::Sim),
            at(35, Cc::Cubic, Side::Sim),
        ];
        let chart = goodput_chart(&links, &summaries(&links, &rows));
        let cats = chart.categories.unwrap();
        assert_eq!(cats, [links[3].label(), links[35].label()]);
        let xs: Vec<Vec<f64>> = chart
            .lines
            .iter()
            .map(|l| l.points.iter().map(|p| p.0).collect())
            .collect();
        // Real and simulated Reno at link 35 only; real and simulated CUBIC at 3 and 35.
        assert_eq!(xs, [vec![1.0], vec![1.0], vec![0.0, 1.0], vec![0.0, 1.0]]);
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

    /// Repetitions whose losses moved both sides alike (the same draws: common random
    /// numbers) decide a point the spread of the draws alone leaves open; pairs are matched by
    /// repetition number whatever the rows' order, and a simulated repetition the kernel did
    /// not make counts in the ratio over all transfers only.
    #[test]
    fn pairs_that_met_the_same_losses_decide_where_the_draws_spread_leaves_it_open() {
        let links = super::super::Grid::Quick.links();
        let rows = [
            row(Side::Real, 2, 5.0e6),
            row(Side::Real, 0, 3.0e6),
            row(Side::Real, 1, 7.0e6),
            row(Side::Sim, 0, 3.03e6),
            row(Side::Sim, 1, 7.0e6),
            row(Side::Sim, 2, 5.1e6),
            row(Side::Sim, 3, 9.0e6),
        ];
        let s = &summaries(&links, &rows)[0];
        assert_eq!(s.pairs, 3);
        // (3.03 + 7.0 + 5.1) / (3 + 7 + 5) = 1.0087; the pairs move together.
        assert!((s.ratio.0 - 15.13 / 15.0).abs() < 1e-12, "{:?}", s.ratio);
        assert!(s.ratio.1 < 0.05, "{:?}", s.ratio);
        assert_eq!(s.verdict(), "within 10%");
        // As independent samples: 24.13 / 4 over 15 / 3, and an interval wider than the band.
        assert!((s.unpaired.0 - (24.13 / 4.0) / 5.0).abs() < 1e-12);
        assert!(s.unpaired.1 > 0.5, "{:?}", s.unpaired);
        // The same pairs with the kernel's repetitions swapped no longer move together.
        let mut crossed = rows;
        crossed[1].rep = 1;
        crossed[2].rep = 0;
        assert_eq!(summaries(&links, &crossed)[0].verdict(), "undecided");
    }

    #[test]
    fn the_report_is_written_from_the_rows() {
        let dir = crate::scratch("validate-report");
        let links = super::super::Grid::Quick.links();
        let rows = [
            row(Side::Sim, 0, 4.0e6),
            row(Side::Sim, 1, 4.01e6),
            row(Side::Real, 0, 5.6e6),
            row(Side::Real, 1, 5.62e6),
        ];
        let w = report(&dir, &links, &rows, 20.0, None, "mslink validate", "test").unwrap();
        let (s, files) = (w.summaries, w.files);
        assert_eq!(s.len(), 1);
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            md.contains("| 10 Mbit/s, 20 ms, 1% | reno | 5.61 ± "),
            "{md}"
        );
        assert!(md.contains("outside 10%"));
        // The point outside is listed with its mean ratio out of the band and the spreads: of
        // the pairs' ratio (R = 4.005 / 5.61 = 0.7139; 4.0 - R x 5.6 = +0.00214 and 4.01 - R
        // x 5.62 = -0.00214, so sd 0.00303, half 12.706 x 0.00214 / 5.61 = 0.0048: 0.7%),
        // real 5.61 ± 0.127 Mbit/s (2.3%), sim 4.005 ± 0.064 (1.6%); over all transfers as
        // independent samples the ratio is 0.71 ± 0.02.
        assert!(
            md.contains(
                "| 10 Mbit/s, 20 ms, 1% | reno | 0.71 ± 0.00 | outside 10% | no | 0.7 | 2.3 | 1.6 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| 0.71 ± 0.00 | outside 10% | 0.71 ± 0.02 |"),
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
