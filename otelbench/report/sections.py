"""The report's per-run analysis sections beyond the draft's core tables.

* ``metrics.fluidity`` — Etalon's fluidity-index and fluid token generation rate (Etalon §4);
* ``metrics.client.reasoning`` — reasoning-model phases: TTOT, think tokens, output-phase ITL
  (Meridian ADR-0005);
* ``metrics.classes`` — per-class latency, Jain's fairness index and starvation (draft 5.6.4);
* ``metrics.client.itl_shape`` — ITL modality and tail ratio (draft 5.4.4.3);
* ``metrics.server.engine_steps`` — tokens per engine step and the time between steps, when
  steps carry several tokens (draft 4.6.2-4.6.3);
* ``run.load_generator`` — the open-loop generator's schedule lag (draft 4.2.5).

Each is a pure function of the run's records (or of arrays already derived from them) that
returns a JSON-able dict — numbers, strings, lists, dicts, never NaN — or None when the section
does not apply to the run. The math is in :mod:`otelbench.metrics`; this module picks the
population, the time source and the units, and declares them in the section itself.
``docs/report-schema.md`` defines every key.

Usage::

    from otelbench.query import extract_run_data, open_store
    from otelbench.report.sections import fluidity_section

    with open_store("otelbench.duckdb") as runner:
        section = fluidity_section(extract_run_data(runner), prefill_deadline_s=0.5)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from otelbench import draft, semconv
from otelbench.arrays import F64
from otelbench.metrics import (
    ITL_SHAPE_PERCENTILES,
    AnyOrderStatistics,
    CountedOrderStatistics,
    EngineSteps,
    FluidRate,
    OrderStatistics,
    Ragged,
    Summary,
    consecutive_intervals,
    deadline_intervals,
    engine_steps,
    fit_prefill_time,
    fluid_token_generation_rate,
    fluidity_indices,
    group_std,
    isolated,
    itl_shape,
    jain_fairness_index,
    percentile,
    profile_groups,
    profiled_prefill_deadlines,
    reasoning_phases,
    starvation_rate,
    summarize,
    token_arrival_times,
)
from otelbench.model import report as rt
from otelbench.query import RunData

__all__ = [
    "DEFAULT_PREFILL_DEADLINE_S",
    "FLUID_RATE_PRECISION_S",
    "ITL_PERCENTILES",
    "MULTI_TOKEN_STEP_HANDLING",
    "ONE_TOKEN_PER_STEP",
    "PrefillDeadlineChoice",
    "classes_section",
    "client_itl_order",
    "client_itl_shape",
    "client_itl_summary",
    "client_itl_us",
    "client_jitter_us",
    "client_token_arrivals_us",
    "client_token_times",
    "derive_ahead",
    "derived",
    "engine_steps_section",
    "engine_steps_statement",
    "fluid_rate_of",
    "fluidity_deviations",
    "fluidity_distribution",
    "fluidity_indices_of",
    "fluidity_intervals",
    "fluidity_section",
    "fluidity_token_times",
    "input_tokens_of",
    "itl_shape_section",
    "load_generator_section",
    "prefill_deadline_of",
    "reasoning_section",
    "server_engine_steps",
    "server_finished",
    "server_itl_order",
    "server_itl_summary",
    "server_itl_us",
    "server_jitter_us",
    "server_token_offsets_us",
    "server_token_times",
    "short_summary_of",
    "summary_of",
]

TimelineSource = Literal["server", "client"]
"""Where the fluidity section's token times come from (``metrics.fluidity.source``)."""

DEFAULT_PREFILL_DEADLINE_S: Final = 1.0
"""The fixed prefill deadline ``D_p`` of the fluidity section (seconds) when none is given."""
FLUID_RATE_PRECISION_S: Final = 1e-4
"""Bisection precision of the fluid token generation rate's decode deadline (seconds)."""
ITL_PERCENTILES: Final = tuple(sorted({*draft.PERCENTILES, *ITL_SHAPE_PERCENTILES}))
"""The ITL percentiles the report reads: its summaries' and its ITL shape's."""

