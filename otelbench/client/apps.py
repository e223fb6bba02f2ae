"""Instrument your application: httpx clients for the ``openai`` SDK, timed like the benchmark.

One line per client::

    import openai
    from otelbench.client import openai_async_http_client, openai_http_client

    client = openai.OpenAI(base_url=URL, api_key=KEY, http_client=openai_http_client())
    aclient = openai.AsyncOpenAI(base_url=URL, api_key=KEY, http_client=openai_async_http_client())

Every ``chat.completions.create`` / ``completions.create`` call then gives one CLIENT span
(:mod:`otelbench.client.transport`: T_submit, first-content-token time, the arrival offset of every
output chunk for streamed calls, usage, finish reason, ``error.type``) and, where a meter provider
records, the GenAI client metrics (:mod:`otelbench.client.metrics`). The span's ``traceparent``
goes out with the request, so a traced server (vLLM with otelbench's engine hooks) puts its span
under it. Streams are timed however the SDK reads them (sync or async iteration); a stream closed
before its end ends its span as ``cancelled``; each retry of the SDK is a span of its own.

The ``openai`` SDK (3.x) runs on ``httpx2`` by default and accepts an ``httpx`` client in its
place; otelbench's transports are ``httpx`` transports, so these helpers build ``httpx`` clients
with the SDK's own defaults (timeout 600 s with a 5 s connect timeout, 1,000 connections of which
100 kept alive, redirects followed). otelbench itself never imports ``openai``.

Any other ``httpx`` client works too: ``httpx.Client(transport=InstrumentedSyncTransport())``.
Environment proxies (``HTTP_PROXY`` …) are not used here (``trust_env=False`` by default): httpx
sends through a proxy with a transport of its own, which would leave the requests untimed.
"""

from __future__ import annotations

from typing import Any, Final

import httpx
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider

from otelbench import semconv
from otelbench.client.transport import InstrumentedSyncTransport, InstrumentedTransport

__all__ = ["SDK_LIMITS", "SDK_TIMEOUT", "openai_async_http_client", "openai_http_client"]

SDK_TIMEOUT: Final = httpx.Timeout(600.0, connect=5.0)
"""The ``openai`` SDK's default timeout (``openai._constants.DEFAULT_TIMEOUT``)."""
SDK_LIMITS: Final = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
"""The ``openai`` SDK's default connection limits (``DEFAULT_CONNECTION_LIMITS``)."""


def _client_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs.setdefault("timeout", SDK_TIMEOUT)
    kwargs.setdefault("follow_redirects", True)
    kwargs.setdefault("trust_env", False)
    return kwargs


def openai_http_client(
    *,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    provider_name: str = semconv.PROVIDER_OPENAI,
    limits: httpx.Limits = SDK_LIMITS,
    **kwargs: Any,
) -> httpx.Client:
    """An ``httpx.Client`` for ``openai.OpenAI(http_client=...)``, instrumented by otelbench.

    ``tracer_provider`` / ``meter_provider``: default the global ones; ``provider_name``:
    ``gen_ai.provider.name``; ``limits``: the connection pool's; other keyword arguments go to
    ``httpx.Client`` (``timeout``, ``headers``, ``verify`` …).

    Example::

        client = openai.OpenAI(base_url=URL, api_key=KEY, http_client=openai_http_client())
    """
    transport = InstrumentedSyncTransport(
        httpx.HTTPTransport(limits=limits, verify=kwargs.get("verify", True)),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        provider_name=provider_name,
    )
    return httpx.Client(transport=transport, **_client_kwargs(kwargs))


def openai_async_http_client(
    *,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    provider_name: str = semconv.PROVIDER_OPENAI,
    limits: httpx.Limits = SDK_LIMITS,
    **kwargs: Any,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` for ``openai.AsyncOpenAI(http_client=...)``, instrumented by
    otelbench; the arguments are :func:`openai_http_client`'s."""
    transport = InstrumentedTransport(
        httpx.AsyncHTTPTransport(limits=limits, verify=kwargs.get("verify", True)),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        provider_name=provider_name,
    )
    return httpx.AsyncClient(transport=transport, **_client_kwargs(kwargs))
