"""Requests cut short, on both sides of the wire, through real parts end to end.

The load generator sends real requests to the scripted SSE server (its own process) and exports
its client spans to the embedded receiver (DuckDB); two runs cut them on the client's side: in
``cancelled`` the run is cancelled while requests are in flight (the client spans end with
``error.type`` ``cancelled``, as a user pressing stop or an agent abandoning a call), in
``timeout`` every stream stalls past the client's read timeout. For every client span the
engine hooks' own code (``otelbench_vllm.spans.emit_spans`` with the hooks' tracer provider,
``otelbench_vllm.export.make_tracer_provider``) ends the server span a vLLM engine would have
ended, child of the client span through its ``traceparent``: finished, cancelled in the queue,
in prefill or in decode, failed, or none at all. The reports are built from the store, on DuckDB
and on chdb (the same spans copied: the ClickHouse SQL), and must be equal; every expected
number comes from the records the test gave the hooks and the client spans the SDK ended
(read from an in-memory exporter beside the OTLP one), not from the report code. The scripted
server streams its own script whatever the engine's account says, so the two sides' token counts
are independent inputs here (a real engine's are tied: the vLLM tier's tests). The live window
(``otelbench watch``) reads the same store.
"""

from __future__ import annotations

import array
import asyncio
import sys
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otelbench import semconv, telemetry
from otelbench.collector import Receiver
from otelbench.live.query import extract_window
from otelbench.live.window import WindowConfig, source_metrics
from otelbench.loadgen.runner import LoadSpec, RunConfig, execute_run
from otelbench.query import open_store
from otelbench.report import build_report, render_markdown
from tests.fixtures.scripted_server import ScriptedServer
from tests.unit.query.clickhouse_store import load_chdb

HOOKS_SRC = Path(__file__).resolve().parents[2] / "engine_hooks"
if str(HOOKS_SRC) not in sys.path:  # the hooks' package, from the source tree
    sys.path.insert(0, str(HOOKS_SRC))

from otelbench_vllm.export import make_tracer_provider  # noqa: E402
from otelbench_vllm.hook import HookStats  # noqa: E402
from otelbench_vllm.spans import FinishedRequest, emit_spans  # noqa: E402

pytestmark = pytest.mark.integration

MONO_ARRIVAL = 1000.0
"""Every request arrives in the engine at this monotonic second (its own offset_ns maps it to
its arrival on the wall clock), so that its token offsets are whole microseconds."""


