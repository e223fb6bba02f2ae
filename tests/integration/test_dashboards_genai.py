"""Every PromQL query of the committed *Application clients (GenAI)* dashboard on a real
Prometheus (Debian's binary) scraping a real application: a process on the real ``openai`` SDK,
instrumented as the README says (``openai_http_client()`` with the global meter provider, whose
OpenTelemetry ``PrometheusMetricReader`` is served on ``/metrics`` at a free port), calling the
scripted SSE server. Prometheus is ``test_watch_prometheus.py``'s fixture (1 s scrapes), reused:
its ``watch_process`` dependency is overridden to hand it the application's port.

The calls come in two phases. Phase 1, one call of each kind, makes every series exist before
the window the queries are judged over; phase 2 (:data:`PHASE_2`) lies wholly inside that window,
``[t1 - W, t1]``, where ``t1`` is a wall-clock time (Prometheus's clock domain, Unix seconds)
after Prometheus has scraped phase 2's last call and ``t1 - W`` a time after it scraped phase 1's.
Queries are expanded as Grafana would (:mod:`otelbench.dashboards.macros`): ``$__rate_interval``
-> ``W`` s, ``$model`` / ``$server`` -> ``.*`` (the variables' "All"), then one with ``$model``
-> ``beta``. What the scripted schedule implies:

* a quantile of a histogram whose window observations all lie in one bucket lies in that bucket:
  time to first chunk (T_submit -> first SSE event, at least the scripted ``ttft_ms`` after the
  server received the request) in the bucket holding ``ttft_ms``, the chunk gaps in the one
  holding ``itl_ms`` (3 of a call's 4 gaps: the usage chunk follows the last content chunk at
  once, so P50 and P99 lie in the ``itl_ms`` bucket), the duration in the one holding
  ``ttft_ms + (n - 1) * itl_ms``; the scripts leave each value at least 30 ms from its bucket's
  bounds;
* ``rate(counter[W]) * W`` is the window's increase, scaled by Prometheus's extrapolation to the
  window's edges: between the increase and ``W / (W - 2.5)`` times it (1 s scrapes);
* series of one scrape share their sample times, so ratios of rates (errors per call, output per
  input tokens) are exact.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from otelbench.client.metrics import DURATION_BUCKETS_S
from otelbench.dashboards.macros import expand_promql
from tests.fixtures.scripted_server import ScriptedServer
from tests.integration import test_watch_prometheus as watch_prom
from tests.integration.test_dashboards_prometheus import promql_targets

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "dashboards" / "json" / "application-clients.json"
APP = "from tests.integration.test_dashboards_genai import serve_application; serve_application()"
ALL = {"model": ".*", "server": ".*"}

N = 4
PROMPT_TOKENS = 9
SCRIPTS = {
    "alpha": {"n": N, "ttft_ms": 200.0, "itl_ms": 110.0, "prompt_tokens": PROMPT_TOKENS},
    "beta": {"n": N, "ttft_ms": 110.0, "itl_ms": 110.0, "prompt_tokens": PROMPT_TOKENS},
}
"""Streamed chat calls: TTFC in (0.16, 0.32] s (alpha) and (0.08, 0.16] s (beta); chunk gaps in
(0.08, 0.16] s; durations 0.53 and 0.44 s, in (0.32, 0.64] s."""
ERRORS = {"500": {"status": 500}, "429": {"status": 429}}
"""Calls of model ``gamma`` the server answers with that HTTP status (the SDK retries none)."""

PHASE_1: list[dict[str, Any]] = [
    {"model": "alpha", "script": SCRIPTS["alpha"]},
    {"model": "beta", "script": SCRIPTS["beta"]},
    {"model": "gamma", "script": ERRORS["500"]},
    {"model": "gamma", "script": ERRORS["429"]},
]
PHASE_2: list[dict[str, Any]] = (
    [{"model": "alpha", "script": SCRIPTS["alpha"]}] * 3
    + [{"model": "beta", "script": SCRIPTS["beta"]}] * 3
    + [{"model": "gamma", "script": ERRORS["500"]}] * 2
    + [{"model": "gamma", "script": ERRORS["429"]}]
)


def serve_application() -> None:
    """The application (run as its own process): the global meter provider reads into
    OpenTelemetry's Prometheus exporter, served on ``/metrics`` at a free port it prints; each
    line of stdin is a JSON list of calls, made one after the other, then ``DONE`` is printed."""
    from opentelemetry import metrics
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource
    from prometheus_client import start_http_server

    from otelbench.client import openai_http_client

    reader = PrometheusMetricReader()
    resource = Resource.create({"service.name": "my-app"})
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader], resource=resource))
    server, _ = start_http_server(0, addr="127.0.0.1")
    client = openai.OpenAI(
        base_url=sys.argv[1] + "/v1",
        api_key="unused",
        max_retries=0,
        http_client=openai_http_client(),
    )
    print(f"METRICS {server.server_port}", flush=True)
    for line in sys.stdin:
        for call in json.loads(line):
            _call(client, call)
        print("DONE", flush=True)
    client.close()


def _call(client: openai.OpenAI, call: dict[str, Any]) -> None:
    messages: list[Any] = [{"role": "user", "content": "Hi"}]
    extra = {"script": call["script"]}
    if "status" in call["script"]:
        try:
            client.chat.completions.create(model=call["model"], messages=messages, extra_body=extra)
        except openai.APIStatusError as error:
            status = error.status_code
        else:
            raise AssertionError(f"no HTTP error from {call}")
        assert status == call["script"]["status"]
        return
    stream = client.chat.completions.create(
        model=call["model"],
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
        extra_body=extra,
    )
    assert len([c for c in stream if c.choices and c.choices[0].delta.content]) == N


class Application:
    """The application process: its ``/metrics`` port, and calls made on request."""

    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.port = port

    def calls(self, calls: list[dict[str, Any]]) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(calls) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line == "DONE\n", line


@pytest.fixture
def application(scripted_server: ScriptedServer) -> Iterator[Application]:
    proc = subprocess.Popen(
        [sys.executable, "-u", "-c", APP, scripted_server.url],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.fullmatch(r"METRICS (\d+)\n", line)
        assert match, f"the application did not start: {line!r}"
        yield Application(proc, int(match.group(1)))
    finally:
        _, err = proc.communicate(timeout=30)  # closes stdin: the application returns
        assert proc.returncode == 0, err


@pytest.fixture
def watch_process(application: Application, tmp_path: Path) -> tuple[int, int, Path]:
    """The application in place of the watcher: (its /metrics port, unused, unused)."""
    return application.port, 0, tmp_path


prometheus = watch_prom.prometheus


def query_at(url: str, promql: str, at: float) -> dict[tuple[str, ...], float]:
    """An instant query at ``at`` (Unix seconds): label values (sorted by label) -> value."""
    answer = httpx.get(
        f"{url}/api/v1/query", params={"query": promql, "time": f"{at:.3f}"}, timeout=5
    ).json()
    assert answer["status"] == "success", answer
    return {
        tuple(v for _, v in sorted(s["metric"].items())): float(s["value"][1])
        for s in answer["data"]["result"]
    }


def scraped(url: str, calls: int) -> None:
    """Wait until Prometheus holds ``calls`` recorded operations in all."""
    promql = f"sum(gen_ai_client_inference_duration_seconds_count) == {calls}"
    assert watch_prom.scalar(url, promql) == calls


def bucket_of(seconds: float) -> tuple[float, float]:
    """The conventions' duration bucket ``(lower, upper]`` holding ``seconds``."""
    bounds = (0.0, *DURATION_BUCKETS_S)
    (bucket,) = [(lo, hi) for lo, hi in itertools.pairwise(bounds) if lo < seconds <= hi]
    return bucket


