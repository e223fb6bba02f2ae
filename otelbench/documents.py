"""YAML and JSON files read into Python values, with one clear error per bad file.

The configuration files otelbench reads — the guardrail configuration (draft 4.8.1), custom
workloads (4.3) and the SUT description (``--sut-config``, 5.1.5.1) — are read here: JSON for a
``.json`` file, YAML (``yaml.safe_load``) for any other. A file that cannot be read, is not
UTF-8 text or does not parse is one :class:`~otelbench.errors.ConfigError` of the form
``"<label>: <what is wrong>"`` (``workload.yaml: not valid YAML: line 2, column 1: …``); what
the value must look like is the caller's to check.

Example::

    data, raw = read_document(Path("workload.yaml"), "workload file")
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from otelbench.errors import ConfigError

__all__ = ["read_document"]


def read_document(path: Path, what: str, label: str | None = None) -> tuple[Any, bytes]:
    """The parsed document of the file at ``path`` (JSON for ``.json``, else YAML) and the file's
    bytes. ``what`` names the file in the error when it cannot be read (``cannot read workload
    file: …``); ``label`` starts every error's message (default: the path)."""
    label = str(path) if label is None else label
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{label}: cannot read {what}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{label}: not UTF-8 text") from None
    parse = _json if path.suffix.lower() == ".json" else _yaml
    return parse(text, label), raw


def _json(text: str, label: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}"
        raise ConfigError(f"{label}: not valid JSON: {at}: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{label}: not valid JSON: nested too deeply") from None


def _yaml(text: str, label: str) -> Any:
    # PyYAML has no inline types and types-PyYAML is not a dependency: import dynamically.
    yaml = importlib.import_module("yaml")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise ConfigError(f"{label}: not valid YAML: {at}{problem}") from None
    except RecursionError:
        raise ConfigError(f"{label}: not valid YAML: nested too deeply") from None
