"""The test run's memory watchdog (tests/memory_watchdog.py), in real pytest runs of small test
files: a test that grows its process, or a process it started, past the bound fails with its
name, the RSS and the stack where it was allocating; a test under the bound passes.

Each case runs pytest in a subprocess with the plugin (``-p tests.memory_watchdog``) and a low
bound (:data:`BOUND`, against the ~60 MiB of a bare pytest process); the growing tests allocate
8 MiB every 50 ms, slowly enough for four samples a second to see the bound passed long before
the hard stop at 1.5 times it, and stop at :data:`CAP` in case the watchdog does not. Measured
cost of one sample on this machine (load 8): 32 µs for the process alone, 0.19 ms with five
children; four samples a second.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.memory_watchdog import ENV_LIMIT, parse_limit

ROOT = Path(__file__).resolve().parents[2]
BOUND = "200MiB"
CAP_STEPS = 100
"""8 MiB steps: 800 MiB at most, past the hard stop (300 MiB) if nothing else stops it."""

GROW = f"""\
import time


def grow(chunks):
    for _ in range({CAP_STEPS}):
        chunks.append(bytearray(8 << 20))  # the allocation the watchdog catches
        time.sleep(0.05)


if __name__ == "__main__":
    grow([])
"""

TESTS = """\
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from grow import grow


def test_under_the_bound():
    kept = bytearray(16 << 20)
    time.sleep(1.0)  # four samples
    assert len(kept) == 16 << 20


def test_swallows_the_exception():
    chunks = []
    try:
        grow(chunks)
    except BaseException:  # the code under test catching everything
        pass
    chunks.clear()


def test_grows():
    grow([])


def test_grandchild_grows():
    grower = str(Path(__file__).with_name("grow.py"))
    code = f"import subprocess, sys; subprocess.run([sys.executable, {grower!r}])"
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        child.wait(timeout=60)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
"""


def run_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_mem.py").write_text(TESTS)
    (tmp_path / "grow.py").write_text(GROW)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    )
    env = {**os.environ, ENV_LIMIT: BOUND, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.memory_watchdog", "-p", "no:cacheprovider",
         "-rA", "test_mem.py", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_tests_past_the_bound_fail_with_their_name_and_stack(
    tmp_path: Path, xdist: list[str]
) -> None:
    proc = run_pytest(tmp_path, *xdist)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "PASSED test_mem.py::test_under_the_bound" in out
    assert "FAILED test_mem.py::test_swallows_the_exception" in out
    assert "FAILED test_mem.py::test_grows" in out
    assert "FAILED test_mem.py::test_grandchild_grows" in out
    assert "3 failed, 1 passed" in out

    # the watchdog's report of test_grows: after pytest's traceback of the exception it raised
    assert "MemoryBoundExceeded: memory watchdog: test_mem.py::test_grows (call)" in out
    report = section(out, "memory watchdog: test_mem.py::test_grows (call): RSS of this test")
    assert "passed the bound 200 MiB per process (OTELBENCH_TEST_RSS_LIMIT)" in report
    # the main thread's stack at the breach: the test, then grow(), where it was allocating
    stack = report.split("the main thread's stack at that moment (most recent call last):")[1]
    frames = frames_of(stack)
    assert frames[0].endswith(", in test_grows"), stack
    assert frames[-1].endswith(", in grow"), stack
    assert "pluggy" not in stack

    swallowed = section(out, "memory watchdog: test_mem.py::test_swallows_the_exception (call)")
    assert frames_of(swallowed)[-1].endswith(", in grow"), swallowed

    grandchild = section(out, "memory watchdog: test_mem.py::test_grandchild_grows (call): RSS")
    first = grandchild.split("\n", 1)[0]
    assert "RSS of its descendant '" in first, first
    assert "grow.py'" in first  # the grandchild's command line
    watched = grandchild.split("processes watched: ")[1].split("\n", 1)[0]
    assert watched.count("pid ") == 3, watched  # this process, the child, the grandchild


def section(out: str, head: str) -> str:
    """The watchdog's report that starts with ``head`` (its last occurrence: the exception's
    message comes first), up to the next test's section or the next line of the short summary
    (where the environment says CI, pytest writes each failure's whole message there)."""
    assert head in out, out
    text = head + out.rsplit(head, 1)[1]
    return re.split(r"\n(?:___|===|FAILED |PASSED |ERROR )", text, maxsplit=1)[0]


def frames_of(report: str) -> list[str]:
    return [line.strip() for line in report.splitlines() if line.strip().startswith("File ")]


def test_off_and_sizes() -> None:
    assert parse_limit("off") is None
    assert parse_limit(None) == 4 << 30
    assert parse_limit("512MiB") == 512 << 20
    assert parse_limit("1.5GiB") == 3 << 29
    assert parse_limit("2g") == 2 << 30
    assert parse_limit("4096") == 4096
    with pytest.raises(pytest.UsageError, match="OTELBENCH_TEST_RSS_LIMIT"):
        parse_limit("lots")
