"""Plots without a display, and the examples (one 004 figure, one 003 figure) end to end with
small repetitions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

import mslink

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def headless_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("MPLBACKEND", None)
    return env


def test_plots_need_no_display(tmp_path: Path) -> None:
    code = f"""
import sys
import mslink
sc = mslink.Scenario.load({str(ROOT / "scenarios/003/fig5_persistence.toml")!r})
sc["sim.duration_s"] = 5
df = mslink.sweep(sc, reps=2, progress=False)
fig = mslink.plot.metric_vs_loss(df, x="segment.0.error.loss", y="loss_rate",
    hue="segment.0.link.service.0.max_retransmissions", logy=True, error="ci95")
fig.savefig({str(tmp_path / "a.png")!r})
fig.savefig({str(tmp_path / "a.svg")!r})
res = mslink.run({str(ROOT / "scenarios/003/table3_elf_cell.toml")!r}, progress=False)
mslink.plot.throughput(res.timeseries, point=0, rep=0).savefig({str(tmp_path / "b.png")!r})
assert "matplotlib" not in sys.modules, "plots are drawn by mslink-plot, not matplotlib"
"""
    subprocess.run([sys.executable, "-c", code], check=True, env=headless_env())
    for f in ("a.png", "b.png"):
        assert (tmp_path / f).read_bytes().startswith(PNG)
    assert b"<svg" in (tmp_path / "a.svg").read_bytes()


def test_python_and_cli_figures_come_from_one_engine(tmp_path: Path) -> None:
    # A chart given to the engine twice gives byte-identical files, and its SVG is the
    # engine's (the embedded sans-serif font of the CLI's plots).
    fig = mslink.plot.Figure(
        [("a", [(0.0, 1.0, 0.1), (1.0, 2.0, 0.2)]), ("b", [(0.0, 2.0, 0.0), (1.0, 1.0, 0.0)])],
        title="t",
        xlabel="x",
        ylabel="y",
        error_bars=True,
    )
    fig.savefig(tmp_path / "one.png")
    fig.savefig(tmp_path / "two.png")
    assert (tmp_path / "one.png").read_bytes() == (tmp_path / "two.png").read_bytes()
    assert (tmp_path / "one.png").read_bytes().startswith(PNG)
    svg = fig.to_svg()
    assert svg.startswith("<svg") and "sans-serif" in svg
    assert fig._repr_svg_() == svg
    try:
        fig.savefig(tmp_path / "bad.pdf")
    except ValueError as e:
        assert ".png or .svg" in str(e)
    else:
        raise AssertionError("a .pdf name must be refused")


def test_summarize_means_and_errors() -> None:
    df = pd.DataFrame({"x": [1, 1, 2, 2], "y": [1.0, 3.0, 5.0, 5.0], "h": ["a"] * 4})
    s = mslink.plot.summarize(df, "x", "y", "h")
    assert list(s["mean"]) == [2.0, 5.0]
    assert list(s["n"]) == [2, 2]
    assert abs(s["err"].iloc[0] - 2**0.5) < 1e-12  # sample standard deviation of (1, 3)
    assert s["err"].iloc[1] == 0.0


def run_example(name: str, out: Path, *args: str) -> str:
    p = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), "--out", str(out), *args],
        check=True,
        capture_output=True,
        text=True,
        env=headless_env(),
    )
    return p.stdout


def test_example_004_fig7(tmp_path: Path) -> None:
    run_example("fig7_cbr.py", tmp_path, "--reps", "2", "--duration", "60")
    for f in ("fig7_loss.png", "fig8_delay.png"):
        assert (tmp_path / f).read_bytes().startswith(PNG)
    df = pd.read_parquet(tmp_path / "fig7.parquet")
    assert len(df) == 4 * 5 * 2
    m = df.groupby(["frame_loss", "scheme"])[["loss_rate", "delay_mean_s"]].mean()
    for p in (0.03, 0.059):
        at = m.loc[p]
        # 004 §III.D: raw shows the native loss, SR none; FEC in between; Karn and OOS RLP
        # lose the same, OOS RLP with less delay.
        assert at.loss_rate["Raw"] > at.loss_rate["XOR FEC"] > at.loss_rate["OOS RLP"]
        assert at.loss_rate["SR"] == 0
        assert at.loss_rate["Karn's RLP"] == at.loss_rate["OOS RLP"]
        assert at.delay_mean_s["OOS RLP"] < at.delay_mean_s["Karn's RLP"]


def test_example_003_fig11(tmp_path: Path) -> None:
    out = run_example("fig11_elf.py", tmp_path, "--duration", "200")
    assert (tmp_path / "fig11_throughput.png").read_bytes().startswith(PNG)
    ts = pd.read_parquet(tmp_path / "fig11.parquet")
    assert set(ts["flow"]) == {"audio", "video", "ftp1", "ftp2", "Link"}
    rates = {
        line.split(":")[0].strip(): float(line.split(":")[1].split()[0])
        for line in out.splitlines()
        if "kbit/s" in line
    }
    # 003 §7: the protected flows keep their reservations; best effort shares equally.
    assert abs(rates["audio"] - 8) < 1.5 and abs(rates["video"] - 352) < 15
    assert abs(rates["ftp1"] - rates["ftp2"]) < 0.1 * rates["ftp1"]


def test_example_003_fig5(tmp_path: Path) -> None:
    run_example("fig5_persistence.py", tmp_path, "--reps", "1", "--duration", "30")
    assert (tmp_path / "fig5_persistence.png").read_bytes().startswith(PNG)
    df = pd.read_parquet(tmp_path / "fig5.parquet")
    k = "segment.0.link.service.0.max_retransmissions"
    m = df.groupby(["segment.0.error.loss", k])["loss_rate"].mean()
    for p in (0.5, 0.7):
        # 003 §3.2.3: more persistence, less end-to-end loss; with k = 0 the local loss shows.
        losses = [m[(p, kk)] for kk in (0, 1, 2, 4)]
        assert losses == sorted(losses, reverse=True)
        assert abs(m[(p, 0)] - p) < 0.05
