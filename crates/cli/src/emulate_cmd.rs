//! `mslink emulate`: real programs across an emulated lossy link between network namespaces.
//!
//! Contract. This file is the verb's command line only: [`EmulateArgs`] (options, help and
//! examples) and [`run`], which hands them as plain [`EmulateOptions`] to
//! `mslink_emu::verb::run` and ends the process with the exit code it returns. Everything else
//! (the link configuration from `--link` and `--set`, the checks, the session in network
//! namespaces, the live view, the summary and its JSON) is `mslink_emu::verb`'s.

use anyhow::Result;
use clap::Args;
use mslink_emu::session;
use mslink_emu::verb::{self, EmulateOptions};

const EXAMPLES: &str = "Examples:
  # a shell whose traffic crosses a 10 Mbit/s, 20 ms, 5% loss link (the host is $MSLINK_RIGHT)
  mslink emulate --set rate_bps=10e6 --set delay_ms=20 --loss 0.05 -- bash
  # the command reaches whatever the host reaches (NAT, removed at exit; --no-nat: the host only)
  mslink emulate --set delay_ms=50 -- sh -c 'curl -sI -m 5 https://example.org | head -1; exit 0'
  # live view: per class and direction, Mbit/s, loss, queue delay and retransmissions (on a
  # terminal it redraws in place; --live forces it, as plain lines where stderr is a file)
  mslink emulate --pair --link links/wlan.toml --live \\
      --left 'iperf3 -s -1 >/dev/null & iperf3 -s -p 5202 -1 >/dev/null' \\
      --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -t 2 >/dev/null & iperf3 -c $MSLINK_LEFT -p 5202 -u -b 1M -t 2 >/dev/null; wait'
  # iperf3 between two namespaces over a 5% loss link, raw vs selective repeat
  mslink emulate --pair --loss 0.05 --scheme raw \\
      --left 'iperf3 -s -1' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -t 2'
  mslink emulate --pair --loss 0.05 --scheme selective_repeat \\
      --left 'iperf3 -s -1' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -t 2'
  # bufferbloat: 11 Mbit/s of UDP into a 10 Mbit/s link with 1000 packets of buffer; the
  # summary's R->L 'qdelay p50' is ~240 ms with droptail, ~85 ms with codel, ~15 ms with pie
  mslink emulate --pair --set rate_bps=10e6 --queue droptail --queue-packets 1000 \\
      --left 'iperf3 -s -1 >/dev/null' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -u -b 11M -t 4 >/dev/null'
  mslink emulate --pair --set rate_bps=10e6 --queue codel --queue-packets 1000 \\
      --left 'iperf3 -s -1 >/dev/null' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -u -b 11M -t 4 >/dev/null'
  # 40 ms with 10 ms of normal jitter, in order, and outages of 0.3 s every 1 s on average:
  # iperf3's receiver line shows the jitter; --reorder lets packets overtake
  mslink emulate --pair --set delay_ms=40 --jitter 10 --jitter-dist normal --no-reorder \\
      --onoff 1000,300 --left 'iperf3 -s -1 >/dev/null' \\
      --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -u -b 1M -t 2 | tail -3'
  # 004's WLAN link (links/ has its HSCSD link, 003's cell and a cellular link, each citing
  # its source), live counters, the summary as JSON on standard output (the commands share
  # it: send theirs elsewhere) and in out/summary.json, a pcap
  mslink emulate --pair --link links/wlan.toml \\
      --stats-interval 1 --json --out out --pcap-left out/l.pcap \\
      --left 'iperf3 -s -1 >/dev/null' --right 'sleep 0.5; iperf3 -c 10.0.0.1 -t 2 >out/iperf3.txt'
  # every link frame on the air (data, retransmissions, ACK/NACKs, lost ones marked) in a pcap;
  # read it with the repository's dissector: wireshark -X lua_script:tools/wireshark/mslink.lua link.pcap
  mslink emulate --pair --loss 0.1 --scheme selective_repeat --pcap-link link.pcap \\
      --left 'iperf3 -s -1 >/dev/null' --right 'sleep 0.5; iperf3 -c $MSLINK_LEFT -u -b 1M -t 1 >/dev/null'
  # a Mahimahi capacity trace (traces/README.md) and per-packet logs in Mahimahi's format (the
  # uplink is left to right), then their throughput and delay as a figure
  mslink emulate --pair --set capacity_trace=traces/12mbps.mahi \\
      --uplink-log up.log --downlink-log down.log \\
      --right 'iperf3 -s -1 >/dev/null' --left 'sleep 0.5; iperf3 -c $MSLINK_RIGHT -t 2 >/dev/null' \\
      && mslink graph up.log -o up.png

Commands run with `sh -c` and see MSLINK_LEFT and MSLINK_RIGHT (the two IPv4 addresses),
MSLINK_LEFT6 and MSLINK_RIGHT6 (IPv6) and MSLINK_PROMPT (the text naming the link, which the
shell of single mode without a command shows in its prompt: [mslink 10Mbit/s 20ms 5% sr]).
See docs/emulator.md.";

/// Options of `mslink emulate` (declared in `mslink_emu::verb::EmulateOptions`).
#[derive(Args, Clone, Debug)]
#[command(after_help = EXAMPLES)]
pub struct EmulateArgs {
    #[command(flatten)]
    opts: EmulateOptions,
}

/// Runs `mslink emulate`.
pub fn run(args: &EmulateArgs) -> Result<()> {
    let code = verb::run(&options(args))?;
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// The options as the emulator's library takes them, with the command line for the logs.
fn options(args: &EmulateArgs) -> EmulateOptions {
    EmulateOptions {
        command_line: std::env::args()
            .map(|a| session::shell_join(&[a]))
            .collect::<Vec<_>>()
            .join(" "),
        ..args.opts.clone()
    }
}
