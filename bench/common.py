"""Pieces the benchmarks under bench/ share (the scripts put the repository root on sys.path)."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class CountingExporter(SpanExporter):
    """Counts finished spans and drops them: the SDK's span work without a network exporter."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass
