"""Draft 5.10, Guardrail Overhead: baseline, input, output and full filtering; Tables 13 and 14.

Procedure (5.10.3), for each configuration in the order baseline, input, output, full::

    restart the SUT in the configuration; warm up (4.5)
    max-throughput probe        closed loop at the probe concurrency: Table 14's maximum
                                output-token throughput of the configuration
    levels at 25 / 50 / 75 %    open loop at that fraction of the capacity (5.10.2), the
                                capacity being --capacity-rps or the baseline probe's request
                                throughput

Configurations. Either the user gives them (``--config baseline=URL --config full=URL …``, any
of the four labels, baseline required; with ``--launch LABEL=COMMAND`` otelbench restarts them),
or otelbench derives them from one guardrail configuration file (``--guardrails FILE``, the
"full" set; docs/guardrails.md) by keeping its input filters only, its output filters only, or
both:

* with ``--sut vllm-cpu``: the guardrail middleware inside vLLM's API server (``vllm serve
  --middleware otelbench.guardrails.middleware.GuardrailMiddleware``, configured through
  ``OTELBENCH_GUARDRAILS_CONFIG``); the baseline is vLLM without the middleware ("all
  guardrails disabled");
* with ``--target URL``: ``otelbench gateway`` in front of the target (the Application Gateway
  SUT, draft 4.1.2), restarted per configuration; the baseline is the gateway with no filter,
  so the proxy hop is in every configuration and the differences are the filters' alone.

Prompts are sent as text (``prompt_format='text'``, decoded by the declared tokenizer; for
``--sut vllm-cpu`` the tiny model's own ``tokenizer.json``) so that input filters read what a
production request carries; the workload is Conversation (5.10.2's recommendation) and its
content is benign (random token text): a refusal during the run is listed as a deviation.

Measurements (5.10.4), per configuration and load level: TTFT P50/P95/P99 and end-to-end latency
P50/P95/P99 (Table 13); the overhead ``filtered - baseline`` of TTFT and end-to-end latency at
P50/P95/P99 — with the input configuration the TTFT difference is the *input filter overhead*,
with the full configuration the end-to-end difference is the *total guardrail overhead*; the
throughput reduction of each configuration's probe against the baseline's (Table 14); and, from
the guardrail spans in the same traces (``metrics.guardrails`` of each level's report), the time
spent in each filter and the TTFT and per-event latency the filters added.

``procedure.json`` keys besides the envelope: ``capacity`` ({rps, source}), ``configurations``
(label → how it ran: the derived file, middleware or gateway), ``levels`` (rows with
``configuration``, ``role`` ``probe`` / ``level`` and ``fraction``), ``table13`` (per
configuration and fraction: ttft/e2e p50/p95/p99 ms, succeeded, failed, refused,
guardrail_ttft_added_p50/p99_ms, guardrail_itl_added_p99_ms), ``overheads`` (per filtered
configuration and fraction: ttft_overhead_ms, e2e_overhead_ms {p50, p95, p99}), ``table14`` (per
configuration: max_output_tokens_per_s, change_pct), ``input_filter_overhead_ms`` and
``total_guardrail_overhead_ms`` (per fraction, {p50, p95, p99}).

Example::

    spec = ProcedureSpec(base=config, profile=get_profile("quick"), out_dir=Path("out/5.10"),
                         launch_vllm_cpu={"max_model_len": 1024, "served_model_name": "tiny"})
    run_procedure(GuardrailOverheadProcedure(GuardrailOverheadParams(
        guardrails=Path("guardrails.yaml"))), spec)
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, cast

import numpy as np

from otelbench import draft, semconv, telemetry
from otelbench.arrays import F64
from otelbench.documents import read_document
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec
from otelbench.metrics.effects import guardrail_overhead, percent_change
from otelbench.model.jsonvalue import JsonObject, JsonValue
from otelbench.model.procedure import (
    GuardrailLevel,
    GuardrailOverhead,
    GuardrailOverheadSection,
    Table13Row,
    Table14Row,
)
from otelbench.options import nested, option
from otelbench.procedures.base import (
    LevelSizes,
    Procedure,
    ProcedureSpec,
    RawParameters,
    level_entry,
    register_procedure,
)
from otelbench.procedures.configurations import SutConfiguration
from otelbench.procedures.planning import (
    OPEN_LOOP_OPTIONS,
    OpenLoopLevels,
    shared_option,
)
from otelbench.procedures.profiles import shortfalls
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.render.procedure import NA, fmt, table
from otelbench.sut.process import free_port

__all__ = [
    "CONFIGURATIONS",
    "MIDDLEWARE",
    "GuardrailOverheadParams",
    "GuardrailOverheadProcedure",
    "derived_configurations",
]

CONFIGURATIONS: Final = ("baseline", "input", "output", "full")
"""5.10.2's configurations, in the order they run."""
NAMES: Final = {
    "baseline": "Baseline",
    "input": "Input Filter",
    "output": "Output Filter",
    "full": "Full Filter",
}
MIDDLEWARE: Final = "otelbench.guardrails.middleware.GuardrailMiddleware"
"""The dotted path ``vllm serve --middleware`` loads."""
PROBE: Final = "probe"
LEVEL: Final = "level"


