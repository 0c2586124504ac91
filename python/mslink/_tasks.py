"""The unit of work shipped to workers (threads, processes or Dask workers).

Kept free of pandas and other heavy imports so that a worker process starts quickly.
"""

from __future__ import annotations

from . import _core

Job = tuple[list[tuple[str, str]], int]


def run_chunk(base_toml: str, jobs: list[Job], base_dir: str, files: dict[str, str]) -> list[str]:
    """Runs ``jobs`` (sweep-point overrides, repetition) of ``base_toml``; JSON per run."""
    return _core.run_jobs(base_toml, jobs, base_dir, files)
