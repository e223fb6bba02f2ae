"""The httpx clients built for the ``openai`` SDK: otelbench's transport inside, the SDK's
defaults outside (its timeout and redirects), environment proxies off, and accepted by the real
SDK as its ``http_client``."""

from __future__ import annotations

import httpx
import openai

from otelbench.client import (
    InstrumentedSyncTransport,
    InstrumentedTransport,
    openai_async_http_client,
    openai_http_client,
)
from otelbench.client.apps import SDK_TIMEOUT


def test_the_sync_client_has_the_transport_and_the_sdks_defaults() -> None:
    with openai_http_client() as client:
        assert isinstance(client._transport, InstrumentedSyncTransport)
        assert client.timeout == SDK_TIMEOUT == httpx.Timeout(600.0, connect=5.0)
        assert client.follow_redirects is True
        assert client.trust_env is False
        sdk = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=client)
        assert sdk.timeout.as_dict() == SDK_TIMEOUT.as_dict()  # an httpx2.Timeout there


async def test_the_async_client_has_the_transport_and_keeps_given_arguments() -> None:
    async with openai_async_http_client(timeout=3.0, headers={"x-app": "a"}) as client:
        assert isinstance(client._transport, InstrumentedTransport)
        assert client.timeout == httpx.Timeout(3.0)
        assert client.headers["x-app"] == "a"
        openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=client)
