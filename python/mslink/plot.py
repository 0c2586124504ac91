"""The papers' kinds of figure, drawn by the same engine as ``mslink sim``'s plots.

* :func:`metric_vs_loss`: a metric against the loss rate, one line per scheme, error bars over
  repetitions (004 Figs. 7-10, 003 Fig. 5);
* :func:`throughput`: moving-window throughput per flow over time (003 Figs. 11-12).

Both return a :class:`Figure`: save it with ``fig.savefig("fig.png")`` (or ``.svg``); a
notebook shows it inline. The drawing is the Rust crate ``mslink-plot`` (the CLI's figures,
same font, palette and axes), so no display, pyplot or matplotlib is needed, and the same data
gives byte-identical files. To draw with another library, take the numbers from
:func:`summarize`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd

from . import _core
from .results import Result


@dataclass
class Figure:
    """One chart: lines of ``(label, [(x, mean, error), ...])``, axis labels, a title, scales;
    with ``categories``, x is an index into them and the points are not joined."""

    lines: list[tuple[str, list[tuple[float, float, float]]]]
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    error_bars: bool = False
    logy: bool = False
    legend: str = "upper_right"
    categories: list[str] | None = None

    def to_json(self) -> str:
        """The chart in the JSON shape ``mslink_plot::chart::Chart`` reads."""
        finite = lambda v: float(v) if math.isfinite(float(v)) else 0.0  # noqa: E731
        return json.dumps(
            {
                "title": self.title,
                "x_label": self.xlabel,
                "y_label": self.ylabel,
                "lines": [
                    {"label": label, "points": [[float(x), float(y), finite(e)] for x, y, e in pts]}
                    for label, pts in self.lines
                ],
                "error_bars": self.error_bars,
                "markers": True,
                "categories": self.categories,
                "scatter": self.categories is not None,
                "scale": {"log10_y": self.logy, "legend": self.legend},
            }
        )

    def savefig(self, path: str | os.PathLike[str]) -> None:
        """Writes the figure as PNG or SVG, by the file name's extension."""
        _core.render_chart(self.to_json(), os.fspath(path))

    def to_svg(self) -> str:
        """The figure as SVG text."""
        svg = _core.render_chart(self.to_json())
        assert svg is not None
        return svg

    def _repr_svg_(self) -> str:
        return self.to_svg()


def summarize(
    df: pd.DataFrame, x: str, y: str, hue: str | None = None, error: str = "std"
) -> pd.DataFrame:
    """Mean of ``y`` and its spread over repetitions for each (``hue``, ``x``): columns
    ``hue``, ``x``, ``mean``, ``err``, ``n``. ``error`` is ``"std"`` (standard deviation),
    ``"sem"`` (standard error) or ``"ci95"`` (the half-width of the Student-t 95% confidence
    interval: t(0.975, n - 1) standard errors, 2.776 at five repetitions; NaN for one)."""
    keys = [c for c in (hue, x) if c is not None]
    g = df.groupby(keys, sort=True)[y]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["std"] = out["std"].fillna(0.0)
    sem = out["std"] / out["count"].clip(lower=1) ** 0.5
    if error == "std":
        out["err"] = out["std"]
    elif error == "sem":
        out["err"] = sem
    elif error == "ci95":
        t = out["count"].map(lambda n: _core.t975(float(n - 1)) if n > 1 else float("nan"))
        out["err"] = t * sem
    else:
        raise ValueError(f"error must be 'std', 'sem' or 'ci95', got {error!r}")
    return out.rename(columns={"count": "n"}).drop(columns="std")


