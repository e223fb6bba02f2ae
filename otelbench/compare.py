"""Multi-system comparison from the ``report.json`` of independent runs (draft section 6).

``otelbench compare RUN …`` reads finished runs, groups them into **systems**, and compares
the systems metric by metric, with the first system as the baseline:

1. **Equivalence (6.1, 6.4).** A checklist of what must match between the runs: workload
   name and specification, seeds, API, load model, request count, test duration, warm-up,
   tokenizer declaration, timing method, metric definitions, model, SUT boundary, hardware and
   otelbench version. Each item is ``equal``, ``differs`` (with every system's values, and for
   nested declarations the dotted keys that differ) or ``not recorded``. Differences are listed
   as deviations, never fatal. The SUT's software and target are listed too: they identify the
   systems and are expected to differ. The comparison's own verdict (``compliance``, draft 2
   for test 6: :func:`otelbench.report.compliance.comparison_compliance`) judges 6.1's MUST —
   workload, seeds, boundary and load model equal, hardware equal or normalized per GPU — and
   4.4.2's RECOMMENDED reference tokenizer.
2. **Normalization (6.2).** Output tokens per second is the throughput of every run. When a
   system's GPU count is known (``--gpus SYSTEM=N``, or ``run.sut.hardware`` carrying one, see
   :func:`gpu_count_from_hardware`) the comparison adds output tokens per GPU-second = output
   tokens/s ÷ GPUs. A CPU-only system is stated as "no accelerator: not normalized per GPU".
   Cost normalization (tokens per dollar-hour) needs a price, which no report declares: it is
   stated as not done.
3. **Statistics (6.3).** Per system and metric: the mean of the per-run values, the sample
   standard deviation (ddof = 1) and a seeded percentile-bootstrap confidence interval of the
   mean (:func:`otelbench.metrics.bootstrap_ci`). Between each system and the baseline: the
   difference of the means, the relative difference, **Welch's t-test** (two-sided; the primary
   test, :func:`welch_t_test`) and a two-sided **permutation test** on the difference of the
   means (exact up to :data:`MAX_EXACT_PERMUTATIONS` splits, :func:`permutation_test`). Both
   need at least 3 runs per system (6.3); with fewer the table is still printed, without
   interval or test, and the shortfall is a deviation. p-values are per metric and not
   corrected for multiple comparisons.

Errors (a missing ``report.json``, unreadable JSON, another ``schema_version``, an unknown
system in ``--gpus``) are :class:`~otelbench.errors.ConfigError`: one line at the CLI.

Flow: :func:`parse_run_arguments` → :func:`load_run` (each report checked against its types)
→ :func:`compare_runs` (pure: ``compare.json``, typed by
:class:`~otelbench.model.compare.CompareResult`) →
:func:`otelbench.render.compare.render_compare_markdown`;
``otelbench compare`` (:func:`otelbench.cli.compare.compare_command`) does all of it and writes
``compare.json`` and ``compare.md``.

Usage::

    from pathlib import Path
    from otelbench.compare import compare_runs, load_run
    from otelbench.render.compare import render_compare_markdown

    runs = [load_run(Path(p), system=s) for s, p in [("a", "out/a1"), ("a", "out/a2"),
            ("a", "out/a3"), ("b", "out/b1"), ("b", "out/b2"), ("b", "out/b3")]]
    result = compare_runs(runs, gpus={"b": 1})
    print(render_compare_markdown(result))

The statistical functions (:func:`welch_t_test`, :func:`permutation_test`,
:func:`student_t_cdf`, :func:`regularized_incomplete_beta`) are pure and do no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import numpy as np

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.metrics.stats import (
    MAX_EXACT_PERMUTATIONS,
    PERMUTATION_RESAMPLES,
    bootstrap_ci,
    permutation_test,
    welch_t_test,
)
from otelbench.model import compare as ct
from otelbench.model import report as rt
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.load import load_report, report_file
from otelbench.render.compare import display, system_labels, values_text
from otelbench.render.format import number
from otelbench.report.compliance import comparison_compliance

__all__ = [
    "COMPARE_VERSION",
    "DEFAULT_GROUP_BY",
    "METRICS",
    "GpuCount",
    "MetricSpec",
    "RunReport",
    "compare_runs",
    "gpu_count_from_hardware",
    "load_run",
    "parse_run_arguments",
]

COMPARE_VERSION: Final = 1
"""The layout version of ``compare.json``."""

DEFAULT_GROUP_BY: Final = ("run.sut.software", "run.model", "run.target")
"""The default system identity: the SUT's software, the model and the target URL."""