@dataclass(frozen=True)
class Engine:
    """What the engine did with one request, in ms after its arrival (as vLLM's stats and the
    engine core's account would tell the hooks)."""

    tokens: tuple[float, ...] = ()
    """The engine step time of each token that reached the frontend; equal times: one step."""
    prompt: int = 100
    scheduled: float | None = 5.0
    end: tuple[str, str] | None = None
    """(end reason, end phase) of a request cut short; None: finished."""
    cut_at: float = 0.0
    computed: int | None = None
    generated: int | None = None
    error_type: str | None = None

    def record(self, client: ReadableSpan) -> FinishedRequest:
        """The hooks' record of this request, whose client span is ``client``."""
        assert client.start_time is not None
        arrival_time = (client.start_time + 1_000_000) / 1e9
        arrival_ns = int(arrival_time * 1e9)  # as emit_spans reads it
        offset_ns = arrival_ns - int(MONO_ARRIVAL * 1e9)

        def mono(ms: float | None) -> float:
            return 0.0 if ms is None else MONO_ARRIVAL + ms / 1000.0

        last = self.tokens[-1] if self.tokens else None
        end_ms = self.cut_at if self.end else (last or 0.0) + 1.0
        ctx = client.get_span_context()
        headers = {"traceparent": f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-01"}
        cut: dict[str, Any] = {}
        if self.end is not None:
            cut = {
                "end_reason": self.end[0],
                "end_phase": self.end[1],
                "error_type": self.error_type,
                "end_ts": mono(self.cut_at),
                "prompt_tokens_computed": self.computed,
                "output_tokens_generated": self.generated,
            }
        return FinishedRequest(
            iteration_timestamp=arrival_time + end_ms / 1000.0,
            finish_reason="length" if self.end is None else "abort",
            request_id=f"cmpl-{ctx.span_id:016x}",
            num_prompt_tokens=self.prompt,
            num_cached_tokens=0,
            arrival_time=arrival_time,
            queued_ts=mono(2.0),
            scheduled_ts=mono(self.scheduled),
            first_token_ts=mono(self.tokens[0] if self.tokens else None),
            last_token_ts=mono(last),
            first_token_latency=(self.tokens[0] / 1000.0) if self.tokens else 0.0,
            engine_request_id=None,
            trace_headers=headers,
            token_ts=array.array("d", [mono(t) for t in self.tokens]).tobytes(),
            preemptions=[],
            resumptions=[],
            output_phase_token=None,
            offset_ns=offset_ns,
            **cut,
        )


SPECULATIVE = Engine(tokens=(20, 40, 40, 40, 60, 60, 80))
"""Finished, with speculative decoding: steps of 1, 3, 2 and 1 tokens, 20 ms apart."""
PLAIN = Engine(tokens=(20, 45, 70, 95))
"""Finished, one token per step, 25 ms apart."""
CUT_IN_DECODE = Engine(
    tokens=(30, 55), end=("cancelled", "decode"), cut_at=70, computed=100, generated=3
)
CUT_IN_QUEUE = Engine(scheduled=None, end=("cancelled", "queue"), cut_at=8, computed=0, generated=0)
CUT_IN_PREFILL = Engine(end=("cancelled", "prefill"), cut_at=40, computed=64, generated=0)


def engine_seconds(e: Engine) -> float:
    """``gen_ai.latency.time_in_model_inference`` of a cut request: scheduling → cut."""
    return 0.0 if e.scheduled is None else (e.cut_at - e.scheduled) / 1000.0


def client_spans(memory: InMemorySpanExporter, run_id: str) -> list[ReadableSpan]:
    """The run's measured client spans the SDK ended, by start."""
    spans = [
        s
        for s in memory.get_finished_spans()
        if s.kind == SpanKind.CLIENT and (s.attributes or {}).get(semconv.RUN_ID) == run_id
    ]
    return sorted(spans, key=lambda s: (s.start_time or 0, s.context.span_id))


def outcome(span: ReadableSpan) -> str:
    return str((span.attributes or {}).get(semconv.ERROR_TYPE, "ok"))


def received_tokens(span: ReadableSpan) -> int:
    """The output tokens the client counted: its usage, else the sum of its chunks' tokens, else
    one per chunk (the client span's own attributes)."""
    a: Mapping[str, Any] = span.attributes or {}
    if semconv.GEN_AI_USAGE_OUTPUT_TOKENS in a:
        return int(a[semconv.GEN_AI_USAGE_OUTPUT_TOKENS])
    if semconv.CLIENT_CHUNK_TOKENS in a:
        return int(sum(a[semconv.CLIENT_CHUNK_TOKENS]))
    return len(a.get(semconv.CLIENT_CHUNK_OFFSETS_US, ()))


async def run_cancelled_mid_run(config: RunConfig, provider: TracerProvider) -> None:
    """Run ``config`` and cancel it 0.1 s after its third result, requests in flight."""
    third = asyncio.Event()
    results: list[object] = []

    def on_result(r: object) -> None:
        results.append(r)
        if len(results) >= 3:
            third.set()

    task = asyncio.create_task(execute_run(config, tracer_provider=provider, on_result=on_result))
    await third.wait()
    await asyncio.sleep(0.1)
    task.cancel()
    with suppress(asyncio.CancelledError):
        await task


def run_config(
    server: ScriptedServer,
    run_id: str,
    requests: int,
    concurrency: int,
    script: dict[str, Any],
    **kw: Any,
) -> RunConfig:
    """A closed-loop run of ``requests`` against the scripted server playing ``script``."""
    return RunConfig(
        target=server.url,
        model="m",
        load=LoadSpec(mode="closed_loop", requests=requests, concurrency=concurrency),
        run_id=run_id,
        workload_params={"vocab_size": 1024},
        extra_body={"script": script},
        **kw,
    )


@pytest.fixture(scope="module")
def store(
    scripted_server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, list[tuple[ReadableSpan, Engine | None]]]]:
    """The store with both runs: run id → (client span, the engine's account or None) pairs."""
    path = tmp_path_factory.mktemp("ends") / "spans.duckdb"
    runs: dict[str, list[tuple[ReadableSpan, Engine | None]]] = {}
    with pytest.MonkeyPatch.context() as mp, Receiver(path, port=0) as receiver:
        endpoint = f"http://127.0.0.1:{receiver.port}"
        mp.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{endpoint}/v1/traces")
        mp.delenv(semconv.ENV_SPOOL_DIR, raising=False)
        memory: dict[str, InMemorySpanExporter] = {}
        cancelled = run_config(
            scripted_server, "cancelled", 9, 3, {"n": 12, "ttft_ms": 20.0, "itl_ms": 25.0}
        )
        stall = {"n": 12, "ttft_ms": 10.0, "itl_ms": 10.0, "stall_at": 3, "stall_ms": 1500.0}
        timeout = run_config(scripted_server, "timeout", 4, 2, stall, timeout_s=0.3)
        for config in (cancelled, timeout):
            provider = telemetry.make_tracer_provider(endpoint, run_id=config.run_id)
            memory[config.run_id] = InMemorySpanExporter()  # one each: shut down with its provider
            provider.add_span_processor(SimpleSpanProcessor(memory[config.run_id]))
            if config is cancelled:
                asyncio.run(run_cancelled_mid_run(config, provider))
            else:
                asyncio.run(execute_run(config, tracer_provider=provider))
            assert telemetry.shutdown(provider, timeout_ms=20_000)

        # the engine's side: in "cancelled", the first finished request used speculative
        # decoding, the client's cancellations were cut in the queue, in prefill, then in
        # decode; in "timeout" the engine cut the first, finished the second anyway, failed on
        # the third, and never saw the fourth
        spans = client_spans(memory["cancelled"], "cancelled")
        ok = [s for s in spans if outcome(s) == "ok"]
        cut = [s for s in spans if outcome(s) == "cancelled"]
        assert len(ok) >= 3, [outcome(s) for s in spans]
        assert len(cut) >= 2, [outcome(s) for s in spans]
        cut_engine = [CUT_IN_QUEUE, CUT_IN_PREFILL] + [CUT_IN_DECODE] * (len(cut) - 2)
        runs["cancelled"] = [(s, SPECULATIVE if s is ok[0] else PLAIN) for s in ok] + list(
            zip(cut, cut_engine, strict=True)
        )
        spans = client_spans(memory["timeout"], "timeout")
        assert [outcome(s) for s in spans] == ["timeout"] * 4
        runs["timeout"] = list(
            zip(
                spans,
                [
                    Engine(tokens=(10, 20, 30), end=("cancelled", "decode"), cut_at=320,
                           prompt=50, computed=50, generated=5),
                    Engine(tokens=(10, 20, 30, 40, 50), prompt=40),
                    Engine(tokens=(10, 20), end=("error", "decode"), cut_at=200, prompt=40,
                           computed=40, generated=4, error_type="EngineDeadError"),
                    None,
                ],
                strict=True,
            )
        )  # fmt: skip

        stats = HookStats()
        hooks = make_tracer_provider(stats)
        tracer = hooks.get_tracer("otelbench_vllm")
        for pairs in runs.values():
            for span, engine in pairs:
                if engine is not None:
                    emit_spans(tracer, engine.record(span))
        assert hooks.force_flush(20_000)
        hooks.shutdown()
        assert stats.spans_export_failed == 0
    return path, runs


