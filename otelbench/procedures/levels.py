"""One load level's facts: records in memory → run report → the level's row. No I/O.

A procedure decides its next level (5.2, 5.5 searches) while the collector still owns the span
store, which no other process may open. So each level's report is first computed *live*, from
the load generator's own records (:func:`run_data_from_outcome` builds the same
:class:`~otelbench.query.RunData` the query layer extracts from the store, with no server spans)
through the same :func:`~otelbench.report.report_from_data`; once the procedure ends, every
level's report is computed again from the store (with the server's spans) and the procedure
report is built from those.

:func:`level_row` is the row every procedure table is made of (the 5.3 ``levels`` block):
offered and achieved load, latency percentiles, success rate, queue growth (5.3.4), saturation
criteria (5.2.3.1) and the steady-state check (5.2.3.2).

**Queue depth, as measured here.** The client cannot see the server's queue; the depth used is
the number of the level's requests in flight at the client (submitted, not yet completed),
sampled at every submission and completion over the level's window. Requests pile up there
exactly when the target's queue grows — in an open loop. A closed-loop level holds at most its
concurrency in flight, so that depth cannot grow past the loop's own ramp-up: queue growth is
not assessed there (None), and its saturation rests on the latency and completion criteria.

Example::

    data = run_data_from_outcome(outcome)
    row = level_row(data, report_from_data(data))
    row["ttft_p99_ms"], row["queue_growth"]
"""

from __future__ import annotations

import json
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench import semconv
from otelbench.arrays import F64, I64
from otelbench.loadgen.runner import RunOutcome
from otelbench.metrics import detect_saturation, queue_growing, steady_state
from otelbench.metrics.curves import RAMP_FRACTION
from otelbench.model.procedure import LevelRow, RequestsCut, SaturationCriteria, SteadyState
from otelbench.model.report import Report
from otelbench.query import ClientRequests, RunData, RunInfo, ServerRequests
from otelbench.report.request_ends import CLIENT_CUT

__all__ = [
    "LEVEL_ROW_KEYS",
    "MIN_COMPLETION_SAMPLES",
    "in_flight",
    "level_row",
    "requests_cut",
    "run_data_from_outcome",
    "saturation_at",
]

MIN_COMPLETION_SAMPLES: Final = 8
"""Submissions a level needs before 5.2.3.1's completion criterion is assessed: each rate is
``(k - 1) / (last - first)``, and with a handful of requests one request's drain moves the
ratio by tens of percent (levels of 4-6 requests fired it at loads well below saturation)."""

LEVEL_ROW_KEYS: Final = (
    "run_id",
    "mode",
    "offered_rps",
    "concurrency",
    "requests",
    "succeeded",
    "failed",
    "success_rate",
    "failed_by_type",
    "duration_s",
    "achieved_rps",
    "output_tokens_per_s",
    "input_tokens_per_s",
    "ttft_p50_ms",
    "ttft_p95_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p95_ms",
    "tpot_p99_ms",
    "e2e_p50_ms",
    "e2e_p95_ms",
    "e2e_p99_ms",
    "arrival_rps",
    "completion_rps",
    "completion_ratio",
    "queue_growth",
    "max_in_flight",
    "steady_state",
    "tokens_in_flight",
    "requests_cut",
)
"""The keys of :func:`level_row`, in order."""


