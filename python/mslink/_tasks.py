"""The unit of work shipped to workers (threads, processes or Dask workers): a batch of runs,
one call into the Rust core with the GIL released."""

from __future__ import annotations

from typing import Any

from . import _core

Job = tuple[list[tuple[str, str]], int]


def run_chunk(
    base_toml: str,
    jobs: list[Job],
    base_dir: str,
    files: dict[str, str],
    store: str | None = None,
) -> tuple[dict[str, Any], list[str], int]:
    """Runs ``jobs`` (sweep-point overrides, repetition) of ``base_toml``: (the rows of every
    run as columns, each run's result as JSON, how many runs came from the result store
    folder ``store`` instead of being made)."""
    return _core.run_jobs(base_toml, jobs, base_dir, files, store)
