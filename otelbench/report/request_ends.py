"""``metrics.server.request_ends``: how each request ended, on the client and in the engine.

The engine hooks end one server span for every request the engine admitted, whatever ended it
(``otelbench.server.end_reason``: ``finished``, ``cancelled``, ``aborted``, ``error``; spans
written before the hooks knew cancellations are read as
:meth:`otelbench.query.ServerRequests.end_reasons` says). This section puts the server's end
reasons next to the client's outcomes (``ok``, or the client span's ``error.type``:
``cancelled``, ``timeout``, ``500`` …), joined by trace, and names what the engine did for
nothing: the work it spent on the requests it did not finish, whose responses nobody read whole.

The server's latency summaries (``metrics.server.ttft_ms`` … ``preemptions``) cover the requests
the engine finished (:func:`otelbench.report.sections.server_finished`); the requests cut short
are counted here instead. Every key is defined in ``docs/report-schema.md``.

Usage::

    from otelbench.report.request_ends import request_ends_section

    section = request_ends_section(data, received_tokens)  # None: nothing to say
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from otelbench import semconv
from otelbench.arrays import F64
from otelbench.metrics import UNKNOWN_ERROR_TYPE, unread_work
from otelbench.model import report as rt
from otelbench.query import RunData

__all__ = [
    "CLIENT_CUT",
    "CLIENT_OK",
    "NO_SERVER_SPAN",
    "UNREAD_WORK_DEFINITION",
    "client_outcomes",
    "request_ends_section",
]

CLIENT_OK: Final = "ok"
"""A client request that succeeded (its other outcomes are its ``error.type``)."""
CLIENT_CUT: Final = (semconv.ERROR_TYPE_CANCELLED, semconv.ERROR_TYPE_TIMEOUT)
"""The client outcomes that cut a request: the caller cancelled it, or it timed out."""
NO_SERVER_SPAN: Final = "no_server_span"
"""The column of ``by_client_outcome`` for client requests without a server span."""
_NOT_FINISHED: Final = tuple(r for r in semconv.END_REASONS if r != semconv.END_REASON_FINISHED)
_COLUMNS: Final = (*semconv.END_REASONS, NO_SERVER_SPAN)
"""The columns of ``by_client_outcome``: the end reasons, then no server span."""

UNREAD_WORK_DEFINITION: Final = (
    "the engine's work on the joined requests it did not finish (end reason cancelled, aborted "
    "or error), whose responses nobody read whole: prompt tokens processed and output tokens "
    "generated are the engine core's account on the span (otelbench.server.prompt_tokens_"
    "computed, otelbench.server.output_tokens_generated); a span the hooks wrote before they "
    "knew cancellations, ended through vLLM's finished path, counts its prompt and completion "
    "tokens. Engine request-seconds sum gen_ai.latency.time_in_model_inference (first "
    "scheduling to the end: time the request held a place in the running batch, shared with "
    "the batch's other requests, not exclusive engine time); a request cut in the queue has "
    "none. Output tokens received by the client are the client span's tokens of those requests"
)


def client_outcomes(data: RunData) -> list[str]:
    """Each client request's outcome: ``ok``, else its ``error.type`` (``_OTHER`` without one,
    as ``run.requests.failed_by_type`` counts it)."""
    c = data.client
    return [
        CLIENT_OK if good else (kind or UNKNOWN_ERROR_TYPE)
        for good, kind in zip(c.ok.tolist(), c.error_type, strict=True)
    ]


def request_ends_section(data: RunData, received_tokens: F64) -> rt.RequestEnds | None:
    """How the run's requests ended on each side (module docstring); ``received_tokens`` is
    each client request's output tokens as the client counted them (usage, else its chunks).

    None when there is nothing to say: no joined server span carries an end reason (spans of
    hooks that predate it) and no request was cut on either side. A run whose spans carry end
    reasons and where nothing was cut gets the section all the same (every count where it
    belongs), so a reader sees that both sides agree.

    >>> request_ends_section(data, received)["cut_on_both_sides"]  # doctest: +SKIP
    3
    """
    s = data.server
    joined = np.flatnonzero(s.client_index >= 0)
    reasons_all = s.end_reasons()
    code = np.fromiter(  # each span's column: its end reason's index in _COLUMNS
        map(_COLUMNS.index, reasons_all), dtype=np.int64, count=len(reasons_all)
    )
    column = np.full(len(data.client), _COLUMNS.index(NO_SERVER_SPAN))  # per client request
    column[s.client_index[joined]] = code[joined]
    outcome = np.asarray(client_outcomes(data), dtype=object)
    cut_client = np.isin(outcome, CLIENT_CUT)
    finished = column == _COLUMNS.index(semconv.END_REASON_FINISHED)
    spanned = column != _COLUMNS.index(NO_SERVER_SPAN)
    marked = s.end_reason is not None and any(s.end_reason[j] is not None for j in joined)
    if not (marked or cut_client.any() or (spanned & ~finished).any()):
        return None

    names, row = np.unique(outcome, return_inverse=True)
    table = np.zeros((names.size, len(_COLUMNS)), dtype=np.int64)
    np.add.at(table, (row, column), 1)
    order = sorted(range(names.size), key=lambda k: (names[k] != CLIENT_OK, str(names[k])))
    cancelled = column == _COLUMNS.index(semconv.END_REASON_CANCELLED)
    mismatches: rt.EndMismatches = {
        "client_cut_server_finished": int(np.count_nonzero(cut_client & finished)),
        "client_ok_server_not_finished": int(
            np.count_nonzero((outcome == CLIENT_OK) & spanned & ~finished)
        ),
        "client_cut_without_server_span": int(np.count_nonzero(cut_client & ~spanned)),
    }

    unfinished = joined[code[joined] != _COLUMNS.index(semconv.END_REASON_FINISHED)]
    phases = s.end_phase or (None,) * len(s)
    by_phase = {r: dict.fromkeys(semconv.END_PHASES, 0) for r in _NOT_FINISHED}
    for j in unfinished.tolist():
        by_phase[reasons_all[j]][phases[j] or semconv.END_PHASE_UNKNOWN] += 1
    totals = table.sum(axis=0)
    return {
        "client": {str(names[k]): int(table[k].sum()) for k in order},
        "server": {r: int(totals[_COLUMNS.index(r)]) for r in semconv.END_REASONS},
        "by_client_outcome": {
            str(names[k]): dict(zip(_COLUMNS, map(int, table[k]), strict=True)) for k in order
        },
        "cut_on_both_sides": int(np.count_nonzero(cut_client & cancelled)),
        "mismatches": mismatches,
        "by_phase": by_phase,
        "unread_work": _unread_work(data, unfinished, received_tokens),
    }


def _unread_work(data: RunData, rows: npt.NDArray[np.intp], received: F64) -> rt.UnreadWork:
    """The engine's work on the server spans ``rows`` (:data:`UNREAD_WORK_DEFINITION`)."""
    s = data.server
    prompt, output = s.engine_work()
    w = unread_work(prompt[rows], output[rows], s.inference_s[rows])
    return {
        "definition": UNREAD_WORK_DEFINITION,
        "requests": w.requests,
        "prompt_tokens_processed": w.prompt_tokens,
        "output_tokens_generated": w.output_tokens,
        "output_tokens_received_by_client": int(np.nansum(received[s.client_index[rows]])),
        "engine_request_s": w.engine_s,
        "requests_without_engine_account": w.unaccounted,
    }
