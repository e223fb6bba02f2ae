"""``otelbench gateway`` in front of the scripted SSE server (tests/fixtures/scripted_server.py),
each in its own process, spans exported by OTLP/HTTP to the embedded receiver.

Pass-through timing is checked for *shape* here (every chunk forwarded on its own, as the server
sent it, and the server-side gaps kept); the added latency is measured in
bench/gateway_overhead.py, not asserted in a timed test.
"""

from __future__ import annotations

import itertools
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from otelbench import semconv
from otelbench.client import AsyncLLMClient, CompletionRequest, CompletionResult
from otelbench.collector import Receiver
from otelbench.errors import ConfigError
from otelbench.guardrails.gateway import GatewayServer
from otelbench.telemetry import make_tracer_provider, shutdown
from tests.fixtures.scripted_server import ScriptedServer, chunk_errors

pytestmark = pytest.mark.integration

API_KEY = "sk-gateway-test"
CONFIG = """
output_window: 16
input:
  - type: blocklist
    name: banned
    keywords: [forbidden]
output:
  - type: blocklist
    name: redact-w3
    action: redact
    patterns: ['w3_0']
    replacement: '[X]'
"""


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    store = tmp_path_factory.mktemp("gw") / "spans.duckdb"
    with Receiver(store, port=0) as r:
        yield r


def endpoint(receiver: Receiver) -> str:
    return f"http://127.0.0.1:{receiver.port}/v1/traces"


@pytest.fixture(scope="module")
def plain_gateway(scripted_server: ScriptedServer, receiver: Receiver) -> Iterator[GatewayServer]:
    """No filters, no key."""
    with GatewayServer(
        scripted_server.url,
        otlp_traces_endpoint=endpoint(receiver),
        env={"OTEL_BSP_SCHEDULE_DELAY": "100"},
    ) as gw:
        yield gw


@pytest.fixture(scope="module")
def guarded_gateway(
    scripted_server: ScriptedServer, receiver: Receiver, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayServer]:
    """Input blocklist, redacting output filter with a window, API key."""
    cfg = tmp_path_factory.mktemp("cfg") / "guardrails.yaml"
    cfg.write_text(CONFIG)
    with GatewayServer(
        scripted_server.url,
        config=cfg,
        api_key=API_KEY,
        otlp_traces_endpoint=endpoint(receiver),
        env={"OTEL_BSP_SCHEDULE_DELAY": "100"},
    ) as gw:
        yield gw


@pytest.fixture
def provider(receiver: Receiver) -> Iterator[TracerProvider]:
    tp = make_tracer_provider(f"http://127.0.0.1:{receiver.port}")
    yield tp
    shutdown(tp)


