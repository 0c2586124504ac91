"""mslink from Python: scenarios, runs and sweeps over the Rust simulator.

::

    import mslink

    sc = mslink.Scenario.load("scenarios/004/fig7_cbr_one_wlan.toml")
    sc["sim.duration_s"] = 50
    res = mslink.run(sc, seed=7)              # every sweep point and repetition
    res.flows                                 # pandas: the rows of flows.csv
    df = mslink.sweep(sc, grid={"segment.1.error.mean_bytes": [65536, 32768]}, reps=5)
    mslink.plot.metric_vs_loss(df, x="segment.1.error.mean_bytes", y="loss_rate")

The ``mslink`` command installed with the package is the Rust CLI itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _core
from .scenario import Scenario, ScenarioError, ScenarioNote

if TYPE_CHECKING:
    from . import plot
    from .results import Result, sweep_value, toml_value
    from .runner import run, sweep

__version__: str = _core.__version__

__all__ = [
    "Result",
    "Scenario",
    "ScenarioError",
    "ScenarioNote",
    "__version__",
    "plot",
    "run",
    "sweep",
    "sweep_value",
    "toml_value",
]

# pandas loads on first use, so that `import mslink` and the `mslink` command
# start fast.
_LAZY = {
    "Result": ".results",
    "sweep_value": ".results",
    "toml_value": ".results",
    "run": ".runner",
    "sweep": ".runner",
}


def __getattr__(name: str) -> Any:
    if name == "plot":
        return importlib.import_module(".plot", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
