"""004 Figs. 7-8 end to end: continuous media over one WLAN link, each link-layer scheme at
Table I's four frame loss rates, residual loss and delay with error bars over repetitions.

    python examples/fig7_cbr.py --reps 30 --out results/fig7-py   # 004's 30 repetitions

Writes fig7_loss.png (Fig. 7: residual loss vs frame loss rate per scheme), fig8_delay.png
(Fig. 8: mean delay), fig7.parquet (every run) and prints the means at each loss rate.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mslink

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios/004/fig7_cbr_one_wlan.toml"
# 004 Table I: mean error interval (bytes) -> WLAN frame loss rate.
TABLE_I = {131072: 0.008, 65536: 0.015, 32768: 0.03, 16384: 0.059}
SCHEME = "segment.1.link.service.0"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions per point (004: 30)")
    ap.add_argument("--duration", type=float, default=500.0, help="seconds per run (004: 500)")
    ap.add_argument("--out", type=Path, default=Path("results/fig7-py"))
    ap.add_argument("--scheduler", help="Dask scheduler address (default: this machine)")
    args = ap.parse_args(argv)

    sc = mslink.Scenario.load(SCENARIO)
    sc["sim.duration_s"] = args.duration
    df = mslink.sweep(sc, reps=args.reps, client=args.scheduler)  # the file's own [sweep]
    df["scheme"] = df[SCHEME]  # the sweep column names each scheme ("SR", "OOS RLP")
    df["frame_loss"] = df["segment.1.error.mean_bytes"].map(TABLE_I)
    df["delay_ms"] = df["delay_mean_s"] * 1e3

    args.out.mkdir(parents=True, exist_ok=True)
    df.to_parquet(args.out / "fig7.parquet")
    fig = mslink.plot.metric_vs_loss(
        df,
        x="frame_loss",
        y="loss_rate",
        hue="scheme",
        xlabel="frame loss rate",
        title="004 Fig. 7: CBR over one WLAN link",
    )
    fig.savefig(args.out / "fig7_loss.png")
    fig = mslink.plot.metric_vs_loss(
        df,
        x="frame_loss",
        y="delay_mean_s",
        hue="scheme",
        xlabel="frame loss rate",
        title="004 Fig. 8: delay",
    )
    fig.savefig(args.out / "fig8_delay.png")
    table = df.pivot_table(
        index="frame_loss", columns="scheme", values=["loss_rate", "delay_ms"], aggfunc="mean"
    )
    table.to_csv(args.out / "fig7_means.csv")
    print(table.round(4).to_string())
    print(f"figures and data in {args.out}")


if __name__ == "__main__":
    main()
