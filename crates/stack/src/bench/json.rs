//! The JSON documents `mslink stack-bench --json` prints (002 §5.2, Tables 1-3, Fig. 4; with
//! `--count`, 002 §3-4), as values the caller serializes.
//!
//! Contract: [`cells`] is `{"cells": [{architecture, checksum, device, ilp, rtt_us, size,
//! stack}], "repeat", "transactions"}`; [`counts`] is `{"counts": [{architecture,
//! demux_per_frame, frames, pops_before_last_demux, stack}], "mutant", "transactions"}`. Keys
//! come in alphabetical order (the fields are declared so), as they always have.

use serde::Serialize;

use super::{CountRow, Row};

/// The timed run's document.
#[derive(Serialize)]
struct Cells<'a> {
    cells: Vec<Cell<'a>>,
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
    rtt_us: f64,
    size: usize,
    stack: &'a str,
}

/// The document of a timed run: every cell of `rows`, best of `repeat` x `transactions`.
pub fn cells(transactions: u32, repeat: u32, rows: &[Row]) -> impl Serialize + '_ {
    Cells {
        cells: rows
            .iter()
            .map(|r| Cell {
                architecture: &r.architecture,
                checksum: r.checksum,
                device: r.device,
                ilp: r.ilp,
                rtt_us: r.rtt_us,
                size: r.size,
                stack: &r.stack,
            })
            .collect(),
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
