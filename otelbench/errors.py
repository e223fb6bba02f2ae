"""The exceptions otelbench raises, translated once at each boundary it owns.

::

    OtelbenchError                 one line a user can act on; the CLI prints it and exits 1
    ├── ConfigError                a bad argument, URL, workload name or configuration file
    ├── TargetError                the system under test misbehaved
    │   ├── TargetUnreachable      connection refused, DNS failure, timeout before headers
    │   ├── TargetHTTPError        a non-2xx status (``status`` holds it)
    │   └── StreamError            malformed SSE or JSON, or the stream was cut mid-way
    ├── StoreError                 the span store cannot be opened, written or read
    │   └── NotAnOtelbenchStore    the file exists but is not an otelbench store (or a newer one)
    ├── CollectorError             the embedded collector could not start or stopped with an error
    └── WorkerError                no load-generator worker process could run its share

Per-request target errors never abort a run: the load generator records them on the request's
span (``error.type``) and counts them; only errors that make the whole run impossible propagate.
:func:`registered` looks a name up in a registry, an unknown one being one ConfigError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

__all__ = [
    "CollectorError",
    "ConfigError",
    "NotAnOtelbenchStore",
    "OtelbenchError",
    "StoreError",
    "StreamError",
    "TargetError",
    "TargetHTTPError",
    "TargetUnreachable",
    "WorkerError",
    "registered",
]

T = TypeVar("T")


class OtelbenchError(Exception):
    """Base of every error otelbench raises on purpose. ``str(err)`` is the one-line message."""


class ConfigError(OtelbenchError):
    """A bad argument, URL, workload name or configuration file."""


class TargetError(OtelbenchError):
    """The system under test misbehaved."""

    error_type = "target_error"
    """The value recorded as the span's ``error.type``."""


class TargetUnreachable(TargetError):
    """Connection refused, DNS failure, or a timeout before the response headers arrived."""

    error_type = "unreachable"


class TargetHTTPError(TargetError):
    """The target answered with a non-2xx status."""

    def __init__(self, status: int, body: str = "") -> None:
        self.status = status
        self.body = body
        detail = f": {body[:200]}" if body else ""
        super().__init__(f"target answered HTTP {status}{detail}")

    @property
    def error_type(self) -> str:  # type: ignore[override]
        return str(self.status)


class StreamError(TargetError):
    """Malformed SSE or JSON in the response, or a stream cut before its end."""

    error_type = "stream_error"


class StoreError(OtelbenchError):
    """The span store cannot be opened, written or read."""


class NotAnOtelbenchStore(StoreError):
    """The file exists but was not written by otelbench (or by a newer schema version)."""


class CollectorError(OtelbenchError):
    """The embedded collector could not start, or stopped with an error."""


class WorkerError(OtelbenchError):
    """No load-generator worker process could run its share (each one's reason, joined)."""


def registered(registry: Mapping[str, T], name: str, what: str) -> T:
    """``registry[name]``; an unknown ``name`` is one :class:`ConfigError` that lists the
    registered names.

    >>> registered({"quick": 1, "draft": 2}, "fast", "profile")
    Traceback (most recent call last):
    ...
    otelbench.errors.ConfigError: unknown profile 'fast'; known: draft, quick
    """
    try:
        return registry[name]
    except KeyError:
        known = ", ".join(sorted(registry))
        raise ConfigError(f"unknown {what} {name!r}; known: {known}") from None
