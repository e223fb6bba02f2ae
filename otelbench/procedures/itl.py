"""Draft 5.4, Inter-Token Latency Distribution: ITL at 25/50/75/90 % of saturation.

Saturation (the reference rate) is given (``--saturation-rps``) or read from a 5.3 result
(``procedure.json`` of ``throughput-latency``): the offered rate of its throughput **peak** —
the level of highest achieved throughput up to the saturation point, which the draft's Table 5
calls the saturation point ("22 req/s (throughput peaks)").

Each level runs open loop at its fraction of the reference with ``requests`` requests and
reports (5.4.4) the pooled ITL percentiles P50/P90/P95/P99/P99.9, mean and standard deviation,
the per-request jitter (std of a request's ITL) and maximum pause P50/P95/P99, and the shape:
modality (KDE peak count) and the P99/P50 tail ratio — all from the level's run report
(client-side Option B; server-side Option C next to it when engine-hook spans exist). TTFT is
never part of ITL (5.4.3).

Example::

    run_procedure(ItlProcedure(ItlParams(saturation_rps=4.0)), spec)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from otelbench import draft
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec
from otelbench.metrics import tail_class, tail_spacing_ratio
from otelbench.model.procedure import (
    ItlLevel,
    ItlMeasurements,
    ItlSection,
    ItlTail,
    TradeoffSection,
)
from otelbench.model.report import Report, Summary
from otelbench.options import option
from otelbench.procedures.base import Procedure, RawParameters, level_entry, register_procedure
from otelbench.procedures.planning import fraction_levels, shared_option
from otelbench.procedures.profiles import shortfalls
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.render.procedure import NA, fmt, table

__all__ = ["ItlParams", "ItlProcedure", "itl_level", "saturation_from_sweep"]


class SweepResult(TradeoffSection):
    """A 5.3 ``procedure.json`` as ``--sweep`` gives it: the envelope's ``procedure`` and the
    section's keys (:func:`saturation_from_sweep` reads ``peak_index`` and ``levels``)."""

    procedure: str


def saturation_from_sweep(result: SweepResult) -> tuple[float, str]:
    """The reference rate from a 5.3 ``procedure.json`` dict, and where it came from.

    >>> saturation_from_sweep({"procedure": "throughput-latency", "peak_index": 1,
    ...                        "levels": [{"offered_rps": 1.0}, {"offered_rps": 2.0}]})[0]
    2.0
    """
    if result.get("procedure") != "throughput-latency":
        raise ConfigError("--sweep must be the procedure.json of a throughput-latency (5.3) run")
    peak = result.get("peak_index")
    levels = result.get("levels") or []
    rate = levels[peak].get("offered_rps") if peak is not None and 0 <= peak < len(levels) else None
    if peak is None or rate is None:
        raise ConfigError("the 5.3 result has no throughput peak to take saturation from")
    return float(rate), f"offered rate of the throughput peak (level {peak}) of a 5.3 sweep"


