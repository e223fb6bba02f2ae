"""A server that otelbench starts for itself: its own process group, lower priority, a log file.

:class:`ManagedServer` is what every launcher shares: it spawns the server's argv in a new
session (so that :meth:`~ManagedServer.stop` ends the whole process group and leaves nothing
behind), at a lower CPU priority (``niceness``, default :data:`SUT_NICENESS`), with stdout and
stderr in a log file; it waits until the subclass's readiness check passes and raises
:class:`~otelbench.errors.TargetUnreachable` — with the log's last lines — when the server exits
first or is not ready in time. Subclasses say what to run (:meth:`~ManagedServer.command`,
:meth:`~ManagedServer.environment`), where it serves (``base_url``) and when it is ready
(:meth:`~ManagedServer.is_ready`)::

    ManagedServer
      ├─ VllmCpuServer  (otelbench.sut.vllm_cpu)   the tiny vLLM on CPU
      └─ CommandServer  (otelbench.sut.command)    any command a user gives, serving at a URL

Why the lower priority: on a small host the load generator and the collector share cores with
the server's processes, and at equal priority they waited 5–10 s on the run queue over a 25 s
run (``/proc/<tid>/schedstat``, 2 cores, vLLM at 2 requests/s), which put a P99 send lag of
0.4–0.6 s into the open-loop schedule. A new session also gets its own scheduling *autogroup*,
and between autogroups a plain ``nice`` has no effect, so the group's own nice value
(``/proc/PID/autogroup``) is set as well. With both, the same run's P99 send lag was 3 ms.
``niceness=0`` restores equal priority.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar, Final, Self

import httpx

from otelbench.errors import ConfigError, TargetUnreachable
from otelbench.lifecycle import Stops

__all__ = [
    "SUT_NICENESS",
    "GroupProcess",
    "ManagedServer",
    "check_port_free",
    "free_port",
    "group_processes",
    "lower_session_priority",
    "with_overrides",
]

SUT_NICENESS: Final = 10
"""Default nice value of a launched server (and of its autogroup): see the module docstring."""

_LOG_TAIL_LINES: Final = 20
_READY_POLL_S: Final = 0.25


@dataclass(frozen=True)
class GroupProcess:
    """One live process of a server's process group (Linux ``/proc``)."""

    pid: int
    name: str
    """``/proc/PID/comm``: ``python``, ``VLLM::EngineCor``, ``VLLM::Worker`` … (15 chars max)."""
    rss_bytes: int


def free_port(host: str) -> int:
    """A TCP port nothing listens on at ``host`` (now; a race is possible but rare)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def check_port_free(host: str, port: int, what: str) -> None:
    """Raise :class:`ConfigError` when ``host:port`` cannot be bound (``what`` names the server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ConfigError(f"cannot serve {what} on {host}:{port}: {exc.strerror}") from exc


def with_overrides(env: dict[str, str], overrides: Mapping[str, str | None]) -> dict[str, str]:
    """``env`` with ``overrides`` applied: a value sets the variable, None removes it.

    >>> with_overrides({"A": "1", "B": "2"}, {"A": None, "C": "3"})
    {'B': '2', 'C': '3'}
    """
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def group_processes(pgid: int) -> list[GroupProcess]:
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
        found.append(GroupProcess(pid=int(entry.name), name=name, rss_bytes=rss_kib * 1024))
    return sorted(found, key=lambda p: p.pid)


def _group_alive(pgid: int) -> bool:
    """True while a process of the group runs (zombies waiting for init to reap them do not)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return bool(group_processes(pgid))


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


def lower_session_priority(pid: int, niceness: int) -> None:
    """Give ``pid``'s autogroup (its session, on kernels with autogroup scheduling) ``niceness``.

    The processes themselves start under ``nice -n``; this makes the whole session yield to
    other sessions as well. Kernels without autogroups have no such file: nothing to do."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{niceness}\n")


_LIVE: set[ManagedServer] = set()
"""Started and not yet stopped: held here so that none is lost before exit stops it."""


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_LIVE):
        server.stop(grace=5.0)


class ManagedServer(Stops, abc.ABC):
    """A server process group that otelbench starts and stops (module docstring)."""

    kind: ClassVar[str] = "server"
    """What the server is, for messages ("vLLM", "the launch command" …)."""
    log_prefix: ClassVar[str] = "otelbench-server-"
    """Prefix of the log file made under /tmp when no ``log_path`` is given."""

    def __init__(
        self, *, log_path: str | os.PathLike[str] | None = None, niceness: int = SUT_NICENESS
    ) -> None:
        if not 0 <= niceness <= 19:
            raise ConfigError(f"niceness must be 0..19, got {niceness}")
        self.niceness = niceness
        """nice value of every process of the server and of their autogroup (0: the caller's)."""
        self.log_path: Path | None = Path(log_path) if log_path is not None else None
        self.startup_seconds: float | None = None
        """Seconds from spawn to ready, once started."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._stopped = False

    # ------------------------------------------------------------------ what subclasses say
    @property
    @abc.abstractmethod
    def base_url(self) -> str:
        """Where the server serves (no ``/v1``)."""

    @abc.abstractmethod
    def command(self) -> list[str]:
        """The argv that :meth:`start` runs."""

    @abc.abstractmethod
    def environment(self) -> dict[str, str]:
        """The environment :meth:`start` gives the server."""

    @abc.abstractmethod
    def is_ready(self, client: httpx.Client) -> bool:
        """True once the server answers as it should (``client`` has ``base_url`` set)."""

    @property
    def not_ready(self) -> str:
        """What a start that timed out says the server failed to do."""
        return "was not ready"

    def prepare(self) -> None:
        """Checks and choices before the spawn (a port, an environment); raise ConfigError."""

    # ------------------------------------------------------------------ properties
    @property
    def pid(self) -> int | None:
        """The server's first process (also the process group id), while running."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ------------------------------------------------------------------ life cycle
    def start(self, timeout: float = 180.0) -> Self:
        """Spawn the server and wait until :meth:`is_ready`; return ``self``."""
        if self._proc is not None:
            raise ConfigError(f"this {type(self).__name__} was already started; make a new one")
        self.prepare()
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix=self.log_prefix, suffix=".log")
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
            raise ConfigError(f"cannot run {command[0]}: {exc.strerror}") from exc
        if self.niceness:
            lower_session_priority(self._proc.pid, self.niceness)
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
                        f"{self.kind} exited with code {code} while starting on "
                        f"{self.base_url}{self._tail_for_error()}"
                    )
                try:
                    if self.is_ready(client):
                        return
                except (httpx.HTTPError, ValueError, AttributeError):
                    pass
                if time.monotonic() >= deadline:
                    raise TargetUnreachable(
                        f"{self.kind} {self.not_ready} on {self.base_url} within {timeout:.0f} s"
                        f"{self._tail_for_error()}"
                    )
                time.sleep(_READY_POLL_S)

    def stop(self, grace: float = 30.0) -> None:
        """End the server and every process of its group; idempotent.

        SIGTERM to the first process (a server then shuts down its children and flushes its
        spans), SIGTERM to whatever is left of the group once it has exited, and SIGKILL to
        the group after ``grace`` seconds.
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

    def processes(self) -> list[GroupProcess]:
        """The live processes of the server's process group, with their resident memory."""
        return group_processes(self.pid) if self.pid is not None else []

    def rss_bytes(self) -> int:
        """Resident memory of the whole process group."""
        return sum(p.rss_bytes for p in self.processes())
