"""The engine's figures in docs/PERFORMANCE.md, measured and written in one command.

Runs the four criterion benchmarks of mslink-link (schedulers, Selective Repeat, XOR parity,
Reed-Solomon on every kernel this CPU has), reads criterion's estimates, and rewrites the part
of docs/PERFORMANCE.md between the `engine-figures` markers: the issue targets with the measured
value and whether each is met, then every Reed-Solomon code and operation by kernel. The host
(CPU model, the SIMD flags that pick the kernels, vCPUs, kernel, rustc, commit) heads the
table, so a figure never loses the machine it comes from.

    python3 bench/engine_figures.py              # benchmark (about 15 minutes), then write
    python3 bench/engine_figures.py --no-run     # write from target/criterion as it is
    python3 bench/engine_figures.py --check      # exit 1 if a target is not met

A benchmark missing from target/criterion is an error naming it (run without --no-run).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from hostinfo import check_block, describe_host, write_block

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "PERFORMANCE.md"
BLOCK = ("engine-figures", "bench/engine_figures.py")
BENCH = [
    "cargo",
    "bench",
    "-p",
    "mslink-link",
    "--bench",
    "sched",
    "--bench",
    "arq",
    "--bench",
    "xor",
    "--bench",
    "rs",
    "--",
    "--warm-up-time",
    "1",
    "--measurement-time",
    "3",
]
# Fastest first, as RsKernel::ALL orders them.
KERNELS = ["avx512-gfni", "avx2-gfni", "avx2-shuffle", "ssse3-shuffle", "neon-shuffle", "scalar"]
CODES = [(255, 223), (255, 239), (255, 251), (255, 181), (255, 57)]
RS_OPS = [
    "encode",
    "encode_blocks",
    "decode_clean",
    "decode_blocks_clean",
    "decode_t_half",
    "decode_t",
]


class Missing(Exception):
    pass


def estimate(criterion: Path, *parts: str) -> tuple[float, dict]:
    """Mean time per iteration (ns) and criterion's benchmark record of one benchmark."""
    d = criterion.joinpath(*parts, "new")
    try:
        est = json.loads((d / "estimates.json").read_text())
        rec = json.loads((d / "benchmark.json").read_text())
    except FileNotFoundError as e:
        raise Missing("/".join(parts)) from e
    return est["mean"]["point_estimate"], rec


def per_second(criterion: Path, *parts: str) -> float:
    """Throughput: bytes or elements per second, from criterion's own throughput record."""
    ns, rec = estimate(criterion, *parts)
    t = rec.get("throughput") or {}
    amount = t.get("Bytes") or t.get("Elements") or t.get("BytesDecimal")
    if not amount:
        raise Missing("/".join(parts) + " (no throughput recorded)")
    return amount / (ns * 1e-9)


def kernels_measured(criterion: Path) -> list[str]:
    d = criterion / "RS(255,223)" / "encode"
    return [k for k in KERNELS if (d / k / "new" / "estimates.json").exists()]


