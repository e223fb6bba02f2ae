"""`otelbench compare` end to end: the CLI in a child process on report.json files on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelbench.model.report import Report
from tests.fixtures.cli import otelbench
from tests.unit.test_compare import make_report

pytestmark = pytest.mark.integration


def report(run_id: str, *, software: str, ttft: float, tokens_per_s: float) -> Report:
    """A whole report.json (``tests/unit/test_compare.make_report``: it conforms to the types,
    as ``load_report`` requires) of one run against ``gpu-node`` with 4 GPUs."""
    body = make_report(
        run_id, software=software, ttft=ttft, tokens_per_s=tokens_per_s, hardware="4x L4 GPU"
    )
    body["run"].update(target="http://gpu-node:8000", model="llama")
    return body


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    """Three runs of engine 1 and three of engine 2, one directory each."""
    dirs = []
    for i, (software, ttft, tps) in enumerate(
        [
            ("engine 1", 100.0, 1000.0),
            ("engine 1", 104.0, 1010.0),
            ("engine 1", 98.0, 990.0),
            ("engine 2", 80.0, 1200.0),
            ("engine 2", 83.0, 1190.0),
            ("engine 2", 79.0, 1215.0),
        ]
    ):
        d = tmp_path / f"run{i}"
        d.mkdir()
        body = report(f"r{i}", software=software, ttft=ttft, tokens_per_s=tps)
        (d / "report.json").write_text(json.dumps(body))
        dirs.append(d)
    return dirs


def test_compare_groups_by_sut_and_writes_both_files(runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    proc = otelbench("compare", *map(str, runs), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Comparison of 2 system(s) (draft section 6)\n")
    assert proc.stdout == (out / "compare.md").read_text()
    assert proc.stderr == (
        f"otelbench: comparison written to {out}/compare.json and {out}/compare.md\n"
    )
    result = json.loads((out / "compare.json").read_text())
    assert [s["name"] for s in result["systems"]] == [
        "engine 1 | llama | http://gpu-node:8000",
        "engine 2 | llama | http://gpu-node:8000",
    ]
    assert [[r["id"] for r in s["runs"]] for s in result["systems"]] == [
        ["r0", "r1", "r2"],
        ["r3", "r4", "r5"],
    ]
    ttft = next(m for m in result["metrics"] if m["key"] == "ttft_p50_ms")
    b = ttft["comparisons"]["engine 2 | llama | http://gpu-node:8000"]
    assert b["verdict"] == "better"
    assert b["welch"]["p"] < 0.01
    assert b["permutation"] == {"p": 0.1, "exact": True, "permutations": 20, "min_p": 0.1}
    per_gpu = next(m for m in result["metrics"] if m["key"] == "output_tokens_per_gpu_s")
    assert per_gpu["systems"]["engine 1 | llama | http://gpu-node:8000"]["mean"] == 250.0
    assert result["deviations"] == []


def test_explicit_systems_and_gpus(runs: list[Path], tmp_path: Path) -> None:
    args = [f"old={p}" for p in runs[:3]] + [f"new={p / 'report.json'}" for p in runs[3:5]]
    proc = otelbench("compare", *args, "--gpus", "new=8", "--gpus", "old=4", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert "| metric | old | new | new vs old |" in proc.stdout
    assert "not tested: fewer than 3 runs" in proc.stdout
    assert "- system B (new) has 2 run(s); draft 6.3 asks for at least 3" in proc.stdout
    assert proc.stderr == ""


def test_group_option(runs: list[Path]) -> None:
    proc = otelbench("compare", *map(str, runs), "--group", "run.model")
    assert proc.returncode == 0, proc.stderr
    assert "# Comparison of 1 system(s)" in proc.stdout
    assert "- only one system: nothing to compare it with" in proc.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no report.json in "),
        ("{oops", "is not valid JSON"),
        ('{"schema_version": 2, "run": {}}', "has report schema_version 2, this otelbench reads"),
        (
            '{"schema_version": 1, "run": {"id": "x"}, "metrics": {"client": {}}}',
            "does not have the shape of report schema_version 1: $: missing key compliance",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_1(
    runs: list[Path], tmp_path: Path, content: str | None, message: str
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    if content is not None:
        (bad / "report.json").write_text(content)
    proc = otelbench("compare", *map(str, runs), str(bad))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("otelbench: error: ")
    assert message in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_unknown_gpus_system_is_one_line(runs: list[Path]) -> None:
    proc = otelbench("compare", *map(str, runs), "--gpus", "Z=1")
    assert proc.returncode == 1
    assert proc.stderr.startswith("otelbench: error: --gpus names unknown system(s) Z; known: A (")
    assert proc.stderr.count("\n") == 1
