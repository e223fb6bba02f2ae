"""``otelbench watch``: windowed metrics of live traffic on a Prometheus ``/metrics`` endpoint.

Every ``interval`` the watcher reads the server spans that ended within the last ``window``
(:func:`~otelbench.live.query.extract_window`), computes each source's metrics
(:mod:`otelbench.live.window`) and publishes them as metric families
(:mod:`otelbench.live.exposition`); a scrape encodes the families of the last refresh with
``prometheus-client`` — OpenMetrics 1.0 when its ``Accept`` header asks for it (Prometheus does),
else the Prometheus text format 0.0.4 — so a scrape never queries the store and the CPU spent on
queries is bounded by the interval. Retention (with ``retention_s``) deletes spans (and metric
points) older than that every ``retention_every_s`` and checkpoints, so DuckDB reuses the freed
blocks and the file stops growing once the retention period is full
(``tests/integration/test_watch_store.py``).

**Sizing** (measured on this 2-core machine, ``tests/integration/test_watch_store.py`` and a
refresh over synthetic hook spans): a request as the engine hooks store it — the server span
with 100 per-token offsets and its three phase spans — takes about **680 bytes** on disk after a
checkpoint, so a 24 h retention at 10 requests/s holds about 0.6 GB. A refresh costs about
**55–75 ms of CPU per 1,000 requests** in the window (0.08 s for 1k, 0.54 s for 10k); the
receiver's inserts wait only for the query part (0.05 s for 1k, 0.16 s for 10k), not for the
metrics.

**Who owns the store.** DuckDB allows one writer process and no reader beside it. So:

* ``--otlp HOST:PORT``: the watcher runs the embedded OTLP/HTTP receiver itself (the engine
  hooks and the probe export there) and queries the store it writes, in the same process, under
  the store's lock. Retention works only in this mode.
* without ``--otlp``: every refresh opens the store read-only, queries and closes it. While an
  ``otelbench collector`` writes it, the open reads a snapshot the collector takes on request
  (``POST /otelbench/snapshot``, announced in ``<store>.writer.json``; ``docs/security.md``):
  a copy of the committed store, 0.5 s at 130 MB and 1.5 s at 1 GB here, so refresh no faster
  than that. A store locked by a process that announced no snapshot endpoint fails the refresh,
  which is counted (``otelbench_live_refresh_errors_total``).

**A ClickHouse store** (``chdb:///dir`` or ``clickhouse://user:pw@host:port/db``, opened through
:func:`~otelbench.query.open_store`) is only read: a collector with the ClickHouse exporter
writes it, so ``--otlp`` is refused, and so is ``--retention`` — the table expires rows with its
own TTL (the exporter's ``ttl`` setting, or ``ALTER TABLE otel_traces MODIFY TTL``), which
watch, a reader, does not change. Each refresh opens the store, runs the window query in the
ClickHouse dialect (:mod:`otelbench.live.query`) and closes it; the store's bytes come from
``system.parts``. chdb serves one process per data directory: a refresh holds the directory for
its query only (tens of ms), so watch reads a chdb directory no other process holds — a snapshot,
or one a loader opens and closes between refreshes; a refresh that finds it held fails and is
counted, and the next one recovers. Live traffic at scale goes to a ClickHouse server.

Example::

    otelbench watch --store live.duckdb --otlp 127.0.0.1:4318 --listen 127.0.0.1:9464 \\
        --window 5m --slo-ttft-ms 500 --slo-tpot-ms 50 --retention 24h
    otelbench watch --store clickhouse://reader:secret@ch:8123/otel --window 5m

    with Watcher(store, WatchConfig(window=WindowConfig(window_s=60))) as w:
        w.refresh()
        print(w.metrics_text())
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from otelbench import semconv
from otelbench.errors import CollectorError, ConfigError, OtelbenchError, StoreError
from otelbench.lifecycle import Stops
from otelbench.live.exposition import WindowCollector, encode, families
from otelbench.live.query import LiveStore, delete_older_than, extract_window, store_bytes
from otelbench.live.window import SourceMetrics, WindowConfig, window_metrics
from otelbench.query.extract import is_store_url, open_store
from otelbench.store import SpanStore

__all__ = ["CLICKHOUSE_OTLP", "CLICKHOUSE_RETENTION", "WatchConfig", "Watcher", "serve_watch"]

CLICKHOUSE_OTLP = (
    "--otlp runs a receiver that writes a DuckDB store; watch only reads a ClickHouse store, "
    "which a collector with the ClickHouse exporter writes: drop --otlp"
)
CLICKHOUSE_RETENTION = (
    "--retention deletes spans from a DuckDB store; a ClickHouse store expires them with the "
    "table's TTL: set the exporter's ttl (e.g. ttl: 24h) or run ALTER TABLE otel_traces MODIFY "
    "TTL toDateTime(Timestamp) + INTERVAL 24 HOUR, and drop --retention"
)

_log = logging.getLogger("otelbench.live")


@dataclass(frozen=True)
class WatchConfig:
    """How the watcher runs: the metrics (``window``), the refresh and the retention."""

    window: WindowConfig = field(default_factory=WindowConfig)
    interval_s: float = 5.0
    retention_s: float | None = None
    retention_every_s: float = 600.0

    def __post_init__(self) -> None:
        if not self.interval_s > 0:
            raise ConfigError("--interval must be > 0")
        if self.retention_s is not None and self.retention_s < self.window.window_s:
            raise ConfigError("--retention must be at least the --window")
        if not self.retention_every_s > 0:
            raise ConfigError("the retention check interval must be > 0")


class Watcher(Stops):
    """Refreshes the window metrics on a schedule and serves them on ``/metrics``.

    ``store`` is an open, writable :class:`~otelbench.store.SpanStore` shared with a receiver in
    this process (queries hold its lock), or a DuckDB path or ClickHouse store URL
    (``chdb:///dir``, ``clickhouse://…``) opened for each refresh (read-only).
    ``clock`` returns the current Unix time in ns (tests pass their own).
    """

    def __init__(
        self,
        store: SpanStore | str | os.PathLike[str],
        config: WatchConfig,
        *,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.config = config
        self._store = store
        self._clock = clock
        self._metrics: tuple[SourceMetrics, ...] = ()
        self._collector = WindowCollector(families((), config.window))
        self.registry = CollectorRegistry()
        """The registry ``/metrics`` serves; it holds the window collector only."""
        self.registry.register(self._collector)
        self._errors = 0
        self._last_ok: tuple[int | None, float | None, int | None] = (None, None, None)
        """Window end, duration and spans of the last successful refresh (kept on failure)."""
        self._bytes: int | None = None
        self._deleted = 0
        self._last_retention: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: ThreadingHTTPServer | None = None
        self._server_thread: threading.Thread | None = None
        self.last_error: str | None = None
        if self.config.retention_s is not None and not isinstance(store, SpanStore):
            if is_store_url(store):
                raise ConfigError(CLICKHOUSE_RETENTION)
            raise ConfigError("retention needs the store open for writing (use --otlp)")

    # ---------------------------------------------------------------- computing
    @contextlib.contextmanager
    def _open(self) -> Iterator[LiveStore]:
        if isinstance(self._store, SpanStore):
            yield self._store
        else:
            with open_store(self._store) as store:
                yield store

    def refresh(self, now_unix_ns: int | None = None) -> str:
        """Recompute every metric over the window ending now; returns the new exposition
        (:meth:`metrics_text`).

        A failure is counted, logged and re-raised; the previous exposition stays served, with
        the refresh timestamp of the last successful refresh (so ``time() - timestamp`` alerts
        on staleness).
        """
        end = self._clock() if now_unix_ns is None else now_unix_ns
        start = end - int(self.config.window.window_s * 1e9)
        t0 = time.perf_counter()
        try:
            with self._open() as store:
                window = extract_window(
                    store,
                    start_unix_ns=start,
                    end_unix_ns=end,
                    class_attribute=self.config.window.class_attribute,
                )
                self._measure_bytes(store)
            metrics = window_metrics(window, self.config.window)
        except Exception as err:
            self._errors += 1
            self.last_error = f"{type(err).__name__}: {err}"
            self._publish(self._extra(*self._last_ok))
            raise
        self._last_ok = (end, time.perf_counter() - t0, len(window))
        return self._publish(self._extra(*self._last_ok), metrics.values())

    def _measure_bytes(self, store: LiveStore) -> None:
        """Update the store's size; a failure (e.g. no access to ``system.parts``) leaves the
        last size and the window's metrics stand."""
        try:
            self._bytes = store_bytes(store)
        except (OSError, StoreError) as err:
            _log.warning("cannot measure the store's size: %s", err)

    def _extra(
        self, end: int | None, elapsed: float | None, spans: int | None
    ) -> dict[str, float | None]:
        return {
            semconv.METRIC_LIVE_REFRESH_TIMESTAMP: end / 1e9 if end is not None else None,
            semconv.METRIC_LIVE_REFRESH_DURATION: elapsed,
            semconv.METRIC_LIVE_REFRESH_SPANS: spans,
            semconv.METRIC_LIVE_REFRESH_ERRORS: self._errors,
            semconv.METRIC_LIVE_STORE_BYTES: self._bytes,
            semconv.METRIC_LIVE_RETENTION_DELETED: self._deleted
            if self.config.retention_s is not None
            else None,
        }

    def _publish(
        self, extra: dict[str, float | None], metrics: Iterable[SourceMetrics] | None = None
    ) -> str:
        """Publish ``metrics`` (None: those of the last successful refresh) with ``extra``."""
        if metrics is not None:
            self._metrics = tuple(metrics)
        self._collector.publish(families(self._metrics, self.config.window, extra))
        return self.metrics_text()

    def apply_retention(self, now_unix_ns: int | None = None) -> int:
        """Delete spans older than the retention period; returns how many were deleted."""
        if self.config.retention_s is None or not isinstance(self._store, SpanStore):
            return 0
        now = self._clock() if now_unix_ns is None else now_unix_ns
        deleted = delete_older_than(self._store, now - int(self.config.retention_s * 1e9))
        self._deleted += deleted
        return deleted

    def metrics_text(self) -> str:
        """The last refresh in the Prometheus text format 0.0.4."""
        return generate_latest(self.registry).decode()

    # ---------------------------------------------------------------- running
    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except OtelbenchError as err:
                _log.warning("watch refresh failed: %s", err)
            except Exception:  # noqa: BLE001 - a bug must not stop /metrics being served
                _log.exception("watch refresh failed")
            now = time.monotonic()
            if self.config.retention_s is not None and (
                self._last_retention is None
                or now - self._last_retention >= self.config.retention_every_s
            ):
                self._last_retention = now
                try:
                    deleted = self.apply_retention()
                    if deleted:
                        _log.info("retention deleted %d spans", deleted)
                except OtelbenchError as err:
                    _log.warning("retention failed: %s", err)
            self._stop.wait(self.config.interval_s)

    def start(self, host: str = "127.0.0.1", port: int = 9464) -> Watcher:
        """Serve ``/metrics`` on ``host:port`` (0: a free port) and start refreshing."""
        watcher = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] == "/metrics":
                    body, ctype = encode(watcher.registry, self.headers.get("Accept"))
                    status = 200
                else:
                    body, status, ctype = b"otelbench watch: see /metrics\n", 404, "text/plain"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                _log.debug("%s - %s", self.address_string(), format % args)

        try:
            self._server = ThreadingHTTPServer((host, port), Handler)
        except OSError as err:
            raise CollectorError(
                f"cannot listen on {host}:{port}: {err.strerror or err}; choose another --listen"
            ) from err
        self._server.daemon_threads = True
        self._server_thread = threading.Thread(
            target=self._server.serve_forever, name="otelbench-watch-http", daemon=True
        )
        self._server_thread.start()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="otelbench-watch", daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        """The bound ``/metrics`` port."""
        if self._server is None:
            raise CollectorError("the watcher is not serving")
        return int(self._server.server_address[1])

    def stop(self) -> None:
        """Stop refreshing and serving."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def serve_watch(
    store: str | os.PathLike[str],
    config: WatchConfig,
    *,
    listen: tuple[str, int],
    otlp: tuple[str, int] | None = None,
) -> None:
    """Run the watcher (and, with ``otlp``, the receiver writing ``store``) until SIGINT or
    SIGTERM; must be called from the main thread.

    ``store`` is a DuckDB path or a ClickHouse store URL; a URL is refreshed once before
    serving, so a wrong URL, a missing or held store or a table that is not the exporter's is
    one error at start rather than a counter that only grows.
    """
    if is_store_url(store) and otlp is not None:
        raise ConfigError(CLICKHOUSE_OTLP)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    host, port = listen
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if otlp is not None:
            from otelbench.collector import Receiver

            with Receiver(store, otlp[0], otlp[1]) as receiver:
                _serve(Watcher(receiver.store, config), host, port, stop, receiver.port)
        elif is_store_url(store):
            watcher = Watcher(store, config)
            watcher.refresh()
            _serve(watcher, host, port, stop, None)
        else:
            if not Path(store).exists():
                raise StoreError(f"no span store at {store}; start with --otlp to create one")
            _serve(Watcher(store, config), host, port, stop, None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(
    watcher: Watcher, host: str, port: int, stop: threading.Event, otlp_port: int | None
) -> None:
    with watcher.start(host, port):
        where = f"; OTLP/HTTP on port {otlp_port}" if otlp_port is not None else ""
        print(
            f"otelbench watch: /metrics on http://{host}:{watcher.port}/metrics{where}", flush=True
        )
        while not stop.wait(1.0):
            pass