DURATION_TOLERANCE: Final = 0.10
"""Test durations count as equal when the longest is at most 10 % above the shortest."""


# ---------------------------------------------------------------------------------------------
# Inputs: run arguments and report files
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunReport:
    """One run's ``report.json``, where it came from, and its system when named explicitly."""

    path: Path
    report: rt.Report
    system: str | None = None

    @property
    def run_id(self) -> str:
        """The run id (``run.id``)."""
        return self.report["run"]["id"]


def parse_run_arguments(arguments: Sequence[str]) -> list[tuple[str | None, Path]]:
    """``[SYSTEM=]PATH`` arguments as (system or None, path).

    An argument is split at its first ``=`` unless it names an existing path as a whole.

    >>> parse_run_arguments(["a=out/r1", "out/r2"])
    [('a', PosixPath('out/r1')), (None, PosixPath('out/r2'))]
    """
    out: list[tuple[str | None, Path]] = []
    for argument in arguments:
        name, sep, rest = argument.partition("=")
        if sep and not Path(argument).exists():
            if not name or not rest:
                raise ConfigError(f"run argument {argument!r}: expected SYSTEM=PATH or PATH")
            out.append((name, Path(rest)))
        else:
            out.append((None, Path(argument)))
    return out


def load_run(path: Path, *, system: str | None = None) -> RunReport:
    """Read a run's ``report.json`` from a run directory or the file itself
    (:func:`~otelbench.model.load.load_report`: checked, and in this version's shape).

    Raises :class:`~otelbench.errors.ConfigError` when the file is missing or unreadable, is not
    JSON, is not an otelbench run report, has a ``schema_version`` this otelbench cannot read, or
    departs from the report's types (so the comparison reads it as an ``rt.Report``).
    """
    return RunReport(path=report_file(path), report=load_report(path), system=system)


# ---------------------------------------------------------------------------------------------
# Report values
# ---------------------------------------------------------------------------------------------


def _group_value(report: rt.Report, path: str) -> Any:
    """The value at a dotted report ``path`` of ``--group`` (any key the user names, so not one
    the types can check: a key or step that is absent, or not an object, gives None)."""
    value: Any = report
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


# ---------------------------------------------------------------------------------------------
# Normalization per GPU (draft 6.2)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuCount:
    """A system's or run's GPU count for per-GPU normalization, and where it came from.

    ``count`` is None when unknown; 0 means CPU only (no accelerator).
    """

    count: int | None
    source: str


_GPU_KEY_PATTERN: Final = re.compile(r"\bgpu(?:s|_count)\s*[:=]\s*(\d+)\b", re.IGNORECASE)
_GPU_TEXT_PATTERN: Final = re.compile(
    r"(?<![\w.])(\d+)(?:\s*[x×]\s*|\s+)(?:[A-Za-z0-9][\w.-]*\s+){0,3}?GPUs?\b"
    r"(?!\s*(?:memory|mem|ram|vram)\b)",
    re.IGNORECASE,
)
_CPU_ONLY_PATTERN: Final = re.compile(r"\bno (?:accelerator|gpu)s?\b|\bcpu[ -]only\b", re.I)
_GPU_DICT_KEYS: Final = ("gpu_count", "gpus", "accelerator_count")


