"""The SUT description (``--sut-config FILE`` and the ``--sut-*`` flags): validated eagerly,
every bad field named in one line, flags over the file's fields; it becomes ``run.sut``, which
the configuration summary and the compliance checks read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from otelbench.cli import main
from otelbench.errors import ConfigError
from otelbench.model.conform import conforms
from otelbench.model.sut import SutDeclaration
from otelbench.report.compliance import configuration_summary
from otelbench.sut.description import FIELDS, sut_description
from tests.unit.report.test_compliance import full_report

COMPLETE = """\
boundary: Application Gateway
hardware: 1x NVIDIA H100 80GB
software: vLLM 0.32.0 behind otelbench gateway
model_version: meta-llama/Llama-3.1-8B-Instruct@0e9e39f
quantization: none
prefix_caching: true
clock_sync: {method: chrony (NTP), accuracy_ms: 0.4}
network_rtt_ms: 0.21
guardrails:
  input_filter: Llama Guard 3
  output_filter: none
  default_configuration: true
  comparative_run: out/5.10/procedure.json
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sut.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_complete_description(tmp_path: Path) -> None:
    sut = sut_description(write(tmp_path, COMPLETE), {})
    assert sut == {
        "boundary": "Application Gateway",
        "hardware": "1x NVIDIA H100 80GB",
        "software": "vLLM 0.32.0 behind otelbench gateway",
        "model_version": "meta-llama/Llama-3.1-8B-Instruct@0e9e39f",
        "quantization": "none",
        "prefix_caching": "enabled",
        "clock_sync": {"method": "chrony (NTP)", "accuracy_ms": 0.4},
        "network_rtt_ms": 0.21,
        "guardrails": {
            "input_filter": "Llama Guard 3",
            "output_filter": "none",
            "default_configuration": True,
            "comparative_run": "out/5.10/procedure.json",
        },
    }
    assert list(sut) == list(FIELDS)
    assert conforms(sut, SutDeclaration) == []
    report = full_report()
    report["run"]["sut"] = {**sut, "server_timing": report["run"]["sut"]["server_timing"]}
    report["run"]["target"] = "http://10.0.0.2:8000"
    summary = configuration_summary(report)
    assert summary["prefix_caching"] == "enabled"
    assert summary["clock_synchronization"] == "method: chrony (NTP); accuracy_ms: 0.4"


def test_flags_replace_the_files_fields(tmp_path: Path) -> None:
    flags: dict[str, Any] = {
        "quantization": "fp8",
        "clock_sync": {"accuracy_ms": 3},
        "guardrails": {"output_filter": "Llama Guard 3"},
        "boundary": "gateway",
    }
    sut = sut_description(write(tmp_path, COMPLETE), flags)
    assert sut["quantization"] == "fp8"
    assert sut["clock_sync"] == {"method": "chrony (NTP)", "accuracy_ms": 3.0}
    assert sut["guardrails"]["input_filter"] == "Llama Guard 3"
    assert sut["guardrails"]["output_filter"] == "Llama Guard 3"
    assert sut["boundary"] == "Application Gateway"
    assert conforms(sut, SutDeclaration) == []
    assert sut_description(None, {"boundary": "ENGINE", "prefix_caching": "Disabled"}) == {
        "boundary": "Model Engine",
        "prefix_caching": "disabled",
    }


def test_every_bad_field_is_named_in_one_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "boundary: Edge Proxy\n"
        "quantisation: fp8\n"
        "prefix_caching: sometimes\n"
        "clock_sync: {method: chrony, accuracy_ms: -1}\n"
        "network_rtt_ms: fast\n"
        "guardrails: {input_filter: Llama Guard 3, default_configuration: yes please}\n",
    )
    with pytest.raises(ConfigError) as info:
        sut_description(path, {})
    message = str(info.value)
    assert "\n" not in message
    assert message == (
        f"--sut-config {path}: unknown field 'quantisation'; "
        "boundary: 'Edge Proxy' is not one of Model Engine, Application Gateway, Compound "
        "System; prefix_caching: 'sometimes': expected enabled or disabled; clock_sync: "
        "accuracy_ms: -1: expected a finite number ≥ 0; network_rtt_ms: 'fast' is not a number "
        "of milliseconds; guardrails: default_configuration: 'yes please': expected true or false"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "expected a mapping of fields, got ['a', 'b']"),
        ("boundary: [unclosed\n", "not valid YAML"),
        ("clock_sync: chrony\n", "clock_sync: expected a mapping with method, accuracy_ms"),
        ("guardrails: {extra: 1}\n", "guardrails: unknown guardrails field(s) extra"),
        ("hardware: ''\n", "hardware: expected non-empty text"),
    ],
)
def test_bad_files(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        sut_description(write(tmp_path, text), {})
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read it"):
        sut_description(tmp_path / "nope.yaml", {})
    assert sut_description(write(tmp_path, ""), {}) == {}


@pytest.mark.parametrize("command", [["run", "--rate", "1"], ["test", "ttft", "--rate", "1"]])
def test_the_command_line_reports_a_bad_declaration_in_one_line(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before anything starts: no server listens on port 9."""
    path = write(tmp_path, "prefix_caching: maybe\n")
    argv = [*command, "--target", "http://127.0.0.1:9", "--model", "m",
            "--out", str(tmp_path / "out"), "--sut-config", str(path),
            "--sut-clock-accuracy-ms", "-2"]  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"otelbench: error: --sut-config {path}: prefix_caching: 'maybe': expected enabled or "
        "disabled; clock_sync: accuracy_ms: -2.0: expected a finite number ≥ 0"
    )
    assert not (tmp_path / "out").exists()
