"""The current figures of docs/bench.md, measured and written in one command.

Runs each `mslink bench` command below and rewrites the part of docs/bench.md between the
`bench-figures` markers with the host (bench/hostinfo.py), then every command and the report
it printed, verbatim. The dated sections after the block are earlier sessions' analyses, each
naming its own host.

    python3 bench/bench_figures.py                        # about 12 minutes on 2 vCPUs
    python3 bench/bench_figures.py --mslink PATH          # another build of mslink
    python3 bench/bench_figures.py --only 0               # one command (its index), for a try

Needs root for the `--netns` command (two namespaces joined by a veth). Run it on a quiet
machine: the figures time this host.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

from hostinfo import ROOT, check_block, describe_host, write_block

DOC = ROOT / "docs" / "bench.md"
BLOCK = ("bench-figures", "bench/bench_figures.py")

# (what it answers, arguments after `mslink bench`)
COMMANDS = [
    (
        "000 Figs. 4-7 and Tables 1-2: shared memory and TCP, polling and blocking, both ends "
        "pinned (server CPU 0, client CPU 1), each polling round trip against the floor measured "
        "just before and after it",
        "local --backend shm --backend tcp --cpu 0,1 --floor --reps 3 "
        "--sizes 1,64,1024,16384,65536 --iters 5000 --warmup 500 --volume 67108864 "
        "--calls 1000 --no-plots",
    ),
    (
        "every backend over the transport its name says (the kernel's own word for each socket "
        "heads the report), blocking, both ends pinned, 64 KiB messages (UDP 32 KiB)",
        "local --backend tcp --backend tcp-batch --backend uring --mode block --cpu 0,1 --reps 3 "
        "--sizes 65536 --iters 2000 --warmup 200 --volume 268435456 --calls 100 --no-plots",
    ),
    (
        "the same over UDP",
        "local --backend udp --backend udp-batch --backend uring-udp --mode block --cpu 0,1 "
        "--reps 3 --sizes 32768 --iters 2000 --warmup 200 --volume 268435456 --calls 100 "
        "--no-plots",
    ),
    (
        "two network namespaces joined by a veth: TCP and io_uring, blocking",
        "local --netns --backend tcp --backend uring --mode block --cpu 0,1 --reps 3 "
        "--sizes 64,65536 --iters 2000 --warmup 200 --volume 134217728 --calls 100 --no-plots",
    ),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mslink", default=str(ROOT / "target" / "release" / "mslink"))
    ap.add_argument("--only", type=int, action="append", help="run only command N (0-based)")
    ap.add_argument("--doc", type=Path, default=DOC, help="the file whose block is rewritten")
    a = ap.parse_args()
    check_block(a.doc, *BLOCK)
    if not Path(a.mslink).is_file():
        print(f"bench_figures.py: no mslink at {a.mslink}; cargo build --release", file=sys.stderr)
        return 1
    chosen = [c for i, c in enumerate(COMMANDS) if not a.only or i in a.only]
    out = [describe_host(), ""]
    for n, (what, args) in enumerate(chosen, 1):
        cmd = [a.mslink, "bench", *shlex.split(args)]
        print(f"[{n}/{len(chosen)}] mslink bench {args}", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True)
        took = time.monotonic() - t0
        if r.returncode != 0:
            print(r.stdout + r.stderr, file=sys.stderr)
            print(f"bench_figures.py: mslink bench {args} failed", file=sys.stderr)
            return 1
        out += [
            f"**{what[0].upper()}{what[1:]}** ({took:.0f} s):",
            "",
            "```sh",
            f"mslink bench {args}",
            "```",
            "",
            "```text",
            r.stdout.rstrip(),
            "```",
            "",
        ]
    write_block(a.doc, *BLOCK, "\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
