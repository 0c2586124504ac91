"""docs/results.md's generated tables agree with the published ledger run they quote."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tables():
    spec = importlib.util.spec_from_file_location("results_tables", ROOT / "docs/results_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_results_md_tables_are_those_of_claims_json():
    t = _tables()
    doc = json.loads((ROOT / "docs/results/claims.json").read_text())
    text = (ROOT / "docs/results.md").read_text()
    assert t.render(text, doc) == text, "run python3 docs/results_tables.py"


def test_a_table_edited_by_hand_is_caught():
    t = _tables()
    doc = json.loads((ROOT / "docs/results/claims.json").read_text())
    text = (ROOT / "docs/results.md").read_text()
    begin, _ = t.marker("fading")
    head, rest = text.split(begin, 1)
    edited = head + begin + rest.replace("| holds |", "| fails |", 1)
    assert edited != text
    assert t.render(edited, doc) != edited
    # And every one of the nine pairs is in the table, with its verdict from the run.
    table = t.fading_table(doc)
    assert table.count("\n| ") == 9
    for c in doc["claims"]:
        if c["id"].startswith("004-fading-") and c["id"].endswith("-loss-same"):
            assert c["verdict"] in table
