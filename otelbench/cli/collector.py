"""``otelbench collector`` and ``python -m otelbench.collector``: the embedded OTLP/HTTP
collector standalone, one command line for both (:func:`module_main` is the second's).

``STORE`` is a DuckDB file (created if absent) or a ClickHouse store URL: ``chdb:///abs/dir``
(ClickHouse in-process; this process holds the directory until it stops) or
``clickhouse://[user[:password]@]host[:port][/database]`` (a server) — see
:mod:`otelbench.store.clickhouse`. Access (``docs/security.md``), all off by default:
``--auth-token-file`` (or ``$OTELBENCH_RECEIVER_TOKEN``), ``--tls-cert``/``--tls-key``,
``--rate-limit``/``--rate-burst``. ``--max-body-bytes``, ``--max-decompressed-bytes``,
``--listen-fd`` and ``--log-level`` are accepted but not listed by ``--help`` (the options a
parent process sets).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Final

import typer

from otelbench.cli.options import TlsCert, TlsKey
from otelbench.collector.access import ENV_RECEIVER_TOKEN, Access
from otelbench.collector.receiver import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    STORE_ENV,
    Receiver,
    serve,
)
from otelbench.errors import ConfigError, OtelbenchError

__all__ = ["collector", "module_main"]

EXIT_OK: Final = 0
EXIT_CANNOT_RUN: Final = 2
PROTOCOL: Final = "protocol"
"""``ctx.obj`` key: run for a parent process (JSON lines on stdout, exit status 2 on errors)."""


class LogLevel(StrEnum):
    """``--log-level``: stderr's logging level (any case)."""

    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"


def _emit(event: dict[str, object]) -> None:
    with contextlib.suppress(BrokenPipeError):  # the parent stopped reading: nothing to tell it
        print(json.dumps(event), flush=True)


