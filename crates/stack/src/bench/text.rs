//! The text `mslink stack-bench` prints: the round-trip grids (002 §5.2, Tables 1-3), the ILP
//! table, 002 Fig. 4 (in memory and over the veth), the demultiplexing counts (002 §3-4) and
//! the veth run's notes.
//!
//! Contract: nothing here prints; every function returns text for the caller to print. The
//! streaming printers ([`Grid`], [`ilp_lines`], [`Fig4Line`]) take the rows a cell (or, for
//! Fig. 4, a row) at a time as the table functions of [`super`] hand them over and return the
//! text of that cell, so the caller can show each cell as it is measured (inside a progress
//! bar's `suspend`); a Fig. 4 cell's text may end inside a line, and `finish` ends the table's
//! last line and leaves a blank one. Round trips of repeated cells print as `mean ± half` (the
//! Student-t 95% interval over the repetitions), paired ratios as `ratio ± half verdict`
//! ([`super::interleave`]).

use std::fmt::Write as _;

use super::{CountRow, Row};

/// What ends a streamed table: its last line, then a blank line.
const END: &str = "\n\n";

/// Width of a round-trip column (`0.452 ± 0.010`).
const RTT_WIDTH: usize = 18;
/// Width of a ratio column (`1.052 ± 0.021 inconclusive`).
const RATIO_WIDTH: usize = 28;

/// `mean ± half` of a row's repetitions with `digits` decimals (the mean alone for a row
/// without repetitions).
fn rtt(r: &Row, digits: usize) -> String {
    match r.ci95_us() {
        Some(h) => format!("{:.digits$} ± {h:.digits$}", r.rtt_us),
        None => format!("{:.digits$}", r.rtt_us),
    }
}

/// `ratio ± half verdict` of a paired ratio.
fn ratio(p: &super::PairedRatio) -> String {
    format!("{:.3} ± {:.3} {}", p.ratio, p.ci95, p.verdict.name())
}

/// The round-trip table of one wire, cell by cell (002 Tables 1-3): a line per stack and size
/// with every architecture's mean round trip and 95% interval, then DAA's and ILLM's paired
/// ratios to LLM with their verdicts.
pub struct Grid {
    what: String,
    n: u32,
    repeat: u32,
    digits: usize,
    /// The title and column header are out.
    started: bool,
}

impl Grid {
    /// A table of `what` (the wire), `repeat` x `n` transactions per architecture and cell,
    /// `digits` decimals.
    pub fn new(what: &str, n: u32, repeat: u32, digits: usize) -> Self {
        Grid {
            what: what.into(),
            n,
            repeat,
            digits,
            started: false,
        }
    }

    /// The text of one cell's `rows` (one per architecture, LLM's first; see
    /// [`super::memory_tables`]), with the title and column header before the first.
    pub fn cell(&mut self, rows: &[Row]) -> String {
        let mut out = String::new();
        if !self.started {
            self.started = true;
            writeln!(
                out,
                "{}: mean round trip (µs) ± 95% interval, checksum off, {} repetitions x {} transactions, architectures interleaved; ratios to LLM paired by repetition",
                self.what,
                self.repeat.max(1),
                self.n
            )
            .unwrap();
            write!(out, "{:<16}{:>6}", "stack", "size").unwrap();
            for r in rows {
                write!(out, "{:>RTT_WIDTH$}", r.architecture.to_uppercase()).unwrap();
            }
            for r in rows.iter().filter(|r| r.vs_llm.is_some()) {
                let name = format!("{}/LLM", r.architecture.to_uppercase());
                write!(out, "{name:>RATIO_WIDTH$}").unwrap();
            }
            out += "\n";
        }
        let Some(first) = rows.first() else {
            return out;
        };
        write!(out, "{:<16}{:>6}", first.stack, first.size).unwrap();
        for r in rows {
            write!(out, "{:>RTT_WIDTH$}", rtt(r, self.digits)).unwrap();
        }
        for p in rows.iter().filter_map(|r| r.vs_llm.as_ref()) {
            write!(out, "{:>RATIO_WIDTH$}", ratio(p)).unwrap();
        }
        out += "\n";
        out
    }

    /// Leaves a blank line after the table.
    pub fn finish(&self) -> &'static str {
        "\n"
    }
}

/// The ILP table's title and column header: UDP-IP-ETH with the checksum on, copy then
/// checksum against copy-and-checksum (002 §2.2), interleaved, with the paired ratio of
/// one-pass to two-pass.
pub fn ilp_header() -> String {
    format!(
        "UDP-IP-ETH, checksum on, 1400 bytes: copy then checksum vs copy-and-checksum (ILP), mean round trip (µs) ± 95% interval, all six interleaved\n\
         {:<8}{:>RTT_WIDTH$}{:>RTT_WIDTH$}{:>10}{:>RATIO_WIDTH$}\n",
        "arch", "two-pass", "one-pass", "gain", "one-pass/two-pass"
    )
}

