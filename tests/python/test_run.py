"""Runs from Python equal the CLI's files; executors and Parquet keep every value."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import mslink
from mslink import Result, Scenario

ROOT = Path(__file__).resolve().parents[2]
FIG7 = ROOT / "scenarios/004/fig7_cbr_one_wlan.toml"
FIG11 = ROOT / "scenarios/003/fig11_elf_walls.toml"


def cli_run(cli: str, scenario: Path, out: Path, *args: str) -> None:
    subprocess.run([cli, "sim", "--quiet", "--out", str(out), *args, str(scenario)], check=True)


def read_csv(path: Path) -> pd.DataFrame:
    # round_trip: the CLI writes the shortest text that reads back to the same f64.
    # (pandas 3 reads that way by default and deprecates the option.)
    precise = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    return pd.read_csv(path, keep_default_na=False, na_values=["NaN"], **precise)


def same_table(api: pd.DataFrame, csv: pd.DataFrame) -> None:
    api = api[list(csv.columns)]
    assert len(api) == len(csv)
    for c in csv.columns:
        a, b = api[c], csv[c]
        if pd.api.types.is_numeric_dtype(b) and pd.api.types.is_numeric_dtype(a):
            # The CSV shows 500.0 as "500", which reads back as an integer column.
            assert_series_equal_values(a.astype("float64"), b.astype("float64"), c)
        else:
            assert list(a.astype(str)) == list(b.astype(str)), c


def assert_series_equal_values(a: pd.Series, b: pd.Series, name: str) -> None:
    assert ((a.values == b.values) | (a.isna().values & b.isna().values)).all(), name


@pytest.mark.parametrize(
    ("scenario", "sets"),
    [
        (FIG7, {"sim.duration_s": 15}),
        (FIG11, {"sim.duration_s": 60}),
    ],
    ids=["004-fig7-sweep", "003-fig11-cell-trace"],
)
def test_run_equals_the_cli_files(cli: str, tmp_path: Path, scenario: Path, sets: dict) -> None:
    out = tmp_path / "cli"
    cli_args = [f"--set={k}={v}" for k, v in sets.items()]
    cli_run(cli, scenario, out, *cli_args, "--set=sim.seed=5", "--reps=2")
    sc = Scenario.load(scenario).update(sets)
    res = mslink.run(sc, seed=5, reps=2, progress=False)
    same_table(res.flows, read_csv(out / "flows.csv"))
    same_table(res.timeseries, read_csv(out / "timeseries.csv"))
    # The same means and Student-t intervals, from the same list of metrics.
    same_table(res.stats(), read_csv(out / "stats.csv"))
    cli_summary = json.loads((out / "summary.json").read_text())
    # Both say where the results came from; the CLI quotes the file, Python its normalized TOML.
    prov, cli_prov = res.summary.pop("provenance"), cli_summary.pop("provenance")
    assert prov["seed"] == cli_prov["seed"] == 5 and prov["reps"] == cli_prov["reps"] == 2
    assert prov["mslink_version"] == cli_prov["mslink_version"]
    assert res.summary == cli_summary
    assert len(res.links) == 2 * sum(len(r["run"]["segments"]) for r in res.summary["runs"])
    assert res.runs["events"].sum() == res.summary["events"]
    if scenario == FIG7:
        # The sweep keys are columns; 20 points x 2 reps, one flow each.
        assert len(res.flows) == 40
        assert set(res.flows["segment.1.error.mean_bytes"]) == {131072, 65536, 32768, 16384}
        lossy = res.links[(res.links.segment == 1) & (res.links.direction == "ltr")]
        assert (lossy.lost > 0).all()
        assert set(res.services.scheme) == {
            "raw",
            "xor_fec",
            "selective_repeat",
            "karn_rlp",
            "oos_rlp",
        }


def test_same_results_on_any_executor() -> None:
    sc = Scenario.load(FIG7).set("sim.duration_s", 5)
    grid = {
        "segment.1.error.mean_bytes": [65536, 16384],
        "segment.1.link.service.0": [
            {"name": "cbr", "scheme": "raw"},
            {"name": "cbr", "scheme": "karn_rlp"},
        ],
    }
    one = mslink.sweep(sc, grid, reps=3, jobs=1, progress=False)
    two = mslink.sweep(sc, grid, reps=3, jobs=2, progress=False)
    with ProcessPoolExecutor(2) as pool:
        procs = mslink.sweep(sc, grid, reps=3, client=pool, progress=False)
    assert len(one) == 2 * 2 * 3
    assert_frame_equal(one, two)
    assert_frame_equal(one, procs)
    assert list(one.columns[:5]) == [
        "scenario",
        "point",
        "segment.1.error.mean_bytes",
        "segment.1.link.service.0",
        "rep",
    ]
    # Repetition 0 runs on the scenario's seed, the others on independent seeds of their own
    # (the same ones at every point).
    seeds = list(one.seed)
    assert seeds[0] == 1 and len(set(seeds[:3])) == 3 and seeds == seeds[:3] * 4


def test_xarray_view_has_a_dimension_per_sweep_key() -> None:
    sc = Scenario.load(FIG7).set("sim.duration_s", 3)
    grid = {"segment.1.error.mean_bytes": [65536, 16384], "flow.0.rate_bps": [5e5, 1e6]}
    res = mslink.run(sc, grid=grid, reps=2, jobs=1, progress=False)
    ds = res.to_xarray()
    f = res.flows
    flows = list(f["flow"].unique())
    assert dict(ds.sizes) == {
        "segment.1.error.mean_bytes": 2,
        "flow.0.rate_bps": 2,
        "rep": 2,
        "flow": len(flows),
    }
    # Every value is the flows table's, found by name.
    row = f.iloc[-1]
    at = ds.sel(
        {
            "segment.1.error.mean_bytes": row["segment.1.error.mean_bytes"],
            "flow.0.rate_bps": row["flow.0.rate_bps"],
            "rep": row["rep"],
            "flow": row["flow"],
        }
    )
    for col in ("seed", "received", "throughput_bps", "loss_rate"):
        assert float(at[col]) == pytest.approx(float(row[col]), nan_ok=True)
    assert "scenario" not in ds.data_vars and "point" not in ds.data_vars


def test_parquet_round_trip(tmp_path: Path) -> None:
    sc = Scenario.load(FIG7).set("sim.duration_s", 5)
    res = mslink.run(sc, reps=2, progress=False)
    res.save(tmp_path / "r")  # before the summary is parsed: written from the runs' JSON
    back = Result.load(tmp_path / "r")
    for name in ("flows", "timeseries", "links", "services", "runs"):
        assert_frame_equal(getattr(back, name), getattr(res, name))
    assert back.summary == res.summary
    df = mslink.sweep(sc, {"flow.0.rate_bps": [5e5, 1e6]}, progress=False)
    df.to_parquet(tmp_path / "sweep.parquet")
    assert_frame_equal(pd.read_parquet(tmp_path / "sweep.parquet"), df)


def test_run_errors_are_scenario_errors(tmp_path: Path) -> None:
    bad = Scenario.load(FIG11).set("cell.station.0.error.file", "missing.trace")
    with pytest.raises(mslink.ScenarioError, match=r"missing\.trace"):
        mslink.run(bad, progress=False)
    with pytest.raises(mslink.ScenarioError, match="reps"):
        mslink.run(FIG7, reps=0, progress=False)


def test_mslink_command_is_the_cli(tmp_path: Path) -> None:
    v = subprocess.run(["mslink", "--version"], capture_output=True, text=True, check=True)
    assert v.stdout.startswith("mslink")
    bad = subprocess.run(
        ["mslink", "sim", "--out", str(tmp_path), "nope.toml"], capture_output=True, text=True
    )
    assert bad.returncode == 1 and "nope.toml" in bad.stderr
    usage = subprocess.run(["mslink", "no-such-verb"], capture_output=True, text=True)
    assert usage.returncode == 2
    sc = Scenario.load(FIG7)
    out = tmp_path / "out"
    subprocess.run(
        ["mslink", "sim", "--quiet", "--set=sim.duration_s=5", "--out", str(out), str(FIG7)],
        check=True,
    )
    assert_frame_equal(
        read_csv(out / "flows.csv")[["rep", "seed", "sent", "received"]],
        mslink.run(sc.set("sim.duration_s", 5), progress=False).flows[
            ["rep", "seed", "sent", "received"]
        ],
    )


def test_mslink_command_starts_its_own_server_process(tmp_path: Path) -> None:
    """`mslink bench` starts a second copy of itself: under the package that copy is the
    console script (MSLINK_EXE), not the Python interpreter."""
    p = subprocess.run(
        ["mslink", "bench", "local", "--quick", "--sizes", "1", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)


def test_services_count_spurious_and_late_copies() -> None:
    """The services table carries each receiver's spurious and late copies: none at all for any
    service on 004's multi-service WLAN link without channel loss, whatever shares it."""
    sc = Scenario.load(ROOT / "scenarios/004/fig13_fig16_fig18_multi_one_wlan.toml")
    sc = sc.update({"segment.1.error": {"model": "perfect"}, "flow.0.size_bytes": 2_000_000})
    res = mslink.run(sc, reps=1, progress=False)
    for col in ("service.spurious", "service.late", "service.retransmissions"):
        assert col in res.services.columns
        assert (res.services[col] == 0).all(), res.services[["scheme", col]]
    assert set(res.services.scheme) >= {"selective_repeat", "karn_rlp", "oos_rlp", "snoop"}
