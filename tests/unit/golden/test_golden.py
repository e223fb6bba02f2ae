"""The rendered reports are byte-identical to the committed digests (``expected.sha256``).

A refactoring of the report modules must not change one byte of ``report.json``, ``report.md``,
``report.html``, ``compare.json``/``.md`` or ``procedure.json``/``.md``/``.html``. To see what
changed, write the outputs of the code before and after with
``python -m tests.unit.golden.outputs DIR`` and ``diff -r`` them; refresh the digests only for an
intended change of the output: ``python -m tests.unit.golden.test_golden``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.unit.golden.outputs import generate

EXPECTED = Path(__file__).with_name("expected.sha256")


def digests(out: Path, tmp: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(generate(out, tmp))}


def read_expected() -> dict[str, str]:
    pairs = (line.split("  ", 1) for line in EXPECTED.read_text().splitlines() if line)
    return {name: digest for digest, name in pairs}


def test_outputs_are_byte_identical(tmp_path: Path) -> None:
    found = digests(tmp_path / "out", tmp_path)
    expected = read_expected()
    assert sorted(found) == sorted(expected)
    changed = [name for name in expected if found[name] != expected[name]]
    assert changed == []


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as t:
        found = digests(Path(t) / "out", Path(t))
    EXPECTED.write_text("".join(f"{d}  {n}\n" for n, d in sorted(found.items())))
