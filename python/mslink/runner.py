"""Runs and sweeps: local threads, any ``concurrent.futures`` executor, or a Dask cluster.

Contract. The plan (which sweep points, which repetitions, in which order, with which seeds)
is the Rust CLI's: ``mslink.run(s)`` computes exactly what ``mslink sim s`` computes, and the
tables equal its files. Work is cut into chunks of runs; each chunk is one call into the Rust
simulator with the GIL released, so local threads run in parallel like processes. Results are
put back in (point, repetition) order whatever finishes first, so a sweep gives the same rows
and values locally, in processes, or on any Dask cluster. With a result store (``store=``),
each run is first looked up in the folder ``mslink sim --store`` keeps (the key and the stored
bytes are the CLI's, ``mslink_lab::campaign::Store``): a run found there is read back, a run
made is put there, and the results are the same either way.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Union

import pandas as pd

from . import _core, _tasks
from .results import Chunk, Result, build
from .scenario import PathLike, Scenario, ScenarioNote, as_scenario

ScenarioLike = Union[Scenario, PathLike, Mapping[str, Any]]


def _sets(
    sc: Scenario, grid: Mapping[str, Sequence[Any]] | None, reps: int | None, seed: int | None
) -> tuple[Scenario, list[tuple[str, str]]]:
    sets: list[tuple[str, str]] = []
    if reps is not None:
        if reps < 1:
            raise _core.ScenarioError("reps must be at least 1")
        sets.append(("sim.reps", str(int(reps))))
    if seed is not None:
        sets.append(("sim.seed", str(int(seed))))
    if grid is not None:
        sc = sc.copy()
        doc = sc._doc
        doc["sweep"] = {k: list(v) for k, v in grid.items()}
        _core.check(doc)
    return sc, sets


def _dask_client(client: Any) -> tuple[Any, bool]:
    """(a client with submit, whether we made it) for an address or a cluster object."""
    if isinstance(client, str) or (
        hasattr(client, "scheduler_address") and not hasattr(client, "submit")
    ):
        from distributed import Client

        return Client(client), True
    return client, False


def _is_dask(client: Any) -> bool:
    return type(client).__module__.split(".")[0] == "distributed"


def execute(
    scenario: ScenarioLike,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    reps: int | None = None,
    seed: int | None = None,
    client: Any = None,
    jobs: int | None = None,
    progress: bool | None = None,
    chunk: int | None = None,
    store: str | os.PathLike[str] | None = None,
) -> Result:
    """Plans, runs and assembles a run or sweep (see :func:`run` and :func:`sweep`)."""
    from tqdm.auto import tqdm

    sc, sets = _sets(as_scenario(scenario), grid, reps, seed)
    base_toml, name, keys, points, per_point, notes = _core.plan(sc._doc, sets)
    for note in notes:
        warnings.warn(f"scenario {name}: {note}", ScenarioNote, stacklevel=3)
    job_list = [(pi, rep) for pi, n in enumerate(per_point) for rep in range(n)]
    files = sc.trace_files()
    base_dir = str(sc.base_dir)
    store_dir = None if store is None else os.fspath(os.path.abspath(store))

    client, owned = _dask_client(client)
    local = client is None
    if local:
        workers = max(1, jobs or os.cpu_count() or 1)
        client = cf.ThreadPoolExecutor(max_workers=workers)
    elif _is_dask(client):
        workers = max(1, sum(client.nthreads().values()))
    else:
        workers = max(1, getattr(client, "_max_workers", None) or os.cpu_count() or 1)
    # Small enough to balance the load and move the progress bar, large enough that the
    # per-call cost stays negligible.
    size = chunk or max(1, -(-len(job_list) // (workers * 16)))
    chunks = [job_list[i : i + size] for i in range(0, len(job_list), size)]
    bar = tqdm(
        total=len(job_list),
        unit="run",
        desc=name,
        disable=None if progress is None else not progress,
    )
    out: list[Chunk | None] = [None] * len(chunks)
    reused = 0
    try:
        futures = {}
        for ci, c in enumerate(chunks):
            args = (base_toml, [(points[pi], rep) for pi, rep in c], base_dir, files, store_dir)
            if _is_dask(client):
                f = client.submit(_tasks.run_chunk, *args, pure=False)
            else:
                f = client.submit(_tasks.run_chunk, *args)
            futures[f] = ci
        if _is_dask(client):
            from distributed import as_completed as done_order
        else:
            done_order = cf.as_completed
        for f in done_order(list(futures)):
            ci = futures[f]
            tables, runs, from_store = f.result()
            out[ci] = (tables, runs)
            if store_dir is not None:
                reused += from_store
                bar.set_description(f"{name} ({reused} from the store)", refresh=False)
            bar.update(len(chunks[ci]))
    finally:
        bar.close()
        if local:
            client.shutdown(wait=True, cancel_futures=True)
        if owned:
            client.close()
    provenance = {
        "mslink_version": _core.__version__,
        "scenario_text": base_toml,
        "overrides": [list(s) for s in sets],
        "seed": _core.parse_toml(base_toml).get("sim", {}).get("seed"),
        "reps": max(per_point, default=0),
    }
    done = [c for c in out if c is not None]
    result = build(name, keys, points, job_list, done, provenance)
    result.reused = reused
    return result


def run(
    scenario: ScenarioLike,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    seed: int | None = None,
    reps: int | None = None,
    jobs: int | None = None,
    client: Any = None,
    progress: bool | None = None,
    store: str | os.PathLike[str] | None = None,
) -> Result:
    """Runs a scenario -- every point of its ``[sweep]`` (or of ``grid``, which replaces it,
    as in :func:`sweep`) and every repetition, as ``mslink sim`` does -- and returns its
    :class:`~mslink.results.Result`: flows, time series, links, services, runs, the summary,
    :meth:`~mslink.results.Result.stats` and :meth:`~mslink.results.Result.to_xarray`.

    ``seed`` replaces ``sim.seed`` (repetition 0 uses ``seed``, repetition ``r`` its own
    independent seed) and ``reps`` replaces ``sim.reps``. Runs execute on ``jobs`` threads
    (default: one per CPU; the GIL is released while the simulator runs) or on ``client``
    (see :func:`sweep`). A progress bar
    (tqdm, in terminals and notebooks) shows when ``progress`` is true, or by default when
    stderr is a terminal.

    ``store`` is a result store folder (created if missing), shared with ``mslink sim
    --store``: a run already made by an earlier ``mslink sim --store`` or Python call with the
    same point scenario, repetition, trace file contents and mslink version is taken from it
    instead of being made again, and every run made is put into it. The results are
    identical either way; :attr:`~mslink.results.Result.reused` says how many runs came from
    the store (the progress bar shows it too). With a Dask ``client`` the folder must be one
    every worker can read and write (a shared file system).
    """
    return execute(
        scenario,
        grid=grid,
        reps=reps,
        seed=seed,
        client=client,
        jobs=jobs,
        progress=progress,
        store=store,
    )


def sweep(
    scenario: ScenarioLike,
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    reps: int | None = None,
    seed: int | None = None,
    client: Any = None,
    jobs: int | None = None,
    progress: bool | None = None,
    store: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Runs every combination of ``grid`` (dotted key -> values, as a ``[sweep]`` table; it
    replaces the scenario's own grid, which is used when ``grid`` is None) ``reps`` times and
    returns one tidy DataFrame: one row per flow, point and repetition, with a column per grid
    key (the columns of ``flows.csv``).

    ``client`` chooses where the runs execute:

    * ``None``: this process, ``jobs`` threads (in parallel: the GIL is released);
    * a ``concurrent.futures`` executor, e.g. ``ProcessPoolExecutor(4)``;
    * a ``dask.distributed.Client`` -- on a ``LocalCluster``, a remote scheduler or a
      dask-jobqueue ``SLURMCluster`` -- or a scheduler address / cluster object, for which a
      client is made and closed. Workers need ``mslink`` installed; trace files are shipped
      with the work, so they need no shared folder.

    The rows and values do not depend on where the runs executed.

    ``store`` is a result store folder, as in :func:`run`: runs already made by an earlier
    ``mslink sim --store`` or Python call with the same point scenario, repetition, trace
    file contents and mslink version are taken from it, the others are made and put into
    it; the rows are identical either way. With Dask, the folder must be shared by the
    workers (a file system every worker mounts at the same path). Use :func:`run` for the
    :class:`~mslink.results.Result`, whose ``reused`` counts the runs taken from the store.
    """
    return execute(
        scenario,
        grid=grid,
        reps=reps,
        seed=seed,
        client=client,
        jobs=jobs,
        progress=progress,
        store=store,
    ).flows