SERVER_TIMELINE: Final = (
    "server: Option C (draft 4.6.3) token times of the engine hooks' span "
    "(otelbench.server.token_offsets_us), µs from the request's arrival in the engine to the "
    "engine step that produced each token; the first interval is arrival → first token"
)
CLIENT_TIMELINE: Final = (
    "client: Option B (draft 4.6.3) token times from the content chunks' arrival at the load "
    "generator, µs since T_submit; the first interval is T_submit → first token (TTFT)"
)
SERVER_CHUNK_HANDLING: Final = (
    "none: every output token has its own engine-step time; tokens produced in one step "
    "(speculative decoding, multi-token steps) share it and give 0 intervals, which meet their "
    "deadline and add D_d of slack (Etalon §3.1) — there is no Option B zero-padding"
)
CLIENT_CHUNK_HANDLING: Final = (
    "Option B: a chunk of N tokens arriving at T gives T to all N tokens; its N - 1 zero "
    "intervals meet their deadlines and add slack, and the interval before the chunk carries "
    "the whole wait, so a stall counts its misses once. This is the stream as delivered "
    "(engine, detokenisation, SSE framing and network); with one_per_chunk token counts it is "
    "the fluidity of chunks, not tokens"
)
PREFILL_DEADLINE_DESCRIPTION: Final = (
    "a declared fixed D_p for every request, not Etalon's D_p(L) = prefill(L) + S (§4.1): that "
    "needs prefill times profiled in isolation per prompt length, which a plain run has not; "
    "a procedure test with an isolated prefill profile fits one (otelbench.metrics."
    "fit_prefill_time, prefill_deadlines). A first token ahead of D_p banks slack that later "
    "tokens may spend, so a generous D_p raises the index and lowers the fluid rate's D_d"
)
PROFILED_DEADLINE_DESCRIPTION: Final = (
    "Etalon's D_p(L) = prefill(L) + S (§4.1, Algorithm 1 line 2): prefill(L) = a + b·L + c·L² "
    "fitted by least squares to the first-token times of this run's requests that were alone "
    "from arrival to first token (isolation), S the scheduling slack. The fit is used within "
    "the profiled prompt lengths only: a prompt outside them takes the nearest profiled "
    "length's D_p, one of unknown length the shortest's. A first token ahead of D_p banks "
    "slack that later tokens may spend (Algorithm 1 carries it)"
)
PROFILE_SOURCES: Final[dict[TimelineSource, str]] = {
    "server": (
        "server: each isolated request's first token offset on the engine hooks' span "
        "(otelbench.server.token_offsets_us[0]: arrival in the engine → the engine step of its "
        "first token, the first interval of this section's timeline) against its prompt "
        "tokens (gen_ai.usage.prompt_tokens)"
    ),
    "client": (
        "client: each isolated request's TTFT (T_submit → first content token, the first "
        "interval of this section's timeline: network, API server and engine together) "
        "against its input tokens"
    ),
}
"""What the profiled ``D_p``'s prefill times are, per timeline (``prefill_deadline.source``)."""
PROFILE_ISOLATION: Final[dict[TimelineSource, str]] = {
    "server": (
        "a request is isolated when no other server span of this run (queued, prefilling or "
        "decoding; failed or not) overlapped its arrival → first token window on the server's "
        "clock (touching counts); preempted requests and prefix-cache hits (cache read "
        "tokens > 0) are left out. Only this run's requests are visible: traffic from outside "
        "the run, and a request whose server span is missing, are not"
    ),
    "client": (
        "a request is isolated when no other request of this run was in flight at the load "
        "generator (T_submit → last byte) during its T_submit → first token window (touching "
        "counts), the load generator's clock. Only this run's requests are visible: traffic "
        "from outside the run is not; prefix-cache hits are not visible on the client and stay "
        "in"
    ),
}
"""How ``prefill_deadline.isolation`` approximates Etalon's profile "in isolation" (§4.1)."""
PROFILE_GROUPING: Final = (
    f"the isolated requests, sorted by prompt length, split into groups of at least "
    f"{draft.FLUIDITY_PROFILE_REQUESTS} requests with disjoint length ranges (Etalon profiles "
    f"each prompt length with {draft.FLUIDITY_PROFILE_REQUESTS} isolated requests); a profile "
    "needs 3 groups, as a quadratic needs 3 lengths, else D_p is the fixed default"
)
REASONING_POPULATION: Final = (
    "successful requests with a think phase (otelbench.client.think_phase set). Requests "
    "without one have TTOT = TTFT (metrics.client.ttft_ms) and no think tokens"
)
REASONING_BOUNDARY: Final = (
    "a request's first output-phase token is the first token of the chunk at "
    "otelbench.client.output_phase_chunk: think tokens = the sum of the chunk token counts "
    "before that chunk (a chunk holding both the end marker and output text counts as output); "
    "an unterminated think phase has every token as think token and no "
    "output phase. Token times are Option B (draft 4.6.3), ms since T_submit"
)
CLASS_REFERENCE: Final = (
    "normalized latency x_i = a request's TTFT / the median TTFT of its own class in this same "
    "run. The draft (5.6.3 step 2, 5.6.4) normalizes by each class's median TTFT measured in "
    "isolation, which needs the fairness procedure's isolated baseline runs; with this run's "
    "class medians as reference, J measures the spread within classes, not the inflation one "
    "class suffers from another"
)


def _drop_nan(values: npt.ArrayLike) -> F64:
    a = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(a)
    return a if finite.all() else a[finite]  # no copy of 10M samples when all defined


def summary_of(values: npt.ArrayLike) -> rt.Summary:
    """The report's summary shape over the defined (finite) values."""
    return summarize(_drop_nan(values)).to_dict()


def short_summary_of(values: npt.ArrayLike) -> rt.ShortSummary:
    """The short form ``{count, p50, p95, p99}`` over the defined (finite) values."""
    v = _drop_nan(values)
    return {
        "count": int(v.size),
        "p50": percentile(v, 50),
        "p95": percentile(v, 95),
        "p99": percentile(v, 99),
    }


# ------------------------------------------------------------------------------------------
# Arrays the report and the HTML plots both derive from the records, derived once
# ------------------------------------------------------------------------------------------

_T = TypeVar("_T")
_DERIVED: dict[int, dict[Hashable, Any]] = {}


def derived(data: RunData, key: Hashable, compute: Callable[[], _T]) -> _T:
    """``compute()`` the first time it is asked for ``key`` of ``data``, the same object after.

    ``report_from_data`` and :func:`otelbench.render.html.plot_data` derive the same per-token
    arrays (token timelines, ITL, jitter, fluidity-indices: tens of millions of values at scale)
    from the same :class:`~otelbench.query.RunData`; each is computed once. The memo lives as
    long as ``data`` does. The arrays are shared: callers never modify them in place.
    """
    memo = _DERIVED.get(id(data))
    if memo is None:
        memo = _DERIVED[id(data)] = {}
        weakref.finalize(data, _DERIVED.pop, id(data), None)
    if key not in memo:
        memo[key] = compute()
    value: _T = memo[key]
    return value


def server_is_hook(data: RunData) -> npt.NDArray[np.bool_]:
    """``data.server.is_hook()``: which server spans are the engine hooks' (derived once)."""
    return derived(data, "server_is_hook", data.server.is_hook)


def server_finished(data: RunData) -> npt.NDArray[np.bool_]:
    """``~data.server.cut()``: the server spans whose timing is whole, those of the requests the
    engine finished (and spans without the hooks' end marking, as before it existed). The
    server's latency summaries, ITL, preemptions and fluidity cover these; a request cut short
    (cancelled, aborted, failed) is counted in ``metrics.server.request_ends`` instead."""
    return derived(data, "server_finished", lambda: ~data.server.cut())


def client_token_arrivals_us(data: RunData) -> Ragged:
    """Option B token times of every client request (µs since T_submit)."""
    c = data.client
    return derived(
        data,
        "client_token_arrivals_us",
        lambda: token_arrival_times(c.chunk_offset_us, c.chunk_tokens, c.chunk_bounds),
    )


