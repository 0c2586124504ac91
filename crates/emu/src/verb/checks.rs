//! Checks of `mslink emulate`'s options before a run, and the folders its outputs go into.
//!
//! Contract. [`check`] refuses combinations of options that cannot work together (logs or a
//! link capture with `--direct`, `--no-nat` with `--pair`, a `--stats-interval` under 10 ms)
//! and creates the `--out` folder and the folders of every output file before the session
//! starts, so a run cannot fail at its end for want of a folder. [`commands`] turns the
//! command options into what runs on each side of the hop. Errors name the options at fault,
//! in the words of the CLI convention (docs/cli.md).

use anyhow::{bail, Result};

use super::EmulateOptions;
use crate::session::{self, Commands};
use mslink_io::files::{out_dir, parent_dir};

/// Checks the options against one another and creates the output folders.
pub fn check(args: &EmulateOptions) -> Result<()> {
    // Before the session, so a run cannot fail at its end for want of a folder.
    if let Some(dir) = &args.out {
        out_dir(dir, "--out")?;
    }
    if args.direct && (args.uplink_log.is_some() || args.downlink_log.is_some()) {
        bail!("--uplink-log and --downlink-log log the emulated hop; --direct has none");
    }
    if args.direct && args.pcap_link.is_some() {
        bail!("--pcap-link captures the emulated hop's frames; --direct has none");
    }
    for (file, option) in [
        (&args.pcap_left, "--pcap-left"),
        (&args.pcap_right, "--pcap-right"),
        (&args.pcap_link, "--pcap-link"),
        (&args.uplink_log, "--uplink-log"),
        (&args.downlink_log, "--downlink-log"),
    ] {
        if let Some(f) = file {
            parent_dir(f, option)?;
        }
    }
    if let Some(s) = args.stats_interval {
        if !(s.is_finite() && s >= 0.01) {
            bail!("--stats-interval {s}: give a number of seconds, at least 0.01");
        }
    }
    if args.no_nat && args.pair {
        bail!("--no-nat is for single mode: --pair sets up no NAT");
    }
    Ok(())
}

/// What runs on each side: the single command, or the pair's left and right commands (the
/// right one given with `--right` or after `--`, not both).
pub fn commands(args: &EmulateOptions) -> Result<Commands> {
    if !args.pair {
        return Ok(Commands::Single(args.command.clone()));
    }
    let trailing = (!args.command.is_empty()).then(|| session::shell_join(&args.command));
    if args.right.is_some() && trailing.is_some() {
        bail!("give the right command either with --right or after --, not both");
    }
    let (left, right) = (args.left.clone(), args.right.clone().or(trailing));
    if left.is_none() && right.is_none() {
        bail!("--pair needs --left CMD and/or --right CMD");
    }
    Ok(Commands::Pair {
        left,
        right,
        until: args.until,
    })
}
