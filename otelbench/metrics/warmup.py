"""Warm-up stabilization (draft 4.5.2): the variation across consecutive probe requests.

Pure, no I/O: the load generator's warm-up (:mod:`otelbench.loadgen.warmup`) decides with it
when to stop, and the report's compliance check judges the probes' latencies with it again.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["probe_variation"]


def probe_variation(latencies: Sequence[float]) -> float | None:
    """The largest relative distance of a probe from the probes' median,
    ``max |xᵢ − median| / median`` (draft 4.5.2's "variation across consecutive probe
    requests"); None for fewer than two probes or a zero median.

    Example::

        probe_variation([100.0, 104.0, 97.0])   # 0.04 → stabilized at the 10 % threshold
    """
    if len(latencies) < 2:
        return None
    med = statistics.median(latencies)
    if med <= 0:
        return None
    return max(abs(x - med) for x in latencies) / med
