"""004's TCP figures as Markdown tables from an `mslink sim` results folder: mean ± standard
deviation over the repetitions, one row per link-layer scheme, one column per loss setting.

    mslink sim scenarios/004/fig2_ftp_one_wlan.toml --out r/fig2 --reps 30 --jobs 2
    python examples/tables_004.py r/fig2                 # Fig. 2: FTP, Mbit/s
    python examples/tables_004.py r/fig4 --unit kbit     # Fig. 4 (HSCSD) in kbit/s
    python examples/tables_004.py r/fig15 --unit kbit    # Figs. 15 and 20: FTP / WWW / media
    python examples/tables_004.py r/fig13 --alone r/fig7 # media loss beside TCP vs alone

Single-application files (Figs. 2-6) give the application's throughput; multi-service files
(Figs. 13-20) give FTP / WWW throughput and the media flow's residual loss and delay (mean plus
standard deviation, 004's delay metric). With `--alone`, a multi-service folder also gets the
table 004 §V.D's claim rests on: the media flow's residual loss (lost packets over all
repetitions, with a 95% interval) beside each TCP scheme and alone on OOS RLP, from the
single-application run of the same links (Figs. 7, 9, 10). docs/results.md holds the tables this
printed for 004's 30 repetitions.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

UNITS = {"mbit": 1e6, "kbit": 1e3}


def scheme_of(service: str) -> str:
    """The TCP service's scheme in a sweep value (a service table, or a list of them)."""
    m = re.search(r'scheme = "(\w+)"', service)
    if m is None:
        raise SystemExit(f"no scheme in service value {service!r}")
    return m.group(1)


def table(flows: pd.DataFrame, scale: float) -> str:
    loss_key = next((c for c in flows.columns if ".error" in c), None)
    svc_key = next((c for c in flows.columns if ".link.service" in c), None)
    if loss_key is None or svc_key is None:
        raise SystemExit(
            "flows.csv has no swept error model and link service: not a 004 TCP figure"
        )
    flows = flows.assign(scheme=flows[svc_key].map(scheme_of))
    losses = list(dict.fromkeys(flows[loss_key]))
    names = set(flows["flow"])
    media = sorted(names - {"ftp", "www"})
    multi = {"ftp", "www"} <= names

    def cell(x: pd.DataFrame) -> str:
        def rate(flow: str) -> str:
            t = x[x["flow"] == flow]["throughput_bps"] / scale
            return f"{t.mean():.2f} ± {t.std():.2f}"

        if not multi:
            return rate(x["flow"].iloc[0])
        parts = [rate("ftp"), rate("www")]
        if media:
            m = x[x["flow"] == media[0]]
            delay_ms = (m["delay_mean_s"] + m["delay_std_s"]).mean() * 1e3
            parts.append(f"{m['loss_rate'].mean() * 100:.2f}%, {delay_ms:.0f} ms")
        return " / ".join(parts)

    lines = [
        "| scheme | " + " | ".join(str(v) for v in losses) + " |",
        "|---" * (len(losses) + 1) + "|",
    ]
    for s in dict.fromkeys(flows["scheme"]):
        at = flows[flows["scheme"] == s]
        lines.append(f"| {s} | " + " | ".join(cell(at[at[loss_key] == v]) for v in losses) + " |")
    return "\n".join(lines)


def pooled(x: pd.DataFrame) -> str:
    """Lost over sent, summed over the rows, as a percentage with a 95% interval (normal
    approximation to the binomial count)."""
    sent = int(x["sent"].sum())
    lost = sent - int(x["received"].sum())
    if sent == 0:
        return "-"
    p = lost / sent
    half = 1.96 * (max(lost, 1) * (1 - p)) ** 0.5 / sent
    return f"{p * 100:.3f}% ± {half * 100:.3f}"


def isolation(multi: pd.DataFrame, alone: pd.DataFrame) -> str:
    """The media flow's loss beside each TCP scheme (multi-service run) and alone on OOS RLP."""

    def keys(df: pd.DataFrame) -> tuple[str, str]:
        loss = next(c for c in df.columns if ".error" in c)
        svc = next(c for c in df.columns if ".link.service" in c)
        return loss, svc

    mloss, msvc = keys(multi)
    aloss, asvc = keys(alone)
    media = multi[~multi["flow"].isin(["ftp", "www"])]
    media = media.assign(scheme=media[msvc].map(scheme_of))
    oos = alone[alone[asvc].str.contains('scheme = "oos_rlp"')]
    schemes = [s for s in dict.fromkeys(media["scheme"]) if s != "raw"]
    lines = [
        "| frame loss | alone (OOS RLP) | " + " | ".join(f"beside {s}" for s in schemes) + " |",
        "|---" * (len(schemes) + 2) + "|",
    ]
    for v in dict.fromkeys(media[mloss]):
        row = [pooled(oos[oos[aloss].astype(str) == str(v)])]
        row += [pooled(media[(media[mloss] == v) & (media["scheme"] == s)]) for s in schemes]
        lines.append(f"| {v} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="an `mslink sim --out` folder")
    ap.add_argument("--unit", choices=sorted(UNITS), default="mbit", help="throughput unit")
    ap.add_argument(
        "--alone",
        type=Path,
        help="the single-application CBR run of the same links, for the media loss comparison",
    )
    args = ap.parse_args(argv)

    def load(folder: Path) -> pd.DataFrame:
        csv = folder / "flows.csv"
        if not csv.is_file():
            raise SystemExit(f"{csv}: no such file (run `mslink sim ... --out {folder}` first)")
        return pd.read_csv(csv)

    flows = load(args.results)
    print(table(flows, UNITS[args.unit]))
    if args.alone is not None:
        print()
        print(isolation(flows, load(args.alone)))


if __name__ == "__main__":
    main()
