"""Grafana's substitutions, done the way Grafana and the ClickHouse plugin do them.

The dashboards' queries hold Grafana template variables and macros that Grafana (PromQL) or the
ClickHouse plugin (SQL) expand before a query reaches the database. The tests run the committed
queries on a real Prometheus and on chdb after exactly these expansions:

* ``$__timeFilter_ms(col)`` -> ``col >= fromUnixTimestamp64Milli(FROM) AND col <=
  fromUnixTimestamp64Milli(TO)`` (the plugin's DateTime64 time filter, bounds in ms);
* ``$__timeInterval(col)`` -> ``toStartOfInterval(toDateTime(col), INTERVAL N second)``;
* ``$__interval_s`` -> ``N``; ``$__rate_interval`` -> the given duration (Grafana: at least four
  scrape intervals);
* ``${name:singlequote}`` -> ``'value'`` (``'`` escaped), ``${name}`` and ``$name`` -> the value as
  it is (for a multi-value variable in a regex matcher Grafana writes ``(a|b)``: pass that).

Example::

    sql = expand_clickhouse(raw_sql, from_ms=0, to_ms=2_000_000_000_000, interval_s=60,
                            variables={"run": "r1", "slo_ttft_ms": "500"})
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

__all__ = ["expand_clickhouse", "expand_promql", "expand_variables"]

_TIME_FILTER_MS: Final = re.compile(r"\$__timeFilter_ms\(\s*([^()]+?)\s*\)")
_TIME_INTERVAL: Final = re.compile(r"\$__timeInterval\(\s*([^()]+?)\s*\)")
_VARIABLE: Final = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\$(\w+)")


def expand_variables(text: str, variables: Mapping[str, str]) -> str:
    """Substitute ``${name}``, ``${name:singlequote}`` and ``$name``; an unknown name raises
    KeyError (Grafana would leave it, and the query would fail)."""

    def sub(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        fmt = match.group(2)
        if name.startswith("__"):
            raise KeyError(f"unexpanded Grafana macro ${name}")
        value = variables[name]
        if fmt is None:
            return value
        if fmt == "singlequote":
            return "'" + value.replace("'", "\\'") + "'"
        raise ValueError(f"unsupported variable format {fmt!r}")

    return _VARIABLE.sub(sub, text)


def expand_clickhouse(
    sql: str, *, from_ms: int, to_ms: int, interval_s: int, variables: Mapping[str, str]
) -> str:
    """The ClickHouse plugin's macros, then Grafana's variables."""
    sql = _TIME_FILTER_MS.sub(
        lambda m: (
            f"{m.group(1)} >= fromUnixTimestamp64Milli({from_ms}) "
            f"AND {m.group(1)} <= fromUnixTimestamp64Milli({to_ms})"
        ),
        sql,
    )
    sql = _TIME_INTERVAL.sub(
        lambda m: f"toStartOfInterval(toDateTime({m.group(1)}), INTERVAL {interval_s} second)",
        sql,
    )
    sql = sql.replace("$__interval_s", str(interval_s))
    return expand_variables(sql, variables)


def expand_promql(expr: str, *, rate_interval: str, variables: Mapping[str, str]) -> str:
    """Grafana's ``$__rate_interval``, then the dashboard's variables."""
    return expand_variables(expr.replace("$__rate_interval", rate_interval), variables)
