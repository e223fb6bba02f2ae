"""The report's configuration summary (draft 5.1.5.1), and the facts of a report it reads.

:func:`configuration_summary` is the 5.1.5.1 *Configuration Summary* as one line of text per item
(SUT boundary, model, hardware, software, workload and seed, load model, request count and
duration, warm-up, prefix caching, guardrails, timing method, clock synchronization); what the run
did not record reads :data:`NOT_DECLARED`. It is a pure function of the report's facts
(:class:`~otelbench.model.report.ReportBody`, ``docs/report-schema.md``), so a report rebuilt from
the same store recomputes it identically.
:class:`ReportFacts` and the ``*_text`` functions are shared with the compliance checks
(``otelbench.report.compliance``), which cite the same facts as evidence.

Usage::

    from otelbench.report import build_report
    from otelbench.report.configuration import configuration_summary

    configuration_summary(build_report("otelbench.duckdb"))["sut_boundary"]
    # 'Model Engine (draft 4.1.1)'
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from otelbench import semconv
from otelbench.model import report as rt
from otelbench.render.format import NA, fmt, nonblank, number

__all__ = [
    "NOT_DECLARED",
    "STANDARD_BOUNDARIES",
    "ReportFacts",
    "boundary_text",
    "clock_text",
    "configuration_summary",
    "declared_text",
    "guardrails_text",
    "tokenizer_text",
    "warmup_text",
    "workload_text",
]

NOT_DECLARED: Final = "not declared"
"""What a configuration item reads when the run did not record it."""

STANDARD_BOUNDARIES: Final = {
    "Model Engine": "4.1.1",
    "Application Gateway": "4.1.2",
    "Compound System": "4.1.3",
}
"""The draft's three SUT configurations and their sections."""


# ------------------------------------------------------------------------------------------
# facts: the report's sections the configuration and the checks read
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportFacts:
    """The parts of a report the configuration and the checks read."""

    report: rt.ReportBody

    @property
    def run(self) -> rt.RunSection:
        return self.report["run"]

    @property
    def sut(self) -> rt.Sut:
        return self.run["sut"]

    @property
    def load(self) -> rt.RunLoad | None:
        return self.run["load"]

    @property
    def mode(self) -> str | None:
        """``run.load.mode``: the load model (None: the run recorded no load)."""
        return None if self.load is None else self.load["mode"]

    @property
    def workload(self) -> rt.RunWorkload | None:
        return self.run["workload"]

    @property
    def workload_name(self) -> str | None:
        """``run.workload.name`` (None: no workload recorded, or a blank name)."""
        return None if self.workload is None else nonblank(self.workload["name"])

    @property
    def spec(self) -> rt.WorkloadSpec:
        """``run.workload.spec``: the workload's own specification (empty: none recorded)."""
        return {} if self.workload is None else self.workload["spec"]

    @property
    def requests(self) -> rt.RequestCounts:
        return self.run["requests"]

    @property
    def client(self) -> rt.ClientMetrics:
        return self.report["metrics"]["client"]

    @property
    def server(self) -> rt.ServerMetrics | None:
        return self.report["metrics"].get("server")

    @property
    def methodology(self) -> rt.Methodology:
        return self.report["methodology"]

    @property
    def itl_method(self) -> rt.ItlMethod:
        return self.methodology["itl_method"]

    @property
    def deviations(self) -> list[str]:
        return self.methodology["deviations"]

    @property
    def ttft_samples(self) -> int:
        return self.client["ttft_ms"]["count"]

    @property
    def succeeded(self) -> int:
        return self.requests["succeeded"]

    def warm(self) -> rt.WarmupWarm | None:
        """``run.warmup`` when a warm-up ran to its end (None: none configured, a cold start, or
        a run interrupted during its warm-up)."""
        w = self.run["warmup"]
        if w is None or w["mode"] == "cold_start" or "interrupted" in w:
            return None
        return w

    def target_host(self) -> str | None:
        target = nonblank(self.run["target"])
        if target is None:
            return None
        try:
            return urlsplit(target if "//" in target else f"//{target}").hostname
        except ValueError:
            return None

    def loopback(self) -> bool:
        """Whether the target is a loopback address: load generator and SUT share one host."""
        host = self.target_host()
        if host is None:
            return False
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False


# ------------------------------------------------------------------------------------------
# configuration summary (draft 5.1.5.1)
# ------------------------------------------------------------------------------------------


def boundary_text(f: ReportFacts) -> str | None:
    boundary = nonblank(f.sut.get("boundary"))
    if boundary is None:
        return None
    section = STANDARD_BOUNDARIES.get(boundary)
    return f"{boundary} (draft {section})" if section else f"{boundary} (not one of 4.1's three)"


def _length_text(spec: rt.LengthSpec) -> str:
    dist = nonblank(spec.get("distribution")) or NOT_DECLARED
    lo, hi = spec.get("min"), spec.get("max")
    if lo is not None and hi is not None:
        return f"{dist} {lo}–{hi} {spec.get('unit', 'tokens')}"
    if spec.get("target_lengths") is not None:
        return f"{dist} {spec['target_lengths']}"
    quantiles = spec.get("quantiles") or {}
    if quantiles:
        return f"{dist} ({', '.join(f'{k} {v}' for k, v in quantiles.items())})"
    return dist


