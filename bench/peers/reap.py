"""Run one tool and account for all its processes: ``python reap.py OUT.json -- CMD ARGS...``.

The harness makes itself a child sub-reaper (``PR_SET_CHILD_SUBREAPER``), so processes the tool
leaves behind are re-parented to it and reaped here; ``RUSAGE_CHILDREN`` then holds the CPU of
every process the tool started, not just the first. It writes ``spawn_mono_ns`` (CLOCK_MONOTONIC
right before the tool is started: with the server's log, the tool's start-up time),
``end_mono_ns``, ``cpu_s`` (user + system of all the tool's processes), ``maxrss_kb`` and ``rc``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def main() -> None:
    out, sep, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    if sep != "--" or not cmd:
        sys.exit("usage: reap.py OUT.json -- CMD [ARGS...]")
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    t0 = time.monotonic_ns()
    rc = subprocess.call(cmd)
    while True:  # reap whatever the tool left behind
        try:
            os.wait()
        except ChildProcessError:
            break
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = {
        "spawn_mono_ns": t0,
        "end_mono_ns": time.monotonic_ns(),
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "maxrss_kb": ru.ru_maxrss,
        "rc": rc,
    }
    Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