def client_itl_us(data: RunData) -> Ragged:
    """Client ITL (Option B, draft 5.4.3) of the successful requests, µs."""
    return derived(
        data,
        "client_itl_us",
        lambda: consecutive_intervals(client_token_arrivals_us(data).select(data.client.ok)),
    )


def client_jitter_us(data: RunData) -> F64:
    """Per successful request, the population std of its client ITL (draft 5.4.4.2), µs."""
    return derived(data, "client_jitter_us", lambda: group_std(client_itl_us(data)))


def server_token_offsets_us(data: RunData) -> Ragged:
    """Every server span's token offsets (Option C, µs since arrival) as float64."""
    s = data.server
    return derived(
        data,
        "server_token_offsets_us",
        lambda: Ragged(s.token_offset_us.astype(np.float64), s.token_bounds),
    )


def _server_itl_rows(data: RunData) -> npt.NDArray[np.bool_]:
    """The server spans of the server ITL: joined engine-hook spans with token offsets of the
    requests the engine finished (:func:`server_finished`)."""
    s = data.server
    tokens = server_token_offsets_us(data)
    hook = server_is_hook(data) & server_finished(data)
    return (s.client_index >= 0) & hook & (tokens.lengths() > 0)


def server_itl_us(data: RunData) -> Ragged:
    """Server ITL (Option C) of :func:`_server_itl_rows`' spans, µs."""
    return derived(
        data,
        "server_itl_us",
        lambda: consecutive_intervals(server_token_offsets_us(data).select(_server_itl_rows(data))),
    )


def server_engine_steps(data: RunData) -> EngineSteps:
    """The engine steps (:func:`otelbench.metrics.engine_steps`) of the server ITL's spans."""
    return derived(
        data,
        "server_engine_steps",
        lambda: engine_steps(server_token_offsets_us(data).select(_server_itl_rows(data))),
    )


def server_jitter_us(data: RunData) -> F64:
    """Per joined engine-hook span with offsets, the population std of its server ITL, µs."""
    return derived(data, "server_jitter_us", lambda: group_std(server_itl_us(data)))


def client_itl_ms(data: RunData) -> F64:
    """:func:`client_itl_us`'s intervals in ms."""
    return derived(data, "client_itl_ms", lambda: client_itl_us(data).values / 1000.0)


def server_itl_ms(data: RunData) -> F64:
    """:func:`server_itl_us`'s intervals in ms."""
    return derived(data, "server_itl_ms", lambda: server_itl_us(data).values / 1000.0)


def _itl_order(itl_us: F64, itl_ms: Callable[[], F64]) -> AnyOrderStatistics:
    """The order statistics of ITL samples in ms, ``itl_us / 1000.0``: counted from the µs
    (:class:`CountedOrderStatistics`: whole µs, the differences of integer µs offsets), else,
    for samples that are not whole µs or span too wide a range, selected from ``itl_ms()``
    (:class:`OrderStatistics`, at :data:`ITL_PERCENTILES`). The same percentiles either way."""
    counted = CountedOrderStatistics.of_integers(itl_us, 1000.0)
    return counted if counted is not None else OrderStatistics.of(itl_ms(), ITL_PERCENTILES)


def client_itl_order(data: RunData) -> AnyOrderStatistics:
    """:func:`client_itl_ms`'s order statistics (:func:`_itl_order`): the ITL percentiles of
    ``metrics.client``, its ``itl_shape`` and the HTML's ITL histogram read them (one counting
    or selection pass over millions of values)."""
    return derived(
        data,
        "client_itl_order",
        lambda: _itl_order(client_itl_us(data).values, lambda: client_itl_ms(data)),
    )


def server_itl_order(data: RunData) -> AnyOrderStatistics:
    """:func:`server_itl_ms`'s order statistics (as :func:`client_itl_order`)."""
    return derived(
        data,
        "server_itl_order",
        lambda: _itl_order(server_itl_us(data).values, lambda: server_itl_ms(data)),
    )


def fluidity_intervals(data: RunData) -> tuple[Ragged, TimelineSource, Ragged]:
    """:func:`fluidity_token_times` and their deadline intervals (Etalon §4.1)."""

    def compute() -> tuple[Ragged, TimelineSource, Ragged]:
        times, source = fluidity_token_times(data)
        return times, source, deadline_intervals(times)

    return derived(data, "fluidity_intervals", compute)


def fluidity_indices_of(
    data: RunData, prefill_deadline_s: float | None, decode_deadline_s: float
) -> F64:
    """The fluidity-index of every request of :func:`fluidity_intervals` (Etalon §4.1) at a
    decode deadline, with the prefill deadline :func:`prefill_deadline_of` gives for
    ``prefill_deadline_s`` (a fixed one, or None: profiled where the run allows)."""
    intervals = fluidity_intervals(data)[2]
    return derived(
        data,
        ("fluidity_indices", prefill_deadline_s, decode_deadline_s),
        lambda: fluidity_indices(
            intervals, prefill_deadline_of(data, prefill_deadline_s).seconds, decode_deadline_s
        ),
    )


def client_itl_summary(data: RunData) -> Summary:
    """:func:`client_itl_ms` summarized (``metrics.client.itl_ms``)."""
    return derived(
        data,
        "client_itl_summary",
        lambda: summarize(client_itl_ms(data), order=client_itl_order(data)),
    )


def server_itl_summary(data: RunData) -> Summary:
    """:func:`server_itl_ms` summarized (``metrics.server.itl_ms``)."""
    return derived(
        data,
        "server_itl_summary",
        lambda: summarize(server_itl_ms(data), order=server_itl_order(data)),
    )


def client_itl_shape(data: RunData) -> rt.ItlShape:
    """``metrics.client.itl_shape``: :func:`itl_shape_section` of :func:`client_itl_ms`."""
    return derived(
        data,
        "client_itl_shape",
        lambda: itl_shape_section(
            client_itl_ms(data), order=client_itl_order(data), std=client_itl_summary(data).std
        ),
    )


