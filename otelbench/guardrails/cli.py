"""``otelbench gateway``: the typer command (registered in :mod:`otelbench.cli`).

Example::

    otelbench gateway --upstream http://127.0.0.1:8000 --config guardrails.yaml --port 9000
    OTELBENCH_GATEWAY_API_KEY=sk-test otelbench gateway --upstream http://127.0.0.1:8000

Spans go to ``$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (OTLP/HTTP) when it is set. See
:mod:`otelbench.guardrails.gateway` and ``docs/guardrails.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from otelbench import semconv
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
            help="Require 'Authorization: Bearer KEY' on /v1/* (not forwarded upstream).",
        ),
    ] = None,
    connect_timeout: Annotated[
        float, typer.Option(help="Seconds to connect to the upstream (then HTTP 502).")
    ] = 10.0,
    read_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for upstream headers or data (then 504).")
    ] = 600.0,
) -> None:
    """Run the guardrail gateway: an OpenAI-compatible streaming proxy (draft 4.1.2)."""
    from otelbench.guardrails.gateway import serve_gateway

    try:
        serve_gateway(
            upstream,
            config_path=config,
            host=host,
            port=port,
            api_key=api_key,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            announce=True,
        )
    except OtelbenchError as exc:
        typer.echo(f"otelbench: error: {exc}", err=True)
        raise typer.Exit(1) from None