def both_reports(path: Path, run_id: str) -> dict[str, Any]:
    report = build_report(path, run_id)
    assert build_report(load_chdb(path), run_id) == report  # the ClickHouse SQL reads alike
    return dict(report)


def test_a_client_cancellation_is_one_cancelled_request_on_both_sides(
    store: tuple[Path, dict[str, list[tuple[ReadableSpan, Engine | None]]]],
) -> None:
    path, runs = store
    pairs = runs["cancelled"]
    ok = [e for s, e in pairs if outcome(s) == "ok"]
    cut = [(s, e) for s, e in pairs if outcome(s) == "cancelled"]
    assert all(e is not None for e in ok)
    report = both_reports(path, "cancelled")
    server = report["metrics"]["server"]
    n_ok, n_cut = len(ok), len(cut)
    assert server["requests_joined"] == n_ok + n_cut
    assert server["client_requests_without_server_span"] == 0
    assert server["span_sources"][semconv.SPAN_HOOK_REQUEST] == n_ok + n_cut
    # the latency summaries cover the requests the engine finished only
    assert server["ttft_ms"]["count"] == n_ok
    assert server["ttft_ms"]["max"] == 20.0
    assert server["e2e_ms"]["count"] == n_ok
    assert server["preemptions"]["requests_observed"] == n_ok

    ends = server["request_ends"]
    assert ends["client"] == {"ok": n_ok, "cancelled": n_cut}
    assert ends["server"] == {"finished": n_ok, "cancelled": n_cut, "aborted": 0, "error": 0}
    zero = {"finished": 0, "cancelled": 0, "aborted": 0, "error": 0, "no_server_span": 0}
    assert ends["by_client_outcome"] == {
        "ok": {**zero, "finished": n_ok},
        "cancelled": {**zero, "cancelled": n_cut},
    }
    assert ends["cut_on_both_sides"] == n_cut
    assert set(ends["mismatches"].values()) == {0}
    assert ends["by_phase"]["cancelled"] == {
        "queue": 1, "prefill": 1, "decode": n_cut - 2, "preempted": 0, "unknown": 0,
    }  # fmt: skip
    engines = [e for _, e in cut if e is not None]
    work = ends["unread_work"]
    assert work["requests"] == n_cut
    assert work["prompt_tokens_processed"] == sum(e.computed or 0 for e in engines)
    assert work["output_tokens_generated"] == sum(e.generated or 0 for e in engines)
    assert work["output_tokens_received_by_client"] == sum(received_tokens(s) for s, _ in cut)
    assert work["engine_request_s"] == pytest.approx(sum(engine_seconds(e) for e in engines))
    assert work["requests_without_engine_account"] == 0

    # speculative decoding on one request: 7 tokens in steps of 1, 3, 2, 1, 20 ms apart; the
    # others one token per step, 25 ms apart
    steps = server["engine_steps"]
    tokens = 7 + 4 * (n_ok - 1)
    assert {k: steps[k] for k in ("requests", "tokens", "steps", "multi_token_steps")} == {
        "requests": n_ok, "tokens": tokens, "steps": 4 * n_ok, "multi_token_steps": 2,
    }  # fmt: skip
    assert steps["steps_by_tokens"] == {"1": 2 + 4 * (n_ok - 1), "2": 1, "3": 1}
    assert steps["zero_itl_samples"] == 3
    assert steps["zero_itl_share"] == pytest.approx(3 / (tokens - n_ok))
    between = steps["time_between_steps_ms"]
    assert between["count"] == 3 * n_ok
    assert (between["min"], between["max"]) == (20.0, 25.0)
    assert server["itl_ms"]["count"] == tokens - n_ok
    assert server["itl_ms"]["min"] == 0.0  # the per-token samples keep the zeros
    method = report["methodology"]["itl_method"]
    assert method["server_engine_steps"].startswith(
        f"multi-token engine steps: {tokens} tokens from {4 * n_ok} engine steps"
    )
    assert "server_multi_token_handling" in method

    md = render_markdown(report)  # type: ignore[arg-type]
    assert f"| cancelled | {n_cut} | 0 | {n_cut} | 0 | 0 | 0 |\n" in md
    assert f"Cut on both sides (client cancelled or timed out, engine cancelled): {n_cut}." in md
    assert "## Engine steps (draft 4.6.2-4.6.3)" in md


