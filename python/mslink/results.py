"""Results of a run or a sweep as pandas DataFrames, saved as Parquet.

The tables hold what ``mslink sim --out DIR`` writes, column for column:

* ``flows``: ``flows.csv`` -- one row per flow, sweep point and repetition;
* ``timeseries``: ``timeseries.csv`` (with the sweep columns added after ``point``);
* ``links``: one row per segment direction per run (the counters of ``summary.json``);
* ``services``: one row per service at each link end per run (``summary.json``'s link
  counters, nested counters flattened as ``service.<name>`` and ``reassembly.<name>``;
  ``service.spurious`` and ``service.late`` count the data frames that end's receiver got
  again after it had them or had given them up, docs/engine.md);
* ``runs``: one row per run: events executed and simulated seconds;
* ``summary``: the content of ``summary.json`` as a dict.

Sweep columns hold the grid's values: numbers, booleans and strings as themselves, tables and
arrays by their readable names (as in ``flows.csv``; see :func:`sweep_value`).
:meth:`Result.stats` summarises each flow's metrics over the repetitions as ``stats.csv``
does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from . import _core

# The flows table's columns after rep and seed: declared once, in mslink_sim::world::columns.
FLOW_COLUMNS = list(_core.flow_columns())
DIRECTION_COLUMNS = ["sent", "bytes", "lost", "truncated", "corrupted", "queue_drops", "refused"]
DIRECTIONS = ("ltr", "rtl")
ENDS = ("left", "right")


def sweep_value(text: str) -> Any:
    """A sweep column's value from its TOML text: scalars as Python values, tables and arrays
    by their readable names, as ``flows.csv`` shows them (a service table is its scheme's short
    name, ``"SR"``; a list of services ``"SR (OOS RLP)"``). ``toml_value`` gives the value
    itself; ``Result.summary`` keeps every point's exact TOML text."""
    v = _core.parse_toml("v = " + text)["v"]
    return _core.sweep_label(text) if isinstance(v, (dict, list)) else v


def toml_value(text: str) -> Any:
    """Parses TOML inline text (a sweep column's table, say) into Python values."""
    return _core.parse_toml("v = " + text)["v"]


TABLES = ("flows", "timeseries", "links", "services", "runs")
HEAD = {
    "flows": ["rep", "seed"],
    "timeseries": ["rep"],
    "links": ["rep", "seed"],
    "services": ["rep", "seed"],
    "runs": ["rep", "seed"],
}
BODY = {
    "flows": FLOW_COLUMNS,
    "timeseries": ["flow", "time_s", "throughput_bps"],
    "links": ["segment", "kind", "direction", *DIRECTION_COLUMNS],
    "services": ["segment", "end"],
    "runs": ["events", "simulated_s"],
}
KINDS = {"i": "int64", "f": "float64", "s": "str"}

# One batch of runs from the Rust core: ({table: ({column: list}, {column: kind})}, [JSON]).
Chunk = tuple[dict[str, tuple[dict[str, list[Any]], dict[str, str]]], list[str]]


class Result:
    """Everything a run or sweep produced: ``flows``, ``timeseries``, ``links``,
    ``services`` and ``runs`` DataFrames and the ``summary`` dict (see the module
    documentation); ``reused`` counts the runs taken from a result store (``store=`` of
    :func:`mslink.run`), which are identical to runs made."""

    def __init__(
        self,
        flows: pd.DataFrame,
        timeseries: pd.DataFrame,
        links: pd.DataFrame,
        services: pd.DataFrame,
        runs: pd.DataFrame,
        summary: dict[str, Any] | Callable[[], dict[str, Any]],
        summary_text: Callable[[], str] | None = None,
        reused: int = 0,
    ) -> None:
        self.flows = flows
        self.timeseries = timeseries
        self.links = links
        self.services = services
        self.runs = runs
        self._summary = summary
        self._summary_text = summary_text
        #: How many runs were taken from the result store (``store=``) instead of being made.
        self.reused = reused

    @property
    def summary(self) -> dict[str, Any]:
        """The content of ``summary.json`` (built on first use)."""
        if callable(self._summary):
            self._summary = self._summary()
        return self._summary

    def stats(self) -> pd.DataFrame:
        """Each flow's metrics at each sweep point over the repetitions: the rows and
        columns of ``mslink sim``'s ``stats.csv`` (scenario, point, the sweep keys, flow,
        metric, n, mean, sd, ci95_low, ci95_high), from the same metrics and statistics
        (``mslink._core.summarised_metrics`` and ``estimate``: Student-t 95% intervals, NaN
        bounds for a point run once)."""
        f = self.flows
        keys = list(f.columns[2 : f.columns.get_loc("rep")])
        metrics = _core.summarised_metrics()
        rows = []
        for point, at in f.groupby("point", sort=True):
            sweep = [at[k].iloc[0] for k in keys]
            for flow in at["flow"].unique():
                one = at[at["flow"] == flow]
                for m in metrics:
                    n, mean, sd, lo, hi = _core.estimate([float(x) for x in one[m]])
                    rows.append(
                        [at["scenario"].iloc[0], point, *sweep, flow, m, n, mean, sd, lo, hi]
                    )
        cols = ["scenario", "point", *keys, "flow", "metric", "n", "mean", "sd"]
        return pd.DataFrame(rows, columns=[*cols, "ci95_low", "ci95_high"])

    def to_xarray(self) -> Any:
        """The ``flows`` table as an ``xarray.Dataset`` for multi-dimensional sweeps: one
        dimension per sweep key (in the grid's order, coordinates the values ``flows`` shows),
        then ``rep`` and ``flow``; one data variable per numeric flow column (``seed`` a
        variable too, over ``rep`` like the rest). Select and reduce by name, e.g.
        ``ds.throughput_bps.sel(flow="media").mean("rep")``. Needs the ``xarray`` package
        (``pip install 'mslink[xarray]'``)."""
        try:
            import xarray  # noqa: F401  (only to fail early with the fix)
        except ImportError as e:
            raise ImportError(
                "Result.to_xarray needs the xarray package: pip install xarray"
            ) from e
        f = self.flows
        keys = list(f.columns[2 : f.columns.get_loc("rep")])
        dims = [*keys, "rep", "flow"]
        values = [
            c
            for c in f.columns
            if c not in dims
            and c not in ("scenario", "point")
            and pd.api.types.is_numeric_dtype(f[c])
        ]
        ds = f.set_index(dims)[values].to_xarray()
        ds.attrs["scenario"] = str(f["scenario"].iloc[0]) if len(f) else ""
        return ds

    def save(self, folder: str | Path) -> Path:
        """Writes ``flows``, ``timeseries``, ``links`` and ``services`` as Parquet files and
        ``summary.json`` into ``folder`` (created if missing)."""
        d = Path(folder)
        d.mkdir(parents=True, exist_ok=True)
        for name in TABLES:
            getattr(self, name).to_parquet(d / f"{name}.parquet", index=False)
        if callable(self._summary) and self._summary_text is not None:
            text = self._summary_text()  # the runs' JSON as it came, not parsed and re-written
        else:
            text = json.dumps(self.summary)
        (d / "summary.json").write_text(text)
        return d

    @classmethod
    def load(cls, folder: str | Path) -> Result:
        """Reads what :meth:`save` wrote."""
        d = Path(folder)
        tables = {name: pd.read_parquet(d / f"{name}.parquet") for name in TABLES}
        return cls(summary=json.loads((d / "summary.json").read_text()), **tables)

    def __repr__(self) -> str:
        return (
            f"<Result: {len(self.flows)} flow rows, {len(self.timeseries)} timeseries rows, "
            f"{len(self.links)} link rows>"
        )


