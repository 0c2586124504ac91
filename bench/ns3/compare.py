#!/usr/bin/env python3
"""Side-by-side TCP benchmark: mslink's simulator vs ns-3 3.37 on the same work (issue 4).

Builds bench/ns3/tcp_bulk.cc against Debian's libns3-dev (installs it when missing), then runs
both simulators on each case under /usr/bin/time and prints CPU seconds, link packets per
CPU-second and peak RSS for both, with the ratios, as a Markdown table for docs/PERFORMANCE.md.

    python3 bench/ns3/compare.py            # both cases
    python3 bench/ns3/compare.py --quick    # 10 MB per flow instead of 100 MB

Cases (issue 4): one NewReno bulk transfer of 100 MB over 5 Mbit/s, 3 ms, 1000-byte segments,
1.5% independent data-packet loss; and ten such transfers over 50 Mbit/s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = [
    ("1 flow, 5 Mbit/s", 1, 5.0, "scenarios/bench/tcp_newreno_100mb.toml"),
    ("10 flows, 50 Mbit/s", 10, 50.0, "scenarios/bench/tcp_newreno_10x100mb.toml"),
]


def ensure_ns3(build_dir: Path) -> Path:
    if subprocess.run(["pkg-config", "--exists", "ns3-core"]).returncode != 0:
        subprocess.run(
            ["apt-get", "install", "-y", "libns3-dev", "libgsl-dev"],
            check=True,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
    exe = build_dir / "tcp_bulk"
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "ns3-applications", "ns3-internet",
         "ns3-point-to-point", "ns3-network", "ns3-core"],
        check=True, capture_output=True, text=True,
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
            check=True, capture_output=True, text=True,
        ).stdout
        user, sys_, rss = t.read().split()[-3:]
    return out, float(user) + float(sys_), int(rss)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10 MB per flow instead of 100 MB")
    ap.add_argument("--mslink", default=str(ROOT / "target/release/mslink"), help="mslink binary")
    args = ap.parse_args()
    if not shutil.which("/usr/bin/time"):
        sys.exit("needs GNU time (apt-get install time)")
    size = 10_000_000 if args.quick else 100_000_000
    work = Path(tempfile.mkdtemp(prefix="mslink-ns3-"))
    ns3 = ensure_ns3(work)
    rows = []
    for name, flows, rate, scenario in CASES:
        out, ns_cpu, ns_rss = timed([str(ns3), f"--flows={flows}", f"--rateMbps={rate}", f"--bytes={size}"])
        ns_pkts = int(re.search(r"link_packets=(\d+)", out).group(1))
        ns_goodput = float(re.search(r"goodput_bps=([\d.]+)", out).group(1))
        res = work / f"ms-{flows}"
        _, ms_cpu, ms_rss = timed([
            args.mslink, "sim", str(ROOT / scenario), "--out", str(res), "--reps", "1",
            "--no-plots", "--jobs", "1", "--set", f"flow.0.size_bytes={size}",
        ])
        summary = json.loads((res / "summary.json").read_text())
        ms_pkts = summary_link_packets(summary)
        ms_goodput = summary_goodput(res)
        rows.append((name, ns_cpu, ns_pkts, ns_rss, ns_goodput, ms_cpu, ms_pkts, ms_rss, ms_goodput))
    print(f"Transfer size per flow: {size} bytes; machine: {os.uname().nodename}, {os.cpu_count()} cores\n")
    print("| case | tool | CPU s | link packets | packets / CPU-s | peak RSS MiB | goodput Mbit/s |")
    print("|---|---|---|---|---|---|---|")
    for name, nc, np_, nr, ng, mc, mp, mr, mg in rows:
        print(f"| {name} | ns-3 3.37 | {nc:.2f} | {np_} | {np_ / nc:,.0f} | {nr / 1024:.1f} | {ng / 1e6:.2f} |")
        print(f"| {name} | mslink | {mc:.2f} | {mp} | {mp / mc:,.0f} | {mr / 1024:.1f} | {mg / 1e6:.2f} |")
        print(f"| {name} | **ratio** | | | **{(mp / mc) / (np_ / nc):.1f}x** | {mr / nr:.2f} | |")
    return 0


def summary_link_packets(summary: dict) -> int:
    """Packets put on every link direction (data and ACKs), as ns-3's PhyTxBegin counts them."""
    total = 0
    for entry in summary["runs"]:
        for seg in entry["run"]["segments"]:
            total += sum(d["sent"] for d in seg["directions"])
    return total


def summary_goodput(res: Path) -> float:
    import csv

    with open(res / "flows.csv") as f:
        rows = list(csv.DictReader(f))
    return sum(float(r["throughput_bps"]) for r in rows)


if __name__ == "__main__":
    sys.exit(main())
