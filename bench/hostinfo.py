"""What the scripts that write figures into docs share: one line naming the machine a figure
comes from, and the rewrite of a doc's block between two markers.

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


def markers(name: str, script: str) -> tuple[str, str]:
    """The begin and end markers of block `name`, which `script` writes."""
    return (
        f"<!-- {name}: begin (written by {script}; do not edit) -->",
        f"<!-- {name}: end -->",
    )


def check_block(doc: Path, name: str, script: str) -> None:
    """Raises SystemExit naming the file if `doc` lacks the block's markers."""
    begin, end = markers(name, script)
    text = doc.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{script}: {doc} lacks the markers {begin!r} ... {end!r}")


def write_block(doc: Path, name: str, script: str, body: str) -> None:
    """Replaces what lies between the block's markers in `doc` with `body`."""
    check_block(doc, name, script)
    begin, end = markers(name, script)
    head, rest = doc.read_text().split(begin, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{begin}\n{body}{end}{tail}")
