"""otelbench side by side with its peers (guidellm, aiperf, ``vllm bench serve``) in one run.

Every tool runs as its own command line, against the same targets, one after the other:

* the scripted SSE server (tests/fixtures/scripted_server.py through bench/peers/truth_server.py,
  pinned to CPU 0), which logs when it really sent every event: the ground truth;
* a real vLLM on CPU (the tiny Llama, float32, otelbench's engine hooks on, one launch shared by
  all tools), for what each tool's output contains beside a real engine.

Tools (``--tools``): ``otelbench`` (``otelbench run``, spans on, the embedded collector, cold
start), ``raw`` (bench/peers/raw_client.py: stdlib asyncio, the lean yardstick), ``guidellm``
0.8.1, ``aiperf`` 0.13.0, ``vllm`` (``vllm bench serve`` 0.32.0). bench/peers/setup.sh installs the
peers outside the repo (~/.cache/otelbench-peers). Each run goes through bench/peers/reap.py, a
child sub-reaper, so the CPU of all of a tool's processes is counted; a sampler reads the CPU of
the tool's session from ``/proc`` every 50 ms, which splits it into start-up, load and exit.

Questions, one table each (bench/results/peers.json has every number):

1. fidelity: TTFT and ITL absolute error against the server's log at concurrency 1, 8 and 64 on
   the ``pitfalls`` schedule (whitespace-only first chunk, keep-alive comment, a stall, two-token
   chunks; truth: draft 5.1.3.1's first *content* token, and the gaps between content chunks).
   Per request, by response id, where the tool's raw output has it (otelbench, raw, guidellm);
   otherwise per distribution (the difference of the tool's and the truth's P50 and P99). The
   truth's TTFT starts when the server has read the request, so opening a connection counts
   against the client; per request, the error on reused connections is shown apart;
2. capacity: open-loop constant-rate sweep on the ``fast`` schedule (32 one-token chunks, 2 ms
   apart), the tool pinned to CPU 1 (``taskset``): the highest request rate (and chunks/s) each
   tool sustains (≥ 95 % of the asked rate reaches the server) while its TTFT and ITL P50 errors
   stay under 1 ms, and its open-loop schedule lag there, measured where the requests land (the
   server's receive times against the ideal 1/rate spacing: tool independent);
3. cost: CPU seconds per request and per 1,000 output tokens during the load (all processes),
   the total with start-up and exit, start-up time (tool started → first request received by the
   server), and CPU while idle (two requests one at a time, each waiting 4 s for its first
   token: a busy-spinning process shows up as ~1 CPU-s/s);
4. saturation: closed loop at rising concurrency on the ``long`` schedule (256 one-token
   chunks, 2 ms apart), the tool pinned to CPU 1 and the server to CPU 0: output tokens/s
   reaching the server, the tool's CPU-s per 1,000 output tokens there, and its TTFT and ITL
   P50 errors. The raw client reaches the server's ceiling; a tool whose peak is below the raw
   client's is the bottleneck before the server is. CPU per token is compared here, at
   saturation, where a client's fixed per-wake-up costs are shared by many chunks;
5. features, read off the same runs, and what each tool reports beside a real vLLM (C = 4, 64
   output tokens, after 16 warm-up requests so that no tool pays for the engine's cold start).

Goals otelbench is checked against (the ``goals`` table): TTFT within 0.5 ms of the raw-socket
reference up to concurrency 64; ≤ 0.03 CPU-s per 1k output tokens with spans on (at
saturation); start-up under 1 s; no busy-spinning; the client is not the bottleneck before the
server (its saturation peak, and its highest open-loop rate held, against the raw client's).

Usage: ``.venv/bin/python bench/peers.py [--quick] [--tools otelbench,raw,...] [--no-vllm]
[--questions fidelity,capacity,saturation,idle,vllm] [--levels C:N,...] [--rates R,...]
[--saturation C,...] [--keep]
[--out FILE.json]`` (default ``bench/results/peers.json``; ``--keep`` keeps every tool's raw
output and the server's log; ``--levels`` / ``--rates`` replace the fidelity levels
(concurrency:requests) and the capacity rates).
Runs take ~15 min in full, 4–8 in ``--quick`` (most of it the peers' own start-up, 5–15 s
each, and vLLM's, 20 s to 3 min). The machine is a shared 2-core VM: every run records the
load average; the numbers are as noisy as the machine is.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from otelbench import semconv  # noqa: E402
from otelbench.errors import OtelbenchError  # noqa: E402
from otelbench.store import SpanStore  # noqa: E402
from otelbench.sut import VllmCpuServer  # noqa: E402
from otelbench.sut.process import free_port  # noqa: E402
from tests.fixtures.scripted_server import ScriptedServer  # noqa: E402

PEERS_DIR = ROOT / "bench" / "peers"
PEERS_HOME = Path(os.environ.get("OTELBENCH_PEERS_HOME", Path.home() / ".cache/otelbench-peers"))
OTEL_HOME = Path(os.environ.get("OTELBENCH_HOME", Path.home() / ".cache/otelbench"))
TOKENIZER = Path(os.environ.get("OTELBENCH_VLLM_MODEL", OTEL_HOME / "tiny-llama"))
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
SERVER_CPU, TOOL_CPU = 0, 1
TICK_S = 1 / os.sysconf("SC_CLK_TCK")
RESOLUTION_MS = 1.0
TOOL_TIMEOUT_S = 600.0
TOKEN_EVENTS = ("ws", "empty", "content", "finish")


# ------------------------------------------------------------------------------------------------
# What a run is, and what a tool reported
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Where the tools send: base URL (no ``/v1``), served model, output tokens to ask for."""

    url: str
    model: str
    max_tokens: int
    kind: str  # "scripted" or "vllm"
    otlp: str | None = None  # vLLM: the collector otelbench exports to (and the hooks)
    store: Path | None = None


@dataclass(frozen=True)
class Load:
    """Closed loop (``concurrency``) or open loop at a constant ``rate``; ``n`` requests."""

    n: int
    concurrency: int = 0
    rate: float = 0.0

    @property
    def label(self) -> str:
        return f"r{self.rate:g}" if self.rate else f"c{self.concurrency}"


@dataclass
class Measured:
    """One request as the tool reported it (ms); None where its output does not say."""

    id: str | None
    ttft_ms: float | None
    gaps_ms: list[float] | None = None
    mean_itl_ms: float | None = None
    tokens: int = 0


