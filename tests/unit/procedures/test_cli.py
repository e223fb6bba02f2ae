"""The ``otelbench test`` commands: options reach the spec; bad input is one line, exit 1/2."""

from __future__ import annotations

import pytest

from otelbench.cli import main

COMMANDS = {
    "ttft": ["--rate", "2"],
    "throughput": ["--slo-ttft-p99-ms", "500"],
    "throughput-latency": ["--capacity-rps", "3"],
    "itl": ["--saturation-rps", "3"],
    "capacity": ["--initial-concurrency", "2"],
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["test", *argv])
    code = exit_info.value.code
    return int(code) if isinstance(code, int) else 0, capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_builds_its_spec_from_the_common_options(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    argv = [command, *COMMANDS[command], "--target", "http://127.0.0.1:9", "--model", "m",
            "--profile", "nope", "--out", f"{tmp_path}/out"]  # fmt: skip
    code, err = run(argv, capsys)
    assert code == 1
    assert err.strip().splitlines() == [
        "otelbench: error: unknown profile 'nope'; known: draft, quick"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ttft", "--rate", "1", "--concurrency", "2"], "5.1 needs one of --rate"),
        (["itl"], "5.4 needs one of --saturation-rps or --sweep"),
        (["capacity", "--initial-concurrency", "9", "--max-concurrency", "4"], "need 1 <="),
        (["throughput", "--min-rps", "5", "--max-rps", "1"], "--min-rps must not exceed"),
        (["throughput-latency", "--capacity-rps", "-1"], "--capacity-rps must be > 0"),
        (["ttft", "--rate", "1", "--extra-body", "[1]"], "--extra-body must be a JSON object"),
    ],
)
def test_bad_parameters_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    code, err = run(
        [*argv, "--target", "http://127.0.0.1:9", "--model", "m", "--out", f"{tmp_path}/o"],
        capsys,
    )
    assert code == 1
    [line] = err.strip().splitlines()
    assert line.startswith("otelbench: error: ")
    assert message in line


def test_target_or_sut_is_required(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    code, err = run(["ttft", "--rate", "1", "--model", "m", "--out", f"{tmp_path}/o"], capsys)
    assert code == 2
    assert "give --target URL or --sut vllm-cpu" in err