/// The ILP table's lines from its one cell ([`super::ilp_table`]: per architecture, its
/// two-pass row then its one-pass row): a line per architecture with the gain and the paired
/// ratio of one-pass to two-pass.
pub fn ilp_lines(rows: &[Row]) -> String {
    let mut out = String::new();
    for pair in rows.chunks(2) {
        let [off, on] = pair else { continue };
        let (a, b) = (off.rtt_us, on.rtt_us);
        writeln!(
            out,
            "{:<8}{:>RTT_WIDTH$}{:>RTT_WIDTH$}{:>9.1}%{:>RATIO_WIDTH$}",
            off.architecture,
            rtt(off, 3),
            rtt(on, 3),
            100.0 * (a - b) / a,
            ratio(&super::interleave::compare(&on.reps_us, &off.reps_us))
        )
        .unwrap();
    }
    out
}

/// 002 Fig. 4's title and column header on the in-memory wire.
pub fn fig4_header() -> String {
    format!(
        "002 Fig. 4: p50 round trip (µs) of a 1-byte flow vs background ping-pong flows, in-memory wire\n\
         {:<12}{:>14}{:>14}{:>14}{:>14}\n",
        "background", "UDPDAA(1)", "UDP(1)", "UDPDAA(1000)", "UDP(1000)"
    )
}

/// 002 Fig. 4's title and column header over the veth: a column per background size (1 and
/// 1000 bytes) and server organisation ([`super::Fig4Server`]).
pub fn veth_fig4_header() -> String {
    let mut out = String::from(
        "002 Fig. 4 over the veth, real receive threads: p50 round trip (µs) of a 1-byte flow vs background ping-pong flows\n",
    );
    write!(out, "{:<12}", "background").unwrap();
    for size in [1, 1000] {
        for s in super::Fig4Server::ALL {
            write!(out, "{:>18}", format!("{}({size})", s.name())).unwrap();
        }
    }
    out += "\n";
    out
}

/// 002 Fig. 4, cell by cell: a line per background load, a column per cell.
pub struct Fig4Line {
    width: usize,
    precision: usize,
    /// The `fig4-bg…` architecture of the current line.
    line: String,
}

impl Fig4Line {
    /// Columns `width` wide with `precision` decimals.
    pub fn new(width: usize, precision: usize) -> Self {
        Fig4Line {
            width,
            precision,
            line: String::new(),
        }
    }

    /// The text of the cell `r`, with the background load that opens its line.
    pub fn cell(&mut self, r: &Row) -> String {
        let mut out = String::new();
        if r.architecture != self.line {
            if !self.line.is_empty() {
                out += "\n";
            }
            self.line.clone_from(&r.architecture);
            let bg = self.line.strip_prefix("fig4-bg").unwrap_or(&self.line);
            write!(out, "{bg:<12}").unwrap();
        }
        let (width, precision) = (self.width, self.precision);
        write!(out, "{:>width$.precision$}", r.rtt_us).unwrap();
        out
    }

    /// Ends the table's last line and leaves a blank one.
    pub fn finish(&self) -> &'static str {
        END
    }
}

/// The demultiplexing counts (002 §3-4): per architecture and stack, the frames the server
/// received in `n` ping-pongs of 1 byte, demultiplexing operations per frame and state
/// changes made before the last of them.
pub fn counts(n: u32, rows: &[CountRow]) -> String {
    let mut out = format!(
        "per frame the server received ({n} ping-pongs of 1 byte): demultiplexing operations, and state changes made before the last of them\n"
    );
    writeln!(
        out,
        "{:<6}{:<16}{:>8}{:>8}{:>24}",
        "arch", "stack", "frames", "demux", "pops before last demux"
    )
    .unwrap();
    for r in rows {
        writeln!(
            out,
            "{:<6}{:<16}{:>8}{:>8.2}{:>24.2}",
            r.architecture, r.stack, r.frames, r.demux_per_frame, r.pops_before_last_demux
        )
        .unwrap();
    }
    out
}

