"""The papers' kinds of figure, drawn with matplotlib without a display.

* :func:`metric_vs_loss`: a metric against the loss rate, one line per scheme, error bars over
  repetitions (004 Figs. 7-10, 003 Fig. 5);
* :func:`throughput`: moving-window throughput per flow over time (003 Figs. 11-12).

Both draw on ``ax`` when given one, else on a new :class:`matplotlib.figure.Figure` backed by
the Agg canvas (no pyplot, no display needed; notebooks still show the returned figure), and
return the figure. Save it with ``fig.savefig("fig.png")`` (or ``.svg``).
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def _axes(ax: Axes | None, size: tuple[float, float] = (6.0, 4.0)) -> tuple[Figure, Axes]:
    if ax is not None:
        fig = ax.figure
        assert isinstance(fig, Figure)
        return fig, ax
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def summarize(
    df: pd.DataFrame, x: str, y: str, hue: str | None = None, error: str = "std"
) -> pd.DataFrame:
    """Mean of ``y`` and its spread over repetitions for each (``hue``, ``x``): columns
    ``hue``, ``x``, ``mean``, ``err``, ``n``. ``error`` is ``"std"`` (standard deviation),
    ``"sem"`` (standard error) or ``"ci95"`` (1.96 standard errors)."""
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
        out["err"] = 1.96 * sem
    else:
        raise ValueError(f"error must be 'std', 'sem' or 'ci95', got {error!r}")
    return out.rename(columns={"count": "n"}).drop(columns="std")


def metric_vs_loss(
    df: pd.DataFrame,
    x: str,
    y: str,
    hue: str | None = None,
    *,
    ax: Axes | None = None,
    error: str = "std",
    label: Callable[[Any], str] | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    logy: bool = False,
) -> Figure:
    """One line per value of ``hue`` (a scheme, say): mean ``y`` against ``x`` (the loss
    rate), with error bars over the repetitions (see :func:`summarize`). ``label`` turns a
    ``hue`` value into its legend text."""
    fig, ax = _axes(ax)
    s = summarize(df, x, y, hue, error)
    groups = s.groupby(hue, sort=False) if hue is not None else [(None, s)]
    for key, g in groups:
        text = None if hue is None else (label(key) if label else str(key))
        ax.errorbar(g[x], g["mean"], yerr=g["err"], marker="o", capsize=3, label=text)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    if logy:
        ax.set_yscale("log", nonpositive="mask")  # zero loss has no place on a log axis
    if title:
        ax.set_title(title)
    if hue is not None:
        ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    return fig


def throughput(
    ts: pd.DataFrame,
    *,
    flows: list[str] | None = None,
    ax: Axes | None = None,
    unit: float = 1e3,
    title: str | None = None,
    **where: Any,
) -> Figure:
    """Moving-window throughput of each flow over time (a ``timeseries`` table; pick one run
    with keyword filters such as ``point=0, rep=0``). ``unit`` scales bit/s (1e3: kbit/s)."""
    fig, ax = _axes(ax, (7.0, 4.0))
    sel = ts
    for k, v in where.items():
        sel = sel[sel[k] == v]
    names = flows if flows is not None else list(dict.fromkeys(sel["flow"]))
    for name in names:
        f = sel[sel["flow"] == name]
        ax.plot(f["time_s"], f["throughput_bps"] / unit, label=str(name))
    ax.set_xlabel("time (s)")
    units = {1.0: "bit/s", 1e3: "kbit/s", 1e6: "Mbit/s"}
    ax.set_ylabel(f"throughput ({units.get(unit, f'x{unit:g} bit/s')})")
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, alpha=0.3)
    return fig
