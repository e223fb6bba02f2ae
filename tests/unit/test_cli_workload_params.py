"""Bad workload parameters, for every registered workload: an unknown name and a value of the
wrong type are one ConfigError from the library (``make_workload``) and a usage error (exit 2)
from ``otelbench run``, ``otelbench test`` and ``otelbench probe``, each naming every parameter
the workload accepts with its type; never an "internal error"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from otelbench.cli import app
from otelbench.errors import ConfigError
from otelbench.loadgen.tokenizers import load_tokenizer
from otelbench.loadgen.workloads import (
    WORKLOADS,
    WorkloadParameter,
    check_workload_params,
    make_workload,
    workload_parameters,
)
from tests.fixtures.cli import otelbench

NAMES = sorted(WORKLOADS)
NOT_ANY_TYPE = {"a": 1}
"""A value (a JSON object) that no workload parameter takes."""


def accepted(name: str) -> str:
    return ", ".join(f"{p.name} ({p.type})" for p in workload_parameters(name))


def required(name: str, tmp_path: Path) -> dict[str, Any]:
    """Valid values of the workload's required parameters (files written in ``tmp_path``)."""
    values: dict[str, Any] = {}
    for p in workload_parameters(name):
        if p.name == "path" and name == "file":
            path = tmp_path / "w.json"
            fixed = {"distribution": "fixed", "value": 8}
            path.write_text(json.dumps({"input": fixed, "output": fixed}))
            values["path"] = str(path)
        elif p.name == "path":
            path = tmp_path / "sharegpt.json"
            turns = [{"from": "human", "value": "hello " * 8}, {"from": "gpt", "value": "hi " * 8}]
            path.write_text(json.dumps([{"conversations": turns}]))
            values["path"] = str(path)
        elif p.name == "tokenizer":
            values["tokenizer"] = "cl100k_base"
        else:
            assert not p.required, f"{name}: no valid value known for {p}"
    return values


def test_the_registry_declares_every_workload_and_type() -> None:
    assert NAMES == [
        "code-completion", "conversation", "file", "long-context", "mixed-classes", "sharegpt",
        "synthetic-skewed", "synthetic-uniform",
    ]  # fmt: skip
    assert accepted("synthetic-uniform") == (
        "seed (int), vocab_size (int), input_min (int), input_max (int), output_min (int), "
        "output_max (int)"
    )
    assert [str(p) for p in workload_parameters("long-context")][2:6] == [
        "target_lengths (tuple[int, ...])",
        "question_tokens (int)",
        "output_tokens (int)",
        "max_context_len (int | None)",
    ]
    assert [p for p in workload_parameters("sharegpt") if p.required] == [
        WorkloadParameter("path", "str", True),
        WorkloadParameter("tokenizer", "Tokenizer | str", True),
    ]
    assert workload_parameters("file") == (
        WorkloadParameter("path", "str", True),
        WorkloadParameter("seed", "int | None", False),
        WorkloadParameter("vocab_size", "int | None", False),
    )


@pytest.mark.parametrize("name", NAMES)
def test_the_library_refuses_an_unknown_parameter(name: str, tmp_path: Path) -> None:
    params = {**required(name, tmp_path), "max_context_lenn": 2048}
    with pytest.raises(ConfigError) as info:
        make_workload(name, **params)
    assert str(info.value) == (
        f"workload {name!r} has no parameter 'max_context_lenn'; it accepts: {accepted(name)}"
    )
    make_workload(name, **required(name, tmp_path))  # and the valid values build it


@pytest.mark.parametrize("name", NAMES)
def test_the_library_refuses_every_mistyped_parameter(name: str, tmp_path: Path) -> None:
    for p in workload_parameters(name):
        params = {**required(name, tmp_path), p.name: NOT_ANY_TYPE}
        with pytest.raises(ConfigError) as info:
            make_workload(name, **params)
        assert str(info.value) == (
            f"workload {name!r}: {p.name} must be {p.type}, got {NOT_ANY_TYPE!r}; "
            f"it accepts: {accepted(name)}"
        )
    if any(p.type == "int" for p in workload_parameters(name)):
        first_int = next(p.name for p in workload_parameters(name) if p.type == "int")
        for bad in ("abc", 1.5, True):  # a float or a bool is not an int
            with pytest.raises(ConfigError, match=f"{first_int} must be int, got"):
                make_workload(name, **{**required(name, tmp_path), first_int: bad})


