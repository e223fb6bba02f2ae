"""``VllmCpuServer(hooks=...)`` gives the vLLM process the hooks' switch and OTLP endpoint."""

from __future__ import annotations

import pytest

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.sut import VllmCpuServer

ENDPOINT = "http://127.0.0.1:4318/v1/traces"


def test_hooks_true_enables_them_and_points_them_at_the_traces_endpoint() -> None:
    env = VllmCpuServer(otlp_traces_endpoint=ENDPOINT, hooks=True).environment()
    assert env[semconv.ENV_VLLM_HOOKS] == "1"
    assert env[semconv.ENV_OTLP_TRACES_ENDPOINT] == ENDPOINT
    assert env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
    assert env["OTEL_SERVICE_NAME"] == semconv.SERVICE_VLLM


def test_hooks_false_switches_off_an_inherited_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(semconv.ENV_VLLM_HOOKS, "1")
    assert VllmCpuServer(hooks=False).environment()[semconv.ENV_VLLM_HOOKS] == "0"
    assert VllmCpuServer().environment()[semconv.ENV_VLLM_HOOKS] == "1"  # None: as inherited


def test_env_overrides_come_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(semconv.ENV_VLLM_HOOKS, raising=False)
    server = VllmCpuServer(hooks=True, env={semconv.ENV_VLLM_HOOKS: None})
    assert semconv.ENV_VLLM_HOOKS not in server.environment()
    assert semconv.ENV_VLLM_HOOKS not in VllmCpuServer().environment()


def test_the_hooks_export_otlp_http_only() -> None:
    with pytest.raises(ConfigError, match="OTLP/HTTP only"):
        VllmCpuServer(otlp_traces_endpoint=ENDPOINT, otlp_protocol="grpc", hooks=True)