def gpu_count_from_hardware(hardware: Any) -> GpuCount:
    """The GPU count a run's ``run.sut.hardware`` declaration carries, if any.

    Recognized: a mapping with an integer ``gpu_count``, ``gpus`` or ``accelerator_count``;
    text with ``gpus=N`` / ``gpu_count: N``, or ``N GPU(s)`` / ``N x <up to 3 words> GPU(s)``
    (not followed by "memory"); text saying "no accelerator", "no GPU" or "CPU only" means 0.
    Several different counts in one text are ambiguous: unknown. Declare the count with
    ``--gpus SYSTEM=N`` when in doubt.

    >>> gpu_count_from_hardware("8x NVIDIA H100 80GB GPUs").count
    8
    >>> gpu_count_from_hardware("AMD EPYC (2 cores), 24 GiB memory, no accelerator").count
    0
    """
    if isinstance(hardware, Mapping):
        for key in _GPU_DICT_KEYS:
            value = hardware.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return GpuCount(value, f"run.sut.hardware.{key}")
        return GpuCount(None, "run.sut.hardware declares no GPU count")
    if not isinstance(hardware, str) or not hardware.strip():
        return GpuCount(None, "run.sut.hardware not recorded")
    counts = {int(m) for m in _GPU_KEY_PATTERN.findall(hardware)}
    if not counts:
        counts = {int(m) for m in _GPU_TEXT_PATTERN.findall(hardware)}
    if len(counts) == 1:
        return GpuCount(counts.pop(), f"run.sut.hardware: {hardware!r}")
    if len(counts) > 1:
        return GpuCount(None, f"run.sut.hardware is ambiguous ({sorted(counts)} GPUs)")
    if _CPU_ONLY_PATTERN.search(hardware):
        return GpuCount(0, f"run.sut.hardware: {hardware!r}")
    return GpuCount(None, "run.sut.hardware declares no GPU count")


# ---------------------------------------------------------------------------------------------
# Metrics compared
# ---------------------------------------------------------------------------------------------


Extract = Callable[[rt.Report, int | None], float | None]
"""A metric's value in a run's report, given the run's GPU count (None when unknown, 0 for
CPU); a float (:func:`~otelbench.render.format.number`: an int in report.json is the same
value)."""


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A metric compared between systems: one value per run."""

    key: str
    label: str
    unit: str
    better: Literal["lower", "higher"]
    """The direction that is an improvement."""
    source: str
    """Where the per-run value comes from in ``report.json``."""
    extract: Extract
    """The run's value from its report and its GPU count (None when unknown, 0 for CPU)."""


_Latency = Literal["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"]
_Quantile = Literal["p50", "p99"]
_QUANTILES: Final[tuple[_Quantile, ...]] = ("p50", "p99")


def _client_latency(metric: _Latency, q: _Quantile) -> Extract:
    def extract(report: rt.Report, gpus: int | None) -> float | None:
        return number(report["metrics"]["client"][metric][q])

    return extract


def _server_ttft_p50(report: rt.Report, gpus: int | None) -> float | None:
    server = report["metrics"].get("server")
    return None if server is None else number(server["ttft_ms"]["p50"])


def _output_tokens_per_s(report: rt.Report, gpus: int | None) -> float | None:
    return number(report["metrics"]["client"]["throughput"]["output_tokens_per_s"])


def _requests_per_s(report: rt.Report, gpus: int | None) -> float | None:
    return number(report["metrics"]["client"]["throughput"]["requests_per_s"])


def _error_rate(report: rt.Report, gpus: int | None) -> float | None:
    requests = report["run"]["requests"]
    if requests["total"] <= 0:
        return None
    return requests["failed"] / requests["total"]


def _per_gpu(report: rt.Report, gpus: int | None) -> float | None:
    rate = _output_tokens_per_s(report, gpus)
    if rate is None or gpus is None or gpus <= 0:
        return None
    return rate / gpus


def _latency(metric: _Latency, label: str) -> tuple[MetricSpec, ...]:
    name = metric.removesuffix("_ms")
    return tuple(
        MetricSpec(
            key=f"{name}_{q}_ms",
            label=f"{label} {q.upper()}",
            unit="ms",
            better="lower",
            source=f"metrics.client.{metric}.{q}",
            extract=_client_latency(metric, q),
        )
        for q in _QUANTILES
    )