def default_kernel() -> str:
    """The kernel `RsCodec::new(32)` runs on this CPU, as the RS dispatch test reports it
    (the codec's own rule, not a copy of it: e.g. AVX2 GFNI before AVX-512 on AMD Zen 4)."""
    test = ["cargo", "test", "--release", "-p", "mslink-link", "--test", "rs_simd"]
    out = subprocess.run(
        [*test, "reports_which_paths_run", "--", "--nocapture"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    m = re.search(r"RsCodec::new runs (\w+)", out.stdout + out.stderr)
    if not m:
        raise Missing("the line 'RsCodec::new runs ...' of " + " ".join(test))
    # Debug name (Avx2Gfni) to bench label (avx2-gfni).
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", m.group(1)).lower()


def gb(x: float) -> str:
    return f"{x / 1e9:.2f} GB/s"


def table(criterion: Path, best: str) -> tuple[str, list]:
    have = kernels_measured(criterion)
    if best not in have:
        raise Missing(f"RS(255,223)/encode/{best} (the kernel RsCodec::new runs here)")
    rows: list[tuple[str, str, str, bool | None]] = []

    def sched(name: str, queues: int, label: str, target: float | None) -> None:
        ns, _ = estimate(criterion, "sched_push_pop", name, str(queues))
        rows.append(
            (
                f"{label}, {queues} queues",
                f"{ns:.1f} ns",
                f"≤ {target:.0f} ns" if target else "—",
                ns <= target if target else None,
            )
        )

    for q in (8, 1024):
        sched("scfq", q, "SCFQ enqueue + dequeue per frame", 150)
    for q in (8, 1024):
        sched("elf", q, "ELF enqueue + dequeue per frame", 150)
    for q in (8, 1024):
        sched("elf_with_report", q, "ELF with one MAC report per frame", None)
    label = "RS(255,223)"
    for op, target, unit, issue in [
        ("encode", 1.5e9, "message bytes", "issue 20"),
        ("decode_clean", 2e9, "codeword bytes", "issue 20"),
    ]:
        v = per_second(criterion, label, op, best)
        rows.append(
            (
                f"{label} {op}, `{best}` (what `RsCodec::new` runs here), {unit}",
                gb(v),
                f"≥ {target / 1e9:g} GB/s ({issue})",
                v >= target,
            )
        )
    if "avx2-shuffle" in have:
        # Issue 34's target is judged on the path the RS service runs: a frame's codewords
        # encoded and checked together (8 per frame in the benchmark); one codeword at a time
        # is shown beside it.
        for op, alone in (("encode_blocks", "encode"), ("decode_blocks_clean", "decode_clean")):
            v = per_second(criterion, label, op, "avx2-shuffle")
            rows.append(
                (
                    f"{label} {op} (a frame's codewords together, as the RS service runs), "
                    "`avx2-shuffle` (the kernel of AVX2-only hosts, run here)",
                    gb(v),
                    "≥ 2 GB/s (issue 34)",
                    v >= 2e9,
                )
            )
            v = per_second(criterion, label, alone, "avx2-shuffle")
            rows.append(
                (f"{label} {alone} (one codeword at a time), `avx2-shuffle`", gb(v), "—", None)
            )
    for op in ("encode", "decode_clean"):
        v = per_second(criterion, label, op, "scalar")
        rows.append((f"{label} {op}, `scalar`", gb(v), "—", None))
    for size in (100, 1000, 1500, 9000):
        v = per_second(criterion, "xor_parity", str(size))
        target = 5e9 if size == 1000 else None
        rows.append(
            (
                f"XOR parity, {size}-byte frames",
                f"{v / 2**30:.1f} GiB/s",
                "≥ 5 GB/s" if target else "—",
                v >= target if target else None,
            )
        )
    for size, target in ((64, 5e6), (1000, None)):
        v = per_second(criterion, "selective_repeat_loss_free", "sdu_bytes", str(size))
        rows.append(
            (
                f"Selective Repeat through a loss-free in-memory pair, {size} B SDUs",
                f"{v / 1e6:.1f} M frames/s",
                "≥ 5 M frames/s" if target else "—",
                v >= target if target else None,
            )
        )
    out = [describe_host(), "", "```sh", " ".join(BENCH), "```", ""]
    out += ["| what | measured | target | |", "|---|---|---|---|"]
    for what, val, target, met in rows:
        verdict = "" if met is None else ("met" if met else "**not met**")
        out.append(f"| {what} | {val} | {target} | {verdict} |")
    out += [
        "",
        "Every Reed-Solomon code by kernel (MB/s = 10^6 bytes/s; the encodes count message bytes,",
        "the decodes codeword bytes; `*_blocks` run 8 codewords of a frame together, as the RS",
        "service does; `decode_t_half` and `decode_t` correct t/2 and t errors):",
        "",
        "| code | operation | " + " | ".join(have) + " |",
        "|---|---|" + "---|" * len(have),
    ]
    for n, k in CODES:
        for op in RS_OPS:
            cells = []
            for kern in have:
                try:
                    cells.append(f"{per_second(criterion, f'RS({n},{k})', op, kern) / 1e6:,.0f}")
                except Missing:
                    cells.append("—")
            out.append(f"| RS({n},{k}) | {op} | " + " | ".join(cells) + " |")
    failed = [r for r in rows if r[3] is False]
    return "\n".join(out) + "\n", failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-run", action="store_true", help="do not benchmark; use target/criterion")
    ap.add_argument("--check", action="store_true", help="exit 1 if a target is not met")
    ap.add_argument("--doc", type=Path, default=DOC, help="the file whose block is rewritten")
    a = ap.parse_args()
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    check_block(a.doc, *BLOCK)
    if not a.no_run:
        subprocess.run(BENCH, cwd=ROOT, check=True)
    try:
        text, failed = table(target_dir / "criterion", default_kernel())
    except Missing as e:
        msg = f"engine_figures.py: no criterion estimate for {e}; run without --no-run"
        print(msg, file=sys.stderr)
        return 1
    write_block(a.doc, *BLOCK, text)
    print(text)
    for what, val, target, _ in failed:
        print(f"engine_figures.py: not met: {what}: {val} against {target}", file=sys.stderr)
    return 1 if a.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
