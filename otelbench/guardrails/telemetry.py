"""Tracer and meter providers for the guardrail middleware and the gateway, from the environment.

Inside vLLM's API server and in ``otelbench gateway`` there is no caller to hand providers in, so
they are built here: spans go by OTLP/HTTP (protobuf) to ``$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
(or ``$OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``) through a batch processor, whose export
thread is the only place an exporter failure can happen: it is logged by the SDK and never reaches
the request path. Metrics go to ``$OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` (or the generic endpoint
+ ``/v1/metrics``) when one is set. The resource carries the guardrail configuration (draft
4.8.1). With no endpoint set, no provider is built and the spans are non-recording.

Example::

    providers = Providers.from_env(config, service_name=semconv.SERVICE_GATEWAY)
    guardrails = Guardrails(config, tracer_provider=providers.tracer_provider)
    ...
    providers.shutdown()
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider
from opentelemetry.util.types import AttributeValue

from otelbench import __version__, semconv
from otelbench.guardrails.config import GuardrailConfig

__all__ = ["Providers", "metrics_endpoint", "traces_endpoint"]

_log = logging.getLogger(__name__)


def traces_endpoint(environ: Mapping[str, str] | None = None) -> str | None:
    """The OTLP/HTTP traces URL the environment names, or None."""
    env = os.environ if environ is None else environ
    url = env.get(semconv.ENV_OTLP_TRACES_ENDPOINT)
    if url:
        return url
    base = env.get(semconv.ENV_OTLP_ENDPOINT)
    return base.rstrip("/") + "/v1/traces" if base else None


def metrics_endpoint(environ: Mapping[str, str] | None = None) -> str | None:
    """The OTLP/HTTP metrics URL the environment names, or None."""
    env = os.environ if environ is None else environ
    url = env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    if url:
        return url
    base = env.get(semconv.ENV_OTLP_ENDPOINT)
    return base.rstrip("/") + "/v1/metrics" if base else None


@dataclass
class Providers:
    """The providers built from the environment (None where no endpoint is set)."""

    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None

    @classmethod
    def from_env(
        cls,
        config: GuardrailConfig,
        *,
        service_name: str,
        environ: Mapping[str, str] | None = None,
        extra_resource: Mapping[str, AttributeValue] | None = None,
    ) -> Providers:
        from opentelemetry.sdk.resources import Resource

        attrs: dict[str, AttributeValue] = {
            "service.name": service_name,
            "service.version": __version__,
        }
        attrs.update(config.resource_attributes())
        attrs.update(extra_resource or {})
        resource = Resource.create(attrs)
        out = cls()
        t_url = traces_endpoint(environ)
        if t_url:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            tp = SdkTracerProvider(resource=resource)
            tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=t_url)))
            out.tracer_provider = tp
        m_url = metrics_endpoint(environ)
        if m_url:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )
            from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

            reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=m_url))
            out.meter_provider = SdkMeterProvider(resource=resource, metric_readers=[reader])
        return out

    def shutdown(self) -> None:
        """Flush and stop both providers; never raises."""
        for provider in (self.tracer_provider, self.meter_provider):
            stop = getattr(provider, "shutdown", None)
            if stop is None:
                continue
            try:
                stop()
            except Exception:  # noqa: BLE001 - telemetry and filters never break the request path
                _log.warning("guardrail telemetry shutdown failed", exc_info=True)
