"""Instrument your application: the ``openai`` SDK's HTTP clients, timed like the benchmark.

Three ways, from the least to the most reach:

* one argument per client — :func:`openai_http_client` / :func:`openai_async_http_client` build
  the client the installed SDK prefers (``httpx2`` for ``openai`` 3.x, ``httpx`` for 1.x/2.x),
  with the SDK's own defaults and otelbench's transport::

      client = openai.OpenAI(base_url=URL, api_key=KEY, http_client=openai_http_client())

* a client you already have — :func:`instrument_http_client` puts otelbench's transport in
  front of the transports of an ``httpx`` or ``httpx2`` client, e.g. an
  ``openai.DefaultHttpxClient`` built with your proxy or certificates::

      client = openai.OpenAI(http_client=instrument_http_client(openai.DefaultHttpxClient()))

* every client the SDK builds itself — :func:`instrument_openai`, once at start-up, for code
  that passes no ``http_client`` (``openai.OpenAI()``, ``AsyncOpenAI()``, ``AzureOpenAI()`` …)::

      instrument_openai()
      client = openai.OpenAI(base_url=URL, api_key=KEY)

What is timed: every ``POST`` to ``.../chat/completions`` or ``.../completions`` through such a
client (one CLIENT span per HTTP request, :mod:`otelbench.client.transport`, and the GenAI
client metrics, :mod:`otelbench.client.metrics`). What is not: a client built before
:func:`instrument_openai` ran, or passed as ``http_client`` without going through
:func:`instrument_http_client`; the Responses API, embeddings and every other endpoint (their
requests pass through untouched); requests sent through a proxy mount added after
instrumenting. Streams are timed however the SDK reads them (sync or async iteration); a stream
closed before its end ends its span as ``cancelled``; each retry of the SDK is a span of its own.

Environment proxies (``HTTP_PROXY`` …) are not used by the helpers (``trust_env=False`` by
default): httpx sends through a proxy with a transport of its own, which would leave the
requests untimed (:func:`instrument_http_client` wraps the proxy mounts a client already has).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Final, Literal, TypedDict

import httpx
import httpx2
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider

from otelbench import semconv
from otelbench.client.others import Signals
from otelbench.client.transport import (
    InstrumentedHttpx2SyncTransport,
    InstrumentedHttpx2Transport,
    InstrumentedSyncTransport,
    InstrumentedTransport,
)

__all__ = [
    "SDK_LIMITS",
    "SDK_TIMEOUT",
    "HttpLibrary",
    "instrument_http_client",
    "instrument_openai",
    "openai_async_http_client",
    "openai_http_client",
    "sdk_http_library",
    "uninstrument_openai",
]

HttpLibrary = Literal["httpx", "httpx2"]

SDK_TIMEOUT: Final = httpx.Timeout(600.0, connect=5.0)
"""The ``openai`` SDK's default timeout (``openai._constants.DEFAULT_TIMEOUT``)."""
SDK_LIMITS: Final = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
"""The ``openai`` SDK's default connection limits (``DEFAULT_CONNECTION_LIMITS``)."""

_SDK_MODULE: Final = "openai._base_client"
_WRAPPERS: Final = ("SyncHttpxClientWrapper", "AsyncHttpxClientWrapper")
"""The classes the SDK builds its own clients from, when given none."""
_ORIGINALS: dict[str, type[Any]] = {}


def sdk_http_library() -> HttpLibrary:
    """The HTTP library the installed ``openai`` SDK builds its clients on: ``httpx2`` for 3.x
    (``openai.DefaultHttpxClient`` is an ``httpx2.Client``), ``httpx`` before; ``httpx2`` when
    the SDK is not installed."""
    try:
        openai = sys.modules.get("openai") or importlib.import_module("openai")
    except ImportError:
        return "httpx2"
    default = getattr(openai, "DefaultHttpxClient", None)
    if isinstance(default, type) and issubclass(default, httpx.Client):
        return "httpx"
    return "httpx2"


