"""The clients built for the ``openai`` SDK: otelbench's transport inside, the SDK's defaults
outside (its timeout and redirects), environment proxies off, the library the installed SDK
builds on (httpx2 for openai 3.x) unless asked, and accepted by the real SDK as its
``http_client``; a client one has, wrapped in place."""

from __future__ import annotations

import httpx
import httpx2
import openai
import pytest

from otelbench.client import (
    InstrumentedHttpx2SyncTransport,
    InstrumentedHttpx2Transport,
    InstrumentedSyncTransport,
    InstrumentedTransport,
    instrument_http_client,
    openai_async_http_client,
    openai_http_client,
)
from otelbench.client.apps import SDK_TIMEOUT, sdk_http_library


def test_the_installed_sdk_builds_on_httpx2() -> None:
    assert issubclass(openai.DefaultHttpxClient, httpx2.Client)
    assert sdk_http_library() == "httpx2"


def test_the_sync_client_is_the_sdks_library_with_the_transport_and_the_sdks_defaults() -> None:
    with openai_http_client() as client:
        assert isinstance(client, httpx2.Client)
        assert isinstance(client._transport, InstrumentedHttpx2SyncTransport)
        assert client.timeout == httpx2.Timeout(600.0, connect=5.0)
        assert client.follow_redirects is True
        assert client.trust_env is False
        sdk = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=client)
        assert sdk.timeout.as_dict() == SDK_TIMEOUT.as_dict()


def test_an_httpx_client_when_asked() -> None:
    with openai_http_client(http_library="httpx") as client:
        assert isinstance(client, httpx.Client)
        assert isinstance(client._transport, InstrumentedSyncTransport)
        assert client.timeout == SDK_TIMEOUT == httpx.Timeout(600.0, connect=5.0)
        openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=client)


async def test_the_async_client_has_the_transport_and_keeps_given_arguments() -> None:
    async with openai_async_http_client(timeout=3.0, headers={"x-app": "a"}) as client:
        assert isinstance(client._transport, InstrumentedHttpx2Transport)
        assert client.timeout == httpx2.Timeout(3.0)
        assert client.headers["x-app"] == "a"
        openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=client)
    async with openai_async_http_client(http_library="httpx") as client1:
        assert isinstance(client1._transport, InstrumentedTransport)


def test_a_client_one_has_is_wrapped_in_place_mounts_included() -> None:
    proxy = httpx2.HTTPTransport()
    with openai.DefaultHttpxClient(mounts={"http://proxied.test": proxy}) as client:
        assert instrument_http_client(client) is client
        assert isinstance(client._transport, InstrumentedHttpx2SyncTransport)
        [mounted] = client._mounts.values()
        assert isinstance(mounted, InstrumentedHttpx2SyncTransport)
        assert mounted._inner is proxy
        inner = client._transport
        instrument_http_client(client)  # again: not wrapped twice
        assert client._transport is inner


def test_anything_else_is_a_type_error_that_says_what_it_takes() -> None:
    with pytest.raises(TypeError, match="takes an httpx or httpx2 client"):
        instrument_http_client(object())


def test_a_transport_wraps_only_its_own_librarys_transport() -> None:
    with pytest.raises(TypeError, match=r"wraps a httpx2 transport .* got httpx\."):
        InstrumentedHttpx2SyncTransport(httpx.HTTPTransport())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="signals must be one of all, spans, metrics"):
        InstrumentedSyncTransport(signals="traces")  # type: ignore[arg-type]
