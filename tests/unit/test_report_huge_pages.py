"""The reports are computed with numpy's huge-page advice off, and the caller's setting is
restored after (``otelbench.benchmark._without_huge_pages``; the system time it saves is measured
by ``bench/report_scale.py``)."""

from __future__ import annotations

import pytest

from otelbench.benchmark import _without_huge_pages, huge_page_switch

_switch = huge_page_switch()
assert _switch is not None
_set_madvise_hugepage = _switch


def _current() -> bool:
    previous = _set_madvise_hugepage(True)
    _set_madvise_hugepage(previous)
    return bool(previous)


@pytest.mark.parametrize("outside", [True, False])
def test_huge_pages_are_off_inside_and_restored_after(outside: bool) -> None:
    original = _set_madvise_hugepage(outside)
    try:
        with _without_huge_pages():
            assert _current() is False
        assert _current() is outside
        with pytest.raises(RuntimeError), _without_huge_pages():
            raise RuntimeError("a report that fails")
        assert _current() is outside
    finally:
        _set_madvise_hugepage(original)
