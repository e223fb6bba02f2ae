"""A server started by a command the user gives: any OpenAI-compatible target, restartable.

Procedures that compare configurations of one target (draft 5.7 prefix cache, 5.10
guardrails) must restart it between them. When the target is not the built-in vLLM on CPU, the
user gives, per configuration, a shell command that starts it and the URL it then serves at;
:class:`CommandServer` runs the command (``bash -c``) in a process group of its own at
:data:`~otelbench.sut.process.SUT_NICENESS`, waits until ``URL/v1/models`` answers (any
status below 500) and
stops the whole group afterwards (SIGTERM, then SIGKILL). The command inherits otelbench's
environment plus ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (and ``OTEL_EXPORTER_OTLP_ENDPOINT``)
pointing at the procedure's collector, so a server with OpenTelemetry tracing (vLLM's
``--otlp-traces-endpoint "$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"``, otelbench's engine hooks)
reports its spans where the procedure stores them.

Example::

    server = CommandServer(
        "vllm serve my-model --port 8100 --no-enable-prefix-caching",
        "http://127.0.0.1:8100",
        otlp_traces_endpoint="http://127.0.0.1:4318/v1/traces",
    )
    with server:
        preflight(server.base_url, "my-model")
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import httpx

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.sut.process import SUT_NICENESS, ManagedServer, with_overrides

__all__ = ["CommandServer"]


class CommandServer(ManagedServer):
    """``command`` (a shell command line) serving at ``url`` once ``/v1/models`` answers."""

    kind: ClassVar[str] = "the launch command"
    log_prefix: ClassVar[str] = "otelbench-launch-"

    def __init__(
        self,
        command: str,
        url: str,
        *,
        otlp_traces_endpoint: str | None = None,
        env: Mapping[str, str | None] | None = None,
        log_path: Path | str | None = None,
        niceness: int = SUT_NICENESS,
    ) -> None:
        super().__init__(log_path=log_path, niceness=niceness)
        if not command.strip():
            raise ConfigError("the launch command is empty")
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ConfigError(f"the launch command's URL must be http(s)://HOST:PORT, got {url!r}")
        self.shell_command = command
        self.url = url.rstrip("/")
        self.otlp_traces_endpoint = otlp_traces_endpoint
        self.env_overrides: dict[str, str | None] = dict(env or {})

    @property
    def base_url(self) -> str:
        return self.url

    def command(self) -> list[str]:
        return ["bash", "-c", self.shell_command]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.otlp_traces_endpoint:
            env[semconv.ENV_OTLP_TRACES_ENDPOINT] = self.otlp_traces_endpoint
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = self.otlp_traces_endpoint.removesuffix(
                "/v1/traces"
            )
        return with_overrides(env, self.env_overrides)

    def is_ready(self, client: httpx.Client) -> bool:
        """The server answers HTTP (``/v1/models`` below 500; the preflight then checks the
        model): a server that does not list models (404) is up all the same."""
        return client.get("/v1/models").status_code < 500
