"""A JSON value as a type: what ``json.loads`` returns, what ``json.dumps`` writes.

Open data, whose keys the user or another program chooses, is typed by its values rather than
left as ``Any``: a procedure's effective ``parameters``, a workload's or an arrival process's
parameters, the ``extra_body`` merged into each request, a Grafana dashboard, an OTLP document
as JSON. mypy then checks that only JSON goes in, and a reader narrows a value
(``isinstance(v, dict)``) before it reads into it.

:data:`JsonValue` is recursive for the type checker. At run time it is a marker class that
:func:`otelbench.model.conform.conforms` knows: a field typed ``dict[str, JsonValue]`` holds an
object whose values are JSON (a string, a finite or infinite number, a bool, ``null``, a list or
an object of them).

Usage::

    from otelbench.model.jsonvalue import JsonObject

    extra_body: JsonObject = {"top_k": 1, "stop": ["\\n"]}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

__all__ = ["JsonObject", "JsonScalar", "JsonValue"]

JsonScalar: TypeAlias = str | int | float | bool | None
"""A JSON value that is not a container."""

if TYPE_CHECKING:
    JsonValue: TypeAlias = JsonScalar | list["JsonValue"] | dict[str, "JsonValue"]
else:

    class JsonValue:
        """Any JSON value (the type checker sees the recursive union above; never made)."""

        def __new__(cls) -> None:  # pragma: no cover - a marker, never made
            raise TypeError("JsonValue is a type, not a value")


JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: string keys, JSON values."""
