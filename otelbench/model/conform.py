"""Does a JSON value have a type's shape? The runtime check of the report's TypedDicts.

:func:`~otelbench.model.load.load_report` checks every report it reads with it, and the tests check
every report the builder writes (``tests/unit/report/test_types.py``).

:func:`conforms` walks a value (parsed JSON: dicts, lists, strings, numbers, bools, None) against
a type of :mod:`otelbench.model.report` and lists every problem by its path: a key the TypedDict
does not declare, a required key that is missing, a value of another type. It follows TypedDicts,
``list[X]``, ``dict[str, X]``, unions (``X | None``), ``Literal`` and ``Any``. JSON has one kind
of number, so an int is a ``float`` (PEP 484's numeric tower); a bool is neither. A field typed
:data:`~otelbench.model.jsonvalue.JsonValue` takes any JSON value (the value is checked to be
one: no tuple, set or object of another kind).

Example::

    conforms({"count": 1, "p50": "x"}, ShortSummary)
    # ['$: missing key p95', '$: missing key p99', '$.p50: expected float | None, got str']
"""

from __future__ import annotations

import functools
import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from otelbench.model.jsonvalue import JsonValue

__all__ = ["conforms", "type_name", "typeddicts_of"]


def type_name(tp: Any) -> str:
    """``tp`` as it is written in the source, e.g. ``float | None``."""
    if tp is type(None):
        return "None"
    if isinstance(tp, type) and get_origin(tp) is None:
        return tp.__name__
    if get_origin(tp) in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in get_args(tp))
    return str(tp).replace("typing.", "")


def _scalar(value: Any, tp: type) -> bool:
    if isinstance(value, bool):
        return tp is bool
    if tp is float:
        return isinstance(value, int | float)
    return isinstance(value, tp)


@functools.cache
def _hints(tp: Any) -> dict[str, Any]:
    """A TypedDict's field types, evaluated once per type (a whole report's check took 20 ms
    evaluating them on every object, 8 ms with this cache; the store checks every run
    manifest it lists)."""
    return get_type_hints(tp)


def _typeddict(value: Any, tp: Any, path: str, unknown: bool) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected {tp.__name__} (an object), got {type(value).__name__}"]
    hints = _hints(tp)
    problems = (
        [] if unknown else [f"{path}: unknown key {key}" for key in value if key not in hints]
    )
    problems += [
        f"{path}: missing key {key}" for key in sorted(tp.__required_keys__) if key not in value
    ]
    for key, item in value.items():
        if key in hints:
            problems += conforms(item, hints[key], f"{path}.{key}", unknown_keys=unknown)
    return problems


def _json(value: Any, path: str) -> list[str]:
    if value is None or isinstance(value, str | int | float):  # bool is an int
        return []
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _json(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [f"{path}: key {k!r} is not a str" for k in value if not isinstance(k, str)] + [
            p for k, v in value.items() for p in _json(v, f"{path}.{k}")
        ]
    return [f"{path}: expected a JSON value, got {type(value).__name__}"]


def _union(value: Any, tp: Any, path: str, unknown: bool) -> list[str]:
    tried = [conforms(value, member, path, unknown_keys=unknown) for member in get_args(tp)]
    if any(not problems for problems in tried):
        return []
    closest = min(tried, key=len)
    if len(closest) == 1 and closest[0].startswith(f"{path}: expected"):
        return [f"{path}: expected {type_name(tp)}, got {type(value).__name__}"]
    return closest


def conforms(value: Any, tp: Any, path: str = "$", *, unknown_keys: bool = False) -> list[str]:
    """Every way ``value`` departs from type ``tp``, as ``"PATH: problem"`` lines (``[]`` when
    it conforms); ``path`` names ``value`` in them. ``unknown_keys``: a key no TypedDict declares
    is no problem (a report from a newer otelbench of the same schema version may add keys)."""
    if tp is Any:
        return []
    if tp is JsonValue:
        return _json(value, path)
    if tp is None or tp is type(None):
        return [] if value is None else [f"{path}: expected None, got {type(value).__name__}"]
    if is_typeddict(tp):
        return _typeddict(value, tp, path, unknown_keys)
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return _union(value, tp, path, unknown_keys)
    if origin is Literal:
        allowed = get_args(tp)
        return [] if value in allowed else [f"{path}: {value!r} is none of {list(allowed)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: expected {type_name(tp)}, got {type(value).__name__}"]
        (item,) = get_args(tp)
        return [
            p
            for i, v in enumerate(value)
            for p in conforms(v, item, f"{path}[{i}]", unknown_keys=unknown_keys)
        ]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: expected {type_name(tp)}, got {type(value).__name__}"]
        key_type, item = get_args(tp)
        problems = [
            f"{path}: key {k!r} is not a {key_type.__name__}"
            for k in value
            if not isinstance(k, key_type)
        ]
        return problems + [
            p
            for k, v in value.items()
            for p in conforms(v, item, f"{path}.{k}", unknown_keys=unknown_keys)
        ]
    if isinstance(tp, type):
        return (
            []
            if _scalar(value, tp)
            else [f"{path}: expected {type_name(tp)}, got {type(value).__name__}"]
        )
    raise TypeError(f"conforms cannot check {tp!r}")  # a new kind of annotation in the types


def typeddicts_of(tp: Any, module: str | None = None) -> dict[str, Any]:
    """Every TypedDict reachable from type ``tp`` (itself, its fields' types, their arguments),
    by name; only those defined in ``module`` when it is given (the tests that hold each type
    against its document walk them).

    >>> sorted(typeddicts_of(ShortSummary))  # doctest: +SKIP
    ['ShortSummary']
    """
    seen: dict[str, Any] = {}

    def walk(t: Any) -> None:
        if is_typeddict(t):
            if t.__name__ in seen or (module is not None and t.__module__ != module):
                return
            seen[t.__name__] = t
            for hint in _hints(t).values():
                walk(hint)
        for arg in get_args(t):
            walk(arg)

    walk(tp)
    return seen
