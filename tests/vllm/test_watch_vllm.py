"""``otelbench watch`` beside a real vLLM with the engine hooks: live requests and a probe stream.

The session's shared ``vllm_server`` (hooks on), its hooks exporting to an embedded receiver of
this test's own, on the port the session's receiver lends it (``otlp_receiver.lent()``), which
the watcher reads in the same process (as ``otelbench watch --otlp`` runs). Live traffic is plain
HTTP without ``traceparent`` (root server spans); the probe is
:func:`otelbench.live.probe.run_probe` with the tag processor. The watcher's ``/metrics`` must show
both sources, each with its own request count and plausible values.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from otelbench import semconv
from otelbench.collector import Receiver
from otelbench.live.probe import ProbeConfig, ProbeTagger, run_probe
from otelbench.live.watch import WatchConfig, Watcher
from otelbench.live.window import WindowConfig
from otelbench.sut import VllmCpuServer
from otelbench.telemetry import make_tracer_provider, shutdown

if TYPE_CHECKING:
    from tests.vllm.conftest import SpanSink

pytestmark = pytest.mark.vllm

LIVE_REQUESTS = 4
PROBE_REQUESTS = 4  # rate 4/s for 1 s
SAMPLE = re.compile(r"^([a-z_0-9]+)(?:\{(.*)\})? (\S+)$")


def parse(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, line
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        out[(match.group(1), labels)] = float(match.group(3))
    return out


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


async def live_traffic(base_url: str) -> None:
    body = {
        "model": "tiny",
        "prompt": list(range(40, 72)),
        "max_tokens": 16,
        "ignore_eos": True,
        "stream": True,
    }
    async with httpx.AsyncClient(base_url=base_url, timeout=120.0, trust_env=False) as client:

        async def one() -> None:
            async with client.stream("POST", "/v1/completions", json=body) as response:
                response.raise_for_status()
                async for _ in response.aiter_bytes():
                    pass

        await asyncio.gather(*(one() for _ in range(LIVE_REQUESTS)))


def test_watch_shows_live_and_probe_traffic_of_a_real_vllm(
    vllm_server: VllmCpuServer,
    otlp_receiver: SpanSink,
    tmp_path: Path,
    vllm_measurements: dict[str, Any],
) -> None:
    server = vllm_server
    with otlp_receiver.lent() as port, Receiver(tmp_path / "live.duckdb", port=port) as receiver:
        endpoint = f"http://127.0.0.1:{port}/v1/traces"
        # one short request first (live traffic too, as on a server just started)
        warm = {"model": "tiny", "prompt": [5, 6, 7, 8], "max_tokens": 4, "ignore_eos": True}
        httpx.post(f"{server.base_url}/v1/completions", json=warm, timeout=60).raise_for_status()
        window = WindowConfig(window_s=600.0, slo_ttft_s=5.0, slo_tpot_s=1.0)
        watcher = Watcher(receiver.store, WatchConfig(window=window, interval_s=0.5))
        with watcher.start("127.0.0.1", 0):
            provider = make_tracer_provider(endpoint, service_name=semconv.SERVICE_PROBE)
            provider.add_span_processor(ProbeTagger("canary"))
            probe = ProbeConfig(
                target=server.base_url,
                model="tiny",
                rate=4.0,
                stream="canary",
                segment_s=1.0,
                duration_s=1.0,
                workload_params={
                    "vocab_size": 1024,
                    "input_min": 16,
                    "input_max": 32,
                    "output_min": 8,
                    "output_max": 16,
                },
                ignore_eos=True,
            )

            async def both() -> Any:
                return await asyncio.gather(
                    live_traffic(server.base_url), run_probe(probe, tracer_provider=provider)
                )

            _, outcomes = asyncio.run(both())
            assert shutdown(provider)
            assert [len(o.results) for o in outcomes] == [PROBE_REQUESTS]
            assert all(r.ok for r in outcomes[0].results)
            deadline = time.monotonic() + 30
            while True:
                text = httpx.get(f"http://127.0.0.1:{watcher.port}/metrics").text
                s = parse(text)
                live_n = s.get((semconv.METRIC_LIVE_REQUESTS, frozenset({("source", "live")})))
                probe_n = s.get((semconv.METRIC_LIVE_REQUESTS, frozenset({("source", "probe")})))
                if (live_n, probe_n) == (LIVE_REQUESTS + 1, PROBE_REQUESTS):
                    break
                assert time.monotonic() < deadline, (live_n, probe_n, watcher.last_error)
                time.sleep(0.5)

    m = semconv
    for source in ("live", "probe"):
        assert value(s, m.METRIC_LIVE_ERRORS, source=source) == 0.0
        ttft = value(s, m.METRIC_LIVE_TTFT, source=source, quantile="0.5")
        itl = value(s, m.METRIC_LIVE_ITL, source=source, quantile="0.5")
        tpot = value(s, m.METRIC_LIVE_TPOT, source=source, quantile="0.5")
        assert 0 < ttft < 10, ttft
        assert 0 < itl < 2, itl
        assert 0 < tpot < 2, tpot
        assert value(s, m.METRIC_LIVE_QUEUE, source=source, quantile="0.5") >= 0
        prefill = value(s, m.METRIC_LIVE_PREFILL, source=source, quantile="0.5")
        assert 0 < prefill <= ttft
        fi = value(s, m.METRIC_LIVE_FLUIDITY, source=source, decode_deadline_seconds="0.1",
                   quantile="0.5")  # fmt: skip
        assert 0 <= fi <= 1
        assert value(s, m.METRIC_LIVE_FLUID_TOKEN_RATE, source=source) > 0
        assert value(s, m.METRIC_LIVE_PREEMPTED_RATIO, source=source) == 0.0
        for slo in ("ttft", "tpot", "all"):
            assert 0 <= value(s, m.METRIC_LIVE_SLO_ATTAINMENT, source=source, slo=slo) <= 1
        assert value(s, m.METRIC_LIVE_OUTPUT_TOKEN_RATE, source=source) > 0
    # live requests have no class attribute; the probe's come from its workload
    assert value(s, m.METRIC_LIVE_CLASS_REQUESTS, source="live", **{"class": "(none)"}) == 5.0
    probe_classes = [
        v
        for (name, labels), v in s.items()
        if name == m.METRIC_LIVE_CLASS_REQUESTS and ("source", "probe") in labels
    ]
    assert sum(probe_classes) == PROBE_REQUESTS
    # 4 live requests × 16 tokens + the warm-up's 4, over the 600 s window
    assert value(s, m.METRIC_LIVE_OUTPUT_TOKEN_RATE, source="live") == pytest.approx(68 / 600)
    vllm_measurements["watch: live TTFT p50 s"] = value(
        s, m.METRIC_LIVE_TTFT, source="live", quantile="0.5"
    )
    vllm_measurements["watch: probe TTFT p50 s"] = value(
        s, m.METRIC_LIVE_TTFT, source="probe", quantile="0.5"
    )
    vllm_measurements["watch: refresh s"] = value(s, m.METRIC_LIVE_REFRESH_DURATION)
