"""Nobody let in, at the gateway: API key on every path, TLS, the request body limit.

The real gateway process (uvicorn) in front of the scripted SSE server, a self-signed
certificate made by ``openssl``, real HTTP clients (docs/security.md).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from otelbench.errors import ConfigError
from otelbench.guardrails.gateway import GatewayServer
from tests.fixtures.scripted_server import ScriptedServer
from tests.integration.test_receiver_security import self_signed

pytestmark = pytest.mark.integration

API_KEY = "sk-gateway-security"
LIMIT = 4096
BODY = {"model": "m", "prompt": "hi", "script": {"n": 1}}
AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("gw-tls"))


@pytest.fixture(scope="module")
def gateway(
    scripted_server: ScriptedServer, tls_files: tuple[Path, Path]
) -> Iterator[GatewayServer]:
    cert, key = tls_files
    with GatewayServer(
        scripted_server.url, api_key=API_KEY, tls_cert=cert, tls_key=key, max_body_bytes=LIMIT
    ) as gw:
        yield gw


@pytest.fixture
def client(gateway: GatewayServer, tls_files: tuple[Path, Path]) -> Iterator[httpx.Client]:
    verify = ssl.create_default_context(cafile=str(tls_files[0]))
    with httpx.Client(base_url=gateway.base_url, verify=verify, trust_env=False) as c:
        yield c


def test_every_path_but_health_needs_the_key(client: httpx.Client) -> None:
    assert client.get("/health").status_code == 200
    for method, path in [("POST", "/v1/completions"), ("GET", "/v1/models"),
                         ("GET", "/metrics"), ("POST", "/tokenize")]:  # fmt: skip
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": API_KEY}):
            r = client.request(method, path, json=BODY, headers=headers)
            assert (path, r.status_code) == (path, 401)
            assert r.headers["www-authenticate"] == 'Bearer realm="otelbench"'
            assert r.json()["error"]["code"] == "invalid_api_key"
    ok = client.post("/v1/completions", json=BODY, headers=AUTH)
    assert ok.status_code == 200
    assert ok.json()["choices"][0]["text"] == " w0_0"


def test_bodies_over_the_limit_get_413(client: httpx.Client) -> None:
    big = {**BODY, "prompt": "x" * LIMIT}
    declared = client.post("/v1/completions", json=big, headers=AUTH)
    chunked = client.post(  # no Content-Length: the limit applies to the bytes read
        "/v1/completions",
        content=iter([b'{"model": "m", "prompt": "', b"x" * LIMIT, b'"}']),
        headers={**AUTH, "Content-Type": "application/json"},
    )
    for r in (declared, chunked):
        assert r.status_code == 413
        assert r.json()["error"]["code"] == "body_too_large"
        assert f"over the {LIMIT}-byte limit" in r.json()["error"]["message"]
    small = client.post("/v1/completions", json=BODY, headers=AUTH)
    assert small.status_code == 200


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_tls_only_and_1_2_or_later(gateway: GatewayServer, tls_files: tuple[Path, Path]) -> None:
    assert gateway.base_url.startswith("https://")
    context = ssl.create_default_context(cafile=str(tls_files[0]))
    raw = socket.create_connection((gateway.host, gateway.port), timeout=10)
    with context.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
        assert conn.version() in ("TLSv1.2", "TLSv1.3")
    old = ssl.create_default_context(cafile=str(tls_files[0]))
    old.minimum_version = old.maximum_version = ssl.TLSVersion.TLSv1_1
    raw = socket.create_connection((gateway.host, gateway.port), timeout=10)
    with raw, pytest.raises(ssl.SSLError):
        old.wrap_socket(raw, server_hostname="127.0.0.1")
    plain = f"http://{gateway.host}:{gateway.port}/health"
    with pytest.raises(httpx.HTTPError):
        httpx.get(plain, trust_env=False, timeout=10)


def test_unloadable_tls_files_are_a_one_line_refusal(
    scripted_server: ScriptedServer, tls_files: tuple[Path, Path]
) -> None:
    cert, _ = tls_files
    with pytest.raises(ConfigError, match=r"^cannot load the TLS certificate"):
        GatewayServer(scripted_server.url, tls_cert=cert, tls_key=cert).start()
