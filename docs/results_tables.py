"""Tables of docs/results.md generated from the published ledger run (docs/results/claims.json).

    python3 docs/results_tables.py           # rewrite the blocks between the markers
    python3 docs/results_tables.py --check   # exit 1 if a block differs from claims.json

tests/python/test_results_tables.py runs the check, so a table cannot drift from the run it
quotes. Each table names the claims it reads; its numbers are the report's own (estimate and
95% half-width as `mslink reproduce` printed them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
CLAIMS = DOCS / "results" / "claims.json"
RESULTS = DOCS / "results.md"

# Media scheme by TCP scheme, as claims/004.toml names the fading claims.
FADING_TCP = [("sr", "SR"), ("karn", "Karn's RLP"), ("snoop", "Snoop")]
FADING_MEDIA = [("oos", "OOS RLP"), ("karn", "Karn's RLP"), ("xor", "XOR FEC")]
ESTIMATE = re.compile(r"= ([-0-9.e]+) ± ([-0-9.e]+) \(expected")


def _ratio(check: dict) -> str:
    m = ESTIMATE.search(check["text"])
    if not m:
        raise ValueError(f"no estimate in {check['text']!r}")
    n = min(c["n"] for c in check["cells"])
    return f"{float(m.group(1)):.3g} ± {float(m.group(2)):.2g} ({n})"


def fading_table(doc: dict) -> str:
    """Loss beside / alone of every media scheme beside every TCP scheme, claims 004-fading-*."""
    by_id = {c["id"]: c for c in doc["claims"]}
    rows = [
        "| TCP scheme | media scheme | loss beside / alone, 3% of the time in a fade (reps) "
        "| at 5.9% (reps) | verdict |",
        "|---|---|---|---|---|",
    ]
    for t, tcp in FADING_TCP:
        for m, media in FADING_MEDIA:
            c = by_id[f"004-fading-{t}-{m}-loss-same"]
            at = {ch["at"]: ch for ch in c["checks"]}
            rows.append(
                f"| {tcp} | {media} | {_ratio(at['loss 3.0'])} | {_ratio(at['loss 5.9'])} "
                f"| {c['verdict']} |"
            )
    return "\n".join(rows) + "\n"


TABLES = {"fading": fading_table}


def marker(name: str) -> tuple[str, str]:
    return (
        f"<!-- results-table {name}: begin (docs/results_tables.py writes this) -->",
        f"<!-- results-table {name}: end -->",
    )


def render(text: str, doc: dict) -> str:
    for name, make in TABLES.items():
        begin, end = marker(name)
        if begin not in text or end not in text:
            raise ValueError(f"docs/results.md lacks the markers of table {name!r}")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{make(doc)}{end}{tail}"
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a table is out of date")
    a = ap.parse_args()
    doc = json.loads(CLAIMS.read_text())
    text = RESULTS.read_text()
    new = render(text, doc)
    if a.check:
        if new != text:
            print(
                "docs/results.md: a table differs from docs/results/claims.json; run "
                "python3 docs/results_tables.py",
                file=sys.stderr,
            )
            return 1
        return 0
    RESULTS.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
