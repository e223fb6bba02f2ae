"""Profiles: the procedures' default sizes — the draft's minimums, or scaled down for demos and CI.

A profile only supplies defaults; an explicit option beats it. Whatever the source, every
effective parameter below the draft's minimum is listed in the procedure report as a deviation
(:func:`shortfalls`), so a ``quick`` run says plainly what it did not do.

=========================  ==========  ==========  ==========================================
parameter                  ``draft``   ``quick``   draft reference
=========================  ==========  ==========  ==========================================
ttft_requests              1000        40          5.1.2.1 (>= 1,000 for P99)
level_duration_s           60          3           5.2.2.1, 5.3.2 (>= 60 s per level)
min_level_requests         1           6           (a floor so a short level has samples)
itl_requests               100         12          5.4.2 (>= 100 requests)
capacity_requests_per_slot 100         3           5.5.3 step 3 (>= 100 completions per slot)
capacity_min_duration_s    60          0           5.5.3 step 3 (>= 60 s)
probe_requests             200         16          5.3.3 step 1 (capacity estimate; no minimum)
probe_concurrency          16          8           (closed-loop capacity probe)
search_max_levels          20          8           (bound on a search's levels)
rate_resolution            0.05        0.15        5.2.3 (search step, × capacity estimate)
concurrency_resolution     0.0         0.25        5.5.3 (convergence, × passing concurrency)
warm-up                    4.5 (100    8 requests  4.5.1 (>= 100 requests and 10,000 tokens)
                           requests,   0 tokens
                           10k tokens)
=========================  ==========  ==========  ==========================================

Example::

    profile = get_profile("quick")
    profile.level_duration_s     # 3.0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from otelbench import draft
from otelbench.errors import registered
from otelbench.loadgen.warmup import WarmupSpec

__all__ = [
    "DRAFT",
    "PROFILES",
    "QUICK",
    "Profile",
    "get_profile",
    "shortfalls",
]


@dataclass(frozen=True)
class Profile:
    """Default sizes of every procedure (see the module docstring's table)."""

    name: str
    ttft_requests: int
    level_duration_s: float
    min_level_requests: int
    itl_requests: int
    capacity_requests_per_slot: int
    capacity_min_duration_s: float
    probe_requests: int
    probe_concurrency: int
    search_max_levels: int
    rate_resolution: float
    concurrency_resolution: float
    warmup: WarmupSpec = field(default_factory=WarmupSpec)


DRAFT: Final = Profile(
    name="draft",
    ttft_requests=draft.P99_MIN_SAMPLES,
    level_duration_s=draft.LEVEL_MIN_DURATION_S,
    min_level_requests=1,
    itl_requests=draft.ITL_MIN_REQUESTS,
    capacity_requests_per_slot=draft.CAPACITY_REQUESTS_PER_SLOT,
    capacity_min_duration_s=draft.CAPACITY_MIN_DURATION_S,
    probe_requests=200,
    probe_concurrency=16,
    search_max_levels=20,
    rate_resolution=0.05,
    concurrency_resolution=0.0,
    warmup=WarmupSpec(),
)
QUICK: Final = Profile(
    name="quick",
    ttft_requests=40,
    level_duration_s=3.0,
    min_level_requests=6,
    itl_requests=12,
    capacity_requests_per_slot=3,
    capacity_min_duration_s=0.0,
    probe_requests=16,
    probe_concurrency=8,
    search_max_levels=8,
    rate_resolution=0.15,
    concurrency_resolution=0.25,
    warmup=WarmupSpec(min_requests=8, min_output_tokens=0, probes=3),
)
PROFILES: Final[dict[str, Profile]] = {p.name: p for p in (DRAFT, QUICK)}


def get_profile(name: str) -> Profile:
    """The registered profile ``name``; an unknown name is one ConfigError listing the known."""
    return registered(PROFILES, name, "profile")


def shortfalls(
    *,
    requests: int | None = None,
    level_duration_s: float | None = None,
    levels: int | None = None,
    itl_requests: int | None = None,
    requests_per_slot: int | None = None,
    slot_duration_s: float | None = None,
) -> list[str]:
    """Deviations of the given effective parameters from the draft's minimums (None: not used).

    >>> shortfalls(requests=40)
    ['40 requests, fewer than the 1000 the draft requires for P99 (5.1.2.1)']
    """
    out = []
    if requests is not None and requests < draft.P99_MIN_SAMPLES:
        out.append(
            f"{requests} requests, fewer than the {draft.P99_MIN_SAMPLES} the draft requires for "
            "P99 (5.1.2.1)"
        )
    if level_duration_s is not None and level_duration_s < draft.LEVEL_MIN_DURATION_S:
        out.append(
            f"{level_duration_s:g} s per load level, shorter than the draft's minimum of "
            f"{draft.LEVEL_MIN_DURATION_S:g} s (5.2.2.1, 5.3.2)"
        )
    if levels is not None and levels < draft.SWEEP_MIN_LEVELS:
        out.append(f"{levels} load levels, fewer than the {draft.SWEEP_MIN_LEVELS} of 5.3.2")
    if itl_requests is not None and itl_requests < draft.ITL_MIN_REQUESTS:
        out.append(
            f"{itl_requests} requests per level, fewer than the {draft.ITL_MIN_REQUESTS} of 5.4.2"
        )
    if requests_per_slot is not None and requests_per_slot < draft.CAPACITY_REQUESTS_PER_SLOT:
        out.append(
            f"{requests_per_slot} request completions per concurrency slot, fewer than the "
            f"{draft.CAPACITY_REQUESTS_PER_SLOT} of 5.5.3"
        )
    if slot_duration_s is not None and slot_duration_s < draft.CAPACITY_MIN_DURATION_S:
        out.append(
            f"levels planned for at least {slot_duration_s:g} s, shorter than the "
            f"{draft.CAPACITY_MIN_DURATION_S:g} s of 5.5.3"
        )
    return out
