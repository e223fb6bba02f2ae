"""Requests cut short on a real vLLM: one server span each, with the right end reason, phase and
token count, on every release asked for (``--vllm-versions``; 0.32.0 and 0.30.0 by default).

One server per release for this module (``cut_server``): the engine hooks on, vLLM's tracer on,
both exporting to the session's receiver, and two settings that make the three places a request
can be cut reachable on purpose:

- ``--max-num-seqs 2``: two long streams hold both of the engine's slots, so a third request
  waits in the queue for as long as they run;
- ``--max-num-batched-tokens 16``: a prefill computes at most 16 prompt tokens per engine step,
  so a 480-token prompt's prefill takes 30 steps (a few hundred ms here), long enough to hang
  up in the middle of it. A long prompt's prefill on a GPU is chunked the same way (thousands of
  tokens per step), so this is the production shape, scaled down.

Requests go through otelbench's instrumented httpx transport under a span of the test's own,
so each request's client span, its ``traceparent`` and the hook's server span share one trace;
the client closes the stream, or cancels the request's task, as a user pressing stop does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import httpx
import pytest

from otelbench import semconv
from otelbench.client import InstrumentedTransport
from otelbench.collector import Receiver
from otelbench.sut import VllmCpuServer
from otelbench.telemetry import make_tracer_provider, shutdown
from tests.conftest import hook_test_versions
from tests.fixtures.cli import otelbench
from tests.vllm.conftest import SHARED_ENV, serving, set_up_vllm
from tests.vllm.test_engine_hooks import Span, one, trace_spans, wait_for_spans

if TYPE_CHECKING:
    from tests.vllm.conftest import SpanSink

pytestmark = pytest.mark.vllm

CUT_ARGS = ("--max-num-seqs", "2", "--max-num-batched-tokens", "16")
LONG_PROMPT = 480
SHORT_PROMPT = list(range(10, 26))  # 16 token ids
ENDED: dict[str, list[str]] = {}
"""Server URL → trace ids of every request this module sent it (the counter test adds them up)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cut_version" in metafunc.fixturenames:
        versions = hook_test_versions(metafunc.config)
        metafunc.parametrize("cut_version", versions, ids=versions, scope="module")


@pytest.fixture(scope="module")
def cut_server(
    cut_version: str, otlp_receiver: SpanSink, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmCpuServer]:
    env = set_up_vllm(cut_version)
    server = VllmCpuServer(
        model_dir=env.model_dir,
        venv=env.venv,
        served_model_name="tiny",
        max_model_len=512,
        extra_args=CUT_ARGS,
        otlp_traces_endpoint=otlp_receiver.endpoint,
        hooks=True,
        env=SHARED_ENV,
        log_path=tmp_path_factory.mktemp(f"vllm-cut-{cut_version}") / "vllm.log",
    )
    with serving(server) as started:
        yield started


def prompt(seed: int, length: int) -> list[int]:
    """Token ids no other request of the module sends (no prefix-cache hit between them)."""
    return [10 + (seed * 7 + i) % 900 for i in range(length)]


