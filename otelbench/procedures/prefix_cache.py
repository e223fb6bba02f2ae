"""Draft 5.7, Prefix Cache Effectiveness: cache disabled vs enabled (cold, warm); Table 10.

Procedure (5.7.3), on a workload with shared prefixes (5.7.2 recommends Code Completion, A.4:
10 repository contexts, 80 % of requests share one, Zipf s=1.5)::

    configuration "disabled"   restart the SUT with prefix caching off; warm up (its requests
                               share none of the measured prefixes, see below); level
                               "cache disabled": the workload (seed S)
    configuration "enabled"    restart with prefix caching on; warm up the same way;
                               level "cache (cold)": the identical workload (seed S) — the
                               cache starts empty and fills as the level runs;
                               level "cache (warm)" (step 5's pre-population is the cold
                               level): the same workload with the SAME shared prefixes but new
                               request bodies (seed S+1, ``shared_seed`` S), so prefixes hit
                               and no whole prompt repeats

Warm-up requests come from the workload at seed ``S + WARMUP_SEED_OFFSET``, whose shared prefixes
are different random ids: the warm-up warms the engine without populating the cache with the
measured prefixes (step 2: "without populating prefix cache").

With ``--sut vllm-cpu`` the two configurations are the built-in launcher with
``--no-enable-prefix-caching`` and ``--enable-prefix-caching``. Against any other target the user
gives both (``--config disabled=URL --config enabled=URL``, each optionally with ``--launch
LABEL=COMMAND`` so that otelbench restarts it); a running URL is not restarted, so before the
cold level otelbench asks it to reset its prefix cache (vLLM's ``POST /reset_prefix_cache``,
served when ``VLLM_SERVER_DEV_MODE=1``) and states in the report whether that worked.

Measurements (5.7.4), per configuration level: TTFT P50/P95/P99 (client, and the engine's own
TTFT where the target sends server spans), output-token throughput; between "disabled" and each
cache level: the TTFT reduction ``(TTFT_no_cache - TTFT_cache) / TTFT_no_cache`` at P50, P95,
P99 and the mean, and the throughput change. **Cache hit rate** = prefix tokens served from
cache / shared-prefix tokens, over the level's requests that have a server span: the served
count is the engine's ``gen_ai.usage.cache_read.input_tokens`` (vLLM's ``num_cached_tokens``)
capped at the request's shared-prefix length, which otelbench knows from the workload; the
uncapped ratio over all prompt tokens is reported beside it (``prompt_hit_rate``). Without
server spans both are null and a deviation says why.

``procedure.json`` keys besides the envelope: ``levels`` (one row per level with ``role``
``disabled`` / ``cold`` / ``warm`` and its ``configuration``), ``table`` (Table 10: role,
configuration, ttft_p50/p95/p99_ms, server_ttft_p50/p99_ms, output_tokens_per_s, cache_hit_rate,
prompt_hit_rate, shared_prefix_tokens, cached_tokens, requests_with_server_span),
``comparisons`` (per cache level vs disabled: ``ttft_reduction_pct`` {mean, p50, p95, p99},
``throughput_change_pct``), ``cache_reset`` (per URL configuration: reset attempted and its
outcome).

Example::

    spec = ProcedureSpec(base=config, profile=get_profile("quick"), out_dir=Path("out/5.7"),
                         launch_vllm_cpu={"max_model_len": 1024, "served_model_name": "tiny"})
    run_procedure(PrefixCacheProcedure(PrefixCacheParams(concurrency=4)), spec)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Final, cast

import httpx
import numpy as np

from otelbench.arrays import F64
from otelbench.errors import ConfigError
from otelbench.loadgen.runner import LoadSpec
from otelbench.loadgen.workloads import ParametricWorkload, make_workload
from otelbench.metrics.effects import prefix_cache_effect
from otelbench.metrics.summary import percentile
from otelbench.model.procedure import (
    CacheHitRates,
    CacheReset,
    PrefixCacheComparison,
    PrefixCacheLevel,
    PrefixCacheRow,
    PrefixCacheSection,
    Quantiles,
)
from otelbench.options import option
from otelbench.procedures.base import (
    Procedure,
    ProcedureSpec,
    RawParameters,
    level_entry,
    register_procedure,
)
from otelbench.procedures.configurations import SutConfiguration
from otelbench.procedures.planning import shared_option
from otelbench.procedures.profiles import shortfalls
from otelbench.procedures.session import Level, ProcedureSession
from otelbench.query import RunData
from otelbench.render.procedure import NA, fmt, pct, table

__all__ = [
    "CACHE_DISABLED",
    "CACHE_ENABLED",
    "PrefixCacheParams",
    "PrefixCacheProcedure",
    "cache_hit_rates",
]

CACHE_DISABLED: Final = "disabled"
CACHE_ENABLED: Final = "enabled"
"""The two configuration labels 5.7.2's comparison mode requires."""
VLLM_CONFIGURATIONS: Final = (
    SutConfiguration(
        CACHE_DISABLED,
        vllm_args=("--no-enable-prefix-caching",),
        description="vLLM with prefix caching disabled",
    ),
    SutConfiguration(
        CACHE_ENABLED,
        vllm_args=("--enable-prefix-caching",),
        description="vLLM with prefix caching enabled",
    ),
)
WARM_SEED_OFFSET: Final = 1
"""The warm level's body seed is the run seed + this (its shared prefixes keep the run seed)."""
ROLES: Final = ("disabled", "cold", "warm")
ROLE_NAMES: Final = {"disabled": "Cache Disabled", "cold": "Cache (Cold)", "warm": "Cache (Warm)"}
RESET_PATH: Final = "/reset_prefix_cache"