def derive_ahead(data: RunData, prefill_deadline_s: float | None) -> None:
    """Derive the report's per-token arrays of ``data`` and what it reads of them in two threads
    before it is built, as four tasks: the fluidity timeline (:func:`fluidity_intervals`) and
    the engine's ITL (:func:`server_itl_summary`) at once, then the client's ITL
    (:func:`client_itl_shape`, :func:`client_jitter_us`) and the engine's jitter
    (:func:`server_jitter_us`) in the thread that is free first, the fluidity-indices and fluid
    token generation rate (:func:`fluid_rate_of`, at the default fluidity and request fraction)
    in the other. Measured at 10M token offsets, each thread then has about half of the work.

    numpy releases the GIL in its passes over millions of values, so on two cores the report
    waits for the longer of the two instead of both. The tasks fill disjoint keys of the
    :func:`derived` memo (made here, before they start, with what two of them read at once:
    which server spans are the hooks', which the engine finished, and the engine's token
    offsets); a task that reads
    another's waits for it, and that one runs already (submitted first): the client's ITL waits
    for the timeline, which derives the client's token times when the engine's are missing. An
    error in one is raised here, as the report would raise it when it derived the same array
    itself.
    """
    server_is_hook(data)
    server_finished(data)
    server_token_offsets_us(data)

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="otelbench-derive") as pool:
        timeline = pool.submit(fluidity_intervals, data)
        server_itl = pool.submit(server_itl_summary, data)

        def client() -> None:
            timeline.result()  # which may have derived the client's token times
            client_itl_shape(data)
            client_jitter_us(data)
            server_itl.result()
            server_jitter_us(data)

        def fluidity() -> None:
            if len(timeline.result()[0]):
                fluid_rate_of(data, prefill_deadline_s)

        tasks: list[Future[Any]] = [
            timeline,
            server_itl,
            pool.submit(client),
            pool.submit(fluidity),
        ]
        for task in tasks:
            task.result()


# ------------------------------------------------------------------------------------------
# metrics.fluidity (Etalon §4)
# ------------------------------------------------------------------------------------------


def _server_fluidity_rows(data: RunData) -> npt.NDArray[np.bool_]:
    """The server spans of the fluidity timeline: joined engine-hook spans with token offsets
    of successful requests the engine finished."""
    s = data.server
    joined = s.client_index >= 0
    keep = joined & server_is_hook(data) & (np.diff(s.token_bounds) > 0) & server_finished(data)
    keep[joined] &= data.client.ok[s.client_index[joined]]
    return keep


def _client_fluidity_rows(data: RunData) -> npt.NDArray[np.bool_]:
    """The client requests of the client timeline: successful ones with a content token."""
    return data.client.ok & (client_token_arrivals_us(data).lengths() > 0)


def server_token_times(data: RunData) -> Ragged | None:
    """Option C token times (seconds since arrival) of the successful requests that have them."""
    keep = _server_fluidity_rows(data)
    if not np.any(keep):
        return None
    times = Ragged(server_token_offsets_us(data).values / 1e6, data.server.token_bounds)
    return times.select(keep)


def fluidity_token_times(data: RunData) -> tuple[Ragged, TimelineSource]:
    """The token times fluidity is computed from, and their source: the engine's (Option C,
    ``"server"``) when any successful request has them, else the client's (``"client"``)."""
    times = server_token_times(data)
    if times is not None:
        return times, "server"
    return client_token_times(data), "client"


def client_token_times(data: RunData) -> Ragged:
    """Option B token times (seconds since T_submit) of the successful requests with a token."""
    tokens = client_token_arrivals_us(data).select(_client_fluidity_rows(data))
    return Ragged(tokens.values / 1e6, tokens.bounds)


def input_tokens_of(data: RunData) -> F64:
    """Each client request's input tokens: the client's usage, else its server span's prompt
    tokens (NaN where neither has them)."""

    def compute() -> F64:
        out = data.client.input_tokens.copy()
        s = data.server
        joined = s.client_index >= 0
        rows = s.client_index[joined]
        fill = np.isnan(out[rows])
        out[rows[fill]] = s.prompt_tokens[joined][fill]
        return out

    return derived(data, "input_tokens", compute)


@dataclass(frozen=True, slots=True)
class _Occupancy:
    """Every request of one side of the wire as an interval on that side's clock (ns since the
    earliest start), which of them the fluidity timeline evaluates (``rows``, in its order),
    those requests' prompt lengths, and why some are no prefill profile point."""

    start_ns: F64
    end_ns: F64
    rows: npt.NDArray[np.bool_]
    prompt_tokens: F64
    left_out: dict[str, npt.NDArray[np.bool_]]


def _relative_ns(start: npt.NDArray[np.int64], end: npt.NDArray[np.int64]) -> tuple[F64, F64]:
    """Epoch-ns intervals as float ns since the earliest start (exact below 2^53 ns)."""
    origin = int(start.min()) if start.size else 0
    return (start - origin).astype(np.float64), (end - origin).astype(np.float64)


def _server_occupancy(data: RunData) -> _Occupancy:
    s = data.server
    rows = _server_fluidity_rows(data)
    start, end = _relative_ns(s.start_unix_ns, s.start_unix_ns + s.duration_ns)
    return _Occupancy(
        start,
        end,
        rows,
        s.prompt_tokens[rows],
        {
            "preempted": np.nan_to_num(s.preemptions[rows]) > 0,
            "prefix_cache_hit": np.nan_to_num(s.cache_read_tokens[rows]) > 0,
        },
    )


def _client_occupancy(data: RunData) -> _Occupancy:
    c = data.client
    rows = _client_fluidity_rows(data)
    start, end = _relative_ns(c.submit_unix_ns, c.end_unix_ns())
    return _Occupancy(start, end, rows, input_tokens_of(data)[rows], {})


_OCCUPANCY: Final[dict[TimelineSource, Callable[[RunData], _Occupancy]]] = {
    "server": _server_occupancy,
    "client": _client_occupancy,
}


@dataclass(frozen=True, slots=True)
class PrefillDeadlineChoice:
    """The prefill deadline of ``metrics.fluidity``: ``seconds`` (one ``D_p`` per request of
    :func:`fluidity_intervals`, or one for all) and the report's ``prefill_deadline``."""

    seconds: F64 | float
    section: rt.PrefillDeadline


