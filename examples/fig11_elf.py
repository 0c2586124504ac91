"""003 Fig. 11 end to end: an ELF-scheduled 800 kbit/s cell over a "walls"-like error trace;
moving-window throughput of each flow. Audio and video hold reservations (8 and 352 kbit/s)
and keep them; the two best-effort flows share what is left and bear the loss equally.

    python examples/fig11_elf.py --out results/fig11-py

Writes fig11_throughput.png, fig11.parquet (the time series) and prints each flow's mean.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mslink

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios/003/fig11_elf_walls.toml"
RESERVED = {"audio": 8_000, "video": 352_000}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=1000.0, help="simulated seconds")
    ap.add_argument("--out", type=Path, default=Path("results/fig11-py"))
    args = ap.parse_args(argv)

    sc = mslink.Scenario.load(SCENARIO)
    sc["sim.duration_s"] = args.duration
    res = mslink.run(sc)
    args.out.mkdir(parents=True, exist_ok=True)
    res.timeseries.to_parquet(args.out / "fig11.parquet")
    fig = mslink.plot.throughput(
        res.timeseries,
        point=0,
        rep=0,
        title="003 Fig. 11: ELF over a walls-like trace (5 s window)",
    )
    fig.savefig(args.out / "fig11_throughput.png")
    flows = res.flows.set_index("flow")
    for name, row in flows.iterrows():
        want = RESERVED.get(str(name))
        note = f" (reserved {want / 1e3:g} kbit/s)" if want else " (best effort)"
        print(f"{name:>6}: {row.throughput_bps / 1e3:8.1f} kbit/s{note}")
    print(f"figure and data in {args.out}")


if __name__ == "__main__":
    main()
