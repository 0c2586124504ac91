#!/usr/bin/env python3
"""mslink's simulator against ns-3 3.37: speed, and TCP cross-validation with matched settings.

Builds bench/ns3/tcp_bulk.cc against Debian's libns3-dev (installs it with apt when missing),
runs both simulators on the same cases and writes docs/ns3.md (the whole file) and prints it:

  * Speed: CPU seconds (GNU time, user + system), link packets per CPU-second and peak RSS of
    mslink's bench scenarios as written, of ns-3 with its defaults (FqCoDel, SACK, timestamps,
    delayed ACKs, IW 10) and of ns-3 configured like those scenarios, with the ratios.
  * Cross-validation: for each case and each settings set (SETS below: one row per setting,
    mapped to tcp_bulk.cc flags and to mslink `--set flow.0.tcp.KEY=VALUE` overrides), goodput,
    retransmitted segments and RTOs of both tools over several seeds, and the goodput difference.
    A settings set whose keys this mslink build rejects is reported as such (ns-3 still runs).

    python3 bench/ns3/compare.py            # full run (100 MB lossy transfers, 5 seeds)
    python3 bench/ns3/compare.py --quick    # 10 MB lossy transfers, 1 MB in the 100-flow case

Run it holding the machine's build lock (e.g. `/work/bin/cb python3 bench/ns3/compare.py`) so
no build disturbs the timing. It is a bench, not part of CI.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Case:
    """One workload, the same in both tools (the scenario file and tcp_bulk.cc's flags)."""

    name: str
    scenario: str
    flows: int
    rate_mbps: float
    delay_ms: float
    loss: float
    # Drop-tail queue of the bottleneck in packets. mslink's wireless segments queue in the Raw
    # link service (`queue_limit`, 1000 frames); the wired segment has `queue_packets`.
    queue: int
    bytes_full: int
    bytes_quick: int
    seeds: int
    speed: bool  # also in the speed table


CASES = [
    Case(
        "1 flow, 5 Mbit/s, 3 ms, 1.5% loss",
        "scenarios/bench/tcp_newreno_100mb.toml",
        1,
        5.0,
        3.0,
        0.015,
        1000,
        100_000_000,
        10_000_000,
        5,
        True,
    ),
    Case(
        "10 flows, 50 Mbit/s, 3 ms, 1.5% loss",
        "scenarios/bench/tcp_newreno_10x100mb.toml",
        10,
        50.0,
        3.0,
        0.015,
        1000,
        100_000_000,
        10_000_000,
        5,
        True,
    ),
    Case(
        "100 flows, 100 Mbit/s, 10 ms, clean, 250-packet drop-tail",
        "scenarios/bench/tcp_newreno_100flows_clean.toml",
        100,
        100.0,
        10.0,
        0.0,
        250,
        10_000_000,
        1_000_000,
        1,
        False,
    ),
]

# Settings both tools share in every case: 1000-byte segments, 128 KiB socket buffers, no
# queue disc in ns-3 (mslink queues drop-tail), window scaling (mslink derives the shift from
# the receive buffer; ns-3 negotiates it).
COMMON_NS3 = {
    "segment": 1000,
    "sndBuf": 131072,
    "rcvBuf": 131072,
    "tc": "none",
    "windowScaling": 1,
    "connTimeoutMs": 1000,
}
COMMON_MSLINK = {"mss": 1000, "send_buffer_bytes": 131072, "recv_buffer_bytes": 131072}


@dataclass(frozen=True)
class Setting:
    """One matched setting: what it is, tcp_bulk.cc's flags, mslink's `[flow.tcp]` keys."""

    what: str
    ns3: dict = field(default_factory=dict)
    mslink: dict = field(default_factory=dict)


TIMERS = Setting(
    "min RTO 1 s, clock granularity 1 ms, RTO 1 s before the first sample",
    {"minRtoMs": 1000, "clockGranularityMs": 1, "initialRtoMs": 1000},
    {"min_rto_s": 1.0, "granularity_s": 0.001, "initial_rto_s": 1.0},
)
CLASSIC = [
    Setting(
        "NewReno: RFC 6582 recovery, Reno AIMD, no SACK",
        {"cc": "newreno", "recovery": "classic", "sack": 0},
        {"variant": "newreno"},
    ),
    Setting("no timestamps", {"timestamps": 0}),
    Setting("handshake: ns-3 always opens with one, mslink by default does not"),
    Setting("an ACK per segment", {"delAckCount": 1}, {"delayed_ack": False}),
    Setting("initial window 10 segments", {"initialCwnd": 10}, {"initial_window": 10}),
    TIMERS,
    Setting("no limited transmit", {"limitedTransmit": 0}, {"limited_transmit": False}),
    Setting(
        "fast retransmit on the 3rd duplicate", {"dupackThreshold": 3}, {"dupack_threshold": 3}
    ),
]
SACK_TODAY = [
    Setting(
        "SACK recovery (RFC 6675), NewReno/Reno AIMD, classic (not PRR) recovery",
        {"cc": "newreno", "recovery": "classic", "sack": 1},
        {"variant": "sack"},
    ),
    Setting("no timestamps", {"timestamps": 0}),
    Setting("handshake: ns-3 always opens with one, mslink by default does not"),
    Setting("limited transmit (RFC 3042)", {"limitedTransmit": 1}, {"limited_transmit": True}),
    Setting(
        "delayed ACKs: every 2nd segment, 200 ms",
        {"delAckCount": 2, "delAckTimeoutMs": 200},
        {"delayed_ack": True, "delayed_ack_s": 0.2},
    ),
    Setting("initial window 10 segments", {"initialCwnd": 10}, {"initial_window": 10}),
    TIMERS,
    Setting(
        "fast retransmit on the 3rd duplicate", {"dupackThreshold": 3}, {"dupack_threshold": 3}
    ),
]
LINUX = [
    Setting(
        "SACK recovery (RFC 6675), NewReno/Reno AIMD",
        {"cc": "newreno", "sack": 1},
        {"variant": "sack", "congestion_control": "reno"},
    ),
    Setting("PRR (RFC 6937)", {"recovery": "prr"}, {"prr": True}),
    Setting("timestamps (RFC 7323)", {"timestamps": 1}, {"timestamps": True}),
    Setting("three-way handshake (ns-3 always has one)", {}, {"handshake": True}),
    Setting("limited transmit (RFC 3042)", {"limitedTransmit": 1}, {"limited_transmit": True}),
    Setting(
        "delayed ACKs: every 2nd segment, 200 ms",
        {"delAckCount": 2, "delAckTimeoutMs": 200},
        {"delayed_ack": True, "delayed_ack_s": 0.2},
    ),
    Setting("initial window 10 segments", {"initialCwnd": 10}, {"initial_window": 10}),
    TIMERS,
    Setting(
        "fast retransmit on the 3rd duplicate", {"dupackThreshold": 3}, {"dupack_threshold": 3}
    ),
]
LINUX_CUBIC = [
    Setting(
        "SACK recovery (RFC 6675), CUBIC as Linux's `tcp_cubic.c` runs it, HyStart included"
        " (ns-3's `TcpCubic` follows the Linux implementation)",
        {"cc": "cubic", "sack": 1},
        {"variant": "sack", "congestion_control": "cubic", "cubic_flavour": "linux"},
    ),
    *LINUX[1:],
]
# The cross-validation settings sets, in table order.
SETS = [
    ("classic", "Classic (both tools today)", CLASSIC),
    ("sack", "SACK, limited transmit, delayed ACKs (both tools today)", SACK_TODAY),
    ("linux", "Linux-like / ns-3 defaults, NewReno", LINUX),
    ("linux-cubic", "Linux-like with CUBIC", LINUX_CUBIC),
]
# ns-3 configured like mslink's bench scenarios as written (for the speed table): what the
# scenario files say, and mslink's defaults for what they leave out.
LIKE_SCENARIO = {
    "cc": "newreno",
    "recovery": "classic",
    "sack": 0,
    "timestamps": 0,
    "delAckCount": 1,
    "initialCwnd": 1,
    "minRtoMs": 200,
    "clockGranularityMs": 1,
    "initialRtoMs": 1000,
    "limitedTransmit": 0,
}


def shown(path: str) -> str:
    """A path as the report shows it: relative to the repository when inside it."""
    p = Path(path).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def ensure_ns3(build_dir: Path) -> Path:
    # ns-3's pkg-config files name GSL's libraries, which libns3-dev does not pull in.
    if subprocess.run(["pkg-config", "--exists", "ns3-core", "gsl"]).returncode != 0:
        subprocess.run(
            ["apt-get", "install", "-y", "libns3-dev", "libgsl-dev"],
            check=True,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
    exe = build_dir / "tcp_bulk"
    mods = ["applications", "internet", "point-to-point", "network", "traffic-control", "core"]
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", *[f"ns3-{m}" for m in mods]],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    subprocess.run(
        ["g++", "-O2", "-std=c++17", "-o", str(exe), str(ROOT / "bench/ns3/tcp_bulk.cc"), *flags],
        check=True,
    )
    return exe


def timed(cmd: list[str]) -> tuple[str, float, int]:
    """Runs cmd under GNU time; returns (stdout, user+sys CPU seconds, peak RSS in KiB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        out = subprocess.run(
            ["/usr/bin/time", "-f", "%U %S %M", "-o", t.name, *cmd],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        user, sys_, rss = t.read().split()[-3:]
    return out, float(user) + float(sys_), int(rss)


def flag(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def ns3_cmd(exe: Path, case: Case, size: int, seed: int, settings: dict) -> list[str]:
    args = {
        "flows": case.flows,
        "rateMbps": case.rate_mbps,
        "delayMs": case.delay_ms,
        "loss": case.loss,
        "queuePackets": case.queue,
        "bytes": size,
        "seed": seed,
        **settings,
    }
    return [str(exe), *[f"--{k}={flag(v)}" for k, v in args.items()]]


def run_ns3(cmd: list[str]) -> dict:
    out, cpu, rss = timed(cmd)
    vals = {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", out)}
    vals["cpu"], vals["rss"] = cpu, rss
    return vals


def mslink_sets(settings: dict) -> list[str]:
    out = []
    for k, v in settings.items():
        out += ["--set", f"flow.0.tcp.{k}={flag(v)}"]
    return out


def rejected(mslink: str, scenario: Path, key: str, value: object) -> str | None:
    """None if this mslink build takes `flow.0.tcp.key=value`, else its error message."""
    p = subprocess.run(
        [mslink, "sim", str(scenario), "--estimate", *mslink_sets({key: value})],
        capture_output=True,
        text=True,
    )
    if p.returncode == 0:
        return None
    m = re.search(r"unknown field `\w+`|invalid .*", p.stderr)
    return m.group(0) if m else (p.stderr.strip().splitlines() or ["rejected"])[0]


def run_mslink(mslink: str, case: Case, size: int, reps: int, tcp: dict, out: Path) -> dict:
    """One mslink invocation (`--reps reps`, one job): per-rep results and the CPU figures."""
    cmd = [
        mslink,
        "sim",
        str(ROOT / case.scenario),
        "--out",
        str(out),
        "--reps",
        str(reps),
        "--no-plots",
        "--jobs",
        "1",
        "--quiet",
        "--set",
        f"flow.0.size_bytes={size}",
        *mslink_sets(tcp),
    ]
    _, cpu, rss = timed(cmd)
    with open(out / "flows.csv") as f:
        rows = list(csv.DictReader(f))
    per_rep = []
    for rep in sorted({r["rep"] for r in rows}, key=int):
        rs = [r for r in rows if r["rep"] == rep]
        last = max(float(r["duration_s"]) for r in rs)
        per_rep.append(
            {
                "goodput_bps": sum(int(r["bytes"]) for r in rs) * 8 / last,
                "flow_goodput_bps": statistics.mean(
                    int(r["bytes"]) * 8 / float(r["duration_s"]) for r in rs
                ),
                "retransmits": sum(int(r["retransmits"]) for r in rs),
                "rtos": sum(int(r["timeouts"]) for r in rs),
                "completed": all(int(r["bytes"]) >= size for r in rs),
            }
        )
    summary = json.loads((out / "summary.json").read_text())
    packets = sum(
        d["sent"]
        for entry in summary["runs"]
        for seg in entry["run"]["segments"]
        for d in seg["directions"]
    )
    # Packets lost on the way: frames the error model lost, queue overflows.
    losses = {
        entry["run"]["rep"]: sum(
            d["lost"] + d["queue_drops"]
            for seg in entry["run"]["segments"]
            for d in seg["directions"]
        )
        for entry in summary["runs"]
    }
    for i, r in enumerate(per_rep):
        r["losses"] = losses[i]
    return {"reps": per_rep, "cpu": cpu, "rss": rss, "link_packets": packets}


# Runs of each tool per speed case; the table shows the one with the median CPU time.
SPEED_RUNS = 3


def median_run(runs: list[dict]) -> dict:
    """The run whose CPU time is the median of `runs` (an odd number of them)."""
    return sorted(runs, key=lambda r: r["cpu"])[len(runs) // 2]


def mean_sd(xs: list[float]) -> tuple[float, float]:
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def fmt_ms(xs: list[float], scale: float = 1.0, digits: int = 2) -> str:
    m, s = mean_sd([x / scale for x in xs])
    if len(xs) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def rtx(runs: list[dict]) -> str:
    """Retransmitted segments (mean ± sd) / packets lost (error model and queue, mean)."""
    losses = statistics.mean(
        r["losses"] if "losses" in r else r["error_drops"] + r["queue_drops"] for r in runs
    )
    return f"{fmt_ms([r['retransmits'] for r in runs], 1, 0)} / {losses:.0f}"


def settings_table(rows: list[Setting], missing: dict[str, str]) -> list[str]:
    out = ["| setting | ns-3 (`tcp_bulk` flags) | mslink (`--set flow.0.tcp.…`) |", "|---|---|---|"]
    for s in rows:
        ns = " ".join(f"`--{k}={flag(v)}`" for k, v in s.ns3.items()) or "(no switch)"
        ms = []
        for k, v in s.mslink.items():
            cell = f"`{k}={flag(v)}`"
            if k in missing:
                cell += " **(rejected by this build)**"
            ms.append(cell)
        out.append(f"| {s.what} | {ns} | {' '.join(ms) or '(the mslink default)'} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="smaller transfers (see the cases)")
    ap.add_argument("--mslink", default=str(ROOT / "target/release/mslink"), help="mslink binary")
    ap.add_argument("--out", default=str(ROOT / "docs/ns3.md"), help="Markdown file to write")
    ap.add_argument("--seeds", type=int, help="seeds of the lossy cases (default 5)")
    args = ap.parse_args()
    if not shutil.which("/usr/bin/time"):
        sys.exit("needs GNU time (apt-get install time)")
    work = Path(tempfile.mkdtemp(prefix="mslink-ns3-"))
    ns3 = ensure_ns3(work)
    md: list[str] = []
    cmdline = "python3 bench/ns3/compare.py" + "".join(f" {a}" for a in sys.argv[1:])
    md += [
        "# mslink's simulator against ns-3 3.37",
        "",
        "Generated — do not edit by hand. The whole file comes from one command (run while",
        "nothing else ran on the machine, so no build disturbed the timing):",
        "",
        f"    {cmdline}",
        "",
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}; "
        f"ns-3 3.37 from Debian's `libns3-dev`, our program `bench/ns3/tcp_bulk.cc` built `-O2`; "
        f"mslink `{shown(args.mslink)}`, built from the worktree at git {git_rev()}.",
        "",
    ]

    # --- Speed -------------------------------------------------------------------------
    md += [
        "## Speed",
        "",
        "mslink runs its bench scenario as written; ns-3 runs the same work twice: with its",
        "defaults (FqCoDel queue disc in front of a 100-packet device queue, SACK, timestamps,",
        "an ACK per two segments, IW 10) and configured like the scenario (no queue disc, the",
        "same 1000-packet drop-tail queue, no SACK, no timestamps, an ACK per segment, IW 1,",
        "min RTO 200 ms, no limited transmit). Both: 1000-byte segments, 128 KiB socket buffers,",
        "1.5% independent loss of data packets, seed 1. CPU is user + system time from GNU time",
        f"(10 ms ticks), the median of {SPEED_RUNS} runs of each tool made in turn; peak RSS is",
        "that run's maximum resident set; link packets are data and ACK",
        "transmissions on the link (ns-3: `PhyTxBegin` on both devices; mslink: `summary.json`",
        "segment directions). The ratio compares mslink's packets per CPU-second with each ns-3",
        "configuration's.",
        "",
        "| case | tool | CPU s | link packets | packets / CPU-s | peak RSS MiB | goodput Mbit/s |",
        "|---|---|---|---|---|---|---|",
    ]
    like_ratios = []
    ns3_speed = (
        ("ns-3, defaults", {"tc": "fqcodel", "queuePackets": 100}),
        ("ns-3, like mslink", {**LIKE_SCENARIO, "tc": "none"}),
    )
    for case in [c for c in CASES if c.speed]:
        size = case.bytes_quick if args.quick else case.bytes_full
        # SPEED_RUNS runs of each tool, interleaved, so that a slow spell of the machine
        # falls on all of them; each row is the run with the median CPU time.
        ms_runs: list[dict] = []
        ns_runs: dict[str, list[dict]] = {label: [] for label, _ in ns3_speed}
        for i in range(SPEED_RUNS):
            ms_runs.append(
                run_mslink(args.mslink, case, size, 1, {}, work / f"speed-{case.flows}-{i}")
            )
            for label, extra in ns3_speed:
                settings = {"segment": 1000, "sndBuf": 131072, "rcvBuf": 131072, **extra}
                ns_runs[label].append(run_ns3(ns3_cmd(ns3, case, size, 1, settings)))
        ms = median_run(ms_runs)
        ms_rate = ms["link_packets"] / ms["cpu"]
        ms_good = ms["reps"][0]["goodput_bps"]
        rows = [(label, median_run(ns_runs[label])) for label, _ in ns3_speed]
        for label, ns in rows:
            md.append(
                f"| {case.name} | {label} | {ns['cpu']:.2f} | {int(ns['link_packets']):,} | "
                f"{ns['link_packets'] / ns['cpu']:,.0f} | {ns['rss'] / 1024:.1f} | "
                f"{ns['goodput_bps'] / 1e6:.2f} |"
            )
        md.append(
            f"| {case.name} | mslink | {ms['cpu']:.2f} | {ms['link_packets']:,} | "
            f"{ms_rate:,.0f} | {ms['rss'] / 1024:.1f} | {ms_good / 1e6:.2f} |"
        )
        for label, ns in rows:
            ratio = ms_rate / (ns["link_packets"] / ns["cpu"])
            if label == "ns-3, like mslink":
                like_ratios.append((case.name, ratio))
            md.append(
                f"| {case.name} | **mslink / {label}** | | | **{ratio:.1f}x** | "
                f"{ms['rss'] / ns['rss']:.2f} | |"
            )
    verdict = "; ".join(
        f"{name}: {r:.1f}x, {'met' if r >= 15 else 'NOT met'}" for name, r in like_ratios
    )
    md += [
        "",
        "Target: at least 15x ns-3's link packets per CPU-second with ns-3 configured like",
        f"mslink. {verdict}.",
        "",
        f"Transfer per flow: {'10 MB (--quick)' if args.quick else '100 MB'}.",
        "GNU time's 10 ms",
        "ticks make the one-flow mslink CPU figure coarse; the ten-flow rows are the reliable",
        "ones.",
        "",
    ]

    # --- Cross-validation --------------------------------------------------------------
    probe = ROOT / CASES[0].scenario
    missing: dict[str, str] = {}
    for _, _, rows_ in SETS:
        for s in rows_:
            for k, v in {**COMMON_MSLINK, **s.mslink}.items():
                if k not in missing:
                    err = rejected(args.mslink, probe, k, v)
                    if err:
                        missing[k] = err
    md += [
        "## Cross-validation: goodput and retransmissions with matched settings",
        "",
        "Each case runs in both tools with the settings of each set below (one line per",
        "setting in `SETS` of `bench/ns3/compare.py`), plus what every set shares: 1000-byte",
        "segments, 128 KiB socket buffers at both ends, window scaling, no queue disc in ns-3",
        "(`--tc=none`) and the same drop-tail queue in both (1000 packets on the lossy links, as",
        "mslink's Raw link service queues; 250 packets in the 100-flow case). Loss is independent",
        "per data packet and spares ACKs in both tools. Goodput is all the flows' bytes over the",
        'time the last byte arrived (all flows start at 0), in Mbit/s; "per flow" is the mean',
        "of the flows' own goodputs (each flow's bytes over the time its own last byte arrived),",
        "which one straggler does not dominate, and which shows how evenly the flows shared.",
        "Retransmissions are data segments sent again (ns-3: segments whose sequence number the",
        "socket had sent before, from the `Tx` trace; mslink: the `retransmits` column of",
        "flows.csv); losses are the packets the error model or a queue dropped (ns-3: `PhyRxDrop`",
        "on the receiving device, plus data segments that never reached the link; mslink:",
        "`lost` + `queue_drops` of summary.json's segment directions). RTOs are expiries of the",
        "retransmission timer, backed-off ones included: mslink's `timeouts`, and in ns-3 the",
        "doublings of the socket's `RTO` trace. Lossy cases: mean ± standard deviation over the",
        "seeds (mslink `--reps`, ns-3 `--seed` = 1..n); the difference is mslink's mean goodput",
        "against ns-3's.",
        "",
    ]
    seeds_lossy = args.seeds
    for key, title, rows_ in SETS:
        md += [f"### {title} (`{key}`)", ""]
        md += settings_table(rows_, missing)
        ns_set: dict = {**COMMON_NS3}
        ms_set: dict = {**COMMON_MSLINK}
        for s in rows_:
            ns_set.update(s.ns3)
            ms_set.update(s.mslink)
        lacking = [k for k in ms_set if k in missing]
        md += [""]
        if lacking:
            md += [
                "This mslink build rejects "
                + ", ".join(f"`{k}`" for k in lacking)
                + f" ({missing[lacking[0]]}, ...), so only ns-3 ran this set.",
                "",
            ]
        md += [
            "| case | seeds | ns-3 goodput Mbit/s | mslink goodput Mbit/s | difference | "
            "ns-3 per flow | mslink per flow | ns-3 retransmits / losses | "
            "mslink retransmits / losses | "
            "ns-3 RTOs | mslink RTOs |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for case in CASES:
            size = case.bytes_quick if args.quick else case.bytes_full
            seeds = case.seeds if (case.loss == 0 or seeds_lossy is None) else seeds_lossy
            ns_runs = [run_ns3(ns3_cmd(ns3, case, size, s, ns_set)) for s in range(1, seeds + 1)]
            ns_g = [r["goodput_bps"] for r in ns_runs]
            cells = [
                case.name,
                str(seeds),
                fmt_ms(ns_g, 1e6),
            ]
            ns_flow = fmt_ms([r["flow_goodput_sum_bps"] / case.flows for r in ns_runs], 1e6)
            if lacking:
                cells += ["not run", "", ns_flow, ""]
                cells += [rtx(ns_runs), ""]
                cells += [fmt_ms([r["rtos"] for r in ns_runs], 1, 1), ""]
            else:
                ms = run_mslink(
                    args.mslink, case, size, seeds, ms_set, work / f"{key}-{case.flows}"
                )
                ms_g = [r["goodput_bps"] for r in ms["reps"]]
                diff = (statistics.mean(ms_g) / statistics.mean(ns_g) - 1) * 100
                note = "" if all(r["completed"] for r in ms["reps"]) else " (unfinished)"
                cells += [fmt_ms(ms_g, 1e6) + note, f"{diff:+.1f}%"]
                cells += [ns_flow, fmt_ms([r["flow_goodput_bps"] for r in ms["reps"]], 1e6)]
                cells += [
                    rtx(ns_runs),
                    rtx(ms["reps"]),
                    fmt_ms([r["rtos"] for r in ns_runs], 1, 1),
                    fmt_ms([r["rtos"] for r in ms["reps"]], 1, 1),
                ]
            md.append("| " + " | ".join(cells) + " |")
        md += [""]
    sizes = ", ".join(
        f"{c.name}: {(c.bytes_quick if args.quick else c.bytes_full) // 1_000_000} MB"
        for c in CASES
    )
    md += [f"Transfer per flow: {sizes}.", "", *NOTES]
    text = "\n".join(md) + "\n"
    Path(args.out).write_text(text)
    print(text)
    return 0


def git_rev() -> str:
    p = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return p.stdout.strip() or "unknown"


# Why the tools differ where they still do; qualitative, so it holds for any run of the script.
NOTES = [
    "## What differs between the tools with matched settings",
    "",
    "- **RACK-TLP**: ns-3 3.37 has none (`TcpRecoveryOps` offers only `TcpClassicRecovery` and",
    "  `TcpPrrRecovery`), so no set uses mslink's `rack` key. ns-3 3.37 has `TcpCubic`,",
    "  `TcpLinuxReno`, PRR, SACK, timestamps and limited transmit, all switches of `tcp_bulk`.",
    "- **Handshake**: ns-3 always opens with SYN / SYN-ACK (one round trip before data; a lost",
    "  SYN is sent again after `ConnTimeout`, 1 s here) and ends with FIN; mslink starts",
    "  established unless `handshake = true`. Over transfers of seconds this costs ns-3 one",
    "  round trip of a few milliseconds.",
    "- **RTT sampling**: without timestamps ns-3 takes an RTT sample from every ACK that covers",
    "  a segment sent only once (its `m_history`); mslink times one segment per round trip",
    "  (Karn's rule for both). The min RTO of 1 s dominates the RTO in every case here, so this",
    "  moves timeouts little.",
    "- **Where loss strikes**: ns-3's error model sits on the receiving device, after the whole",
    "  packet was serialised; mslink's wireless MAC sends every frame for its full time and the",
    "  error model decides its fate, so a lost packet costs link time in both. Frames are 1044",
    "  bytes in mslink (1040-byte IP packet + 4-byte CRC) and 1042 on ns-3's point-to-point",
    "  link (2-byte PPP header); on the wired segment mslink sends the bare 1040-byte packet.",
    "- **Queues**: ns-3's device queue does not hold the packet being transmitted; with",
    "  `--tc=none` the traffic-control layer silently drops what the full (stopped) device",
    "  queue refuses, which `tcp_bulk` counts as segments sent that never reached the link.",
    "- **ns-3 NewReno without SACK resends far more than it loses in some seeds**: after a",
    "  timeout ends a stalled recovery, ns-3 3.37 can fall into an episode in which, in the Open",
    "  state, every ACK retransmits the segment at the head while a new segment goes out",
    "  behind it, so each segment is sent twice for seconds (seen with a diagnostic build",
    "  printing the congestion state of each retransmission). The classic rows' ns-3",
    "  retransmission mean and spread come from those seeds; mslink's retransmissions stay",
    "  close to its losses. Goodput suffers less, as the duplicates use spare capacity.",
    "- **Sharing in the clean 100-flow case** (the per-flow column): all flows start together",
    "  into a drop-tail queue with no randomness in either tool, so the first initial windows",
    "  fill the queue and the rest are lost. In mslink the flows then split in two: those whose",
    "  initial window got in keep the link, their windows capped by the 128 KiB buffers and",
    "  ACK-clocked into the slots the queue frees, and hardly lose again; the others are locked",
    "  out by backed-off timeouts until the first group has finished (the drop-tail lock-out",
    "  of Floyd and Jacobson's phase effects). ns-3's flows lose packets all through the run,",
    "  mostly repaired by fast recovery, and finish close together. Hence mslink's higher",
    "  per-flow mean (its early finishers) and fewer losses, at about the same aggregate",
    "  goodput, which the link bounds in both. The lock-out depends on the exact packet order",
    '  at each overflow; staggered starts (`start = { dist = "uniform", spread_s = ... }`)',
    "  would make this case less knife-edged.",
    "- **More RTOs in mslink with SACK and delayed ACKs** (the `sack` set): the goodputs agree,",
    "  but mslink times out more often than ns-3 in every case. The cause is not established",
    "  yet; candidates are when each re-arms the retransmission timer during recovery (RFC",
    "  6298 (5.3) restarts it on an ACK of new data; does a retransmission restart it too?),",
    "  and ns-3 3.37's SACK loss marking (`TcpTxBuffer::IsLost`), which may retransmit a",
    "  lost retransmission in recovery where mslink waits for the timer.",
    "- **Linux-like sets, clean 100-flow case**: the aggregate goodput is set by the last flow",
    "  to finish. In mslink two of the 100 flows lose their first window and are then locked out",
    "  in exponential backoff (7 timeouts, about 127 s) while the rest share the link, so the",
    "  aggregate falls by about a third while the per-flow mean agrees. It is the drop-tail",
    "  lock-out above on a knife edge: with SACK, limited transmit and delayed ACKs it appears",
    "  only when PRR, timestamps and the handshake are all on (any one or two of them give",
    "  91-96 Mbit/s), and adding RACK-TLP, which ns-3 3.37 lacks, removes it (94.5 Mbit/s, 37",
    "  timeouts instead of 346): `mslink sim scenarios/bench/tcp_newreno_100flows_clean.toml`",
    "  with the set's `--set flow.0.tcp.…` keys, and `rack=true`. These rows miss the 10% target;",
    "  staggered starts in both tools would be the fair remedy and are not built yet.",
    "- **CUBIC**: ns-3 3.37's `TcpCubic` has no Reno-friendly region (RFC 9438 §4.3, the",
    "  'TCP friendliness' of Linux's `tcp_cubic.c`): ns-3's own issue 1001, \"TCP Cubic missing",
    '  Reno-friendly support", added it after 3.37 (the `TcpFriendliness` attribute). At the',
    "  windows of these lossy links (about ten segments, many losses a second) the cubic",
    "  curve alone grows slowly after each reduction, so ns-3's CUBIC runs well below ns-3's",
    "  own NewReno and retransmits beyond its losses. mslink's CUBIC here is",
    '  `cubic_flavour = "linux"`, the growth Linux\'s `tcp_cubic.c` has, Reno-friendly region',
    "  and HyStart included. The kernel is the better reference, and docs/validation.md holds",
    "  mslink against it over the same emulated link: at 10 ms RTT and 2% loss, windows of",
    "  about ten segments, the kernel's CUBIC runs 10-14% below its own Reno, and mslink's,",
    "  which reduces its window in whole segments as Linux does, is within 10% of the",
    "  kernel's there. The CUBIC rows therefore measure ns-3 3.37's missing heuristic,",
    "  not mslink, and do not count toward the 10% target.",
    "- **Speed**: ns-3 configured like mslink moves more packets per CPU-second than with its",
    "  defaults (no FqCoDel; an ACK per segment doubles the cheap packets), so the ratio",
    "  against that configuration is the stricter one.",
    "",
]


if __name__ == "__main__":
    sys.exit(main())
