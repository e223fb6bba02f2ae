"""Who may talk to otelbench's endpoints: bearer tokens, TLS and per-client rate limits.

The embedded receiver (:mod:`otelbench.collector.receiver`) and the guardrail gateway
(:mod:`otelbench.guardrails.gateway`) share these pieces; ``docs/security.md`` is the threat model
they implement. Everything here is off unless asked for, and every endpoint binds ``127.0.0.1``
unless the user names another address, so a default run is reachable from this machine only.

* **Bearer token** (:func:`read_token`, :func:`bearer_matches`): a shared secret read from a file
  (``--auth-token-file``) or, failing that, from an environment variable — never from a
  command-line argument, which other users can read in ``ps``. The comparison is constant-time
  (:func:`hmac.compare_digest`). OTLP exporters send it with the standard
  ``OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20<token>``.
* **TLS** (:func:`server_tls_context`): a server context holding one certificate chain, TLS 1.2 at
  least. Exporters trust a self-signed certificate through ``OTEL_EXPORTER_OTLP_CERTIFICATE``.
* **Rate limit** (:class:`RateLimit`, :class:`TokenBuckets`): one token bucket per client IP
  address. A request takes a token; an empty bucket answers HTTP 429 with ``Retry-After``, which
  OTLP/HTTP exporters honour (OTLP 1.x, "Retryable response codes"), so a flooding client is
  slowed down and its data still arrives. Behind a proxy every request has the proxy's address:
  limit there, or size the bucket for all clients together.

Example::

    token = read_token(Path("receiver.token"), env_var=ENV_RECEIVER_TOKEN)   # or None
    tls = server_tls_context("cert.pem", "key.pem")
    buckets = TokenBuckets(RateLimit(per_s=50, burst=100))
    wait_s = buckets.take("10.0.0.7")      # 0.0: serve it; else answer 429, Retry-After: wait_s
"""

from __future__ import annotations

import hmac
import math
import os
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from otelbench.errors import ConfigError

__all__ = [
    "ENV_RECEIVER_TOKEN",
    "Access",
    "RateLimit",
    "TokenBuckets",
    "bearer_matches",
    "read_token",
    "retry_after_s",
    "server_tls_context",
]

ENV_RECEIVER_TOKEN: Final = "OTELBENCH_RECEIVER_TOKEN"
"""The environment variable holding the receiver's bearer token when no token file is given."""


# --------------------------------------------------------------------------------------------
# Bearer tokens
# --------------------------------------------------------------------------------------------
def read_token(
    path: str | os.PathLike[str] | None,
    *,
    env_var: str,
    environ: Mapping[str, str] | None = None,
) -> bytes | None:
    """The bearer token from ``path`` (surrounding whitespace removed), else from ``env_var``;
    ``None`` when neither is set (authentication off).

    An unreadable or empty file is a :class:`~otelbench.errors.ConfigError`: a server that was
    asked to authenticate must not start open.

    >>> read_token(None, env_var="T", environ={"T": "s3cret"})
    b's3cret'
    >>> read_token(None, env_var="T", environ={}) is None
    True
    """
    if path is not None:
        try:
            with Path(path).open("rb") as f:
                token = f.read(4097).strip()
        except OSError as err:
            raise ConfigError(f"cannot read the token file {path}: {err.strerror or err}") from None
        if not token:
            raise ConfigError(f"the token file {path} is empty")
        if len(token) > 4096:
            raise ConfigError(f"the token file {path} holds more than 4096 bytes")
    else:
        token = (os.environ if environ is None else environ).get(env_var, "").strip().encode()
        if not token:
            return None
    if any(c <= 0x20 or c >= 0x7F for c in token):
        raise ConfigError("the bearer token must be printable ASCII without spaces")
    return token


def bearer_matches(authorization: str | bytes | None, token: bytes) -> bool:
    """Whether an ``Authorization`` header value is ``Bearer <token>`` (scheme case-insensitive;
    the token compared in constant time).

    >>> bearer_matches("Bearer s3cret", b"s3cret"), bearer_matches("Bearer nope", b"s3cret")
    (True, False)
    """
    if authorization is None:
        return False
    value = authorization.encode("latin-1") if isinstance(authorization, str) else authorization
    scheme, _, presented = value.strip().partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(presented.strip(), token)


