"""Pieces the benchmarks under bench/ share (the scripts put the repository root on sys.path)."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

REPO = Path(__file__).resolve().parents[1]


def machine(**versions: str) -> dict[str, Any]:
    """The ``machine`` block of a result JSON: cores, the load average when the benchmark ended
    (its numbers are as noisy as that), Python, the libraries measured (``versions``), the OS."""
    return {
        "cpus": os.cpu_count(),
        "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        **versions,
        "platform": platform.platform(),
    }


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds so far of process ``pid``, every thread (``/proc/PID/stat``, in
    clock ticks: 10 ms steps); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_result(path: Path, report: dict[str, Any]) -> None:
    """Write a benchmark's result JSON (creating its directory) and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


class CountingExporter(SpanExporter):
    """Counts finished spans and drops them: the SDK's span work without a network exporter."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass
