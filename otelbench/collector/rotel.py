"""rotel, a real OpenTelemetry collector from PyPI, in front of the embedded receiver.

rotel (``pip install 'otelbench[rotel]'``, a Rust binary ``rotel-agent`` shipped inside the
``rotel`` wheel) receives OTLP over gRPC and HTTP from clients and engine hooks, batches it, and
forwards it with its ``otlp`` exporter (HTTP, protobuf, gzip) to otelbench's embedded receiver,
which writes the DuckDB span store::

    clients, engine hooks ──OTLP gRPC :4317 / HTTP :4318──► rotel ──OTLP/HTTP──► Receiver ──► DuckDB

Example::

    from otelbench.collector import Receiver
    from otelbench.collector.rotel import RotelCollector

    with Receiver("run.duckdb", port=0) as receiver:
        with RotelCollector(f"http://127.0.0.1:{receiver.port}") as rotel:
            print("export OTLP/gRPC to", rotel.grpc_endpoint)
            print("export OTLP/HTTP to", rotel.http_traces_endpoint)

What rotel adds: a buffer and retries in front of the store (an exporter's batch is accepted by
rotel even while the receiver restarts; rotel retries with exponential back-off for
``retry_max_elapsed_s``), and one process that many senders share. What it does not: persist
anything. Its queue is in memory, so spans it holds when it is killed, or that it still cannot
deliver after ``retry_max_elapsed_s``, are lost (collectors/README.md has the measurements).

rotel is configured through ``ROTEL_*`` environment variables (each ``rotel-agent start`` flag
has one); :meth:`RotelCollector.rotel_env` is the set this launcher uses, the same keys as
``collectors/rotel/rotel.env``. Any ``ROTEL_*`` variable of the caller's environment is removed
first, so what runs is what the arguments say. OTLP logs are not received (the embedded receiver
stores traces and metrics only).

Errors: a missing binary or a bad argument is a :class:`~otelbench.errors.ConfigError`; a rotel
that exits or does not listen in time is a :class:`~otelbench.errors.CollectorError` with the
last lines of its log.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from typing import ClassVar, Final, Literal, Self

import httpx

from otelbench.errors import CollectorError, ConfigError, TargetUnreachable
from otelbench.sut.process import SUT_NICENESS, ManagedServer, check_port_free, free_port

__all__ = [
    "ROTEL_BINARY_ENV",
    "ROTEL_VERSION",
    "RotelCollector",
    "rotel_binary",
]

ROTEL_VERSION: Final = "0.0.1a15"
"""The rotel wheel otelbench is tested with (its binary reports ``rotel 0.0.1-alpha10``)."""
ROTEL_BINARY_ENV: Final = "OTELBENCH_ROTEL_AGENT"
"""Environment variable naming another ``rotel-agent`` binary than the installed wheel's."""

_ENV_PREFIX: Final = "ROTEL_"


