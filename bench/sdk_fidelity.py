"""How exactly the ``openai`` SDK's calls are timed through otelbench, on each HTTP library.

The real SDK (sync and async) on ``openai_http_client()`` / ``openai_async_http_client()`` of
``httpx2`` (the SDK 3.x's own library) and of ``httpx``, and on the SDK's own
``DefaultHttpxClient`` wrapped by ``instrument_http_client``, against the scripted SSE server
(tests/fixtures/scripted_server.py), which logs when it began writing every chunk
(CLOCK_MONOTONIC, shared across processes). One call at a time, streamed, 8 content chunks 20 ms
apart; the heap is frozen after start-up (``gc.freeze()``), as otelbench.client advises.

TTFT error = the span's first content chunk (T_submit + ``ttft_us``) − the moment the server began
writing it; chunk error the same for every content chunk. Reported per configuration: P50, P99
and the worst, in ms.

Usage: ``.venv/bin/python bench/sdk_fidelity.py [--calls N] [--out FILE.json]`` (default
``bench/results/sdk_fidelity.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np
import openai
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from otelbench import semconv
from otelbench.client import (
    instrument_http_client,
    openai_async_http_client,
    openai_http_client,
)
from tests.fixtures.scripted_server import ScriptedServer, chunk_errors

SCRIPT = {"n": 8, "ttft_ms": 20.0, "itl_ms": 20.0}
MESSAGES: list[Any] = [{"role": "user", "content": "Hi"}]


def _errors_ms(
    exporter: InMemorySpanExporter, server: ScriptedServer, rids: list[str]
) -> tuple[list[float], list[float]]:
    spans = {
        str((s.attributes or {})[semconv.GEN_AI_RESPONSE_ID]): dict(s.attributes or {})
        for s in exporter.get_finished_spans()
    }
    ttft, chunks = [], []
    for rid in rids:
        a = spans[rid]
        errors = chunk_errors(
            int(a[semconv.CLIENT_SUBMIT_MONO_NS]),  # type: ignore[arg-type]
            list(a[semconv.CLIENT_CHUNK_OFFSETS_US]),  # type: ignore[arg-type]
            server.entry(rid),
        ).errors_ns
        ttft.append(errors[0] / 1e6)
        chunks.extend(e / 1e6 for e in errors)
    exporter.clear()
    return ttft, chunks


def _stats(values: list[float]) -> dict[str, float]:
    v = np.asarray(values)
    return {
        "p50_ms": round(float(np.percentile(v, 50)), 3),
        "p99_ms": round(float(np.percentile(v, 99)), 3),
        "worst_ms": round(float(v.max()), 3),
        "n": len(values),
    }


def run(calls: int) -> dict[str, Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    results: dict[str, Any] = {}
    with ScriptedServer() as server:
        base = {"base_url": server.url + "/v1", "api_key": "unused", "max_retries": 0}
        args = {"model": "tiny", "messages": MESSAGES, "stream": True}
        args["extra_body"] = {"script": SCRIPT}
        gc.collect()
        gc.freeze()
        for name, make in (
            ("httpx2 sync", lambda: openai_http_client(tracer_provider=provider)),
            (
                "httpx sync",
                lambda: openai_http_client(tracer_provider=provider, http_library="httpx"),
            ),
            (
                "DefaultHttpxClient sync",
                lambda: instrument_http_client(
                    openai.DefaultHttpxClient(), tracer_provider=provider
                ),
            ),
        ):
            with openai.OpenAI(**base, http_client=make()) as client:
                rids = []
                for _ in range(calls + 1):
                    rids.append({c.id for c in client.chat.completions.create(**args)}.pop())
            ttft, chunks = _errors_ms(exporter, server, rids[1:])  # the first warms up
            results[name] = {"ttft_error": _stats(ttft), "chunk_error": _stats(chunks)}

        for lib in ("httpx2", "httpx"):

            async def run_async(lib: str = lib) -> list[str]:
                http_client = openai_async_http_client(tracer_provider=provider, http_library=lib)
                async with openai.AsyncOpenAI(**base, http_client=http_client) as aclient:
                    rids = []
                    for _ in range(calls + 1):
                        stream = await aclient.chat.completions.create(**args)
                        rids.append({c.id async for c in stream}.pop())
                    return rids

            rids = asyncio.run(run_async())
            ttft, chunks = _errors_ms(exporter, server, rids[1:])
            results[f"{lib} async"] = {"ttft_error": _stats(ttft), "chunk_error": _stats(chunks)}
    provider.shutdown()
    return {
        "python": platform.python_version(),
        "openai": openai.__version__,
        "calls_per_configuration": calls,
        "script": SCRIPT,
        "results": results,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--out", type=Path, default=Path("bench/results/sdk_fidelity.json"))
    args = ap.parse_args()
    report = run(args.calls)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"{'configuration':<26} {'TTFT err p50':>12} {'p99':>8} {'worst':>8} {'chunk p50':>10}")
    for name, r in report["results"].items():
        t, c = r["ttft_error"], r["chunk_error"]
        print(
            f"{name:<26} {t['p50_ms']:>10.3f}ms {t['p99_ms']:>7.3f} {t['worst_ms']:>8.3f}"
            f" {c['p50_ms']:>9.3f}"
        )


if __name__ == "__main__":
    main()
