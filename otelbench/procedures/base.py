"""What every procedure shares: its spec, the registry, the run, the report envelope.

A procedure (one subclass of :class:`Procedure` per draft section, registered by name) runs its
load levels in a :class:`~otelbench.procedures.session.ProcedureSession`, then builds the
section's results from the levels' rows (computed from the store) and renders them::

    run_procedure(procedure, spec)
      ├─ session: collector (+ vLLM) ─ procedure.run(session) ─ levels
      ├─ session.finalize()            every level's report from the store → OUT/levels/NN/
      └─ procedure.build(levels)       → OUT/procedure.json (envelope + section's results)
         procedure.render(result)      → OUT/procedure.md   (the section's reporting format)
                                         OUT/procedure.html (its curve, links to the levels)

The envelope (``procedure.json``'s common keys): ``schema_version``, ``procedure``,
``draft_section``, ``title``, ``profile``, ``interrupted``, ``error`` (the error that stopped
it, or null: its partial report is written before the error is raised), ``parameters``,
``configuration`` (the 5.1.5.1-style configuration summary: SUT, model, hardware, workload,
warm-up, prefix caching, guardrails), ``levels`` (the section's levels, one row each:
:data:`~otelbench.procedures.levels.LEVEL_ROW_KEYS` plus ``index``, ``label``, ``report`` path
and the procedure's own keys), ``runs`` (every level run, a capacity probe included: index,
label, load, run id, report), ``started_unix``, ``finished_unix``, ``duration_s``, ``store``,
``deviations``, ``notes``, ``compliance`` (the procedure's own verdict over section 4's
statements and its section's, draft 2: ``otelbench.report.compliance.procedure_compliance``).
A section's own keys sit between ``configuration`` and ``runs``. :mod:`otelbench.model.procedure`
types them all: :class:`~otelbench.model.procedure.ProcedureReport` the envelope, one section
TypedDict per procedure (``Procedure[Params, Section]``'s ``Section``).

Example::

    spec = ProcedureSpec(base=config, profile=get_profile("quick"), out_dir=Path("out/ttft"))
    result = run_procedure(TtftProcedure(TtftParams(rate=2.0)), spec)
    result.markdown
"""

from __future__ import annotations

import abc
import itertools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Final, Generic, TypeVar, cast, final, get_args, get_origin

from otelbench.benchmark import VllmLaunch, warmup_settings
from otelbench.errors import ConfigError, OtelbenchError
from otelbench.loadgen.runner import LoadSpec, RunConfig
from otelbench.model.procedure import (
    ColdStart,
    LevelEntry,
    NamedWorkload,
    Parameters,
    ProcedureConfiguration,
    ProcedureReport,
    ProcedureWarmup,
    RunEntry,
    Verdict,
)
from otelbench.model.report import Report
from otelbench.procedures.configurations import SutConfiguration
from otelbench.procedures.planning import (
    RATE_GROWTH,
    MaxSearch,
    OpenLoopLevels,
    RateRange,
    open_loop_requests,
)
from otelbench.procedures.profiles import Profile
from otelbench.procedures.progress import ProcedureProgress
from otelbench.procedures.session import (
    NO_WARMUP_DEVIATION_PREFIX,
    Level,
    ProcedureInterrupted,
    ProcedureSession,
)
from otelbench.render.html import render_procedure_html
from otelbench.render.procedure import render_procedure
from otelbench.report import render_json
from otelbench.report.compliance import procedure_compliance
from otelbench.report.curve import procedure_curve

__all__ = [
    "PROCEDURES",
    "PROCEDURE_SCHEMA_VERSION",
    "LevelSizes",
    "LoadSearch",
    "Procedure",
    "ProcedureResult",
    "ProcedureSpec",
    "level_entry",
    "placeholder_load",
    "register_procedure",
    "run_procedure",
    "search_entries",
]

PROCEDURE_SCHEMA_VERSION: Final = 1
"""Version of the ``procedure.json`` shape; bumped on any incompatible change."""

SINGLE_RUN_DEVIATION: Final = (
    "each load level was run once: no repetition across independent runs and no confidence "
    "intervals (draft 6.3 asks for at least 3 runs for comparative claims)"
)


PER_CONFIGURATION: Final = "per SUT configuration (see the configurations)"


def placeholder_load() -> LoadSpec:
    """The ``load`` of a procedure's base RunConfig; every level replaces it."""
    return LoadSpec(mode="closed_loop", requests=1, concurrency=1)