def _client_kwargs(kwargs: dict[str, object], lib: HttpLibrary) -> dict[str, object]:
    """The client's keyword arguments, the SDK's defaults added (the values are only passed on)."""
    t = SDK_TIMEOUT
    kwargs.setdefault("timeout", t if lib == "httpx" else httpx2.Timeout(t.read, connect=t.connect))
    kwargs.setdefault("follow_redirects", True)
    kwargs.setdefault("trust_env", False)
    return kwargs


def _limits(limits: httpx.Limits | httpx2.Limits, lib: HttpLibrary) -> Any:
    cls = httpx.Limits if lib == "httpx" else httpx2.Limits
    if isinstance(limits, cls):
        return limits
    return cls(
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
    )


_BUILD: Final[dict[tuple[str, bool], tuple[type[Any], type[Any], type[Any]]]] = {
    ("httpx2", True): (httpx2.Client, InstrumentedHttpx2SyncTransport, httpx2.HTTPTransport),
    ("httpx2", False): (httpx2.AsyncClient, InstrumentedHttpx2Transport, httpx2.AsyncHTTPTransport),
    ("httpx", True): (httpx.Client, InstrumentedSyncTransport, httpx.HTTPTransport),
    ("httpx", False): (httpx.AsyncClient, InstrumentedTransport, httpx.AsyncHTTPTransport),
}
"""(library, sync) → the client, otelbench's transport and the inner transport."""


def _build(
    sync: bool,
    http_library: HttpLibrary | None,
    limits: httpx.Limits | httpx2.Limits,
    options: _TransportOptions,
    kwargs: dict[str, object],
) -> Any:
    lib = http_library or sdk_http_library()
    client_cls, transport_cls, inner_cls = _BUILD[lib, sync]
    inner = inner_cls(limits=_limits(limits, lib), verify=kwargs.get("verify", True))
    return client_cls(transport=transport_cls(inner, **options), **_client_kwargs(kwargs, lib))


class _TransportOptions(TypedDict):
    """otelbench's transport's keyword arguments, as an app's client passes them."""

    tracer_provider: trace.TracerProvider | None
    meter_provider: MeterProvider | None
    provider_name: str
    signals: Signals | None


def _options(
    tracer_provider: trace.TracerProvider | None,
    meter_provider: MeterProvider | None,
    provider_name: str,
    signals: Signals | None,
) -> _TransportOptions:
    return {
        "tracer_provider": tracer_provider,
        "meter_provider": meter_provider,
        "provider_name": provider_name,
        "signals": signals,
    }


def openai_http_client(
    *,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    provider_name: str = semconv.PROVIDER_OPENAI,
    limits: httpx.Limits | httpx2.Limits = SDK_LIMITS,
    http_library: HttpLibrary | None = None,
    signals: Signals | None = None,
    **kwargs: object,
) -> httpx.Client | httpx2.Client:
    """A client for ``openai.OpenAI(http_client=...)``, instrumented by otelbench.

    ``http_library``: ``httpx2`` or ``httpx`` (default: what the installed SDK builds on,
    :func:`sdk_http_library`); ``tracer_provider`` / ``meter_provider``: default the global
    ones; ``provider_name``: ``gen_ai.provider.name``; ``limits``: the connection pool's;
    ``signals``: ``all``, ``spans`` or ``metrics`` (:mod:`otelbench.client.others`); other
    keyword arguments go to the client (``timeout``, ``headers``, ``verify`` …).

    Example::

        client = openai.OpenAI(base_url=URL, api_key=KEY, http_client=openai_http_client())
    """
    options = _options(tracer_provider, meter_provider, provider_name, signals)
    client: httpx.Client | httpx2.Client = _build(True, http_library, limits, options, kwargs)
    return client


def openai_async_http_client(
    *,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    provider_name: str = semconv.PROVIDER_OPENAI,
    limits: httpx.Limits | httpx2.Limits = SDK_LIMITS,
    http_library: HttpLibrary | None = None,
    signals: Signals | None = None,
    **kwargs: object,
) -> httpx.AsyncClient | httpx2.AsyncClient:
    """An async client for ``openai.AsyncOpenAI(http_client=...)``, instrumented by otelbench;
    the arguments are :func:`openai_http_client`'s.

    Example::

        aclient = openai.AsyncOpenAI(http_client=openai_async_http_client())
    """
    options = _options(tracer_provider, meter_provider, provider_name, signals)
    client: httpx.AsyncClient | httpx2.AsyncClient = _build(
        False, http_library, limits, options, kwargs
    )
    return client


