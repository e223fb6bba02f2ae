"""``python -m otelbench.collector --store FILE [--host H] [--port P]``: the collector, standalone.

When it listens it prints one JSON line to stdout and flushes it, so a parent process can learn the
port::

    {"event": "ready", "host": "127.0.0.1", "port": 43117, "pid": 12345}

On SIGTERM or SIGINT it stops gracefully (in-flight batches are committed and answered) and prints::

    {"event": "stopped", "spans": 5120, "metric_points": 40, "spans_rejected": 0, "rejected": {}}

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
        description="Receive OTLP/HTTP traces and metrics and store them in a DuckDB span store.",
    )
    parser.add_argument("--store", required=True, help="span store file (created if absent)")
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
        stats = serve(
            args.store,
            args.host,
            args.port,
            max_body_bytes=args.max_body_bytes,
            max_decompressed_bytes=args.max_decompressed_bytes,
            on_ready=ready,
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
