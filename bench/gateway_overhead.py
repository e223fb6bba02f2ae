"""What ``otelbench gateway`` adds to streamed latency, with and without guardrails (draft 5.10).

One run, side by side, against the scripted SSE server (tests/fixtures/scripted_server.py), which
logs when it really wrote every chunk (CLOCK_MONOTONIC, shared across processes):

* ``direct``  — the client talks to the scripted server;
* ``gateway`` — through the gateway with no filter (the Application Gateway hop alone);
* ``input``   — gateway + input filters (max_input_length, blocklist, PII);
* ``output``  — gateway + output filters (PII and a redacting blocklist, 32-character window);
* ``output_chunk`` — the same output filters per chunk (no window).

Every configuration gets the same requests, interleaved round-robin (request i goes to every
configuration before request i+1 goes to any), one at a time, so a disturbance on this shared
machine hits all of them alike. For each request the client's arrival time of every content chunk
is compared with the moment the server started writing it; *added latency* is a configuration's
delay minus the direct path's, at P50 and P99, for the first chunk (TTFT) and over all chunks.
The output-window configuration releases text late by design (the window's characters), which
shows in its all-chunk delay measured against the server's chunk in which the text was written:
it is reported but is not a transport cost.

Spans: the gateways run with no OTLP endpoint (non-recording spans), as does the client, so the
numbers are the proxy and filter work alone; the SDK's span cost is measured in hook_hot_path.

Usage: ``.venv/bin/python bench/gateway_overhead.py [--requests N] [--out FILE.json]`` (default
``bench/results/gateway_overhead.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from otelbench.client import AsyncLLMClient, CompletionRequest  # noqa: E402
from otelbench.guardrails.gateway import GatewayServer  # noqa: E402
from tests.fixtures.scripted_server import ScriptedServer, chunk_errors  # noqa: E402

INPUT_CONFIG = """
input:
  - type: max_input_length
    max_chars: 100000
  - type: blocklist
    keywords: [forbidden, banned-term, another-term]
    patterns: ['secret-\\d+']
  - type: pii
    action: block
"""
OUTPUT_CONFIG = """
output_window: {window}
output:
  - type: pii
  - type: blocklist
    action: redact
    patterns: ['w\\d+_7']
"""
PROMPT = "Please write a short story about a lighthouse keeper and the sea. " * 4
SCRIPT = {"n": 16, "ttft_ms": 8.0, "itl_ms": 6.0}


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


async def measure(urls: dict[str, str], server: ScriptedServer, n: int) -> dict[str, Any]:
    clients = {name: AsyncLLMClient(url) for name, url in urls.items()}
    ttft: dict[str, list[float]] = {name: [] for name in urls}
    chunks: dict[str, list[float]] = {name: [] for name in urls}
    failed: dict[str, int] = {name: 0 for name in urls}
    request = CompletionRequest(
        api="completions", model="tiny", prompt=PROMPT, extra_body={"script": SCRIPT}
    )
    try:
        for name in urls:  # warm up connections and code paths
            for _ in range(5):
                await clients[name].complete(request)
        gc.collect()
        gc.freeze()
        for i in range(n):
            for name in urls:
                r = await clients[name].complete(request)
                if not r.ok or not r.response_id:
                    failed[name] += 1
                    continue
                entry = server.entry(r.response_id)
                sent = [e for e in entry["events"] if e[0] == "content"]
                if len(sent) == len(r.chunk_offsets_us):
                    errs = chunk_errors(r.submit_mono_ns, r.chunk_offsets_us, entry)
                    chunks[name].extend(e / 1000 for e in errs.errors_ns)
                # the first content chunk, against the server's first (a window may hold the
                # first chunks' text back: then this includes the wait for later chunks)
                first_ns = r.submit_mono_ns + r.chunk_offsets_us[0] * 1000
                ttft[name].append((first_ns - sent[0][4]) / 1000)
            if i % 50 == 49:
                print(f"  {i + 1}/{n} rounds", flush=True)
    finally:
        for c in clients.values():
            await c.aclose()
    out: dict[str, Any] = {}
    base_ttft = ttft["direct"]
    base_chunks = chunks["direct"]
    for name in urls:
        row: dict[str, Any] = {
            "requests": len(ttft[name]),
            "failed": failed[name],
            "ttft_delay_p50_us": round(pct(ttft[name], 0.5), 1),
            "ttft_delay_p99_us": round(pct(ttft[name], 0.99), 1),
        }
        row["added_ttft_p50_us"] = round(row["ttft_delay_p50_us"] - pct(base_ttft, 0.5), 1)
        row["added_ttft_p99_us"] = round(row["ttft_delay_p99_us"] - pct(base_ttft, 0.99), 1)
        if chunks[name]:  # not for the window: its chunks no longer match the server's
            row["chunk_delay_p50_us"] = round(pct(chunks[name], 0.5), 1)
            row["chunk_delay_p99_us"] = round(pct(chunks[name], 0.99), 1)
            row["added_chunk_p50_us"] = round(row["chunk_delay_p50_us"] - pct(base_chunks, 0.5), 1)
            row["added_chunk_p99_us"] = round(row["chunk_delay_p99_us"] - pct(base_chunks, 0.99), 1)
        out[name] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--requests", type=int, default=300, help="requests per configuration")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gateway_overhead.json"))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gw-bench-"))
    (tmp / "input.yaml").write_text(INPUT_CONFIG)
    (tmp / "output.yaml").write_text(OUTPUT_CONFIG.format(window=32))
    (tmp / "output_chunk.yaml").write_text(OUTPUT_CONFIG.format(window=0))
    meta: dict[str, Any] = {
        "when_unix": int(time.time()),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "script": SCRIPT,
        "prompt_chars": len(PROMPT),
        "note": "shared 2-core VM; client, gateway and server are 3 processes on 2 cores",
    }
    with ScriptedServer() as server:
        gateways = {
            "gateway": GatewayServer(server.url),
            "input": GatewayServer(server.url, config=tmp / "input.yaml"),
            "output": GatewayServer(server.url, config=tmp / "output.yaml"),
            "output_chunk": GatewayServer(server.url, config=tmp / "output_chunk.yaml"),
        }
        try:
            for gw in gateways.values():
                gw.start()
            urls = {"direct": server.url} | {k: g.base_url for k, g in gateways.items()}
            results = asyncio.run(measure(urls, server, args.requests))
        finally:
            for gw in gateways.values():
                gw.stop()
    meta["loadavg_end"] = os.getloadavg()
    head = (
        f"{'configuration':<14} {'TTFT delay P50':>15} {'P99':>9} {'added P50':>10} "
        f"{'added P99':>10} {'chunk add P50':>14} {'P99':>9}"
    )
    print(head)
    print("-" * len(head))
    for name, r in results.items():
        chunk = (
            f"{r['added_chunk_p50_us']:>11.0f} µs {r['added_chunk_p99_us']:>6.0f} µs"
            if "added_chunk_p50_us" in r
            else f"{'(window)':>14} {'':>9}"
        )
        print(
            f"{name:<14} {r['ttft_delay_p50_us']:>12.0f} µs {r['ttft_delay_p99_us']:>6.0f} µs "
            f"{r['added_ttft_p50_us']:>7.0f} µs {r['added_ttft_p99_us']:>7.0f} µs {chunk}"
        )
    medians = {k: v["added_ttft_p50_us"] for k, v in results.items()}
    print(f"added TTFT at P50 (µs): {json.dumps(medians)}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
