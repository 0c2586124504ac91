"""docs/python.md's API reference is the one its generator renders from the docstrings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_api_reference_is_up_to_date() -> None:
    p = subprocess.run(
        [sys.executable, str(ROOT / "docs/gen_python_api.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
