"""`mslink.plot` titles, scales and units its axes as `mslink sim`'s own plots of the same runs.

The CLI's sweep plots and `mslink.plot.metric_vs_loss` take their axis titles from one Rust
function (`mslink_plot::axes`); the measured frame loss on the x axis is computed on each side.
These tests run one scenario both ways and compare what the two figures say.
"""

from __future__ import annotations

import re
import subprocess
from html import unescape
from pathlib import Path

import mslink

ROOT = Path(__file__).resolve().parents[2]


def svg_texts(path: Path) -> list[str]:
    """The text elements of an SVG the CLI drew."""
    found = re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())
    return [unescape(t).strip() for t in found]


def cli_sweep(cli: str, scenario: str, sets: list[str], out: Path) -> None:
    cmd = [cli, "sim", str(ROOT / scenario), "--reps", "2", "--jobs", "1", "-q", "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, timeout=600)


def test_datagram_loss_axes_match_the_clis(cli: str, tmp_path: Path) -> None:
    scenario = "scenarios/004/fig7_cbr_one_wlan.toml"
    cli_sweep(cli, scenario, ["sim.duration_s=10"], tmp_path)
    texts = svg_texts(tmp_path / "plots" / "sweep_loss_rate.svg")
    sc = mslink.Scenario.load(ROOT / scenario)
    sc["sim.duration_s"] = 10
    res = mslink.run(sc, reps=2, progress=False)
    fig = mslink.plot.metric_vs_loss(
        res, x="segment.1.error.mean_bytes", y="loss_rate", hue="segment.1.link.service.0"
    )
    assert fig.ylabel == "residual loss (%)"
    assert fig.xlabel == "frame loss (%, measured on segment 1)"
    for text in (fig.title, fig.xlabel, fig.ylabel):
        assert text in texts, (text, texts)
    # In percent, as the CLI draws them: Raw's residual loss is near the frame loss.
    raw = dict(fig.lines)["Raw"]
    assert all(0.3 < loss / x < 1.5 for x, loss, _ in raw), raw
    # A metric in seconds is drawn in milliseconds.
    delay = mslink.plot.metric_vs_loss(res, x="segment.1.error.mean_bytes", y="delay_mean_s")
    assert delay.ylabel == "mean delay (ms)"
    assert delay.ylabel in svg_texts(tmp_path / "plots" / "sweep_delay_mean.svg")
    assert 1 < delay.lines[0][1][0][1] < 100, delay.lines


def test_a_tcp_flows_loss_rate_is_named_for_what_it_counts(cli: str, tmp_path: Path) -> None:
    scenario = "scenarios/004/fig2_ftp_one_wlan.toml"
    sets = ["sim.duration_s=20", "flow.0.size_bytes=200000"]
    cli_sweep(cli, scenario, sets, tmp_path)
    texts = svg_texts(tmp_path / "plots" / "sweep_loss_rate.svg")
    sc = mslink.Scenario.load(ROOT / scenario)
    sc["sim.duration_s"] = 20
    sc["flow.0.size_bytes"] = 200000
    df = mslink.sweep(sc, reps=2, progress=False)
    assert "udp" not in set(df["transport"])
    key = next(k for k in df.columns if k.startswith("segment.") and ".error." in k)
    fig = mslink.plot.metric_vs_loss(df, x=key, y="loss_rate")
    assert fig.ylabel == "retransmitted segments (%)"
    assert fig.ylabel in texts, texts
    rtt = mslink.plot.metric_vs_loss(df, x=key, y="delay_mean_s")
    assert rtt.ylabel == "smoothed RTT (ms)"


def test_names_on_the_x_axis_are_categories_drawn_as_points(tmp_path: Path) -> None:
    sc = mslink.Scenario.load(ROOT / "scenarios/004/fig7_cbr_one_wlan.toml")
    sc["sim.duration_s"] = 5
    df = mslink.sweep(sc, reps=2, progress=False)
    fig = mslink.plot.metric_vs_loss(df, x="segment.1.link.service.0", y="loss_rate")
    assert fig.categories == ["Raw", "XOR FEC", "SR", "Karn's RLP", "OOS RLP"]
    chart = fig.to_json()
    assert '"scatter": true' in chart and '"categories": ["Raw"' in chart
    svg = fig.to_svg()
    assert "Karn&apos;s RLP" in svg or "Karn's RLP" in svg
    # Big numbers get SI prefixes rather than long tick labels.
    rate = mslink.plot.metric_vs_loss(df, x="segment.1.error.mean_bytes", y="throughput_bps")
    assert rate.ylabel == "throughput (kbit/s)"
