"""The ``mslink`` command installed with the package: the ``mslink`` executable, started as is.

There is one implementation of the command line, the Rust ``mslink`` executable; this script
finds it and replaces itself with it (``os.execv``), so signals, exit status and the
executable's own path (``mslink bench`` and ``mslink reproduce --bench`` start a second copy
of themselves) are those of the plain binary. It is found by one rule (:func:`executable`):
``MSLINK_EXE`` when set, else the copy installed inside this package (``mslink/bin/mslink``,
put there by ``./dev`` before ``pip install .``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def executable() -> str:
    """The ``mslink`` executable this script runs (see the module docstring)."""
    env = os.environ.get("MSLINK_EXE")
    if env:
        return env
    packaged = Path(__file__).with_name("bin") / "mslink"
    if packaged.is_file() and os.access(packaged, os.X_OK):
        return str(packaged)
    raise FileNotFoundError(
        "the mslink executable is not installed with this package: build it "
        "(cargo build --release -p mslink-cli) and set MSLINK_EXE=target/release/mslink, "
        "or install the package with ./dev, which puts it in mslink/bin"
    )


def main(argv: list[str] | None = None) -> int:
    """Runs ``mslink ARGS...``: as a console script (``argv`` None) by becoming the executable;
    called with ``argv``, as a child process, returning its exit status."""
    args = list(sys.argv if argv is None else argv)[1:]
    try:
        exe = executable()
    except FileNotFoundError as e:
        print(f"mslink: error: {e}", file=sys.stderr)
        return 1
    if argv is None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(exe, ["mslink", *args])
    return subprocess.call([exe, *args])


if __name__ == "__main__":
    sys.exit(main())
