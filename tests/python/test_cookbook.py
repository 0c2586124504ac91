"""docs/cookbook.md's recipes: every scenario in examples/cookbook runs (two repetitions) and
writes the summary, the statistics and the plots the page names, with the relation the page
reads in them; the Gilbert-Elliott arithmetic of the page, and that its two ways of writing a
chain (average loss and burst, or the chain's own numbers) give the same runs; the emulator
recipe's link file (run for real as root); and examples/tunnel's two configurations, which must
parse, pass the tunnel's own checks and agree with each other."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COOKBOOK = ROOT / "examples" / "cookbook"
TUNNEL = ROOT / "examples" / "tunnel"
DOC = ROOT / "docs" / "cookbook.md"
SIMULATED = ["cellular", "wlan", "hscsd", "satellite"]
EMULATED = ["mahimahi"]
PNG = b"\x89PNG\r\n\x1a\n"


def is_root() -> bool:
    return os.geteuid() == 0


def skip_without_root(what: str) -> None:
    """Skips a test that needs root, unless MSLINK_REQUIRE_ROOT=1 (as CI sets) makes it a
    failure, as for the Rust emulator tests."""
    if is_root():
        return
    assert os.environ.get("MSLINK_REQUIRE_ROOT") != "1", (
        f"MSLINK_REQUIRE_ROOT=1 but not running as root: {what} needs it"
    )
    pytest.skip(f"{what} needs root")


def test_every_recipe_is_on_the_page_and_in_this_test() -> None:
    assert sorted(p.stem for p in COOKBOOK.glob("*.toml")) == sorted(SIMULATED + EMULATED)
    doc = DOC.read_text()
    for name in SIMULATED:
        assert f"mslink sim examples/cookbook/{name}.toml --out results/{name}" in doc, name
    for name in EMULATED:
        assert f"--link examples/cookbook/{name}.toml" in doc, name


def stats_rows(out: Path) -> list[dict[str, str]]:
    with (out / "stats.csv").open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", SIMULATED)
def test_cookbook_scenario_runs_and_writes_what_the_page_reads(
    cli: str, tmp_path: Path, name: str
) -> None:
    out = tmp_path / name
    cmd = [cli, "sim", str(COOKBOOK / f"{name}.toml"), "--out", str(out), "--reps", "2"]
    p = subprocess.run(
        [*cmd, "--jobs", "1", "-q"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr

    summary = json.loads((out / "summary.json").read_text())
    points = sorted({r["point"] for r in summary["runs"]})
    assert len(points) > 1, "every recipe sweeps, so it draws the sweep charts"
    assert len(summary["runs"]) == 2 * len(points)
    assert (out / "flows.csv").is_file()

    plots = out / "plots"
    charts = ["sweep_throughput", "sweep_loss_rate", "sweep_delay_mean"]
    charts += [f"timeseries_p{n}" for n in points]
    for chart in charts:
        assert (plots / f"{chart}.png").read_bytes().startswith(PNG), chart
        assert b"<svg" in (plots / f"{chart}.svg").read_bytes(), chart

    # The intervals the page quotes: one throughput row per point and TCP flow, with bounds.
    rows = [r for r in stats_rows(out) if r["metric"] == "throughput_bps"]
    tcp = [r for r in rows if r["flow"] in ("bulk", "download")]
    assert len(tcp) == len(points)
    for r in tcp:
        assert r["n"] == "2"
        assert float(r["ci95_low"]) <= float(r["mean"]) <= float(r["ci95_high"])

    # The relation every recipe reads: the download is faster over Selective Repeat than
    # over Raw, at every other setting of the sweep.
    service = next(k for k in tcp[0] if "link.service" in k)
    others = [k for k in tcp[0] if k.startswith("segment.") and k != service]
    by_setting: dict[tuple[str, ...], dict[str, float]] = {}
    for r in tcp:
        by_setting.setdefault(tuple(r[k] for k in others), {})[r[service]] = float(r["mean"])
    for setting, means in by_setting.items():
        raw = next(v for k, v in means.items() if k.startswith("Raw"))
        sr = [v for k, v in means.items() if k.startswith("SR")]
        assert sr, means
        assert all(v > raw for v in sr), (name, setting, means)


def toml(path: Path) -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads(path.read_text())


# The cellular recipe's bursts, as the page writes them: 2% average loss, bursts of 5 frames
# (per frame) or of 30 ms (in time), with the default loss_good = 0 and loss_bad = 1.
LOSS, BURST_FRAMES, BURST_S = 0.02, 5, 0.030


def chain_of_the_page() -> tuple[float, float, float, float]:
    """p, r, good_s, bad_s for LOSS and the bursts, computed as mslink does
    (crates/channel/src/burst_spec.rs, the same operations in the same order)."""
    pi = (LOSS - 0.0) / (1.0 - 0.0)
    r = 1.0 / BURST_FRAMES
    p = r * pi / (1.0 - pi)
    return p, r, BURST_S * (1.0 - pi) / pi, BURST_S


def test_gilbert_elliott_arithmetic_of_the_page() -> None:
    err = toml(COOKBOOK / "cellular.toml")["segment"][0]["error"]
    assert err == {"model": "gilbert_elliott", "loss": LOSS, "burst_frames": BURST_FRAMES}
    p, r, good_s, bad_s = chain_of_the_page()
    assert 1 / r == pytest.approx(5)
    assert p / (p + r) == pytest.approx(0.02, rel=1e-12)
    doc = DOC.read_text()
    # The chain the page names beside the pair, rounded as it writes them.
    assert f"p = {p:.7f}, r = {r}" in doc
    assert f"loss = {LOSS}, burst_s = {bad_s:.3f} }}` is `bad_s = {bad_s:.3f}`," in doc
    assert f"`good_s = {good_s:.2f}`" in doc
    # The page's table: p = L r / (1 - L) for each average loss L and burst B, r = 1 / B.
    table = re.findall(r"^\| (\d+)% \| (\d+) \| ([\d.]+) \| ([\d.]+) \|$", doc, re.MULTILINE)
    assert len(table) >= 4
    for loss, burst, r_text, p_text in table:
        L, B = int(loss) / 100, int(burst)
        assert float(r_text) == pytest.approx(1 / B, rel=2e-3), (loss, burst)
        assert float(p_text) == pytest.approx(L * (1 / B) / (1 - L), rel=3e-3), (loss, burst)


def run_cellular(cli: str, out: Path, error: str | None) -> str:
    """Runs the cellular recipe (two repetitions), its error model replaced by `error` (an
    inline TOML table) when given; returns its flows.csv."""
    cmd = [cli, "sim", str(COOKBOOK / "cellular.toml"), "--out", str(out), "--reps", "2"]
    cmd += ["--jobs", "1", "-q", "--no-plots"]
    if error is not None:
        cmd += ["--set", f"segment.0.error={error}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return (out / "flows.csv").read_text()


def test_both_forms_of_the_page_are_the_same_chain(cli: str, tmp_path: Path) -> None:
    # Average loss and burst, or the chain's own numbers: the same runs, frame for frame.
    p, r, good_s, bad_s = chain_of_the_page()
    as_pair = run_cellular(cli, tmp_path / "pair", None)
    as_chain = run_cellular(cli, tmp_path / "chain", f'{{model="gilbert_elliott",p={p!r},r={r!r}}}')
    assert as_pair == as_chain
    in_time = run_cellular(
        cli,
        tmp_path / "time-pair",
        f'{{model="gilbert_elliott_time",loss={LOSS!r},burst_s={BURST_S!r}}}',
    )
    in_time_chain = run_cellular(
        cli,
        tmp_path / "time-chain",
        f'{{model="gilbert_elliott_time",good_s={good_s!r},bad_s={bad_s!r}}}',
    )
    assert in_time == in_time_chain
    assert in_time != as_pair, "the time-based chain meets other bursts"


def test_emulator_recipe_link_file(cli: str, tmp_path: Path) -> None:
    link = COOKBOOK / "mahimahi.toml"
    trace = (link.parent / toml(link)["capacity_trace"]).resolve()
    assert trace.is_file() and trace.suffix == ".mahi"
    skip_without_root("mslink emulate")
    if shutil.which("iperf3") is None:
        pytest.skip("needs iperf3")
    out = tmp_path / "mm"
    cmd = [
        cli,
        "emulate",
        "--pair",
        "--link",
        str(link),
        "--quiet",
        "--uplink-log",
        str(out / "up.log"),
        "--out",
        str(out),
        "--right",
        "iperf3 -s -1 >/dev/null",
        "--left",
        "sleep 0.5; iperf3 -C cubic -c $MSLINK_RIGHT -t 1 >/dev/null",
    ]
    p = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["seed"] == 1
    g = subprocess.run(
        [cli, "graph", str(out / "up.log"), "-o", str(out / "up.png"), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert g.returncode == 0, g.stderr
    assert (out / "up.png").read_bytes().startswith(PNG)


def test_the_tunnel_pair_agrees() -> None:
    a, b = toml(TUNNEL / "a.toml"), toml(TUNNEL / "b.toml")
    assert a["link"] == b["link"], "both ends must run the same link layer"
    assert a["peer"] == b["listen"] and b["peer"] == a["listen"]
    assert a["psk_file"] == b["psk_file"] == "psk"  # beside the files
    assert a["tun"]["name"] != b["tun"]["name"]
    net = {t["tun"]["address"].rsplit(".", 1)[0] for t in (a, b)}
    assert len(net) == 1 and a["tun"]["address"] != b["tun"]["address"]
    assert (TUNNEL / ".gitignore").read_text().split() == ["psk"]


def run_tunnel_end(cli: str, config: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs one end until it stops at its first error: past the file, the key and the link
    configuration, at binding its UDP address, which this host does not have. As root it runs
    in a fresh network namespace with its loopback up (with every device down, Linux lets a
    socket bind any address), so nothing it would make reaches the host."""
    cmd = [cli, "tunnel", str(config)]
    if is_root():
        if shutil.which("unshare") is None or shutil.which("ip") is None:
            pytest.skip("needs unshare and ip to run a tunnel end as root harmlessly")
        cmd = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *cmd]
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=30)
    if is_root() and p.returncode != 0 and p.stderr.startswith("unshare:"):
        pytest.skip(f"cannot make a network namespace here: {p.stderr.strip()}")
    return p


def test_tunnel_configs_pass_the_tunnels_own_checks(cli: str, tmp_path: Path) -> None:
    # The configurations, copied with the key they name beside them (a relative key file is
    # read from the configuration's folder), run from another directory.
    key = subprocess.run([cli, "tunnel", "genpsk"], capture_output=True, text=True, check=True)
    (tmp_path / "psk").write_text(key.stdout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    past_the_checks = ("listen = 192.168.50.",)
    for end in ("a", "b"):
        config = tmp_path / f"{end}.toml"
        config.write_text((TUNNEL / f"{end}.toml").read_text())
        p = run_tunnel_end(cli, config, elsewhere)
        assert p.returncode != 0
        assert any(s in p.stderr for s in past_the_checks), p.stderr

    # The same run does tell a configuration error: a misspelt key is named with its line.
    bad = tmp_path / "bad.toml"
    bad.write_text((TUNNEL / "a.toml").read_text().replace("txqueuelen", "txqueuelenn"))
    p = run_tunnel_end(cli, bad, tmp_path)
    assert p.returncode != 0
    assert "unknown field `txqueuelenn`" in p.stderr and "bad.toml" in p.stderr, p.stderr
    assert not any(s in p.stderr for s in past_the_checks), p.stderr