@dataclass(frozen=True)
class GuardrailOverheadParams:
    """``guardrails``: the full guardrail configuration file the configurations derive from
    (None: the user gives every configuration); ``capacity_rps`` (None: the baseline probe's);
    ``fractions`` of capacity; ``open_loop``: the levels' sizes, the max-throughput probe's and
    the arrival process (None: the profile's)."""

    guardrails: Path | None = option(
        None,
        help="Guardrail configuration file (the 'full' set): baseline, input, output and "
        "full derive from it (middleware in vLLM with --sut vllm-cpu, else otelbench "
        "gateway in front of --target).",
    )
    capacity_rps: float | None = shared_option("capacity_rps")
    fractions: tuple[float, ...] = option(
        draft.GUARDRAIL_LOAD_FRACTIONS,
        help="Load level as a fraction of capacity (repeatable; 0.25 0.5 0.75).",
        name="fraction",
    )
    open_loop: OpenLoopLevels = nested(OpenLoopLevels, help=OPEN_LOOP_OPTIONS)

    def __post_init__(self) -> None:
        if not self.fractions or any(not 0 < f <= 2 for f in self.fractions):
            raise ConfigError("--fraction values must be in (0, 2]")
        if self.capacity_rps is not None and not self.capacity_rps > 0:
            raise ConfigError("--capacity-rps must be > 0")


def _split_config(path: Path) -> dict[str, JsonObject]:
    """The full configuration file's raw mapping, and its input-only and output-only cuts."""
    from otelbench.guardrails.config import load_config

    load_config(path)  # one clear error, naming the field, for a bad file
    raw, _ = read_document(path, "guardrail configuration")
    full: JsonObject = dict(raw or {})
    inputs, outputs = _filters(full, "input"), _filters(full, "output")
    if not inputs and not outputs:
        raise ConfigError(f"{path}: configures no filter; 5.10 compares filters against none")
    return {
        "baseline": {**full, "input": [], "output": []},
        "input": {**full, "input": inputs, "output": []},
        "output": {**full, "input": [], "output": outputs},
        "full": {**full, "input": inputs, "output": outputs},
    }


def _filters(config: JsonObject, stage: str) -> list[JsonValue]:
    """A guardrail configuration's filters of ``stage`` (``input`` or ``output``), a list
    (``load_config`` checked it)."""
    filters = config.get(stage) or []
    assert isinstance(filters, list), f"{stage}: not a list of filters"
    return filters


def derived_configurations(spec: ProcedureSpec, path: Path) -> list[SutConfiguration]:
    """The four configurations from one guardrail file (module docstring); writes the derived
    files to ``spec.out_dir`` (``guardrails-LABEL.json``). Labels without a filter of their
    stage (an input-only file has no output configuration) are left out."""
    cuts = _split_config(path)
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    out: list[SutConfiguration] = []
    for label in CONFIGURATIONS:
        cut = cuts[label]
        inputs, outputs = _filters(cut, "input"), _filters(cut, "output")
        if label != "baseline" and not (inputs or outputs):
            continue
        if label in ("input", "output") and cut == cuts["full"]:
            continue  # the file has filters of one stage only: "full" runs them
        file = (spec.out_dir / f"guardrails-{label}.json").resolve()
        file.write_text(json.dumps(cut, indent=2) + "\n", encoding="utf-8")
        description = f"{NAMES[label]}: {len(inputs)} input, {len(outputs)} output"
        if spec.launch_vllm_cpu is not None:
            if label == "baseline":
                out.append(SutConfiguration(
                    label, vllm_args=(), description="vLLM without the guardrail middleware"
                ))  # fmt: skip
                continue
            out.append(SutConfiguration(
                label,
                vllm_args=("--middleware", MIDDLEWARE),
                env={semconv.ENV_GUARDRAILS_CONFIG: str(file)},
                description=f"{description} filter(s) in vLLM's API server ({file.name})",
            ))  # fmt: skip
        else:
            port = free_port("127.0.0.1")
            command = shlex.join([
                sys.executable, "-m", "otelbench.cli", "gateway",
                "--upstream", spec.base.target, "--config", str(file),
                "--host", "127.0.0.1", "--port", str(port),
            ])  # fmt: skip
            out.append(SutConfiguration(
                label,
                url=f"http://127.0.0.1:{port}",
                command=command,
                env=telemetry.LAUNCHED_EXPORT_ENV,
                description=f"{description} filter(s) in otelbench gateway ({file.name}) in "
                f"front of {spec.base.target}",
            ))  # fmt: skip
    return out


