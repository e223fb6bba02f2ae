"""Reasoning-model phases: TTOT, think tokens, output-phase ITL (Meridian ADR-0005 metrics).

Pure numpy, no I/O. A reasoning request emits a *think* phase (up to and including the end
marker, e.g. ``</think>``) and then an *output* phase of user-visible tokens. Each request's
tokens carry their arrival times (seconds since the request was submitted) and the request's
**boundary** = the index of its first output-phase token (0: no think phase; the number of
tokens: the think phase never ended, e.g. cut off by ``max_tokens``).

Definitions (ADR-0005, "Metrics"):

* **TTFT**: time to the request's first token, whatever its phase.
* **TTOT** (time to first output token): time from submission to the first output-phase token.
  For a request with no think phase, TTOT = TTFT (declared in ``has_think_phase``); for one whose
  think phase never ended it is undefined (NaN).
* **Think-to-output gap**: the ADR measures TTOT "from ``</think>`` emission to the first
  user-visible token after it"; that interval — first output token minus last think token — is
  reported separately as ``think_to_output_gap`` (NaN without a think phase or output phase).
  TTOT from submission is kept as the headline because it is what the user waits for and it
  stays defined for requests with no think phase.
* **Think tokens**: the number of tokens before the boundary.
* **Output ITL**: intervals between consecutive output-phase tokens only (never across the
  boundary), per request.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from otelbench.arrays import F64
from otelbench.metrics.latency import Ragged, consecutive_intervals, group_first

__all__ = ["ReasoningPhases", "reasoning_phases"]


@dataclass(frozen=True, slots=True, eq=False)
class ReasoningPhases:
    """Per-request phase metrics (ADR-0005); NaN where undefined (module docstring)."""

    ttft: F64
    ttot: F64
    think_to_output_gap: F64
    think_tokens: npt.NDArray[np.int64]
    output_tokens: npt.NDArray[np.int64]
    has_think_phase: npt.NDArray[np.bool_]
    think_phase_ended: npt.NDArray[np.bool_]
    output_itl: Ragged


def reasoning_phases(token_times: Ragged, boundary: npt.ArrayLike) -> ReasoningPhases:
    """TTFT, TTOT, think-to-output gap, think tokens and output-phase ITL per request (ADR-0005).

    ``token_times`` group ``i`` holds request ``i``'s token arrival times (seconds since
    submission); ``boundary[i]`` the index of its first output-phase token, ``0 <= boundary[i]
    <= number of tokens``.

    >>> t = Ragged.from_lengths([0.1, 0.2, 0.3, 0.5, 0.6, 0.05, 0.07], [5, 2])
    >>> p = reasoning_phases(t, [3, 0])
    >>> p.ttot.tolist(), p.think_tokens.tolist(), p.has_think_phase.tolist()
    ([0.5, 0.05], [3, 0], [True, False])
    >>> [np.round(g, 9).tolist() for g in p.output_itl]
    [[0.1], [0.02]]
    """
    b = np.asarray(boundary, dtype=np.int64)
    lengths = token_times.lengths()
    if b.shape != lengths.shape:
        raise ValueError("one phase boundary per request")
    if np.any(b < 0) or np.any(b > lengths):
        raise ValueError("a phase boundary must be within 0 and the request's token count")
    starts = token_times.bounds[:-1]
    ended = b < lengths
    ttot = np.full(b.shape, np.nan)
    ttot[ended] = token_times.values[starts[ended] + b[ended]]
    gap = np.full(b.shape, np.nan)
    both = ended & (b > 0)
    gap[both] = ttot[both] - token_times.values[starts[both] + b[both] - 1]
    output_tokens = lengths - b
    keep = np.ones(token_times.values.size, dtype=np.bool_)
    think_positions = np.repeat(starts, b) + (
        np.arange(int(b.sum())) - np.repeat(np.cumsum(b) - b, b)
    )
    keep[think_positions] = False
    output_times = Ragged.from_lengths(token_times.values[keep], output_tokens)
    return ReasoningPhases(
        ttft=group_first(token_times),
        ttot=ttot,
        think_to_output_gap=gap,
        think_tokens=b,
        output_tokens=output_tokens,
        has_think_phase=b > 0,
        think_phase_ended=ended,
        output_itl=consecutive_intervals(output_times),
    )
