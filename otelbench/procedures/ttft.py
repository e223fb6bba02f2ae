"""Draft 5.1, Time to First Token: one load level, the 5.1.5 reporting format.

Procedure (5.1.3): warm up (4.5), run the load (open loop at ``rate`` or closed loop at
``concurrency``) until the request count is reached, compute the TTFT distribution. The results
are the level's run report's: TTFT P50/P90/P95/P99/P99.9, mean, min, max and the sample count
(5.1.4.1), TTFT by input length (5.1.4.2, when input lengths vary), the queue-wait and prefill
components when the target's spans carry them (5.1.4.2), and the distribution as a CDF and a
histogram (5.1.5.4).

Example::

    run_procedure(TtftProcedure(TtftParams(rate=2.0)), spec)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final

import numpy as np

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec
from otelbench.model.procedure import TtftComponents, TtftDistribution, TtftSection
from otelbench.options import option
from otelbench.procedures.base import Procedure, RawParameters, level_entry, register_procedure
from otelbench.procedures.planning import shared_option
from otelbench.procedures.profiles import shortfalls
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.render.procedure import NA, fmt, table

__all__ = ["CDF_PERCENTS", "HISTOGRAM_BINS", "TtftParams", "TtftProcedure", "ttft_distribution"]

CDF_PERCENTS: Final = tuple(range(0, 101, 5))
HISTOGRAM_BINS: Final = 20


@dataclass(frozen=True)
class TtftParams:
    """5.1.2 load parameters: ``rate`` (open loop, ``arrival`` process) or ``concurrency``;
    ``requests`` None takes the profile's."""

    rate: float | None = option(None, help="Open loop: arrival rate, req/s.")
    concurrency: int | None = option(None, help="Closed loop: concurrency.")
    arrival: str = shared_option("arrival")
    requests: int | None = option(None, help="Requests (default: the profile's; draft 1,000).")

    def __post_init__(self) -> None:
        if (self.rate is None) == (self.concurrency is None):
            raise ConfigError("5.1 needs one of --rate (open loop) or --concurrency (closed loop)")


def ttft_distribution(ttft_ms: np.ndarray[Any, np.dtype[np.float64]]) -> TtftDistribution:
    """The 5.1.5.4 distribution: CDF points (``[percent, ms]``) and a histogram (ms edges).

    >>> d = ttft_distribution(np.array([1.0, 2.0, 3.0, 4.0]))
    >>> d["cdf_ms"][0], d["cdf_ms"][-1], sum(d["histogram"]["counts"])
    ([0, 1.0], [100, 4.0], 4)
    """
    v = ttft_ms[np.isfinite(ttft_ms)]
    if v.size == 0:
        return {"cdf_ms": [], "histogram": {"edges_ms": [], "counts": []}}
    cdf = [[q, float(x)] for q, x in zip(CDF_PERCENTS, np.percentile(v, CDF_PERCENTS), strict=True)]
    counts, edges = np.histogram(v, bins=HISTOGRAM_BINS)
    return {
        "cdf_ms": cdf,
        "histogram": {"edges_ms": [float(e) for e in edges], "counts": [int(c) for c in counts]},
    }