def _fixed_deadline(prefill_deadline_s: float) -> PrefillDeadlineChoice:
    return PrefillDeadlineChoice(
        prefill_deadline_s,
        {
            "kind": "fixed",
            "deadline_ms": prefill_deadline_s * 1000.0,
            "description": PREFILL_DEADLINE_DESCRIPTION,
        },
    )


def prefill_deadline_of(data: RunData, prefill_deadline_s: float | None) -> PrefillDeadlineChoice:
    """``D_p`` of the fluidity section (Etalon §4.1): ``prefill_deadline_s`` for every request
    when given; else Etalon's profiled ``D_p(L) = prefill(L) + S`` from the run's isolated
    requests (:func:`profiled_deadline`) where they support a fit, else the fixed
    :data:`DEFAULT_PREFILL_DEADLINE_S`. Derived once per run and argument."""

    def compute() -> PrefillDeadlineChoice:
        if prefill_deadline_s is not None:
            return _fixed_deadline(prefill_deadline_s)
        found = profiled_deadline(data)
        return found if found is not None else _fixed_deadline(DEFAULT_PREFILL_DEADLINE_S)

    return derived(data, ("prefill_deadline", prefill_deadline_s), compute)


@dataclass(frozen=True, slots=True)
class _ProfilePoints:
    """The evaluated requests of the fluidity timeline (in its order): their first interval
    ``t0_s`` and prompt length, which were alone from arrival to first token, and why some of
    those are no fit point (``left_out``: a flag per request and reason)."""

    source: TimelineSource
    t0_s: F64
    length: F64
    alone: npt.NDArray[np.bool_]
    left_out: dict[str, npt.NDArray[np.bool_]]

    def points(self) -> npt.NDArray[np.bool_]:
        """The fit points: alone and not left out."""
        keep = self.alone.copy()
        for flags in self.left_out.values():
            keep &= ~flags
        return keep


def _profile_points(data: RunData) -> _ProfilePoints | None:
    """:class:`_ProfilePoints` of the fluidity timeline (:data:`PROFILE_ISOLATION`); None when
    no request is evaluated."""
    times, source, intervals = fluidity_intervals(data)
    if len(times) == 0:
        return None
    occupancy = _OCCUPANCY[source](data)
    t0_s = intervals.values[intervals.bounds[:-1]]  # every evaluated request has a token
    first_ns = np.full(occupancy.start_ns.size, np.nan)
    first_ns[occupancy.rows] = occupancy.start_ns[occupancy.rows] + t0_s * 1e9
    alone = isolated(occupancy.start_ns, occupancy.end_ns, first_ns)[occupancy.rows]
    length = occupancy.prompt_tokens
    left_out = {"unknown_prompt_length": alone & ~np.isfinite(length)}
    left_out |= {reason: alone & flags for reason, flags in occupancy.left_out.items()}
    return _ProfilePoints(source, t0_s, length, alone, left_out)


def profiled_deadline(
    data: RunData, scheduling_slack_s: float = draft.FLUIDITY_SCHEDULING_SLACK_S
) -> PrefillDeadlineChoice | None:
    """Etalon's ``D_p(L) = prefill(L) + S`` (§4.1) profiled from the run itself: the first
    interval of the fluidity timeline of every request that was alone from its arrival to its
    first token (:data:`PROFILE_ISOLATION`, :func:`otelbench.metrics.isolated`), fitted against
    its prompt length (:func:`otelbench.metrics.fit_prefill_time`) when the isolated requests
    form 3 length groups of 10 (:data:`PROFILE_GROUPING`); None otherwise."""
    found = _profile_points(data)
    if found is None:
        return None
    points = found.points()
    length, t0_s = found.length[points], found.t0_s[points]
    groups = profile_groups(length)
    if groups is None:
        return None
    fit = fit_prefill_time(length, t0_s, min_requests_per_length=1)
    seconds = profiled_prefill_deadlines(fit, found.length, scheduling_slack_s)
    lo, hi = min(fit.lengths), max(fit.lengths)
    inside = (found.length >= lo) & (found.length <= hi)
    profiled: rt.ProfiledPrefillDeadline = {
        "kind": "profiled",
        "description": PROFILED_DEADLINE_DESCRIPTION,
        "source": PROFILE_SOURCES[found.source],
        "isolation": PROFILE_ISOLATION[found.source],
        "grouping": PROFILE_GROUPING,
        "scheduling_slack_ms": scheduling_slack_s * 1000.0,
        "isolated_requests": int(found.alone.sum()),
        "left_out": {reason: int(flags.sum()) for reason, flags in found.left_out.items()},
        "fit": {
            "a_ms": fit.a * 1000.0,
            "b_ms_per_token": fit.b * 1000.0,
            "c_ms_per_token2": fit.c * 1000.0,
            "r_squared": fit.r_squared,
            "residual_std_ms": fit.residual_std_s * 1000.0,
            "requests": fit.requests,
            "min_tokens": int(lo),
            "max_tokens": int(hi),
        },
        "groups": [
            _profile_group(length[groups == g], t0_s[groups == g]) for g in range(groups.max() + 1)
        ],
        "deadline_range_ms": {
            "min": float(seconds.min()) * 1000.0,
            "p50": float(np.median(seconds)) * 1000.0,
            "max": float(seconds.max()) * 1000.0,
        },
        "requests_outside_range": int(np.count_nonzero(~inside)),
    }
    return PrefillDeadlineChoice(seconds, profiled)


def _profile_group(length: F64, t0_s: F64) -> rt.ProfileGroup:
    """One length group of the profile: its length range, size and median first interval."""
    return {
        "min_tokens": int(length.min()),
        "max_tokens": int(length.max()),
        "requests": int(length.size),
        "prefill_p50_ms": float(np.median(t0_s)) * 1000.0,
    }