def test_every_application_clients_query_returns_what_the_schedule_implies(
    application: Application, prometheus: str
) -> None:
    targets = promql_targets(DASHBOARD)
    assert len(targets) == 12
    application.calls(PHASE_1)
    scraped(prometheus, len(PHASE_1))
    t0 = time.time()
    time.sleep(2.5)  # samples before phase 2 inside the window
    application.calls(PHASE_2)
    scraped(prometheus, len(PHASE_1) + len(PHASE_2))
    time.sleep(max(2.5, t0 + 20.0 - time.time()))  # samples after it, and W >= 20 s
    t1 = time.time()
    window = math.floor(t1 - t0)

    def run(key: str, variables: dict[str, str] = ALL) -> dict[tuple[str, ...], float]:
        expr = expand_promql(targets[key], rate_interval=f"{window}s", variables=variables)
        return query_at(prometheus, expr, t1)

    def increase(rate: float, expected: int) -> None:
        assert expected <= rate * window * (1 + 1e-9), (rate, expected)
        assert rate * window <= expected * window / (window - 2.5), (rate, expected)

    server = "127.0.0.1"
    ttfc = {s: SCRIPTS[s]["ttft_ms"] / 1e3 for s in SCRIPTS}
    gap = {s: SCRIPTS[s]["itl_ms"] / 1e3 for s in SCRIPTS}
    duration = {s: ttfc[s] + (N - 1) * gap[s] for s in SCRIPTS}
    for title, refs, scripted in (
        ("Time to first chunk", "ABC", ttfc),
        ("Time per output chunk", "AB", gap),
        ("Inference duration", "AB", duration),
    ):
        for ref in refs:
            result = run(f"{title}/{ref}")
            if title == "Inference duration":  # the failed calls: fast, with no response model
                assert result.pop(("gamma", server)) <= 0.32
            assert set(result) == {("alpha", server), ("beta", server)}, (title, result)
            for (model, _), value in result.items():
                lo, hi = bucket_of(scripted[model])
                assert lo < value <= hi, (title, ref, model, value)

    calls_per_model = {"alpha": 3, "beta": 3, "gamma": 3}
    operations = run("Operations and errors per second/A")
    assert set(operations) == {(m, server) for m in calls_per_model}
    for (model, _), rate in operations.items():
        increase(rate, calls_per_model[model])
    errors = run("Operations and errors per second/B")
    assert set(errors) == {("500",), ("429",)}
    increase(errors[("500",)], 2)
    increase(errors[("429",)], 1)
    ratio = run("Error ratio by error.type/A")
    assert ratio == pytest.approx({("500",): 2 / 9, ("429",): 1 / 9}, rel=1e-9)
    # the usage counters: the six streamed calls' usage (the failed calls count 0)
    [input_rate] = run("Token usage per second/A").values()
    [output_rate] = run("Token usage per second/B").values()
    increase(input_rate, 6 * PROMPT_TOKENS)
    increase(output_rate, 6 * N)
    assert output_rate / input_rate == pytest.approx(N / PROMPT_TOKENS, rel=1e-9)

    # one model selected: only its series
    only_beta = run("Time to first chunk/A", {"model": "beta", "server": ".*"})
    assert set(only_beta) == {("beta", server)}

    # the variables' values, as Grafana's label_values(metric, label) asks Prometheus for them
    model = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    expected = {"model": ["alpha", "beta", "gamma"], "server": [server]}
    for variable in model["templating"]["list"]:
        match = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["query"])
        assert match, variable["query"]
        answer = httpx.get(
            f"{prometheus}/api/v1/label/{match.group(2)}/values",
            params={"match[]": match.group(1)},
            timeout=5,
        ).json()
        assert answer["data"] == expected[variable["name"]]
