"""Draft 5.9, Long Context Scaling: one level per input length; the 5.9.5 table and fits.

Procedure (5.9.3), on the ``long-context`` workload (A.5: a document then a 100-token question,
``output_tokens`` out, 256 by default to isolate prefill): for each context length in ascending
order, one closed-loop level at low concurrency (1 by default; the draft says 1–4) of
``requests`` requests (at least 20, 5.9.2) whose inputs all have that length. Lengths longer than
the context window (``max_context_len - output_tokens``) are capped to it; lengths the cap
makes equal are run once; both are listed as deviations.

Results (5.9.4): per length TTFT mean / P50 / P95 and ms per 1K input tokens, time per input
token, the power-law fit ``TTFT ∝ L^k`` (k and R²) and the linear fit (µs per token, R²); the
best fit is the one with the larger R² (5.9.5's "Best fit" line). The length of a request is the
level's input length (the workload sends exactly that many token ids).

Example::

    run_procedure(LongContextProcedure(LongContextParams(max_context_len=2048)), spec)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Final, cast

import numpy as np

from otelbench import draft
from otelbench.errors import ConfigError, OtelbenchError
from otelbench.loadgen.runner import LoadSpec
from otelbench.metrics.scaling import long_context_scaling
from otelbench.metrics.summary import percentile
from otelbench.model.jsonvalue import JsonObject
from otelbench.model.procedure import (
    LengthRow,
    LongContextFits,
    LongContextLevel,
    LongContextSection,
)
from otelbench.options import option
from otelbench.procedures.base import Procedure, RawParameters, level_entry, register_procedure
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.render.procedure import fmt, table

__all__ = [
    "LONG_CONTEXT_WORKLOAD",
    "LongContextParams",
    "LongContextProcedure",
    "plan_lengths",
]

LONG_CONTEXT_WORKLOAD: Final = "long-context"
QUESTION_TOKENS: Final = 100
"""The long-context workload's question (A.5); every length must exceed it."""


def plan_lengths(
    lengths: tuple[int, ...], cap: int | None
) -> tuple[list[tuple[int, int]], list[str]]:
    """``([(requested, sent), …] ascending by sent length, deviations)`` under ``cap``.

    Lengths above ``cap`` are sent as ``cap``; a sent length already planned is dropped.

    >>> plan_lengths((1024, 4096, 8192), 2000)
    ([(1024, 1024), (4096, 2000)], ['input lengths 4096, 8192 capped to 2000 tokens (the context window less the output); 8192 not run: the cap makes it 2000, already run'])
    """  # noqa: E501
    out: list[tuple[int, int]] = []
    capped, dropped = [], []
    seen: set[int] = set()
    for length in sorted(set(lengths)):
        sent = length if cap is None else min(length, cap)
        if sent != length:
            capped.append(length)
        if sent in seen:
            dropped.append(length)
            continue
        seen.add(sent)
        out.append((length, sent))
    deviations = []
    if capped:
        text = (
            f"input lengths {', '.join(map(str, capped))} capped to {cap} tokens "
            "(the context window less the output)"
        )
        if dropped:
            text += f"; {', '.join(map(str, dropped))} not run: the cap makes it {cap}, already run"
        deviations.append(text)
    return out, deviations


