"""Overhead of the Python API over the CLI for a 1,000-run sweep of a small scenario.

    flock /tmp/mslink-build.lock python benches/python_overhead.py [--rounds 7]

The sweep: scenarios/004/fig7_cbr_one_wlan.toml (wired + WLAN hop, one CBR flow, 20 points)
with 50 repetitions of SECONDS simulated seconds = 1,000 runs, on one thread per CPU. Each
round times, alternating so that drifts hit all alike (medians reported):

* cli:    `target/release/mslink sim --quiet --reps 50 --set sim.duration_s=S --out DIR`, the
          whole process (start, runs, flows.csv / timeseries.csv / summary.json written);
* run:    `mslink.run(sc, reps=50)` called in this (warm) interpreter: runs, and every table
          (flows, timeseries, links, services) built as DataFrames;
* sweep:  `mslink.sweep(sc, reps=50)`, the same, returning the tidy flows DataFrame;
* run+save: `mslink.run(...).save(DIR)`: also the summary and Parquet files written, the
          CLI's work item for item;
* fresh:  `python -c "import mslink; mslink.run(...)"`: a new interpreter each time, so
          also Python's start and the imports (pandas, ...), a fixed cost per process.

Not a test: hold the build lock while it runs so no build disturbs it.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios/004/fig7_cbr_one_wlan.toml"


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    import mslink

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=20.0, help="simulated seconds per run")
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    cli = str(ROOT / "target/release/mslink")
    sc = mslink.Scenario.load(SCENARIO)
    sc["sim.duration_s"] = args.seconds
    n = 20 * args.reps
    fresh = (
        "import mslink, sys; sc = mslink.Scenario.load(sys.argv[1]); "
        "sc['sim.duration_s'] = float(sys.argv[2]); "
        "r = mslink.run(sc, reps=int(sys.argv[3]), progress=False); "
        "assert len(r.flows) == 20 * int(sys.argv[3])"
    )

    def in_process(fn: str) -> float:
        t = time.perf_counter()
        r = getattr(mslink, fn)(sc, reps=args.reps, progress=False)
        took = time.perf_counter() - t
        assert len(r.flows if fn == "run" else r) == n
        return took

    in_process("run")  # warm-up: first-call imports (tqdm, concurrent.futures)
    times: dict[str, list[float]] = {"cli": [], "run": [], "sweep": [], "run+save": [], "fresh": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            times["cli"].append(
                timed(
                    [
                        cli,
                        "sim",
                        "--quiet",
                        "--reps",
                        str(args.reps),
                        f"--set=sim.duration_s={args.seconds}",
                        "--out",
                        tmp,
                        str(SCENARIO),
                    ]
                )
            )
            times["run"].append(in_process("run"))
            times["sweep"].append(in_process("sweep"))
            t = time.perf_counter()
            mslink.run(sc, reps=args.reps, progress=False).save(Path(tmp) / "py")
            times["run+save"].append(time.perf_counter() - t)
            times["fresh"].append(
                timed(
                    [sys.executable, "-c", fresh, str(SCENARIO), str(args.seconds), str(args.reps)]
                )
            )
    cli_t = statistics.median(times["cli"])
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs; python "
        f"{platform.python_version()}; {n} runs of {args.seconds:g} simulated s"
    )
    for k, v in times.items():
        m = statistics.median(v)
        extra = "" if k == "cli" else f"  overhead {100 * (m / cli_t - 1):+.1f}%"
        print(
            f"{k:>6}: median {m:.3f} s over {len(v)} rounds "
            f"(min {min(v):.3f}, max {max(v):.3f}){extra}"
        )


if __name__ == "__main__":
    main()