def body(prompt_ids: list[int], max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {
        "model": "tiny",
        "prompt": prompt_ids,
        "max_tokens": max_tokens,
        "stream": True,
        "ignore_eos": True,
        "temperature": 0.0,
        **extra,
    }


class Sender:
    """Requests through otelbench's instrumented transport, each under a span of its own whose
    trace id names the request; ``chunks[trace_id]`` counts its content events so far."""

    def __init__(self, base_url: str, endpoint: str) -> None:
        self.provider = make_tracer_provider(endpoint)
        self.tracer = self.provider.get_tracer("tests.vllm.cancelled")
        self.client = httpx.AsyncClient(
            base_url=base_url,
            transport=InstrumentedTransport(tracer_provider=self.provider),
            timeout=120.0,
            trust_env=False,
        )
        self.chunks: dict[str, int] = {}
        self.sent = ENDED.setdefault(base_url, [])

    async def stream(
        self,
        payload: dict[str, Any],
        stop_after: int | None = None,
        first: asyncio.Event | None = None,
    ) -> str:
        """Send ``payload``; read to the end, or close the stream after ``stop_after`` content
        events (the client hangs up); ``first`` is set at the first content event. Returns the
        trace id."""
        with self.tracer.start_as_current_span("test-request") as span:
            trace_id = f"{span.get_span_context().trace_id:032x}"
            self.sent.append(trace_id)
            self.chunks[trace_id] = 0
            async with self.client.stream("POST", "/v1/completions", json=payload) as response:
                response.raise_for_status()
                async for line in response.aiter_lines():
                    if not line.startswith("data: {"):
                        continue
                    self.chunks[trace_id] += 1
                    if first is not None:
                        first.set()
                    if stop_after is not None and self.chunks[trace_id] >= stop_after:
                        break
        return trace_id

    def started(
        self, payload: dict[str, Any], first: asyncio.Event | None = None
    ) -> asyncio.Task[str]:
        return asyncio.get_running_loop().create_task(self.stream(payload, first=first))

    async def close(self) -> None:
        await self.client.aclose()
        assert shutdown(self.provider)


@contextlib.asynccontextmanager
async def sending(server: VllmCpuServer, sink: SpanSink) -> AsyncIterator[Sender]:
    sender = Sender(server.base_url, sink.endpoint)
    try:
        yield sender
    finally:
        await sender.close()


async def cancelled(task: asyncio.Task[str]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


PHASE_SPANS = (semconv.SPAN_HOOK_QUEUE, semconv.SPAN_HOOK_PREFILL, semconv.SPAN_HOOK_DECODE)


def reached_phases(end_phase: str) -> tuple[str, ...]:
    """The phase spans a request cut in ``end_phase`` has: those it reached, the last one cut."""
    reached = {semconv.END_PHASE_QUEUE: 1, semconv.END_PHASE_PREFILL: 2}.get(end_phase, 3)
    return PHASE_SPANS[:reached]


def traced(sink: SpanSink, trace_id: str, hook_spans: int = 1) -> list[Span]:
    """The trace's spans once its hook span(s) and the client span are stored (the hooks end a
    cut request's span once the engine core's account of it arrives, or after 5 s), and with them
    the phase spans each cut one reached: they may come in a later export batch than their
    request's span (seen once on a loaded host: a decode cut read before its three phases came)."""
    client_name = semconv.client_span_name(semconv.OPERATION_TEXT_COMPLETION, "tiny")
    names = {semconv.SPAN_HOOK_REQUEST: hook_spans, client_name: 1}
    spans = wait_for_spans(sink, trace_id, names, timeout=30.0)
    phases = Counter(
        name
        for s in spans
        if s.name == semconv.SPAN_HOOK_REQUEST and semconv.SERVER_END_PHASE in s.attributes
        for name in reached_phases(str(s.attributes[semconv.SERVER_END_PHASE]))
    )
    if not phases:
        return spans
    return wait_for_spans(sink, trace_id, {**names, **phases}, timeout=30.0)


def check_cut(spans: list[Span], phase: str) -> Span:
    """The one hook span of a request the client cut, checked against its client span."""
    server = one(spans, semconv.SPAN_HOOK_REQUEST)
    client = one(spans, semconv.client_span_name(semconv.OPERATION_TEXT_COMPLETION, "tiny"))
    a = server.attributes
    assert a[semconv.SERVER_END_REASON] == semconv.END_REASON_CANCELLED
    assert a[semconv.SERVER_END_PHASE] == phase, a
    assert a[semconv.VLLM_RESPONSE_FINISH_REASON] == "abort"
    assert semconv.ERROR_TYPE not in a  # a cancellation is the caller's, not a server failure
    assert server.parent_span_id == client.span_id  # joined to the client's trace
    assert client.attributes[semconv.ERROR_TYPE] == semconv.ERROR_TYPE_CANCELLED
    offsets = json.loads(a[semconv.SERVER_TOKEN_OFFSETS_US])
    assert len(offsets) == int(a[semconv.VLLM_USAGE_COMPLETION_TOKENS])
    assert int(a[semconv.SERVER_OUTPUT_TOKENS_GENERATED]) >= len(offsets)
    assert semconv.VLLM_LATENCY_DECODE not in a
    # the phases it reached, the last one cut: no child span outlives the request's span
    children = [s for s in spans if s.parent_span_id == server.span_id]
    for child in children:
        assert server.start_ns <= child.start_ns <= child.end_ns <= server.end_ns
    assert sorted(c.name for c in children) == sorted(reached_phases(phase))
    return server


# ----------------------------------------------------------------------------------------------
def test_a_client_that_hangs_up_mid_stream_leaves_one_span_with_its_tokens(
    cut_server: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    async def run() -> tuple[str, int]:
        async with sending(cut_server, otlp_receiver) as sender:
            trace_id = await sender.stream(body(prompt(1, 16), 300), stop_after=10)
            return trace_id, sender.chunks[trace_id]

    trace_id, read = asyncio.run(run())
    assert read == 10
    server = check_cut(traced(otlp_receiver, trace_id), semconv.END_PHASE_DECODE)
    a = server.attributes
    tokens = int(a[semconv.VLLM_USAGE_COMPLETION_TOKENS])
    assert 10 <= tokens < 300  # what reached vLLM's frontend: at least what the client read
    assert int(a[semconv.SERVER_PROMPT_TOKENS_COMPUTED]) == 16
    assert int(a[semconv.VLLM_USAGE_PROMPT_TOKENS]) == 16


def test_a_request_cut_while_queued_leaves_one_span_that_never_left_the_queue(
    cut_server: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    async def run() -> tuple[str, list[str]]:
        async with sending(cut_server, otlp_receiver) as sender:
            firsts = [asyncio.Event(), asyncio.Event()]
            holders = [sender.started(body(prompt(10 + i, 16), 480), firsts[i]) for i in range(2)]
            await asyncio.gather(*(e.wait() for e in firsts))
            waiting = sender.started(body(prompt(20, 16), 50))
            await asyncio.sleep(0.4)
            # both slots were still taken: the third request cannot have been scheduled
            assert not any(h.done() for h in holders)
            await cancelled(waiting)
            for holder in holders:
                await cancelled(holder)
            queued = [t for t in sender.chunks if sender.chunks[t] == 0]
            return queued[0], [t for t in sender.chunks if t != queued[0]]

    queued, holders = asyncio.run(run())
    server = check_cut(traced(otlp_receiver, queued), semconv.END_PHASE_QUEUE)
    a = server.attributes
    assert int(a[semconv.VLLM_USAGE_COMPLETION_TOKENS]) == 0
    assert int(a[semconv.SERVER_PROMPT_TOKENS_COMPUTED]) == 0
    assert int(a[semconv.SERVER_OUTPUT_TOKENS_GENERATED]) == 0
    assert semconv.VLLM_LATENCY_QUEUE not in a  # its wait never ended in a scheduling
    # the two that held the slots were cut in decode, each with exactly one span
    for trace_id in holders:
        check_cut(traced(otlp_receiver, trace_id), semconv.END_PHASE_DECODE)


def test_a_request_cut_during_a_long_prefill_leaves_one_span_with_its_prefill_cut(
    cut_server: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    """The cut lands in the prefill when it comes at 40 % of the same prompt length's measured
    time to first token; each attempt is checked whatever phase it landed in, and one of at most
    three must land in the prefill (a busy machine can stretch the request's way to the engine)."""

    async def timed_prefill(sender: Sender) -> float:
        t0 = time.monotonic()
        trace_id = await sender.stream(body(prompt(30, LONG_PROMPT), 1))
        assert sender.chunks[trace_id] >= 1
        return time.monotonic() - t0

    async def cut(sender: Sender, seed: int, after: float) -> str:
        task = sender.started(body(prompt(seed, LONG_PROMPT), 30))
        await asyncio.sleep(after)
        await cancelled(task)
        return sender.sent[-1]

    async def run() -> list[str]:
        async with sending(cut_server, otlp_receiver) as sender:
            ttft = await timed_prefill(sender)
            return [await cut(sender, 31 + k, 0.4 * ttft) for k in range(3)]

    phases = []
    for trace_id in asyncio.run(run()):
        spans = traced(otlp_receiver, trace_id)
        hook = one(spans, semconv.SPAN_HOOK_REQUEST).attributes
        if semconv.SERVER_END_PHASE not in hook:
            # the answer was whole before the cut came (the measured time to first token was
            # stretched by a stall): nothing was cut, and the span says so
            assert hook[semconv.SERVER_END_REASON] == semconv.END_REASON_FINISHED, hook
            assert int(hook[semconv.VLLM_USAGE_COMPLETION_TOKENS]) == 30, hook
            phases.append(semconv.END_REASON_FINISHED)
            continue
        phase = hook[semconv.SERVER_END_PHASE]
        server = check_cut(spans, phase)
        phases.append(phase)
        if phase == semconv.END_PHASE_PREFILL:
            a = server.attributes
            assert 0 < int(a[semconv.SERVER_PROMPT_TOKENS_COMPUTED]) < LONG_PROMPT
            assert int(a[semconv.VLLM_USAGE_COMPLETION_TOKENS]) == 0
            assert float(a[semconv.VLLM_LATENCY_INFERENCE]) > 0
    assert semconv.END_PHASE_PREFILL in phases, phases


def test_parallel_samples_cut_together_leave_one_span_each(
    cut_server: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    async def run() -> str:
        async with sending(cut_server, otlp_receiver) as sender:
            return await sender.stream(
                body(prompt(40, 16), 300, n=2, temperature=1.0), stop_after=10
            )

    trace_id = asyncio.run(run())
    spans = traced(otlp_receiver, trace_id, hook_spans=2)
    servers = [s for s in spans if s.name == semconv.SPAN_HOOK_REQUEST]
    assert len(servers) == 2
    engine_ids = {s.attributes[semconv.SERVER_ENGINE_REQUEST_ID] for s in servers}
    assert len(engine_ids) == 2
    for server in servers:
        assert server.attributes[semconv.SERVER_END_REASON] == semconv.END_REASON_CANCELLED
        assert server.attributes[semconv.SERVER_END_PHASE] == semconv.END_PHASE_DECODE


def hook_spans_stored(receiver: Receiver, expected: int, timeout: float = 30.0) -> None:
    """Wait until ``receiver``'s store holds ``expected`` hook spans (the hooks export every
    200 ms; a cut request's span waits for the engine core's account first)."""
    deadline = time.monotonic() + timeout
    found = 0
    while time.monotonic() < deadline:
        [(found,)] = receiver.store.execute(
            f'SELECT count(*) FROM {semconv.TABLE_TRACES} WHERE "SpanName" = ?',
            [semconv.SPAN_HOOK_REQUEST],
        )
        if found >= expected:
            return
        time.sleep(0.2)
    raise AssertionError(f"{found} hook spans stored, not {expected}")


def requests_counter(base_url: str) -> dict[tuple[str, str], float]:
    """``otelbench_server_requests_total`` on vLLM's ``/metrics``, by (end reason, phase)."""
    text = httpx.get(f"{base_url}/metrics", timeout=10.0, trust_env=False).text
    found: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        if line.startswith("otelbench_server_requests_total{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
            key = (
                labels.get("otelbench_server_end_reason", ""),
                labels.get("otelbench_server_end_phase", ""),
            )
            found[key] = found.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def test_the_hooks_counter_counts_each_ended_request_by_reason_and_phase(
    cut_server: VllmCpuServer, otlp_receiver: SpanSink
) -> None:
    """Every request of this module ended in one span; the hooks' counter on vLLM's /metrics
    counts the same requests by the same reason and phase (plus the server's warm-up request)."""
    spans: dict[tuple[str, str], int] = {}
    for trace_id in ENDED.pop(cut_server.base_url):
        for span in trace_spans(otlp_receiver, trace_id):
            if span.name == semconv.SPAN_HOOK_REQUEST:
                a = span.attributes
                key = (a[semconv.SERVER_END_REASON], a.get(semconv.SERVER_END_PHASE, ""))
                spans[key] = spans.get(key, 0) + 1
    assert spans.get((semconv.END_REASON_CANCELLED, semconv.END_PHASE_QUEUE), 0) >= 1
    counted = requests_counter(cut_server.base_url)
    expected = dict(spans)
    expected[(semconv.END_REASON_FINISHED, "")] = (
        expected.get((semconv.END_REASON_FINISHED, ""), 0) + 1
    )  # serving()'s warm-up request
    assert counted == pytest.approx({k: float(v) for k, v in expected.items()})


def calibrated_read_timeout(server: VllmCpuServer, sink: SpanSink) -> float:
    """A read timeout the queued requests exceed and the running streams keep within, from one
    stream of the run's shape (32 prompt tokens, 400 out) measured alone now: a third of its
    duration (a queued request waits about one such duration for a slot; a running stream would
    need a stall of a third of its life to be cut), at least 0.5 s. A bound on the longest gap
    between chunks (4 times the calibration's) once gave 0.64 s, and a stall beside the quick tier
    then cut the running streams too, so every request of the run failed. (A chunk may carry more
    than one token when the API server falls behind, so the stream's tokens are counted from its
    usage, not its chunks.) The stream's hook span is awaited in ``sink`` before the run borrows
    the sink's port."""
    trace_id = secrets.token_hex(16)
    headers = {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"}
    usage: dict[str, int] = {}
    with httpx.Client(base_url=server.base_url, timeout=120.0, trust_env=False) as client:
        start = time.perf_counter()
        payload = body(prompt(97, 32), 400, stream_options={"include_usage": True})
        with client.stream("POST", "/v1/completions", json=payload, headers=headers) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    usage = json.loads(line.removeprefix("data: ")).get("usage") or usage
        duration = time.perf_counter() - start
    assert usage.get("completion_tokens") == 400, usage
    wait_for_spans(sink, trace_id, {semconv.SPAN_HOOK_REQUEST: 1}, timeout=30.0)
    return max(0.5, duration / 3)


def run_ends(store: Path) -> tuple[list[str], list[tuple[str, str]], dict[str, int]]:
    """What the run's spans in ``store`` say, request by request, joined by trace: each measured
    client request's outcome (``ok`` or its ``error.type``), each hook span's (end reason, end
    phase), and the report's mismatch counts worked out from those pairs."""
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            f"""
            SELECT c."SpanAttributes"['{semconv.ERROR_TYPE}'],
                   s."SpanAttributes"['{semconv.SERVER_END_REASON}'],
                   s."SpanAttributes"['{semconv.SERVER_END_PHASE}']
            FROM {semconv.TABLE_TRACES} c
            LEFT JOIN {semconv.TABLE_TRACES} s
              ON s."TraceId" = c."TraceId" AND s."SpanName" = '{semconv.SPAN_HOOK_REQUEST}'
            WHERE c."SpanKind" = '{semconv.SPAN_KIND_CLIENT}'
              AND c."SpanAttributes"['{semconv.REQUEST_PHASE}'] = '{semconv.PHASE_MEASURE}'
            """
        ).fetchall()
    client = [error or "ok" for error, _, _ in rows]
    server = [(reason or "", phase or "") for _, reason, phase in rows]
    finished = [reason == semconv.END_REASON_FINISHED for reason, _ in server]
    spanned = [reason != "" for reason, _ in server]
    cut = [outcome == semconv.ERROR_TYPE_TIMEOUT for outcome in client]
    mismatches = {
        "client_cut_server_finished": sum(c and f for c, f in zip(cut, finished, strict=True)),
        "client_ok_server_not_finished": sum(
            o == "ok" and s and not f for o, s, f in zip(client, spanned, finished, strict=True)
        ),
        "client_cut_without_server_span": sum(
            c and not s for c, s in zip(cut, spanned, strict=True)
        ),
    }
    return client, server, mismatches


def test_a_run_whose_queued_requests_time_out_counts_them_cut_on_both_sides(
    cut_server: VllmCpuServer, otlp_receiver: SpanSink, tmp_path: Path
) -> None:
    """``otelbench run`` in a closed loop of 6 against the server's 2 slots, 400-token answers
    and a read timeout the running streams mostly keep within (:func:`calibrated_read_timeout`):
    a request waiting for a slot gets no byte for longer than that, so the client gives up and
    vLLM cancels it; the report counts each cut request once on each side, joined by trace, and
    what the engine did for it, exactly as the stored spans say request by request
    (:func:`run_ends`). Which running streams a loaded machine also cuts is the machine's doing,
    so the counts are checked against the spans, not fixed; the queued ones are always cut.
    (Last in the module: its spans go to the run's own store, which the counter test above
    does not read.)"""
    timeout = calibrated_read_timeout(cut_server, otlp_receiver)
    for attempt in range(2):
        out = tmp_path / f"run{attempt}"
        store = tmp_path / f"spans{attempt}.duckdb"
        with otlp_receiver.lent() as port, Receiver(store, port=port) as receiver:
            proc = otelbench(
                "run", "--target", cut_server.base_url, "--model", "tiny", "--concurrency", "6",
                "--requests", "12", "--timeout", f"{timeout:.2f}", "--cold-start", "--ignore-eos",
                "--vocab-size", "1024", "--seed", "5",
                "--workload-param", "input_min=32", "--workload-param", "input_max=32",
                "--workload-param", "output_min=400", "--workload-param", "output_max=400",
                "--otlp-endpoint", f"http://127.0.0.1:{port}", "--out", str(out),
                timeout=600,
            )  # fmt: skip
            hook_spans_stored(receiver, 12)
        # Every request cut, the running ones too: the machine stalled every stream for longer
        # than the calibration allowed (seen twice beside the quick tier). Once more, with twice
        # the timeout (still short of a queued request's wait of about one stream's duration).
        if attempt == 0 and "all 12 requests failed" in proc.stderr:
            timeout *= 2
            continue
        break
    assert proc.returncode == 0, proc.stderr[-4000:]
    report_proc = otelbench("report", str(out), "--store", str(store))
    assert report_proc.returncode == 0, report_proc.stderr[-4000:]
    report = json.loads((out / "report.json").read_text())
    client, server_ends, mismatches = run_ends(store)
    context = f"read timeout {timeout:.2f} s; spans: {list(zip(client, server_ends, strict=True))}"

    assert len(client) == 12, context
    requests = report["run"]["requests"]
    assert requests["total"] == 12
    timed_out = requests["failed_by_type"].get(semconv.ERROR_TYPE_TIMEOUT, 0)
    assert timed_out == client.count(semconv.ERROR_TYPE_TIMEOUT), context
    assert timed_out >= 4, context  # at least the first wave's four waiting requests
    assert requests["failed"] == timed_out, context
    server = report["metrics"]["server"]
    assert server["requests_joined"] == 12, context
    ends = server["request_ends"]
    assert ends["client"] == {"ok": 12 - timed_out, "timeout": timed_out}, context
    reasons = Counter(reason for reason, _ in server_ends)
    assert ends["server"] == {r: reasons[r] for r in semconv.END_REASONS}, context
    assert reasons[semconv.END_REASON_FINISHED] + reasons[semconv.END_REASON_CANCELLED] == 12
    cut_both = sum(
        c == semconv.ERROR_TYPE_TIMEOUT and r == semconv.END_REASON_CANCELLED
        for c, (r, _) in zip(client, server_ends, strict=True)
    )
    assert ends["cut_on_both_sides"] == cut_both, context
    assert ends["mismatches"] == mismatches, context
    # A client that read its whole answer never meets a cut server span, and every cut request
    # has one; only a stream cut just as the engine finished it may be finished on the server.
    assert mismatches["client_ok_server_not_finished"] == 0, context
    assert mismatches["client_cut_without_server_span"] == 0, context
    assert cut_both + mismatches["client_cut_server_finished"] == timed_out, context
    phases = ends["by_phase"]["cancelled"]
    expected_phases = Counter(p for r, p in server_ends if r == semconv.END_REASON_CANCELLED)
    assert {k: v for k, v in phases.items() if v} == dict(expected_phases), context
    assert phases["queue"] >= 1, context
    work = ends["unread_work"]
    assert work["requests"] == reasons[semconv.END_REASON_CANCELLED], context
    assert work["requests_without_engine_account"] == 0, context
    assert work["output_tokens_received_by_client"] <= work["output_tokens_generated"], context
