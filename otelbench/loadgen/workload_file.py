"""Custom workloads from a YAML or JSON file, with draft 4.3.1's parameters.

4.3 lets testers use custom workloads if they specify them fully; this file format is that
specification, and :func:`load_workload_file` turns it into a :class:`ParametricWorkload`
(whose ``spec()`` is the report's). Every field is checked before anything is generated; the
first problem raises one :class:`ConfigError` naming the file and the field, e.g.
``workload.yaml: input.distribution: unknown 'gauss'; known: empirical, fixed, lognormal,
normal, uniform``.

Format (YAML shown; the same keys in a ``.json`` file)::

    name: my-chat              # optional; default "file:<file stem>"
    description: free text     # optional
    seed: 7                    # optional; an explicit seed argument beats it; default 42
    vocab_size: 1024           # optional; an explicit argument beats it; default 100256
    domain: conversation       # optional content characteristics (4.3.1)
    language: English
    temperature: 0.0           # default 0.0
    input:  {distribution: lognormal, mu: 5.5, sigma: 1.0, min: 32, max: 4096}
    output: {distribution: uniform, min: 64, max: 256, control: max_tokens}
    system_prompt: {tokens: 200, share: 0.5}          # optional; share defaults to 1
    prefix_sharing:                                   # optional
      ratio: 0.8                                      # share of requests with a shared context
      prefixes: 10                                    # how many distinct contexts
      length: {distribution: uniform, min: 512, max: 1024}
      zipf_s: 1.5                                     # default 0 (uniform over contexts)
    classes:                                          # optional (draft 5.6); ratios sum to 1
      - {name: short, ratio: 0.8, input: {distribution: uniform, min: 64, max: 256}}
      - {name: long, ratio: 0.2, input: {distribution: fixed, value: 2048}, temperature: 0.7}

Distributions: ``fixed`` (``value``), ``uniform`` (``min``, ``max``), ``normal`` (``mean``,
``std``, optional ``min``/``max``), ``lognormal`` (``mu``, ``sigma``, optional ``min``/``max``)
and ``empirical`` (``values``, optional ``weights``). A class without ``input``, ``output`` or
``temperature`` takes the top-level one. Output is controlled by ``max_tokens`` only (prompts
are random ids, so a stop sequence means nothing). Unknown keys are errors (typos are caught).

Example::

    wl = load_workload_file("workload.yaml", seed=7, vocab_size=1024)
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from pathlib import Path

from otelbench.documents import read_document
from otelbench.errors import ConfigError
from otelbench.loadgen.workloads import (
    A1_VOCAB_SIZE,
    LENGTH_DISTRIBUTIONS,
    LengthDistribution,
    ParametricWorkload,
    PrefixSharing,
    RequestClass,
    SystemPrompt,
)
from otelbench.model.jsonvalue import JsonObject, JsonValue
from otelbench.model.report import WorkloadContent

__all__ = ["load_workload_file"]


class _Bad(Exception):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")


_TOP = {
    "name",
    "description",
    "seed",
    "vocab_size",
    "domain",
    "language",
    "temperature",
    "input",
    "output",
    "system_prompt",
    "prefix_sharing",
    "classes",
}

# distribution -> {parameter: (kind, required)}; kind is "int", "number", "ints" or "numbers"
_PARAMS: dict[str, dict[str, tuple[str, bool]]] = {
    "empirical": {"values": ("ints", True), "weights": ("numbers", False)},
    "fixed": {"value": ("int", True)},
    "lognormal": {
        "mu": ("number", True),
        "sigma": ("number", True),
        "min": ("int", False),
        "max": ("int", False),
    },
    "normal": {
        "mean": ("number", True),
        "std": ("number", True),
        "min": ("int", False),
        "max": ("int", False),
    },
    "uniform": {"min": ("int", True), "max": ("int", True)},
}


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _object(value: JsonValue, where: str) -> JsonObject:
    """``value`` as a mapping with string keys. The document is JSON or YAML (whose other
    scalars, e.g. dates, fail every check below as a wrong type)."""
    if not isinstance(value, dict):
        raise _Bad(where, f"expected a mapping, got {_type_name(value)}")
    for key in value:
        if not isinstance(key, str):
            raise _Bad(where, f"keys must be strings, got {key!r}")
    return value


def _keys(d: JsonObject, where: str, allowed: set[str], required: tuple[str, ...]) -> None:
    prefix = f"{where}." if where else ""
    for key in d:
        if key not in allowed:
            raise _Bad(f"{prefix}{key}", f"unknown field; known: {', '.join(sorted(allowed))}")
    for key in required:
        if key not in d:
            raise _Bad(f"{prefix}{key}", "missing")


def _int(value: JsonValue, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(where, f"expected an integer, got {value!r}")
    return value


def _number(value: JsonValue, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Bad(where, f"expected a number, got {value!r}")
    return float(value)


def _str(value: JsonValue, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _Bad(where, f"expected a non-empty string, got {value!r}")
    return value


def _fraction(value: JsonValue, where: str) -> float:
    x = _number(value, where)
    if not 0.0 <= x <= 1.0:
        raise _Bad(where, f"must be between 0 and 1, got {value!r}")
    return x


def _distribution(value: JsonValue, where: str, *, output: bool = False) -> LengthDistribution:
    d = _object(value, where)
    if "distribution" not in d:
        raise _Bad(f"{where}.distribution", f"missing; known: {', '.join(sorted(_PARAMS))}")
    kind = d["distribution"]
    if not isinstance(kind, str) or kind not in _PARAMS:
        raise _Bad(
            f"{where}.distribution", f"unknown {kind!r}; known: {', '.join(sorted(_PARAMS))}"
        )
    schema = _PARAMS[kind]
    allowed = {"distribution", *schema} | ({"control"} if output else set())
    _keys(d, where, allowed, tuple(k for k, (_, req) in schema.items() if req))
    if output and "control" in d and d["control"] != "max_tokens":
        raise _Bad(f"{where}.control", f"only 'max_tokens' is supported, got {d['control']!r}")
    params: dict[str, int | float | tuple[int, ...] | tuple[float, ...]] = {}
    for key, (typ, _) in schema.items():
        if key not in d:
            continue
        at = f"{where}.{key}"
        value = d[key]
        if typ == "int":
            params[key] = _int(value, at)
        elif typ == "number":
            params[key] = _number(value, at)
        else:
            if not isinstance(value, list) or not value:
                raise _Bad(at, f"expected a non-empty list, got {value!r}")
            conv = _int if typ == "ints" else _number
            params[key] = tuple(conv(v, f"{at}[{i}]") for i, v in enumerate(value))
    # ``params`` has the names and types _PARAMS gives this kind, which the type checker cannot
    # tie to the class's fields: the class is called as a plain factory.
    factory: Callable[..., LengthDistribution] = LENGTH_DISTRIBUTIONS[kind]
    try:
        return factory(**params)
    except ConfigError as exc:
        raise _Bad(where, str(exc)) from None


def _build(
    data: JsonValue, stem: str, digest: str, path: str, seed: int | None, vocab_size: int | None
) -> ParametricWorkload:
    top = _object(data, "(top level)")
    has_classes = "classes" in top
    _keys(top, "", _TOP, () if has_classes else ("input", "output"))
    name = _str(top["name"], "name") if "name" in top else f"file:{stem}"
    temperature = _number(top.get("temperature", 0.0), "temperature")
    if temperature < 0:
        raise _Bad("temperature", f"must be >= 0, got {temperature}")
    inp = _distribution(top["input"], "input") if "input" in top else None
    out = _distribution(top["output"], "output", output=True) if "output" in top else None
    classes: list[RequestClass] = []
    if has_classes:
        raw = top["classes"]
        if not isinstance(raw, list) or not raw:
            raise _Bad("classes", "expected a non-empty list of request classes")
        seen: set[str] = set()
        for i, item in enumerate(raw):
            at = f"classes[{i}]"
            c = _object(item, at)
            _keys(c, at, {"name", "ratio", "input", "output", "temperature"}, ("name", "ratio"))
            cname = _str(c["name"], f"{at}.name")
            if cname in seen:
                raise _Bad(f"{at}.name", f"duplicate class name {cname!r}")
            seen.add(cname)
            ratio = _fraction(c["ratio"], f"{at}.ratio")
            cin = _distribution(c["input"], f"{at}.input") if "input" in c else inp
            cout = _distribution(c["output"], f"{at}.output", output=True) if "output" in c else out
            if cin is None:
                raise _Bad(f"{at}.input", "missing, and there is no top-level input")
            if cout is None:
                raise _Bad(f"{at}.output", "missing, and there is no top-level output")
            ctemp = _number(c.get("temperature", temperature), f"{at}.temperature")
            classes.append(RequestClass(cname, ratio, cin, cout, ctemp))
        total = sum(c.ratio for c in classes)
        if abs(total - 1.0) > 1e-6:
            raise _Bad("classes", f"ratios sum to {total:g}; they must sum to 1")
    else:
        assert inp is not None  # required keys were checked
        assert out is not None
        classes.append(RequestClass("default", 1.0, inp, out, temperature))
    system = None
    if "system_prompt" in top:
        sp = _object(top["system_prompt"], "system_prompt")
        _keys(sp, "system_prompt", {"tokens", "share"}, ("tokens",))
        tokens = _int(sp["tokens"], "system_prompt.tokens")
        if tokens < 1:
            raise _Bad("system_prompt.tokens", f"must be >= 1, got {tokens}")
        system = SystemPrompt(tokens, _fraction(sp.get("share", 1.0), "system_prompt.share"))
    sharing = None
    if "prefix_sharing" in top:
        ps = _object(top["prefix_sharing"], "prefix_sharing")
        _keys(
            ps,
            "prefix_sharing",
            {"ratio", "prefixes", "length", "zipf_s"},
            ("ratio", "prefixes", "length"),
        )
        count = _int(ps["prefixes"], "prefix_sharing.prefixes")
        if count < 1:
            raise _Bad("prefix_sharing.prefixes", f"must be >= 1, got {count}")
        zipf_s = _number(ps.get("zipf_s", 0.0), "prefix_sharing.zipf_s")
        if zipf_s < 0:
            raise _Bad("prefix_sharing.zipf_s", f"must be >= 0, got {zipf_s}")
        sharing = PrefixSharing(
            count,
            _distribution(ps["length"], "prefix_sharing.length"),
            _fraction(ps["ratio"], "prefix_sharing.ratio"),
            zipf_s,
        )
    if seed is None:
        seed = _int(top["seed"], "seed") if "seed" in top else 42
    if vocab_size is None:
        vocab_size = _int(top["vocab_size"], "vocab_size") if "vocab_size" in top else None
        if vocab_size is not None and vocab_size < 2:
            raise _Bad("vocab_size", f"must be >= 2, got {vocab_size}")
    content: WorkloadContent = {
        "domain": _str(top["domain"], "domain") if "domain" in top else None,
        "language": _str(top["language"], "language") if "language" in top else None,
    }
    description = _str(top["description"], "description") if "description" in top else None
    return ParametricWorkload(
        name=name,
        seed=seed,
        vocab_size=vocab_size if vocab_size is not None else A1_VOCAB_SIZE,
        classes=tuple(classes),
        draft_section="4.3 (custom workload)",
        system_prompt=system,
        prefix_sharing=sharing,
        content=content,
        source_file={"path": path, "sha256": digest},
        description=description,
    )


def load_workload_file(
    path: str | Path, *, seed: int | None = None, vocab_size: int | None = None
) -> ParametricWorkload:
    """The workload a YAML (``.yaml``/``.yml``) or JSON (``.json``) file describes.

    ``seed`` and ``vocab_size`` given here beat the file's. Any problem raises one
    :class:`ConfigError` of the form ``"<file>: <field>: <what is wrong>"``.

    Example::

        wl = load_workload_file("workload.yaml", vocab_size=1024)
        reqs = wl.requests(100)
    """
    file = Path(path)
    label = str(path)
    suffix = file.suffix.lower()
    if suffix not in (".yaml", ".yml", ".json"):
        raise ConfigError(f"{label}: unknown workload file type {suffix!r}; use .yaml, .yml, .json")
    data, raw = read_document(file, "workload file", label)
    digest = hashlib.sha256(raw).hexdigest()
    try:
        return _build(data, file.stem, digest, label, seed, vocab_size)
    except _Bad as exc:
        raise ConfigError(f"{label}: {exc}") from None
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc}") from None