METRICS: Final[tuple[MetricSpec, ...]] = (
    *_latency("ttft_ms", "TTFT"),
    *_latency("tpot_ms", "TPOT"),
    *_latency("itl_ms", "ITL"),
    *_latency("e2e_ms", "E2E"),
    MetricSpec(
        key="output_tokens_per_s",
        label="Output tokens/s",
        unit="tok/s",
        better="higher",
        source="metrics.client.throughput.output_tokens_per_s",
        extract=_output_tokens_per_s,
    ),
    MetricSpec(
        key="output_tokens_per_gpu_s",
        label="Output tokens per GPU-second",
        unit="tok/GPU-s",
        better="higher",
        source="metrics.client.throughput.output_tokens_per_s / GPU count (draft 6.2)",
        extract=_per_gpu,
    ),
    MetricSpec(
        key="requests_per_s",
        label="Requests/s",
        unit="req/s",
        better="higher",
        source="metrics.client.throughput.requests_per_s",
        extract=_requests_per_s,
    ),
    MetricSpec(
        key="server_ttft_p50_ms",
        label="Server TTFT P50",
        unit="ms",
        better="lower",
        source="metrics.server.ttft_ms.p50",
        extract=_server_ttft_p50,
    ),
    MetricSpec(
        key="error_rate",
        label="Error rate",
        unit="fraction",
        better="lower",
        source="run.requests.failed / run.requests.total",
        extract=_error_rate,
    ),
)
"""The metrics compared, in table order. A metric no run has is left out of the comparison."""


# ---------------------------------------------------------------------------------------------
# Equivalence checklist (draft 6.1, 6.4)
# ---------------------------------------------------------------------------------------------


def _workload(report: rt.Report) -> Any:
    workload = report["run"]["workload"]
    if workload is None:
        return None
    return {"name": workload.get("name"), "spec": workload.get("spec")}


def _seed(report: rt.Report) -> Any:
    workload = report["run"]["workload"]
    seeds = {
        "workload": None if workload is None else workload.get("seed"),
        "run": report["run"]["seed"],
    }
    return None if all(v is None for v in seeds.values()) else seeds


def _load_model(report: rt.Report) -> Any:
    load = report["run"]["load"]
    if load is None:
        return None
    return {k: v for k, v in load.items() if k != "requests"}


def _request_count(report: rt.Report) -> Any:
    load = report["run"]["load"]
    return {
        "configured": None if load is None else load.get("requests"),
        "sent": report["run"]["requests"]["total"],
    }


def _duration(report: rt.Report) -> Any:
    return round(float(report["run"]["duration_s"]), 1)


def _warmup(report: rt.Report) -> Any:
    warmup = report["run"]["warmup"]
    if warmup is None:
        return "none"
    if warmup["mode"] == "cold_start":
        return {"mode": warmup["mode"]}
    procedure = ("mode", "procedure", "floors", "concurrency", "probe")
    if "interrupted" in warmup:  # interrupted during its warm-up: no procedure recorded
        return {"mode": warmup["mode"], **dict.fromkeys(procedure[1:])}
    # The procedure, not its outcome (requests sent, duration, probe results vary by run).
    return {
        "mode": warmup["mode"],
        "procedure": warmup["procedure"],
        "floors": warmup["floors"],
        "concurrency": warmup["concurrency"],
        "probe": warmup["probe"],
    }


def _tokenizer(report: rt.Report) -> Any:
    tokenizer = report["run"]["tokenizer"]
    return "none declared" if tokenizer is None else tokenizer


def _timing(report: rt.Report) -> Any:
    server = report["metrics"].get("server")
    sources = {} if server is None else server["span_sources"]
    spans = sorted(k for k, v in sources.items() if v)
    itl = report["methodology"]["itl_method"]
    return {
        "timing": "client and server spans" if spans else "client only",
        "server_spans": spans,
        "itl_option": itl["option"],
        "server_itl_option": itl["server_option"],
        "chunk_token_source": itl["chunk_token_source"],
    }


def _definitions(report: rt.Report) -> Any:
    methodology = report["methodology"]
    return {
        "first_token_definition": methodology["first_token_definition"],
        "tpot_definition": methodology["tpot_definition"],
        "latency_population": methodology["latency_population"],
        "throughput_window": methodology["throughput_window"],
        "percentile_method": methodology["percentile_method"],
    }