@dataclass(frozen=True)
class ProcedureSpec:
    """Where and against what a procedure runs; ``base`` holds everything but the load."""

    base: RunConfig
    profile: Profile
    out_dir: Path
    launch_vllm_cpu: VllmLaunch | None = None
    span_wait_s: float | None = None
    gpus: int = 0
    """Accelerators of the SUT, for tokens per GPU-second (5.2.4.2); 0: none (CPU)."""
    configurations: tuple[SutConfiguration, ...] = ()
    """The SUT configurations a comparing procedure (5.7, 5.10) runs; empty: its defaults."""
    store: Path | str | None = None
    """The span store (default ``out_dir/spans.duckdb``): a DuckDB file or a ClickHouse URL."""
    otlp_endpoint: str | None = None
    """An external collector writing ``store`` (a ClickHouse server); None: the embedded one."""
    collector_port: int = 0
    """The embedded collector's loopback port; 0: a free one."""


ParamsT = TypeVar("ParamsT")
SectionT = TypeVar("SectionT")

RawParameters = dict[str, object]
"""A procedure's effective parameters as :meth:`Procedure.parameters` makes them: its ``Params``
fields (``dataclasses.asdict``: tuples, paths, numpy scalars among them) and what it derived;
:meth:`Procedure.effective_parameters` gives them as ``procedure.json`` holds them."""


class Procedure(abc.ABC, Generic[ParamsT, SectionT]):
    """One draft test procedure (5.x) with its setup parameters ``params`` (a ``Params``
    dataclass) and the section's results it builds (a TypedDict of
    :mod:`otelbench.model.procedure`): ``class TtftProcedure(Procedure[TtftParams,
    TtftSection])``; subclasses are registered with :func:`register_procedure`."""

    name: ClassVar[str]
    section: ClassVar[str]
    title: ClassVar[str]
    compares_configurations: ClassVar[bool] = False
    """True: the session starts no SUT; :meth:`run` calls ``session.use_configuration``."""
    params_type: ClassVar[type[Any]]
    """The ``Params`` dataclass of ``Procedure[Params, Section]``, whose fields are the
    options of ``otelbench test NAME``."""
    section_type: ClassVar[Any]
    """The ``Section`` TypedDict of ``Procedure[Params, Section]``: the section's keys of
    ``procedure.json`` (with its ``deviations``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Procedure:
                cls.params_type, cls.section_type = get_args(base)

    def __init__(self, params: ParamsT) -> None:
        self.params = params
        self.spec: ProcedureSpec | None = None
        self.notes: list[str] = []

    def bind(self, spec: ProcedureSpec) -> None:
        """Resolve the parameters against the profile (before the session starts)."""
        self.spec = spec

    @property
    def profile(self) -> Profile:
        assert self.spec is not None, "bind() the procedure first"
        return self.spec.profile

    def planned_levels(self) -> int | None:
        """How many levels the procedure plans (None: a search decides)."""
        return None

    @abc.abstractmethod
    def parameters(self) -> RawParameters:
        """The effective parameters, for the report (5.x.2 setup parameters)."""

    @final
    def effective_parameters(self) -> Parameters:
        """:meth:`parameters` as ``procedure.json`` holds them, JSON values only (a tuple as a
        list, a path as a string): what the report and the page show."""
        out: Parameters = json.loads(json.dumps(self.parameters(), default=_default))
        return out

    @abc.abstractmethod
    def run(self, session: ProcedureSession) -> None:
        """Run the levels (the session is open)."""

    @abc.abstractmethod
    def build(self, levels: list[Level]) -> SectionT:
        """The section's results from the finalized levels, with its ``deviations``."""

    @abc.abstractmethod
    def render(self, result: SectionT) -> list[str]:
        """Markdown lines of the section's reporting format (``result``: the whole
        ``procedure.json``, of which the section's keys are read)."""