def run_data_from_outcome(outcome: RunOutcome) -> RunData:
    """The measured requests of an in-memory run as query-layer records (no server spans).

    Same conventions as the store's extraction: one entry per measured request, ordered by
    (T_submit, trace id, span id); absent numbers NaN; ``ok`` as the client decided it.
    """
    records = sorted(
        (r for r in outcome.records if r.phase == semconv.PHASE_MEASURE),
        key=lambda r: (r.result.submit_unix_ns, r.result.trace_id or "", r.result.span_id or ""),
    )
    results = [r.result for r in records]
    n = len(results)

    def f64(values: list[float | int | None]) -> F64:
        return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)

    lengths = np.array([len(r.chunk_offsets_us) for r in results], dtype=np.int64)
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    end_ns = [(r.end_offset_us * 1000 if r.end_offset_us is not None else 0) for r in results]
    client = ClientRequests(
        trace_id=tuple(r.trace_id or f"live-{i}" for i, r in enumerate(results)),
        span_id=tuple(r.span_id or f"live-{i}" for i, r in enumerate(results)),
        submit_unix_ns=np.array([r.submit_unix_ns for r in results], dtype=np.int64),
        duration_ns=np.array(end_ns, dtype=np.int64),
        ok=np.array([r.ok for r in results], dtype=np.bool_),
        error_type=tuple(r.error_type for r in results),
        request_index=f64([rec.index for rec in records]),
        request_class=tuple(rec.request_class for rec in records),
        think_phase=tuple(r.think_phase for r in results),
        output_phase_chunk=f64([r.output_phase_chunk for r in results]),
        schedule_lag_us=f64([rec.schedule_lag_us for rec in records]),
        ttft_us=f64([r.ttft_us for r in results]),
        first_event_offset_us=f64([r.first_event_offset_us for r in results]),
        end_offset_us=f64([r.end_offset_us for r in results]),
        input_tokens=f64([r.input_tokens for r in results]),
        output_tokens=f64([r.output_tokens for r in results]),
        finish_reasons=tuple((r.finish_reason,) if r.finish_reason else () for r in results),
        chunk_token_source=tuple(
            r.chunk_token_source or ("one_per_chunk" if r.chunk_offsets_us else None)
            for r in results
        ),
        chunk_bounds=bounds,
        chunk_offset_us=np.array([o for r in results for o in r.chunk_offsets_us], dtype=np.int64),
        chunk_tokens=np.array([t for r in results for t in r.chunk_tokens], dtype=np.int64),
    )
    manifest = json.loads(json.dumps(outcome.manifest))  # what the run span carries
    start_ns = int(manifest.get("started_unix", 0) * 1e9)
    end_unix = manifest.get("finished_unix", manifest.get("started_unix", 0))
    run = RunInfo(
        run_id=outcome.run_id,
        manifest=manifest,
        span_start_unix_ns=start_ns,
        span_duration_ns=max(0, int(end_unix * 1e9) - start_ns),
    )
    return RunData(run=run, client=client, server=ServerRequests.empty())


def in_flight(submit_ns: npt.ArrayLike, end_ns: npt.ArrayLike) -> tuple[F64, F64]:
    """Requests in flight after every submission and completion: ``(times_s, depth)``.

    Times are seconds since the first submission; at equal times completions count first.

    >>> t, d = in_flight([0, 1_000_000_000], [3_000_000_000, 2_000_000_000])
    >>> t.tolist(), d.tolist()
    ([0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 1.0, 0.0])
    """
    s = np.asarray(submit_ns, dtype=np.int64)
    e = np.asarray(end_ns, dtype=np.int64)
    if s.size == 0:
        return np.empty(0), np.empty(0)
    times = np.concatenate([e, s])
    steps = np.concatenate([-np.ones(e.size), np.ones(s.size)])
    order = np.lexsort((steps, times))
    depth = np.cumsum(steps[order])
    return (times[order] - s.min()) / 1e9, depth


def _ms(value: float | None) -> float | None:
    """A summary's percentile as a plain float, or None."""
    return None if value is None else float(value)