def workload_text(f: ReportFacts) -> str | None:
    name = f.workload_name
    if name is None:
        return None
    spec = f.spec
    parts = []
    if spec.get("draft_section"):
        parts.append(f"draft {spec['draft_section']}")
    if spec.get("synthetic") is True and spec.get("draft_section") == "A.3":
        parts.append("synthetic stand-in")
    if isinstance(spec.get("input"), Mapping):
        parts.append(f"input {_length_text(spec['input'])}")
    if isinstance(spec.get("output"), Mapping):
        out = spec["output"]
        control = f" ({out['control']})" if out.get("control") else ""
        parts.append(f"output {_length_text(out)}{control}")
    if "prefix_sharing" in spec:
        ps = spec["prefix_sharing"]
        ratio = number(ps.get("ratio")) if ps else None
        parts.append(
            "no prefix sharing"
            if not ps
            else f"prefix sharing {ratio:.0%} of requests"
            if ratio is not None
            else "prefix sharing"
        )
    if "system_prompt" in spec:
        sp = spec["system_prompt"]
        parts.append(f"system prompt {sp.get('tokens')} tokens" if sp else "no system prompt")
    dataset = spec.get("dataset") or {}
    if dataset:
        parts.append(f"dataset {dataset.get('path', '?')} (sha256 {dataset.get('sha256', '?')})")
    source = spec.get("source_file")
    if source:
        parts.append(f"file {source.get('path', '?')} (sha256 {source.get('sha256', '?')})")
    return name + (f": {', '.join(parts)}" if parts else "")


def tokenizer_text(f: ReportFacts) -> str | None:
    tok = f.run["tokenizer"]
    if tok is None:
        return None
    parts = [f"Option {tok['option']}", tok["name"]]
    if vocab_size := tok.get("vocab_size"):
        parts.append(f"vocabulary {vocab_size}")
    if tok["source"]:
        parts.append(f"source {tok['source']}")
    if bos_eos := tok.get("bos_eos"):
        parts.append(f"BOS/EOS {bos_eos}")
    if system_prompt := tok.get("system_prompt"):
        parts.append(f"system prompt {system_prompt}")
    return ", ".join(parts)


def _load_text(f: ReportFacts) -> str | None:
    load = f.load
    if load is None:
        return None
    mode = load["mode"]
    if mode == "closed_loop":
        return f"closed-loop, concurrency {load['concurrency']} (draft 4.2.4)"
    params = ", ".join(
        f"{k} {v}"
        for k, v in load.get("arrival", {}).items()
        if k not in ("process", "rate", "seed")
    )
    rate = f" at {load['rate']} req/s" if load["rate"] is not None else ""
    extra = f" ({params})" if params else ""
    return f"open-loop, {mode} arrivals{rate}{extra} (draft 4.2.3)"


def _requests_text(f: ReportFacts) -> str:
    return (
        f"{f.requests['total']} measured requests ({f.requests['succeeded']} succeeded, "
        f"{f.requests['failed']} failed); {f.ttft_samples} TTFT samples"
    )


def _duration_text(f: ReportFacts) -> str:
    window = f.client["throughput"]["window_s"]
    measured = f"; measurement window {fmt(window, 2, 's')}" if window is not None else ""
    return f"{fmt(f.run['duration_s'], 1, 's')} (run){measured}"


_INTERRUPTED_WARMUP: Final = (
    f"None requests and None output tokens in {NA} at concurrency None, queue NOT drained; "
    "probes NOT stabilized (draft 4.5)"
)
"""How a warm-up interrupted before its end reads: nothing of it was recorded."""


def warmup_text(f: ReportFacts) -> str:
    w = f.run["warmup"]
    if (w is None and f.run["cold_start"] is True) or (w is not None and w["mode"] == "cold_start"):
        return "skipped: cold-start measurement declared (draft 4.5.3)"
    if w is None:
        # a run that recorded no warm-up ran none (the manifest lists it as a deviation)
        return "none: no warm-up ran before measurement"
    warm = f.warm()
    if warm is None:
        return _INTERRUPTED_WARMUP
    stabilized = "stabilized" if warm["stabilized"] else "NOT stabilized"
    after = warm["probe_after"]
    variation = None if after is None else after["variation"]
    var = f", variation {variation:.1%}" if variation is not None else ""
    return (
        f"{warm['requests']} requests and {warm['output_tokens']} output tokens in "
        f"{fmt(warm['duration_s'], 1, 's')} at concurrency {warm['concurrency']}, "
        f"{'queue drained' if warm['drained'] else 'queue NOT drained'}; probes {stabilized}"
        f"{var} (draft 4.5)"
    )