@dataclass
class Truth:
    """One request as the server sent it (from its ``/_log``)."""

    id: str
    t_recv_ns: int
    ttft_ms: float
    gaps_ms: list[float]
    mean_itl_ms: float | None
    tokens: int
    t_end_ns: int
    chunks: int

    @classmethod
    def from_entry(cls, e: dict[str, Any]) -> Truth | None:
        content = [ev for ev in e["events"] if ev[0] == "content"]
        if not content:
            return None
        sent = [ev[4] for ev in content]
        # Output tokens as the server's usage counts them: a whitespace-only chunk is a token too.
        tokens = sum(ev[1] for ev in e["events"] if ev[0] in TOKEN_EVENTS)
        return cls(
            id=e["id"],
            t_recv_ns=e["t_recv_ns"],
            ttft_ms=(sent[0] - e["t_recv_ns"]) / 1e6,
            gaps_ms=[(b - a) / 1e6 for a, b in itertools.pairwise(sent)],
            mean_itl_ms=(sent[-1] - sent[0]) / 1e6 / (tokens - 1) if tokens > 1 else None,
            tokens=tokens,
            t_end_ns=max(ev[2] for ev in e["events"]),
            chunks=len(content),
        )


@dataclass
class RunResult:
    tool: str
    target: str
    load: Load
    out_dir: Path
    rc: int
    wall_s: float
    cpu_total_s: float
    maxrss_kb: int
    spawn_ns: int
    samples: list[tuple[int, float]]  # (monotonic ns, CPU-s of the tool's session so far)
    measured: list[Measured] = field(default_factory=list)
    truth: list[Truth] = field(default_factory=list)
    parse_error: str | None = None
    loadavg: tuple[float, float] = (0.0, 0.0)

    def cpu_at(self, t_ns: int) -> float:
        """The tool's CPU-s at ``t_ns`` (linear between samples)."""
        if not self.samples:
            return float("nan")
        ts = np.array([s[0] for s in self.samples], dtype=np.float64)
        cs = np.array([s[1] for s in self.samples], dtype=np.float64)
        return float(np.interp(t_ns, ts, np.maximum.accumulate(cs)))


# ------------------------------------------------------------------------------------------------
# The tools: command line and output parser of each (a registry, not an if/elif chain)
# ------------------------------------------------------------------------------------------------


class Tool:
    name = ""
    setup_requests = 0  # requests it sends before the load (vllm: one test request)
    per_chunk = True  # its per-request output has a time (or gap) per chunk
    contains = ""  # what its per-request output holds (the feature table)

    def available(self) -> str | None:
        """None when the tool can run here, else why not."""
        return None

    def env(self) -> dict[str, str]:
        return dict(OFFLINE)

    def command(self, target: Target, load: Load, out: Path) -> list[str]:
        raise NotImplementedError

    def parse(self, out: Path, target: Target) -> list[Measured]:
        raise NotImplementedError


TOOLS: dict[str, Tool] = {}


def register(cls: type[Tool]) -> type[Tool]:
    TOOLS[cls.name] = cls()
    return cls


def _ms_list(values: Any) -> list[float]:
    return [float(v) for v in values]


@register
class Otelbench(Tool):
    name = "otelbench"
    contains = (
        "client span per request (content TTFT, first-event time, every content chunk's offset "
        "and token count, schedule lag, usage) + server span (queue/prefill/decode, per-token "
        "engine offsets, preemptions) in a DuckDB store; report.json/md/html with fluidity"
    )

    def command(self, target: Target, load: Load, out: Path) -> list[str]:
        cmd = [str(ROOT / ".venv/bin/otelbench"), "run", "--out", str(out / "run")]
        cmd += ["--model", target.model, "--target", target.url, "--requests", str(load.n)]
        cmd += ["--cold-start", "--ignore-eos"]
        for k in ("input_min", "input_max"):
            cmd += ["--workload-param", f"{k}=32"]
        for k in ("output_min", "output_max"):
            cmd += ["--workload-param", f"{k}={target.max_tokens}"]
        if load.rate:
            cmd += ["--rate", f"{load.rate:g}", "--arrival", "uniform"]
        else:
            cmd += ["--concurrency", str(load.concurrency)]
        if target.kind == "vllm":  # token-id prompts inside the tiny model's vocabulary
            cmd += ["--vocab-size", "1000"]
        if target.otlp and target.store:
            cmd += ["--otlp-endpoint", target.otlp, "--store", str(target.store)]
        else:
            cmd += ["--span-wait", "0"]
        return cmd

    def parse(self, out: Path, target: Target) -> list[Measured]:
        return [
            Measured(
                id=a.get("gen_ai.response.id"),
                ttft_ms=int(a["otelbench.client.ttft_us"]) / 1000,
                gaps_ms=[(b - x) / 1000 for x, b in itertools.pairwise(offs)],
                mean_itl_ms=_mean_itl(offs, int(a.get("gen_ai.usage.output_tokens", 0))),
                tokens=int(a.get("gen_ai.usage.output_tokens", 0)),
            )
            for a in client_spans(out, target)
            if "otelbench.client.ttft_us" in a
            for offs in [json.loads(a["otelbench.client.chunk_offsets_us"])]
        ]


def _mean_itl(offsets_us: list[int], tokens: int) -> float | None:
    return (offsets_us[-1] - offsets_us[0]) / 1000 / (tokens - 1) if tokens > 1 else None


def client_spans(out: Path, target: Target) -> list[dict[str, str]]:
    """The client spans of one ``otelbench run`` (its run id), from its store (a snapshot of it
    while the collector that writes it still runs)."""
    run_id = json.loads((out / "run" / "run.json").read_text())["run_id"]
    with SpanStore.open(target.store or out / "run" / "spans.duckdb", read_only=True) as store:
        rows = store.execute(
            "SELECT SpanAttributes FROM otel_traces WHERE list_contains(?, SpanKind) "
            "AND SpanAttributes[?] = ? AND SpanAttributes[?] = ?",
            [
                list(semconv.SPAN_KIND_CLIENT_SPELLINGS),
                semconv.RUN_ID,
                run_id,
                semconv.REQUEST_PHASE,
                semconv.PHASE_MEASURE,
            ],
        )
    return [dict(r[0]) for r in rows]


@register
class Raw(Tool):
    name = "raw"
    contains = "JSONL: response id, content TTFT, every content chunk's offset, usage tokens"

    def command(self, target: Target, load: Load, out: Path) -> list[str]:
        cmd = [sys.executable, str(PEERS_DIR / "raw_client.py"), target.url, target.model]
        cmd += [str(load.n), str(out / "raw.jsonl"), "--max-tokens", str(target.max_tokens)]
        cmd += (
            ["--rate", f"{load.rate:g}"] if load.rate else ["--concurrency", str(load.concurrency)]
        )
        return cmd

    def parse(self, out: Path, target: Target) -> list[Measured]:
        recs = [json.loads(x) for x in (out / "raw.jsonl").read_text().splitlines()]
        return [
            Measured(
                id=r.get("id"),
                ttft_ms=r["ttft_us"] / 1000,
                gaps_ms=[(b - a) / 1000 for a, b in itertools.pairwise(r["chunk_us"])],
                mean_itl_ms=_mean_itl(r["chunk_us"], r["tokens"]),
                tokens=r["tokens"],
            )
            for r in recs
            if r.get("ok")
        ]