@dataclass(frozen=True)
class PrefixCacheParams:
    """Load per level: closed loop at ``concurrency`` (default 4) or open loop at ``rate``;
    ``requests`` per level (None: the profile's TTFT count, draft 1,000); ``warm`` runs the
    warm level."""

    concurrency: int | None = option(None, help="Closed loop: concurrency (default 4).")
    rate: float | None = option(None, help="Open loop: arrival rate, req/s.")
    arrival: str = shared_option("arrival")
    requests: int | None = option(
        None, help="Requests per level (default: the profile's; draft 1,000)."
    )
    warm: bool = option(True, help="Run the warm-cache level too.")

    def __post_init__(self) -> None:
        if self.concurrency is not None and self.rate is not None:
            raise ConfigError("5.7: give --concurrency or --rate, not both")
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError("--concurrency must be at least 1")
        if self.rate is not None and not self.rate > 0:
            raise ConfigError("--rate must be > 0")
        if self.requests is not None and self.requests < 2:
            raise ConfigError("--requests must be at least 2")


def _shared_prefix_lengths(data: RunData, workload: ParametricWorkload) -> F64:
    """Each client request's shared-prefix length, from the workload that generated it."""
    c = data.client
    n = int(np.nanmax(c.request_index)) + 1 if len(c) and np.isfinite(c.request_index).any() else 0
    lengths = np.array([r.shared_prefix_len for r in workload.requests(n)], dtype=np.float64)
    out = np.full(len(c), np.nan)
    for i, index in enumerate(c.request_index):
        if np.isfinite(index) and 0 <= int(index) < lengths.size:
            out[i] = lengths[int(index)]
    return out


def cache_hit_rates(data: RunData | None, workload: ParametricWorkload) -> CacheHitRates:
    """5.7.4's cache hit rate over the requests that have a server span (module docstring)."""
    empty: CacheHitRates = {
        "cache_hit_rate": None,
        "prompt_hit_rate": None,
        "shared_prefix_tokens": None,
        "cached_tokens": None,
        "requests_with_server_span": 0,
    }
    if data is None or len(data.server) == 0:
        return empty
    s = data.server
    linked = (s.client_index >= 0) & np.isfinite(s.cache_read_tokens)
    if not linked.any():
        return empty
    prefix = _shared_prefix_lengths(data, workload)[s.client_index[linked]]
    cached = s.cache_read_tokens[linked]
    prompt = s.prompt_tokens[linked]
    known = np.isfinite(prefix)
    served = np.minimum(cached[known], prefix[known])
    effect = prefix_cache_effect([], [], prefix_tokens=prefix[known], cached_prefix_tokens=served)
    prompt_total = float(np.nansum(prompt))
    return {
        "cache_hit_rate": effect.cache_hit_rate,
        "prompt_hit_rate": float(np.nansum(cached)) / prompt_total if prompt_total > 0 else None,
        "shared_prefix_tokens": int(np.nansum(prefix[known])),
        "cached_tokens": int(np.nansum(cached)),
        "requests_with_server_span": int(linked.sum()),
    }