class LevelSizes:
    """The sizes of an open-loop search or sweep: each from the procedure's ``params``'
    :class:`~otelbench.procedures.planning.OpenLoopLevels` block (``open_loop``) when given, else
    from its profile (5.2, 5.3, 5.10, fluidity); mix in before :class:`Procedure`."""

    profile: Profile

    def _params(self) -> Any:
        """The procedure's ``params`` (set by :class:`Procedure`)."""
        return getattr(self, "params")  # noqa: B009 (a mixin: no attribute of its own)

    def _sized(self) -> OpenLoopLevels:
        block = self._params().open_loop
        assert isinstance(block, OpenLoopLevels), "the procedure's params have no open_loop block"
        return block

    @property
    def duration_s(self) -> float:
        """Seconds per load level."""
        return float(self._sized().level_duration_s or self.profile.level_duration_s)

    @property
    def min_requests(self) -> int:
        """Fewest requests per load level."""
        return int(self._sized().min_level_requests or self.profile.min_level_requests)

    @property
    def probe_concurrency(self) -> int:
        """Concurrency of the closed-loop capacity probe."""
        return int(self._sized().probe_concurrency or self.profile.probe_concurrency)

    @property
    def probe_requests(self) -> int:
        """Requests of the closed-loop capacity probe."""
        return int(self._sized().probe_requests or self.profile.probe_requests)

    def open_loop_level(self, rate: float) -> LoadSpec:
        """An open-loop level at ``rate`` with the arrival process of the params, sized to run
        :attr:`duration_s` (at least :attr:`min_requests` requests)."""
        return LoadSpec(
            mode=self._sized().arrival,  # type: ignore[arg-type]
            requests=open_loop_requests(rate, self.duration_s, self.min_requests),
            rate=rate,
        )

    def sized_parameters(self) -> RawParameters:
        """The params as :meth:`Procedure.parameters` begins them: their fields, those of a
        :class:`~otelbench.procedures.planning.RateRange` or
        :class:`~otelbench.procedures.planning.OpenLoopLevels` block in the block's place (each
        option named once, at top level), the four sizes as they take effect."""
        params = self._params()
        values = asdict(params)
        flat = itertools.chain.from_iterable(
            values[f.name].items()
            if isinstance(getattr(params, f.name), RateRange | OpenLoopLevels)
            else [(f.name, values[f.name])]
            for f in fields(params)
        )
        return {
            **dict(flat),
            "level_duration_s": self.duration_s,
            "min_level_requests": self.min_requests,
            "probe_concurrency": self.probe_concurrency,
            "probe_requests": self.probe_requests,
        }


class LoadSearch(LevelSizes):
    """:class:`LevelSizes` of a procedure that searches for its highest passing load (5.2,
    fluidity): the :class:`~otelbench.procedures.planning.MaxSearch` once it runs and the
    bounds it derived, which the parameters report; mix in before :class:`Procedure`."""

    search: MaxSearch | None = None
    """The search, once :meth:`start_search` made it."""
    bounds: Mapping[str, float] = MappingProxyType({})
    """The capacity estimate and the search's bounds (rates or concurrencies), once known."""

    def search_parameters(self, load_model: str, variable: str, criterion: str) -> RawParameters:
        """The params as :meth:`Procedure.parameters` reports them: :meth:`sized_parameters`,
        :attr:`bounds`, the level budget, the ``load_model``, the search on ``variable`` (the
        searched load, in words) and the ``criterion`` a level passes by."""
        return {
            **self.sized_parameters(),
            **self.bounds,
            "max_levels": self.profile.search_max_levels,
            "load_model": load_model,
            "search": f"binary search on the {variable} (bracket ×{RATE_GROWTH}, then bisection)",
            "criterion": criterion,
        }

    def start_search(
        self,
        start: float,
        lo: float,
        hi: float,
        step: float,
        *,
        integer: bool = False,
        rel_tolerance: float = 0.0,
    ) -> MaxSearch:
        """The search over [``lo``, ``hi``] from ``start`` (clamped into it), bracketing by
        ×``RATE_GROWTH`` and bisecting down to ``step`` (and ``rel_tolerance``) within the
        profile's level budget; kept as :attr:`search`."""
        self.search = MaxSearch(
            start=min(max(start, lo), hi),
            lo=lo,
            hi=hi,
            integer=integer,
            growth=RATE_GROWTH,
            abs_tolerance=step,
            rel_tolerance=rel_tolerance,
            max_steps=self.profile.search_max_levels,
        )
        return self.search


P = TypeVar("P", bound=type[Procedure[Any, Any]])
PROCEDURES: Final[dict[str, type[Procedure[Any, Any]]]] = {}


def register_procedure(name: str, section: str, title: str) -> Callable[[P], P]:
    """Class decorator: register a procedure under ``name`` (``otelbench test NAME``), with the
    draft ``section`` it implements and the ``title`` of its report."""

    def register(cls: P) -> P:
        cls.name, cls.section, cls.title = name, section, title
        PROCEDURES[name] = cls
        return cls

    return register


@dataclass
class ProcedureResult:
    """What :func:`run_procedure` wrote: the JSON dict and Markdown of ``procedure.*``."""

    out_dir: Path
    result: ProcedureReport
    markdown: str
    levels: list[Level] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        return self.result["interrupted"]


