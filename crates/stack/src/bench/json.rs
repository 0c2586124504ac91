//! The JSON documents `mslink stack-bench --json` prints (002 §5.2, Tables 1-3, Fig. 4; with
//! `--count`, 002 §3-4), as values the caller serializes.
//!
//! Contract: [`cells`] is `{"cells": [{architecture, checksum, device, ilp, rtt_best_us,
//! rtt_ci95_us, rtt_reps_us, rtt_us, size, stack, vs_llm}], "order", "repeat",
//! "transactions"}`: `rtt_us` the mean over the repetitions (Fig. 4: the median probe round
//! trip), `rtt_ci95_us` its Student-t 95% half-width, `rtt_best_us` the smallest repetition,
//! `rtt_reps_us` every repetition (the three null or empty for Fig. 4), `vs_llm` `{ci95,
//! ratio, verdict}` for DAA and ILLM (else null: [`super::interleave`]), `order`
//! `"interleaved"`; [`counts`] is `{"counts": [{architecture,
//! demux_per_frame, frames, pops_before_last_demux, stack}], "mutant", "transactions"}`. Keys
//! come in alphabetical order (the fields are declared so), as they always have.

use serde::Serialize;

use super::{CountRow, Row};

/// The timed run's document.
#[derive(Serialize)]
struct Cells<'a> {
    cells: Vec<Cell<'a>>,
    order: &'static str,
    repeat: u32,
    transactions: u32,
}

/// One measured cell ([`Row`]).
#[derive(Serialize)]
struct Cell<'a> {
    architecture: &'a str,
    checksum: bool,
    device: &'a str,
    ilp: bool,
    rtt_best_us: Option<f64>,
    rtt_ci95_us: Option<f64>,
    rtt_reps_us: &'a [f64],
    rtt_us: f64,
    size: usize,
    stack: &'a str,
    vs_llm: Option<super::PairedRatio>,
}

/// The document of a timed run: every cell of `rows`, `repeat` interleaved repetitions of
/// `transactions`.
pub fn cells(transactions: u32, repeat: u32, rows: &[Row]) -> impl Serialize + '_ {
    Cells {
        cells: rows
            .iter()
            .map(|r| Cell {
                architecture: &r.architecture,
                checksum: r.checksum,
                device: r.device,
                ilp: r.ilp,
                rtt_best_us: r.best_us(),
                rtt_ci95_us: r.ci95_us(),
                rtt_reps_us: &r.reps_us,
                rtt_us: r.rtt_us,
                size: r.size,
                stack: &r.stack,
                vs_llm: r.vs_llm,
            })
            .collect(),
        order: "interleaved",
        repeat,
        transactions,
    }
}

/// The `--count` document.
#[derive(Serialize)]
struct Counts<'a> {
    counts: Vec<Count<'a>>,
    mutant: Option<&'a str>,
    transactions: u32,
}

/// One architecture and stack's counts ([`CountRow`]).
#[derive(Serialize)]
struct Count<'a> {
    architecture: &'a str,
    demux_per_frame: f64,
    frames: u64,
    pops_before_last_demux: f64,
    stack: &'a str,
}

/// The document of the demultiplexing counts: every row of `rows` over `transactions`
/// ping-pongs, and the stack mutant that ran, if any.
pub fn counts<'a>(
    transactions: u32,
    mutant: Option<&'a str>,
    rows: &'a [CountRow],
) -> impl Serialize + 'a {
    Counts {
        counts: rows
            .iter()
            .map(|r| Count {
                architecture: &r.architecture,
                demux_per_frame: r.demux_per_frame,
                frames: r.frames,
                pops_before_last_demux: r.pops_before_last_demux,
                stack: &r.stack,
            })
            .collect(),
        mutant,
        transactions,
    }
}
