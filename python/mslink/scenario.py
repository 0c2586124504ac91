"""Scenarios: load TOML, build or modify in Python, validate, save.

A :class:`Scenario` holds the TOML document as plain Python values (dicts, lists, numbers,
strings), exactly as ``docs/simulator.md`` describes the file. Every check is the Rust
scenario parser's (``mslink_sim::Scenario``): a mutation is checked against the schema at once
(types, unknown keys), and a scenario that was runnable must stay runnable, so a bad value is
refused with a :class:`ScenarioError` whose ``field`` names the key.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Union

from . import _core

ScenarioError = _core.ScenarioError
"""Raised for a scenario that does not parse, does not fit the schema or cannot run.

``err.field`` is the dotted path of the offending key (``"flow[0].rate_bps"``), or ``""``
when the error is not about one key (a TOML syntax error names the line instead)."""


class ScenarioNote(UserWarning):
    """Issued by :func:`mslink.run` and :func:`mslink.sweep` for each of
    :meth:`Scenario.notes`: the scenario is valid, but does something you may not have meant."""


PathLike = Union[str, "os.PathLike[str]"]


def _parts(path: str) -> list[str]:
    """``"segment[1].link.service.0"`` -> ``["segment", "1", "link", "service", "0"]``, by the
    same rules as ``mslink sim --set`` (``mslink_sim::overrides``)."""
    return _core.key_parts(path)


def _error(field: str, message: str) -> ScenarioError:
    e = ScenarioError(message)
    e.field = field
    return e


class Scenario:
    """A simulation scenario (the TOML document of ``docs/simulator.md``).

    Build one from a file, from text, or in Python::

        sc = Scenario.load("scenarios/004/fig7_cbr_one_wlan.toml")
        sc["sim.duration_s"] = 50            # dotted paths, array elements by index
        sc["segment.1.error.mean_bytes"] = 65536

        sc = Scenario(sim={"name": "mine", "duration_s": 20})
        sc.add_segment(kind="wired", rate_bps=10e6, delay_ms=1)
        sc.add_segment(kind="wireless", preset="wlan",
                       error={"model": "independent", "loss": 0.03})
        sc.add_flow(name="media", app="cbr", from_=0, to=2)
        sc.validate()

    Trace files named in the scenario are read relative to ``base_dir`` (the scenario file's
    folder when loaded from a file, else the working directory).
    """

    def __init__(
        self,
        doc: Mapping[str, Any] | None = None,
        *,
        base_dir: PathLike | None = None,
        **tables: Any,
    ) -> None:
        """A scenario from a document (dict) and/or top-level tables given as keywords."""
        d: dict[str, Any] = copy.deepcopy(dict(doc)) if doc is not None else {}
        d.update(copy.deepcopy(tables))
        _core.check(d)
        self._doc = d
        self.base_dir = Path(base_dir) if base_dir is not None else Path.cwd()

    # ---- loading and saving -------------------------------------------------------------

    @classmethod
    def load(cls, path: PathLike) -> Scenario:
        """Reads a scenario file; its folder becomes :attr:`base_dir`."""
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise _error("", f"cannot read scenario {p}: {e}") from e
        try:
            return cls.loads(text, base_dir=p.parent)
        except ScenarioError as e:
            raise _error(getattr(e, "field", ""), f"scenario {p}: {e}") from None

    @classmethod
    def loads(cls, text: str, *, base_dir: PathLike | None = None) -> Scenario:
        """Parses scenario text (TOML)."""
        return cls(_core.parse_toml(text), base_dir=base_dir)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], *, base_dir: PathLike | None = None) -> Scenario:
        """A scenario from a document of plain Python values."""
        return cls(doc, base_dir=base_dir)

    def to_dict(self) -> dict[str, Any]:
        """A copy of the document."""
        return copy.deepcopy(self._doc)

    def to_toml(self) -> str:
        """The document as TOML text."""
        return _core.dump_toml(self._doc)

    def save(self, path: PathLike) -> None:
        """Writes the document as TOML (after checking the schema)."""
        _core.check(self._doc)
        Path(path).write_text(self.to_toml())

    def normalized(self) -> dict[str, Any]:
        """The document as the simulator reads it, every default filled in."""
        return _core.normalize(self._doc)

    # ---- checking -----------------------------------------------------------------------

    def validate(self) -> Scenario:
        """Checks everything a run needs (every sweep point too); returns ``self``."""
        _core.validate(self._doc)
        return self

    def notes(self) -> list[str]:
        """Consequences of this valid scenario you may not expect, e.g. a service window its
        sequence numbers cannot hold (what ``mslink sim`` prints as ``note:`` lines; runs
        issue them as :class:`ScenarioNote` warnings). Validates first, as :meth:`validate`."""
        return _core.plan(self._doc, [])[5]

    def is_valid(self) -> bool:
        """Whether :meth:`validate` would pass."""
        try:
            _core.validate(self._doc)
        except ScenarioError:
            return False
        return True

    # ---- reading and changing values ----------------------------------------------------

    def get(self, path: str, default: Any = None) -> Any:
        """The value at a dotted path (``"flow.0.rate_bps"`` or ``"flow[0].rate_bps"``), or
        ``default`` when the document does not set it (the simulator's default then holds;
        see :meth:`normalized`). A copy: change values with :meth:`set`."""
        cur: Any = self._doc
        try:
            parts = _parts(path)
        except ScenarioError:
            return default
        for part in parts:
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
                cur = cur[int(part)]
            else:
                return default
        return copy.deepcopy(cur)

    def __getitem__(self, path: str) -> Any:
        sentinel = object()
        v = self.get(path, sentinel)
        if v is sentinel:
            raise KeyError(path)
        return v

    def __setitem__(self, path: str, value: Any) -> None:
        self.set(path, value)

    def __contains__(self, path: object) -> bool:
        sentinel = object()
        return isinstance(path, str) and self.get(path, sentinel) is not sentinel

    def set(self, path: str, value: Any) -> Scenario:
        """Sets the value at a dotted path, as ``mslink sim --set`` does (missing tables are
        created, array elements must exist); returns ``self`` for chaining.

        The change is refused with :class:`ScenarioError` naming the field when the value does
        not fit the schema, or when it would make a runnable scenario unrunnable."""
        return self.update({path: value})

    def update(self, values: Mapping[str, Any]) -> Scenario:
        """Sets several dotted paths at once (checked together); returns ``self``."""
        new: dict[str, Any] = self._doc
        for path, value in values.items():
            # One implementation of dotted keys for the CLI and Python: mslink_sim::overrides.
            new = _core.set_path(new, path, value)
        self._replace(new)
        return self

    def replace(self, values: Mapping[str, Any] | None = None, **kw: Any) -> Scenario:
        """A copy with dotted paths set (``sc.replace({"sim.seed": 3})``)."""
        out = self.copy()
        out.update({**(values or {}), **kw})
        return out

    def add_segment(self, **fields: Any) -> Scenario:
        """Appends a ``[[segment]]`` (keys of docs/simulator.md); returns ``self``."""
        new = copy.deepcopy(self._doc)
        new.setdefault("segment", []).append(copy.deepcopy(fields))
        self._replace(new)
        return self

    def add_flow(self, **fields: Any) -> Scenario:
        """Appends a ``[[flow]]``; ``from_`` stands for the key ``from``; returns ``self``."""
        f = {("from" if k == "from_" else k): v for k, v in fields.items()}
        new = copy.deepcopy(self._doc)
        new.setdefault("flow", []).append(copy.deepcopy(f))
        self._replace(new)
        return self

    def _replace(self, new: dict[str, Any]) -> None:
        """Adopts ``new`` if it fits the schema and keeps a runnable scenario runnable."""
        _core.check(new)
        if self.is_valid():
            _core.validate(new)
        self._doc = new

    # ---- the rest -----------------------------------------------------------------------

    @property
    def name(self) -> str:
        """``sim.name`` (default ``"scenario"``)."""
        return str(self.get("sim.name", "scenario"))

    def copy(self) -> Scenario:
        """An independent copy."""
        out = Scenario.__new__(Scenario)
        out._doc = copy.deepcopy(self._doc)
        out.base_dir = self.base_dir
        return out

    def trace_files(self) -> dict[str, str]:
        """The text of every trace file the scenario names (read from :attr:`base_dir`), so
        that workers on other machines need no shared folder."""
        out: dict[str, str] = {}

        def walk(v: Any) -> Iterator[str]:
            if isinstance(v, dict):
                if v.get("model") in ("trace", "period_trace") and isinstance(v.get("file"), str):
                    yield v["file"]
                for x in v.values():
                    yield from walk(x)
            elif isinstance(v, list):
                for x in v:
                    yield from walk(x)

        for f in walk(self._doc):
            p = self.base_dir / f
            if f not in out and p.is_file():
                # The file's bytes as they are (no newline translation): the result store
                # hashes this text as `mslink sim --store` hashes the file.
                out[f] = p.read_bytes().decode("utf-8")
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and self._doc == other._doc

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        segs = len(self._doc.get("segment", []))
        flows = len(self._doc.get("flow", []))
        kind = "cell" if "cell" in self._doc else f"{segs} segments, {flows} flows"
        sweep = self._doc.get("sweep") or {}
        grid = f", sweep over {', '.join(sweep)}" if sweep else ""
        return f"<Scenario {self.name!r}: {kind}{grid}>"


def as_scenario(s: Scenario | PathLike | Mapping[str, Any]) -> Scenario:
    """A :class:`Scenario` from a scenario, a TOML file path or a document."""
    if isinstance(s, Scenario):
        return s
    if isinstance(s, Mapping):
        return Scenario(s)
    return Scenario.load(s)