def level_entry(level: Level, **extra: object) -> LevelEntry:
    """A level's row in ``procedure.json``: index, label, report path, the row, ``extra``.

    Typed as the shared :class:`~otelbench.model.procedure.LevelEntry`: what the procedure
    planned for the level (``level.meta``) and ``extra`` are the section's own keys, which its
    level type (``TradeoffLevel`` …) declares; here they are only passed on."""
    row = dict(level.row or {})
    entry: dict[str, object] = {
        "index": level.index,
        "label": level.label,
        "report": f"{level.dir_name}/report.json" if level.stored else None,
        **row,
        **level.meta,
        **extra,
    }
    return cast(LevelEntry, entry)


def search_entries(
    levels: list[Level],
    role: str,
    verdict_of: Callable[[Level], Verdict],
    notes: list[str],
) -> list[LevelEntry]:
    """The rows (:func:`level_entry`) of the levels a search ran (``meta["role"] == role``),
    each with its ``verdict`` recomputed from the stored spans; a level whose verdict differs
    from the live one the search went by (``meta["live_verdict"]``) gets a line in ``notes``."""
    entries = []
    for lv in levels:
        if lv.meta.get("role") != role:
            continue
        verdict = verdict_of(lv)
        if verdict["passed"] != lv.meta.get("live_verdict"):
            notes.append(
                f"level {lv.index}: the verdict from the stored spans ({verdict['passed']}) "
                f"differs from the live one the search used ({lv.meta.get('live_verdict')})"
            )
        entries.append(level_entry(lv, verdict=verdict))
    return entries


def _configuration(spec: ProcedureSpec, session: ProcedureSession) -> ProcedureConfiguration:
    base = session.base
    first = next((lv.report for lv in session.levels if lv.report is not None), None)
    run = first["run"] if first else None
    warmed = next((lv for lv in session.levels if lv.warmed), None)
    warmup: ProcedureWarmup | ColdStart | None = (
        {
            "before_level": warmed.index,
            "spec": None if base.warmup is None else warmup_settings(base.warmup),
            "outcome": warmed.report["run"]["warmup"] if warmed.report else None,
        }
        if warmed is not None
        else ({"cold_start": True} if base.warmup is None else None)
    )
    named: NamedWorkload = {"name": base.workload, "seed": base.seed}
    workload = (run["workload"] if run else None) or named
    configuration: ProcedureConfiguration = {
        "target": base.target,
        "model": base.model,
        "sut": base.sut,
        "target_reports": session.target_info,
        "workload": workload,
        "tokenizer": run["tokenizer"] if run else None,
        "request_options": {"ignore_eos": base.ignore_eos, "extra_body": base.extra_body},
        "warmup": warmup,
        "prefix_caching": (
            PER_CONFIGURATION
            if session.configurations
            else "as the SUT is configured (not changed by otelbench)"
        ),
        "guardrails": (
            PER_CONFIGURATION
            if session.configurations
            else (first["configuration"]["guardrails"] if first else None)
            or "none configured by otelbench"
        ),
        "gpus": spec.gpus,
    }
    if session.configurations:
        configuration["configurations"] = session.configurations
    return configuration


def _level_deviations(levels: list[Level]) -> list[str]:
    """The levels' own run-report deviations, each kind once, with the levels it applies to.

    Deviations that differ only in their figures (sample counts …) are one kind; the text shown
    is the first level's, and each level's report has its own figures.
    """
    kinds: dict[str, tuple[str, list[int], set[str]]] = {}
    warmed = any(lv.warmed for lv in levels)
    for level in levels:
        if level.report is None:
            continue
        for text in level.report["methodology"]["deviations"]:
            if warmed and str(text).startswith(NO_WARMUP_DEVIATION_PREFIX):
                continue  # the procedure warmed up once, before its first level
            key = _FIGURES.sub("#", str(text))
            kind = kinds.setdefault(key, (str(text), [], set()))
            kind[1].append(level.index)
            kind[2].add(str(text))
    out = []
    for text, idx, variants in kinds.values():
        if len(idx) == len(levels):
            where = "every level"
        else:
            where = "level" + ("s " if len(idx) > 1 else " ") + ", ".join(map(str, idx))
        figures = f" (figures of level {idx[0]})" if len(variants) > 1 else ""
        out.append(f"{where}: {text}{figures}")
    return out


_FIGURES: Final = re.compile(r"\d+(?:[.,]\d+)*")