@register
class Guidellm(Tool):
    name = "guidellm"
    per_chunk = False
    contains = (
        "JSON per request: response id, request start / first / last token times (wall clock), "
        "iteration counts, prompt and output text; no per-chunk times"
    )

    def available(self) -> str | None:
        exe = PEERS_HOME / "guidellm-venv/bin/guidellm"
        return None if exe.exists() else f"{exe} missing: run bench/peers/setup.sh"

    def command(self, target: Target, load: Load, out: Path) -> list[str]:
        profile = (
            f"kind=constant,rate={load.rate:g}"
            if load.rate
            else f"kind=concurrent,streams={load.concurrency}"
        )
        return [
            str(PEERS_HOME / "guidellm-venv/bin/guidellm"),
            "run",
            "--backend",
            f"kind=openai_http,target={target.url},model={target.model},"
            "request_format=/v1/completions",
            "--profile",
            profile,
            "--constraint",
            f"kind=max_requests,count={load.n}",
            "--tokenizer",
            f"kind=huggingface_auto,model={TOKENIZER}",
            "--data",
            f"kind=synthetic_text,prompt_tokens=32,output_tokens={target.max_tokens}",
            "--output",
            f"kind=json,path={out / 'out.json'}",
            "--disable-progress",
        ]

    def parse(self, out: Path, target: Target) -> list[Measured]:
        doc = json.loads((out / "out.json").read_text())
        res = []
        for r in doc["benchmarks"][0]["requests"]["successful"]:
            t = r["info"]["timings"]
            n = int((r.get("output_metrics") or {}).get("text_tokens") or 0)
            first, last = t.get("first_token_iteration"), t.get("last_token_iteration")
            res.append(
                Measured(
                    id=r.get("response_id"),
                    ttft_ms=(first - t["request_start"]) * 1000 if first else None,
                    mean_itl_ms=(last - first) * 1000 / (n - 1)
                    if first and last and n > 1
                    else None,
                    tokens=n,
                )
            )
        return res


@register
class Aiperf(Tool):
    name = "aiperf"
    contains = (
        "JSONL per request: TTFT, time to second token, inter-chunk latencies, per-request ITL, "
        "HTTP phase timings, usage (no response id); scrapes the server's /metrics"
    )

    def available(self) -> str | None:
        exe = PEERS_HOME / "aiperf-venv/bin/aiperf"
        return None if exe.exists() else f"{exe} missing: run bench/peers/setup.sh"

    def env(self) -> dict[str, str]:
        return {**OFFLINE, "HF_HUB_CACHE": str(PEERS_HOME / "hf-cache")}

    def command(self, target: Target, load: Load, out: Path) -> list[str]:
        cmd = [str(PEERS_HOME / "aiperf-venv/bin/aiperf"), "profile", "--model", target.model]
        cmd += ["--url", target.url, "--endpoint-type", "completions", "--streaming"]
        cmd += ["--tokenizer", "local/tiny-llama", "--use-server-token-count"]
        cmd += ["--isl", "32", "--osl", str(target.max_tokens)]
        cmd += ["--extra-inputs", "ignore_eos:true"]
        cmd += ["--extra-inputs", f"max_tokens:{target.max_tokens}"]
        if load.rate:
            cmd += ["--request-rate", f"{load.rate:g}", "--arrival-pattern", "constant"]
        else:
            cmd += ["--concurrency", str(load.concurrency)]
        cmd += ["--request-count", str(load.n), "--ui", "none", "--no-gpu-telemetry"]
        if target.kind == "scripted":
            cmd += ["--no-server-metrics"]
        return [*cmd, "--artifact-dir", str(out / "ap"), "--export-level", "records"]

    def parse(self, out: Path, target: Target) -> list[Measured]:
        res = []
        for line in (out / "ap" / "profile_export.jsonl").read_text().splitlines():
            m = json.loads(line).get("metrics") or {}
            if "time_to_first_token" not in m:
                continue
            res.append(
                Measured(
                    id=None,
                    ttft_ms=float(m["time_to_first_token"]["value"]),
                    gaps_ms=_ms_list((m.get("inter_chunk_latency") or {}).get("value") or []),
                    mean_itl_ms=(m.get("inter_token_latency") or {}).get("value"),
                    tokens=int((m.get("output_token_count") or {}).get("value") or 0),
                )
            )
        return res


@register
class VllmBench(Tool):
    name = "vllm"
    setup_requests = 1
    contains = (
        "JSON: per-request TTFT, latency, start time, output length, generated text, per-message "
        "ITL list (no response id, no absolute chunk times)"
    )

    def available(self) -> str | None:
        cli = OTEL_HOME / "vllm-venv/bin/otelbench-vllm-cli.py"
        return None if cli.exists() else f"{cli} missing: run scripts/vllm/setup.sh"

    def command(self, target: Target, load: Load, out: Path) -> list[str]:
        cmd = [str(PEERS_DIR / "vllm_bench.sh"), "--backend", "openai", "--base-url", target.url]
        cmd += ["--endpoint", "/v1/completions", "--model", target.model]
        cmd += ["--tokenizer", str(TOKENIZER), "--dataset-name", "random"]
        cmd += ["--random-input-len", "32", "--random-output-len", str(target.max_tokens)]
        cmd += ["--num-prompts", str(load.n), "--ignore-eos", "--disable-tqdm"]
        if load.rate:
            cmd += ["--request-rate", f"{load.rate:g}", "--burstiness", "1000"]
        else:
            cmd += ["--max-concurrency", str(load.concurrency)]
        cmd += ["--save-result", "--save-detailed", "--result-dir", str(out)]
        return [*cmd, "--result-filename", "out.json"]

    def parse(self, out: Path, target: Target) -> list[Measured]:
        d = json.loads((out / "out.json").read_text())
        res = []
        for i, ttft in enumerate(d["ttfts"]):
            if d["errors"][i]:
                continue
            itls = _ms_list(x * 1000 for x in d["itls"][i])
            n = int(d["output_lens"][i])
            lat = d["latencies"][i]
            res.append(
                Measured(
                    id=None,
                    ttft_ms=ttft * 1000,
                    gaps_ms=itls,
                    mean_itl_ms=(lat - ttft) * 1000 / (n - 1) if n > 1 else None,
                    tokens=n,
                )
            )
        return res


# ------------------------------------------------------------------------------------------------
# Running one tool: sub-reaper, /proc sampler, the server's log
# ------------------------------------------------------------------------------------------------


