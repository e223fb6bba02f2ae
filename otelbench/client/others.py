"""Other instrumentations of the ``openai`` SDK in the same process, and what then doubles.

otelbench times the HTTP request under the SDK; the OpenTelemetry GenAI instrumentation
(``opentelemetry-instrumentation-genai-openai``, and the older ``openai-v2``) and OpenLLMetry
(``opentelemetry-instrumentation-openai``, Traceloop) wrap the SDK's ``create`` methods. With
both on, each call gets two CLIENT spans (theirs around the SDK call, otelbench's for each HTTP
request beneath it, its child) and two sets of GenAI client metrics for the same call (under the
same names where both record one version of the conventions: genai-openai 1.3b0 and OpenLLMetry
0.62 record the v1.41.0 names, as otelbench does with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_legacy``). :func:`active_openai_instrumentations` finds
them (without importing anything that is not imported yet); the transports log one warning per
process naming them and the way out: ``signals="spans"`` (otelbench keeps its span with the chunk
timing, the other instrumentation the metrics), or ``signals="metrics"``, or the other's metrics
off.

``signals`` (argument, else ``OTELBENCH_CLIENT_SIGNALS``, else ``all``): ``all``, ``spans`` (no
metrics from otelbench) or ``metrics`` (no spans from otelbench: no ``traceparent`` either, so a
traced server's span then joins the other instrumentation's span, if any).

Example::

    from otelbench.client.others import active_openai_instrumentations
    active_openai_instrumentations()   # e.g. ['opentelemetry-instrumentation-genai-openai']
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Final, Literal, get_args

from otelbench import semconv

__all__ = [
    "KNOWN_INSTRUMENTATIONS",
    "SIGNALS",
    "Signals",
    "active_openai_instrumentations",
    "resolve_signals",
    "warn_once_if_doubled",
]

_logger = logging.getLogger("otelbench.client")

Signals = Literal["all", "spans", "metrics"]
SIGNALS: Final[tuple[str, ...]] = get_args(Signals)

KNOWN_INSTRUMENTATIONS: Final = {
    "opentelemetry.instrumentation.genai.openai": "opentelemetry-instrumentation-genai-openai",
    "opentelemetry.instrumentation.openai_v2": "opentelemetry-instrumentation-openai-v2",
    "opentelemetry.instrumentation.openai": "opentelemetry-instrumentation-openai (OpenLLMetry)",
}
"""Module of each known instrumentation of the SDK → its distribution's name."""

_warned: set[tuple[str, ...]] = set()


def resolve_signals(signals: str | None) -> Signals:
    """The argument, else ``OTELBENCH_CLIENT_SIGNALS``, else ``all``; anything else is a
    ``ValueError`` that lists the choices."""
    value = signals if signals is not None else os.environ.get(semconv.ENV_CLIENT_SIGNALS, "all")
    value = value.strip().lower()
    if value not in SIGNALS:
        raise ValueError(
            f"otelbench: signals must be one of {', '.join(SIGNALS)}, got {value!r} "
            f"(argument or {semconv.ENV_CLIENT_SIGNALS})"
        )
    return value  # type: ignore[return-value]


def active_openai_instrumentations() -> list[str]:
    """The instrumentations of the ``openai`` SDK active in this process (distribution names);
    an unnamed one when the SDK's chat ``create`` is wrapped (``wrapt``, as instrumentations
    do) by something else."""
    found = []
    for module, label in KNOWN_INSTRUMENTATIONS.items():
        mod = sys.modules.get(module)
        cls = getattr(mod, "OpenAIInstrumentor", None) if mod is not None else None
        instance = getattr(cls, "_instance", None)
        if instance is not None and getattr(instance, "is_instrumented_by_opentelemetry", False):
            found.append(label)
    if not found:
        completions = sys.modules.get("openai.resources.chat.completions")
        create = getattr(getattr(completions, "Completions", None), "create", None)
        if create is not None and type(create).__module__.split(".")[0] == "wrapt":
            found.append("an instrumentation of openai (the SDK's create is wrapped)")
    return found


def warn_once_if_doubled(signals: Signals) -> None:
    """Log one warning per process (and set of instrumentations) saying what doubles."""
    if signals != "all":
        return  # the user chose already
    found = tuple(active_openai_instrumentations())
    if not found or found in _warned:
        return
    _warned.add(found)
    _logger.warning(
        "otelbench: %s also instruments the openai SDK: each call gets two CLIENT spans (theirs "
        "around the SDK call, otelbench's under it) and is measured by two sets of GenAI client "
        "metrics (under the same names where both record one version of the conventions); pass "
        "signals='spans' to otelbench (or set %s=spans) to keep otelbench's chunk timing and "
        "leave the metrics to it, or signals='metrics' to keep otelbench's metrics only",
        " and ".join(found),
        semconv.ENV_CLIENT_SIGNALS,
    )