/// The notes of 002 Fig. 4 over the veth, a line each (for standard error): whether the
/// receive threads ran under `SCHED_FIFO` (and its real-time budget) or were refused it,
/// frames dropped at the DAA dispatcher, cells cut short by [`super::VETH_FIG4_CELL_BUDGET`].
#[cfg(target_os = "linux")]
pub fn veth_notes(notes: &super::VethFig4Notes) -> String {
    let mut out = String::new();
    match &notes.fifo_refused {
        Some(why) => writeln!(
            out,
            "note: SCHED_FIFO refused ({why}): every receive thread ran under the default policy, so UDPDAA-prio had no real priority over UDPDAA-equal"
        )
        .unwrap(),
        None => {
            if let Some((run, period)) = crate::rt::rt_budget() {
                writeln!(
                    out,
                    "note: receive threads ran under SCHED_FIFO (real-time budget {run} of every {period} µs)"
                )
                .unwrap();
            }
        }
    }
    if notes.unclassified > 0 {
        writeln!(
            out,
            "note: {} frames reached no open DAA path at the dispatcher and were dropped",
            notes.unclassified
        )
        .unwrap();
    }
    if notes.short_cells > 0 {
        writeln!(
            out,
            "note: {} Fig. 4 cells stopped at the {} s budget with fewer samples",
            notes.short_cells,
            super::VETH_FIG4_CELL_BUDGET.as_secs()
        )
        .unwrap();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(architecture: &str, stack: &str, ilp: bool, rtt_us: f64) -> Row {
        Row {
            device: "memory",
            architecture: architecture.into(),
            stack: stack.into(),
            size: 1,
            checksum: false,
            ilp,
            rtt_us,
            reps_us: Vec::new(),
            vs_llm: None,
        }
    }

    /// A row of repetitions `reps` (its mean as the figure), compared with `llm` if given.
    fn repeated(
        architecture: &str,
        stack: &str,
        ilp: bool,
        reps: &[f64],
        llm: Option<&[f64]>,
    ) -> Row {
        Row {
            rtt_us: mslink_stats::estimate(reps).mean,
            reps_us: reps.to_vec(),
            vs_llm: llm.map(|l| crate::bench::interleave::compare(reps, l)),
            ..row(architecture, stack, ilp, 0.0)
        }
    }

    #[test]
    fn a_grid_line_has_every_architecture_with_its_interval_and_the_ratios_to_llm() {
        let mut g = Grid::new("in-memory wire", 20, 3, 3);
        let llm = [1.0, 1.0, 1.0];
        let cell = [
            repeated("llm", "ETH", false, &llm, None),
            repeated("daa", "ETHDAA", false, &[1.1, 1.1, 1.1], Some(&llm)),
            repeated("illm", "ETH", false, &[1.0, 1.0, 1.0], Some(&llm)),
        ];
        let text = g.cell(&cell) + &g.cell(&cell) + g.finish();
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(
            lines[0],
            "in-memory wire: mean round trip (µs) ± 95% interval, checksum off, 3 repetitions x 20 transactions, architectures interleaved; ratios to LLM paired by repetition"
        );
        assert_eq!(
            lines[1],
            format!(
                "{:<16}{:>6}{:>18}{:>18}{:>18}{:>28}{:>28}",
                "stack", "size", "LLM", "DAA", "ILLM", "DAA/LLM", "ILLM/LLM"
            )
        );
        let line = format!(
            "{:<16}{:>6}{:>18}{:>18}{:>18}{:>28}{:>28}",
            "ETH",
            1,
            "1.000 ± 0.000",
            "1.100 ± 0.000",
            "1.000 ± 0.000",
            "1.100 ± 0.000 slower",
            "1.000 ± 0.000 inconclusive"
        );
        assert_eq!(lines[2], line);
        // The header once, a line per cell, a blank line at the end.
        assert_eq!(lines[3], line);
        assert_eq!(&lines[4..], ["", ""]);
    }

    #[test]
    fn ilp_lines_pair_two_pass_with_one_pass_and_fig4_lines_follow_the_load() {
        let off = [10.0, 10.0];
        let text = ilp_lines(&[
            repeated("llm", "UDP-IP-ETH", false, &off, None),
            repeated("llm", "UDP-IP-ETH", true, &[8.0, 8.0], None),
        ]);
        assert!(text.starts_with("llm "), "{text}");
        assert!(text.contains(" 20.0% "), "{text}");
        assert!(text.ends_with(" 0.800 ± 0.000 faster\n"), "{text}");
        let mut f = Fig4Line::new(14, 3);
        let text: String = [
            row("fig4-bg0", "UDPDAA-prio", false, 1.0),
            row("fig4-bg0", "UDP", false, 2.0),
            row("fig4-bg2", "UDPDAA-prio", false, 3.0),
        ]
        .iter()
        .map(|r| f.cell(r))
        .collect();
        assert_eq!(
            text,
            format!(
                "{:<12}{:>14}{:>14}\n{:<12}{:>14}",
                "0", "1.000", "2.000", "2", "3.000"
            )
        );
    }
}
