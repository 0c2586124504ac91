"""The ``mslink`` command installed with the package: the Rust CLI, run in-process.

There is one implementation of the command line, ``mslink_cli::main_with_args`` in Rust; this
entry point only hands it ``sys.argv``.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys


def main(argv: list[str] | None = None) -> int:
    """Runs ``mslink ARGS...`` and returns (as a console script: exits with) its status."""
    from . import _core

    args = list(sys.argv if argv is None else argv)
    if not args:
        args = ["mslink"]
    # Ctrl-C should stop the command as it stops the plain binary; Python would otherwise
    # only note the signal until the Rust code returns.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # Verbs that start a second copy of themselves (mslink bench) find it here, since this
    # process is the Python interpreter.
    me = os.path.abspath(sys.argv[0]) if argv is None else shutil.which("mslink")
    if me and os.path.isfile(me) and "MSLINK_EXE" not in os.environ:
        os.environ["MSLINK_EXE"] = me
    args[0] = "mslink"
    return int(_core.run_cli(args))


if __name__ == "__main__":
    sys.exit(main())
