"""What the run actually sent, and when, read back from the stored spans: the evidence the
compliance checks judge where a declaration alone would only say what was configured.

* :func:`sent_section` (``run.sent``): the gaps between the measured requests' submit times and
  their fit to the exponential at the declared rate (draft 5.1.2.2,
  :func:`otelbench.metrics.arrivals.exponential_fit`), and the prompt lengths and ``max_tokens``
  the load generator sent (the workload actually run, draft 4.3.2 and Appendix A);
* :func:`phases_section` (``run.phases``): the run's client spans by request phase (warm-up,
  probe, measure; draft 4.5.1): how many succeeded, their output and cached prompt tokens, and
  how many warm-up or probe requests were still in flight when the measurement began.

Both are pure functions of the query layer's :class:`~otelbench.query.RunData`.

Usage::

    from otelbench.report.evidence import phases_section, sent_section

    sent_section(data)["arrivals"]["ks_p_value"]
    phases_section(data)["warmup"]["succeeded"]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from otelbench import draft
from otelbench.metrics.arrivals import exponential_fit
from otelbench.model import report as rt
from otelbench.query import RunData
from otelbench.render.format import number

__all__ = ["phases_section", "sent_section"]


def _lengths(values: npt.NDArray[np.float64] | None) -> rt.SentLengths:
    """``{count, min, max, mean, p50}`` of the finite ``values`` (count 0 and nulls when none)."""
    finite = np.asarray([] if values is None else values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return {"count": 0, "min": None, "max": None, "mean": None, "p50": None}
    return {
        "count": int(finite.size),
        "min": float(finite.min()),
        "max": float(finite.max()),
        "mean": float(finite.mean()),
        "p50": float(np.percentile(finite, 50)),
    }


def _declared_rate(load: rt.RunLoad | None) -> float | None:
    """The open-loop rate the run manifest's ``load`` declares: its ``rate``, else its arrival
    process's."""
    if load is None:
        return None
    return number(load["rate"]) or number(load.get("arrival", {}).get("rate"))


def sent_section(data: RunData) -> rt.Sent:
    """``run.sent``: the measured requests' arrival gaps (between distinct submit times) and
    their fit to the exponential at the run's declared rate within 4.2.1's 1 ms (None for a
    closed loop or fewer than three requests; the rate the gaps show where none was declared, as
    for a replayed trace), and the prompt lengths and ``max_tokens`` sent."""
    c = data.client
    load = data.run.manifest.get("load")
    mode = None if load is None else load["mode"]
    declared = _declared_rate(load)
    arrivals: rt.ArrivalFit | None = None
    if mode != "closed_loop":
        # a span stored twice (an exporter's retry after a lost answer) is one send, not a gap 0
        sends = np.unique(c.submit_unix_ns)
        measured = exponential_fit(sends, 1.0)
        rate = declared or (measured.rate_per_s if measured is not None else None)
        fit = exponential_fit(sends, rate, draft.TIMING_RESOLUTION_MS / 1e3) if rate else None
        if fit is not None and rate is not None:
            arrivals = {
                "gaps": fit.gaps,
                "declared_rate_per_s": declared,
                "tested_rate_per_s": rate,
                "measured_rate_per_s": fit.rate_per_s,
                "cv": fit.cv,
                "cv_tolerance": fit.cv_tolerance,
                "timing_tolerance_ms": fit.tolerance_s * 1e3,
                "ks_statistic": fit.ks_statistic,
                "ks_p_value": fit.ks_p_value,
            }
    return {
        "arrivals": arrivals,
        "prompt_tokens": _lengths(c.prompt_tokens_sent),
        "max_tokens": _lengths(c.max_tokens),
    }


def phases_section(data: RunData) -> dict[str, rt.Phase]:
    """``run.phases``: per request phase (``warmup``, ``probe``, ``measure``), its client spans'
    requests, successes, output and cached prompt tokens (successful ones), first submit and last
    end (Unix s), and how many ended after the first measured request was submitted."""
    return {
        p.phase: {
            "requests": p.requests,
            "succeeded": p.succeeded,
            "output_tokens": p.output_tokens,
            "cached_tokens": p.cached_tokens,
            "first_submit_unix": p.first_submit_unix_ns / 1e9,
            "last_end_unix": p.last_end_unix_ns / 1e9,
            "ended_after_measurement_start": p.ended_after_start,
        }
        for p in data.phases
    }