def fluidity_distribution(fi: F64, min_fluidity: float) -> rt.FluidityIndex:
    """Fluidity-indices summarized: count, mean, min, P1, P5, P50 and the fraction at least
    ``min_fluidity`` (``fi`` must not be empty)."""
    return {
        "count": int(fi.size),
        "mean": float(fi.mean()),
        "min": float(fi.min()),
        "p1": percentile(fi, 1),
        "p5": percentile(fi, 5),
        "p50": percentile(fi, 50),
        "fraction_at_least_min": float(np.mean(fi >= min_fluidity)),
    }


def fluid_rate_of(
    data: RunData,
    prefill_deadline_s: float | None,
    min_fluidity: float = draft.FLUIDITY_MIN_INDEX,
    request_fraction: float = draft.FLUIDITY_REQUEST_FRACTION,
) -> FluidRate | None:
    """The fluid token generation rate (Etalon §4.2) of :func:`fluidity_intervals` with the
    prefill deadline of :func:`prefill_deadline_of`, its search started from the
    fluidity-indices at the decode-deadline presets, which decide many requests
    (:func:`fluidity_indices_of`, derived too)."""

    def compute() -> FluidRate | None:
        evaluated = {
            dd: fluidity_indices_of(data, prefill_deadline_s, dd)
            for dd in draft.FLUIDITY_DECODE_DEADLINE_PRESETS_S.values()
        }
        return fluid_token_generation_rate(
            fluidity_intervals(data)[2],
            prefill_deadline_of(data, prefill_deadline_s).seconds,
            min_fluidity=min_fluidity,
            request_fraction=request_fraction,
            precision_s=FLUID_RATE_PRECISION_S,
            evaluated=evaluated,
        )

    key = ("fluid_rate", prefill_deadline_s, min_fluidity, request_fraction)
    return derived(data, key, compute)


def fluidity_section(
    data: RunData,
    *,
    prefill_deadline_s: float | None = None,
    min_fluidity: float = draft.FLUIDITY_MIN_INDEX,
    request_fraction: float = draft.FLUIDITY_REQUEST_FRACTION,
) -> rt.Fluidity | None:
    """Fluidity-index at Etalon's decode-deadline presets and the fluid token generation rate.

    Etalon §4.1 (Algorithm 1, :func:`otelbench.metrics.fluidity_indices`) and §4.2
    (:func:`otelbench.metrics.fluid_token_generation_rate`), over the successful requests. The
    timeline is the engine hooks' per-token offsets (Option C) when any successful request has
    them — only those requests are then evaluated — else the client's chunk arrivals with Option
    B. ``D_p`` is ``prefill_deadline_s`` for every request (:data:`PREFILL_DEADLINE_DESCRIPTION`)
    when given; else Etalon's ``D_p(L)`` profiled from the run's isolated requests where they
    support a fit (:func:`profiled_deadline`), else the fixed :data:`DEFAULT_PREFILL_DEADLINE_S`
    (:func:`prefill_deadline_of`). None when no successful request has a token.

    >>> fluidity_section(data)["deadlines"][0]["decode_deadline_ms"]  # doctest: +SKIP
    25.0
    """
    if prefill_deadline_s is not None and not prefill_deadline_s > 0:
        raise ValueError("the prefill deadline must be > 0 s")
    times, source, _ = fluidity_intervals(data)
    if len(times) == 0:
        return None
    deadlines: list[rt.DeadlineRow] = []
    for preset, dd in draft.FLUIDITY_DECODE_DEADLINE_PRESETS_S.items():
        fi = fluidity_indices_of(data, prefill_deadline_s, dd)
        deadlines.append(
            {
                "preset": preset,
                "decode_deadline_ms": dd * 1000.0,
                "fluidity_index": fluidity_distribution(fi, min_fluidity),
            }
        )
    rate = fluid_rate_of(data, prefill_deadline_s, min_fluidity, request_fraction)
    return {
        "source": source,
        "timeline": SERVER_TIMELINE if source == "server" else CLIENT_TIMELINE,
        "chunk_handling": SERVER_CHUNK_HANDLING if source == "server" else CLIENT_CHUNK_HANDLING,
        "requests": len(times),
        "requests_left_out": int(data.client.ok.sum()) - len(times),
        "prefill_deadline": prefill_deadline_of(data, prefill_deadline_s).section,
        "min_fluidity": min_fluidity,
        "request_fraction": request_fraction,
        "deadlines": deadlines,
        "fluid_token_generation_rate": None
        if rate is None
        else {
            "decode_deadline_ms": rate.decode_deadline_s * 1000.0,
            "tokens_per_s": rate.tokens_per_s,
            "precision_ms": rate.precision_s * 1000.0,
            "fraction_meeting": rate.fraction_meeting,
            "requests": rate.requests,
        },
    }


def fluidity_deviations(fluidity: rt.Fluidity | None, tpot_p50_ms: float | None) -> list[str]:
    """What the fluidity figures cannot claim (Etalon §4.1, §4.2): a fixed ``D_p``, a profiled
    one applied to prompt lengths outside its profile, and a fluid token rate above the decode
    rate measured on the same timeline (``tpot_p50_ms``: the
    median TPOT of the fluidity section's source), which only the slack a generous ``D_p``
    leaves can produce."""
    if fluidity is None:
        return []
    out = []
    deadline = fluidity["prefill_deadline"]
    if deadline["kind"] == "fixed":
        out.append(
            f"fluidity uses a fixed prefill deadline D_p of {deadline['deadline_ms']:g} ms for "
            "every request; Etalon (§4.1) sets D_p per input length from a prefill profile plus "
            "a scheduling slack and calls a static one impractical: the slack a generous D_p "
            "leaves absorbs decode stalls, so the fluidity indices and the fluid token rate may "
            "be optimistic (`otelbench test fluidity` profiles D_p)"
        )
    elif deadline["requests_outside_range"]:
        fit = deadline["fit"]
        out.append(
            f"{deadline['requests_outside_range']} of the fluidity section's requests had prompt "
            f"lengths outside the profiled {fit['min_tokens']}–{fit['max_tokens']} tokens: their "
            "profiled D_p is the nearest profiled length's, not a fit's extrapolation (Etalon "
            "§4.1 profiles the lengths the workload uses)"
        )
    rate = fluidity["fluid_token_generation_rate"]
    if rate is not None and tpot_p50_ms and rate["tokens_per_s"] > 1000.0 / tpot_p50_ms:
        out.append(
            f"the fluid token generation rate ({rate['tokens_per_s']:.1f} tok/s) exceeds the "
            f"measured decode rate ({1000.0 / tpot_p50_ms:.1f} tok/s, 1 / median TPOT on the "
            "same timeline): the slack of the prefill deadline, not the decode, met the decode "
            "deadlines (Etalon §4.2)"
        )
    return out


