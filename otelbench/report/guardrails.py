"""The report's guardrail section, ``metrics.guardrails``: disclosure, refusals, time in filters.

Computed from the guardrail filter spans in the run's traces (:class:`~otelbench.query.
GuardrailSpans`, produced by otelbench's guardrail middleware inside vLLM or by ``otelbench
gateway``), for the draft's disclosure (4.8.1: input and output filtering enabled, the systems'
names, refusals during the run) and as the per-request material of 5.10's overhead. None when the
run's traces hold no guardrail span.

Definitions (all durations are the filter's own measurement on the guardrail host's monotonic
clock, µs, reported in ms):

* ``filters[]`` — per configured filter and stage: spans, decisions, errors (timeouts and
  exceptions, decided by the filter's ``on_error``), and its busy time per request (P50/P95/P99);
  for an output filter also per SSE event.
* ``added_latency.input_ms`` — per request, the sum of the input filters' busy time: the engine
  sees the request only after them, so it adds to TTFT one for one.
* ``added_latency.output_first_event_ms`` / ``output_per_event_ms`` — per request, the time the
  output stage held the first SSE event (it adds to TTFT) and every later event (it adds to that
  event's inter-token latency): the stage's own measurement (``otelbench.guardrail.output.
  added_us``: every output filter plus SSE parsing and re-encoding), or, from producers that do
  not record it, the output filters' busy times summed event by event.
* ``added_latency.ttft_ms`` — ``input_ms + output_first_event_ms`` per request.
* ``refusals`` — requests with at least one ``block`` decision, by stage and by filter.

Example::

    section = guardrails_section(extract_run_data(runner))
    section["added_latency"]["ttft_ms"]["p99"] if section else None
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench import semconv
from otelbench.arrays import F64
from otelbench.metrics import summarize
from otelbench.model import report as rt
from otelbench.query import RunData

__all__ = ["GUARDRAIL_DEFINITIONS", "guardrails_section", "input_busy_ms"]

GUARDRAIL_DEFINITIONS: Final = {
    "busy": "time spent inside the filter, summed over its invocations for the request "
    "(the filter's own monotonic clock)",
    "input_ms": "per request, the sum of the input filters' busy time (adds to TTFT)",
    "output_first_event_ms": "per request, the time the output stage (filters, SSE parsing and "
    "re-encoding) held the first SSE event (adds to TTFT)",
    "output_per_event_ms": "per SSE event after the first, the time the output stage held it "
    "(adds to that event's inter-token latency)",
    "refusal": "a request with at least one block decision",
}


def _ms(values: npt.ArrayLike) -> rt.FilterStats:
    a = np.asarray(values, dtype=np.float64)
    s = summarize(a[np.isfinite(a)])  # NaN: the attribute was absent, or rejected as malformed
    return {"count": s.count, "p50": s.p50, "p95": s.p95, "p99": s.p99, "mean": s.mean}


def _names(text: str | None) -> list[str]:
    """A string-array resource attribute (JSON text in the store) as a list."""
    if not text:
        return []
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return [text]
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def input_busy_ms(data: RunData) -> F64:
    """Per client request, the input filters' busy time in ms (0 where no input filter ran)."""
    g = data.guardrails
    out = np.zeros(len(data.client), dtype=np.float64)
    for i in range(len(g)):
        j = int(g.client_index[i])
        if j >= 0 and g.stage[i] == semconv.GUARDRAIL_STAGE_INPUT and np.isfinite(g.busy_us[i]):
            out[j] += g.busy_us[i] / 1000.0
    return out