@register_procedure("ttft", "5.1", "Time to First Token")
class TtftProcedure(Procedure[TtftParams, TtftSection]):
    """Draft 5.1 (module docstring)."""

    @property
    def requests(self) -> int:
        return self.params.requests or self.profile.ttft_requests

    def planned_levels(self) -> int | None:
        return 1

    def load(self) -> LoadSpec:
        p = self.params
        if p.concurrency is not None:
            return LoadSpec(mode="closed_loop", requests=self.requests, concurrency=p.concurrency)
        return LoadSpec(mode=p.arrival, requests=self.requests, rate=p.rate)  # type: ignore[arg-type]

    def parameters(self) -> RawParameters:
        return {
            **asdict(self.params),
            "requests": self.requests,
            "load_model": "closed-loop" if self.params.concurrency is not None else "open-loop",
        }

    def run(self, session: ProcedureSession) -> None:
        session.run_level(self.load(), "5.1 load")

    def build(self, levels: list[Level]) -> TtftSection:
        level = levels[0]
        report = level.report  # None: the level has no stored run
        client = report["metrics"]["client"] if report else None
        server = report["metrics"].get("server") if report else None
        ttft = client["ttft_ms"] if client else None
        by_input = [b for b in client["ttft_by_input_tokens"] if b["count"]] if client else []
        samples = ttft["count"] if ttft else 0
        data = level.data
        values = (
            data.client.ttft_us[data.client.ok] / 1000.0
            if data is not None
            else np.empty(0, dtype=np.float64)
        )
        deviations = shortfalls(requests=self.requests)
        if self.params.rate is not None and self.params.arrival != "poisson":
            deviations.append(
                f"open-loop arrivals are {self.params.arrival}, not Poisson: 5.1.2.2 REQUIRES "
                "Poisson (--arrival poisson)"
            )
        if samples < draft.P99_9_MIN_SAMPLES:
            self.notes.append(
                f"P99.9 needs at least 10,000 samples (5.1.4.3); it is reported from {samples}"
            )
        components: TtftComponents
        if server is not None:
            components = {
                "source": "the target's server spans (draft 5.1.4.2: server instrumentation)",
                "queue_ms": server["queue_ms"],
                "prefill_ms": server["prefill_ms"],
                "server_ttft_ms": server["ttft_ms"],
                "decomposition": server["ttft_decomposition_ms"],
            }
        else:
            components = {
                "source": None,
                "reason": "the target sent no server spans: queue wait and prefill are not "
                "measurable from the client alone",
            }
        return {
            "levels": [level_entry(level)],
            "results": {
                "requests": report["run"]["requests"] if report else None,
                "sample_count": ttft["count"] if ttft else None,
                "duration_s": report["run"]["duration_s"] if report else None,
                "ttft_ms": ttft if ttft is not None else {},
            },
            "ttft_by_input_tokens": by_input,
            "ttft_by_input_tokens_applicable": len(by_input) > 1,
            "components": components,
            "distribution": ttft_distribution(values),
            "first_token_definition": (
                report["methodology"]["first_token_definition"] if report else None
            ),
            "deviations": deviations,
        }

    def render(self, result: TtftSection) -> list[str]:
        r = result["results"]
        t = r["ttft_ms"] or {}
        requests = r["requests"]
        rows = [["Requests", str(requests["total"] if requests else NA)]]
        rows.append(["Samples (successful, with a content token)", str(r.get("sample_count"))])
        rows.append(["Test duration", fmt(r.get("duration_s"), 1, "s")])
        for key, name in (
            ("p50", "P50"),
            ("p90", "P90"),
            ("p95", "P95"),
            ("p99", "P99"),
            ("p99_9", "P99.9"),
            ("mean", "Mean"),
            ("min", "Min"),
            ("max", "Max"),
        ):
            rows.append([f"TTFT {name}", fmt(t.get(key), 2, "ms")])
        lines = ["## Results (5.1.5.2)", "", *table(["Metric", "Value"], rows), ""]
        lines += ["## TTFT by input length (5.1.5.3)", ""]
        if result["ttft_by_input_tokens_applicable"]:
            lines += table(
                ["Input Tokens", "Requests", "P50 (ms)", "P95 (ms)", "P99 (ms)"],
                [
                    [b["bucket"], str(b["count"]), fmt(b["p50"], 2), fmt(b["p95"], 2),
                     fmt(b["p99"], 2)]
                    for b in result["ttft_by_input_tokens"]
                ],
            )  # fmt: skip
        else:
            lines.append("Not applicable: every request fell in one input-length bucket.")
        lines += ["", "## Queue wait and prefill (5.1.4.2)", ""]
        comp = result["components"]
        if comp["source"]:
            lines += table(
                ["Component", "P50 (ms)", "P99 (ms)", "Mean (ms)"],
                [
                    [name, fmt(s["p50"] if s else None, 2), fmt(s["p99"] if s else None, 2),
                     fmt(s["mean"] if s else None, 2)]
                    for s, name in (
                        (comp.get("queue_ms"), "Queue wait (server)"),
                        (comp.get("prefill_ms"), "Prefill (server)"),
                        (comp.get("server_ttft_ms"), "Server TTFT"),
                    )
                ],
            )  # fmt: skip
            lines.append(f"\nSource: {comp['source']}.")
        else:
            lines.append(f"Not measured: {comp['reason']}.")
        lines += ["", "## Distribution (5.1.5.4)", ""]
        hist = result["distribution"]["histogram"]
        if hist["counts"]:
            top = max(hist["counts"]) or 1
            lines.append("```")
            for lo, hi, n in zip(
                hist["edges_ms"], hist["edges_ms"][1:], hist["counts"], strict=False
            ):
                lines.append(f"{lo:10.2f} – {hi:10.2f} ms | {'#' * round(40 * n / top):<40} {n}")
            lines.append("```")
            cdf = {q: v for q, v in result["distribution"]["cdf_ms"]}
            lines += [
                "",
                "CDF: " + ", ".join(f"P{q} {cdf[q]:.2f} ms" for q in (0, 10, 25, 50, 75, 90, 100)),
            ]
        else:
            lines.append("No TTFT sample.")
        return lines
