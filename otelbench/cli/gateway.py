"""``otelbench gateway``: the typer command (registered in :mod:`otelbench.cli`).

Example::

    otelbench gateway --upstream http://127.0.0.1:8000 --config guardrails.yaml --port 9000
    OTELBENCH_GATEWAY_API_KEY=sk-test otelbench gateway --upstream http://127.0.0.1:8000
    otelbench gateway --upstream http://127.0.0.1:8000 --api-key-file key.txt \
        --tls-cert cert.pem --tls-key key.pem --host 0.0.0.0

Access (bind address, API key, TLS, body limit) is described in ``docs/security.md``.

Spans go to ``$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (OTLP/HTTP) when it is set. See
:mod:`otelbench.guardrails.gateway` and ``docs/guardrails.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from otelbench import semconv
from otelbench.cli.options import TlsCert, TlsKey
from otelbench.errors import OtelbenchError

__all__ = ["gateway"]


def gateway(
    upstream: Annotated[
        str, typer.Option(help="Base URL of the OpenAI-compatible server to forward to.")
    ],
    config: Annotated[
        Path | None,
        typer.Option(help="Guardrail configuration file (YAML/JSON); none: no filters."),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8080,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar=semconv.ENV_GATEWAY_API_KEY,
            help="Require 'Authorization: Bearer KEY' on every path but /health (not forwarded "
            "upstream). Prefer --api-key-file or the environment: arguments show in ps.",
        ),
    ] = None,
    api_key_file: Annotated[
        Path | None,
        typer.Option(help="Read the API key from this file (overrides --api-key)."),
    ] = None,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    max_body_bytes: Annotated[
        int | None,
        typer.Option(help="Largest request body accepted (default 16 MiB; beyond: HTTP 413)."),
    ] = None,
    connect_timeout: Annotated[
        float, typer.Option(help="Seconds to connect to the upstream (then HTTP 502).")
    ] = 10.0,
    read_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for upstream headers or data (then 504).")
    ] = 600.0,
) -> None:
    """Run the guardrail gateway: an OpenAI-compatible streaming proxy (draft 4.1.2)."""
    from otelbench.collector.access import read_token
    from otelbench.guardrails.gateway import DEFAULT_MAX_BODY_BYTES, serve_gateway

    try:
        key: str | bytes | None = api_key
        if api_key_file is not None:
            key = read_token(api_key_file, env_var=semconv.ENV_GATEWAY_API_KEY)
        serve_gateway(
            upstream,
            config_path=config,
            host=host,
            port=port,
            api_key=key,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            announce=True,
            tls_cert=tls_cert,
            tls_key=tls_key,
            max_body_bytes=DEFAULT_MAX_BODY_BYTES if max_body_bytes is None else max_body_bytes,
        )
    except OtelbenchError as exc:
        typer.echo(f"otelbench: error: {exc}", err=True)
        raise typer.Exit(1) from None