def _output_rate(level: Level) -> float | None:
    """The output-token throughput of a level's row (None: the level has none)."""
    return level.row.get("output_tokens_per_s") if level.row else None


def _ms(level: Level) -> tuple[F64, F64]:
    """Successful requests' TTFT and end-to-end latency, ms."""
    if level.data is None:
        empty = np.empty(0, dtype=np.float64)
        return empty, empty
    c = level.data.client
    ttft = (c.ttft_us[c.ok] / 1000.0).astype(np.float64)
    e2e = (c.end_offset_us[c.ok] / 1000.0).astype(np.float64)
    return ttft, e2e


@register_procedure("guardrail-overhead", "5.10", "Guardrail Overhead")
class GuardrailOverheadProcedure(
    LevelSizes, Procedure[GuardrailOverheadParams, GuardrailOverheadSection]
):
    """Draft 5.10 (module docstring)."""

    compares_configurations = True

    def __init__(self, params: GuardrailOverheadParams) -> None:
        super().__init__(params)
        self.configs: list[SutConfiguration] = []
        self.capacity_rps: float | None = params.capacity_rps
        self.capacity_source = "given (--capacity-rps)" if params.capacity_rps else None
        self.tokenizer: str | None = None
        """The tokenizer that decodes the prompts to text (bind() decides)."""

    # ------------------------------------------------------------------ set-up
    def bind(self, spec: ProcedureSpec) -> None:
        if self.params.guardrails is not None and spec.configurations:
            raise ConfigError("give --guardrails FILE or --config LABEL=… (not both)")
        if self.params.guardrails is None and not spec.configurations:
            raise ConfigError(
                "5.10 compares guardrail configurations: give --guardrails FILE (otelbench "
                "derives baseline, input, output and full from it), or --config baseline=URL "
                "and at least one of --config input=… / output=… / full=…"
            )
        super().bind(spec)
        self.tokenizer = spec.base.tokenizer
        if spec.launch_vllm_cpu is None and self.tokenizer in (None, "server"):
            if self.params.guardrails is None and self.tokenizer is None:
                raise ConfigError(
                    "5.10 sends text prompts: give --tokenizer (a tokenizer.json, cl100k_base, "
                    "or 'server' for each configuration's /tokenize)"
                )
            if self.params.guardrails is not None:
                self.tokenizer = spec.base.target  # the upstream's /tokenize, not the gateway's
        if self.params.guardrails is not None:
            self.configs = derived_configurations(spec, self.params.guardrails)
        else:
            given = {c.label: c for c in spec.configurations}
            unknown = sorted(set(given) - set(CONFIGURATIONS))
            if unknown or "baseline" not in given or len(given) < 2:
                raise ConfigError(
                    f"5.10's configurations are {', '.join(CONFIGURATIONS)} (baseline and at "
                    f"least one other); got {sorted(given)}"
                )
            self.configs = [given[label] for label in CONFIGURATIONS if label in given]

    def planned_levels(self) -> int | None:
        return len(self.configs) * (1 + len(self.params.fractions)) or None

    def parameters(self) -> RawParameters:
        return {
            **self.sized_parameters(),
            "guardrails": None if self.params.guardrails is None else str(self.params.guardrails),
            "prompt_format": "text",
        }

    # ------------------------------------------------------------------ run
    def run(self, session: ProcedureSession) -> None:
        session.base = replace(session.base, prompt_format="text", tokenizer=self.tokenizer)
        for config in self.configs:
            session.use_configuration(config)
            probe = session.run_level(
                LoadSpec(
                    mode="closed_loop",
                    requests=self.probe_requests,
                    concurrency=self.probe_concurrency,
                ),
                f"{config.label}: max-throughput probe",
                {"role": PROBE},
            )
            if self.capacity_rps is None:
                rps = probe.live_row.get("achieved_rps") if probe.live_row else None
                if not rps:
                    raise ConfigError(
                        "the baseline probe completed no request; check the target "
                        "(or give --capacity-rps)"
                    )
                self.capacity_rps = float(rps)
                self.capacity_source = (
                    f"the {config.label} probe's request throughput ({self.probe_requests} "
                    f"requests at concurrency {self.probe_concurrency})"
                )
            for fraction in self.params.fractions:
                rate = fraction * self.capacity_rps
                session.run_level(
                    self.open_loop_level(rate),
                    f"{config.label}: {100 * fraction:.0f}% of capacity",
                    {"role": LEVEL, "fraction": fraction},
                )

    # ------------------------------------------------------------------ results
    def build(self, levels: list[Level]) -> GuardrailOverheadSection:
        by: dict[tuple[str, float], Level] = {}
        probes: dict[str, Level] = {}
        for lv in levels:
            label = str(lv.meta.get("configuration"))
            if lv.meta.get("role") == PROBE:
                probes[label] = lv
            elif lv.meta.get("role") == LEVEL:
                by[(label, float(lv.meta["fraction"]))] = lv
        labels = [c.label for c in self.configs]
        table13: list[Table13Row] = []
        for label in labels:
            for fraction in self.params.fractions:
                found = by.get((label, fraction))
                if found is None:
                    continue
                row = found.row  # None: the level has no stored run
                g = found.report["metrics"].get("guardrails") if found.report else None
                added = g["added_latency"] if g else None
                table13.append({
                    "configuration": label,
                    "name": NAMES.get(label, label),
                    "fraction": fraction,
                    "offered_rps": row["offered_rps"] if row else None,
                    "ttft_p50_ms": row["ttft_p50_ms"] if row else None,
                    "ttft_p95_ms": row["ttft_p95_ms"] if row else None,
                    "ttft_p99_ms": row["ttft_p99_ms"] if row else None,
                    "e2e_p50_ms": row["e2e_p50_ms"] if row else None,
                    "e2e_p95_ms": row["e2e_p95_ms"] if row else None,
                    "e2e_p99_ms": row["e2e_p99_ms"] if row else None,
                    "succeeded": row["succeeded"] if row else None,
                    "failed": row["failed"] if row else None,
                    "refused": g["refusals"]["requests"] if g else 0,
                    "guardrail_ttft_added_p50_ms": added["ttft_ms"]["p50"] if added else None,
                    "guardrail_ttft_added_p99_ms": added["ttft_ms"]["p99"] if added else None,
                    "guardrail_itl_added_p99_ms": (
                        added["output_per_event_ms"]["p99"] if added else None
                    ),
                })  # fmt: skip
        overheads: list[GuardrailOverhead] = []
        input_overhead: dict[str, dict[str, float | None]] = {}
        total_overhead: dict[str, dict[str, float | None]] = {}
        for label in labels[1:]:
            for fraction in self.params.fractions:
                base, filt = by.get(("baseline", fraction)), by.get((label, fraction))
                if base is None or filt is None:
                    continue
                (b_ttft, b_e2e), (f_ttft, f_e2e) = _ms(base), _ms(filt)
                o = guardrail_overhead(b_ttft, b_e2e, f_ttft, f_e2e)
                entry: GuardrailOverhead = {
                    "configuration": label,
                    "fraction": fraction,
                    "ttft_overhead_ms": dict(o.ttft_overhead),
                    "e2e_overhead_ms": dict(o.e2e_overhead),
                }
                overheads.append(entry)
                key = f"{100 * fraction:.0f}%"
                if label == "input":
                    input_overhead[key] = entry["ttft_overhead_ms"]
                if label == "full":
                    total_overhead[key] = entry["e2e_overhead_ms"]
        baseline = probes["baseline"].row if "baseline" in probes else None
        base_tput = baseline.get("output_tokens_per_s") if baseline else None
        table14: list[Table14Row] = [
            {
                "configuration": label,
                "name": NAMES.get(label, label),
                "max_output_tokens_per_s": _output_rate(probes[label]),
                "change_pct": None
                if label == "baseline"
                else percent_change(base_tput, _output_rate(probes[label])),
            }
            for label in labels
            if label in probes
        ]
        deviations = shortfalls(level_duration_s=self.duration_s)
        missing = [NAMES[c] for c in CONFIGURATIONS if c not in labels]
        if missing:
            deviations.append(
                f"configuration(s) not run: {', '.join(missing)} (5.10.2 lists baseline, input, "
                "output and full filtering)"
            )
        refused = sum(r["refused"] or 0 for r in table13)
        if refused:
            deviations.append(
                f"{refused} request(s) were refused by a guardrail: 5.10.2 asks for benign "
                "content, and a refusal's latency is not a filtered request's"
            )
        if self.params.fractions != draft.GUARDRAIL_LOAD_FRACTIONS:
            deviations.append(
                f"load levels at {', '.join(f'{100 * f:.0f}%' for f in self.params.fractions)} "
                "of capacity, not 5.10.2's 25 %, 50 %, 75 %"
            )
        self.notes.append(
            "Table 14's maximum throughput is each configuration's closed-loop probe (output "
            f"tokens/s at concurrency {self.probe_concurrency}), not a full 5.2 search"
        )
        self.notes.append(
            "prompts are sent as text (the declared tokenizer decodes the workload's token "
            "ids) so that input filters read text; the server's prompt-token count may differ "
            "slightly from the workload's"
        )
        if self.params.guardrails is not None and self.spec is not None:
            if self.spec.launch_vllm_cpu is None:
                self.notes.append(
                    "every configuration runs through otelbench gateway; the baseline has no "
                    "filter, so the differences are the filters' and not the proxy hop's"
                )
            else:
                self.notes.append(
                    "the filters run in vLLM's API server (guardrail middleware); the baseline "
                    "is vLLM without the middleware"
                )
        return {
            "capacity": {"rps": self.capacity_rps, "source": self.capacity_source},
            "levels": [cast(GuardrailLevel, level_entry(lv)) for lv in levels],
            "table13": table13,
            "overheads": overheads,
            "input_filter_overhead_ms": input_overhead,
            "total_guardrail_overhead_ms": total_overhead,
            "table14": table14,
            "deviations": deviations,
        }

    def render(self, result: GuardrailOverheadSection) -> list[str]:
        cap = result["capacity"]
        lines = [f"Capacity: {fmt(cap['rps'], 3)} req/s — {cap['source']}.", ""]
        lines += ["## Guardrail overhead (Table 13, 5.10.5)", ""]
        lines += table(
            ["Configuration", "Load", "TTFT P50", "TTFT P95", "TTFT P99", "E2E P50", "E2E P99",
             "Filters' TTFT P50", "Refused"],
            [
                [r["name"], f"{100 * r['fraction']:.0f}%", fmt(r["ttft_p50_ms"], 1, "ms"),
                 fmt(r["ttft_p95_ms"], 1, "ms"), fmt(r["ttft_p99_ms"], 1, "ms"),
                 fmt(r["e2e_p50_ms"], 1, "ms"),
                 fmt(r["e2e_p99_ms"], 1, "ms"), fmt(r["guardrail_ttft_added_p50_ms"], 3, "ms"),
                 str(r["refused"])]
                for r in result["table13"]
            ],
        )  # fmt: skip
        lines += ["", "## Overhead against the baseline (5.10.4)", ""]
        if result["overheads"]:
            lines += table(
                ["Configuration", "Load", "TTFT Δ P50", "TTFT Δ P99", "E2E Δ P50", "E2E Δ P99"],
                [
                    [NAMES.get(o["configuration"], o["configuration"]),
                     f"{100 * o['fraction']:.0f}%",
                     *(fmt(o[k][q], 2, "ms") if o[k][q] is not None else NA
                       for k in ("ttft_overhead_ms", "e2e_overhead_ms") for q in ("p50", "p99"))]
                    for o in result["overheads"]
                ],
            )  # fmt: skip
        else:
            lines.append("Not computed: no filtered configuration ran beside the baseline.")
        lines += ["", "## Throughput impact (Table 14, 5.10.5)", ""]
        lines += table(
            ["Configuration", "Max Throughput", "Reduction"],
            [
                [r["name"], fmt(r["max_output_tokens_per_s"], 1, "tok/s"),
                 "-" if r["change_pct"] is None else f"{r['change_pct']:+.1f}%"]
                for r in result["table14"]
            ],
        )  # fmt: skip
        return lines