def session_cpu_s(sid: int) -> float:
    """User + system CPU-s of the live processes of session ``sid`` (``/proc/<pid>/stat``)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        f = stat.rsplit(")", 1)[1].split()
        if int(f[3]) == sid:
            total += int(f[11]) + int(f[12])
    return total * TICK_S


class Sampler(threading.Thread):
    """Samples a session's CPU every ``period_s`` until stopped."""

    def __init__(self, sid: int, period_s: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.sid, self.period_s = sid, period_s
        self.samples: list[tuple[int, float]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append((time.monotonic_ns(), session_cpu_s(self.sid)))
            self.done.wait(self.period_s)


def http_json(url: str, data: bytes | None = None) -> Any:
    with urllib.request.urlopen(url, data=data, timeout=30) as resp:
        return json.loads(resp.read())


def run_tool(
    tool: Tool, target: Target, load: Load, work: Path, *, pin: bool, tag: str = ""
) -> RunResult:
    out = work / f"{target.kind}-{tool.name}-{load.label}{tag}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    if target.kind == "scripted":
        http_json(target.url + "/_reset", b"")
    cmd = [sys.executable, str(PEERS_DIR / "reap.py"), str(out / "reap.json"), "--"]
    if pin:
        cmd += ["taskset", "-c", str(TOOL_CPU)]
    cmd += tool.command(target, load, out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(tool.env())
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with (out / "tool.log").open("w") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=out
        )
        sampler = Sampler(proc.pid)
        sampler.start()
        try:
            proc.wait(timeout=TOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        sampler.done.set()
        sampler.join()
    wall = time.perf_counter() - t0
    reap = json.loads((out / "reap.json").read_text()) if (out / "reap.json").exists() else {}
    res = RunResult(
        tool=tool.name,
        target=target.kind,
        load=load,
        out_dir=out,
        rc=int(reap.get("rc", -1)),
        wall_s=wall,
        cpu_total_s=float(reap.get("cpu_s", float("nan"))),
        maxrss_kb=int(reap.get("maxrss_kb", 0)),
        spawn_ns=int(reap.get("spawn_mono_ns", 0)),
        samples=sampler.samples,
        loadavg=(load0, os.getloadavg()[0]),
    )
    try:
        res.measured = tool.parse(out, target)
    except (OSError, ValueError, KeyError, IndexError, TypeError, OtelbenchError) as exc:
        res.parse_error = f"{type(exc).__name__}: {exc}"
    if target.kind == "scripted":
        entries = sorted(http_json(target.url + "/_log"), key=lambda e: e["t_recv_ns"])
        (out / "server_log.json").write_text(json.dumps(entries))
        res.truth = [t for e in entries if (t := Truth.from_entry(e)) is not None]
    status = (
        "ok" if res.rc == 0 and not res.parse_error else f"FAILED rc={res.rc} {res.parse_error}"
    )
    print(
        f"  {tool.name:<9} {target.kind:<8} {load.label:<6} n={load.n:<4} "
        f"{len(res.measured)} parsed, wall {wall:.1f} s, CPU {res.cpu_total_s:.2f} s, "
        f"load {load0:.2f}: {status}",
        flush=True,
    )
    return res


# ------------------------------------------------------------------------------------------------
# Errors against the truth (pure functions)
# ------------------------------------------------------------------------------------------------


def q(values: list[float], p: float) -> float:
    return float(np.quantile(np.asarray(values, dtype=np.float64), p)) if values else float("nan")


def _pair(abs_err: list[float]) -> dict[str, float]:
    return {"p50": round(q(abs_err, 0.5), 3), "p99": round(q(abs_err, 0.99), 3)}


def _dist(tool: list[float], truth: list[float]) -> dict[str, float]:
    return {
        "p50": round(abs(q(tool, 0.5) - q(truth, 0.5)), 3),
        "p99": round(abs(q(tool, 0.99) - q(truth, 0.99)), 3),
    }


def errors(
    measured: list[Measured], truth: list[Truth], skip_setup: int = 0, cold: int = 0
) -> dict[str, Any]:
    """TTFT, per-chunk ITL and per-request mean ITL absolute errors, ms (P50 and P99).

    Per request when every measured request names a response id the server logged; otherwise
    per distribution: |P50(tool) − P50(truth)| and |P99(tool) − P99(truth)|. The truth's TTFT
    starts when the server has read the request, so a client's connection set-up counts as its
    error; per request, ``ttft_err_ms_warm`` leaves out the first ``cold`` requests the server
    received (a closed loop of C streams opens C connections with its first C requests).
    """
    truth = truth[skip_setup:]
    by_id = {t.id: t for t in truth}
    per_request = bool(measured) and all(m.id in by_id for m in measured)
    out: dict[str, Any] = {"method": "per request" if per_request else "distribution"}
    m_ttft = [m.ttft_ms for m in measured if m.ttft_ms is not None]
    t_ttft = [t.ttft_ms for t in truth]
    gaps_known = any(m.gaps_ms for m in measured)
    m_gaps = [g for m in measured for g in m.gaps_ms or []]
    t_gaps = [g for t in truth for g in t.gaps_ms]
    m_mean = [m.mean_itl_ms for m in measured if m.mean_itl_ms is not None]
    t_mean = [t.mean_itl_ms for t in truth if t.mean_itl_ms is not None]
    if per_request:
        pairs = [(m, by_id[m.id]) for m in measured if m.id is not None]
        out["ttft_err_ms"] = _pair([abs(m.ttft_ms - t.ttft_ms) for m, t in pairs if m.ttft_ms])
        if cold:
            warm = sorted(pairs, key=lambda p: p[1].t_recv_ns)[cold:]
            out["ttft_err_ms_warm"] = _pair(
                [abs(m.ttft_ms - t.ttft_ms) for m, t in warm if m.ttft_ms]
            )
        if gaps_known and all(len(m.gaps_ms or []) == len(t.gaps_ms) for m, t in pairs):
            out["itl_err_ms"] = _pair(
                [
                    abs(a - b)
                    for m, t in pairs
                    for a, b in zip(m.gaps_ms or [], t.gaps_ms, strict=True)
                ]
            )
        elif gaps_known:
            out["itl_err_ms"] = _dist(m_gaps, t_gaps)
            out["itl_method"] = "distribution (chunk counts differ)"
        out["mean_itl_err_ms"] = _pair(
            [
                abs(m.mean_itl_ms - t.mean_itl_ms)
                for m, t in pairs
                if m.mean_itl_ms and t.mean_itl_ms
            ]
        )
    else:
        out["ttft_err_ms"] = _dist(m_ttft, t_ttft)
        if gaps_known:
            out["itl_err_ms"] = _dist(m_gaps, t_gaps)
        out["mean_itl_err_ms"] = _dist(m_mean, t_mean)
    out["reported_ms"] = {
        "ttft_p50": round(q(m_ttft, 0.5), 3),
        "itl_p50": round(q(m_gaps, 0.5), 3) if gaps_known else None,
        "itl_p99": round(q(m_gaps, 0.99), 3) if gaps_known else None,
        "mean_itl_p50": round(q(m_mean, 0.5), 3),
    }
    out["truth_ms"] = {
        "ttft_p50": round(q(t_ttft, 0.5), 3),
        "itl_p50": round(q(t_gaps, 0.5), 3),
        "itl_p99": round(q(t_gaps, 0.99), 3),
        "mean_itl_p50": round(q(t_mean, 0.5), 3),
    }
    out["requests"] = {"measured": len(measured), "served": len(truth)}
    out["chunk_gaps"] = {"reported": len(m_gaps), "sent": len(t_gaps)}
    return out


def load_window(r: RunResult, skip_setup: int) -> dict[str, Any]:
    """Rate, chunks/s, schedule lag (server side) and CPU of the load phase of one run."""
    truth = r.truth[skip_setup:]
    if len(truth) < 2:
        return {}
    first, last = truth[0].t_recv_ns, max(t.t_end_ns for t in truth)
    recv = np.array([t.t_recv_ns for t in truth], dtype=np.float64)
    span_s = (recv[-1] - recv[0]) / 1e9
    res: dict[str, Any] = {
        "achieved_rps": round((len(truth) - 1) / span_s, 1) if span_s > 0 else None,
        "chunks_per_s": round(sum(t.chunks for t in truth) / ((last - first) / 1e9), 1),
        "tokens_per_s": round(sum(t.tokens for t in truth) / ((last - first) / 1e9)),
    }
    if r.load.rate:
        lag = (recv - recv[0]) / 1e6 - np.arange(len(recv)) * 1000 / r.load.rate
        lag -= lag.min()
        res["lag_ms"] = {"p50": round(q(list(lag), 0.5), 3), "p99": round(q(list(lag), 0.99), 3)}
    res.update(cpu_cost(r, first, last, sum(t.tokens for t in truth), len(truth)))
    return res


def cpu_cost(r: RunResult, first_ns: int, last_ns: int, tokens: int, n: int) -> dict[str, Any]:
    load_cpu = r.cpu_at(last_ns) - r.cpu_at(first_ns)
    return {
        "load_cpu_s": round(load_cpu, 3),
        "load_cpu_util": round(load_cpu / max((last_ns - first_ns) / 1e9, 1e-9), 3),
        "cpu_s_per_request": round(load_cpu / max(n, 1), 5),
        "cpu_s_per_1k_tokens": round(load_cpu / max(tokens, 1) * 1000, 4),
        "total_cpu_s": round(r.cpu_total_s, 2),
        "total_cpu_s_per_1k_tokens": round(r.cpu_total_s / max(tokens, 1) * 1000, 3),
    }


# ------------------------------------------------------------------------------------------------
# The questions
# ------------------------------------------------------------------------------------------------


def fidelity(
    tools: list[Tool],
    target: Target,
    work: Path,
    quick: bool,
    levels: list[tuple[int, int]] | None = None,
) -> dict[str, Any]:
    if levels is None:
        levels = [(1, 8), (8, 32)] if quick else [(1, 16), (8, 48), (64, 128)]
    out: dict[str, Any] = {}
    for conc, n in levels:
        for tool in tools:
            r = run_tool(tool, target, Load(n=n, concurrency=conc), work, pin=True)
            e = errors(r.measured, r.truth, tool.setup_requests, cold=conc) if r.measured else {}
            e.update(load_window(r, tool.setup_requests))
            e["ok"] = r.rc == 0 and r.parse_error is None
            e["loadavg_1m"] = [round(x, 2) for x in r.loadavg]
            out.setdefault(tool.name, {})[f"c{conc}"] = e
    return out


def capacity(
    tools: list[Tool], target: Target, work: Path, quick: bool, rates: list[float] | None = None
) -> dict[str, Any]:
    if rates is None:
        rates = [100.0, 400.0] if quick else [50.0, 100.0, 200.0, 400.0, 800.0, 1600.0]
    seconds = 2.0 if quick else 3.0
    out: dict[str, Any] = {}
    for tool in tools:
        levels, best = [], None
        for rate in rates:
            r = run_tool(
                tool, target, Load(n=max(30, int(rate * seconds)), rate=rate), work, pin=True
            )
            e = errors(r.measured, r.truth, tool.setup_requests) if r.measured else {}
            e.update(load_window(r, tool.setup_requests))
            e["rate"] = rate
            e["loadavg_1m"] = [round(x, 2) for x in r.loadavg]
            e["holds"] = holds(e, rate, r)
            levels.append(e)
            if e["holds"]:
                best = e
            if r.rc != 0 or (e.get("achieved_rps") or 0) < 0.8 * rate:
                break  # the tool cannot send this fast: higher rates only take longer
        out[tool.name] = {"levels": levels, "highest": best}
    return out


def saturation(
    tools: list[Tool],
    target: Target,
    work: Path,
    quick: bool,
    levels: list[int] | None = None,
) -> dict[str, Any]:
    """Closed loop at each concurrency: tokens/s at the server, CPU per 1k tokens, timing errors.

    Each level sends max(200, 4 × C) requests, so every connection carries at least 4 and its
    set-up is a quarter of its life at most; tokens/s (``load_window``) runs from the first
    request the server read to the last one it finished. The tools run one after the other at
    each level (interleaved, so a change in the machine's load hits every tool alike)."""
    if levels is None:
        levels = [64, 128] if quick else [16, 64, 128, 256]
    out: dict[str, Any] = {}
    for conc in levels:
        for tool in tools:
            r = run_tool(tool, target, Load(n=max(200, 4 * conc), concurrency=conc), work, pin=True)
            e = errors(r.measured, r.truth, tool.setup_requests, cold=conc) if r.measured else {}
            e.update(load_window(r, tool.setup_requests))
            e["concurrency"] = conc
            e["ok"] = r.rc == 0 and r.parse_error is None
            e["loadavg_1m"] = [round(x, 2) for x in r.loadavg]
            out.setdefault(tool.name, {"levels": []})["levels"].append(e)
    for res in out.values():
        ok = [e for e in res["levels"] if e.get("ok") and e.get("tokens_per_s")]
        res["peak"] = max(ok, key=lambda e: e["tokens_per_s"]) if ok else None
    return out


def holds(e: dict[str, Any], rate: float, r: RunResult) -> bool:
    """Sustained (≥ 95 % of the rate reached the server, every request reported) with TTFT and
    ITL P50 errors under 1 ms (the per-request mean ITL where the tool keeps no chunk gaps)."""
    if r.rc != 0 or not e or e.get("achieved_rps") is None:
        return False
    served = e["requests"]["served"]
    itl = e.get("itl_err_ms") or e.get("mean_itl_err_ms") or {}
    return bool(
        e["achieved_rps"] >= 0.95 * rate
        and e["requests"]["measured"] >= served
        and e["ttft_err_ms"]["p50"] < RESOLUTION_MS
        and itl.get("p50", float("inf")) < RESOLUTION_MS
    )


def idle(tools: list[Tool], target: Target, work: Path) -> dict[str, Any]:
    """Start-up time and CPU, and CPU while waiting 4 s for a first token (busy-spinning?)."""
    idle_target = Target(target.url, "idle", target.max_tokens, target.kind)
    out: dict[str, Any] = {}
    for tool in tools:
        # Two requests, one at a time: the second waits in the tool while the first stalls.
        r = run_tool(tool, idle_target, Load(n=2, concurrency=1), work, pin=True)
        if not r.truth:
            out[tool.name] = {"error": "no request reached the server"}
            continue
        t_first = r.truth[0].t_recv_ns
        a, b = t_first + 500_000_000, t_first + 3_500_000_000
        out[tool.name] = {
            "startup_s": round((t_first - r.spawn_ns) / 1e9, 3),
            "startup_cpu_s": round(r.cpu_at(t_first), 3),
            "idle_cpu_s_per_s": round((r.cpu_at(b) - r.cpu_at(a)) / 3.0, 3),
            "total_cpu_s": round(r.cpu_total_s, 2),
            "wall_s": round(r.wall_s, 2),
            "maxrss_mb": round(r.maxrss_kb / 1024),
            "loadavg_1m": [round(x, 2) for x in r.loadavg],
        }
    return out


def on_vllm(tools: list[Tool], work: Path, quick: bool) -> dict[str, Any]:
    """One vLLM launch (engine hooks exporting to an otelbench collector) for every tool."""
    port = free_port("127.0.0.1")
    store = work / "vllm-spans.duckdb"
    store.unlink(missing_ok=True)
    collector = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/otelbench"),
            "collector",
            "--store",
            str(store),
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=(work / "collector.log").open("w"),
        start_new_session=True,
    )
    otlp = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {}
    # Instant when the venv is ready; waits (flock) while someone else is (re)building it.
    subprocess.run(["bash", str(ROOT / "scripts/vllm/setup.sh")], check=True, capture_output=True)
    load = Load(n=12 if quick else 32, concurrency=4)
    try:
        server = VllmCpuServer(hooks=True, otlp_traces_endpoint=otlp, max_model_len=512)
        # A loaded machine (other jobs on the 2 cores) can take several minutes to start it.
        with server.start(timeout=900):
            print(f"  vLLM ready in {server.startup_seconds:.0f} s", flush=True)
            target = Target(server.base_url, "tiny", 64, "vllm", otlp=otlp, store=store)
            # Warm the engine so the first tool does not pay for the server's cold start.
            warm = Load(n=16, concurrency=4)
            subprocess.run(TOOLS["raw"].command(target, warm, work), check=True, cwd=work)
            for tool in tools:
                r = run_tool(tool, target, load, work, pin=False)
                m = r.measured
                gaps = [g for x in m for g in x.gaps_ms or []]
                res: dict[str, Any] = {
                    "ok": r.rc == 0 and r.parse_error is None,
                    "requests": len(m),
                    "ttft_ms": {"p50": round(q([x.ttft_ms for x in m if x.ttft_ms], 0.5), 2)},
                    "itl_ms": {"p50": round(q(gaps, 0.5), 3), "p99": round(q(gaps, 0.99), 3)}
                    if gaps
                    else None,
                    "mean_itl_ms_p50": round(
                        q([x.mean_itl_ms for x in m if x.mean_itl_ms], 0.5), 3
                    ),
                    "output_tokens": sum(x.tokens for x in m),
                    "total_cpu_s": round(r.cpu_total_s, 2),
                    "wall_s": round(r.wall_s, 1),
                    "loadavg_1m": [round(x, 2) for x in r.loadavg],
                    "output_files": sorted(
                        str(p.relative_to(r.out_dir)) for p in r.out_dir.rglob("*") if p.is_file()
                    )[:20],
                }
                report = r.out_dir / "run" / "report.json"
                if report.exists():
                    metrics = json.loads(report.read_text())["metrics"]
                    res["report_metrics"] = {k: sorted(v) for k, v in metrics.items()}
                out[tool.name] = res
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(collector.pid, signal.SIGINT)
        try:
            collector.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(collector.pid, signal.SIGKILL)
            collector.wait()
    out["server_spans"] = server_span_features(store)
    return out


def server_span_features(store: Path) -> dict[str, Any]:
    """What the engine hooks put in the store during the vLLM runs (otelbench's runs only)."""
    import duckdb

    if not store.exists():
        return {"error": "no store"}
    with duckdb.connect(str(store), read_only=True) as con:
        names = dict(
            con.execute("SELECT SpanName, count(*) FROM otel_traces GROUP BY 1").fetchall()
        )
        row = con.execute(
            "SELECT count(*), "
            "count(*) FILTER "
            "(WHERE SpanAttributes['otelbench.server.token_offsets_us'] IS NOT NULL), "
            "count(*) FILTER (WHERE SpanAttributes['otelbench.server.preemptions'] IS NOT NULL), "
            "count(*) FILTER (WHERE ParentSpanId <> '') "
            "FROM otel_traces WHERE SpanName = 'otelbench.vllm.request'"
        ).fetchone()
    assert row is not None
    return {
        "span_counts": names,
        "server_request_spans": row[0],
        "with_per_token_offsets": row[1],
        "with_preemption_count": row[2],
        "joined_to_a_client_span": row[3],
    }


# ------------------------------------------------------------------------------------------------
# Tables and goals
# ------------------------------------------------------------------------------------------------


def _f(x: Any, nd: int = 2) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def table(title: str, header: list[str], rows: list[list[Any]]) -> str:
    lines = [f"\n### {title}\n", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_f(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def tables(res: dict[str, Any]) -> str:
    parts = []
    fid = res.get("fidelity", {})
    rows = []
    for tool, levels in fid.items():
        for lvl, e in levels.items():
            if not e.get("ttft_err_ms"):
                rows.append([tool, lvl, "failed", "", "", "", "", "", "", "", ""])
                continue
            itl = e.get("itl_err_ms") or {}
            mean = e.get("mean_itl_err_ms") or {}
            rep, tru = e["reported_ms"], e["truth_ms"]
            rows.append(
                [
                    tool,
                    lvl,
                    f"{rep['ttft_p50']:.2f} / {tru['ttft_p50']:.2f}",
                    e["ttft_err_ms"]["p50"],
                    e["ttft_err_ms"]["p99"],
                    itl.get("p50"),
                    itl.get("p99"),
                    mean.get("p50"),
                    (e.get("ttft_err_ms_warm") or {}).get("p50"),
                    e["method"],
                    e.get("loadavg_1m", [None])[0],
                ]
            )
    parts.append(
        table(
            "Timing fidelity vs the server's log (pitfalls schedule; ms)",
            [
                "tool",
                "C",
                "TTFT p50 tool / truth",
                "TTFT err p50",
                "TTFT err p99",
                "ITL err p50",
                "ITL err p99",
                "mean-ITL err p50",
                "TTFT err p50, reused connections",
                "method",
                "load 1m",
            ],
            rows,
        )
    )
    rows = []
    for tool, c in res.get("capacity", {}).items():
        h = c.get("highest") or {}
        last = c["levels"][-1] if c["levels"] else {}
        rows.append(
            [
                tool,
                h.get("rate"),
                h.get("achieved_rps"),
                h.get("chunks_per_s"),
                (h.get("ttft_err_ms") or {}).get("p50"),
                (h.get("lag_ms") or {}).get("p99"),
                h.get("load_cpu_util"),
                f"{last.get('rate')}: {last.get('achieved_rps')} req/s, TTFT err "
                f"{(last.get('ttft_err_ms') or {}).get('p50')}"
                if last and not last.get("holds")
                else "–",
                h.get("loadavg_1m", [None])[0],
            ]
        )
    parts.append(
        table(
            "Generator capacity on one core (fast schedule, open loop, constant rate)",
            [
                "tool",
                "highest rate held",
                "req/s at server",
                "chunks/s",
                "TTFT err p50 ms",
                "lag p99 ms",
                "tool CPU (cores)",
                "first level missed",
                "load 1m",
            ],
            rows,
        )
    )
    rows = []
    for tool, sres in res.get("saturation", {}).items():
        for e in sres["levels"]:
            rows.append(
                [
                    tool,
                    e["concurrency"],
                    e.get("tokens_per_s"),
                    e.get("load_cpu_util"),
                    _f(e.get("cpu_s_per_1k_tokens"), 4),
                    (e.get("ttft_err_ms_warm") or e.get("ttft_err_ms") or {}).get("p50"),
                    (e.get("itl_err_ms") or {}).get("p50"),
                    "peak"
                    if e["concurrency"] == (sres.get("peak") or {}).get("concurrency")
                    else "",
                    e.get("loadavg_1m", [None])[0],
                ]
            )
    parts.append(
        table(
            "Saturation (long schedule, closed loop; tool on CPU 1, server on CPU 0)",
            [
                "tool",
                "C",
                "tokens/s at server",
                "tool CPU (cores)",
                "CPU-s / 1k tokens",
                "TTFT err p50 ms (reused conns)",
                "ITL err p50 ms",
                "",
                "load 1m",
            ],
            rows,
        )
    )
    rows = []
    cap, idl = res.get("capacity", {}), res.get("idle", {})
    for tool in sorted(set(cap) | set(idl)):
        lv = {lvl["rate"]: lvl for lvl in cap.get(tool, {}).get("levels", [])}
        at = lv.get(100.0) or {}
        i = idl.get(tool, {})
        rows.append(
            [
                tool,
                at.get("cpu_s_per_request"),
                at.get("cpu_s_per_1k_tokens"),
                at.get("total_cpu_s"),
                i.get("startup_s"),
                i.get("startup_cpu_s"),
                i.get("idle_cpu_s_per_s"),
                i.get("maxrss_mb"),
            ]
        )
    parts.append(
        table(
            "Client cost at 100 req/s (load phase, all processes), start-up and idle CPU",
            [
                "tool",
                "CPU-s / request",
                "CPU-s / 1k tokens",
                "run total CPU-s",
                "start-up s",
                "start-up CPU-s",
                "idle CPU-s/s",
                "max RSS MB",
            ],
            rows,
        )
    )
    vl = res.get("vllm", {})
    rows = []
    for tool, v in vl.items():
        if tool == "server_spans":
            continue
        rows.append(
            [
                tool,
                v.get("requests"),
                (v.get("ttft_ms") or {}).get("p50"),
                (v.get("itl_ms") or {}).get("p50"),
                v.get("mean_itl_ms_p50"),
                v.get("total_cpu_s"),
                TOOLS[tool].contains if tool in TOOLS else "",
            ]
        )
    if rows:
        parts.append(
            table(
                "Real vLLM on CPU (tiny model, C=4, 64 output tokens): what each tool reports",
                [
                    "tool",
                    "requests",
                    "TTFT p50 ms",
                    "ITL p50 ms",
                    "mean ITL p50 ms",
                    "total CPU-s",
                    "per-request output",
                ],
                rows,
            )
        )
        parts.append(f"\nserver spans in otelbench's store: {json.dumps(vl.get('server_spans'))}")
    feats = res.get("features") or {}
    if feats:
        keys = [k for k in next(iter(feats.values())) if k != "output"]
        parts.append(
            table(
                "Features, read off this run (– = not measured here)",
                ["tool", *keys],
                [
                    [t, *("yes" if f[k] else "–" if f[k] is None else "no" for k in keys)]
                    for t, f in feats.items()
                ],
            )
        )
    if res.get("goals"):
        parts.append(
            table(
                "otelbench against its goals",
                ["goal", "measured", "met"],
                [
                    [g["goal"], g["measured"], {True: "yes", False: "no"}.get(g["met"], "not run")]
                    for g in res["goals"]
                ],
            )
        )
    return "\n".join(parts)


def features(res: dict[str, Any], tools: list[Tool]) -> dict[str, dict[str, Any]]:
    """The feature table, read off this run's results (None: not measured in this run)."""
    fid, vl = res.get("fidelity", {}), res.get("vllm", {})
    spans = vl.get("server_spans") or {}
    out = {}
    for tool in tools:
        c1 = fid.get(tool.name, {}).get("c1") or {}
        on_vllm = vl.get(tool.name) or {}
        is_ob = tool.name == "otelbench"
        out[tool.name] = {
            "ttft_is_first_content_token": c1["ttft_err_ms"]["p50"] < 10.0
            if c1.get("ttft_err_ms")
            else None,
            "per_chunk_times": tool.per_chunk,
            # A parser that loses events after an SSE comment reports far fewer chunk gaps.
            "per_chunk_times_survive_sse_comments": c1["chunk_gaps"]["reported"]
            >= 0.9 * c1["chunk_gaps"]["sent"]
            if tool.per_chunk and c1.get("chunk_gaps")
            else None,
            "per_request_response_id": c1.get("method") == "per request" if c1 else None,
            "server_queue_prefill_decode": bool(
                spans.get("span_counts", {}).get("otelbench.vllm.prefill")
            )
            and is_ob
            if on_vllm
            else None,
            "server_per_token_timing": bool(spans.get("with_per_token_offsets")) and is_ob
            if on_vllm
            else None,
            "server_preemptions": bool(spans.get("with_preemption_count")) and is_ob
            if on_vllm
            else None,
            "fluidity": "fluidity" in (on_vllm.get("report_metrics") or {}) if on_vllm else None,
            "output": tool.contains,
        }
    return out


def goals(res: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    fid = res.get("fidelity", {})
    ob, raw = fid.get("otelbench", {}), fid.get("raw", {})
    if ob and raw:
        diffs = {
            lvl: round(e["ttft_err_ms"]["p50"] - raw[lvl]["ttft_err_ms"]["p50"], 3)
            for lvl, e in ob.items()
            if lvl in raw and e.get("ttft_err_ms") and raw[lvl].get("ttft_err_ms")
        }
        warm = {
            lvl: round(e["ttft_err_ms_warm"]["p50"] - raw[lvl]["ttft_err_ms_warm"]["p50"], 3)
            for lvl, e in ob.items()
            if lvl in raw and e.get("ttft_err_ms_warm") and raw[lvl].get("ttft_err_ms_warm")
        }
        out.append(
            {
                "goal": "TTFT within 0.5 ms of the raw-socket reference up to C=64 (P50 error "
                "vs the server's log, otelbench minus raw)",
                "measured": ", ".join(f"{k}: {v} ms" for k, v in diffs.items())
                + " (reused connections only: "
                + ", ".join(f"{k}: {v} ms" for k, v in warm.items())
                + ")",
                "met": all(v <= 0.5 for v in diffs.values()) if "c64" in diffs else None,
            }
        )
    sat = res.get("saturation", {})
    top = (sat.get("otelbench") or {}).get("peak")
    if top:
        out.append(
            {
                "goal": "≤ 0.03 CPU-s per 1k output tokens with spans on (load phase, at the "
                "saturation peak)",
                "measured": f"{top['cpu_s_per_1k_tokens']} at C={top['concurrency']} "
                f"({top['tokens_per_s']} tokens/s)",
                "met": top["cpu_s_per_1k_tokens"] <= 0.03,
            }
        )
    idl = res.get("idle", {}).get("otelbench", {})
    if "startup_s" in idl:
        out.append(
            {
                "goal": "start-up (otelbench run started → first request at the server) < 1 s",
                "measured": f"{idl['startup_s']} s",
                "met": idl["startup_s"] < 1.0,
            }
        )
        out.append(
            {
                "goal": "no busy-spinning (CPU while waiting for a token)",
                "measured": f"{idl['idle_cpu_s_per_s']} CPU-s/s",
                "met": idl["idle_cpu_s_per_s"] < 0.05,
            }
        )
    cap = res.get("capacity", {})
    if "otelbench" in cap and "raw" in cap:
        a = (cap["otelbench"].get("highest") or {}).get("rate") or 0
        b = (cap["raw"].get("highest") or {}).get("rate") or 0
        out.append(
            {
                "goal": "the client is not the bottleneck before the server (highest rate held "
                "vs the raw reference's, same server)",
                "measured": f"otelbench {a:g} req/s, raw {b:g} req/s",
                "met": a >= b,
            }
        )
    ob, raw = (sat.get(t, {}).get("peak") or {} for t in ("otelbench", "raw"))
    if ob and raw:
        out.append(
            {
                "goal": "the client is not the bottleneck before the server (closed-loop "
                "saturation peak, tokens/s at the server, vs the raw reference's; within 5 %)",
                "measured": f"otelbench {ob['tokens_per_s']} at C={ob['concurrency']}, raw "
                f"{raw['tokens_per_s']} at C={raw['concurrency']}",
                "met": ob["tokens_per_s"] >= 0.95 * raw["tokens_per_s"],
            }
        )
    return out


# ------------------------------------------------------------------------------------------------


def start_truth_server(work: Path) -> ScriptedServer:
    cmd = [
        sys.executable,
        str(PEERS_DIR / "truth_server.py"),
        "--port",
        "0",
        "--cpu",
        str(SERVER_CPU),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("LISTENING"):
        proc.kill()
        raise SystemExit(f"peers: the truth server did not start: {line!r}")
    srv = ScriptedServer()
    srv.proc, srv.port = proc, int(line.split()[2])
    return srv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="fewer levels and requests")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated: {','.join(TOOLS)}")
    ap.add_argument("--questions", default="fidelity,capacity,saturation,idle,vllm")
    ap.add_argument("--no-vllm", action="store_true", help="skip the real vLLM runs")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "peers.json"))
    ap.add_argument("--keep", action="store_true", help="keep the tools' raw outputs")
    ap.add_argument(
        "--levels",
        metavar="C:N,...",
        help="fidelity: concurrency:requests levels instead of the default ones (e.g. 64:128)",
    )
    ap.add_argument(
        "--rates", metavar="R,...", help="capacity: request rates instead of the default ones"
    )
    ap.add_argument(
        "--saturation",
        metavar="C,...",
        help="saturation: closed-loop concurrency levels instead of the default ones",
    )
    ap.add_argument(
        "--retable",
        metavar="FILE.json",
        help="run nothing: recompute the features, goals and tables of a results file in place",
    )
    args = ap.parse_args()
    if args.retable:
        retable(Path(args.retable))
        return
    names = [t for t in args.tools.split(",") if t]
    unknown = [t for t in names if t not in TOOLS]
    if unknown:
        raise SystemExit(f"peers: unknown tool(s) {unknown}; choose from {list(TOOLS)}")
    tools, skipped = [], {}
    for name in names:
        why = TOOLS[name].available()
        if why:
            skipped[name] = why
            print(f"peers: skipping {name}: {why}", flush=True)
        else:
            tools.append(TOOLS[name])
    questions = set(args.questions.split(","))
    levels = (
        [(int(c), int(n)) for c, n in (x.split(":") for x in args.levels.split(","))]
        if args.levels
        else None
    )
    rates = [float(r) for r in args.rates.split(",")] if args.rates else None
    sat_levels = [int(c) for c in args.saturation.split(",")] if args.saturation else None
    if args.no_vllm:
        questions.discard("vllm")
    work = Path(tempfile.mkdtemp(prefix="otelbench-peers-"))
    meta = {
        "when_unix": int(time.time()),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "quick": args.quick,
        "tools": [t.name for t in tools],
        "skipped": skipped,
        "server_cpu": SERVER_CPU,
        "tool_cpu": TOOL_CPU,
        "loadavg_start": os.getloadavg(),
        "raw_outputs": str(work),
        "note": "shared 2-core VM; other jobs ran on the same cores (see each row's loadavg)",
    }
    res: dict[str, Any] = {}
    steps: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    srv = start_truth_server(work)
    try:
        target = Target(srv.url, "pitfalls", 64, "scripted")
        fast = Target(srv.url, "fast", 64, "scripted")
        long = Target(srv.url, "long", 256, "scripted")
        steps = [
            ("fidelity", lambda: fidelity(tools, target, work, args.quick, levels)),
            ("capacity", lambda: capacity(tools, fast, work, args.quick, rates)),
            ("saturation", lambda: saturation(tools, long, work, args.quick, sat_levels)),
            ("idle", lambda: idle(tools, fast, work)),
        ]
        for name, fn in steps:
            if name in questions:
                print(f"peers: {name}", flush=True)
                res[name] = fn()
    finally:
        srv.stop()
    if "vllm" in questions:
        print("peers: vllm", flush=True)
        res["vllm"] = on_vllm(tools, work, args.quick)
    res["goals"] = goals(res)
    res["features"] = features(res, tools)
    meta["loadavg_end"] = os.getloadavg()
    text = tables(res)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, **res}, indent=2, default=_json) + "\n")
    print(f"load average at start / end: {meta['loadavg_start']} / {meta['loadavg_end']}")
    print(f"wrote {out}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


def retable(path: Path) -> None:
    """Recompute the derived parts (features, goals) of a results file and print its tables."""
    doc = json.loads(path.read_text())
    tools = [TOOLS[name] for name in doc["meta"]["tools"]]
    doc["goals"] = goals(doc)
    doc["features"] = features(doc, tools)
    print(tables(doc))
    path.write_text(json.dumps(doc, indent=2) + "\n")


def _json(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "__dataclass_fields__"):
        return asdict(o)
    raise TypeError(type(o).__name__)


if __name__ == "__main__":
    main()