def test_values_are_converted_as_the_factory_declares_them() -> None:
    checked = check_workload_params(
        "long-context", {"target_lengths": [1000, 2000], "temperature": 1, "max_context_len": None}
    )
    assert checked == {"target_lengths": (1000, 2000), "temperature": 1.0, "max_context_len": None}
    assert isinstance(checked["temperature"], float)
    tokenizer = load_tokenizer("cl100k_base")
    assert check_workload_params("sharegpt", {"tokenizer": tokenizer}, complete=False) == {
        "tokenizer": tokenizer
    }


def test_a_missing_required_parameter_names_it() -> None:
    with pytest.raises(ConfigError) as info:
        make_workload("sharegpt", seed=1)
    assert str(info.value) == (
        "workload 'sharegpt' needs path (str), tokenizer (Tokenizer | str); "
        f"it accepts: {accepted('sharegpt')}"
    )


def run_args(name: str, tmp_path: Path) -> list[str]:
    """``otelbench run`` against a closed port with the workload's required parameters."""
    args = ["run", "--target", "http://127.0.0.1:9", "--model", "m", "--rate", "1"]
    args += ["--requests", "2", "--out", str(tmp_path / "out"), "--workload", name]
    for key, value in required(name, tmp_path).items():
        args += ["--workload-param", f"{key}={value}"]
    return args


def assert_usage_error(args: list[str], message: str) -> None:
    """``args`` end in the usage error (exit 2) ``otelbench``'s entry point shows, before any
    output directory is made."""
    result = CliRunner().invoke(app, args, standalone_mode=False)
    assert isinstance(result.exception, typer.BadParameter), result.exception
    assert result.exception.exit_code == 2
    assert result.exception.format_message().startswith(
        "Invalid value for '--workload-param': " + message
    )
    assert not (Path(args[args.index("--out") + 1]).exists() if "--out" in args else False)


@pytest.mark.parametrize("name", NAMES)
def test_run_refuses_an_unknown_parameter_as_a_usage_error(name: str, tmp_path: Path) -> None:
    args = [*run_args(name, tmp_path), "--workload-param", "max_context_lenn=2048"]
    assert_usage_error(
        args, f"workload {name!r} has no parameter 'max_context_lenn'; it accepts: {accepted(name)}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_run_refuses_every_mistyped_parameter_as_a_usage_error(name: str, tmp_path: Path) -> None:
    for p in workload_parameters(name):
        args = [*run_args(name, tmp_path), "--workload-param", f'{p.name}={{"a": 1}}']
        assert_usage_error(args, f"workload {name!r}: {p.name} must be {p.type}, got {{'a': 1}}")


def test_test_and_probe_refuse_a_bad_parameter_as_a_usage_error(tmp_path: Path) -> None:
    message = "workload 'synthetic-uniform' has no parameter 'max_context_len'; it accepts: "
    common = ["--target", "http://127.0.0.1:9", "--model", "m"]
    bad = ["--workload-param", "max_context_len=abc"]
    assert_usage_error(["test", "ttft", *common, "--out", str(tmp_path / "t"), *bad], message)
    probe = ["probe", *common, "--otlp-endpoint", "http://127.0.0.1:9", *bad]
    assert_usage_error(probe, message + accepted("synthetic-uniform"))


def test_the_command_line_exits_2_with_one_message(tmp_path: Path) -> None:
    """The case as a user types it, in a process of its own."""
    proc = otelbench(
        "run", "--target", "http://127.0.0.1:9", "--model", "m", "--requests", "3", "--rate", "1",
        "--workload-param", "max_context_len=abc", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert (
        "Invalid value for '--workload-param': workload 'synthetic-uniform' has no parameter "
        "'max_context_len'; it accepts: seed (int), vocab_size (int)"
    ) in proc.stderr
    assert "internal error" not in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
