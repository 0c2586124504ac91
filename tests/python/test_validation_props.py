"""Property tests (hypothesis) of scenario validation through the Rust parser: the verdict on a
value matches the documented range (computed here, independently), a refusal names the field,
no input crashes, and any document of TOML values survives a TOML round trip."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from mslink import Scenario, ScenarioError

MIN_PACKET = 20 + 8 + 16  # IPv4 + UDP headers + the simulator's 16-byte stamp


def base() -> Scenario:
    sc = Scenario(sim={"name": "prop", "duration_s": 1.0})
    sc.add_segment(kind="wired", rate_bps=1e7, delay_ms=1)
    sc.add_segment(kind="wireless", preset="wlan", error={"model": "independent", "loss": 0.1})
    sc.add_flow(name="f", app="cbr", from_=0, to=2)
    return sc.validate()


BASE = base()
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**40), max_value=2**40),
)

# The simulator's clock counts 64-bit nanoseconds: traffic plus drain fit in 2**64 ns.
CLOCK_S = float(2**64) / 1e9
BASE_DRAIN_S = 10.0  # the default drain_s
BASE_DURATION_S = 1.0

# path -> (field the error names, is the value valid?) -- docs/simulator.md's ranges.
RULES = {
    "sim.duration_s": (
        "sim.duration_s",
        lambda x: x > 0 and math.isfinite(x) and x + BASE_DRAIN_S <= CLOCK_S,
    ),
    "sim.drain_s": (
        "sim.drain_s",
        lambda x: x >= 0 and math.isfinite(x) and BASE_DURATION_S + x <= CLOCK_S,
    ),
    "segment.0.rate_bps": ("segment[0].rate_bps", lambda x: x > 0 and math.isfinite(x)),
    "segment.0.delay_ms": ("segment[0].delay_ms", lambda x: x >= 0 and math.isfinite(x)),
    # ... and a packet interval (1000-byte packets) the 1 ns clock can hold.
    "flow.0.rate_bps": (
        "flow[0].rate_bps",
        lambda x: x > 0 and math.isfinite(x) and 1000 * 8.0 / x >= 1e-9,
    ),
    "flow.0.playback_ms": ("flow[0].playback_ms", lambda x: x > 0),
    "segment.1.error.loss": ("segment[1].error", lambda x: 0 <= x <= 1),
}


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(sorted(RULES)), x=numbers)
def test_float_fields_follow_their_documented_range(path: str, x: float) -> None:
    field, ok = RULES[path]
    sc = BASE.copy()
    try:
        sc.set(path, float(x))
    except ScenarioError as e:
        assert not ok(float(x)), f"{path} = {x} refused: {e}"
        assert e.field == field, str(e)
        assert sc == BASE
    else:
        assert ok(float(x)), f"{path} = {x} accepted"
        assert sc.is_valid()


INT_RULES = {
    "flow.0.packet_bytes": ("flow[0].packet_bytes", lambda n: MIN_PACKET <= n <= 65535),
    "flow.0.dscp": ("flow[0].dscp", lambda n: 0 <= n <= 63),
    # At most 327,745,536 flows in all: each has an address and port pair of its own.
    "flow.0.count": ("flow[0].count", lambda n: 1 <= n <= 327_745_536),
    "flow.0.to": ("flow[0].to", lambda n: n in (1, 2)),
    "sim.reps": ("sim.reps", lambda n: 1 <= n < 2**32),
}


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(sorted(INT_RULES)), n=st.integers(-(2**33), 2**33))
def test_integer_fields_follow_their_documented_range(path: str, n: int) -> None:
    field, ok = INT_RULES[path]
    sc = BASE.copy()
    try:
        sc.set(path, n)
    except ScenarioError as e:
        assert not ok(n), f"{path} = {n} refused: {e}"
        assert e.field == field, str(e)
    else:
        assert ok(n), f"{path} = {n} accepted"


toml_scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(grid=st.dictionaries(st.text(min_size=1, max_size=10), toml_values, max_size=4))
def test_any_document_survives_a_toml_round_trip(grid: dict) -> None:
    sc = BASE.copy()
    sc._doc["sweep"] = grid  # the schema takes any table here; values are checked at run time
    assert Scenario.loads(sc.to_toml()) == sc


anything = st.one_of(toml_values, st.none(), st.just(object()))


@settings(max_examples=300, deadline=None)
@given(
    path=st.sampled_from(
        [
            "sim.name",
            "sim.seed",
            "sim.timeseries_window_s",
            "segment.1.preset",
            "segment.1.kind",
            "segment.1.error",
            "segment.1.link",
            "segment.1.link.service",
            "flow.0.app",
            "flow.0.from",
            "flow.0",
            "segment.0",
            "cell",
            "sweep",
            "sweep.flow.0.rate_bps",
        ]
    ),
    value=anything,
)
def test_no_value_crashes_validation(path: str, value: object) -> None:
    sc = BASE.copy()
    try:
        sc.set(path, value)
    except ScenarioError as e:
        assert isinstance(e.field, str)
        assert sc == BASE
    else:
        assert sc.is_valid()


@settings(max_examples=200, deadline=None)
@given(
    path=st.sampled_from(
        [
            "sim.seed",
            "sim.duration_s",
            "flow.0.rate_bps",
            "flow.0.dscp",
            "flow.0.talk_s",
            "segment.0.delay_ms",
            "segment.1.error.loss",
            "segment.1.error",
            "flow.0",
            "segment.1.link.seq_bits",
            "segment.1.link.service",
        ]
    ),
    value=st.one_of(
        st.integers(0, 63),
        st.floats(0.01, 1.0),
        st.sampled_from(
            [
                {"model": "independent", "loss": 0.2},
                {"name": "g", "app": "constant", "from": 1, "to": 2},
                [{"name": "x", "scheme": "karn_rlp", "max_retransmissions": 2}],
                16,
            ]
        ),
    ),
)
def test_python_set_agrees_with_the_cli_overrides(path: str, value: object) -> None:
    """Scenario.set and `mslink sim --set` (Scenario::with_overrides, used by sweeps) agree."""
    from mslink import _core

    sc = BASE.copy()
    try:
        rust = _core.with_overrides(sc.to_dict(), [(path, _core.value_text(value))])
    except ScenarioError:
        rust = None
    try:
        sc._doc = sc.to_dict()
        sc.set(path, value)  # schema and validity both checked
        ours = sc.normalized()
    except ScenarioError:
        ours = None
    if ours is not None:
        assert rust == ours
    elif rust is not None:
        # The override parses but leaves a scenario that cannot run: set() refuses it.
        assert not Scenario(rust).is_valid()
