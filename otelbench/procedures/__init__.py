"""The draft's test procedures (section 5): sequences of load levels and their reports.

A procedure runs load levels — each one a benchmark run with its own run id — through ONE
embedded collector (all levels land in one ``spans.duckdb``) and, with ``--sut vllm-cpu``, one
launched vLLM; then it builds its report in the draft's reporting format for its section::

    otelbench.cli.test (otelbench test …, from each Params)  →  base.run_procedure
        session.ProcedureSession   collector (+ SUT), run_level × N, finalize from the store
        levels                     records → run report → the level's row (pure)
        planning / profiles        load levels, the max search, draft vs quick sizes (pure)
        ttft · throughput · tradeoff · itl · capacity   5.1 · 5.2 · 5.3 · 5.4 · 5.5
        fairness · prefix_cache · memory_pressure       5.6 · 5.7 · 5.8
        long_context · guardrail_overhead               5.9 · 5.10
        configurations             the SUT configurations 5.7 and 5.10 compare (restarts)
        fluidity                                        Etalon §4.2 capacity evaluation
        render                     procedure.md around each procedure's tables

Procedures are registered by name in :data:`PROCEDURES`: ``ttft`` (5.1), ``throughput``
(5.2), ``throughput-latency`` (5.3), ``itl`` (5.4), ``capacity`` (5.5), ``fairness`` (5.6),
``prefix-cache`` (5.7), ``memory-pressure`` (5.8), ``long-context`` (5.9),
``guardrail-overhead`` (5.10), ``fluidity`` (Etalon's capacity evaluation: the maximum rate
meeting a fluidity-index SLO, Etalon §4.2).

Example::

    from pathlib import Path
    from otelbench.loadgen.runner import RunConfig
    from otelbench.procedures import (ProcedureSpec, TradeoffParams, TradeoffProcedure,
                                      get_profile, placeholder_load, run_procedure)

    base = RunConfig(target="http://127.0.0.1:8000", model="tiny", load=placeholder_load())
    spec = ProcedureSpec(base=base, profile=get_profile("quick"), out_dir=Path("out/5.3"))
    result = run_procedure(TradeoffProcedure(TradeoffParams()), spec)
    result.result["knee_index"], result.result["levels"][0]["ttft_p99_ms"]
"""

from __future__ import annotations

from otelbench.procedures.base import (
    PROCEDURE_SCHEMA_VERSION,
    PROCEDURES,
    Procedure,
    ProcedureResult,
    ProcedureSpec,
    placeholder_load,
    register_procedure,
    run_procedure,
)
from otelbench.procedures.capacity import CapacityParams, CapacityProcedure
from otelbench.procedures.fairness import FairnessParams, FairnessProcedure
from otelbench.procedures.fluidity import FluidityParams, FluidityProcedure
from otelbench.procedures.guardrail_overhead import (
    GuardrailOverheadParams,
    GuardrailOverheadProcedure,
)
from otelbench.procedures.itl import ItlParams, ItlProcedure
from otelbench.procedures.levels import LEVEL_ROW_KEYS, level_row, run_data_from_outcome
from otelbench.procedures.long_context import LongContextParams, LongContextProcedure
from otelbench.procedures.memory_pressure import MemoryPressureParams, MemoryPressureProcedure
from otelbench.procedures.planning import (
    SWEEP_FRACTIONS,
    MaxSearch,
    OpenLoopLevels,
    RateRange,
    fraction_levels,
    open_loop_requests,
    search_max,
)
from otelbench.procedures.prefix_cache import PrefixCacheParams, PrefixCacheProcedure
from otelbench.procedures.profiles import PROFILES, Profile, get_profile
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.procedures.throughput import ThroughputParams, ThroughputProcedure
from otelbench.procedures.tradeoff import TradeoffParams, TradeoffProcedure, curve_points
from otelbench.procedures.ttft import TtftParams, TtftProcedure

__all__ = [
    "LEVEL_ROW_KEYS",
    "PROCEDURES",
    "PROCEDURE_SCHEMA_VERSION",
    "PROFILES",
    "SWEEP_FRACTIONS",
    "CapacityParams",
    "CapacityProcedure",
    "FairnessParams",
    "FairnessProcedure",
    "FluidityParams",
    "FluidityProcedure",
    "GuardrailOverheadParams",
    "GuardrailOverheadProcedure",
    "ItlParams",
    "ItlProcedure",
    "Level",
    "LongContextParams",
    "LongContextProcedure",
    "MaxSearch",
    "MemoryPressureParams",
    "MemoryPressureProcedure",
    "OpenLoopLevels",
    "PrefixCacheParams",
    "PrefixCacheProcedure",
    "Procedure",
    "ProcedureResult",
    "ProcedureSession",
    "ProcedureSpec",
    "Profile",
    "RateRange",
    "ThroughputParams",
    "ThroughputProcedure",
    "TradeoffParams",
    "TradeoffProcedure",
    "TtftParams",
    "TtftProcedure",
    "curve_points",
    "fraction_levels",
    "get_profile",
    "level_row",
    "open_loop_requests",
    "placeholder_load",
    "register_procedure",
    "run_data_from_outcome",
    "run_procedure",
    "search_max",
]
