"""A sweep on a Dask LocalCluster with 2 workers gives exactly the rows and values of the same
sweep run locally."""

from __future__ import annotations

from pathlib import Path

import pytest
from pandas.testing import assert_frame_equal

import mslink

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]


def test_local_cluster_equals_local_run() -> None:
    sc = mslink.Scenario.load(ROOT / "scenarios/004/fig7_cbr_one_wlan.toml")
    sc["sim.duration_s"] = 5
    grid = {
        "segment.1.error.mean_bytes": [131072, 32768, 16384],
        "segment.1.link.service.0": [
            {"name": "cbr", "scheme": "raw"},
            {"name": "cbr", "scheme": "oos_rlp", "max_retransmissions": 1},
        ],
    }
    local = mslink.sweep(sc, grid, reps=2, progress=False)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = mslink.sweep(sc, grid, reps=2, client=client, progress=False)
        # A cluster object (LocalCluster here, SLURMCluster alike) or its address works too:
        # a client is made and closed.
        by_cluster = mslink.sweep(sc, grid, reps=2, client=cluster, progress=False)
        by_address = mslink.sweep(
            sc, grid, reps=2, client=cluster.scheduler_address, progress=False
        )
    assert len(local) == 3 * 2 * 2
    assert_frame_equal(remote, local)
    assert_frame_equal(by_cluster, local)
    assert_frame_equal(by_address, local)


def test_trace_files_travel_with_the_work() -> None:
    sc = mslink.Scenario.load(ROOT / "scenarios/003/fig11_elf_walls.toml")
    sc["sim.duration_s"] = 30
    assert list(sc.trace_files()) == ["../../traces/003/walls.trace"]
    local = mslink.sweep(sc, {"cell.scheduler.flows.2.power_factor": [1.0, 1.2]}, progress=False)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = mslink.sweep(
            sc, {"cell.scheduler.flows.2.power_factor": [1.0, 1.2]}, client=client, progress=False
        )
    assert_frame_equal(remote, local)


def test_ten_thousand_points_on_a_cluster_share_the_store_and_equal_the_local_run(
    tmp_path: Path,
) -> None:
    """Issue 32 item 5: a 10^4-point sweep on a LocalCluster fills a result store the local
    run then takes every run from, and both equal the same sweep made locally without it."""
    sc = mslink.Scenario.load(ROOT / "scenarios/004/fig7_cbr_one_wlan.toml")
    sc["sim.duration_s"] = 0.2
    sc["sim.drain_s"] = 0.1
    sc["sim.timeseries_window_s"] = 0
    grid = {
        "segment.1.error.mean_bytes": [4096 + 64 * i for i in range(100)],
        "flow.0.rate_bps": [1_000_000 + 10_000 * i for i in range(100)],
    }
    store = tmp_path / "store"
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = mslink.run(sc, grid=grid, reps=1, client=client, store=store, progress=False)
    assert remote.reused == 0
    assert len(remote.flows) == 10_000
    assert (
        remote.flows[["segment.1.error.mean_bytes", "flow.0.rate_bps"]].drop_duplicates().shape[0]
        == 10_000
    )
    again = mslink.run(sc, grid=grid, reps=1, store=store, progress=False)
    assert again.reused == 10_000
    assert_frame_equal(again.flows, remote.flows)
    local = mslink.sweep(sc, grid, reps=1, progress=False)
    assert_frame_equal(local, remote.flows)