# --------------------------------------------------------------------------------------------
# TLS
# --------------------------------------------------------------------------------------------
def server_tls_context(
    cert: str | os.PathLike[str] | None, key: str | os.PathLike[str] | None
) -> ssl.SSLContext | None:
    """A server TLS context (TLS 1.2 or later) for a PEM certificate chain and its private key;
    ``None`` when neither is given. One without the other, or files that do not load, are a
    :class:`~otelbench.errors.ConfigError`.
    """
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ConfigError("TLS needs both --tls-cert and --tls-key")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except FileNotFoundError as err:
        raise ConfigError(f"cannot read {err.filename}: no such file") from None
    except (ssl.SSLError, OSError) as err:
        raise ConfigError(f"cannot load the TLS certificate {cert} with key {key}: {err}") from None
    return context


# --------------------------------------------------------------------------------------------
# Rate limits
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RateLimit:
    """Requests per second per client, and the burst a client may send at once.

    >>> RateLimit(per_s=50, burst=100).burst
    100
    """

    per_s: float
    burst: int

    def __post_init__(self) -> None:
        if not (math.isfinite(self.per_s) and self.per_s > 0):
            raise ConfigError(f"the rate limit must be > 0 requests/s, got {self.per_s}")
        if self.burst < 1:
            raise ConfigError(f"the rate-limit burst must be at least 1 request, got {self.burst}")


class TokenBuckets:
    """One token bucket per client key (its IP address), thread-safe, O(1) per request.

    A bucket holds at most ``burst`` tokens and refills at ``per_s`` tokens a second.
    :meth:`take` removes a token and returns 0.0, or returns the seconds until one is available.
    Memory is bounded: at most ``max_clients`` buckets are kept; the least recently seen is
    forgotten first (a forgotten client starts again with a full bucket).

    >>> now = [0.0]
    >>> buckets = TokenBuckets(RateLimit(per_s=2, burst=1), clock=lambda: now[0])
    >>> buckets.take("a"), buckets.take("a"), buckets.take("b")
    (0.0, 0.5, 0.0)
    """

    def __init__(
        self,
        limit: RateLimit,
        *,
        max_clients: int = 65536,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self._max_clients = max_clients
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> tokens, t

    def take(self, key: str) -> float:
        """Take a token for ``key``: 0.0 when granted, else the seconds to wait for one."""
        now = self._clock()
        per_s, burst = self.limit.per_s, float(self.limit.burst)
        with self._lock:
            tokens, then = self._buckets.pop(key, (burst, now))
            tokens = min(burst, tokens + (now - then) * per_s)
            wait = 0.0 if tokens >= 1.0 else (1.0 - tokens) / per_s
            self._buckets[key] = (tokens - 1.0 if wait == 0.0 else tokens, now)
            if len(self._buckets) > self._max_clients:
                self._buckets.popitem(last=False)
            return wait


@dataclass(frozen=True, slots=True)
class Access:
    """What an endpoint asks of its clients; the default (all ``None``) is open, as on loopback.

    Built from command-line options by :meth:`from_options`, explicit options first, then the
    environment.
    """

    token: bytes | None = None
    tls: ssl.SSLContext | None = None
    rate_limit: RateLimit | None = None

    @classmethod
    def from_options(
        cls,
        *,
        token_file: str | os.PathLike[str] | None,
        token_env_var: str,
        tls_cert: str | os.PathLike[str] | None,
        tls_key: str | os.PathLike[str] | None,
        rate_per_s: float | None,
        rate_burst: int | None,
        environ: Mapping[str, str] | None = None,
    ) -> Access:
        """``--auth-token-file``/``$token_env_var``, ``--tls-cert``/``--tls-key``, and
        ``--rate-limit``/``--rate-burst`` (the burst defaults to two seconds' worth, at least 1).

        >>> Access.from_options(token_file=None, token_env_var="T", tls_cert=None, tls_key=None,
        ...                     rate_per_s=5, rate_burst=None, environ={}).rate_limit
        RateLimit(per_s=5, burst=10)
        """
        if rate_per_s is None and rate_burst is not None:
            raise ConfigError("--rate-burst needs --rate-limit")
        limit = None
        if rate_per_s is not None:
            burst = rate_burst if rate_burst is not None else max(1, math.ceil(2 * rate_per_s))
            limit = RateLimit(per_s=rate_per_s, burst=burst)
        return cls(
            token=read_token(token_file, env_var=token_env_var, environ=environ),
            tls=server_tls_context(tls_cert, tls_key),
            rate_limit=limit,
        )


def retry_after_s(wait_s: float) -> int:
    """The ``Retry-After`` value (whole seconds, at least 1) for a wait in seconds.

    >>> retry_after_s(0.2), retry_after_s(1.5)
    (1, 2)
    """
    return max(1, math.ceil(wait_s))
