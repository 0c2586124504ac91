"""Confidence intervals in the Python API are Student-t intervals, the same function the
CLI's `mslink reproduce` uses (mslink._core.t975), not the normal 1.96."""

import math

import pandas as pd

from mslink import _core
from mslink.plot import summarize


def test_t_quantiles_match_the_table() -> None:
    for df, t in [(1, 12.706), (4, 2.776), (9, 2.262), (29, 2.045)]:
        assert abs(_core.t975(float(df)) - t) < 5e-4
    assert math.isinf(_core.t975(0.0))


def test_ci95_uses_students_t() -> None:
    df = pd.DataFrame({"x": [1] * 5 + [2], "y": [1.0, 2.0, 3.0, 4.0, 5.0, 7.0]})
    s = summarize(df, "x", "y", error="ci95").set_index("x")
    sem = math.sqrt(2.5) / math.sqrt(5)
    assert abs(s.loc[1, "err"] - 2.776445 * sem) < 1e-4
    assert s.loc[1, "n"] == 5
    # One repetition has no interval.
    assert math.isnan(s.loc[2, "err"])
