"""Fixtures shared across test tiers. Real things only: in-memory OTel exporters, real servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.fixtures.scripted_server import ScriptedServer

# --------------------------------------------------------------------------------------------
# Client (otelbench.client)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def span_exporter() -> InMemorySpanExporter:
    """Finished spans of ``tracer_provider``, exported synchronously as each span ends."""
    return InMemorySpanExporter()


@pytest.fixture
def tracer_provider(span_exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    """An SDK tracer provider (not the global one) exporting to ``span_exporter``."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    yield provider
    provider.shutdown()


@pytest.fixture(scope="session")
def scripted_server() -> Iterator[ScriptedServer]:
    """The scripted OpenAI-compatible SSE server (tests/fixtures/scripted_server.py) in its own
    process, shared by the session; look its send log up by response id or script tag."""
    with ScriptedServer() as server:
        yield server