@dataclass(frozen=True, slots=True)
class _CheckItem:
    key: str
    label: str
    draft: str
    extract: Callable[[rt.Report], Any]
    """The item's value in a run's report (a JSON value; None when not recorded)."""
    identity: bool = False
    """Identifies the systems (expected to differ): listed, never a deviation."""
    tolerance: float | None = None
    """Numeric values count as equal when max ≤ (1 + tolerance) · min."""


_CHECKLIST: Final[tuple[_CheckItem, ...]] = (
    _CheckItem("workload", "Workload (name and specification)", "6.1, 6.4", _workload),
    _CheckItem("seed", "Seed", "6.1", _seed),
    _CheckItem("api", "API", "6.1", lambda r: r["run"]["api"]),
    _CheckItem("load_model", "Load model and parameters", "6.1", _load_model),
    _CheckItem("request_count", "Request count", "5.1.5.1, 6.4", _request_count),
    _CheckItem(
        "duration", "Test duration (s, within 10 %)", "6.4", _duration, tolerance=DURATION_TOLERANCE
    ),
    _CheckItem("warmup", "Warm-up procedure", "4.5, 6.4", _warmup),
    _CheckItem("tokenizer", "Tokenizer declaration", "4.4.3", _tokenizer),
    _CheckItem("timing", "Timing method (server spans or client only)", "4.6.3, 4.7", _timing),
    _CheckItem("definitions", "Metric definitions and success criteria", "6.4", _definitions),
    _CheckItem("model", "Model", "6.1", lambda r: r["run"]["model"]),
    _CheckItem(
        "sut_boundary", "SUT boundary", "4.1, 6.1", lambda r: r["run"]["sut"].get("boundary")
    ),
    _CheckItem("hardware", "Hardware", "6.1, 6.2", lambda r: r["run"]["sut"].get("hardware")),
    _CheckItem(
        "otelbench_version", "otelbench version", "6.4", lambda r: r["run"]["otelbench_version"]
    ),
    _CheckItem(
        "software", "SUT software", "6.4", lambda r: r["run"]["sut"].get("software"), identity=True
    ),
    _CheckItem("target", "Target", "6.4", lambda r: r["run"]["target"], identity=True),
)


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    """Nested mappings as {dotted key: leaf}; a non-mapping value is the leaf at ``prefix``
    (a JSON value, only compared and shown)."""
    if isinstance(value, Mapping) and value:
        out: dict[str, object] = {}
        for k in sorted(value, key=str):
            out.update(_flatten(value[k], f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix or "value": value}


_V = TypeVar("_V")


def _distinct(values: Sequence[_V]) -> list[_V]:
    """``values`` less repeats, in order: two values are the same when their JSON is."""
    seen: dict[str, _V] = {}
    for v in values:
        seen.setdefault(_canonical(v), v)
    return list(seen.values())


def _check(item: _CheckItem, systems: Sequence[_System]) -> ct.ChecklistItem:
    per_system = {s.name: [item.extract(r.report) for r in s.runs] for s in systems}
    every = [v for values in per_system.values() for v in values]
    distinct = _distinct(every)
    status: ct.ChecklistStatus
    if all(v is None for v in every):
        status = "not recorded"
    elif item.tolerance is not None:
        numbers = [v for v in every if isinstance(v, int | float)]
        ok = (
            len(numbers) == len(every)
            and min(numbers) > 0
            and max(numbers) <= (1 + item.tolerance) * min(numbers)
        )
        status = "equal" if ok else "differs"
    else:
        status = "equal" if len(distinct) == 1 else "differs"
    differences: dict[str, dict[str, list[Any]]] = {}
    if status == "differs" and item.tolerance is None:
        flat = {name: [_flatten(v) for v in values] for name, values in per_system.items()}
        keys = sorted({k for runs in flat.values() for f in runs for k in f})
        for k in keys:
            leaves = {name: _distinct([f.get(k) for f in runs]) for name, runs in flat.items()}
            if len(_distinct([v for vs in leaves.values() for v in vs])) > 1:
                differences[k] = leaves
    return {
        "item": item.key,
        "label": item.label,
        "draft": item.draft,
        "identity": item.identity,
        "status": status,
        "values": {name: _distinct(values) for name, values in per_system.items()},
        "differences": differences,
    }


def _check_deviation(check: ct.ChecklistItem, label: Mapping[str, str]) -> str | None:
    if check["identity"] or check["status"] == "equal":
        return None
    head = f"{check['label']} {check['status']} (draft {check['draft']})"
    if check["status"] == "not recorded":
        return f"{head}: equivalence cannot be verified"
    return f"{head}: {values_text(check, label)}"


# ---------------------------------------------------------------------------------------------
# Grouping runs into systems
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _System:
    id: str
    name: str
    key: JsonObject
    runs: list[RunReport] = field(default_factory=list)


def _system_id(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else f"S{index + 1}"


def _group(runs: Sequence[RunReport], group_by: Sequence[str]) -> list[_System]:
    systems: dict[str, _System] = {}
    key: JsonObject
    for run in runs:
        if run.system is not None:
            name, key = run.system, {"system": run.system}
        else:
            key = {path: _group_value(run.report, path) for path in group_by}
            name = " | ".join(display(v) for v in key.values())
        if name not in systems:
            systems[name] = _System(id=_system_id(len(systems)), name=name, key=key)
        systems[name].runs.append(run)
    return list(systems.values())


def _resolve_gpus(
    system: _System, declared: Mapping[str, int]
) -> tuple[list[int | None], ct.GpuStatement]:
    """Per-run GPU counts of a system and the system's normalization statement."""
    for label in (system.name, system.id):
        if label in declared:
            n = declared[label]
            counts: list[int | None] = [n] * len(system.runs)
            found = [GpuCount(n, f"--gpus {label}={n}")]
            break
    else:
        found = [
            gpu_count_from_hardware(r.report["run"]["sut"].get("hardware")) for r in system.runs
        ]
        counts = [g.count for g in found]
    known = {c for c in counts if c is not None}
    if any(c is None for c in counts):
        status = "GPU count not declared: not normalized per GPU (give --gpus SYSTEM=N)"
        count: int | None = None
    elif known == {0}:
        status = "no accelerator: not normalized per GPU"
        count = 0
    elif 0 in known:
        status = "runs mix CPU-only and GPU hardware: not normalized per GPU"
        count = None
        counts = [None] * len(counts)
    else:
        count = known.pop() if len(known) == 1 else None
        status = "normalized: output tokens/s ÷ GPU count = output tokens per GPU-second"
    sources = _distinct([g.source for g in found])
    return counts, {"count": count, "per_run": counts, "source": sources, "status": status}


# ---------------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------------


def _verdict(
    better: Literal["lower", "higher"], difference: float, significant: bool | None
) -> str:
    if significant is None:
        return "not tested"
    if not significant:
        return "no significant difference"
    if difference == 0:
        return "no significant difference"
    return "better" if (difference < 0) == (better == "lower") else "worse"


def _system_stats(
    values: list[float], *, confidence: float, resamples: int, seed: int
) -> ct.SystemStats:
    n = len(values)
    if n == 0:
        return {"n": 0, "values": [], "mean": None, "sample_std": None, "ci": None}
    ci: ct.ConfidenceInterval | None = None
    if n >= draft.COMPARISON_MIN_RUNS:
        b = bootstrap_ci(values, confidence=confidence, resamples=resamples, seed=seed)
        ci = {"low": b.low, "high": b.high}
    return {
        "n": n,
        "values": values,
        "mean": float(np.mean(values)),
        "sample_std": float(np.std(values, ddof=1)) if n >= 2 else None,
        "ci": ci,
    }


def _comparison(
    spec: MetricSpec,
    base: ct.SystemStats,
    other: ct.SystemStats,
    *,
    vs: str,
    alpha: float,
    seed: int,
) -> ct.Comparison:
    out: ct.Comparison = {
        "vs": vs,
        "difference": None,
        "relative_difference": None,
        "welch": None,
        "permutation": None,
        "significant": None,
        "verdict": "not tested",
    }
    base_mean, other_mean = base["mean"], other["mean"]
    if base_mean is None or other_mean is None:
        out["verdict"] = "no data"
        return out
    difference = other_mean - base_mean
    out["difference"] = difference
    out["relative_difference"] = difference / base_mean if base_mean != 0 else None
    if base["n"] < draft.COMPARISON_MIN_RUNS or other["n"] < draft.COMPARISON_MIN_RUNS:
        out["verdict"] = f"not tested: fewer than {draft.COMPARISON_MIN_RUNS} runs"
        return out
    welch = welch_t_test(other["values"], base["values"])
    perm = permutation_test(other["values"], base["values"], seed=seed)
    out["welch"] = {"t": welch.t, "df": welch.df, "p": welch.p}
    out["permutation"] = {
        "p": perm.p,
        "exact": perm.exact,
        "permutations": perm.permutations,
        "min_p": perm.min_p,
    }
    significant = welch.p < alpha
    out["significant"] = significant
    out["verdict"] = _verdict(spec.better, difference, significant)
    return out


def _method(confidence: float, alpha: float, resamples: int, seed: int) -> ct.Method:
    return {
        "runs_required": draft.COMPARISON_MIN_RUNS,
        "per_system": (
            "mean of the per-run values; sample standard deviation (ddof=1); percentile-bootstrap "
            f"{confidence:.0%} confidence interval of the mean over runs "
            f"({resamples} resamples, numpy default_rng seed {seed}; otelbench.metrics."
            "bootstrap_ci); only with at least 3 runs (draft 6.3)"
        ),
        "difference": (
            "system mean - baseline mean; relative difference = difference / baseline mean"
        ),
        "primary_test": "welch_t",
        "welch_t": (
            "Welch's unequal-variances t-test, two-sided, over the per-run values: "
            "t = (mean - baseline mean) / sqrt(s^2/n + s_b^2/n_b), Welch-Satterthwaite degrees "
            "of freedom, p from Student's t CDF (regularized incomplete beta function); assumes "
            "the per-run values are roughly normal"
        ),
        "permutation": (
            "two-sided permutation test of |difference of means| over the per-run values, exact "
            f"(all splits) up to {MAX_EXACT_PERMUTATIONS} splits, else {PERMUTATION_RESAMPLES} "
            "random splits; assumption-free but coarse: with 3 + 3 runs its smallest p is 0.1"
        ),
        "significance": (
            f"significant when Welch's p < {alpha}; each metric is tested on its own, without "
            "correction for multiple comparisons"
        ),
        "confidence": confidence,
        "alpha": alpha,
        "bootstrap_resamples": resamples,
        "seed": seed,
    }


def compare_runs(
    runs: Sequence[RunReport],
    *,
    group_by: Sequence[str] | None = None,
    gpus: Mapping[str, int] | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    resamples: int = 10_000,
    seed: int = 0,
) -> ct.CompareResult:
    """Compare the systems the runs form (draft section 6); returns ``compare.json``
    (:class:`~otelbench.model.compare.CompareResult`).

    Runs with ``system`` set are grouped by it; the others by the values at the ``group_by``
    dotted report paths (default :data:`DEFAULT_GROUP_BY`). Systems keep the order of their
    first run; the first is the baseline. ``gpus`` maps a system's name or id (``A``, ``B``, …)
    to its GPU count (0 for CPU only) and overrides ``run.sut.hardware``.

    Raises :class:`~otelbench.errors.ConfigError` for no runs, a run given twice, or an
    unknown system in ``gpus``.

    Example::

        runs = [load_run(Path(d), system=d.split("-")[0]) for d in ["a-1", "a-2", "a-3", "b-1"]]
        result = compare_runs(runs, gpus={"b": 8})
        result["metrics"][0]["comparisons"]["b"]["verdict"]  # e.g. "not tested: fewer ..."
    """
    if not runs:
        raise ConfigError("no runs to compare: give run directories or report.json files")
    seen: dict[str, Path] = {}
    for run in runs:
        if run.run_id in seen:
            raise ConfigError(
                f"run {run.run_id} is given twice ({seen[run.run_id]} and {run.path}): "
                "each run counts once"
            )
        seen[run.run_id] = run.path
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be within (0, 1), got {confidence}")
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be within (0, 1), got {alpha}")
    group_by = tuple(group_by) if group_by else DEFAULT_GROUP_BY
    systems = _group(runs, group_by)
    declared = dict(gpus or {})
    labels = {s.name for s in systems} | {s.id for s in systems}
    unknown = sorted(set(declared) - labels)
    if unknown:
        known = ", ".join(f"{s.id} ({s.name})" for s in systems)
        raise ConfigError(f"--gpus names unknown system(s) {', '.join(unknown)}; known: {known}")
    for label, n in declared.items():
        if n < 0:
            raise ConfigError(f"--gpus {label}={n}: a GPU count must be >= 0")

    deviations: list[str] = []
    system_rows: list[ct.SystemRow] = []
    run_gpus: dict[str, list[int | None]] = {}
    for s in systems:
        counts, statement = _resolve_gpus(s, declared)
        run_gpus[s.name] = counts
        own = _distinct([d for r in s.runs for d in r.report["methodology"]["deviations"]])
        system_rows.append(
            {
                "id": s.id,
                "name": s.name,
                "key": s.key,
                "baseline": s is systems[0],
                "n_runs": len(s.runs),
                "runs": [{"id": r.run_id, "path": str(r.path)} for r in s.runs],
                "gpus": statement,
                "run_deviations": own,
            }
        )
        if len(s.runs) < draft.COMPARISON_MIN_RUNS:
            deviations.append(
                f"system {s.id} ({s.name}) has {len(s.runs)} run(s); draft 6.3 asks for at least "
                f"{draft.COMPARISON_MIN_RUNS} independent runs: no confidence interval or "
                "significance test for it"
            )
    if len(systems) == 1:
        deviations.append(
            "only one system: nothing to compare it with (name systems with SYSTEM=PATH or "
            "choose --group)"
        )
    elif all(len(s.runs) == 1 for s in systems) and len(runs) > 1:
        deviations.append(
            "every run formed its own system (their group keys all differ, e.g. a fresh port "
            "per launch): name systems with SYSTEM=PATH or choose --group"
        )

    metrics: list[ct.MetricResult] = []
    for spec in METRICS:
        per_system: dict[str, ct.SystemStats] = {}
        for s in systems:
            values = [
                v
                for r, g in zip(s.runs, run_gpus[s.name], strict=True)
                if (v := spec.extract(r.report, g)) is not None
            ]
            per_system[s.name] = _system_stats(
                values, confidence=confidence, resamples=resamples, seed=seed
            )
        if all(stats["n"] == 0 for stats in per_system.values()):
            continue
        base = per_system[systems[0].name]
        comparisons = {
            s.name: _comparison(
                spec, base, per_system[s.name], vs=systems[0].name, alpha=alpha, seed=seed
            )
            for s in systems[1:]
        }
        metrics.append(
            {
                "key": spec.key,
                "label": spec.label,
                "unit": spec.unit,
                "better": spec.better,
                "source": spec.source,
                "systems": per_system,
                "comparisons": comparisons,
            }
        )

    per_gpu = {row["name"]: row["gpus"] for row in system_rows}
    normalized = [n for n, g in per_gpu.items() if g["status"].startswith("normalized")]
    if normalized and len(normalized) < len(systems):
        missing = ", ".join(n for n in per_gpu if n not in normalized)
        deviations.append(
            f"per-GPU normalization (draft 6.2) is incomplete: not normalized for {missing}"
        )

    checklist = [_check(item, systems) for item in _CHECKLIST]
    label_of = system_labels([s.name for s in systems], [s.id for s in systems])
    deviations.extend(d for c in checklist if (d := _check_deviation(c, label_of)) is not None)

    body: ct.CompareBody = {
        "compare_version": COMPARE_VERSION,
        "baseline": systems[0].name,
        "group_by": list(group_by),
        "method": _method(confidence, alpha, resamples, seed),
        "systems": system_rows,
        "metrics": metrics,
        "normalization": {
            "throughput": "output tokens per second over each run's measurement window",
            "per_gpu": "output tokens per GPU-second = output tokens/s ÷ the system's GPU count "
            "(--gpus SYSTEM=N, else run.sut.hardware)",
            "systems": per_gpu,
            "cost": "not normalized: no price (dollars per hour) is declared",
        },
        "checklist": checklist,
        "deviations": deviations,
    }
    reports = [r.report for s in systems for r in s.runs]
    return {**body, "compliance": comparison_compliance(body, reports)}
