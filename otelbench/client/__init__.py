"""The instrumented streaming client: time every chunk of an OpenAI-compatible LLM response.

Two levels, both depending on ``opentelemetry-api`` only (pass ``tracer_provider=``, or the global
provider is used):

* :class:`AsyncLLMClient` / :class:`LLMClient` — ``complete(CompletionRequest)`` returns a
  :class:`CompletionResult` and never raises for what the target does; the load generator's API.
* :class:`InstrumentedTransport` / :class:`InstrumentedSyncTransport` — httpx transports that add
  one CLIENT span per ``/v1/completions`` or ``/v1/chat/completions`` request to any httpx client,
  and the GenAI client metrics (``meter_provider=``; :mod:`~otelbench.client.metrics`).
* :class:`InstrumentedHttpx2Transport` / :class:`InstrumentedHttpx2SyncTransport` — the same
  for ``httpx2`` clients (the ``openai`` SDK 3.x's own library).
* :func:`openai_http_client` / :func:`openai_async_http_client` — those transports in the
  clients the installed ``openai`` SDK prefers
  (``openai.OpenAI(http_client=openai_http_client())``);
  :func:`instrument_http_client` for a client you have (``openai.DefaultHttpxClient()``);
  :func:`instrument_openai` for every client the SDK builds itself (:mod:`~otelbench.client.apps`).

Example::

    from otelbench.client import AsyncLLMClient, CompletionRequest

    async with AsyncLLMClient("http://127.0.0.1:8000") as client:
        r = await client.complete(CompletionRequest(api="completions", model="m", prompt="Hi"))
        print(r.ok, r.ttft_us, r.chunk_offsets_us, r.chunk_tokens)

Modules: :mod:`~otelbench.client.sse` (the SSE parser), :mod:`~otelbench.client.openai` (what a
chunk means: content or not, tokens, usage), :mod:`~otelbench.client.transport` (spans and timing),
:mod:`~otelbench.client.api` (the high-level client), :mod:`~otelbench.client.metrics` (the
GenAI client metrics), :mod:`~otelbench.client.apps` (clients for the ``openai`` SDK),
:mod:`~otelbench.client._http11` (the lean HTTP/1.1 transport under ``AsyncLLMClient``: kernel
receive timestamps, no O(n²) pool).

For timing fidelity the process that runs the client should keep the garbage collector's pauses
out of measurement phases (``gc.freeze()`` after start-up, or ``gc.disable()`` during a phase and a
collection between phases): a pause longer than a stream's inter-chunk interval makes the waiting
chunks arrive as one read, stamped at the time of the last (bench/client_fidelity.py).
"""

from __future__ import annotations

from otelbench.client.api import AsyncLLMClient, CompletionRequest, CompletionResult, LLMClient
from otelbench.client.apps import (
    instrument_http_client,
    instrument_openai,
    openai_async_http_client,
    openai_http_client,
    uninstrument_openai,
)
from otelbench.client.sse import SSEEvent, SSEParser
from otelbench.client.transport import (
    EXT_ATTRIBUTES,
    EXT_MEASUREMENT,
    InstrumentedHttpx2SyncTransport,
    InstrumentedHttpx2Transport,
    InstrumentedSyncTransport,
    InstrumentedTransport,
    Measurement,
)

__all__ = [
    "EXT_ATTRIBUTES",
    "EXT_MEASUREMENT",
    "AsyncLLMClient",
    "CompletionRequest",
    "CompletionResult",
    "InstrumentedHttpx2SyncTransport",
    "InstrumentedHttpx2Transport",
    "InstrumentedSyncTransport",
    "InstrumentedTransport",
    "LLMClient",
    "Measurement",
    "SSEEvent",
    "SSEParser",
    "instrument_http_client",
    "instrument_openai",
    "openai_async_http_client",
    "openai_http_client",
    "uninstrument_openai",
]
