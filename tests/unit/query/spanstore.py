"""Build a real otelbench span store in tests.

The file is created by :meth:`otelbench.store.SpanStore.open`
(``otelbench/store/sql/duckdb/schema.sql`` plus the ``otelbench_meta`` version row, exactly as
the collector creates it); rows are inserted with SQL, attribute values written as the OTel
Collector ClickHouse exporter writes them: every value a string, int arrays as JSON text
(``"[812,10240]"``), doubles as decimal text. Helpers take Python values and spell them that way;
tests may also pass strings verbatim.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from otelbench import semconv
from otelbench.store import SpanStore

T0_NS = 1_700_000_000_000_000_000
"""A wall-clock origin for test spans (2023-11-14T22:13:20Z)."""

_INSERT = """
INSERT INTO otel_traces VALUES (
    make_timestamp_ns($ts), $trace_id, $span_id, $parent_span_id, '', $name, $kind, $service,
    MAP(CAST($res_keys AS VARCHAR[]), CAST($res_values AS VARCHAR[])), $scope, '',
    MAP(CAST($keys AS VARCHAR[]), CAST($values AS VARCHAR[])),
    $duration, $status, '',
    list_transform(CAST($ev_ts AS BIGINT[]), lambda t: make_timestamp_ns(t)),
    CAST($ev_names AS VARCHAR[]),
    list_transform(
        list_zip(CAST($ev_keys AS VARCHAR[][]), CAST($ev_values AS VARCHAR[][])),
        lambda kv: MAP(kv[1], kv[2])
    ),
    [], [], [], []
)
"""

Event = tuple[str, int, Mapping[str, Any]]
"""A span event: (name, wall-clock ns, attributes)."""


def attr_text(value: Any) -> str:
    """An attribute value as the exporter stores it (string; arrays as compact JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return json.dumps(list(value), separators=(",", ":"))
    return str(value)


class SpanWriter:
    """A new span store file, open for inserting test spans with SQL."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = SpanStore.open(path)

    def close(self) -> None:
        self.store.close()

    def span(
        self,
        *,
        trace_id: str,
        span_id: str,
        name: str,
        kind: str,
        start_ns: int,
        duration_ns: int,
        attributes: Mapping[str, Any],
        parent_span_id: str = "",
        service: str = semconv.SERVICE_CLIENT,
        status: str = semconv.STATUS_UNSET,
        events: Sequence[Event] = (),
        resource: Mapping[str, Any] | None = None,
    ) -> None:
        keys = list(attributes)
        res = {"service.name": service, **(resource or {})}
        self.store.connection.execute(
            _INSERT,
            {
                "ts": start_ns,
                "trace_id": trace_id,
                "span_id": span_id,
                "parent_span_id": parent_span_id,
                "name": name,
                "kind": kind,
                "service": service,
                "scope": semconv.INSTRUMENTATION_SCOPE,
                "res_keys": list(res),
                "res_values": [attr_text(v) for v in res.values()],
                "keys": keys,
                "values": [attr_text(attributes[k]) for k in keys],
                "duration": duration_ns,
                "status": status,
                "ev_ts": [t for _, t, _ in events],
                "ev_names": [n for n, _, _ in events],
                "ev_keys": [list(a) for _, _, a in events],
                "ev_values": [[attr_text(v) for v in a.values()] for _, _, a in events],
            },
        )

    def run_span(
        self,
        run_id: str,
        manifest: Mapping[str, Any],
        start_ns: int,
        duration_ns: int,
        *,
        shard: int | None = None,
    ) -> None:
        """The run span of ``run_id``; with ``shard``, that shard's (one of several)."""
        suffix = "" if shard is None else f"-{shard}"
        self.span(
            trace_id=run_trace_id(run_id + suffix),
            span_id=run_trace_id(run_id + suffix)[:16],
            name=semconv.SPAN_RUN,
            kind=semconv.SPAN_KIND_INTERNAL,
            start_ns=start_ns,
            duration_ns=duration_ns,
            attributes={
                semconv.RUN_ID: run_id,
                semconv.RUN_MANIFEST: json.dumps(manifest, sort_keys=True),
                **({} if shard is None else {semconv.LOADGEN_SHARD: shard}),
            },
        )

    def client_span(
        self,
        *,
        run_id: str,
        trace_id: str,
        span_id: str,
        submit_ns: int,
        end_offset_us: int,
        chunk_offsets_us: Sequence[int] | str | None = None,
        chunk_tokens: Sequence[int] | str | None = None,
        chunk_token_source: str | None = semconv.CHUNK_TOKENS_FROM_USAGE,
        ttft_us: int | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        error_type: str | None = None,
        index: int = 0,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """One client span; TTFT defaults to the first chunk's offset, as the client records it."""
        attrs: dict[str, Any] = {
            semconv.RUN_ID: run_id,
            semconv.REQUEST_INDEX: index,
            semconv.REQUEST_CLASS: "default",
            semconv.CLIENT_END_OFFSET_US: end_offset_us,
            semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_TEXT_COMPLETION,
        }
        if chunk_offsets_us is not None:
            attrs[semconv.CLIENT_CHUNK_OFFSETS_US] = chunk_offsets_us
            if ttft_us is None and not isinstance(chunk_offsets_us, str) and chunk_offsets_us:
                ttft_us = chunk_offsets_us[0]
        if chunk_tokens is not None:
            attrs[semconv.CLIENT_CHUNK_TOKENS] = chunk_tokens
        if chunk_token_source is not None and chunk_offsets_us is not None:
            attrs[semconv.CLIENT_CHUNK_TOKEN_SOURCE] = chunk_token_source
        if ttft_us is not None:
            attrs[semconv.CLIENT_TTFT_US] = ttft_us
            attrs[semconv.CLIENT_FIRST_EVENT_OFFSET_US] = ttft_us
        if input_tokens is not None:
            attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] = input_tokens
        if output_tokens is not None:
            attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] = output_tokens
        if error_type is not None:
            attrs[semconv.ERROR_TYPE] = error_type
        else:
            attrs[semconv.GEN_AI_RESPONSE_FINISH_REASONS] = ["length"]
        attrs.update(extra or {})
        self.span(
            trace_id=trace_id,
            span_id=span_id,
            name=semconv.client_span_name(semconv.OPERATION_TEXT_COMPLETION, "tiny"),
            kind=semconv.SPAN_KIND_CLIENT,
            start_ns=submit_ns,
            duration_ns=end_offset_us * 1000,
            attributes=attrs,
            status=semconv.STATUS_ERROR if error_type is not None else semconv.STATUS_UNSET,
        )

    def server_span(
        self,
        *,
        trace_id: str,
        span_id: str,
        parent_span_id: str,
        start_ns: int,
        ttft_s: str,
        e2e_s: str,
        queue_s: str,
        prefill_s: str,
        decode_s: str,
        prompt_tokens: int,
        completion_tokens: int,
        request_id: str = "cmpl-1",
    ) -> None:
        """One vLLM ``llm_request`` span; latencies are given as the decimal text vLLM exports."""
        self.span(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent_span_id,
            name=semconv.SPAN_VLLM_REQUEST,
            kind=semconv.SPAN_KIND_SERVER,
            service="vllm",
            start_ns=start_ns,
            duration_ns=int(float(e2e_s) * 1e9),
            attributes={
                semconv.VLLM_LATENCY_TTFT: ttft_s,
                semconv.VLLM_LATENCY_E2E: e2e_s,
                semconv.VLLM_LATENCY_QUEUE: queue_s,
                semconv.VLLM_LATENCY_PREFILL: prefill_s,
                semconv.VLLM_LATENCY_DECODE: decode_s,
                semconv.VLLM_LATENCY_INFERENCE: repr(float(prefill_s) + float(decode_s)),
                semconv.VLLM_USAGE_PROMPT_TOKENS: prompt_tokens,
                semconv.VLLM_USAGE_COMPLETION_TOKENS: completion_tokens,
                semconv.VLLM_REQUEST_ID: request_id,
                semconv.VLLM_RESPONSE_FINISH_REASON: '["length"]',
            },
        )

    def hook_span(
        self,
        *,
        trace_id: str,
        span_id: str,
        parent_span_id: str,
        start_ns: int,
        token_offsets_us: Sequence[int] | None,
        ttft_s: str,
        e2e_s: str,
        queue_s: str,
        prefill_s: str,
        decode_s: str | None,
        prompt_tokens: int,
        preemptions: int | None = 0,
        events: Sequence[Event] = (),
        request_id: str = "cmpl-h",
        finish_reason: str = "length",
        output_phase_token: int | None = None,
        resource: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
        status: str = semconv.STATUS_UNSET,
    ) -> None:
        """One engine-hook ``otelbench.vllm.request`` span (as ``engine_hooks`` emits it), with
        its three phase child spans (which the metrics must ignore); ``resource`` defaults to
        :data:`HOOK_RESOURCE`. ``decode_s`` None: no decode time, and no inference time unless
        ``extra`` (more attributes, overriding) has one — a request cut short, with its end
        reason and phase in ``extra``."""
        attrs: dict[str, Any] = {
            semconv.VLLM_REQUEST_ID: request_id,
            semconv.VLLM_RESPONSE_FINISH_REASON: finish_reason,
            semconv.VLLM_USAGE_PROMPT_TOKENS: prompt_tokens,
            semconv.VLLM_USAGE_COMPLETION_TOKENS: len(token_offsets_us or ()),
            semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 0,
            semconv.VLLM_LATENCY_E2E: e2e_s,
            semconv.VLLM_LATENCY_TTFT: ttft_s,
            semconv.VLLM_LATENCY_QUEUE: queue_s,
            semconv.VLLM_LATENCY_PREFILL: prefill_s,
            semconv.SERVER_MONO_TO_UNIX_OFFSET_NS: 1_690_000_000_000_000_000,
        }
        if decode_s is not None:
            attrs[semconv.VLLM_LATENCY_DECODE] = decode_s
            attrs[semconv.VLLM_LATENCY_INFERENCE] = repr(float(prefill_s) + float(decode_s))
        if token_offsets_us is not None:
            attrs[semconv.SERVER_TOKEN_OFFSETS_US] = list(token_offsets_us)
        if preemptions is not None:
            attrs[semconv.SERVER_PREEMPTIONS] = preemptions
        if output_phase_token is not None:
            attrs[semconv.SERVER_OUTPUT_PHASE_TOKEN] = output_phase_token
        attrs.update(extra or {})
        self.span(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent_span_id,
            name=semconv.SPAN_HOOK_REQUEST,
            kind=semconv.SPAN_KIND_SERVER,
            service=semconv.SERVICE_VLLM,
            start_ns=start_ns,
            duration_ns=int(float(e2e_s) * 1e9),
            attributes=attrs,
            events=events,
            resource=HOOK_RESOURCE if resource is None else resource,
            status=status,
        )
        for k, name in enumerate(
            (semconv.SPAN_HOOK_QUEUE, semconv.SPAN_HOOK_PREFILL, semconv.SPAN_HOOK_DECODE)
        ):
            self.span(
                trace_id=trace_id,
                span_id=span_id[:-1] + "abc"[k],
                parent_span_id=span_id,
                name=name,
                kind=semconv.SPAN_KIND_INTERNAL,
                service=semconv.SERVICE_VLLM,
                start_ns=start_ns + k,
                duration_ns=1,
                attributes={},
            )


