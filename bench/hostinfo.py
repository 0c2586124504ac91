"""One line naming the machine a figure comes from, for the scripts that write figures into docs.

CPU model, family and model numbers, the SIMD flags that pick mslink's kernels (present and
absent), vCPUs, kernel, rustc and the commit (with "local changes" when the tree differs), and
the time. Used by bench/engine_figures.py and bench/bench_figures.py.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIMD_FLAGS = ["ssse3", "sse4_2", "avx2", "avx512f", "avx512bw", "gfni", "asimd"]


def _run(*cmd: str) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.strip()
    except FileNotFoundError:
        return "?"


def describe_host() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    info = cpuinfo.read_text() if cpuinfo.exists() else ""

    def field(name: str) -> str:
        m = re.search(rf"^{name}\s*:\s*(.*)$", info, re.M)
        return m.group(1).strip() if m else "?"

    flags = set(field("flags").split()) | set(field("Features").split())
    have = [f for f in SIMD_FLAGS if f in flags]
    lacks = [f for f in SIMD_FLAGS if f not in flags and f != "asimd"]
    commit = _run("git", "rev-parse", "--short=12", "HEAD")
    dirty = _run("git", "status", "--porcelain", "--untracked-files=no")
    now = datetime.datetime.now(datetime.timezone.utc)
    return (
        f"Host: {field('model name')} (family {field('cpu family')}, model {field('model')}), "
        f"{os.cpu_count()} vCPUs; SIMD flags present: {', '.join(have) or 'none'}; "
        f"absent: {', '.join(lacks) or 'none'}; Linux {platform.release()}; "
        f"{_run('rustc', '--version')}; commit {commit}{' with local changes' if dirty else ''}; "
        f"{now:%Y-%m-%d %H:%M} UTC."
    )
