//! mslink-plot: the PNG and SVG figures of mslink's tools, drawn with plotters so that no
//! Python is needed.
//!
//! Contract: [`chart`] is the drawing engine; [`axes`] names results columns and sweep keys with
//! their units for every plot (the CLI's and Python's) (line charts, optional log axes and error bars,
//! an embedded font); [`sim`] draws the plots of `mslink sim` results (003 Figs. 11-12, 004
//! Figs. 2, 7-10), [`bench`] the figures of the end-system benchmark (000 Figs. 4-7) and
//! [`stack`] those of the protocol-stack benchmark (002 Tables 1-3, Fig. 4), [`linklog`] the
//! throughput and delay of a per-packet link log (`mslink graph`). Every figure is a
//! pure function of its data: the same data give byte-identical files. Errors are
//! [`PlotError`]s; nothing here prints.

#![warn(missing_docs)]

use std::path::PathBuf;

pub mod axes;
pub mod bench;
pub mod chart;
pub mod linklog;
pub mod sim;
pub mod stack;

/// Why a figure could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The embedded font does not parse (a broken build).
    #[error("the embedded plot font does not parse")]
    Font,
    /// A figure's file has neither a `.png` nor an `.svg` extension.
    #[error("{}: the figure's file must end in .png or .svg", .0.display())]
    Format(PathBuf),
    /// A figure's path has no file name.
    #[error("no file name in {}", .0.display())]
    NoFileName(PathBuf),
    /// A folder or file could not be made or written.
    #[error("{what}")]
    Io {
        /// What was being done (`creating DIR`, `writing FILE`).
        what: String,
        /// The failure.
        source: std::io::Error,
    },
    /// plotters failed to draw.
    #[error("{0}")]
    Draw(String),
    /// The PNG encoder failed.
    #[error(transparent)]
    Png(#[from] png::EncodingError),
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> PlotError {
    move |source| PlotError::Io { what, source }
}

/// Points per series label, series in first-seen order.
type Series = Vec<(String, Vec<(f64, f64)>)>;

fn push(series: &mut Series, label: String, x: f64, y: f64) {
    match series.iter_mut().find(|(l, _)| *l == label) {
        Some((_, pts)) => pts.push((x, y)),
        None => series.push((label, vec![(x, y)])),
    }
}