HOOK_RESOURCE: Mapping[str, str] = {
    semconv.RESOURCE_VLLM_VERSION: "0.32.0+cpu",
    semconv.RESOURCE_HOOK_SUPPORT: "tested",
    semconv.RESOURCE_TELEMETRY_DISTRO_NAME: semconv.HOOKS_DISTRIBUTION,
    semconv.RESOURCE_TELEMETRY_DISTRO_VERSION: "0.1.0",
}
"""The resource attributes the engine hooks put on their spans (besides ``service.name``)."""


def preemption(t_ns: int, output_tokens: int, kv_tokens_discarded: int) -> Event:
    """A hook span's preemption event."""
    return (
        semconv.EVENT_PREEMPTION,
        t_ns,
        {
            semconv.PREEMPTION_OUTPUT_TOKENS: output_tokens,
            semconv.PREEMPTION_KV_TOKENS_DISCARDED: kv_tokens_discarded,
        },
    )


def resumption(t_ns: int, stall_us: int) -> Event:
    """A hook span's resumption event."""
    return (semconv.EVENT_RESUMPTION, t_ns, {semconv.PREEMPTION_STALL_US: stall_us})


# ---------------------------------------------------------------------------------------------
# The scenario most query and report tests share; every number below is worked out by hand in
# the tests that use it.
# ---------------------------------------------------------------------------------------------
MS = 1_000_000
"""Nanoseconds per millisecond."""

