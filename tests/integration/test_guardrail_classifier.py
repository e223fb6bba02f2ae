"""The classifier filter against a real HTTP moderation server on loopback (stdlib, in a thread):
OpenAI ``/v1/moderations`` and plain shapes, categories and threshold, errors and timeouts."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.guardrails.base import Action, Stage
from otelbench.guardrails.classifier import ClassifierFilter, ModerationError
from otelbench.guardrails.config import parse_config
from otelbench.guardrails.engine import Guardrails

pytestmark = pytest.mark.integration


class Handler(BaseHTTPRequestHandler):
    """``/v1/moderations``: flags texts containing "hate" (OpenAI shape, with scores);
    ``/plain``: ``{"flagged", "category"}``; ``/slow``: answers after 2 s; ``/500``: HTTP 500;
    ``/garbage``: not JSON; ``/odd-scores``: a score given as a string."""

    seen: list[dict[str, Any]] = []  # noqa: RUF012

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Handler.seen.append({"body": body, "auth": self.headers.get("authorization")})
        if self.path == "/slow":
            time.sleep(2)
        if self.path == "/500":
            self._reply(500, b"{}")
            return
        if self.path == "/garbage":
            self._reply(200, b"not json")
            return
        if self.path == "/odd-scores":
            scores = {"hate": "0.9", "violence": 0.6}
            self._reply(200, json.dumps({"results": [{"category_scores": scores}]}).encode())
            return
        texts = body["input"]
        if self.path == "/plain":
            hit = any("hate" in t for t in texts)
            out: dict[str, Any] = {"flagged": hit, "category": "hate" if hit else None}
        else:
            out = {"id": "modr-1", "model": body.get("model", "m"), "results": [
                {"flagged": "hate" in t or "violence" in t,
                 "categories": {"hate": "hate" in t, "violence": "violence" in t},
                 "category_scores": {"hate": 0.9 if "hate" in t else 0.01,
                                     "violence": 0.6 if "violence" in t else 0.02}}
                for t in texts]}  # fmt: skip
        self._reply(200, json.dumps(out).encode())

    def _reply(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def moderation_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_openai_shape_blocks_flagged_category(moderation_url: str) -> None:
    f = ClassifierFilter(url=moderation_url + "/v1/moderations", model="llama-guard")
    assert (await f.check(["hello", "some hate"], Stage.INPUT)).rule == "hate"
    assert (await f.check(["hello"], Stage.INPUT)).action is Action.ALLOW
    assert Handler.seen[-1]["body"] == {"input": ["hello"], "model": "llama-guard"}
    only_violence = ClassifierFilter(
        url=moderation_url + "/v1/moderations", categories=["violence"]
    )
    assert (await only_violence.check(["hate"], Stage.INPUT)).action is Action.ALLOW
    assert (await only_violence.check(["violence"], Stage.OUTPUT)).rule == "violence"
    await f.aclose()
    await only_violence.aclose()


async def test_threshold_and_plain_shape(moderation_url: str) -> None:
    strict = ClassifierFilter(url=moderation_url + "/v1/moderations", threshold=0.5)
    assert (await strict.check(["violence"], Stage.INPUT)).rule == "violence"
    lax = ClassifierFilter(url=moderation_url + "/v1/moderations", threshold=0.95)
    assert (await lax.check(["hate violence"], Stage.INPUT)).action is Action.ALLOW
    plain = ClassifierFilter(url=moderation_url + "/plain")
    assert (await plain.check(["x hate"], Stage.INPUT)).rule == "hate"
    assert (await plain.check(["fine"], Stage.INPUT)).action is Action.ALLOW
    for f in (strict, lax, plain):
        await f.aclose()


async def test_a_counted_score_that_is_not_a_number_is_a_moderation_error(
    moderation_url: str,
) -> None:
    """A score is compared only as a number ("0.9" is refused, not read as 0.9); a category
    the filter does not count is not read at all."""
    counted = ClassifierFilter(url=moderation_url + "/odd-scores", threshold=0.5)
    with pytest.raises(ModerationError, match="the moderation score of 'hate' is not a number"):
        await counted.check(["x"], Stage.INPUT)
    violence = ClassifierFilter(
        url=moderation_url + "/odd-scores", threshold=0.5, categories=["violence"]
    )
    assert (await violence.check(["x"], Stage.INPUT)).rule == "violence"
    for f in (counted, violence):
        await f.aclose()


async def test_api_key_from_env(moderation_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_MOD_KEY", "sk-mod")
    f = ClassifierFilter(url=moderation_url + "/v1/moderations", api_key_env="TEST_MOD_KEY")
    await f.check(["x"], Stage.INPUT)
    assert Handler.seen[-1]["auth"] == "Bearer sk-mod"
    await f.aclose()
    monkeypatch.delenv("TEST_MOD_KEY")
    with pytest.raises(ConfigError, match=r"^api_key_env: the environment variable TEST_MOD_KEY"):
        ClassifierFilter(url=moderation_url, api_key_env="TEST_MOD_KEY")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("where", "error"),
    [
        ("/500", "ModerationError"),
        ("/garbage", "ModerationError"),
        ("/slow", "timeout"),
        (None, "ModerationError"),  # nothing listens
    ],
)
@pytest.mark.parametrize("on_error", ["open", "closed"])
async def test_endpoint_failures_follow_on_error(
    moderation_url: str,
    where: str | None,
    error: str,
    on_error: str,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    url = moderation_url + where if where else f"http://127.0.0.1:{closed_port()}/v1/moderations"
    cfg = parse_config({"input": [{"type": "classifier", "url": url, "timeout_ms": 300,
                                   "on_error": on_error, "system": "Llama Guard 3"}]})  # fmt: skip
    g = Guardrails(cfg, tracer_provider=tracer_provider)
    t0 = time.perf_counter()
    outcome = await g.run_input(["hello"], None, None)
    assert time.perf_counter() - t0 < 1.5
    assert (outcome.blocked is None) == (on_error == "open")
    attrs = dict(span_exporter.get_finished_spans()[0].attributes or {})
    assert attrs[semconv.GUARDRAIL_ERROR] == error
    assert attrs[semconv.GUARDRAIL_FILTER_TYPE] == "classifier"
    assert "Llama Guard 3" in cfg.resource_attributes()[semconv.RESOURCE_GUARDRAIL_SYSTEMS]
    await g.aclose()