def collector(
    ctx: typer.Context,
    store: Annotated[
        str,
        typer.Option(
            help="Span store to write: a DuckDB file (created if absent), chdb:///abs/dir "
            "(ClickHouse in-process) or clickhouse://user:password@host:port/database (a "
            f"ClickHouse server; python -m otelbench.collector: default ${STORE_ENV})."
        ),
    ],
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for OTLP/HTTP (0 picks a free one).")] = 4318,
    rotel: Annotated[
        bool,
        typer.Option(
            help="Put rotel in front (collectors/README.md): OTLP/HTTP on --port and OTLP/gRPC "
            "on --grpc-port, forwarded to the embedded receiver on an internal port."
        ),
    ] = False,
    grpc_port: Annotated[int, typer.Option(help="With --rotel: port for OTLP/gRPC.")] = 4317,
    auth_token_file: Annotated[
        Path | None,
        typer.Option(
            help="Require 'Authorization: Bearer <token>' with the token in this file "
            "(default: $OTELBENCH_RECEIVER_TOKEN if set, else no authentication)."
        ),
    ] = None,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    rate_limit: Annotated[
        float | None,
        typer.Option(help="Requests per second allowed per client IP (beyond: HTTP 429)."),
    ] = None,
    rate_burst: Annotated[
        int | None,
        typer.Option(help="Requests a client IP may send at once (default: 2 s of --rate-limit)."),
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option(hidden=True, help="Largest request body accepted (default 16 MiB).")
    ] = DEFAULT_MAX_BODY_BYTES,
    max_decompressed_bytes: Annotated[
        int,
        typer.Option(
            hidden=True, help="Largest body accepted after decompression (default 64 MiB)."
        ),
    ] = DEFAULT_MAX_DECOMPRESSED_BYTES,
    listen_fd: Annotated[
        int | None,
        typer.Option(
            hidden=True,
            help="Serve on this inherited descriptor, a TCP socket bound and listening (the "
            "parent's; --host and --port are then its address).",
        ),
    ] = None,
    log_level: Annotated[
        LogLevel,
        typer.Option(hidden=True, case_sensitive=False, help="stderr log level (default WARNING)."),
    ] = LogLevel.WARNING,
) -> None:
    """Run the embedded OTLP/HTTP collector until interrupted (docs/security.md: access)."""
    from otelbench.collector.rotel import RotelCollector

    protocol = bool(ctx.obj and ctx.obj.get(PROTOCOL))
    logging.basicConfig(
        level=log_level.value, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    access = Access.from_options(
        token_file=auth_token_file,
        token_env_var=ENV_RECEIVER_TOKEN,
        tls_cert=tls_cert,
        tls_key=tls_key,
        rate_per_s=rate_limit,
        rate_burst=rate_burst,
    )

    def announce(receiver: Receiver) -> None:
        if protocol:
            _emit({"event": "ready", "host": receiver.host, "port": receiver.port,
                   "pid": os.getpid()})  # fmt: skip
            return
        scheme = "https" if receiver.tls is not None else "http"
        typer.echo(
            f"otelbench collector: receiver on {scheme}://{host}:{receiver.port} → "
            f"{receiver.writer.path}",
            err=True,
        )

    listening = _inherited_socket(listen_fd) if listen_fd is not None else None
    if not rotel:
        stats = serve(
            store,
            host=host,
            port=port,
            listening=listening,
            on_ready=announce,
            auth_token=access.token,
            tls=access.tls,
            rate_limit=access.rate_limit,
            max_body_bytes=max_body_bytes,
            max_decompressed_bytes=max_decompressed_bytes,
        )
    else:
        if listening is not None:
            raise ConfigError("--listen-fd is the receiver's own socket: not with --rotel")
        if access != Access():
            raise ConfigError(
                "--rotel forwards to the receiver unauthenticated: configure access on rotel "
                f"instead (no --auth-token-file, ${ENV_RECEIVER_TOKEN}, --tls-* or --rate-* with "
                "--rotel)"
            )

        def front(receiver: Receiver) -> RotelCollector:
            collector = RotelCollector(
                f"http://{host}:{receiver.port}", host=host, grpc_port=grpc_port, http_port=port
            )
            collector.start()
            typer.echo(
                f"otelbench collector: rotel on {collector.base_url} (OTLP/HTTP) and "
                f"{collector.grpc_endpoint} (OTLP/gRPC)",
                err=True,
            )
            return collector

        stats = serve(
            store,
            host=host,
            port=0,
            on_ready=announce,
            front=front,
            max_body_bytes=max_body_bytes,
            max_decompressed_bytes=max_decompressed_bytes,
        )
    if protocol:
        _emit(
            {
                "event": "stopped",
                "spans": stats.spans_accepted,
                "metric_points": stats.metric_points_accepted,
                "spans_rejected": stats.spans_rejected,
                "rejected": stats.rejected,
            }
        )


def _inherited_socket(fd: int) -> socket.socket:
    """The listening TCP socket at descriptor ``fd``; one clear error when it is not one."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError as err:
        raise ConfigError(f"--listen-fd {fd}: {err.strerror or err}") from err
    if sock.type != socket.SOCK_STREAM or not sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_ACCEPTCONN
    ):
        sock.detach()
        raise ConfigError(f"--listen-fd {fd} is not a listening TCP socket")
    return sock


def module_main(argv: Sequence[str] | None = None) -> int:
    """``python -m otelbench.collector``: :func:`collector` for a parent process; returns the
    exit status.

    Differences from ``otelbench collector`` (module docstring of :mod:`otelbench.collector`
    ``__main__``): ``--store`` defaults to ``$OTELBENCH_COLLECTOR_STORE``; a JSON line on stdout
    when it listens and when it stopped; an error that prevents it from running is one line on
    stderr and exit status 2.

    Example::

        sys.exit(module_main(["--store", "run.duckdb", "--port", "0"]))
    """
    command = typer.main.get_command(_app)
    defaults = {"store": os.environ[STORE_ENV]} if STORE_ENV in os.environ else {}
    try:
        rc = command.main(
            args=list(sys.argv[1:] if argv is None else argv),
            prog_name="python -m otelbench.collector",
            standalone_mode=False,
            obj={PROTOCOL: True},
            default_map=defaults,
        )
    except OtelbenchError as err:
        print(f"otelbench collector: {err}", file=sys.stderr, flush=True)
        return EXIT_CANNOT_RUN
    except typer.TyperException as exc:  # usage errors (typer bundles its own click)
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        return int(getattr(exc, "exit_code", EXIT_CANNOT_RUN))
    return rc if isinstance(rc, int) else EXIT_OK


_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
_app.command()(collector)