RUN_ID = "r1"
OLD_RUN_ID = "r0"

MANIFEST: dict[str, Any] = {
    "id": RUN_ID,
    "target": "http://127.0.0.1:8000",
    "model": "tiny",
    "api": "completions",
    "workload": {
        "name": "synthetic-uniform",
        "seed": 7,
        # make_workload("synthetic-uniform", seed=7).spec(), as the load generator writes it
        "spec": {
            "name": "synthetic-uniform",
            "draft_section": "A.1",
            "seed": 7,
            "input": {
                "distribution": "uniform",
                "min": 128,
                "max": 512,
                "mean": 320.0,
                "unit": "tokens",
                "content": "random token ids from the vocabulary",
                "vocab_size": 100256,
            },
            "output": {
                "distribution": "uniform",
                "min": 64,
                "max": 256,
                "mean": 160.0,
                "unit": "tokens",
                "control": "max_tokens",
            },
            "system_prompt": None,
            "prefix_sharing": None,
            "temperature": 0.0,
            "stop_sequences": None,
        },
    },
    "seed": 7,
    "tokenizer": {"option": "A (native)", "name": "the target's own tokenizer", "source": "ids"},
    "load": {"mode": "poisson", "rate": 2.0, "concurrency": None, "requests": 4},
    "request_classes": {"default": 4},
    "warmup": None,
    "cold_start": False,
    "started_unix": 1_700_000_000.0,
    "finished_unix": 1_700_000_001.6,
    "duration_s": 1.6,
    "otelbench_version": "0.1.0",
    "sut": {"boundary": "Model Engine", "software": "vLLM 0.32.0", "hardware": "2-core CPU"},
    "client": {"http": "httpx"},
    "deviations": ["no warm-up procedure was run before measurement (draft 4.5)"],
    "notes": ["scenario"],
}


