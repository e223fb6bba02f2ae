"""Option parsing shared by ``otelbench watch`` and ``otelbench probe`` (standard library only).

>>> parse_duration("5m"), parse_hostport("127.0.0.1:9464")
(300.0, ('127.0.0.1', 9464))
"""

from __future__ import annotations

import re
from typing import Final

from otelbench.errors import ConfigError

__all__ = ["DEFAULT_LISTEN", "parse_duration", "parse_hostport"]

DEFAULT_LISTEN: Final = "127.0.0.1:9464"
_UNITS: Final = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds in ``30s``, ``5m``, ``24h``, ``7d``, ``250ms`` or a bare number of seconds.

    >>> parse_duration("5m"), parse_duration("1.5h"), parse_duration("10")
    (300.0, 5400.0, 10.0)
    """
    match = _DURATION.match(text)
    if not match or not float(match.group(1)) > 0:
        raise ConfigError(f"bad duration {text!r}: use e.g. 30s, 5m, 24h or 7d (> 0)")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def parse_hostport(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) → (host, port); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"bad address {text!r}: use HOST:PORT, e.g. 127.0.0.1:9464")
    return host.strip("[]"), int(port)