@dataclass(frozen=True)
class LongContextParams:
    """5.9.2: ``lengths`` (tokens), ``max_context_len`` (the SUT's context window; None: no
    cap), ``output_tokens`` per request, ``requests`` per length (None: the profile's), and the
    closed-loop ``concurrency``."""

    lengths: tuple[int, ...] = option(
        draft.LONG_CONTEXT_LENGTHS,
        help="Context length, tokens (repeatable; default 1K…128K, draft 5.9.2).",
        name="length",
    )
    max_context_len: int | None = option(
        None, help="The SUT's context window (default: --max-model-len with --sut)."
    )
    output_tokens: int = option(256, help="Output tokens per request.")
    requests: int | None = option(
        None, help="Requests per length (default: the profile's; draft 20)."
    )
    concurrency: int = option(1, help="Closed-loop concurrency (draft 1-4).")

    def __post_init__(self) -> None:
        if not self.lengths:
            raise ConfigError("5.9 needs at least one context length")
        if min(self.lengths) <= QUESTION_TOKENS:
            raise ConfigError(f"every context length must exceed {QUESTION_TOKENS} tokens")
        if self.output_tokens < 1:
            raise ConfigError("--output-tokens must be at least 1")
        if self.concurrency < 1:
            raise ConfigError("--concurrency must be at least 1")
        if self.requests is not None and self.requests < 1:
            raise ConfigError("--requests must be at least 1")
        if self.max_context_len is not None and (
            self.max_context_len - self.output_tokens <= QUESTION_TOKENS
        ):
            raise ConfigError(
                f"--max-context-len {self.max_context_len} leaves no room for a document next to "
                f"{self.output_tokens} output tokens and the {QUESTION_TOKENS}-token question"
            )

    @property
    def input_cap(self) -> int | None:
        if self.max_context_len is None:
            return None
        return self.max_context_len - self.output_tokens