def trace(n: int) -> str:
    return f"{n:032x}"


def run_trace_id(run_id: str) -> str:
    """The trace id of run ``run_id``'s run span: 32 hex digits, as on the wire (an OTLP id)."""
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def span(n: int) -> str:
    return f"{n:016x}"


def write_scenario(path: Path, *, with_server: bool = True) -> Path:
    """Run r1 (4 client requests A–D, server children of A and B), an older run r0, and two
    server spans of live traffic.

    A: submit +0 ms, chunks at 100/120/150/200 ms with 1/2/1/3 tokens, end 210 ms, 200 input
       tokens, 7 output tokens; server child: TTFT 0.06 s, e2e 0.19, queue 0.01, prefill 0.05,
       decode 0.1, 200 prompt / 7 completion tokens.
    B: submit +500 ms, chunks at 300/310/330 ms, one token each, end 340 ms, 256 input, 3 output;
       server child: TTFT 0.25, e2e 0.33, queue 0.2, prefill 0.05, decode 0.02, 256 / 3 tokens.
    C: submit +1000 ms, chunks at 50/60 ms, one token each, end 65 ms, 255 input, 2 output;
       no server child.
    D: submit +1500 ms, failed with error.type "504" after 20 ms; no content.
    """
    store = SpanWriter(path)
    store.run_span(RUN_ID, MANIFEST, T0_NS, 1600 * MS)
    old_manifest = {**MANIFEST, "id": OLD_RUN_ID, "deviations": [], "notes": []}
    store.run_span(OLD_RUN_ID, old_manifest, T0_NS - 3600 * 1000 * MS, 100 * MS)
    store.client_span(
        run_id=OLD_RUN_ID,
        trace_id=trace(100),
        span_id=span(100),
        submit_ns=T0_NS - 3600 * 1000 * MS,
        end_offset_us=3000,
        chunk_offsets_us=[1000, 2000],
        chunk_tokens=[1, 1],
        input_tokens=10,
        output_tokens=2,
    )
    store.client_span(
        run_id=RUN_ID,
        trace_id=trace(1),
        span_id=span(1),
        submit_ns=T0_NS,
        end_offset_us=210_000,
        chunk_offsets_us="[100000,120000,150000,200000]",
        chunk_tokens="[1,2,1,3]",
        ttft_us=100_000,
        input_tokens=200,
        output_tokens=7,
        index=0,
    )
    store.client_span(
        run_id=RUN_ID,
        trace_id=trace(2),
        span_id=span(2),
        submit_ns=T0_NS + 500 * MS,
        end_offset_us=340_000,
        chunk_offsets_us=[300_000, 310_000, 330_000],
        chunk_tokens=[1, 1, 1],
        ttft_us=300_000,
        input_tokens=256,
        output_tokens=3,
        index=1,
    )
    store.client_span(
        run_id=RUN_ID,
        trace_id=trace(3),
        span_id=span(3),
        submit_ns=T0_NS + 1000 * MS,
        end_offset_us=65_000,
        chunk_offsets_us=[50_000, 60_000],
        chunk_tokens=[1, 1],
        input_tokens=255,
        output_tokens=2,
        index=2,
    )
    store.client_span(
        run_id=RUN_ID,
        trace_id=trace(4),
        span_id=span(4),
        submit_ns=T0_NS + 1500 * MS,
        end_offset_us=20_000,
        error_type="504",
        index=3,
    )
    if with_server:
        store.server_span(
            trace_id=trace(1),
            span_id=span(11),
            parent_span_id=span(1),
            start_ns=T0_NS + 5 * MS,
            ttft_s="0.06",
            e2e_s="0.19",
            queue_s="0.01",
            prefill_s="0.05",
            decode_s="0.1",
            prompt_tokens=200,
            completion_tokens=7,
            request_id="cmpl-a",
        )
        store.server_span(
            trace_id=trace(2),
            span_id=span(12),
            parent_span_id=span(2),
            start_ns=T0_NS + 505 * MS,
            ttft_s="0.25",
            e2e_s="0.33",
            queue_s="0.2",
            prefill_s="0.05",
            decode_s="0.02",
            prompt_tokens=256,
            completion_tokens=3,
            request_id="cmpl-b",
        )
        # the older run's request has a server child too: it must not leak into r1 or live
        store.server_span(
            trace_id=trace(100),
            span_id=span(110),
            parent_span_id=span(100),
            start_ns=T0_NS - 3600 * 1000 * MS + MS,
            ttft_s="0.0005",
            e2e_s="0.0025",
            queue_s="0.0001",
            prefill_s="0.0004",
            decode_s="0.001",
            prompt_tokens=10,
            completion_tokens=2,
            request_id="cmpl-old",
        )
        # live traffic: no parent at all, and a parent that is not an otelbench client span
        store.server_span(
            trace_id=trace(200),
            span_id=span(200),
            parent_span_id="",
            start_ns=T0_NS + 700 * MS,
            ttft_s="1.5e-02",
            e2e_s="0.5",
            queue_s="0",
            prefill_s="0.015",
            decode_s="0.485",
            prompt_tokens=64,
            completion_tokens=98,
            request_id="live-1",
        )
        store.server_span(
            trace_id=trace(201),
            span_id=span(201),
            parent_span_id=span(999),
            start_ns=T0_NS + 5000 * MS,
            ttft_s="0.02",
            e2e_s="0.1",
            queue_s="0.001",
            prefill_s="0.019",
            decode_s="0.08",
            prompt_tokens=32,
            completion_tokens=9,
            request_id="live-2",
        )
    store.close()
    return path


