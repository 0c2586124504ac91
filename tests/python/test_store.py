"""The result store from Python (issue 32): runs are made once and reused by later calls and
by `mslink sim --store`, and the results are the same whether a run came from the store or
not."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
from pandas.testing import assert_frame_equal

import mslink

# A short wireless hop whose error model is a trace file (so the key covers a trace's text)
# and a 2x2 grid with 2 repetitions: 8 runs.
SCENARIO = """[sim]
name = "store"
duration_s = 3
reps = 2

[[segment]]
kind = "wireless"
rate_bps = 1000000
delay_ms = 5
frame_bytes = 1000
error = { model = "trace", file = "t.trace" }

[segment.link]
mtu = 996
[[segment.link.service]]
name = "u"
scheme = "raw"

[[flow]]
name = "cbr"
app = "cbr"
from = 0
to = 1
rate_bps = 100000
packet_bytes = 500

[sweep]
"flow.0.rate_bps" = [100000, 200000]
"segment.0.delay_ms" = [5, 10]
"""
TRACE = "# mslink error trace\nok * 20\nloss\nok * 7\ntrunc 300\nok * 20\n"


def scenario(tmp_path: Path) -> Path:
    (tmp_path / "t.trace").write_text(TRACE)
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO)
    return p


def stored(store: Path) -> int:
    return len(list(store.glob("*/*.json")))


def test_a_second_sweep_takes_every_run_from_the_store(tmp_path: Path) -> None:
    sc, store = scenario(tmp_path), tmp_path / "store"
    first = mslink.run(sc, store=store, progress=False)
    assert first.reused == 0 and stored(store) == 8
    second = mslink.run(sc, store=store, progress=False)
    assert second.reused == 8 and stored(store) == 8
    plain = mslink.run(sc, progress=False)
    assert plain.reused == 0
    # Every table, and the summary to the byte, whether the runs were made or read back.
    for res in (first, second):
        for table in ("flows", "timeseries", "links", "services", "runs"):
            assert_frame_equal(getattr(res, table), getattr(plain, table))
    assert len(second.services) > 0
    assert (
        second.save(tmp_path / "b").joinpath("summary.json").read_text()
        == plain.save(tmp_path / "p").joinpath("summary.json").read_text()
    )


def test_one_more_repetition_makes_only_the_new_runs(tmp_path: Path) -> None:
    sc, store = scenario(tmp_path), tmp_path / "store"
    two = mslink.sweep(sc, store=store, progress=False)
    three = mslink.run(sc, reps=3, store=store, progress=False)
    assert three.reused == 8 and stored(store) == 12
    old = three.flows[three.flows["rep"] < 2].reset_index(drop=True)
    assert_frame_equal(old, two.sort_values(["point", "rep"]).reset_index(drop=True))
    assert_frame_equal(three.flows, mslink.run(sc, reps=3, progress=False).flows)
    # Another seed is another run.
    assert mslink.run(sc, seed=99, store=store, progress=False).reused == 0


def read_csv(path: Path) -> pd.DataFrame:
    # round_trip: the CLI writes the shortest text that reads back to the same f64.
    precise = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    return pd.read_csv(path, keep_default_na=False, na_values=["NaN"], **precise)


def cli_sim(cli: str, sc: Path, store: Path, out: Path) -> int:
    """Runs `mslink sim --store`; returns how many runs its note says came from the store."""
    p = subprocess.run(
        [cli, "sim", str(sc), "--store", str(store), "--out", str(out), "--no-plots"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    m = re.search(r"(\d+) of (\d+) runs came from the store", p.stderr)
    assert m, p.stderr
    return int(m.group(1))


def test_python_and_the_cli_share_the_store(cli: str, tmp_path: Path) -> None:
    sc = scenario(tmp_path)
    # The CLI makes the runs, Python reuses every one of them.
    store = tmp_path / "store"
    assert cli_sim(cli, sc, store, tmp_path / "cli") == 0
    res = mslink.run(sc, store=store, progress=False)
    assert res.reused == 8 and stored(store) == 8
    flows = read_csv(tmp_path / "cli" / "flows.csv")
    common = [c for c in flows.columns if c in res.flows.columns]
    assert len(common) > 10
    api = res.flows[common].copy()
    for c in common:
        if pd.api.types.is_numeric_dtype(api[c]) and pd.api.types.is_numeric_dtype(flows[c]):
            # The CSV shows 500.0 as "500", which reads back as an integer column.
            api[c], flows[c] = api[c].astype("float64"), flows[c].astype("float64")
        else:
            api[c], flows[c] = api[c].astype(str), flows[c].astype(str)
    assert_frame_equal(api, flows[common])
    # Python makes the runs, the CLI reuses every one, and its files are those of a CLI run
    # that made them itself.
    other = tmp_path / "store2"
    mslink.run(sc, store=other, progress=False)
    assert cli_sim(cli, sc, other, tmp_path / "reused") == 8
    for name in ("flows.csv", "timeseries.csv", "stats.csv"):
        assert (tmp_path / "reused" / name).read_bytes() == (
            tmp_path / "cli" / name
        ).read_bytes(), name
    # summary.json too, but for its provenance (which names the results folder).
    texts = [(tmp_path / d / "summary.json").read_text() for d in ("reused", "cli")]
    events = [t.split('"provenance"')[0] for t in texts]
    runs = [t.split('"runs": [', 1)[1] for t in texts]
    assert events[0] == events[1] and runs[0] == runs[1]