def test_timeouts_name_the_mismatches_and_the_engine_error(
    store: tuple[Path, dict[str, list[tuple[ReadableSpan, Engine | None]]]],
) -> None:
    path, runs = store
    pairs = runs["timeout"]
    report = both_reports(path, "timeout")
    server = report["metrics"]["server"]
    assert server["requests_joined"] == 3
    assert server["client_requests_without_server_span"] == 1
    assert server["ttft_ms"]["count"] == 1  # the one the engine finished: first token at 10 ms
    assert server["ttft_ms"]["p50"] == 10.0
    assert server["itl_ms"]["count"] == 4
    assert server["itl_ms"]["p50"] == 10.0
    assert "engine_steps" not in server  # one token per step
    assert report["methodology"]["itl_method"]["server_engine_steps"] == (
        "one token per engine step"
    )
    ends = server["request_ends"]
    assert ends["client"] == {"timeout": 4}
    assert ends["server"] == {"finished": 1, "cancelled": 1, "aborted": 0, "error": 1}
    assert ends["by_client_outcome"] == {
        "timeout": {"finished": 1, "cancelled": 1, "aborted": 0, "error": 1, "no_server_span": 1}
    }
    assert ends["cut_on_both_sides"] == 1
    assert ends["mismatches"] == {
        "client_cut_server_finished": 1,
        "client_ok_server_not_finished": 0,
        "client_cut_without_server_span": 1,
    }
    assert ends["by_phase"]["cancelled"]["decode"] == ends["by_phase"]["error"]["decode"] == 1
    unread = [(s, e) for s, e in pairs if e is not None and e.end is not None]
    work = ends["unread_work"]
    assert (work["requests"], work["prompt_tokens_processed"]) == (2, 90)
    assert work["output_tokens_generated"] == 9
    assert work["output_tokens_received_by_client"] == sum(received_tokens(s) for s, _ in unread)
    assert work["engine_request_s"] == pytest.approx(0.315 + 0.195)
    assert report["run"]["requests"]["failed_by_type"] == {"timeout": 4}