# ------------------------------------------------------------------------------------------
# metrics.server.engine_steps, methodology.itl_method.server_engine_steps (draft 4.6.2-4.6.3)
# ------------------------------------------------------------------------------------------

ONE_TOKEN_PER_STEP: Final = "one token per engine step"
"""``methodology.itl_method.server_engine_steps`` when no engine step produced several tokens:
every server ITL sample is then the time between two engine steps."""
MULTI_TOKEN_STEP_HANDLING: Final = (
    "by the draft's rules (4.6.2-4.6.3): metrics.server.itl_ms keeps Option C's per-token "
    "samples, zeros included (each token of a step has the step's time, as Option B gives a "
    "chunk's tokens the chunk's arrival), so its low percentiles read 0 where steps carry "
    "several tokens; TPOT, (last - first) / (tokens - 1), counts every token and is the mean "
    "time per token whatever the step sizes; metrics.server.engine_steps.time_between_steps_ms "
    "is the time between consecutive engine steps (Option A's time between chunks, taken at "
    "the engine) with the tokens-per-step distribution Option A asks for; fluidity (Etalon "
    "§3.1) takes a step's tokens as shown at a uniform pace: each 0 interval meets its deadline "
    "and adds D_d of slack"
)
"""``methodology.itl_method.server_multi_token_handling``: how ITL, TPOT and fluidity treat the
tokens of one engine step."""


def engine_steps_statement(data: RunData) -> str | None:
    """``methodology.itl_method.server_engine_steps``: whether the engine's steps gave one token
    or several, and how many (draft 4.6.2 asks whether chunks carry one or several tokens; an
    engine step is Option C's chunk); None without the server ITL (no engine-hook span with
    token offsets). With several, :data:`MULTI_TOKEN_STEP_HANDLING` says how they are handled.

    >>> engine_steps_statement(data)  # doctest: +SKIP
    'one token per engine step'
    """
    st = server_engine_steps(data)
    if st.tokens == 0:
        return None
    if st.multi_token_steps == 0:
        return ONE_TOKEN_PER_STEP
    share = st.zero_gap_share
    return (
        f"multi-token engine steps: {st.tokens} tokens from {st.steps} engine steps "
        f"({st.tokens / st.steps:.2f} tokens per step on average, up to "
        f"{int(st.tokens_per_step.max())}: speculative decoding or another multi-token step); "
        f"{st.zero_gaps} of {st.itl_samples} server ITL samples "
        f"({0.0 if share is None else share:.1%}) are 0"
    )


def engine_steps_section(data: RunData) -> rt.EngineStepsSection | None:
    """``metrics.server.engine_steps`` (draft 4.6.2-4.6.3; :func:`otelbench.metrics.
    engine_steps`) over the server ITL's spans: present only when a step produced several
    tokens (:func:`engine_steps_statement` says "one token per engine step" otherwise)."""
    st = server_engine_steps(data)
    if st.multi_token_steps == 0:
        return None
    sizes, counts = np.unique(st.tokens_per_step, return_counts=True)
    return {
        "requests": len(st.step_times),
        "tokens": st.tokens,
        "steps": st.steps,
        "multi_token_steps": st.multi_token_steps,
        "tokens_per_step": summary_of(st.tokens_per_step.astype(np.float64)),
        "steps_by_tokens": {str(k): int(n) for k, n in zip(sizes, counts, strict=True)},
        "zero_itl_samples": st.zero_gaps,
        "zero_itl_share": st.zero_gap_share,
        "time_between_steps_ms": summary_of(st.between_steps.values / 1000.0),
    }


# ------------------------------------------------------------------------------------------
# metrics.client.reasoning (ADR-0005)
# ------------------------------------------------------------------------------------------