def metric_vs_loss(
    data: pd.DataFrame | Result,
    x: str,
    y: str,
    hue: str | None = None,
    *,
    error: str = "ci95",
    label: Callable[[Any], str] | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    logy: bool = False,
) -> Figure:
    """One line per value of ``hue`` (a scheme, say): mean ``y`` against ``x``, with error
    bars over the repetitions (``error``: the 95% confidence interval by default, as ``mslink
    sim``'s plots; see :func:`summarize`; a log ``y`` axis shows no bars, and leaves out
    zeros). ``label`` turns a ``hue`` value into its legend text.

    ``data`` is a ``flows`` table (:func:`mslink.sweep`) or a whole
    :class:`~mslink.results.Result` (:func:`mslink.run`). Axes are titled, scaled and
    given units as the CLI's (``mslink_plot::axes``, one implementation): loss in %, delays in
    ms, throughput in kbit/s or Mbit/s, and a TCP flow's ``loss_rate`` named for what it is
    (retransmitted segments); ``xlabel``, ``ylabel`` and ``title`` replace the titles, not the
    scaling. Given a ``Result`` and an ``x`` that sets a segment's error model
    (``segment.N.error.*``), x is the frame loss measured on that segment in %, as the CLI
    draws it. An ``x`` of names rather than numbers is drawn as categories: points, no
    lines."""
    res = data if isinstance(data, Result) else None
    df = res.flows if res is not None else data
    measured = _measured_frame_loss(res, x) if res is not None else None
    df = df.copy()
    if measured is not None:
        df[x] = df[x].map(measured[1])
    categories: list[str] | None = None
    if not pd.api.types.is_numeric_dtype(df[x]):
        categories = [str(v) for v in dict.fromkeys(df[x])]
        df[x] = df[x].map({v: float(i) for i, v in enumerate(dict.fromkeys(df[x]))})
    transports = set(df["transport"]) if "transport" in df else set()
    largest = float(df[y].abs().max()) if len(df) else 0.0
    # flows.csv names a datagram flow's transport "udp", a TCP flow's by its variant ("reno").
    axis = _core.metric_axis(y, bool(transports - {"udp"}), "udp" in transports, largest)
    y_title, divisor = axis if axis is not None else (_core.key_title(y), 1.0)
    s = summarize(df, x, y, hue, error)
    s["mean"] /= divisor
    s["err"] /= divisor
    groups = s.groupby(hue, sort=False) if hue is not None else [(None, s)]
    lines = []
    for key, g in groups:
        text = (ylabel or y_title) if hue is None else (label(key) if label else str(key))
        lines.append((text, list(zip(g[x], g["mean"], g["err"]))))
    x_title = measured[0] if measured is not None else _core.key_title(x)
    if title is None:
        reps = int(df["rep"].nunique()) if "rep" in df else 0
        what = {"std": "mean and standard deviation", "sem": "mean and standard error"}.get(
            error, "mean and 95% CI"
        )
        name = str(df["scenario"].iloc[0]) + ": " if "scenario" in df and len(df) else ""
        runs = f"{what}, {reps} repetitions" if reps > 1 else "one repetition"
        title = f"{name}{ylabel or y_title} ({runs})"
    return Figure(
        lines,
        title=title,
        xlabel=xlabel or x_title,
        ylabel=ylabel or y_title,
        error_bars=True,
        logy=logy,
        categories=categories,
    )


def _error_segments(key: str) -> list[int]:
    """The segments whose error model sweep key ``key`` sets (``segment.N.error.*``, every
    alternative of an ``a|b`` key); empty when it sets anything else."""
    out = []
    for k in key.split("|"):
        p = k.split(".")
        if len(p) < 4 or p[0] != "segment" or p[2] != "error" or not p[1].isdigit():
            return []
        out.append(int(p[1]))
    return out


def _measured_frame_loss(res: Result, x: str) -> tuple[str, dict[Any, float]] | None:
    """The frame loss each value of ``x`` gave on the segments whose error model it sets, in
    percent, and the axis title: frames lost, truncated or corrupted over frames sent in each
    segment's data direction (the one that carried more bytes), summed over every run at that
    value -- the CLI's measure (``mslink_plot::sim``, 004 Table I). None when ``x`` sets
    something else, a value saw no frames, or two values gave the same loss."""
    segments = _error_segments(x)
    if not segments or x not in res.flows or res.links.empty:
        return None
    value_at = res.flows.groupby("point")[x].first()
    links = res.links[res.links["segment"].isin(segments)]
    links = links.assign(_x=links["point"].map(value_at))
    cols = ["lost", "truncated", "corrupted", "sent", "bytes"]
    sums = links.groupby(["_x", "segment", "direction"], sort=True)[cols].sum().reset_index()
    out: dict[Any, float] = {}
    for value, at in sums.groupby("_x", sort=False):
        bad = sent = 0
        for _, seg in at.groupby("segment"):
            d = seg.loc[seg["bytes"].idxmax()]  # ties: the first direction, left to right
            bad += int(d["lost"] + d["truncated"] + d["corrupted"])
            sent += int(d["sent"])
        if sent == 0:
            return None
        out[value] = bad / sent * 100.0
    if len(set(out.values())) < len(out):
        return None
    plural = "s" if len(segments) > 1 else ""
    names = " and ".join(str(s) for s in segments)
    return f"frame loss (%, measured on segment{plural} {names})", out


def throughput(
    ts: pd.DataFrame,
    *,
    flows: list[str] | None = None,
    unit: float = 1e3,
    title: str | None = None,
    **where: Any,
) -> Figure:
    """Moving-window throughput of each flow over time (a ``timeseries`` table; pick one run
    with keyword filters such as ``point=0, rep=0``). ``unit`` scales bit/s (1e3: kbit/s)."""
    sel = ts
    for k, v in where.items():
        sel = sel[sel[k] == v]
    names = flows if flows is not None else list(dict.fromkeys(sel["flow"]))
    lines = []
    for name in names:
        f = sel[sel["flow"] == name]
        pts = [(t, b / unit, 0.0) for t, b in zip(f["time_s"], f["throughput_bps"])]
        lines.append((str(name), pts))
    units = {1.0: "bit/s", 1e3: "kbit/s", 1e6: "Mbit/s"}
    return Figure(
        lines,
        title=title or "",
        xlabel="time (s)",
        ylabel=f"throughput ({units.get(unit, f'x{unit:g} bit/s')})",
        legend="upper_left",
    )
