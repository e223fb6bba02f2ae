"""The vLLM flags the deployment (``deploy/``) relies on, read from the installed vLLM's sources.

``deploy/compose/compose.yaml`` and ``deploy/k8s/vllm.yaml`` start vLLM with
``--otlp-traces-endpoint`` (without vLLM's own tracer no release passes the client's trace context
to the engine hooks) and ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf`` (vLLM's tracer
defaults to gRPC). Checked in the sources of the release the vLLM tier runs (not imported).
"""

from __future__ import annotations

import pytest

from otelbench.sut import VllmEnv

pytestmark = pytest.mark.vllm


def test_vllm_has_the_tracer_flag_and_protocol_the_deployment_sets(vllm_env: VllmEnv) -> None:
    [vllm] = sorted(vllm_env.venv.glob("lib/python3*/site-packages/vllm"))
    assert '"--otlp-traces-endpoint"' in (vllm / "engine/arg_utils.py").read_text()
    tracing = "\n".join(p.read_text() for p in sorted(vllm.glob("tracing*/**/*.py")))
    tracing += "\n".join(p.read_text() for p in sorted(vllm.glob("tracing.py")))
    assert "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" in tracing
    assert '"http/protobuf"' in tracing
