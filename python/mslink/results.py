"""Results of a run or a sweep as pandas DataFrames, saved as Parquet.

The tables hold what ``mslink sim --out DIR`` writes, column for column:

* ``flows``: ``flows.csv`` -- one row per flow, sweep point and repetition;
* ``timeseries``: ``timeseries.csv`` (with the sweep columns added after ``point``);
* ``links``: one row per segment direction per run (the counters of ``summary.json``);
* ``services``: one row per service at each link end per run (``summary.json``'s link
  counters, nested counters flattened as ``service.<name>`` and ``reassembly.<name>``);
* ``summary``: the content of ``summary.json`` as a dict.

Sweep columns hold the grid's values: numbers, booleans and strings as themselves, tables and
arrays as their TOML text (as in ``flows.csv``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import _core

FLOW_COLUMNS = [
    "flow",
    "app",
    "transport",
    "service",
    "sent",
    "received",
    "duplicates",
    "bytes",
    "duration_s",
    "throughput_bps",
    "loss_rate",
    "delay_mean_s",
    "delay_std_s",
    "playback_miss_rate",
]
DIRECTION_COLUMNS = ["sent", "bytes", "lost", "truncated", "corrupted", "queue_drops", "refused"]
DIRECTIONS = ("ltr", "rtl")
ENDS = ("left", "right")


def sweep_value(text: str) -> Any:
    """A sweep column's value from its TOML text: scalars as Python values, tables and arrays
    kept as text (as ``flows.csv`` shows them)."""
    v = _core.parse_toml("v = " + text)["v"]
    return text if isinstance(v, (dict, list)) else v


def toml_value(text: str) -> Any:
    """Parses TOML inline text (a sweep column's table, say) into Python values."""
    return _core.parse_toml("v = " + text)["v"]


@dataclass
class Result:
    """Everything a run or sweep produced; see the module documentation for the columns."""

    flows: pd.DataFrame
    timeseries: pd.DataFrame
    links: pd.DataFrame
    services: pd.DataFrame
    summary: dict[str, Any] = field(repr=False)

    def save(self, folder: str | Path) -> Path:
        """Writes ``flows``, ``timeseries``, ``links`` and ``services`` as Parquet files and
        ``summary.json`` into ``folder`` (created if missing)."""
        d = Path(folder)
        d.mkdir(parents=True, exist_ok=True)
        for name in ("flows", "timeseries", "links", "services"):
            getattr(self, name).to_parquet(d / f"{name}.parquet", index=False)
        (d / "summary.json").write_text(json.dumps(self.summary, indent=1))
        return d

    @classmethod
    def load(cls, folder: str | Path) -> Result:
        """Reads what :meth:`save` wrote."""
        d = Path(folder)
        tables = {
            name: pd.read_parquet(d / f"{name}.parquet")
            for name in ("flows", "timeseries", "links", "services")
        }
        return cls(summary=json.loads((d / "summary.json").read_text()), **tables)

    def __repr__(self) -> str:
        runs = len(self.summary.get("runs", []))
        return (
            f"<Result {self.summary.get('scenario')!r}: {runs} runs, {len(self.flows)} flow rows, "
            f"{len(self.timeseries)} timeseries rows>"
        )


def _flatten(prefix: str, d: dict[str, Any], out: dict[str, Any]) -> None:
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            _flatten(key + ".", v, out)
        else:
            out[key] = v


def build(
    name: str,
    keys: Sequence[str],
    points: Sequence[Sequence[tuple[str, str]]],
    jobs: Sequence[tuple[int, int]],
    runs_json: Sequence[str],
) -> Result:
    """Assembles the tables from each job's ``(point, rep)`` and ``RunResult`` JSON."""
    point_values = [[sweep_value(v) for _, v in p] for p in points]
    flows: dict[str, list[Any]] = {c: [] for c in ["scenario", "point", *keys, "rep", "seed"]}
    flows.update({c: [] for c in FLOW_COLUMNS})
    ts: dict[str, list[Any]] = {
        c: [] for c in ["scenario", "point", *keys, "rep", "flow", "time_s", "throughput_bps"]
    }
    links: dict[str, list[Any]] = {
        c: [] for c in ["scenario", "point", *keys, "rep", "seed", "segment", "kind", "direction"]
    }
    links.update({c: [] for c in DIRECTION_COLUMNS})
    service_rows: list[dict[str, Any]] = []
    summary_runs = []
    events = 0

    def head(table: dict[str, list[Any]], pi: int, n: int) -> None:
        table["scenario"].extend([name] * n)
        table["point"].extend([pi] * n)
        for k, v in zip(keys, point_values[pi]):
            table[k].extend([v] * n)

    for (pi, _rep), text in zip(jobs, runs_json):
        r = json.loads(text)
        rep, seed = r["rep"], r["seed"]
        fl = r["flows"]
        head(flows, pi, len(fl))
        flows["rep"].extend([rep] * len(fl))
        flows["seed"].extend([seed] * len(fl))
        for f in fl:
            for c in FLOW_COLUMNS:
                flows[c].append("udp" if c == "transport" else f[c])
        tp = r["timeseries"]
        head(ts, pi, len(tp))
        ts["rep"].extend([rep] * len(tp))
        for p in tp:
            ts["flow"].append(p["flow"])
            ts["time_s"].append(p["time_s"])
            ts["throughput_bps"].append(p["throughput_bps"])
        for seg in r["segments"]:
            head(links, pi, 2)
            for di, dname in enumerate(DIRECTIONS):
                links["rep"].append(rep)
                links["seed"].append(seed)
                links["segment"].append(seg["segment"])
                links["kind"].append(seg["kind"])
                links["direction"].append(dname)
                for c in DIRECTION_COLUMNS:
                    links[c].append(seg["directions"][di][c])
            for ei, end in enumerate(seg["ends"]):
                for svc in end["services"]:
                    row: dict[str, Any] = {"scenario": name, "point": pi}
                    row.update(zip(keys, point_values[pi]))
                    row.update(rep=rep, seed=seed, segment=seg["segment"], end=ENDS[ei])
                    _flatten("", svc, row)
                    service_rows.append(row)
        events += r["events"]
        summary_runs.append({"point": pi, "sweep": dict(points[pi]), "run": r})

    def frame(cols: dict[str, list[Any]]) -> pd.DataFrame:
        return pd.DataFrame({k: pd.Series(v, dtype=_dtype(v)) for k, v in cols.items()})

    svc_cols = ["scenario", "point", *keys, "rep", "seed", "segment", "end"]
    services = pd.DataFrame(service_rows)
    if services.empty:
        services = pd.DataFrame({c: [] for c in [*svc_cols, "name", "scheme"]})
    return Result(
        flows=frame(flows),
        timeseries=frame(ts),
        links=frame(links),
        services=services,
        summary={"scenario": name, "runs": summary_runs, "events": events},
    )


def _dtype(values: list[Any]) -> str | None:
    """int64 / float64 / object for a column, so empty tables keep sensible types."""
    if not values:
        return "object"
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int64"
    if all(v is None or isinstance(v, (int, float)) for v in values):
        return "float64"
    return None