def _reset_prefix_cache(url: str) -> CacheReset:
    """Ask a running target to drop its prefix cache (vLLM's dev-mode endpoint)."""
    try:
        response = httpx.post(url.rstrip("/") + RESET_PATH, timeout=30.0)
    except httpx.HTTPError as exc:
        return {"attempted": True, "reset": False, "detail": str(exc) or type(exc).__name__}
    return {
        "attempted": True,
        "reset": response.status_code == 200,
        "detail": f"POST {RESET_PATH} → HTTP {response.status_code}",
    }


def _ms(values: F64) -> Quantiles:
    v = values[np.isfinite(values)]
    if not v.size:
        return {"p50": None, "p95": None, "p99": None}
    return {"p50": percentile(v, 50), "p95": percentile(v, 95), "p99": percentile(v, 99)}


@register_procedure("prefix-cache", "5.7", "Prefix Cache Effectiveness")
class PrefixCacheProcedure(Procedure[PrefixCacheParams, PrefixCacheSection]):
    """Draft 5.7 (module docstring)."""

    compares_configurations = True

    def __init__(self, params: PrefixCacheParams) -> None:
        super().__init__(params)
        self.cache_reset: dict[str, CacheReset] = {}

    # ------------------------------------------------------------------ set-up
    @property
    def requests(self) -> int:
        return self.params.requests or self.profile.ttft_requests

    def planned_levels(self) -> int | None:
        return 3 if self.params.warm else 2

    def configurations(self) -> dict[str, SutConfiguration]:
        """``disabled`` and ``enabled``: the user's, or the built-in launcher's defaults."""
        assert self.spec is not None
        given = {c.label: c for c in self.spec.configurations}
        if not given:
            if self.spec.launch_vllm_cpu is None:
                raise ConfigError(
                    "5.7 runs the target with prefix caching disabled and enabled: give --sut "
                    "vllm-cpu, or --config disabled=URL --config enabled=URL (with --launch "
                    "LABEL=COMMAND to have otelbench restart it)"
                )
            return {c.label: c for c in VLLM_CONFIGURATIONS}
        if set(given) != {CACHE_DISABLED, CACHE_ENABLED}:
            raise ConfigError(
                f"5.7 needs exactly the configurations {CACHE_DISABLED!r} and {CACHE_ENABLED!r}, "
                f"got {sorted(given)}"
            )
        return given

    def workload(
        self, seed: int | None = None, shared_seed: int | None = None
    ) -> ParametricWorkload:
        """The base workload, with ``seed`` and ``shared_seed`` when given; one without shared
        prefixes (or a system prompt) is a ConfigError: 5.7 measures their caching."""
        assert self.spec is not None
        base = self.spec.base
        params = dict(base.workload_params)
        if shared_seed is not None:
            params["shared_seed"] = shared_seed
        wl = make_workload(base.workload, seed=base.seed if seed is None else seed, **params)
        if not isinstance(wl, ParametricWorkload) or (
            wl.prefix_sharing is None and wl.system_prompt is None
        ):
            raise ConfigError(
                f"5.7 needs a workload with shared prefixes (code-completion, recommended, or "
                f"conversation); {base.workload!r} has none"
            )
        return wl

    def bind(self, spec: ProcedureSpec) -> None:
        super().bind(spec)
        self.configurations()  # fail before anything starts
        self.workload()

    def load(self) -> LoadSpec:
        p = self.params
        if p.rate is not None:
            return LoadSpec(mode=p.arrival, requests=self.requests, rate=p.rate)  # type: ignore[arg-type]
        return LoadSpec(mode="closed_loop", requests=self.requests, concurrency=p.concurrency or 4)

    def parameters(self) -> RawParameters:
        wl = self.workload()
        ps, sp = wl.prefix_sharing, wl.system_prompt
        return {
            **asdict(self.params),
            "requests": self.requests,
            "load_model": "open-loop" if self.params.rate is not None else "closed-loop",
            "concurrency": None if self.params.rate is not None else self.params.concurrency or 4,
            "workload": wl.name,
            "shared_prefix": {
                "contexts": None if ps is None else ps.prefixes,
                "length": None if ps is None else ps.length.describe(),
                "sharing_fraction": None if ps is None else ps.ratio,
                "system_prompt_tokens": None if sp is None else sp.tokens,
                "system_prompt_share": None if sp is None else sp.share,
            },
            "warm_level": (
                f"seed {self.spec.base.seed + WARM_SEED_OFFSET} bodies, shared prefixes of seed "
                f"{self.spec.base.seed} (populated by the cold level)"
                if self.spec is not None and self.params.warm
                else None
            ),
        }

    # ------------------------------------------------------------------ run
    def run(self, session: ProcedureSession) -> None:
        configs = self.configurations()
        load = self.load()
        session.use_configuration(configs[CACHE_DISABLED])
        session.run_level(load, "cache disabled", {"role": "disabled"})
        enabled = configs[CACHE_ENABLED]
        session.use_configuration(enabled)
        if not enabled.restarted:
            self.cache_reset[enabled.label] = _reset_prefix_cache(session.base.target)
        session.run_level(load, "cache (cold)", {"role": "cold"})
        if self.params.warm:
            base = session.base
            session.run_level(
                load,
                "cache (warm)",
                {"role": "warm"},
                overrides={
                    "seed": base.seed + WARM_SEED_OFFSET,
                    "workload_params": {**base.workload_params, "shared_seed": base.seed},
                },
            )

    # ------------------------------------------------------------------ results
    def _row(self, level: Level) -> PrefixCacheRow:
        role = str(level.meta.get("role"))
        data = level.data
        c_ttft = np.empty(0)
        if data is not None:
            c_ttft = (data.client.ttft_us[data.client.ok] / 1000.0).astype(np.float64)
        client = _ms(c_ttft)
        s_ttft = np.empty(0)
        if data is not None and len(data.server):
            finished = ~data.server.cut()  # a request cut short has no whole timing
            s_ttft = (data.server.ttft_s[finished] * 1000.0).astype(np.float64)
        server = _ms(s_ttft)
        assert self.spec is not None
        seed = self.spec.base.seed
        wl = self.workload(seed + WARM_SEED_OFFSET, seed) if role == "warm" else self.workload()
        return {
            "role": role,
            "configuration": level.meta.get("configuration"),
            "name": ROLE_NAMES.get(role, role),
            "ttft_p50_ms": client["p50"],
            "ttft_p95_ms": client["p95"],
            "ttft_p99_ms": client["p99"],
            "server_ttft_p50_ms": server["p50"],
            "server_ttft_p99_ms": server["p99"],
            "output_tokens_per_s": level.row["output_tokens_per_s"] if level.row else None,
            "succeeded": level.row["succeeded"] if level.row else None,
            **cache_hit_rates(data, wl),
        }

    def build(self, levels: list[Level]) -> PrefixCacheSection:
        rows = [self._row(lv) for lv in levels if lv.meta.get("role") in ROLES]
        by_role = {r["role"]: r for r in rows}
        ttft = {
            lv.meta["role"]: (lv.data.client.ttft_us[lv.data.client.ok] / 1000.0)
            for lv in levels
            if lv.data is not None and lv.meta.get("role") in ROLES
        }
        comparisons: list[PrefixCacheComparison] = []
        base = by_role.get("disabled")
        for role in ("cold", "warm"):
            if role not in by_role or base is None or "disabled" not in ttft:
                continue
            effect = prefix_cache_effect(
                ttft["disabled"],
                ttft[role],
                throughput_no_cache=base["output_tokens_per_s"],
                throughput_cache=by_role[role]["output_tokens_per_s"],
            )
            comparisons.append({
                "role": role,
                "versus": "disabled",
                "ttft_reduction_pct": dict(effect.ttft_reduction_pct),
                "throughput_change_pct": effect.throughput_change_pct,
            })  # fmt: skip
        deviations = shortfalls(requests=self.requests)
        for role in ROLES:
            if role == "warm" and not self.params.warm:
                continue
            if role not in by_role:
                deviations.append(f"the {ROLE_NAMES[role]} level was not measured")
        if rows and all(r["requests_with_server_span"] == 0 for r in rows):
            deviations.append(
                "the target sent no server spans with cached-token counts: the cache hit rate "
                "(5.7.4) is not measured"
            )
        for label, outcome in self.cache_reset.items():
            if not outcome["reset"]:
                deviations.append(
                    f"configuration {label!r} is a running target that was not restarted and its "
                    f"prefix cache could not be reset ({outcome['detail']}): the cold level may "
                    "hit prefixes cached before it"
                )
        disabled = by_role.get("disabled")
        if disabled is not None and (disabled.get("cached_tokens") or 0) > 0:
            deviations.append(
                f"the cache-disabled level served {disabled['cached_tokens']} prompt tokens from "
                "cache: its configuration does not disable prefix caching"
            )
        if not self.params.warm:
            self.notes.append("the warm level was skipped (--no-warm)")
        else:
            self.notes.append(
                "warm level: the cold level pre-populated the cache with the shared prefixes "
                "(5.7.3 step 5); its requests have the same shared prefixes and distributions "
                "but new bodies, so no whole prompt repeats"
            )
        self.notes.append(
            "cache hit rate = prefix tokens served from cache (the engine's cached-token count, "
            "capped at the shared-prefix length) / shared-prefix tokens; engines cache whole "
            "blocks, so a partly filled last block of a prefix is not served"
        )
        return {
            "levels": [cast(PrefixCacheLevel, level_entry(lv)) for lv in levels],
            "table": rows,
            "comparisons": comparisons,
            "cache_reset": self.cache_reset,
            "deviations": deviations,
        }

    def render(self, result: PrefixCacheSection) -> list[str]:
        rows = result["table"]
        lines = ["## Cache effectiveness (Table 10, 5.7.5)", ""]
        lines += table(
            ["Configuration", "TTFT P50", "TTFT P95", "TTFT P99", "Engine TTFT P50",
             "Output tok/s", "Cache hit rate"],
            [
                [r["name"], fmt(r["ttft_p50_ms"], 1, "ms"), fmt(r["ttft_p95_ms"], 1, "ms"),
                 fmt(r["ttft_p99_ms"], 1, "ms"), fmt(r["server_ttft_p50_ms"], 1, "ms"),
                 fmt(r["output_tokens_per_s"], 1), pct(r["cache_hit_rate"])]
                for r in rows
            ],
        )  # fmt: skip
        lines += ["", "## Effect of caching (5.7.4)", ""]
        if result["comparisons"]:
            lines += table(
                ["Versus cache disabled", "TTFT reduction P50", "P95", "P99", "Mean",
                 "Throughput change"],
                [
                    [ROLE_NAMES[c["role"]],
                     *(NA if c["ttft_reduction_pct"].get(k) is None
                       else f"{c['ttft_reduction_pct'][k]:.1f} %" for k in ("p50", "p95", "p99",
                                                                            "mean")),
                     NA if c["throughput_change_pct"] is None
                     else f"{c['throughput_change_pct']:+.1f} %"]
                    for c in result["comparisons"]
                ],
            )  # fmt: skip
        else:
            lines.append("Not computed: a configuration's level is missing.")
        lines += ["", "## Cache hits (5.7.4)", ""]
        lines += table(
            ["Configuration", "Shared-prefix tokens", "Served from cache", "Prefix hit rate",
             "Prompt hit rate", "Requests with a server span"],
            [
                [r["name"], str(r["shared_prefix_tokens"] if r["shared_prefix_tokens"] is not None
                                else NA),
                 str(r["cached_tokens"] if r["cached_tokens"] is not None else NA),
                 pct(r["cache_hit_rate"]), pct(r["prompt_hit_rate"]),
                 str(r["requests_with_server_span"])]
                for r in rows
            ],
        )  # fmt: skip
        return lines