def level_row(data: RunData, report: Report) -> LevelRow:
    """The level's row (keys :data:`LEVEL_ROW_KEYS`) from its records and its run report.

    ``offered_rps`` is the open-loop arrival rate (None in closed loop); ``achieved_rps`` the
    completed requests per second over the measurement window and ``output_tokens_per_s`` the
    achieved output-token throughput (5.3.4); ``arrival_rps`` / ``completion_rps`` the measured
    rates of submissions and of successful completions, each over its own span (``(k - 1) /
    (last - first)``), and ``completion_ratio`` their ratio (5.2.3.1's completion criterion;
    each over its own span, so a short level's drain tail does not count against it; None with
    fewer than :data:`MIN_COMPLETION_SAMPLES` submissions: not assessed);
    ``queue_growth`` ``growing`` / ``stable`` (5.3.4; None with too few samples to tell, and
    for a closed-loop level, whose depth is capped at its concurrency) from the in-flight depth
    while requests arrive (module docstring);
    ``steady_state`` the 5.2.3.2 check over the window (dict);
    ``tokens_in_flight`` the time-averaged input + output tokens of the requests in flight
    (5.5.4, approximated by each request's full input and output counts while it is open);
    ``requests_cut`` how many requests were cut on each side (:func:`requests_cut`).
    """
    run = report["run"]
    load = run["load"]
    mode = load["mode"] if load else None
    client = report["metrics"]["client"]
    thr = client["throughput"]
    req = run["requests"]
    offered = load["rate"] if load and mode != "closed_loop" else None
    achieved = thr.get("requests_per_s")
    c = data.client
    end_ns = c.end_unix_ns()
    times, depth = in_flight(c.submit_unix_ns, end_ns)
    growing = None if mode == "closed_loop" else _queue_growth(c, times, depth)
    steady = _steady(c, end_ns, times, depth)
    arrival = _rate(c.submit_unix_ns)
    completion = _rate(end_ns[c.ok])
    total = int(req["total"])
    return {
        "run_id": run["id"],
        "mode": mode,
        "offered_rps": None if offered is None else float(offered),
        "concurrency": load["concurrency"] if load else None,
        "requests": total,
        "succeeded": int(req["succeeded"]),
        "failed": int(req["failed"]),
        "success_rate": req["succeeded"] / total if total else None,
        "failed_by_type": dict(req.get("failed_by_type") or {}),
        "duration_s": run.get("duration_s"),
        "achieved_rps": achieved,
        "output_tokens_per_s": thr.get("output_tokens_per_s"),
        "input_tokens_per_s": thr.get("input_tokens_per_s"),
        "ttft_p50_ms": _ms(client["ttft_ms"]["p50"]),
        "ttft_p95_ms": _ms(client["ttft_ms"]["p95"]),
        "ttft_p99_ms": _ms(client["ttft_ms"]["p99"]),
        "tpot_p50_ms": _ms(client["tpot_ms"]["p50"]),
        "tpot_p95_ms": _ms(client["tpot_ms"]["p95"]),
        "tpot_p99_ms": _ms(client["tpot_ms"]["p99"]),
        "e2e_p50_ms": _ms(client["e2e_ms"]["p50"]),
        "e2e_p95_ms": _ms(client["e2e_ms"]["p95"]),
        "e2e_p99_ms": _ms(client["e2e_ms"]["p99"]),
        "arrival_rps": arrival,
        "completion_rps": completion,
        "completion_ratio": (
            (completion or 0.0) / arrival
            if arrival is not None and len(c) >= MIN_COMPLETION_SAMPLES
            else None
        ),
        "queue_growth": None if growing is None else ("growing" if growing else "stable"),
        "max_in_flight": int(depth.max()) if depth.size else 0,
        "steady_state": steady,
        "tokens_in_flight": _tokens_in_flight(c, end_ns),
        "requests_cut": requests_cut(report),
    }


def requests_cut(report: Report) -> RequestsCut:
    """A level's requests cut on each side, from its run report: ``client`` the requests the
    client cancelled or that timed out (``run.requests.failed_by_type``); ``server`` the joined
    requests the engine did not finish (end reason cancelled, aborted or error) and ``both`` the
    client's cuts whose server span ended cancelled (``metrics.server.request_ends``; 0 when the
    report has server spans but no such section: nothing was cut and no span says otherwise);
    both None without server spans (a live row while the procedure runs)."""
    failed = report["run"]["requests"].get("failed_by_type") or {}
    client = sum(int(failed.get(kind, 0)) for kind in CLIENT_CUT)
    server = report["metrics"].get("server")
    if server is None:
        return {"client": client, "server": None, "both": None}
    ends = server.get("request_ends")
    if ends is None:
        return {"client": client, "server": 0, "both": 0}
    not_finished = sum(
        n for reason, n in ends["server"].items() if reason != semconv.END_REASON_FINISHED
    )
    return {"client": client, "server": not_finished, "both": ends["cut_on_both_sides"]}


