"""``python -m otelbench.collector --store STORE [--host H] [--port P]``: the collector, standalone.

``STORE`` is a DuckDB file (created if absent) or a ClickHouse store URL: ``chdb:///abs/dir``
(ClickHouse in-process; this process holds the directory until it stops) or
``clickhouse://[user[:password]@]host[:port][/database]`` (a server) — see
:mod:`otelbench.store.clickhouse`. Without ``--store`` it is read from
``$OTELBENCH_COLLECTOR_STORE`` (a URL with a password stays out of ``ps``).

Access (``docs/security.md``), all off by default: ``--auth-token-file PATH`` (or
``$OTELBENCH_RECEIVER_TOKEN``) requires ``Authorization: Bearer <token>`` on every request;
``--tls-cert``/``--tls-key`` serve HTTPS; ``--rate-limit N [--rate-burst B]`` limits each client IP
to N requests a second (HTTP 429 with ``Retry-After`` beyond).

When it listens it prints one JSON line to stdout and flushes it, so a parent process can learn the
port::

    {"event": "ready", "host": "127.0.0.1", "port": 43117, "pid": 12345}

On SIGTERM or SIGINT it stops gracefully (in-flight batches are committed and answered) and prints::

    {"event": "stopped", "spans": 5120, "metric_points": 40, "spans_rejected": 0, "rejected": {}}

(A ClickHouse store keeps no metric points: the receiver answers them as rejected, in
``partial_success``, and counts them in ``GET /otelbench/stats`` as ``metric_points_rejected``.)

An error that prevents it from running (the file is not an otelbench store, the port is taken)
is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Sequence

from otelbench.collector.access import ENV_RECEIVER_TOKEN, Access
from otelbench.collector.receiver import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_PORT,
    Receiver,
    serve,
)
from otelbench.errors import OtelbenchError

__all__ = ["main"]

EXIT_OK = 0
EXIT_CANNOT_RUN = 2
STORE_ENV = "OTELBENCH_COLLECTOR_STORE"
"""The store when ``--store`` is not given (how a parent passes a URL with a password)."""


def _emit(event: dict[str, object]) -> None:
    with contextlib.suppress(BrokenPipeError):  # the parent stopped reading: nothing to tell it
        print(json.dumps(event), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the collector until SIGTERM/SIGINT; return the exit status.

    Example::

        sys.exit(main(["--store", "run.duckdb", "--port", "0"]))
    """
    parser = argparse.ArgumentParser(
        prog="python -m otelbench.collector",
        description="Receive OTLP/HTTP traces and metrics and store them in a span store.",
    )
    parser.add_argument(
        "--store",
        default=os.environ.get(STORE_ENV),
        required=STORE_ENV not in os.environ,
        help="span store: a DuckDB file (created if absent), chdb:///abs/dir or "
        f"clickhouse://[user[:password]@]host[:port][/database] (default: ${STORE_ENV}, which "
        "keeps a password off the command line)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = free)"
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help="largest request body accepted (default 16 MiB)",
    )
    parser.add_argument(
        "--max-decompressed-bytes",
        type=int,
        default=DEFAULT_MAX_DECOMPRESSED_BYTES,
        help="largest body accepted after decompression (default 64 MiB)",
    )
    parser.add_argument(
        "--auth-token-file",
        default=None,
        help=f"require 'Authorization: Bearer <token>' with the token in this file "
        f"(default: ${ENV_RECEIVER_TOKEN} if set, else no authentication)",
    )
    parser.add_argument("--tls-cert", default=None, help="serve HTTPS with this PEM certificate")
    parser.add_argument("--tls-key", default=None, help="the PEM private key of --tls-cert")
    parser.add_argument(
        "--rate-limit",
        type=float,
        default=None,
        help="requests per second allowed per client IP (default: no limit); beyond: HTTP 429",
    )
    parser.add_argument(
        "--rate-burst",
        type=int,
        default=None,
        help="requests a client IP may send at once (default: two seconds of --rate-limit)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level (default WARNING)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )

    def ready(receiver: Receiver) -> None:
        _emit({"event": "ready", "host": receiver.host, "port": receiver.port, "pid": os.getpid()})

    try:
        access = Access.from_options(
            token_file=args.auth_token_file,
            token_env_var=ENV_RECEIVER_TOKEN,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            rate_per_s=args.rate_limit,
            rate_burst=args.rate_burst,
        )
        stats = serve(
            args.store,
            args.host,
            args.port,
            max_body_bytes=args.max_body_bytes,
            max_decompressed_bytes=args.max_decompressed_bytes,
            on_ready=ready,
            auth_token=access.token,
            tls=access.tls,
            rate_limit=access.rate_limit,
        )
    except OtelbenchError as err:
        print(f"otelbench collector: {err}", file=sys.stderr, flush=True)
        return EXIT_CANNOT_RUN
    _emit(
        {
            "event": "stopped",
            "spans": stats.spans_accepted,
            "metric_points": stats.metric_points_accepted,
            "spans_rejected": stats.spans_rejected,
            "rejected": stats.rejected,
        }
    )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