def declared_text(value: Any) -> str | None:
    """A SUT declaration as text: a string, a bool (enabled/disabled), or key: value pairs."""
    if isinstance(value, bool):
        return "enabled" if value else "disabled"
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {declared_text(v) or v}" for k, v in value.items()) or None
    return nonblank(value)


def guardrails_text(f: ReportFacts) -> str | None:
    declared = declared_text(f.sut.get("guardrails"))
    if declared is not None:
        return declared
    measured = f.report["metrics"].get("guardrails")
    if measured is not None:
        d = measured["disclosure"]
        stages = [
            f"{stage} filtering enabled ({', '.join(names)})"
            if names
            else f"{stage} filtering disabled"
            for stage, names in (("input", d["input_filters"]), ("output", d["output_filters"]))
        ]
        refused = measured["refusals"]["requests"]
        sha = nonblank(d["config_sha256"])
        return (
            f"otelbench guardrails, from their spans: {'; '.join(stages)}; {refused} "
            f"request(s) refused by a guardrail"
            + (f"; configuration sha256 {sha[:12]}" if sha else "")
        )
    if nonblank(f.sut.get("boundary")) == "Model Engine":
        return (
            "none in the measured path: the Model Engine boundary excludes input and output "
            "safety filtering (draft 4.1.1)"
        )
    return None


def _timing_text(f: ReportFacts) -> str:
    itl = f.itl_method
    protocol = nonblank(itl["protocol"]) or "streaming protocol not declared"
    client = (
        f"client: arrival time of every content chunk ({protocol}) on the load generator's "
        f"monotonic clock at µs resolution; ITL by Option {itl['option']} "
        "(distributed timing, draft 4.6.3), time between chunks as Option A"
    )
    server = f.server
    if server is None:
        return f"{client}; server: none (no server spans joined)"
    hooks = server["span_sources"].get(semconv.SPAN_HOOK_REQUEST, 0)
    joined = server["requests_joined"]
    if itl["server_option"] == "C":
        return (
            f"{client}; server: Option C, per-token engine-step timing from {hooks} engine-hook "
            f"spans ({joined} requests joined)"
        )
    return (
        f"{client}; server: phase durations only (no per-token timing) for {joined} joined requests"
    )


def clock_text(f: ReportFacts) -> str:
    declared = declared_text(f.sut.get("clock_sync"))
    if declared is not None:
        return declared
    host = f.target_host()
    if f.loopback():
        return (
            f"single host (draft 4.7.1): the target {host} is loopback, so the load generator "
            "and the SUT read the same CLOCK_MONOTONIC and CLOCK_REALTIME"
        )
    where = f"target host {host}" if host else "the target host"
    return (
        f"not verified: {where} is not loopback and no synchronization method or accuracy is "
        "declared (draft 4.7.2); client-vs-server differences are durations each measured on "
        "one clock"
    )


def configuration_summary(report: rt.ReportBody) -> rt.Configuration:
    """The draft 5.1.5.1 configuration summary of a report: one line of text per item.

    Keys are those of :data:`~otelbench.model.report.CONFIGURATION_LABELS`, in that order.
    Prefix caching, guardrails and clock synchronization come from the SUT declaration
    (``run.sut.prefix_caching``, ``.guardrails``, ``.clock_sync``) when the run declared them.
    Otherwise: prefix caching reads :data:`NOT_DECLARED`; guardrails are "none in the measured
    path" for a Model Engine boundary (4.1.1 excludes safety filtering) and
    :data:`NOT_DECLARED` for any other; clock synchronization is inherent for a loopback target
    (4.7.1) and "not verified" otherwise.

    >>> configuration_summary(report)["prefix_caching"]  # doctest: +SKIP
    'not declared'
    """
    f = ReportFacts(report)
    sut = f.sut
    version = nonblank(f.run["otelbench_version"])
    generator_host = nonblank(sut.get("load_generator_host"))
    generator = None
    if version or generator_host:
        generator = f"otelbench {version or '(version not recorded)'}" + (
            f" on {generator_host}" if generator_host else ""
        )
    seed = f.run["seed"]
    target = nonblank(f.run["target"])
    nd = NOT_DECLARED  # an item the run did not record
    return {
        "sut_boundary": boundary_text(f) or nd,
        "target": nd if target is None else target + (" (loopback)" if f.loopback() else ""),
        "model": nonblank(f.run["model"]) or nd,
        "hardware": declared_text(sut.get("hardware")) or nd,
        "software": declared_text(sut.get("software")) or nd,
        "load_generator": generator or nd,
        "workload": workload_text(f) or nd,
        "seed": nd if seed is None else f"{seed} (workload generation and arrival schedule)",
        "tokenizer": tokenizer_text(f) or nd,
        "load_model": _load_text(f) or nd,
        "requests": _requests_text(f),
        "duration": _duration_text(f),
        "warmup": warmup_text(f),
        "prefix_caching": declared_text(sut.get("prefix_caching")) or nd,
        "guardrails": guardrails_text(f) or nd,
        "timing_method": _timing_text(f),
        "clock_synchronization": clock_text(f),
    }
