"""Scenarios from Python: TOML round trips, building in Python, errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

import mslink
from mslink import Scenario, ScenarioError

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = sorted((ROOT / "scenarios").rglob("*.toml"))


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(ROOT)))
def test_toml_python_toml_round_trip(path: Path, tmp_path: Path) -> None:
    sc = Scenario.load(path)
    sc.validate()
    text = sc.to_toml()
    again = Scenario.loads(text)
    assert again == sc
    assert again.normalized() == sc.normalized()
    out = tmp_path / "s.toml"
    sc.save(out)
    assert Scenario.load(out) == sc
    # Saved text is ordinary TOML that the CLI's parser reads the same way.
    assert Scenario.loads(out.read_text()).to_toml() == text


def test_built_in_python_matches_the_file() -> None:
    sc = Scenario(sim={"name": "built", "duration_s": 10.0, "seed": 3})
    sc.add_segment(kind="wired", rate_bps=10_000_000, delay_ms=1)
    sc.add_segment(
        kind="wireless",
        preset="wlan",
        error={"model": "independent", "loss": 0.03},
        link={"seq_bits": 8, "mtu": 994, "service": [{"name": "cbr", "scheme": "oos_rlp"}]},
    )
    sc.add_flow(name="media", app="cbr", from_=0, to=2, packet_bytes=994)
    sc.validate()
    text = """
[sim]
name = "built"
duration_s = 10.0
seed = 3

[[segment]]
kind = "wired"
rate_bps = 10000000
delay_ms = 1

[[segment]]
kind = "wireless"
preset = "wlan"
error = { model = "independent", loss = 0.03 }
[segment.link]
seq_bits = 8
mtu = 994
[[segment.link.service]]
name = "cbr"
scheme = "oos_rlp"

[[flow]]
name = "media"
app = "cbr"
from = 0
to = 2
packet_bytes = 994
"""
    assert Scenario.loads(text) == sc
    assert sc["segment.1.link.service.0.scheme"] == "oos_rlp"
    assert sc["segment[1].error.loss"] == 0.03
    assert "flow.0.to" in sc and "flow.0.dscp" not in sc
    assert sc.normalized()["flow"][0]["dscp"] == 0  # the simulator's default
    r = sc.replace({"sim.seed": 9})
    assert r["sim.seed"] == 9 and sc["sim.seed"] == 3


def field_of(fn) -> str:
    with pytest.raises(ScenarioError) as e:
        fn()
    assert e.value.field in str(e.value)
    return e.value.field


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("sim.duration_s", -1, "sim.duration_s"),
        ("sim.duration_s", "long", "sim.duration_s"),
        ("sim.reps", 0, "sim.reps"),
        ("sim.speed", 1, "sim.speed"),
        ("segment.0.rate_bps", 0, "segment[0].rate_bps"),
        ("segment.0.colour", "red", "segment[0].colour"),
        ("segment.0.error", {"model": "independent", "loss": 2}, "segment[0].error"),
        ("segment.0.error", {"model": "independent", "los": 0.1}, "segment[0].error.los"),
        ("segment.1.link.service.0.scheme", "oos", "segment[1].link.service[0]"),
        ("flow.0.to", 9, "flow[0].to"),
        ("flow.0.app", "video", "flow[0].app"),
        ("flow.0.packet_bytes", 10, "flow[0].packet_bytes"),
        ("flow.0.dscp", 64, "flow[0].dscp"),
        ("flow.0.from", -1, "flow[0].from"),
        ("flow.0.rate_bps", None, "flow.0.rate_bps"),
    ],
)
def test_errors_name_the_field(path: str, value: object, field: str) -> None:
    sc = Scenario.load(ROOT / "scenarios/004/fig7_cbr_one_wlan.toml")
    before = sc.to_dict()
    assert field_of(lambda: sc.set(path, value)) == field
    assert sc.to_dict() == before, "a refused change leaves the scenario as it was"


def test_errors_of_paths_and_syntax() -> None:
    sc = Scenario.load(ROOT / "scenarios/004/fig7_cbr_one_wlan.toml")
    assert field_of(lambda: sc.set("flow.3.rate_bps", 1)) == "flow.3"
    assert field_of(lambda: sc.set("sim.name.x", 1)) == "sim.name.x"
    with pytest.raises(ScenarioError, match="line 2"):
        Scenario.loads("[sim]\nduration_s = = 3\n")
    with pytest.raises(ScenarioError, match="cannot read scenario"):
        Scenario.load(ROOT / "no-such.toml")
    # A sweep value that breaks a point is reported with the point.
    bad = sc.copy()
    with pytest.raises(ScenarioError) as e:
        bad.set("sweep", {"flow.0.rate_bps": [1e6, -5]})
    assert e.value.field == "flow[0].rate_bps" and "flow.0.rate_bps=-5" in str(e.value)


def test_building_step_by_step_checks_the_schema_only() -> None:
    sc = Scenario()
    assert not sc.is_valid()
    # A flow before its segments is fine while building ...
    sc.add_flow(name="a", from_=0, to=2)
    with pytest.raises(ScenarioError) as e:
        sc.validate()
    assert e.value.field == "segment"
    # ... but an unknown key is refused at once.
    assert field_of(lambda: sc.add_segment(kind="wired", rate=5)) == "segment[0].rate"
    sc.add_segment(kind="wired").add_segment(kind="wired")
    sc.validate()
    # Once runnable, a change that breaks it is refused.
    assert field_of(lambda: sc.set("flow.0.to", 5)) == "flow[0].to"


def test_version_and_value_helpers() -> None:
    assert mslink.__version__
    assert mslink.sweep_value("131072") == 131072
    assert mslink.sweep_value('"raw"') == "raw"
    assert mslink.sweep_value('{ name = "cbr", scheme = "raw" }') == "Raw"
    assert mslink.toml_value('{ name = "cbr", scheme = "raw" }')["scheme"] == "raw"


def test_notes_name_a_clamped_window_and_runs_warn() -> None:
    """A valid scenario whose Selective Repeat window its sequence numbers cannot hold (the
    link segments: one MTU byte too many) gets a note; a run issues it as a ScenarioNote."""
    sc = Scenario.load(ROOT / "scenarios/004/fig4_ftp_one_hscsd.toml")
    assert sc.notes() == []
    sc["segment.1.link.mtu"] = 95  # 95 + 4 (CRC) + 2 (SR header) > 100-byte frames
    sc["sweep"] = {"segment.1.link.service.0": [{"name": "tcp", "scheme": "selective_repeat"}]}
    notes = sc.notes()
    assert len(notes) == 1
    assert "segment[1].link" in notes[0] and "clamped to 15" in notes[0]
    sc["flow.0.size_bytes"] = 2000
    with pytest.warns(mslink.ScenarioNote, match="clamped to 15"):
        mslink.run(sc, progress=False)