# ---------------------------------------------------------------------------------------------
# A run with engine-hook server spans; every number is worked out by hand in the tests.
# ---------------------------------------------------------------------------------------------
HOOK_RUN_ID = "h1"


def write_hook_scenario(path: Path) -> Path:
    """Run h1: four client requests H1–H4 with server children of every kind.

    H1: submit +0 ms, chunks 100/130/150 ms with 1/1/2 tokens, ok. Hook span: offsets
        60, 80, 100, 100 ms (the last two tokens share one engine step), latency-key TTFT 0.059 s
        (the first offset wins), queue 20, prefill 30, decode 40 ms, no preemption. vLLM's own
        llm_request span for it too, starting earlier, with other numbers: it must be ignored.
    H2: submit +500 ms, chunks 200/300/310 ms, ok. Hook span: offsets 150, 250, 260 ms, queue 50,
        prefill 80 ms; preempted twice (KV 41 and 42 tokens, stalls 60 and 5 ms).
    H3: submit +1000 ms, one chunk at 100 ms, then the client timed out (failed). Hook span:
        offsets 90, 95 ms, queue 10, prefill 70 ms; preempted once (KV 30, stall 30 ms).
    H4: submit +1500 ms, chunks 40/50 ms, ok. Only an llm_request span: TTFT 0.03 s, queue 0.005,
        prefill 0.02, decode 0.01 s, 2 completion tokens.
    """
    store = SpanWriter(path)
    manifest = {**MANIFEST, "id": HOOK_RUN_ID, "deviations": [], "notes": []}
    store.run_span(HOOK_RUN_ID, manifest, T0_NS, 2000 * MS)
    clients = (
        (1, 0, [100_000, 130_000, 150_000], [1, 1, 2], None, 160_000),
        (2, 500, [200_000, 300_000, 310_000], [1, 1, 1], None, 320_000),
        (3, 1000, [100_000], [1], "timeout", 400_000),
        (4, 1500, [40_000, 50_000], [1, 1], None, 60_000),
    )
    for n, submit_ms, offsets, tokens, error, end_us in clients:
        store.client_span(
            run_id=HOOK_RUN_ID,
            trace_id=trace(n),
            span_id=span(n),
            submit_ns=T0_NS + submit_ms * MS,
            end_offset_us=end_us,
            chunk_offsets_us=offsets,
            chunk_tokens=tokens,
            input_tokens=50,
            output_tokens=sum(tokens),
            error_type=error,
            index=n - 1,
        )
    store.server_span(
        trace_id=trace(1),
        span_id=span(19),
        parent_span_id=span(1),
        start_ns=T0_NS + 9 * MS,
        ttft_s="0.5",
        e2e_s="0.9",
        queue_s="0.3",
        prefill_s="0.2",
        decode_s="0.4",
        prompt_tokens=50,
        completion_tokens=4,
        request_id="cmpl-h1-llm",
    )
    store.hook_span(
        trace_id=trace(1),
        span_id=span(21),
        parent_span_id=span(1),
        start_ns=T0_NS + 10 * MS,
        token_offsets_us=[60_000, 80_000, 100_000, 100_000],
        ttft_s="0.059",
        e2e_s="0.11",
        queue_s="0.02",
        prefill_s="0.03",
        decode_s="0.04",
        prompt_tokens=50,
        request_id="cmpl-h1",
        output_phase_token=2,
    )
    t2 = T0_NS + 505 * MS
    store.hook_span(
        trace_id=trace(2),
        span_id=span(22),
        parent_span_id=span(2),
        start_ns=t2,
        token_offsets_us=[150_000, 250_000, 260_000],
        ttft_s="0.15",
        e2e_s="0.27",
        queue_s="0.05",
        prefill_s="0.08",
        decode_s="0.11",
        prompt_tokens=40,
        preemptions=2,
        events=[
            preemption(t2 + 160 * MS, 1, 41),
            resumption(t2 + 220 * MS, 60_000),
            preemption(t2 + 252 * MS, 2, 42),
            resumption(t2 + 257 * MS, 5_000),
        ],
        request_id="cmpl-h2",
    )
    t3 = T0_NS + 1005 * MS
    store.hook_span(
        trace_id=trace(3),
        span_id=span(23),
        parent_span_id=span(3),
        start_ns=t3,
        token_offsets_us=[90_000, 95_000],
        ttft_s="0.09",
        e2e_s="0.3",
        queue_s="0.01",
        prefill_s="0.07",
        decode_s="0.005",
        prompt_tokens=30,
        preemptions=1,
        events=[preemption(t3 + 20 * MS, 0, 30), resumption(t3 + 50 * MS, 30_000)],
        request_id="cmpl-h3",
        finish_reason="abort",
    )
    store.server_span(
        trace_id=trace(4),
        span_id=span(24),
        parent_span_id=span(4),
        start_ns=T0_NS + 1505 * MS,
        ttft_s="0.03",
        e2e_s="0.05",
        queue_s="0.005",
        prefill_s="0.02",
        decode_s="0.01",
        prompt_tokens=50,
        completion_tokens=2,
        request_id="cmpl-h4",
    )
    store.close()
    return path
