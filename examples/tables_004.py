"""004's TCP figures as Markdown tables from an `mslink sim` results folder: mean ± standard
deviation over the repetitions, one row per link-layer scheme, one column per loss setting.

    mslink sim scenarios/004/fig2_ftp_one_wlan.toml --out r/fig2 --reps 30 --jobs 2
    python examples/tables_004.py r/fig2                 # Fig. 2: FTP, Mbit/s
    python examples/tables_004.py r/fig4 --unit kbit     # Fig. 4 (HSCSD) in kbit/s
    python examples/tables_004.py r/fig15 --unit kbit    # Figs. 15 and 20: FTP / WWW / media

Single-application files (Figs. 2-6) give the application's throughput; multi-service files
(Figs. 13-20) give FTP / WWW throughput and the media flow's residual loss and delay (mean plus
standard deviation, 004's delay metric). docs/results.md holds the tables this printed for
004's 30 repetitions.
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="an `mslink sim --out` folder")
    ap.add_argument("--unit", choices=sorted(UNITS), default="mbit", help="throughput unit")
    args = ap.parse_args(argv)
    csv = args.results / "flows.csv"
    if not csv.is_file():
        raise SystemExit(f"{csv}: no such file (run `mslink sim ... --out {args.results}` first)")
    print(table(pd.read_csv(csv), UNITS[args.unit]))


if __name__ == "__main__":
    main()