def spans(receiver: Receiver, trace_id: str, names: dict[str, int]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 15
    while True:
        rows = receiver.store.execute(
            f"""SELECT "SpanName", "SpanId", "ParentSpanId", "SpanKind", "SpanAttributes",
                       "ResourceAttributes", "StatusCode"
                FROM {semconv.TABLE_TRACES} WHERE "TraceId" = ?""",
            [trace_id],
        )
        found = [
            {"name": n, "id": s, "parent": p, "kind": k, "attrs": dict(a), "resource": dict(r),
             "status": st}
            for n, s, p, k, a, r, st in rows
        ]  # fmt: skip
        counts = {n: sum(f["name"] == n for f in found) for n in names}
        if all(counts[n] >= c for n, c in names.items()) or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def req(script: dict[str, Any], prompt: str = "Hi", **kw: Any) -> CompletionRequest:
    return CompletionRequest(
        api="completions", model="tiny", prompt=prompt, extra_body={"script": script}, **kw
    )


async def complete(
    url: str, request: CompletionRequest, provider: TracerProvider | None = None,
    key: str | None = None,
) -> CompletionResult:  # fmt: skip
    headers = {"Authorization": f"Bearer {key}"} if key else None
    async with AsyncLLMClient(url, tracer_provider=provider, headers=headers) as client:
        return await client.complete(request)


async def test_streaming_passes_through_chunk_by_chunk(
    plain_gateway: GatewayServer,
    scripted_server: ScriptedServer,
    receiver: Receiver,
    provider: TracerProvider,
) -> None:
    script = {"n": 6, "ttft_ms": 30.0, "itl_ms": 25.0, "tag": "gw-pass"}
    result = await complete(plain_gateway.base_url, req(script), provider)
    assert result.ok, result.error_message
    entry = scripted_server.entry(result.response_id or "")
    errs = chunk_errors(result.submit_mono_ns, result.chunk_offsets_us, entry)
    # every chunk arrived on its own, after the server wrote it and before the next was written
    assert len(result.chunk_offsets_us) == 6
    assert all(0 <= e < 25_000_000 for e in errs.errors_ns), errs.errors_ns
    offsets = result.chunk_offsets_us
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    assert all(g >= 10_000 for g in gaps), gaps
    # the upstream got the client's traceparent unchanged: its server span stays the client's child
    assert entry["traceparent"].startswith(f"00-{result.trace_id}-{result.span_id}-")
    found = spans(receiver, result.trace_id or "", {semconv.SPAN_GATEWAY_REQUEST: 1})
    (gw,) = [s for s in found if s["name"] == semconv.SPAN_GATEWAY_REQUEST]
    assert gw["parent"] == result.span_id
    assert gw["kind"] == semconv.SPAN_KIND_SERVER
    attrs = gw["attrs"]
    assert attrs[semconv.HTTP_RESPONSE_STATUS_CODE] == "200"
    assert attrs[semconv.GUARDRAIL_REFUSED] == "false"
    assert int(attrs[semconv.GATEWAY_UPSTREAM_BODY_READS]) >= 6
    assert (
        int(attrs[semconv.GATEWAY_UPSTREAM_HEADERS_OFFSET_US])
        <= int(attrs[semconv.GATEWAY_UPSTREAM_FIRST_BODY_OFFSET_US])
        <= int(attrs[semconv.GATEWAY_UPSTREAM_END_OFFSET_US])
    )
    assert gw["resource"]["service.name"] == semconv.SERVICE_GATEWAY
    assert gw["resource"][semconv.RESOURCE_GUARDRAIL_INPUT_ENABLED] == "false"


async def test_blocked_request_never_reaches_upstream(
    guarded_gateway: GatewayServer,
    scripted_server: ScriptedServer,
    receiver: Receiver,
    provider: TracerProvider,
) -> None:
    result = await complete(
        guarded_gateway.base_url,
        req({"tag": "gw-blocked"}, prompt="this is forbidden"),
        provider,
        API_KEY,
    )
    assert not result.ok
    assert result.error_type == "400"
    assert "content_filter" in (result.error_message or "")
    assert scripted_server.log(tag="gw-blocked") == []
    found = spans(
        receiver,
        result.trace_id or "",
        {semconv.SPAN_GATEWAY_REQUEST: 1, semconv.SPAN_GUARDRAIL_FILTER: 1},
    )
    (gw,) = [s for s in found if s["name"] == semconv.SPAN_GATEWAY_REQUEST]
    (flt,) = [s for s in found if s["name"] == semconv.SPAN_GUARDRAIL_FILTER]
    assert gw["parent"] == result.span_id
    assert flt["parent"] == gw["id"]
    assert gw["attrs"][semconv.GUARDRAIL_REFUSED] == "true"
    assert gw["attrs"][semconv.GUARDRAIL_REFUSED_STAGE] == "input"
    assert gw["attrs"][semconv.GUARDRAIL_REFUSED_FILTER] == "banned"
    assert semconv.GATEWAY_UPSTREAM_STATUS_CODE not in gw["attrs"]
    assert flt["attrs"][semconv.GUARDRAIL_DECISION] == "block"
    assert flt["attrs"][semconv.GUARDRAIL_RULE] == "keyword[0]"
    assert "forbidden" not in str(flt["attrs"])
    res = gw["resource"]
    assert res[semconv.RESOURCE_GUARDRAIL_INPUT_FILTERS] == '["banned"]'
    assert res[semconv.RESOURCE_GUARDRAIL_OUTPUT_FILTERS] == '["redact-w3"]'


async def test_output_filter_redacts_through_gateway(
    guarded_gateway: GatewayServer, receiver: Receiver, provider: TracerProvider
) -> None:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        r = await client.post(
            guarded_gateway.base_url + "/v1/completions",
            json={"model": "m", "prompt": "hi", "stream": True, "script": {"n": 8}},
            headers={"Authorization": f"Bearer {API_KEY}"},
        )
    assert r.status_code == 200
    text = "".join(
        json.loads(line[6:])["choices"][0]["text"]
        for line in r.text.splitlines()
        if line.startswith("data: {")
    )
    assert text == " w0_0 w1_0 w2_0 [X] w4_0 w5_0 w6_0 w7_0"
    result = await complete(guarded_gateway.base_url, req({"n": 8}), provider, API_KEY)
    assert result.ok
    found = spans(
        receiver,
        result.trace_id or "",
        {semconv.SPAN_GATEWAY_REQUEST: 1, semconv.SPAN_GUARDRAIL_FILTER: 2},
    )
    (gw,) = [s for s in found if s["name"] == semconv.SPAN_GATEWAY_REQUEST]
    out = [
        s for s in found
        if s["name"] == semconv.SPAN_GUARDRAIL_FILTER
        and s["attrs"][semconv.GUARDRAIL_STAGE] == "output"
    ]  # fmt: skip
    assert len(out) == 1
    assert out[0]["parent"] == gw["id"]
    assert out[0]["attrs"][semconv.GUARDRAIL_DECISION] == "redact"
    added = json.loads(gw["attrs"][semconv.GUARDRAIL_OUTPUT_ADDED_US])
    assert len(added) >= 8
    assert all(a >= 0 for a in added)


async def test_upstream_dying_mid_stream_gives_clean_error(
    plain_gateway: GatewayServer, receiver: Receiver, provider: TracerProvider
) -> None:
    for preset in ("cut", "cut_close"):
        result = await complete(plain_gateway.base_url, req({"name": preset}), provider)
        assert not result.ok
        assert result.error_type == "stream_error"
        assert "upstream response broke off" in (result.error_message or ""), preset
        assert len(result.chunk_offsets_us) == 3  # what came before the cut got through
        found = spans(receiver, result.trace_id or "", {semconv.SPAN_GATEWAY_REQUEST: 1})
        (gw,) = [s for s in found if s["name"] == semconv.SPAN_GATEWAY_REQUEST]
        assert gw["attrs"][semconv.ERROR_TYPE] == semconv.GATEWAY_ERROR_STREAM
        assert gw["status"] == semconv.STATUS_ERROR


async def test_upstream_errors_are_mapped(
    plain_gateway: GatewayServer, scripted_server: ScriptedServer, receiver: Receiver,
    provider: TracerProvider,
) -> None:  # fmt: skip
    # an upstream HTTP error passes through as it is
    result = await complete(plain_gateway.base_url, req({"name": "error_429"}), provider)
    assert result.error_type == "429"
    # nothing listening upstream: 502 with an OpenAI-style body
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    with GatewayServer(dead, otlp_traces_endpoint=endpoint(receiver)) as gw:
        result = await complete(gw.base_url, req({}), provider)
    assert result.error_type == "502"
    assert "upstream unreachable" in (result.error_message or "")
    found = spans(receiver, result.trace_id or "", {semconv.SPAN_GATEWAY_REQUEST: 1})
    (gw_span,) = [s for s in found if s["name"] == semconv.SPAN_GATEWAY_REQUEST]
    assert gw_span["attrs"][semconv.ERROR_TYPE] == semconv.GATEWAY_ERROR_UNREACHABLE
    assert gw_span["status"] == semconv.STATUS_ERROR
    # headers later than the read timeout: 504
    with GatewayServer(scripted_server.url, read_timeout=0.05) as gw:
        result = await complete(gw.base_url, req({"headers_delay_ms": 400.0}))
    assert result.error_type == "504"
    assert "upstream timed out" in (result.error_message or "")


async def test_api_key_required(guarded_gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=guarded_gateway.base_url, trust_env=False) as c:
        body = {"model": "m", "prompt": "hi", "script": {"n": 1}}
        missing = await c.post("/v1/completions", json=body)
        wrong = await c.post("/v1/completions", json=body, headers={"Authorization": "Bearer x"})
        right = await c.post(
            "/v1/completions", json=body, headers={"Authorization": f"Bearer {API_KEY}"}
        )
        health = await c.get("/health")
    for r in (missing, wrong):
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "invalid_api_key"
    assert right.status_code == 200
    assert right.json()["choices"][0]["text"] == " w0_0"
    assert health.status_code == 200


async def test_exporter_failure_never_breaks_requests(scripted_server: ScriptedServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{s.getsockname()[1]}/v1/traces"
    with GatewayServer(
        scripted_server.url,
        otlp_traces_endpoint=nowhere,
        env={"OTEL_BSP_SCHEDULE_DELAY": "10", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1"},
    ) as gw:
        results = [await complete(gw.base_url, req({"n": 2})) for _ in range(5)]
    assert all(r.ok for r in results)


def test_bad_config_is_one_line(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("input: [{type: blocklist, keywords: [x], oops: 1}]")
    with pytest.raises(ConfigError, match=r"bad\.yaml: input\[0\]\.oops: unknown field"):
        GatewayServer(scripted_server.url, config=cfg).start()