def test_the_live_window_counts_them_from_the_same_spans(
    store: tuple[Path, dict[str, list[tuple[ReadableSpan, Engine | None]]]],
) -> None:
    """``otelbench watch`` over the store (both runs are another otelbench run's traffic:
    source ``benchmark``), on DuckDB and on chdb."""
    path, runs = store
    starts = [s.start_time or 0 for pairs in runs.values() for s, _ in pairs]
    config = WindowConfig(window_s=3600.0)
    end = max(starts) + 600 * 10**9
    n_cut = sum(1 for s, _ in runs["cancelled"] if outcome(s) == "cancelled")
    metrics = []
    for url in (path, load_chdb(path)):
        with open_store(url) as runner:
            window = extract_window(runner, start_unix_ns=end - 3600 * 10**9, end_unix_ns=end)
        metrics.append(source_metrics(window, semconv.SOURCE_BENCHMARK, config))
    m = metrics[0]
    assert repr(metrics[1]) == repr(m)
    n_ok = sum(1 for s, _ in runs["cancelled"] if outcome(s) == "ok")
    assert m.requests == n_ok + n_cut + 3
    assert m.errors == 1  # the engine error (status Error); a cancellation is no error
    assert m.ttft_s.count == n_ok + 1
    assert m.cut[("cancelled", "queue")] == m.cut[("cancelled", "prefill")] == 1
    assert m.cut[("cancelled", "decode")] == n_cut - 2 + 1
    assert m.cut[("error", "decode")] == 1
    assert sum(m.cut.values()) == n_cut + 2
    assert m.unread_prompt_tokens == 64 + 100 * (n_cut - 2) + 90
    assert m.unread_output_tokens == 3 * (n_cut - 2) + 9