@dataclass(frozen=True)
class ItlParams:
    """5.4.2 setup parameters: the reference (``saturation_rps`` or a 5.3 ``sweep`` file),
    the fractions, ``requests`` per level (None: the profile's)."""

    saturation_rps: float | None = option(
        None, help="Saturation throughput, req/s (levels are % of it)."
    )
    sweep: Path | None = option(
        None, help="A 5.3 procedure.json: saturation = its throughput peak."
    )
    fractions: tuple[float, ...] = draft.ITL_LOAD_FRACTIONS
    requests: int | None = option(
        None, help="Requests per level (default: the profile's; draft 100)."
    )
    arrival: str = shared_option("arrival")

    def __post_init__(self) -> None:
        if (self.saturation_rps is None) == (self.sweep is None):
            raise ConfigError("5.4 needs one of --saturation-rps or --sweep (a 5.3 result)")
        if self.saturation_rps is not None and not self.saturation_rps > 0:
            raise ConfigError("--saturation-rps must be > 0")
        if self.arrival in ("closed_loop", "trace"):
            raise ConfigError("5.4 load levels are open-loop rates")
        fraction_levels(1.0, self.fractions)

    def reference(self) -> tuple[float, str]:
        if self.saturation_rps is not None:
            return self.saturation_rps, "given (--saturation-rps)"
        assert self.sweep is not None
        try:
            result = json.loads(Path(self.sweep).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read the 5.3 result {self.sweep}: {exc}") from None
        return saturation_from_sweep(result)


def itl_level(report: Report | None) -> ItlMeasurements:
    """A level's 5.4.4 measurements from its run report (client Option B; server Option C);
    every figure None, and ``itl_ms`` empty, for a level without a stored run."""
    client = report["metrics"]["client"] if report else None
    server = report["metrics"].get("server") if report else None
    itl = client["itl_ms"] if client else None
    per_request = client["itl_per_request"] if client else None
    shape = client["itl_shape"] if client else None
    return {
        "itl_ms": itl if itl is not None else {},
        "samples": itl["count"] if itl else None,
        "jitter_ms": per_request["jitter_ms"] if per_request else None,
        "max_pause_ms": per_request["max_pause_ms"] if per_request else None,
        "p99_p50_ratio": client["itl_p99_p50_ratio"] if client else None,
        "shape": {
            "peaks": shape["peaks"] if shape else None,
            "multimodal": shape["multimodal"] if shape else None,
            "peak_locations_ms": shape["peak_locations_ms"] if shape else None,
            "tail_ratio": shape["p99_p50_ratio"] if shape else None,
        },
        "tail": _tail(itl),
        "server_itl_ms": server.get("itl_ms") if server else None,
        "method": report["methodology"]["itl_method"]["name"] if report else None,
    }


def _tail(itl: Summary | None) -> ItlTail:
    """The tail characterization of 5.4.4.3 ("exponential, heavy-tailed"): the spacing ratio of
    :func:`otelbench.metrics.tail_spacing_ratio` and its class."""
    ratio = tail_spacing_ratio(*((itl["p90"], itl["p99"], itl["p99_9"]) if itl else (None,) * 3))
    return {"spacing_ratio": ratio, "class": tail_class(ratio)}


@register_procedure("itl", "5.4", "Inter-Token Latency Distribution")
class ItlProcedure(Procedure[ItlParams, ItlSection]):
    """Draft 5.4 (module docstring)."""

    def __init__(self, params: ItlParams) -> None:
        super().__init__(params)
        self.reference_rps, self.reference_source = params.reference()

    @property
    def requests(self) -> int:
        return self.params.requests or self.profile.itl_requests

    def planned_levels(self) -> int | None:
        return len(self.params.fractions)

    def parameters(self) -> RawParameters:
        return {
            **asdict(self.params),
            "saturation_rps": self.reference_rps,
            "saturation_source": self.reference_source,
            "requests": self.requests,
            "minimum_output_tokens": draft.ITL_MIN_OUTPUT_TOKENS,
            "measurement_method": "distributed timing at the client (4.6.3 Option B: a chunk's "
            "arrival time is each of its tokens'); server-side token timing (Option C) next to "
            "it when the target's engine-hook spans exist",
        }

    def run(self, session: ProcedureSession) -> None:
        rates = fraction_levels(self.reference_rps, self.params.fractions)
        for fraction, rate in zip(self.params.fractions, rates, strict=True):
            load = LoadSpec(mode=self.params.arrival, requests=self.requests, rate=rate)  # type: ignore[arg-type]
            session.run_level(load, f"{100 * fraction:.0f}% of saturation", {"fraction": fraction})

    def build(self, levels: list[Level]) -> ItlSection:
        entries = [cast(ItlLevel, level_entry(lv, itl=itl_level(lv.report))) for lv in levels]
        deviations = shortfalls(itl_requests=self.requests)
        marker = f"fewer than {draft.ITL_MIN_OUTPUT_TOKENS} output tokens"
        short = [
            lv.index
            for lv in levels
            if any(
                marker in str(d)
                for d in (lv.report["methodology"]["deviations"] if lv.report else [])
            )
        ]
        if short:
            deviations.append(
                f"level(s) {', '.join(map(str, short))}: some requests generated fewer than "
                f"{draft.ITL_MIN_OUTPUT_TOKENS} output tokens (5.4.2)"
            )
        return {
            "saturation": {"rps": self.reference_rps, "source": self.reference_source},
            "levels": entries,
            "deviations": deviations,
        }

    def render(self, result: ItlSection) -> list[str]:
        sat = result["saturation"]
        lines = [
            f"Saturation reference: {fmt(sat['rps'], 3)} req/s — {sat['source']}.",
            "",
            "## ITL results per load level (5.4.5)",
            "",
        ]
        header = ["Metric"] + [
            f"{100 * float(lv.get('fraction', 0)):.0f}% ({fmt(lv.get('offered_rps'), 3)} r/s)"
            for lv in result["levels"]
        ]
        itls = [lv["itl"] for lv in result["levels"]]

        def row(name: str, get: Any, digits: int = 2) -> list[str]:
            return [name] + [fmt(get(i), digits) if get(i) is not None else NA for i in itls]

        rows = [
            ["ITL Samples"] + [str(i["samples"]) for i in itls],
            row("ITL P50 (ms)", lambda i: i["itl_ms"].get("p50")),
            row("ITL P90 (ms)", lambda i: i["itl_ms"].get("p90")),
            row("ITL P95 (ms)", lambda i: i["itl_ms"].get("p95")),
            row("ITL P99 (ms)", lambda i: i["itl_ms"].get("p99")),
            row("ITL P99.9 (ms)", lambda i: i["itl_ms"].get("p99_9")),
            row("ITL Mean (ms)", lambda i: i["itl_ms"].get("mean")),
            row("ITL Std Dev (ms)", lambda i: i["itl_ms"].get("std")),
            row("P99/P50 Ratio", lambda i: i["p99_p50_ratio"]),
            ["Tail (5.4.4.3)"]
            + [
                NA
                if i["tail"]["class"] is None
                else f"{i['tail']['class']} (spacing {i['tail']['spacing_ratio']:.2f})"
                for i in itls
            ],
            row("Jitter P50 (ms)", lambda i: (i["jitter_ms"] or {}).get("p50")),
            row("Jitter P95 (ms)", lambda i: (i["jitter_ms"] or {}).get("p95")),
            row("Jitter P99 (ms)", lambda i: (i["jitter_ms"] or {}).get("p99")),
            row("Max pause P50 (ms)", lambda i: (i["max_pause_ms"] or {}).get("p50")),
            row("Max pause P95 (ms)", lambda i: (i["max_pause_ms"] or {}).get("p95")),
            row("Max pause P99 (ms)", lambda i: (i["max_pause_ms"] or {}).get("p99")),
            ["Modality"]
            + [
                NA
                if i["shape"]["peaks"] is None
                else ("multimodal" if i["shape"]["multimodal"] else "unimodal")
                + f" ({i['shape']['peaks']} peak(s))"
                for i in itls
            ],
            row("Server ITL P50 (ms, Option C)", lambda i: (i["server_itl_ms"] or {}).get("p50")),
            row("Server ITL P99 (ms, Option C)", lambda i: (i["server_itl_ms"] or {}).get("p99")),
        ]
        return lines + table(header, rows)
