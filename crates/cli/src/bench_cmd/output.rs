//! Output of `mslink bench`: text tables, CSV files and figures, JSON, the round-trip log.
//!
//! Contract: the same `Report` feeds every format (`mslink_vi::bench::tables` and
//! `mslink_vi::bench::files` render it; the figures are `mslink_plot::bench`). The tables go to
//! standard output unless `--json`, which prints the report as one JSON document instead.

use anyhow::Result;
use mslink_vi::bench::{files, tables, Report};

use super::ClientOpts;

pub(super) fn report(rep: &Report, o: &ClientOpts) -> Result<()> {
    if let Some(dir) = &o.out {
        files::write_csvs(rep, dir)?;
        if !o.no_plots {
            mslink_plot::bench::write_plots(rep, dir)?;
        }
    }
    if let Some(f) = &o.log {
        files::write_log(rep, f)?;
    }
    if o.json {
        println!("{}", serde_json::to_string_pretty(rep)?);
        return Ok(());
    }
    print!("{}", tables::tables(rep, o.reps));
    Ok(())
}
