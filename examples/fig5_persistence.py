"""003 Fig. 5 end to end: end-to-end packet loss against the local loss rate for each maximum
retransmit count k of Karn's RLP, with the closed form p^(k+1) drawn beside the simulation.

    python examples/fig5_persistence.py --reps 5 --out results/fig5-py

Writes fig5_persistence.png and fig5.parquet.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mslink

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios/003/fig5_persistence.toml"
LOSS = "segment.0.error.loss"
K = "segment.0.link.service.0.max_retransmissions"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=float, default=200.0, help="seconds per run")
    ap.add_argument("--out", type=Path, default=Path("results/fig5-py"))
    args = ap.parse_args(argv)

    sc = mslink.Scenario.load(SCENARIO)
    sc["sim.duration_s"] = args.duration
    df = mslink.sweep(sc, reps=args.reps)
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_parquet(args.out / "fig5.parquet")
    fig = mslink.plot.metric_vs_loss(
        df,
        x=LOSS,
        y="loss_rate",
        hue=K,
        logy=True,
        label=lambda k: f"k = {k}",
        xlabel="local packet loss rate p",
        ylabel="end-to-end packet loss (%)",
        title="003 Fig. 5: persistence (simulation and the closed form p^(k+1))",
    )
    ps = sorted(df[LOSS].unique())
    for k in sorted(df[K].unique()):
        closed = [(p, 100 * p ** (k + 1), 0.0) for p in ps]  # in % as the y axis
        fig.lines.append((f"p^{k + 1} (k = {k}, closed form)", closed))
    fig.savefig(args.out / "fig5_persistence.png")
    means = df.groupby([K, LOSS])["loss_rate"].mean().unstack(LOSS)
    print(means.to_string(float_format=lambda v: f"{v:.2e}"))
    print(f"figure and data in {args.out}")


if __name__ == "__main__":
    main()
