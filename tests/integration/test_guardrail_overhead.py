"""Draft 5.10 through otelbench gateway, in front of the scripted SSE server.

Real parts: the scripted server (its TTFT and ITL are scripted, so the stream is known), one
``otelbench gateway`` per configuration started by the procedure's launch command (restarted
between configurations), the embedded collector, the load generator sending text prompts decoded
by the tiny model's tokenizer. The gateway's filter spans land in the same traces as the client
spans, so each level's report carries ``metrics.guardrails``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelbench.errors import ConfigError
from otelbench.loadgen.runner import RunConfig
from otelbench.loadgen.warmup import WarmupSpec
from otelbench.procedures import (
    GuardrailOverheadParams,
    GuardrailOverheadProcedure,
    OpenLoopLevels,
    ProcedureSpec,
    get_profile,
    placeholder_load,
    run_procedure,
)
from otelbench.procedures.guardrail_overhead import derived_configurations
from otelbench.sut import default_model_dir
from tests.fixtures.scripted_server import ScriptedServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("procedure_json_conforms")]


SCRIPT = {"name": "fixed", "ttft_ms": 5.0, "itl_ms": 2.0, "n": 6}
GUARDRAILS = {
    "input": [{"type": "blocklist", "name": "banned", "keywords": ["zzqqxforbidden"]}],
    "output": [{"type": "pii", "kinds": ["email", "card"]}],
}


def make_spec(server: ScriptedServer, out: Path) -> ProcedureSpec:
    tokenizer = default_model_dir() / "tokenizer.json"
    assert tokenizer.exists(), "scripts/setup.sh writes the tiny model's tokenizer"
    base = RunConfig(
        target=server.url,
        model="m",
        load=placeholder_load(),
        seed=9,
        workload="conversation",
        workload_params={"vocab_size": 1024, "input_max": 48, "output_max": 8},
        extra_body={"script": SCRIPT},
        tokenizer=str(tokenizer),
        warmup=WarmupSpec(min_requests=3, min_output_tokens=0, probes=2),
    )
    return ProcedureSpec(base=base, profile=get_profile("quick"), out_dir=out, span_wait_s=1.0)


def test_four_configurations_through_the_gateway_with_guardrail_spans(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    config = tmp_path / "guardrails.json"
    config.write_text(json.dumps(GUARDRAILS))
    params = GuardrailOverheadParams(
        guardrails=config,
        capacity_rps=20.0,
        fractions=(0.5,),
        open_loop=OpenLoopLevels(level_duration_s=1.0, probe_requests=8, probe_concurrency=4),
    )
    result = run_procedure(
        GuardrailOverheadProcedure(params), make_spec(scripted_server, tmp_path / "5.10")
    )
    r = result.result
    assert r["draft_section"] == "5.10"
    labels = [lv["configuration"] for lv in r["levels"]]
    assert labels == ["baseline"] * 2 + ["input"] * 2 + ["output"] * 2 + ["full"] * 2
    used = r["configuration"]["configurations"]
    assert all(c["kind"] == "command" and c["restarted"] for c in used.values())
    assert len({c["url"] for c in used.values()}) == 4  # a gateway of its own each
    rows = {row["configuration"]: row for row in r["table13"]}
    assert set(rows) == {"baseline", "input", "output", "full"}
    for row in rows.values():
        assert row["succeeded"] == 10
        assert row["refused"] == 0
        assert row["ttft_p50_ms"] >= SCRIPT["ttft_ms"]
    # the baseline gateway runs no filter; the others' filters are timed in the same traces
    assert rows["baseline"]["guardrail_ttft_added_p50_ms"] is None
    for label in ("input", "output", "full"):
        assert rows[label]["guardrail_ttft_added_p50_ms"] > 0
    assert rows["input"]["guardrail_itl_added_p99_ms"] is None  # no output filter
    assert rows["output"]["guardrail_itl_added_p99_ms"] > 0
    full = json.loads((tmp_path / "5.10" / "levels" / "08" / "report.json").read_text())
    g = full["metrics"]["guardrails"]
    assert g["disclosure"]["input_filters"] == ["banned"]
    assert g["disclosure"]["output_filters"] == ["pii"]
    assert g["requests_with_guardrail_spans"] == 10
    assert full["run"]["request_options"]["prompt_format"] == "text"
    assert [o["configuration"] for o in r["overheads"]] == ["input", "output", "full"]
    assert set(r["input_filter_overhead_ms"]) == {"50%"}
    assert set(r["total_guardrail_overhead_ms"]) == {"50%"}
    assert [t["configuration"] for t in r["table14"]] == ["baseline", "input", "output", "full"]
    assert r["table14"][0]["change_pct"] is None
    assert all(t["max_output_tokens_per_s"] > 0 for t in r["table14"])
    assert any("5.10.2's 25 %, 50 %, 75 %" in d for d in r["deviations"])
    assert "## SUT configurations" in result.markdown
    assert "Table 14" in result.markdown


def test_one_stage_file_gives_baseline_and_full_only(tmp_path: Path) -> None:
    config = tmp_path / "out-only.json"
    config.write_text(json.dumps({"output": GUARDRAILS["output"]}))
    spec = ProcedureSpec(
        base=RunConfig(target="http://127.0.0.1:9", model="m", load=placeholder_load()),
        profile=get_profile("quick"),
        out_dir=tmp_path / "x",
        launch_vllm_cpu={"max_model_len": 512},
    )
    configs = derived_configurations(spec, config)
    assert [c.label for c in configs] == ["baseline", "full"]
    assert configs[0].vllm_args == ()
    assert configs[1].vllm_args == (
        "--middleware",
        "otelbench.guardrails.middleware.GuardrailMiddleware",
    )
    written = json.loads(Path(configs[1].env["OTELBENCH_GUARDRAILS_CONFIG"]).read_text())
    assert written["input"] == []
    assert written["output"] == GUARDRAILS["output"]


def test_a_bad_guardrail_file_or_missing_configurations_is_one_clear_error(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"input": [{"type": "blocklist", "timeout_ms": "fast"}]}))
    with pytest.raises(ConfigError, match="timeout_ms"):
        run_procedure(
            GuardrailOverheadProcedure(GuardrailOverheadParams(guardrails=bad)),
            make_spec(scripted_server, tmp_path / "a"),
        )
    with pytest.raises(ConfigError, match="--guardrails FILE"):
        run_procedure(
            GuardrailOverheadProcedure(GuardrailOverheadParams()),
            make_spec(scripted_server, tmp_path / "b"),
        )
