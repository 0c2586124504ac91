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


@dataclass
class Figure:
    """One chart: lines of ``(label, [(x, mean, error), ...])``, axis labels, a title, scales."""

    lines: list[tuple[str, list[tuple[float, float, float]]]]
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    error_bars: bool = False
    logy: bool = False
    legend: str = "upper_right"

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
    df: pd.DataFrame,
    x: str,
    y: str,
    hue: str | None = None,
    *,
    error: str = "std",
    label: Callable[[Any], str] | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    logy: bool = False,
) -> Figure:
    """One line per value of ``hue`` (a scheme, say): mean ``y`` against ``x`` (the loss
    rate), with error bars over the repetitions (see :func:`summarize`; a log ``y`` axis
    shows no bars, and leaves out zeros). ``label`` turns a ``hue`` value into its legend
    text."""
    s = summarize(df, x, y, hue, error)
    groups = s.groupby(hue, sort=False) if hue is not None else [(None, s)]
    lines = []
    for key, g in groups:
        text = (ylabel or y) if hue is None else (label(key) if label else str(key))
        lines.append((text, list(zip(g[x], g["mean"], g["err"]))))
    return Figure(
        lines,
        title=title or "",
        xlabel=xlabel or x,
        ylabel=ylabel or y,
        error_bars=True,
        logy=logy,
    )


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
