"""``otelbench.documents.read_document``: YAML or JSON by the ending, one error per bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from otelbench.documents import read_document
from otelbench.errors import ConfigError


def test_json_and_yaml_by_the_ending_with_the_bytes(tmp_path: Path) -> None:
    as_json = tmp_path / "a.JSON"
    as_json.write_bytes(b'{"x": [1, 2]}')
    as_yaml = tmp_path / "a.yml"
    as_yaml.write_bytes(b"x: [1, 2]\n")
    assert read_document(as_json, "file") == ({"x": [1, 2]}, b'{"x": [1, 2]}')
    assert read_document(as_yaml, "file") == ({"x": [1, 2]}, b"x: [1, 2]\n")
    empty = tmp_path / "empty.yaml"
    empty.write_bytes(b"")
    assert read_document(empty, "file") == (None, b"")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("w.json", b'{"input": ', "w.json: not valid JSON: line 1, column 11: Expecting value"),
        ("w.yaml", b"input: {a: [\n", "w.yaml: not valid YAML: line 2, column 1: "),
        ("w.yaml", "x: é".encode("latin-1"), "w.yaml: not UTF-8 text"),
        ("w.json", b"[" * 100_000, "w.json: not valid JSON: nested too deeply"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        read_document(path, "workload file")
    assert str(info.value).startswith(f"{tmp_path}/{message}")
    assert "\n" not in str(info.value)


def test_an_unreadable_file_names_what_it_is_under_the_label(tmp_path: Path) -> None:
    missing = tmp_path / "sut.yaml"
    with pytest.raises(ConfigError) as info:
        read_document(missing, "it", f"--sut-config {missing}")
    assert str(info.value) == f"--sut-config {missing}: cannot read it: No such file or directory"
