"""Reasoning phases (Meridian ADR-0005): TTOT, think tokens, output-phase ITL."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otelbench.metrics import Ragged, consecutive_intervals, reasoning_phases


def test_phases_by_hand() -> None:
    # request 0: think tokens at 0.10, 0.20, 0.30 (the last is </think>), output at 0.50, 0.60,
    #            0.65 → TTFT 0.10, TTOT 0.50, gap 0.20, 3 think tokens, output ITL 0.10, 0.05
    # request 1: no think phase, tokens at 0.05, 0.07 → TTOT = TTFT = 0.05, gap undefined
    # request 2: think phase cut off (boundary = token count) → TTOT undefined, no output ITL
    # request 3: no tokens at all
    t = Ragged.from_lengths(
        [0.10, 0.20, 0.30, 0.50, 0.60, 0.65, 0.05, 0.07, 0.2, 0.4], [6, 2, 2, 0]
    )
    p = reasoning_phases(t, [3, 0, 2, 0])
    assert p.ttft[:3].tolist() == [0.10, 0.05, 0.2]
    assert math.isnan(p.ttft[3])
    assert p.ttot[:2].tolist() == [0.50, 0.05]
    assert math.isnan(p.ttot[2])
    assert math.isnan(p.ttot[3])
    assert p.think_to_output_gap[0] == pytest.approx(0.20)
    assert np.isnan(p.think_to_output_gap[1:]).all()
    assert p.think_tokens.tolist() == [3, 0, 2, 0]
    assert p.output_tokens.tolist() == [3, 2, 0, 0]
    assert p.has_think_phase.tolist() == [True, False, True, False]
    assert p.think_phase_ended.tolist() == [True, True, False, False]
    itl = [g.tolist() for g in p.output_itl]
    assert itl[0] == pytest.approx([0.10, 0.05])
    assert itl[1] == pytest.approx([0.02])
    assert itl[2:] == [[], []]


def test_boundary_validation() -> None:
    t = Ragged.from_lengths([0.1, 0.2], [2])
    with pytest.raises(ValueError, match="one phase boundary"):
        reasoning_phases(t, [0, 0])
    with pytest.raises(ValueError, match="within 0"):
        reasoning_phases(t, [3])
    with pytest.raises(ValueError, match="within 0"):
        reasoning_phases(t, [-1])


@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 1000), max_size=12),
            st.floats(0.0, 1.0),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_phase_split_properties(requests: list[tuple[list[int], float]]) -> None:
    times: list[float] = []
    lengths: list[int] = []
    boundaries: list[int] = []
    for gaps, split in requests:
        times += np.cumsum(gaps).astype(float).tolist()
        lengths.append(len(gaps))
        boundaries.append(round(split * len(gaps)))
    t = Ragged.from_lengths(times, lengths)
    p = reasoning_phases(t, boundaries)
    whole_itl = consecutive_intervals(t)
    for i in range(len(requests)):
        g, b = t[i], boundaries[i]
        assert p.think_tokens[i] + p.output_tokens[i] == g.size
        assert p.output_itl[i].tolist() == whole_itl[i][b:].tolist()  # never across the boundary
        if b < g.size:
            assert p.ttot[i] == g[b]
            assert p.ttot[i] >= p.ttft[i]
            if b == 0:
                assert p.ttot[i] == p.ttft[i]
                assert math.isnan(p.think_to_output_gap[i])
            else:
                assert p.think_to_output_gap[i] == g[b] - g[b - 1]
        else:
            assert math.isnan(p.ttot[i])