@register_procedure("long-context", "5.9", "Long Context Scaling")
class LongContextProcedure(Procedure[LongContextParams, LongContextSection]):
    """Draft 5.9 (module docstring)."""

    def __init__(self, params: LongContextParams) -> None:
        super().__init__(params)
        self.plan, self.plan_deviations = plan_lengths(params.lengths, params.input_cap)

    @property
    def requests(self) -> int:
        if self.params.requests is not None:
            return self.params.requests
        if self.profile.name == "draft":
            return draft.LONG_CONTEXT_REQUESTS
        return max(1, min(draft.LONG_CONTEXT_REQUESTS, self.profile.min_level_requests))

    def planned_levels(self) -> int | None:
        return len(self.plan)

    def parameters(self) -> RawParameters:
        return {
            **asdict(self.params),
            "requests": self.requests,
            "workload": LONG_CONTEXT_WORKLOAD,
            "lengths_run": [sent for _, sent in self.plan],
            "input_cap": self.params.input_cap,
            "load_model": "closed-loop",
        }

    def run(self, session: ProcedureSession) -> None:
        p = self.params
        for requested, sent in self.plan:
            workload_params: JsonObject = {
                **session.base.workload_params,
                "target_lengths": [sent],
                "output_tokens": p.output_tokens,
                "max_context_len": p.max_context_len,
            }
            session.run_level(
                LoadSpec(mode="closed_loop", requests=self.requests, concurrency=p.concurrency),
                f"{sent} tokens",
                {"input_tokens": sent, "requested_tokens": requested},
                overrides={"workload": LONG_CONTEXT_WORKLOAD, "workload_params": workload_params},
            )

    def build(self, levels: list[Level]) -> LongContextSection:
        lengths: list[float] = []
        ttft_s: list[float] = []
        for level in levels:
            if level.data is None:
                continue
            c = level.data.client
            t = c.ttft_us[c.ok & np.isfinite(c.ttft_us)] / 1e6
            ttft_s += t.tolist()
            lengths += [float(level.meta["input_tokens"])] * int(t.size)
        deviations = list(self.plan_deviations)
        if self.requests < draft.LONG_CONTEXT_REQUESTS:
            deviations.append(
                f"{self.requests} requests per context length, fewer than the "
                f"{draft.LONG_CONTEXT_REQUESTS} of 5.9.2"
            )
        if self.params.concurrency > 4:
            deviations.append(
                f"concurrency {self.params.concurrency}, above the draft's low 1–4 (5.9.2)"
            )
        if tuple(sorted(set(self.params.lengths))) != draft.LONG_CONTEXT_LENGTHS:
            deviations.append(
                f"context lengths {sorted(set(self.params.lengths))} instead of 5.9.2's 1K–128K"
            )
        rows: list[LengthRow] = []
        fits: LongContextFits = {"power_law": None, "linear": None, "best_fit": None}
        x, y = np.array(lengths), np.array(ttft_s)
        throughput = {  # the level's achieved output rate at each length (5.9.4)
            int(lv.meta["input_tokens"]): level_entry(lv).get("output_tokens_per_s")
            for lv in levels
            if lv.data is not None
        }
        for value in np.unique(x):
            sample = 1000.0 * y[x == value]
            mean = float(sample.mean())
            rows.append({
                "input_tokens": int(value),
                "count": int(sample.size),
                "ttft_mean_ms": mean,
                "ttft_p50_ms": percentile(sample, 50),
                "ttft_p95_ms": percentile(sample, 95),
                "ms_per_1k_tokens": 1000.0 * mean / float(value),
                "time_per_input_token_us": 1000.0 * mean / float(value),
                "output_tokens_per_s": throughput.get(int(value)),
            })  # fmt: skip
        if len(rows) >= 2:
            try:
                scaling = long_context_scaling(x, y)
            except (ValueError, OtelbenchError) as exc:
                deviations.append(f"no scaling fit: {exc}")
            else:
                pl, lin = scaling.power_law, scaling.linear
                fits = {
                    "power_law": {
                        "exponent_k": pl.exponent,
                        "coefficient_s": pl.coefficient,
                        "r_squared": pl.r_squared,
                        "requests": pl.requests,
                    },
                    "linear": {
                        "us_per_token": lin.slope_us_per_token,
                        "intercept_ms": 1000.0 * lin.intercept_s,
                        "r_squared": lin.r_squared,
                        "requests": lin.requests,
                    },
                    "best_fit": "linear" if lin.r_squared >= pl.r_squared else "power_law",
                }
        else:
            deviations.append("fewer than 2 context lengths measured: no scaling fit")
        self.notes.append(
            "throughput at each length (5.9.4) is the level's achieved closed-loop rate, not a "
            "maximum: run 5.2 at a given length for that"
        )
        return {
            "levels": [cast(LongContextLevel, level_entry(lv)) for lv in levels],
            "lengths": rows,
            "fits": fits,
            "deviations": deviations,
        }

    def render(self, result: LongContextSection) -> list[str]:
        rows = [
            [str(r["input_tokens"]), str(r["count"]), fmt(r["ttft_mean_ms"], 1, "ms"),
             fmt(r["ttft_p50_ms"], 1, "ms"), fmt(r["ttft_p95_ms"], 1, "ms"),
             fmt(r["ms_per_1k_tokens"], 1), fmt(r["time_per_input_token_us"], 1),
             fmt(r.get("output_tokens_per_s"), 1)]
            for r in result["lengths"]
        ]  # fmt: skip
        lines = ["## Long context scaling (5.9.5)", ""]
        lines += table(
            ["Context (tokens)", "Requests", "TTFT Mean", "TTFT P50", "TTFT P95",
             "ms/1K tokens", "µs/token", "Achieved (tok/s)"],
            rows,
        )  # fmt: skip
        lines += ["", "## Scaling fits (5.9.4)", ""]
        fits = result["fits"]
        if fits.get("best_fit") is None:
            lines.append("Not fitted: fewer than 2 context lengths were measured.")
            return lines
        pl, lin = fits["power_law"], fits["linear"]
        assert pl is not None, "a best fit comes with both fits"
        assert lin is not None, "a best fit comes with both fits"
        lines += table(
            ["Fit", "Parameter", "R²"],
            [
                ["Power law TTFT ∝ L^k", f"k = {pl['exponent_k']:.3f}", f"{pl['r_squared']:.4f}"],
                ["Linear", f"{lin['us_per_token']:.2f} µs per input token",
                 f"{lin['r_squared']:.4f}"],
            ],
        )  # fmt: skip
        best = lin if fits["best_fit"] == "linear" else pl
        name = (
            "Linear" if fits["best_fit"] == "linear" else f"Power law (k = {pl['exponent_k']:.2f})"
        )
        lines += [
            "",
            f"Best fit: {name} (R^2 = {best['r_squared']:.4f}), "
            f"~{lin['us_per_token']:.1f} microseconds per input token",
        ]
        return lines