def _phase_boundaries(data: RunData, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Index of each request's first output-phase token (module ``REASONING_BOUNDARY``)."""
    c = data.client
    out = np.zeros(rows.size, dtype=np.int64)
    for k, i in enumerate(rows.tolist()):
        if c.think_phase[i] is None:
            continue
        tokens = c.chunks(i)[1]
        chunk = c.output_phase_chunk[i]
        end = int(chunk) if np.isfinite(chunk) else tokens.size
        out[k] = int(tokens[: max(end, 0)].sum())
    return out


def reasoning_section(data: RunData) -> rt.Reasoning | None:
    """TTOT, think-to-output gap, think tokens and output-phase ITL (Meridian ADR-0005).

    Over the successful requests with a think phase (:data:`REASONING_POPULATION`), from the
    client's Option B token times and the chunk index of the first output-phase chunk
    (:data:`REASONING_BOUNDARY`), by :func:`otelbench.metrics.reasoning_phases`. None when no
    successful request had a think phase.

    >>> reasoning_section(data)["ttot_ms"]["p50"]  # doctest: +SKIP
    512.0
    """
    c = data.client
    think = np.fromiter(
        (p is not None for p in c.think_phase), dtype=np.bool_, count=len(c.think_phase)
    )
    rows = np.flatnonzero(c.ok & think)
    if rows.size == 0:
        return None
    mask = np.zeros(len(c), dtype=np.bool_)
    mask[rows] = True
    times = token_arrival_times(c.chunk_offset_us, c.chunk_tokens, c.chunk_bounds).select(mask)
    phases = reasoning_phases(
        Ragged(times.values / 1000.0, times.bounds), _phase_boundaries(data, rows)
    )
    ended = sum(c.think_phase[i] == semconv.THINK_PHASE_ENDED for i in rows.tolist())
    unterminated = sum(c.think_phase[i] == semconv.THINK_PHASE_UNTERMINATED for i in rows.tolist())
    return {
        "requests": {
            "with_think_phase": int(rows.size),
            "think_phase_ended": int(ended),
            "think_phase_unterminated": int(unterminated),
            "without_think_phase": int(c.ok.sum()) - int(rows.size),
        },
        "population": REASONING_POPULATION,
        "boundary": REASONING_BOUNDARY,
        "ttot_ms": summary_of(phases.ttot),
        "think_to_output_gap_ms": summary_of(phases.think_to_output_gap),
        "think_tokens": summary_of(phases.think_tokens.astype(np.float64)),
        "output_itl_ms": summary_of(phases.output_itl.values),
    }


# ------------------------------------------------------------------------------------------
# metrics.classes (draft 5.6.4)
# ------------------------------------------------------------------------------------------


def classes_section(
    labels: Sequence[str | None],
    ttft_ms: npt.ArrayLike,
    e2e_ms: npt.ArrayLike,
    tpot_ms: npt.ArrayLike,
    itl_ms: Ragged,
) -> rt.Classes | None:
    """Per-class latency, Jain's fairness index and starvation rate (draft 5.6.4, 5.6.5).

    Every argument has one entry (``itl_ms``: one group) per *successful* request; ``labels``
    are their ``otelbench.request.class`` (None: no class, left out). None unless at least two
    distinct classes occur. Jain's index is over the requests with a TTFT whose class median is
    > 0, normalized by their class's median in this run (:data:`CLASS_REFERENCE`); the
    starvation rate is the share of a class's requests whose TTFT (their wait, 5.6.3 step 5)
    exceeds ``draft.FAIRNESS_STARVATION_FACTOR ×`` the class median.

    >>> classes_section(["a", "b"], [1.0, 2.0], [3.0, 4.0], [1.0, 1.0], itl)  # doctest: +SKIP
    """
    ttft = np.asarray(ttft_ms, dtype=np.float64)
    e2e = np.asarray(e2e_ms, dtype=np.float64)
    tpot = np.asarray(tpot_ms, dtype=np.float64)
    n = len(labels)
    if not (ttft.shape == e2e.shape == tpot.shape == (n,)) or len(itl_ms) != n:
        raise ValueError("one TTFT, e2e, TPOT and ITL group per request label")
    names = sorted({label for label in labels if label is not None})
    if len(names) < 2:
        return None
    label_array = np.array([label if label is not None else "" for label in labels], dtype=object)
    has_label = np.array([label is not None for label in labels], dtype=np.bool_)
    by_class: dict[str, rt.ClassRow] = {}
    normalized: list[F64] = []
    for name in names:
        member = has_label & (label_array == name)
        wait = _drop_nan(ttft[member])
        median = percentile(wait, 50)
        if median is not None and median > 0:
            normalized.append(wait / median)
        by_class[name] = {
            "count": int(member.sum()),
            "ttft_ms": short_summary_of(wait),
            "tpot_ms": short_summary_of(tpot[member]),
            "e2e_ms": short_summary_of(e2e[member]),
            "itl_ms": short_summary_of(itl_ms.select(member).values),
            "starvation_rate": starvation_rate(wait) if wait.size else None,
        }
    x = np.concatenate(normalized) if normalized else np.empty(0)
    return {
        "reference": CLASS_REFERENCE,
        "jain_index": jain_fairness_index(x) if x.size else None,
        "jain_requests": int(x.size),
        "starvation_factor": draft.FAIRNESS_STARVATION_FACTOR,
        "requests_without_class": int((~has_label).sum()),
        "by_class": by_class,
    }


# ------------------------------------------------------------------------------------------
# metrics.client.itl_shape (draft 5.4.4.3)
# ------------------------------------------------------------------------------------------


def itl_shape_section(
    itl_ms: npt.ArrayLike, *, order: AnyOrderStatistics | None = None, std: float | None = None
) -> rt.ItlShape:
    """Modality (KDE peak count) and P99/P50 of pooled ITL samples in ms (draft 5.4.4.3).

    :func:`otelbench.metrics.itl_shape`; NaN samples are dropped. ``order`` and ``std`` are
    the samples' order statistics and their std when the caller has them (used when no sample
    is NaN).

    >>> itl_shape_section([10.0, 10.0, 10.0])["peaks"]
    1
    """
    x = _drop_nan(itl_ms)
    s = itl_shape(x, order=order, std=std) if x is itl_ms else itl_shape(x)
    return {
        "count": s.count,
        "peaks": s.peaks,
        "multimodal": s.multimodal,
        "peak_locations_ms": list(s.peak_locations),
        "bandwidth_ms": s.bandwidth,
        "p50_ms": s.p50,
        "p99_ms": s.p99,
        "p99_p50_ratio": s.tail_ratio,
    }


# ------------------------------------------------------------------------------------------
# run.load_generator (draft 4.2.5)
# ------------------------------------------------------------------------------------------


def load_generator_section(data: RunData) -> rt.LoadGenerator | None:
    """Open-loop schedule lag (actual − scheduled send) P50/P99/max in ms over the run's requests.

    From each client span's ``otelbench.request.schedule_lag_us`` (every request, failed ones
    included: the lag is about sending). ``generator_bottleneck_flagged`` is the run manifest's
    ``schedule_lag.generator_bottleneck``: the load generator's P99 send lag over all it sent
    exceeded its limit (draft 4.2.5). None for a closed loop (no request has a schedule lag).

    >>> load_generator_section(data)["schedule_lag_ms"]["p99"]  # doctest: +SKIP
    """
    lag_ms = _drop_nan(data.client.schedule_lag_us) / 1000.0
    if lag_ms.size == 0:
        return None
    lag = data.run.manifest.get("schedule_lag")
    return {
        "schedule_lag_ms": {
            "count": int(lag_ms.size),
            "p50": percentile(lag_ms, 50),
            "p99": percentile(lag_ms, 99),
            "max": float(lag_ms.max()),
        },
        "generator_bottleneck_flagged": isinstance(lag, Mapping)
        and lag.get("generator_bottleneck") is True,
    }