def guardrails_section(data: RunData) -> rt.Guardrails | None:
    """``metrics.guardrails`` (module docstring); None without guardrail spans."""
    g = data.guardrails
    if len(g) == 0:
        return None
    joined = g.client_index >= 0
    by_filter: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i in range(len(g)):
        by_filter[(g.stage[i] or "?", g.filter_name[i] or "?")].append(i)
    filters: list[rt.FilterRow] = []
    for (stage, name), rows in sorted(by_filter.items()):
        decisions = Counter(g.decision[i] or "none" for i in rows)
        errors = Counter(e for i in rows if (e := g.error[i]))
        entry: rt.FilterRow = {
            "name": name,
            "type": g.filter_type[rows[0]],
            "stage": stage,
            "spans": len(rows),
            "decisions": dict(sorted(decisions.items())),
            "rules": dict(sorted(Counter(r for i in rows if (r := g.rule[i])).items())),
            "errors": dict(sorted(errors.items())),
            "busy_ms_per_request": _ms([g.busy_us[i] / 1000.0 for i in rows]),
        }
        if stage == semconv.GUARDRAIL_STAGE_OUTPUT:
            per_span = [g.chunk_busy(i) for i in rows]
            flat = np.concatenate(per_span) if per_span else np.empty(0)
            entry["busy_ms_per_event"] = _ms(flat / 1000.0)
            entry["invocations_per_request"] = _ms(g.invocations[rows])
        filters.append(entry)

    # Added latency per request: input busy; output busy on the first and on later events.
    n = len(data.client)
    input_ms = np.zeros(n)
    has_input = np.zeros(n, dtype=np.bool_)
    stage_events: dict[int, npt.NDArray[np.int64]] = {}  # the output stage's own, per request
    filter_events: dict[int, list[npt.NDArray[np.int64]]] = defaultdict(list)
    has_output = np.zeros(n, dtype=np.bool_)
    for i in np.flatnonzero(joined).tolist():
        j = int(g.client_index[i])
        if g.stage[i] == semconv.GUARDRAIL_STAGE_INPUT:
            has_input[j] = True
            input_ms[j] += (g.busy_us[i] if np.isfinite(g.busy_us[i]) else 0.0) / 1000.0
        elif g.stage[i] == semconv.GUARDRAIL_STAGE_OUTPUT:
            has_output[j] = True
            if g.output_added(i).size:
                stage_events.setdefault(j, g.output_added(i))  # the same on every output span
            filter_events[j].append(g.chunk_busy(i))
    first_event = np.zeros(n)
    per_event: list[F64] = []
    for j in np.flatnonzero(has_output).tolist():
        if j in stage_events:
            events = stage_events[j] / 1000.0
        else:  # sum the output filters' own times, event by event
            arrays = filter_events[j]
            events = np.zeros(max((a.size for a in arrays), default=0))
            for a in arrays:
                events[: a.size] += a / 1000.0
        if events.size:
            first_event[j] = events[0]
            per_event.append(events[1:])
    filtered = has_input | has_output
    refused = np.zeros(n, dtype=np.bool_)
    refusals_by_stage: Counter[str] = Counter()
    refusals_by_filter: Counter[str] = Counter()
    for i in np.flatnonzero(joined).tolist():
        if g.decision[i] == semconv.DECISION_BLOCK:
            j = int(g.client_index[i])
            if not refused[j]:
                refusals_by_stage[g.stage[i] or "?"] += 1
                refusals_by_filter[g.filter_name[i] or "?"] += 1
            refused[j] = True
    first = int(np.flatnonzero(joined)[0]) if joined.any() else 0
    disclosure: rt.GuardrailDisclosure = {
        "input_filters": _names(g.resource_input_filters[first]),
        "output_filters": _names(g.resource_output_filters[first]),
        "config_sha256": g.resource_config_sha256[first],
        "block_response": g.resource_block_response[first],
        "services": sorted({s for s in g.service_name if s}),
        "configurations_seen": len({s for s in g.resource_config_sha256 if s}),
    }
    return {
        "disclosure": disclosure,
        "requests_with_guardrail_spans": int(filtered.sum()),
        "spans": len(g),
        "spans_outside_measured_requests": int((~joined).sum()),
        "filters": filters,
        "refusals": {
            "requests": int(refused.sum()),
            "by_stage": dict(sorted(refusals_by_stage.items())),
            "by_filter": dict(sorted(refusals_by_filter.items())),
        },
        "added_latency": {
            "input_ms": _ms(input_ms[has_input]),
            "output_first_event_ms": _ms(first_event[has_output]),
            "output_per_event_ms": _ms(np.concatenate(per_event) if per_event else []),
            "ttft_ms": _ms((input_ms + first_event)[filtered]),
        },
        "definitions": dict(GUARDRAIL_DEFINITIONS),
    }
