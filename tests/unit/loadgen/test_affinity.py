"""``--loadgen-cpus``: the list's parsing and checks (each bad input, its one line), the pinning
of every thread of this process, and what the report gets (otelbench.loadgen.affinity).

Real threads and a real child process; the platform without CPU affinity is this one with
``os.sched_setaffinity`` removed for the test (pytest's monkeypatch), the only way to have it here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from otelbench.errors import ConfigError
from otelbench.loadgen.affinity import (
    CpuPlan,
    away_from,
    cpu_plan,
    parse_cpus,
    pin_process,
    pin_thread,
)
from otelbench.loadgen.health import WorkerHealth
from otelbench.loadgen.workers import default_workers
from otelbench.loadgen.workloads import make_workload
from tests.fixtures.cli import otelbench

ALLOWED = sorted(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0", (0,)),
        ("0-3", (0, 1, 2, 3)),
        ("0,2,4-7", (0, 2, 4, 5, 6, 7)),
        (" 3, 1,1-2 ", (1, 2, 3)),
    ],
)
def test_lists_parse_as_taskset_reads_them(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpus(text) == cpus


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--loadgen-cpus is empty: give CPUs like 0, 0-3 or 0,2,4-7"),
        (" ", "--loadgen-cpus is empty: give CPUs like 0, 0-3 or 0,2,4-7"),
        (
            "a",
            "--loadgen-cpus 'a': 'a' is not a CPU number or range (expected a list like 0, 0-3 "
            "or 0,2,4-7)",
        ),
        (
            "0,,1",
            "--loadgen-cpus '0,,1': '' is not a CPU number or range (expected a list like 0, 0-3 "
            "or 0,2,4-7)",
        ),
        (
            "-1",
            "--loadgen-cpus '-1': '-1' is not a CPU number or range (expected a list like 0, 0-3 "
            "or 0,2,4-7)",
        ),
        (
            "0-2-4",
            "--loadgen-cpus '0-2-4': '0-2-4' is not a CPU number or range (expected a list like "
            "0, 0-3 or 0,2,4-7)",
        ),
        ("3-1", "--loadgen-cpus '3-1': the range 3-1 runs backwards"),
    ],
)
def test_a_malformed_list_is_one_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_cpus(text)
    assert str(err.value) == message


def test_the_plan_keeps_the_other_allowed_cpus_for_the_rest() -> None:
    plan = CpuPlan.of([ALLOWED[0]])
    assert plan == CpuPlan((ALLOWED[0],), tuple(ALLOWED[1:]))
    assert plan.cpus_of(0) == plan.cpus_of(1) == (ALLOWED[0],)
    every = CpuPlan.of(ALLOWED)
    assert every.rest == ()
    assert [every.cpus_of(k)[0] for k in range(len(ALLOWED) + 1)] == [*ALLOWED, ALLOWED[0]]
    assert "leaves no other CPU this process may use" in str(every.note())
    assert (plan.note() is None) == (len(ALLOWED) > 1)


def test_a_cpu_this_process_may_not_use_is_one_line() -> None:
    outside = max(ALLOWED) + 1000
    with pytest.raises(ConfigError) as err:
        cpu_plan(f"{ALLOWED[0]},{outside}")
    allowed = parse_cpus(str(err.value).rsplit("(allowed: ", 1)[1].rstrip(")"))
    assert allowed == tuple(ALLOWED)
    assert str(err.value).startswith(f"--loadgen-cpus: CPU {outside} is not one this process may")


def test_an_empty_plan_is_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        CpuPlan.of([])
    assert str(err.value) == "--loadgen-cpus is empty: give CPUs like 0, 0-3 or 0,2,4-7"


def test_a_platform_without_cpu_affinity_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_setaffinity")
    with pytest.raises(ConfigError) as err:
        cpu_plan("0")
    assert str(err.value) == (
        "--loadgen-cpus needs CPU affinity (os.sched_setaffinity), which this platform lacks: "
        "run without it"
    )


def test_the_cli_prints_the_one_line_and_exits_1(tmp_path: object) -> None:
    proc = otelbench(
        "run", "--target", "http://127.0.0.1:9", "--model", "m", "--requests", "1",
        "--rate", "1", "--loadgen-cpus", "0-x", "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "otelbench: error: --loadgen-cpus '0-x': '0-x' is not a CPU number or range (expected a "
        "list like 0, 0-3 or 0,2,4-7)"
    )


@pytest.fixture
def idle_thread() -> Iterator[threading.Thread]:
    """A thread of this process that exists before the pinning (it waits until the test ends)."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="idle")
    thread.start()
    yield thread
    stop.set()
    thread.join()