def build(
    name: str,
    keys: Sequence[str],
    points: Sequence[Sequence[tuple[str, str]]],
    jobs: Sequence[tuple[int, int]],
    chunks: Sequence[Chunk],
    provenance: dict[str, Any] | None = None,
) -> Result:
    """Assembles the tables from the Rust core's batches (in job order) of ``jobs``, each a
    ``(point, rep)``, adding the scenario, point and sweep columns; ``provenance`` goes into
    the summary as ``mslink sim`` writes it into summary.json."""
    job_point = np.fromiter((pi for pi, _ in jobs), dtype=np.int64, count=len(jobs))
    by_key = [pd.Series([sweep_value(p[i][1]) for p in points]) for i in range(len(keys))]
    frames = {}
    for table in TABLES:
        cols: dict[str, list[Any]] = {}
        kinds: dict[str, str] = {}
        job_parts = []
        offset = 0
        for tables, runs in chunks:
            c, k = tables[table]
            kinds.update(k)
            for col, values in c.items():
                if col == "job":
                    job_parts.append(np.asarray(values, dtype=np.int64) + offset)
                else:
                    cols.setdefault(col, []).extend(values)
            offset += len(runs)
        job = np.concatenate(job_parts) if job_parts else np.zeros(0, dtype=np.int64)
        pts = job_point[job]
        data: dict[str, Any] = {
            "scenario": pd.Series([name] * len(job), dtype="str"),
            "point": pd.Series(pts, dtype="int64"),
        }
        for key, values in zip(keys, by_key):
            data[key] = values.take(pts).reset_index(drop=True)
        order = [*HEAD[table], *BODY[table]]
        order += [c for c in cols if c not in order]
        for col in order:
            dtype = KINDS.get(kinds.get(col, ""), "int64" if col in ("rep", "seed") else None)
            data[col] = pd.Series(cols.get(col, []), dtype=dtype or "str")
        frames[table] = pd.DataFrame(data)

    def summary() -> dict[str, Any]:
        runs = []
        events = 0
        gi = 0
        for _, texts in chunks:
            for text in texts:
                r = json.loads(text)
                events += r["events"]
                pi = jobs[gi][0]
                runs.append({"point": pi, "sweep": dict(points[pi]), "run": r})
                gi += 1
        out: dict[str, Any] = {"scenario": name, "runs": runs, "events": events}
        if provenance is not None:
            out["provenance"] = provenance
        return out

    def summary_text() -> str:
        texts = [t for _, c in chunks for t in c]
        parts = [
            f'{{"point": {pi}, "sweep": {json.dumps(dict(points[pi]))}, "run": {text}}}'
            for (pi, _), text in zip(jobs, texts)
        ]
        events = int(frames["runs"]["events"].sum())
        prov = "" if provenance is None else f', "provenance": {json.dumps(provenance)}'
        return (
            f'{{"scenario": {json.dumps(name)}, "runs": [{", ".join(parts)}], '
            f'"events": {events}{prov}}}'
        )

    return Result(summary=summary, summary_text=summary_text, **frames)
