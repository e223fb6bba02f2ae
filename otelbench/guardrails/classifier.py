"""The classifier filter: asks a moderation endpoint served elsewhere (draft 4.8.1 safety systems).

Any OpenAI-compatible ``/v1/moderations`` endpoint (OpenAI's, or a safety model such as Llama
Guard behind an OpenAI-compatible server) or a plain HTTP endpoint plugs in. The filter POSTs::

    {"input": ["text 1", "text 2"], "model": "<model, when configured>"}

and reads either the OpenAI shape ``{"results": [{"flagged": bool, "categories": {name: bool},
"category_scores": {name: float}}, ...]}`` or the plain shape ``{"flagged": bool, "category":
"name"}``. The request is blocked when a result is flagged (only ``categories``, when given,
count), or, with ``threshold``, when a counted category's score reaches it. The rule that fired
is the category's name (``flagged`` when none is given).

Example configuration (see :mod:`~otelbench.guardrails.config`)::

    input:
      - type: classifier
        url: http://127.0.0.1:9000/v1/moderations
        model: llama-guard-3
        system: Llama Guard 3
        api_key_env: MODERATION_API_KEY
        timeout_ms: 500
        on_error: closed

An unreachable endpoint, a non-2xx answer or an unreadable body raises, and the filter's
``on_error`` decides (fail open or closed); the filter's timeout bounds the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

import httpx

from otelbench.errors import ConfigError
from otelbench.guardrails.base import GuardrailFilter, Stage, Verdict
from otelbench.model.jsonvalue import JsonValue

__all__ = ["ClassifierFilter", "ModerationError"]


class _ModerationRequest(TypedDict):
    """The body of a ``/v1/moderations`` request: the texts and, when configured, the model."""

    input: list[str]
    model: NotRequired[str]


class ModerationError(Exception):
    """The moderation endpoint gave no usable answer (the span's ``otelbench.guardrail.error``
    is this class's name; ``on_error`` decides)."""


class ClassifierFilter(GuardrailFilter):
    """Blocks what a moderation endpoint flags. Async: runs in the event loop under its timeout."""

    type_name = "classifier"

    def __init__(
        self,
        *,
        url: str,
        model: str | None = None,
        categories: Sequence[str] = (),
        threshold: float | None = None,
        system: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"url: want an http:// or https:// URL, got {url!r}")
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0.0 <= threshold <= 1.0
        ):
            raise ConfigError(f"threshold: want a number in [0, 1], got {threshold!r}")
        self.url = url
        self.model = model
        self.categories = frozenset(categories)
        self.threshold = None if threshold is None else float(threshold)
        self.system = system
        hdrs = {str(k): str(v) for k, v in (headers or {}).items()}
        key = api_key
        if api_key_env:
            key = os.environ.get(api_key_env)
            if not key:
                raise ConfigError(f"api_key_env: the environment variable {api_key_env} is unset")
        if key:
            hdrs["Authorization"] = f"Bearer {key}"
        self._headers = hdrs
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # One pooled client per event loop (a client is bound to the loop it first ran in).
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(30.0), headers=self._headers, trust_env=False
            )
            self._loop = loop
        return self._client

    async def check(self, texts: Sequence[str], stage: Stage) -> Verdict:
        if not texts:
            return Verdict.ALLOW
        body: _ModerationRequest = {"input": list(texts)}
        if self.model:
            body["model"] = self.model
        try:
            resp = await self._http().post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise ModerationError(f"moderation endpoint failed: {exc!r}") from exc
        if not 200 <= resp.status_code < 300:
            raise ModerationError(f"moderation endpoint answered HTTP {resp.status_code}")
        try:
            data = resp.json()
        except ValueError as exc:
            raise ModerationError("moderation endpoint answered no JSON") from exc
        rule = self._flagged(data)
        return Verdict.ALLOW if rule is None else Verdict.block(rule)

    def _flagged(self, data: JsonValue) -> str | None:
        if not isinstance(data, dict):
            raise ModerationError("moderation answer is not a JSON object")
        results = data.get("results")
        if results is None:
            if "flagged" not in data:
                raise ModerationError("moderation answer has neither 'results' nor 'flagged'")
            results = [data]
        if not isinstance(results, list):
            raise ModerationError("moderation answer's 'results' is not a list")
        for result in results:
            if not isinstance(result, dict):
                raise ModerationError("a moderation result is not a JSON object")
            rule = self._result_rule(result)
            if rule is not None:
                return rule
        return None

    def _counts(self, category: str) -> bool:
        return not self.categories or category in self.categories

    def _result_rule(self, result: Mapping[str, JsonValue]) -> str | None:
        if self.threshold is not None:
            scores = result.get("category_scores") or {}
            if not isinstance(scores, dict):
                raise ModerationError("a moderation result's 'category_scores' is not an object")
            for name, score in scores.items():
                if not self._counts(name):
                    continue
                if not isinstance(score, int | float):
                    raise ModerationError(f"the moderation score of {name!r} is not a number")
                if score >= self.threshold:
                    return name
            return None
        if not result.get("flagged"):
            return None
        cats = result.get("categories")
        if isinstance(cats, dict):
            for name, hit in cats.items():
                if hit and self._counts(name):
                    return name
            return None if self.categories else "flagged"
        cat = result.get("category")
        if isinstance(cat, str) and cat:
            return cat if self._counts(cat) else None
        return None if self.categories else "flagged"

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(RuntimeError):  # its event loop is gone already
                await client.aclose()
