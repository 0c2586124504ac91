"""Shared fixtures of the Python suite: the repository root and the built `mslink` binary."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def cli() -> str:
    """The CLI built by cargo (target/release/mslink), else the package's `mslink` command."""
    env = os.environ.get("MSLINK_BIN")
    if env:
        return env
    built = ROOT / "target" / "release" / "mslink"
    if built.is_file():
        return str(built)
    found = shutil.which("mslink")
    assert found, "build the CLI (cargo build --release -p mslink-cli) or pip install ."
    return found