def _lost_client_spans(levels: list[Level]) -> list[str]:
    """One deviation naming the levels whose client spans were lost on the way to the
    collector (the spool was full, or the collector refused them), with how many; none when
    every span arrived. Their stored runs lack those requests."""
    lost: dict[int, int] = {}
    for level in levels:
        telemetry = (level.report["run"].get("client_telemetry") if level.report else None) or {}
        n = telemetry.get("spans_dropped", 0) + telemetry.get("spans_rejected", 0)
        if n:
            lost[level.index] = n
    if not lost:
        return []
    where = ", ".join(f"level {index}: {n}" for index, n in lost.items())
    return [
        f"client spans lost on the way to the collector (spool full or refused), so missing "
        f"from the stored runs: {sum(lost.values())} ({where})"
    ]


def _runs(levels: list[Level]) -> list[RunEntry]:
    return [
        {
            "index": lv.index,
            "label": lv.label,
            "mode": lv.load.mode,
            "offered_rps": lv.load.rate,
            "concurrency": lv.load.concurrency,
            "requests": lv.load.requests,
            "run_id": lv.run_id,
            "warmed": lv.warmed,
            "interrupted": lv.interrupted,
            "report": f"{lv.dir_name}/report.json" if lv.stored else None,
        }
        for lv in levels
    ]


def _level_reports(levels: list[Level]) -> list[tuple[str, Report]]:
    """Every level's run report, labelled for the compliance evidence."""
    return [(f"level {lv.index} ({lv.label})", lv.report) for lv in levels if lv.report is not None]


def run_procedure(
    procedure: Procedure[Any, Any],
    spec: ProcedureSpec,
    *,
    progress: ProcedureProgress | None = None,
    write: Callable[[str], None] | None = None,
) -> ProcedureResult:
    """Run ``procedure`` per ``spec``: levels, per-level reports, ``procedure.json`` / ``.md``."""
    procedure.bind(spec)
    if progress is None:
        progress = ProcedureProgress(procedure.section, procedure.planned_levels())
        if write is not None:
            progress.write = write
    session = ProcedureSession(
        spec.out_dir,
        spec.base,
        launch_vllm_cpu=spec.launch_vllm_cpu,
        span_wait_s=spec.span_wait_s,
        on_status=progress.status,
        on_level_start=progress.level_started,
        on_result=progress.result,
        defer_sut=procedure.compares_configurations,
        store=spec.store,
        otlp_endpoint=spec.otlp_endpoint,
        collector_port=spec.collector_port,
    )
    interrupted = False
    failure: OtelbenchError | None = None
    with session:
        try:
            procedure.run(session)
        except ProcedureInterrupted:
            interrupted = True
            progress.status("interrupted: reporting the levels measured so far")
        except OtelbenchError as exc:  # reported below with what was measured, then raised
            failure = exc
    progress.finished()
    session.finalize()
    if not session.levels:
        raise failure or ConfigError("the procedure ran no load level")
    body = dict(procedure.build(session.levels))
    deviations = list(body.pop("deviations", []))
    deviations.append(SINGLE_RUN_DEVIATION)
    deviations += _level_deviations(session.levels)
    deviations += _lost_client_spans(session.levels)
    if interrupted:
        deviations.insert(0, "the procedure was interrupted; its results are partial")
    if failure is not None:
        deviations.insert(
            0, f"the procedure stopped on an error; its results are partial: {failure}"
        )
    finished = session.finished_unix or session.started_unix
    result = _jsonable(
        {
            "schema_version": PROCEDURE_SCHEMA_VERSION,
            "procedure": procedure.name,
            "draft_section": procedure.section,
            "title": procedure.title,
            "profile": spec.profile.name,
            "interrupted": interrupted,
            "error": None if failure is None else str(failure),
            "parameters": procedure.effective_parameters(),
            "configuration": _configuration(spec, session),
            **body,
            "runs": _runs(session.levels),
            "started_unix": session.started_unix,
            "finished_unix": finished,
            "duration_s": finished - session.started_unix,
            "store": session.store_display,
            "deviations": deviations,
            "notes": list(procedure.notes),
        }
    )
    result["compliance"] = procedure_compliance(result, _level_reports(session.levels))
    markdown = render_procedure(result, procedure.render(result))
    (spec.out_dir / "procedure.json").write_text(render_json(result))
    (spec.out_dir / "procedure.md").write_text(markdown)
    (spec.out_dir / "procedure.html").write_text(
        render_procedure_html(result, markdown, procedure_curve(result)), encoding="utf-8"
    )
    if failure is not None:
        raise failure
    return ProcedureResult(spec.out_dir, result, markdown, session.levels)


def _jsonable(value: Mapping[str, object]) -> ProcedureReport:
    """``procedure.json`` as its reader sees it (its ``compliance`` is added next): a
    round-trip through JSON, so that tuples, paths and numpy scalars are plain values."""
    out: ProcedureReport = json.loads(json.dumps(value, default=_default))
    return out


def _default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