_WRAPPING: Final[tuple[tuple[type[Any], type[Any], type[Any]], ...]] = (
    (httpx2.Client, httpx2.BaseTransport, InstrumentedHttpx2SyncTransport),
    (httpx2.AsyncClient, httpx2.AsyncBaseTransport, InstrumentedHttpx2Transport),
    (httpx.Client, httpx.BaseTransport, InstrumentedSyncTransport),
    (httpx.AsyncClient, httpx.AsyncBaseTransport, InstrumentedTransport),
)
_INSTRUMENTED: Final = tuple(w[2] for w in _WRAPPING)


def instrument_http_client(
    client: Any,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    provider_name: str = semconv.PROVIDER_OPENAI,
    signals: Signals | None = None,
) -> Any:
    """Put otelbench's transport in front of an existing ``httpx`` / ``httpx2`` client's
    transports (its default one and its mounts, e.g. proxies); returns the same client.

    Calling it twice on a client changes nothing. Any other object is a ``TypeError``. The
    client's private ``_transport`` / ``_mounts`` are where httpx keeps them (as
    ``HTTPXClientInstrumentor.instrument_client`` finds them too).

    Example::

        client = openai.OpenAI(http_client=instrument_http_client(openai.DefaultHttpxClient()))
    """
    found = next((w for w in _WRAPPING if isinstance(client, w[0])), None)
    if found is None:
        raise TypeError(
            "otelbench: instrument_http_client takes an httpx or httpx2 client "
            f"(Client or AsyncClient), got {type(client).__module__}.{type(client).__qualname__}"
        )
    _, base, wrapper = found
    kw = _options(tracer_provider, meter_provider, provider_name, signals)

    def wrap(transport: Any) -> Any:
        if isinstance(transport, _INSTRUMENTED) or not isinstance(transport, base):
            return transport
        return wrapper(transport, **kw)

    client._transport = wrap(client._transport)
    mounts = getattr(client, "_mounts", None)
    if isinstance(mounts, dict):
        for pattern, transport in list(mounts.items()):
            mounts[pattern] = wrap(transport) if transport is not None else None
    return client


def instrument_openai(
    *,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    provider_name: str = semconv.PROVIDER_OPENAI,
    signals: Signals | None = None,
) -> None:
    """Time every client the ``openai`` SDK builds for itself from now on (a client made
    without ``http_client=``): the SDK's own client classes are replaced by subclasses that
    pass their transport through :func:`instrument_http_client`, keeping the SDK's defaults.
    Clients passed as ``http_client`` are left as they are. Calling it again changes the
    providers of clients built afterwards; :func:`uninstrument_openai` undoes it. Raises
    ``ImportError`` when the SDK is not installed.

    Example::

        instrument_openai()
        client = openai.OpenAI(base_url=URL, api_key=KEY)   # timed
    """
    module = importlib.import_module(_SDK_MODULE)
    options = _options(tracer_provider, meter_provider, provider_name, signals)
    for name in _WRAPPERS:
        original = _ORIGINALS.setdefault(name, getattr(module, name))

        def __init__(self: Any, *args: Any, __base: type[Any] = original, **kw: Any) -> None:
            __base.__init__(self, *args, **kw)
            instrument_http_client(self, **options)

        timed = type(name, (original,), {"__init__": __init__, "__module__": __name__})
        setattr(module, name, timed)


def uninstrument_openai() -> None:
    """Undo :func:`instrument_openai` (clients built meanwhile stay timed).

    Example::

        uninstrument_openai()
    """
    module = sys.modules.get(_SDK_MODULE)
    for name, original in list(_ORIGINALS.items()):
        if module is not None:
            setattr(module, name, original)
        del _ORIGINALS[name]
