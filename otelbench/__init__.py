"""otelbench: OpenTelemetry-based instrumentation and benchmarking for LLM serving.

The flow (see ARCHITECTURE in the README): load generator → instrumented httpx client → target
(vLLM with engine hooks) → OTLP → collector → span store (DuckDB) → query layer → metrics → reports.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
