"""The SUT declaration as types: what the tester declares about the system under test
(``--sut-config FILE`` and the ``--sut-*`` flags, :mod:`otelbench.sut.description`), which
becomes the report's ``run.sut`` (``docs/report-schema.md``, section ``run``: ``sut``).

Every field is optional (a declaration says what it knows); :func:`otelbench.sut.description.
sut_description` returns a :class:`SutDeclaration` whose values are validated and normalized
(a boundary spelled as the draft's 4.1 spells it, ``prefix_caching`` ``enabled`` /
``disabled``, numbers of milliseconds as floats).

:class:`ComparativeRun` is what ``otelbench run`` reads, when the run is made, of the
comparative run a declaration names (``guardrails.comparative_run``, draft 4.8.2) and keeps in
``run.sut.guardrails.comparative``: the evidence the ``guardrails-comparative`` check judges.

Usage::

    from otelbench.model.sut import SutDeclaration

    sut: SutDeclaration = sut_description(Path("sut.yaml"), {})
    sut["clock_sync"]["accuracy_ms"]     # float (when declared)
"""

# No ``from __future__ import annotations``: ``NotRequired``/``total`` must be seen when each
# class is made (see otelbench.model.report).

from typing import Literal, TypedDict

__all__ = [
    "ClockSyncDeclaration",
    "ComparativeProcedure",
    "ComparativeRun",
    "ComparativeRunReport",
    "ComparativeUnread",
    "GuardrailsDeclaration",
    "ProbeStream",
    "SutDeclaration",
    "TargetInfo",
]


class ClockSyncDeclaration(TypedDict, total=False):
    """``clock_sync`` (draft 4.7.2; ``run.sut.clock_sync``, ``docs/report-schema.md`` section
    ``run``): how the hosts' clocks are synchronized and how well."""

    method: str
    accuracy_ms: float


class ComparativeUnread(TypedDict):
    """The declared comparative run could not be read: where it was looked for and why not
    (``run.sut.guardrails.comparative``, ``docs/report-schema.md`` section ``run``)."""

    read: Literal[False]
    path: str
    reason: str


class ComparativeProcedure(TypedDict):
    """The declared comparative run is an ``otelbench test guardrail-overhead``
    ``procedure.json``: the configurations of its table 13 (``run.sut.guardrails.comparative``,
    ``docs/report-schema.md`` section ``run``)."""

    read: Literal[True]
    path: str
    kind: Literal["procedure"]
    configurations: list[str]


class ComparativeRunReport(TypedDict):
    """The declared comparative run is a run's ``report.json``: what the comparison needs of it
    (its run id, guardrails as summarized and as declared, workload, seed, succeeded requests,
    TTFT and end-to-end P50). ``read`` is False for a JSON object that is not a run report
    (``run.sut.guardrails.comparative``, ``docs/report-schema.md`` section ``run``)."""

    read: bool
    path: str
    kind: Literal["run"]
    run_id: str | None
    guardrails: str | None
    declared: "str | GuardrailsDeclaration | None"
    workload: str | None
    seed: int | None
    requests: int | None
    ttft_p50_ms: float | None
    e2e_p50_ms: float | None


ComparativeRun = ComparativeUnread | ComparativeProcedure | ComparativeRunReport
"""``run.sut.guardrails.comparative``: the declared comparative run as it was read (draft
4.8.2)."""


class GuardrailsDeclaration(TypedDict, total=False):
    """``guardrails`` (draft 4.8.1, 4.8.2): the input and output filters (a system's name or
    ``none``), whether they run in their default configuration, where the comparative run with
    them disabled is (``comparative_run``) and, once ``otelbench run`` has read it,
    ``comparative`` (``run.sut.guardrails``, ``docs/report-schema.md`` section ``run``)."""

    input_filter: str
    output_filter: str
    default_configuration: bool
    comparative_run: str
    comparative: ComparativeRun


class ProbeStream(TypedDict):
    """``probe``: the stream of a continuous probe's segment (``otelbench probe``,
    :mod:`otelbench.live.probe`) and the rate it sends at, requests per second."""

    stream: str
    rate: float


class SutDeclaration(TypedDict, total=False):
    """A validated SUT declaration, the declared part of ``run.sut`` (module docstring):
    ``boundary`` (4.1), ``hardware``, ``software``, ``model_version`` and ``quantization``
    (5.1.2.3), ``prefix_caching`` (declared: ``enabled`` or ``disabled``), ``clock_sync``
    (4.7.2), ``network_rtt_ms`` (4.7.3) and ``guardrails`` (4.8).

    It is also the SUT a run records (``RunConfig.sut``, the run manifest's ``sut``,
    ``procedure.json``'s ``configuration.sut``): the declaration with what
    :func:`otelbench.benchmark.describe_sut` detects or adds, which no declaration sets:
    ``software`` and ``hardware`` when not declared, ``load_generator_host``, for a target
    otelbench launched ``boundary``, ``prefix_caching`` (in words) and ``process_priority``,
    and ``guardrails.comparative``, the declared comparative run as read. A continuous
    probe's segment records its ``probe`` stream instead."""

    boundary: str
    hardware: str
    software: str
    load_generator_host: str
    process_priority: str
    model_version: str
    quantization: str
    prefix_caching: str
    clock_sync: ClockSyncDeclaration
    network_rtt_ms: float
    guardrails: GuardrailsDeclaration
    probe: ProbeStream


class TargetInfo(TypedDict, total=False):
    """What the target says about itself (``preflight``): the models its ``/v1/models`` lists
    (empty when it has none), ``owned_by`` of the model under test (when listed) and vLLM's
    ``/version``; empty before any target was checked. The report's ``run.sut.software`` is
    made of it when nothing was declared."""

    models: list[str]
    owned_by: str | None
    version: str