def rotel_binary(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The ``rotel-agent`` executable: ``explicit``, else ``$OTELBENCH_ROTEL_AGENT``, else the
    one inside the installed ``rotel`` wheel. Raises :class:`ConfigError` when there is none.

    >>> rotel_binary().name
    'rotel-agent'
    """
    chosen = explicit if explicit is not None else os.environ.get(ROTEL_BINARY_ENV)
    if chosen is not None:
        path = Path(chosen)
    else:
        spec = importlib.util.find_spec("rotel")
        if spec is None or spec.origin is None:
            raise ConfigError(
                f"rotel is not installed: pip install 'rotel=={ROTEL_VERSION}' "
                "(or otelbench[rotel]), or set " + ROTEL_BINARY_ENV
            )
        path = Path(spec.origin).parent / "rotel-agent"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ConfigError(f"no executable rotel-agent at {path}")
    return path


def _duration(seconds: float, what: str) -> str:
    """``seconds`` as rotel's duration syntax, in whole milliseconds (``250ms``)."""
    if seconds <= 0:
        raise ConfigError(f"{what} must be positive, got {seconds}")
    return f"{max(1, round(seconds * 1000))}ms"


class RotelCollector(ManagedServer):
    """``rotel-agent start`` receiving OTLP on ``host`` and forwarding to ``exporter_endpoint``.

    ``exporter_endpoint`` is the embedded receiver's base URL (``http://127.0.0.1:4318``; rotel
    appends ``/v1/traces`` and ``/v1/metrics``). Ports 0 pick free ports at :meth:`start`.
    Batches are sent after ``batch_timeout_s`` or ``batch_max_size`` spans, whichever is first.
    A failed export is retried from ``retry_initial_backoff_s``, doubling up to
    ``retry_max_backoff_s``, and given up after ``retry_max_elapsed_s`` (the batch is then
    dropped and rotel logs ``Exporting failed, dropping data``). On :meth:`stop` rotel flushes
    what it holds; with the receiver unreachable it gives up after about 3 s and exits, and
    those spans are lost. ``niceness`` as for every launched server: spans carry their own
    timestamps, so a collector at lower priority delays delivery only, not what is measured.
    """

    kind: ClassVar[str] = "rotel"
    log_prefix: ClassVar[str] = "otelbench-rotel-"

    def __init__(
        self,
        exporter_endpoint: str,
        *,
        host: str = "127.0.0.1",
        grpc_port: int = 0,
        http_port: int = 0,
        binary: str | os.PathLike[str] | None = None,
        batch_max_size: int = 8192,
        batch_timeout_s: float = 0.2,
        compression: Literal["gzip", "none"] = "gzip",
        request_timeout_s: float = 5.0,
        retry_initial_backoff_s: float = 5.0,
        retry_max_backoff_s: float = 30.0,
        retry_max_elapsed_s: float = 300.0,
        log_path: str | os.PathLike[str] | None = None,
        niceness: int = SUT_NICENESS,
    ) -> None:
        super().__init__(log_path=log_path, niceness=niceness)
        url = httpx.URL(exporter_endpoint)
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigError(
                f"rotel's exporter endpoint must be http(s)://HOST:PORT, got {exporter_endpoint!r}"
            )
        if url.path.rstrip("/").endswith(("/v1/traces", "/v1/metrics")):
            raise ConfigError(
                f"give the receiver's base URL, without /v1/...: rotel appends the signal's path "
                f"(got {exporter_endpoint!r})"
            )
        if batch_max_size < 1:
            raise ConfigError(f"batch_max_size must be at least 1, got {batch_max_size}")
        if compression not in ("gzip", "none"):
            raise ConfigError(f"compression must be 'gzip' or 'none', got {compression!r}")
        for name, port in (("grpc_port", grpc_port), ("http_port", http_port)):
            if not 0 <= port <= 65535:
                raise ConfigError(f"{name} must be 0..65535, got {port}")
        self.exporter_endpoint = str(url).rstrip("/")
        self.host = host
        self.grpc_port = grpc_port
        self.http_port = http_port
        self.binary = rotel_binary(binary)
        self.batch_max_size = batch_max_size
        self.batch_timeout = _duration(batch_timeout_s, "batch_timeout_s")
        self.compression = compression
        self.request_timeout = _duration(request_timeout_s, "request_timeout_s")
        self.retry_initial_backoff = _duration(retry_initial_backoff_s, "retry_initial_backoff_s")
        self.retry_max_backoff = _duration(retry_max_backoff_s, "retry_max_backoff_s")
        self.retry_max_elapsed = _duration(retry_max_elapsed_s, "retry_max_elapsed_s")

    # ------------------------------------------------------------------ endpoints
    @property
    def base_url(self) -> str:
        """rotel's OTLP/HTTP receiver (exporters add ``/v1/traces``)."""
        return f"http://{self.host}:{self.http_port}"

    @property
    def http_traces_endpoint(self) -> str:
        """Where an OTLP/HTTP span exporter sends: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``."""
        return f"{self.base_url}/v1/traces"

    @property
    def grpc_endpoint(self) -> str:
        """Where an OTLP/gRPC exporter sends (plaintext): ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
        return f"http://{self.host}:{self.grpc_port}"

    # ------------------------------------------------------------------ ManagedServer
    def prepare(self) -> None:
        if self.grpc_port == 0:
            self.grpc_port = free_port(self.host)
        if self.http_port == 0:
            self.http_port = free_port(self.host)
            while self.http_port == self.grpc_port:
                self.http_port = free_port(self.host)
        check_port_free(self.host, self.grpc_port, "rotel's OTLP/gRPC receiver")
        check_port_free(self.host, self.http_port, "rotel's OTLP/HTTP receiver")

    def rotel_env(self) -> dict[str, str]:
        """The ``ROTEL_*`` settings this launcher gives rotel (one per ``start`` flag)."""
        env = {
            "ROTEL_OTLP_GRPC_ENDPOINT": f"{self.host}:{self.grpc_port}",
            "ROTEL_OTLP_HTTP_ENDPOINT": f"{self.host}:{self.http_port}",
            "ROTEL_OTLP_RECEIVER_LOGS_DISABLED": "true",
            "ROTEL_EXPORTER": "otlp",
            "ROTEL_OTLP_EXPORTER_ENDPOINT": self.exporter_endpoint,
            "ROTEL_OTLP_EXPORTER_PROTOCOL": "http",
            "ROTEL_OTLP_EXPORTER_COMPRESSION": self.compression,
            "ROTEL_OTLP_EXPORTER_REQUEST_TIMEOUT": self.request_timeout,
            "ROTEL_OTLP_EXPORTER_RETRY_INITIAL_BACKOFF": self.retry_initial_backoff,
            "ROTEL_OTLP_EXPORTER_RETRY_MAX_BACKOFF": self.retry_max_backoff,
            "ROTEL_OTLP_EXPORTER_RETRY_MAX_ELAPSED_TIME": self.retry_max_elapsed,
            "ROTEL_BATCH_MAX_SIZE": str(self.batch_max_size),
            "ROTEL_BATCH_TIMEOUT": self.batch_timeout,
            "ROTEL_LOG_FORMAT": "text",
        }
        if self.log_path is not None:
            # rotel writes a PID file even in the foreground: one per instance, beside the log
            env["ROTEL_PID_FILE"] = f"{self.log_path}.pid"
        return env

    def command(self) -> list[str]:
        return [str(self.binary), "start"]

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_ENV_PREFIX)}
        env.update(self.rotel_env())
        return env

    def is_ready(self, client: httpx.Client) -> bool:
        """Both receivers listen: the HTTP one answers (404 at ``/``), the gRPC port accepts."""
        client.get("/")  # any HTTP answer will do; a refused connection raises httpx.ConnectError
        try:
            with socket.create_connection((self.host, self.grpc_port), timeout=1.0):
                return True
        except OSError:
            return False

    def start(self, timeout: float = 30.0) -> Self:
        """Spawn rotel and wait until both receivers listen (about 0.1 s); return ``self``."""
        try:
            return super().start(timeout=timeout)
        except TargetUnreachable as err:
            raise CollectorError(str(err)) from err
        except OSError as err:
            raise CollectorError(f"rotel did not start: {err}") from err

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM: rotel flushes what it holds to the receiver (about 1 s), then exits."""
        super().stop(grace=grace)
