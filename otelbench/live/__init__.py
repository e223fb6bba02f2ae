"""Continuous benchmarking beside live traffic: ``otelbench watch`` and ``otelbench probe``.

The flow: server spans (engine hooks, vLLM) → span store → :mod:`~otelbench.live.query`
(one window, by traffic source) → :mod:`~otelbench.live.window` (pure metrics) →
:mod:`~otelbench.live.exposition` (metric families; prometheus-client writes the text and
OpenMetrics formats) → :mod:`~otelbench.live.watch` (refresh loop,
``/metrics``, retention). :mod:`~otelbench.live.probe` sends the tagged benchmark stream;
:mod:`otelbench.cli.live` holds the two typer commands. Names are imported on first use, so
importing the commands stays cheap. The span store is the DuckDB file or, read only, a
ClickHouse store (``chdb:///dir``, ``clickhouse://…``): the window query exists in both dialects.

Example::

    from otelbench.live import WatchConfig, Watcher, WindowConfig

    with Watcher("live.duckdb", WatchConfig(window=WindowConfig(window_s=300))) as w:
        w.refresh()
        print(w.metrics_text())

    Watcher("clickhouse://reader@ch:8123/otel", WatchConfig()).refresh()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otelbench._lazy import lazy_attributes

if TYPE_CHECKING:
    from otelbench.live.probe import ProbeConfig, ProbeTagger, run_probe
    from otelbench.live.query import LiveWindow, delete_older_than, extract_window, store_bytes
    from otelbench.live.watch import WatchConfig, Watcher
    from otelbench.live.window import SourceMetrics, WindowConfig, source_metrics, window_metrics

__all__ = [
    "LiveWindow",
    "ProbeConfig",
    "ProbeTagger",
    "SourceMetrics",
    "WatchConfig",
    "Watcher",
    "WindowConfig",
    "delete_older_than",
    "extract_window",
    "run_probe",
    "source_metrics",
    "store_bytes",
    "window_metrics",
]

_LAZY = {
    "LiveWindow": "otelbench.live.query",
    "ProbeConfig": "otelbench.live.probe",
    "ProbeTagger": "otelbench.live.probe",
    "SourceMetrics": "otelbench.live.window",
    "WatchConfig": "otelbench.live.watch",
    "Watcher": "otelbench.live.watch",
    "WindowConfig": "otelbench.live.window",
    "delete_older_than": "otelbench.live.query",
    "extract_window": "otelbench.live.query",
    "run_probe": "otelbench.live.probe",
    "source_metrics": "otelbench.live.window",
    "store_bytes": "otelbench.live.query",
    "window_metrics": "otelbench.live.window",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
