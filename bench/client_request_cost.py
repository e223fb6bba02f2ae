"""The load generator's own CPU per request and per chunk, offline: no socket, no event-loop wait.

``AsyncLLMClient.complete`` over an in-memory inner transport that yields a streamed completion
of 64 content chunks (the usage chunk and ``[DONE]`` after them) as separate reads, so the
measured work is otelbench's alone: the request's building (``CompletionRequest``,
``httpx.Request`` with its JSON body), the instrumented transport (span start, ``traceparent``,
SSE parsing, the fold, the span's attributes and end), the result. Three cases:

* ``spans``: a tracer provider whose exporter encodes each 512 finished spans as the spooling
  exporter does (``otelbench.spool.encode_batch``; the SDK's ``encode_spans`` in a checkout
  that has no ``encode_batch``);
* ``no_spans``: no tracer provider (the measurement is still taken, the span does not record);
* ``encode``: encoding 512 finished client spans alone, per span: the SDK's encoder and
  ``encode_batch``.

CPU time is the process's (``time.process_time``), best of ``--repeats`` runs of ``--requests``
requests, so a busy machine moves it little. ``spans`` minus ``no_spans`` is the span work per
request.

Usage::

    .venv/bin/python bench/client_request_cost.py
    .venv/bin/python bench/client_request_cost.py --code /tmp/base   # another checkout's otelbench
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHUNKS = 64
BATCH = 512


def _events() -> list[bytes]:
    """The SSE events of one streamed completion: 64 content chunks with continuous usage, the
    usage chunk, ``[DONE]``."""
    head = '{"id":"cmpl-abc123def456","object":"text_completion","created":1764200000,"model":"m",'
    out = []
    for i in range(CHUNKS):
        finish = '"length"' if i == CHUNKS - 1 else "null"
        choice = f'{{"index":0,"text":" tok{i}","logprobs":null,"finish_reason":{finish}}}'
        usage = f'{{"prompt_tokens":8,"total_tokens":{9 + i},"completion_tokens":{i + 1}}}'
        out.append(f'{head}"choices":[{choice}],"usage":{usage}}}')
    out.append(f'{head}"choices":[],"usage":{{"prompt_tokens":8,"completion_tokens":{CHUNKS}}}}}')
    out.append("[DONE]")
    return [b"data: " + e.encode() + b"\n\n" for e in out]


def _encoder() -> tuple[str, Callable[[Sequence[Any]], bytes]]:
    try:
        from otelbench.spool import encode_batch
    except ImportError:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        return "sdk", lambda spans: encode_spans(spans).SerializePartialToString()
    return "encode_batch", encode_batch


def _client(tracer_provider: Any) -> Any:
    import httpx

    from otelbench.client.api import AsyncLLMClient
    from otelbench.client.transport import InstrumentedTransport

    events = _events()

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for e in events:
                yield e

    class InMemory(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            headers = [(b"content-type", b"text/event-stream")]
            return httpx.Response(200, headers=headers, stream=Body())

    client = AsyncLLMClient("http://127.0.0.1:8000", tracer_provider=tracer_provider)
    client._transport = InstrumentedTransport(InMemory(), tracer_provider=tracer_provider)
    return client


def _provider(encode: Callable[[Sequence[Any]], bytes]) -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Batches(SpanExporter):
        """Encodes each 512 finished spans, as the batch processor hands them to the exporter."""

        def __init__(self) -> None:
            self.spans: list[Any] = []

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            self.spans.extend(spans)
            if len(self.spans) >= BATCH:
                encode(self.spans)
                self.spans.clear()
            return SpanExportResult.SUCCESS

    provider = TracerProvider(resource=Resource.create({"service.name": "otelbench-client"}))
    provider.add_span_processor(SimpleSpanProcessor(Batches()))
    return provider


def per_request_us(tracer_provider: Any, requests: int, repeats: int) -> float:
    """Best CPU µs per ``complete`` over ``repeats`` runs of ``requests``."""
    from otelbench import semconv
    from otelbench.client.api import CompletionRequest

    client = _client(tracer_provider)
    req = CompletionRequest(
        api="completions",
        model="m",
        prompt=list(range(8)),
        max_tokens=CHUNKS,
        extra_body={"ignore_eos": True},
        attributes={semconv.RUN_ID: "r", semconv.REQUEST_INDEX: 1, semconv.REQUEST_PHASE: "x"},
    )

    async def run(n: int) -> None:
        for _ in range(n):
            result = await client.complete(req)
            assert result.ok, result
            assert len(result.chunk_offsets_us) == CHUNKS

    asyncio.run(run(requests // 4))  # warm
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        asyncio.run(run(requests))
        best = min(best, (time.process_time() - t0) / requests)
    return best * 1e6


def encode_per_span_us(repeats: int) -> dict[str, float]:
    """Best CPU µs per span of encoding 512 finished client spans, by each encoder at hand."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otelbench.client.api import CompletionRequest

    provider = _provider(lambda spans: b"")
    memory = InMemorySpanExporter()
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(memory))
    client = _client(provider)
    req = CompletionRequest(api="completions", model="m", prompt="hi", max_tokens=CHUNKS)

    async def run() -> None:
        for _ in range(BATCH):
            await client.complete(req)

    asyncio.run(run())
    spans = memory.get_finished_spans()
    encoders: dict[str, Callable[[Sequence[Any]], bytes]] = {
        "sdk": lambda s: encode_spans(s).SerializePartialToString()
    }
    name, encode = _encoder()
    if name != "sdk":
        encoders[name] = encode
        assert encode(spans) == encoders["sdk"](spans)
    out = {}
    for key, f in encoders.items():
        best = float("inf")
        for _ in range(repeats):
            t0 = time.process_time()
            f(spans)
            best = min(best, time.process_time() - t0)
        out[key] = round(best / len(spans) * 1e6, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--code", type=Path, default=None, help="the tree otelbench is imported from")
    ap.add_argument("--out", type=Path, default=None, help="write the result JSON here")
    args = ap.parse_args()
    sys.path.insert(0, str(args.code or ROOT))
    encoder, encode = _encoder()
    spans = per_request_us(_provider(encode), args.requests, args.repeats)
    no_spans = per_request_us(None, args.requests, args.repeats)
    result = {
        "benchmark": "client_request_cost",
        "code": str(args.code or ROOT),
        "encoder": encoder,
        "chunks_per_request": CHUNKS,
        "cpu_us_per_request": {"spans": round(spans), "no_spans": round(no_spans)},
        "cpu_us_per_chunk": {
            "spans": round(spans / CHUNKS, 2),
            "no_spans": round(no_spans / CHUNKS, 2),
        },
        "span_work_us_per_request": round(spans - no_spans),
        "encode_us_per_span": encode_per_span_us(args.repeats),
    }
    print(json.dumps(result, indent=2))
    if args.out is not None:
        sys.path.insert(0, str(ROOT))
        from bench.common import machine, write_result

        write_result(args.out, {**result, "machine": machine()})


if __name__ == "__main__":
    main()
