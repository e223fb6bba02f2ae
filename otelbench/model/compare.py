"""The shape of ``compare.json`` as types: what :func:`otelbench.compare.compare_runs` returns.

``otelbench compare`` (draft section 6) writes one comparison of systems, each formed by one or
more runs' ``report.json``. :class:`CompareResult` is the whole document, keys in document
order; :class:`CompareBody` is the comparison before its own verdict (``compliance``, computed
from it and the runs' reports by :func:`otelbench.report.compliance.comparison_compliance`):

* ``compare_version`` (:data:`otelbench.compare.COMPARE_VERSION`), ``baseline`` (the first
  system's name), ``group_by`` (the dotted report keys that formed the systems);
* ``method``: the statistics of draft 6.3 in words and their parameters (:class:`Method`);
* ``systems``: one :class:`SystemRow` per system, in the order of their first run;
* ``metrics``: one :class:`MetricResult` per compared metric (``otelbench.compare.METRICS``,
  less those no run has): per system :class:`SystemStats`, per other system a
  :class:`Comparison` against the baseline;
* ``normalization``: draft 6.2's throughput, per-GPU and cost normalization
  (:class:`Normalization`);
* ``checklist``: draft 6.1/6.4's equivalence items (:class:`ChecklistItem`);
* ``deviations``: what departs from draft section 6, in words;
* ``compliance``: the comparison's draft 2 verdict, the shape of the report's ``compliance``.

Values the runs' reports declare are JSON values as the reports hold them: a system's group
key is a :data:`~otelbench.model.jsonvalue.JsonObject`, a checklist item's values ``Any``.

Usage::

    from otelbench.compare import compare_runs
    from otelbench.model.compare import CompareResult

    result: CompareResult = compare_runs(runs)
    result["metrics"][0]["comparisons"]["b"]["verdict"]   # e.g. "better"
"""

# No ``from __future__ import annotations``: see otelbench.model.report.

from typing import Any, Literal, TypedDict

from otelbench.model.jsonvalue import JsonObject
from otelbench.model.report import ComplianceSection

__all__ = [
    "ChecklistItem",
    "ChecklistStatus",
    "CompareBody",
    "CompareResult",
    "Comparison",
    "ConfidenceInterval",
    "GpuStatement",
    "Method",
    "MetricResult",
    "Normalization",
    "PermutationResult",
    "RunRef",
    "SystemRow",
    "SystemStats",
    "WelchResult",
]


class RunRef(TypedDict):
    """An entry of a system's ``runs``: a compared run's id and its ``report.json``."""

    id: str
    path: str


class GpuStatement(TypedDict):
    """A system's ``gpus`` (also ``normalization.systems[name]``): its GPU count for draft 6.2's
    per-GPU normalization, each run's, where they came from, and what was done."""

    count: int | None
    """The system's GPU count; None when unknown or not one count; 0 for CPU only."""
    per_run: list[int | None]
    source: list[str]
    """``--gpus SYSTEM=N``, or what ``run.sut.hardware`` said, one entry per distinct source."""
    status: str
    """``normalized: …``, or why not (not declared, no accelerator, mixed hardware)."""


class SystemRow(TypedDict):
    """An entry of ``systems``: one system, the runs that form it."""

    id: str
    """``A``, ``B``, … in order of the first run (``S27`` on)."""
    name: str
    key: JsonObject
    """``{"system": name}`` when named with ``SYSTEM=PATH``, else the ``group_by`` key values."""
    baseline: bool
    n_runs: int
    runs: list[RunRef]
    gpus: GpuStatement
    run_deviations: list[str]
    """The distinct ``methodology.deviations`` of the system's runs' own reports."""


class ConfidenceInterval(TypedDict):
    """``ci`` of a system's statistics: the percentile-bootstrap interval of the mean."""

    low: float
    high: float


class SystemStats(TypedDict):
    """``metrics[i].systems[name]``: a metric's per-run values of one system (draft 6.3)."""

    n: int
    values: list[float]
    mean: float | None
    sample_std: float | None
    """ddof = 1; None below 2 runs."""
    ci: ConfidenceInterval | None
    """None below ``draft.COMPARISON_MIN_RUNS`` runs."""


class WelchResult(TypedDict):
    """``welch`` of a comparison: Welch's t-test (``otelbench.metrics.stats.WelchTest``)."""

    t: float | None
    df: float | None
    p: float


class PermutationResult(TypedDict):
    """``permutation`` of a comparison (``otelbench.metrics.stats.PermutationTest``)."""

    p: float
    exact: bool
    permutations: int
    min_p: float


class Comparison(TypedDict):
    """``metrics[i].comparisons[name]``: a system against the baseline, for one metric."""

    vs: str
    """The baseline's name."""
    difference: float | None
    relative_difference: float | None
    welch: WelchResult | None
    permutation: PermutationResult | None
    significant: bool | None
    verdict: str
    """``better``, ``worse``, ``no significant difference``, ``no data`` or ``not tested…``."""


class MetricResult(TypedDict):
    """An entry of ``metrics``: one metric compared (``otelbench.compare.MetricSpec``)."""

    key: str
    label: str
    unit: str
    better: Literal["lower", "higher"]
    source: str
    systems: dict[str, SystemStats]
    comparisons: dict[str, Comparison]
    """Every system but the baseline, by name."""


class Method(TypedDict):
    """``method``: the statistics of draft 6.3, in words and parameters."""

    runs_required: int
    per_system: str
    difference: str
    primary_test: Literal["welch_t"]
    welch_t: str
    permutation: str
    significance: str
    confidence: float
    alpha: float
    bootstrap_resamples: int
    seed: int


class Normalization(TypedDict):
    """``normalization``: draft 6.2's normalizations, per GPU by system."""

    throughput: str
    per_gpu: str
    systems: dict[str, GpuStatement]
    cost: str


ChecklistStatus = Literal["equal", "differs", "not recorded"]
"""A checklist item's ``status``."""


class ChecklistItem(TypedDict):
    """An entry of ``checklist``: one equivalence item of draft 6.1/6.4."""

    item: str
    label: str
    draft: str
    identity: bool
    """Identifies the systems (expected to differ): never a deviation."""
    status: ChecklistStatus
    values: dict[str, list[Any]]
    """Per system, the distinct values its runs have."""
    differences: dict[str, dict[str, list[Any]]]
    """For ``differs``: per dotted key that differs, per system its distinct values."""


class CompareBody(TypedDict):
    """``compare.json`` before its verdict: what ``comparison_compliance`` judges."""

    compare_version: int
    baseline: str
    group_by: list[str]
    method: Method
    systems: list[SystemRow]
    metrics: list[MetricResult]
    normalization: Normalization
    checklist: list[ChecklistItem]
    deviations: list[str]


class CompareResult(CompareBody):
    """``compare.json``, the whole comparison, keys in document order."""

    compliance: ComplianceSection