def test_pinning_moves_every_thread_and_puts_them_back(idle_thread: threading.Thread) -> None:
    before = os.sched_getaffinity(0)
    tid = idle_thread.native_id
    assert tid is not None
    cpu = ALLOWED[-1]
    born: list[set[int]] = []
    with pin_process([cpu]):
        assert os.sched_getaffinity(0) == {cpu}
        assert os.sched_getaffinity(tid) == {cpu}
        child = threading.Thread(target=lambda: born.append(os.sched_getaffinity(0)))
        child.start()
        child.join()
    assert born == [{cpu}]  # a thread made inside inherits its creator's mask
    assert os.sched_getaffinity(0) == before
    assert os.sched_getaffinity(tid) == before


def test_pinning_a_thread_leaves_the_others(idle_thread: threading.Thread) -> None:
    tid = idle_thread.native_id
    assert tid is not None
    before = os.sched_getaffinity(0)
    with pin_thread([ALLOWED[-1]]):
        assert os.sched_getaffinity(0) == {ALLOWED[-1]}
        assert os.sched_getaffinity(tid) == before
    assert os.sched_getaffinity(0) == before


def test_a_thread_on_cpus_of_its_own_gets_them_back(idle_thread: threading.Thread) -> None:
    tid = idle_thread.native_id
    assert tid is not None
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(tid, {ALLOWED[0]})
    with pin_process([ALLOWED[-1]]):
        assert os.sched_getaffinity(tid) == {ALLOWED[-1]}
    assert os.sched_getaffinity(tid) == {ALLOWED[0]}
    assert os.sched_getaffinity(0) == before


def test_away_from_moves_this_process_to_the_rest_and_a_child_inherits_it() -> None:
    before = os.sched_getaffinity(0)
    plan = CpuPlan.of([ALLOWED[0]])
    with away_from(plan):
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
            capture_output=True,
            text=True,
            check=True,
        )
        expected = list(plan.rest) if plan.rest else ALLOWED  # nothing left: unpinned
        assert child.stdout.strip() == str(expected)
        with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as proc:
            try:
                described = plan.describe({"collector": proc.pid, "sut": None})
            finally:
                proc.kill()
    assert os.sched_getaffinity(0) == before
    assert described == {
        "loadgen": [ALLOWED[0]],
        "others": list(plan.rest) or None,
        "processes": {"collector": expected},
    }


def test_default_workers_count_the_given_cpus_not_the_cores() -> None:
    items = make_workload("synthetic-uniform", seed=1, vocab_size=1024).requests(4000)
    offsets = [i / 1000 for i in range(len(items))]  # 1,000 req/s: many workers' worth
    count, why = default_workers(None, items, offsets, loadgen_cpus=3)
    assert count == 3
    assert why.endswith("at most 3 (one per --loadgen-cpus CPU)")
    assert default_workers(4, items, None, loadgen_cpus=3)[0] == 1


def test_a_worker_reports_its_cpus_only_when_pinned() -> None:
    plain = WorkerHealth(0, 1, "m")
    assert "cpus" not in plain.summary()
    pinned = WorkerHealth(0, 1, "m", cpus=[0])
    assert pinned.summary()["cpus"] == [0]
    assert list(pinned.summary())[:3] == ["worker", "pid", "cpus"]
