//! One run of `mslink emulate`, phase by phase.
//!
//! Contract. [`run`] builds the configuration and prints its notes, checks the options,
//! decides whether the live view is on, runs the session while printing its events on standard
//! error, then reports (JSON, closing lines, the accounting check) and returns the exit code
//! of the session (the command's status, or 128 + a signal's number). Trace files named in the
//! link file are read relative to it when they are not found as given.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Result;
use mslink_link::Duration;

use super::{checks, config, prompt_text, report, EmulateOptions, View};
use crate::session::{Event, Session, SessionConfig};
use crate::EmuConfig;

/// Runs `mslink emulate` with `args` and returns the exit code the process should end with.
pub fn run(args: &EmulateOptions) -> Result<i32> {
    let cfg = config(args)?;
    if !args.quiet {
        print_notes(&cfg);
    }
    checks::check(args)?;
    // The live view: asked for, or a terminal watching a run that is not an interactive
    // shell (which owns the terminal).
    let stderr_tty = std::io::stderr().is_terminal();
    let view = view_interval(args, stderr_tty);
    let mut drawing = View::new(stderr_tty);
    let config = session_config(args, &cfg, view)?;
    let mut load = load_relative(args.link.as_deref());
    let end = Session::new(config, &mut load)?
        .run(&mut |event| print_event(event, args.quiet, &mut drawing))?;
    let json = report::summary_json(args, &cfg, &end);
    report::write_json(args, &json)?;
    report::print_summary(args, &cfg, &end);
    report::check_balance(args, &end)?;
    Ok(end.exit_code)
}

/// The error models' notes on standard error (what a configuration may not mean as written).
fn print_notes(cfg: &EmuConfig) {
    let reverse = cfg.error_reverse.iter().map(|m| ("error_reverse", m));
    for (key, model) in std::iter::once(("error", &cfg.error)).chain(reverse) {
        for n in model.notes() {
            eprintln!("mslink: note: {key}: {n}");
        }
    }
}

/// Seconds between frames of the live view, or None when it is off: on when asked for, or
/// when standard error is a terminal watching a run that is not an interactive shell.
fn view_interval(args: &EmulateOptions, stderr_tty: bool) -> Option<f64> {
    let interactive = !args.pair && args.command.is_empty();
    if args.live || args.stats_interval.is_some() {
        Some(args.stats_interval.unwrap_or(1.0))
    } else if stderr_tty && !interactive && !args.quiet && !args.direct {
        Some(1.0)
    } else {
        None
    }
}

/// The session's configuration from the options.
fn session_config(
    args: &EmulateOptions,
    cfg: &EmuConfig,
    view: Option<f64>,
) -> Result<SessionConfig> {
    Ok(SessionConfig {
        emu: cfg.clone(),
        commands: checks::commands(args)?,
        left_addr: args.left_addr,
        right_addr: args.right_addr,
        stats_interval: view.map(Duration::from_secs_f64),
        pcap: [args.pcap_left.clone(), args.pcap_right.clone()],
        pcap_link: args.pcap_link.clone(),
        direct: args.direct,
        link_logs: [args.uplink_log.clone(), args.downlink_log.clone()],
        log_bytes: args.log_bytes,
        command_line: args.command_line.clone(),
        nat: !args.no_nat,
        prompt: Some(prompt_text(args.link.as_deref(), cfg)),
    })
}

/// Shows one event of the session on standard error.
fn print_event(event: Event, quiet: bool, drawing: &mut View) {
    match event {
        Event::StaleDeviceRemoved(name) => {
            eprintln!("mslink emulate: removed stale device {name}")
        }
        Event::Ready {
            left: (la, ld),
            right: (ra, rd),
            direct,
        } if !quiet => eprintln!(
            "mslink emulate: left {la} ({ld}) <-> right {ra} ({rd}){}; ready",
            if direct { " over a plain veth" } else { "" }
        ),
        Event::Ready { .. } => {}
        Event::Nat { table, uplinks } if !quiet => eprintln!(
            "mslink emulate: NAT to the outside (nftables table inet {table}{})",
            if uplinks.is_empty() {
                String::new()
            } else {
                format!("; forwarding on for replies on {}", uplinks.join(", "))
            }
        ),
        Event::Nat { .. } => {}
        Event::NatUnavailable(e) => {
            eprintln!("mslink emulate: warning: no NAT to the outside ({e}); the command reaches only the host (--no-nat silences this)")
        }
        Event::Dns { listen, upstream } if !quiet => eprintln!(
            "mslink emulate: the host's resolver is on loopback ({upstream}); the command's \
             lookups go to {listen}, relayed to it"
        ),
        Event::Dns { .. } => {}
        Event::DnsUnavailable(e) => eprintln!(
            "mslink emulate: warning: the host's resolver is on loopback and no relay could be \
             set up ({e}); the command's name lookups will fail"
        ),
        Event::StaleNatRemoved(table) => {
            eprintln!("mslink emulate: removed the stale NAT table inet {table}")
        }
        Event::Stats { now, live } => {
            let _ = drawing.draw(
                &mut std::io::stderr().lock(),
                now.as_nanos() as f64 / 1e9,
                live,
            );
        }
    }
}

/// Reads the files a link file names (traces), relative to the link file's folder when a
/// relative path is not found from the working directory.
fn load_relative(base: Option<&Path>) -> impl FnMut(&str) -> std::io::Result<String> + '_ {
    move |f: &str| {
        let p = Path::new(f);
        let p = match base.and_then(|b| b.parent()) {
            Some(dir) if p.is_relative() && !p.exists() => dir.join(p),
            _ => p.to_path_buf(),
        };
        mslink_io::read_trace_file(&p)
    }
}
