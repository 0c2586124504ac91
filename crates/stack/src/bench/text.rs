//! The text `mslink stack-bench` prints: the round-trip grids (002 §5.2, Tables 1-3), the ILP
//! table, 002 Fig. 4 (in memory and over the veth), the demultiplexing counts (002 §3-4) and
//! the veth run's notes.
//!
//! Contract: nothing here prints; every function returns text for the caller to print. The
//! streaming printers ([`Grid`], [`IlpLines`], [`Fig4Line`]) take the rows one at a time as
//! the table functions of [`super`] hand them over and return the text of that cell, so the
//! caller can show each cell as it is measured (inside a progress bar's `suspend`); a cell's
//! text may end inside a line, and `finish` ends the table's last line and leaves a blank one.

use std::fmt::Write as _;

use super::{CountRow, Row, SIZES};

/// What ends a streamed table: its last line, then a blank line.
const END: &str = "\n\n";

/// An architecture's round-trip grid, cell by cell (002 Tables 1-3): a title per
/// architecture, a line per stack, one column per size of [`SIZES`].
pub struct Grid {
    what: String,
    n: u32,
    repeat: u32,
    digits: usize,
    /// (architecture, stack) of the last cell.
    at: Option<(String, String)>,
}

impl Grid {
    /// A grid of `what` (the wire), best of `repeat` x `n` transactions, `digits` decimals.
    pub fn new(what: &str, n: u32, repeat: u32, digits: usize) -> Self {
        Grid {
            what: what.into(),
            n,
            repeat,
            digits,
            at: None,
        }
    }

    /// The text of the cell `r`, with the title, column header or stack name it opens.
    pub fn cell(&mut self, r: &Row) -> String {
        let mut out = String::new();
        let (arch, stack) = self.at.take().unwrap_or_default();
        if r.architecture != arch {
            if !arch.is_empty() {
                out += END;
            }
            writeln!(
                out,
                "{} protocol stack: mean round trip (µs), {}, checksum off, best of {} x {} transactions",
                r.architecture.to_uppercase(),
                self.what,
                self.repeat,
                self.n
            )
            .unwrap();
            write!(out, "{:<16}", "stack").unwrap();
            for s in SIZES {
                write!(out, "{s:>9}").unwrap();
            }
            out += "\n";
        } else if r.stack != stack {
            out += "\n";
        }
        if r.architecture != arch || r.stack != stack {
            write!(out, "{:<16}", r.stack).unwrap();
        }
        write!(out, "{:>9.digits$}", r.rtt_us, digits = self.digits).unwrap();
        self.at = Some((r.architecture.clone(), r.stack.clone()));
        out
    }

    /// Ends the grid's last line and leaves a blank one.
    pub fn finish(&self) -> &'static str {
        END
    }
}

/// The ILP table's title and column header: UDP-IP-ETH with the checksum on, copy then
/// checksum against copy-and-checksum (002 §2.2).
pub fn ilp_header() -> String {
    format!(
        "UDP-IP-ETH, checksum on, 1400 bytes: copy then checksum vs copy-and-checksum (ILP)\n\
         {:<8}{:>12}{:>12}{:>10}\n",
        "arch", "two-pass", "one-pass", "gain"
    )
}

/// The ILP table's lines, cell by cell: each architecture's two-pass row then its one-pass
/// row (the order of [`super::ilp_table`]) make one line with the gain.
#[derive(Default)]
pub struct IlpLines {
    two_pass: f64,
}

impl IlpLines {
    /// Nothing for a two-pass cell (kept for the line); the line for a one-pass cell.
    pub fn cell(&mut self, r: &Row) -> String {
        if !r.ilp {
            self.two_pass = r.rtt_us;
            return String::new();
        }
        let (a, b) = (self.two_pass, r.rtt_us);
        format!(
            "{:<8}{a:>12.3}{b:>12.3}{:>9.1}%\n",
            r.architecture,
            100.0 * (a - b) / a
        )
    }
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
        }
    }

    #[test]
    fn a_grid_opens_a_title_per_architecture_and_a_line_per_stack() {
        let mut g = Grid::new("in-memory wire", 20, 1, 3);
        let mut text: String = [
            row("llm", "ETH", false, 1.0),
            row("llm", "ETH", false, 2.0),
            row("llm", "IP-ETH", false, 3.0),
            row("daa", "ETHDAA", false, 4.0),
        ]
        .iter()
        .map(|r| g.cell(r))
        .collect();
        text += g.finish();
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(
            lines[0],
            "LLM protocol stack: mean round trip (µs), in-memory wire, checksum off, best of 1 x 20 transactions"
        );
        assert!(lines[1].starts_with("stack ") && lines[1].ends_with("1400"));
        assert_eq!(
            lines[2],
            format!("{:<16}{:>9}{:>9}", "ETH", "1.000", "2.000")
        );
        assert_eq!(lines[3], format!("{:<16}{:>9}", "IP-ETH", "3.000"));
        assert_eq!(lines[4], "");
        assert!(lines[5].starts_with("DAA protocol stack"));
        assert_eq!(lines[7], format!("{:<16}{:>9}", "ETHDAA", "4.000"));
        assert_eq!(&lines[8..], ["", ""]);
    }

    #[test]
    fn ilp_lines_pair_two_pass_with_one_pass_and_fig4_lines_follow_the_load() {
        let mut ilp = IlpLines::default();
        assert_eq!(ilp.cell(&row("llm", "UDP-IP-ETH", false, 10.0)), "");
        let line = ilp.cell(&row("llm", "UDP-IP-ETH", true, 8.0));
        assert!(line.ends_with("    20.0%\n"), "{line}");
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
