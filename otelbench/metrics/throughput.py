"""Throughput over a run's measurement window, and request outcome counts.

Pure numpy, no I/O. Definitions (draft 5.2.4.1):

* **Measurement window**: from the earliest submission (``T_submit``) to the latest response end
  (``T_submit + end offset``) over *all* the run's requests, failed ones included — every
  request that occupied the target occupies the window. Wall-clock nanoseconds.
* **Output token throughput**: output tokens of *successful* requests / window seconds.
* **Input token throughput**: input (prompt) tokens of *successful* requests / window seconds.
* **Request throughput**: successful ("completed") requests / window seconds.

A window of zero length (or no requests) leaves the rates undefined (``None``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "UNKNOWN_ERROR_TYPE",
    "Outcomes",
    "Throughput",
    "measurement_window_ns",
    "outcomes",
    "window_throughput",
]

UNKNOWN_ERROR_TYPE = "_OTHER"
"""``error.type`` for a failed request that recorded none (the OTel semconv fallback value)."""


def measurement_window_ns(
    submit_unix_ns: npt.ArrayLike, end_unix_ns: npt.ArrayLike
) -> tuple[int, int] | None:
    """``(first T_submit, last response end)`` in ns, or None when there are no requests.

    >>> measurement_window_ns([10, 5, 20], [30, 40, 25])
    (5, 40)
    """
    s = np.asarray(submit_unix_ns, dtype=np.int64)
    e = np.asarray(end_unix_ns, dtype=np.int64)
    if s.shape != e.shape:
        raise ValueError("submit and end arrays must have the same shape")
    if s.size == 0:
        return None
    if np.any(e < s):
        raise ValueError("a response cannot end before it was submitted")
    return int(s.min()), int(e.max())


@dataclass(frozen=True, slots=True)
class Throughput:
    """Rates over the measurement window; rates are None when the window is empty."""

    window_s: float | None
    output_tokens: int
    input_tokens: int
    requests: int
    output_tokens_per_s: float | None
    input_tokens_per_s: float | None
    requests_per_s: float | None


def window_throughput(
    submit_unix_ns: npt.ArrayLike,
    end_unix_ns: npt.ArrayLike,
    succeeded: npt.ArrayLike,
    output_tokens: npt.ArrayLike,
    input_tokens: npt.ArrayLike,
) -> Throughput:
    """Output tokens/s, input tokens/s and requests/s of the successful requests over the window.

    ``output_tokens``/``input_tokens`` are per request; NaN (unknown) counts add nothing.

    >>> t = window_throughput([0, 1_000_000_000], [1_000_000_000, 2_000_000_000], [True, True],
    ...                [10, 30], [100, 100])
    >>> (t.window_s, t.output_tokens_per_s, t.requests_per_s)
    (2.0, 20.0, 1.0)
    """
    ok = np.asarray(succeeded, dtype=np.bool_)
    out_tok = np.asarray(output_tokens, dtype=np.float64)
    in_tok = np.asarray(input_tokens, dtype=np.float64)
    if not (ok.shape == out_tok.shape == in_tok.shape):
        raise ValueError("per-request arrays must have the same shape")
    window = measurement_window_ns(submit_unix_ns, end_unix_ns)
    n_out = int(np.nansum(out_tok[ok]))
    n_in = int(np.nansum(in_tok[ok]))
    n_req = int(ok.sum())
    if window is None or window[1] == window[0]:
        return Throughput(
            window_s=None if window is None else 0.0,
            output_tokens=n_out,
            input_tokens=n_in,
            requests=n_req,
            output_tokens_per_s=None,
            input_tokens_per_s=None,
            requests_per_s=None,
        )
    seconds = (window[1] - window[0]) / 1e9
    return Throughput(
        window_s=seconds,
        output_tokens=n_out,
        input_tokens=n_in,
        requests=n_req,
        output_tokens_per_s=n_out / seconds,
        input_tokens_per_s=n_in / seconds,
        requests_per_s=n_req / seconds,
    )


@dataclass(frozen=True, slots=True)
class Outcomes:
    """How many requests succeeded and failed, failures by ``error.type`` (sorted by type)."""

    total: int
    succeeded: int
    failed: int
    failed_by_type: dict[str, int]


def outcomes(succeeded: npt.ArrayLike, error_types: Iterable[str | None]) -> Outcomes:
    """Count outcomes; a failed request without an ``error.type`` counts as ``_OTHER``.

    >>> outcomes([True, False, False], [None, "504", None])
    Outcomes(total=3, succeeded=1, failed=2, failed_by_type={'504': 1, '_OTHER': 1})
    """
    ok = np.asarray(succeeded, dtype=np.bool_)
    types = list(error_types)
    if len(types) != ok.size:
        raise ValueError("one error type (or None) per request")
    counts = Counter(
        (t if t else UNKNOWN_ERROR_TYPE)
        for t, good in zip(types, ok.tolist(), strict=True)
        if not good
    )
    return Outcomes(
        total=int(ok.size),
        succeeded=int(ok.sum()),
        failed=int(ok.size - ok.sum()),
        failed_by_type=dict(sorted(counts.items())),
    )
