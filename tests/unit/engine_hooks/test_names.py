"""The hooks' copy of the names (``otelbench_vllm/names.py``) equals ``otelbench/semconv.py``."""

from __future__ import annotations

from otelbench_vllm import names

from otelbench import semconv


def public_names() -> dict[str, str]:
    return {k: v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}


def test_every_hook_name_is_defined_in_semconv_with_the_same_value() -> None:
    copied = public_names()
    assert len(copied) == 71
    drift = {k: (v, getattr(semconv, k, None)) for k, v in copied.items()}
    assert {k: pair for k, pair in drift.items() if pair[0] != pair[1]} == {}


def test_the_hook_names_are_distinct() -> None:
    values = list(public_names().values())
    assert len(values) == len(set(values))