def _rate(times_ns: I64) -> float | None:
    if times_ns.size < 2:
        return None
    span = int(times_ns.max()) - int(times_ns.min())
    return (times_ns.size - 1) / (span / 1e9) if span > 0 else None


def _queue_growth(c: ClientRequests, times: F64, depth: F64) -> bool | None:
    """Queue growth while requests arrive: the in-flight depth over the arrival window (first
    to last submission), its first 10 % (ramp-up, 5.2.3.2) left out; after the last arrival
    the queue can only drain."""
    if len(c) < 8:
        return None
    last_s = (int(c.submit_unix_ns.max()) - int(c.submit_unix_ns.min())) / 1e9
    keep = (times >= RAMP_FRACTION * last_s) & (times <= last_s)
    if int(keep.sum()) < 8:
        return None
    return queue_growing(times[keep], depth[keep])


def _steady(c: ClientRequests, end_ns: I64, times: F64, depth: F64) -> SteadyState | None:
    if len(c) < 4:
        return None
    start = int(c.submit_unix_ns.min())
    end_s = (int(end_ns.max()) - start) / 1e9
    if not end_s > 0:
        return None
    done_s = (end_ns - start) / 1e9
    tokens = np.where(c.ok & np.isfinite(c.output_tokens), c.output_tokens, 0.0)
    latency_s = np.where(c.ok, c.end_offset_us / 1e6, np.nan)
    s = steady_state(done_s, tokens, latency_s, 0.0, end_s, queue_times=times, queue_depth=depth)
    return {
        "steady": s.steady,
        "ramp_end_s": s.ramp_end_s,
        "end_s": s.end_s,
        "throughput_halves": list(s.throughput_halves),
        "throughput_change": s.throughput_change,
        "latency_p50_halves_s": list(s.latency_p50_halves),
        "latency_change": s.latency_change,
        "queue_growing": s.queue_growing,
    }


def _tokens_in_flight(c: ClientRequests, end_ns: I64) -> float | None:
    if len(c) == 0:
        return None
    start, stop = int(c.submit_unix_ns.min()), int(end_ns.max())
    if stop <= start:
        return None
    tokens = np.nan_to_num(c.input_tokens) + np.nan_to_num(c.output_tokens)
    open_ns = (end_ns - c.submit_unix_ns).astype(np.float64)
    return float(np.sum(tokens * open_ns) / (stop - start))


def saturation_at(row: LevelRow | None, lower_load_p50_ms: float | None) -> SaturationCriteria:
    """Draft 5.2.3.1 at one open-loop level: queue growth, completion < 90 % of arrivals, or
    TTFT P99 > 10 × the TTFT P50 at a lower load (``lower_load_p50_ms``; None: not assessed).
    ``row`` None: a level with no row (interrupted before its run ended), nothing measured.

    TTFT is the latency used: queueing shows in it first and fully, while E2E also carries the
    output-length spread of the workload. The completion criterion is not assessed when
    :func:`level_row` left ``completion_ratio`` None (too few submissions:
    :data:`MIN_COMPLETION_SAMPLES`).
    """
    growth = row.get("queue_growth") if row else None
    too_few = row is not None and "completion_ratio" in row and row["completion_ratio"] is None
    s = detect_saturation(
        arrivals=None if too_few or row is None else row.get("arrival_rps"),
        completions=(row.get("completion_rps") if row else None) or 0.0,
        p99_latency=row.get("ttft_p99_ms") if row else None,
        low_load_p50_latency=lower_load_p50_ms,
    )
    fired = list(s.fired)
    if growth == "growing":
        fired.insert(0, "queue_growth")
    return {
        "saturated": bool(fired),
        "fired": fired,
        "queue_growth": None if growth is None else growth == "growing",
        "completion_ratio": s.completion_ratio,
        "p99_over_lower_load_p50": s.p99_over_low_load_p50,
    }
