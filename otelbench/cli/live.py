"""``otelbench watch`` and ``otelbench probe``: the typer commands (registered in
:mod:`otelbench.cli`). Thin: they parse options and call :mod:`otelbench.live.watch` and
:mod:`otelbench.live.probe`, imported when the command runs.

Example::

    otelbench watch --store live.duckdb --otlp 127.0.0.1:4318 --window 5m \\
        --slo-ttft-ms 500 --slo-tpot-ms 50 --retention 24h
    otelbench watch --store clickhouse://reader:secret@ch:8123/otel --window 5m
    otelbench probe --target http://127.0.0.1:8000 --model m --rate 0.2 \\
        --otlp-endpoint http://127.0.0.1:4318
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from otelbench import semconv
from otelbench.errors import ConfigError
from otelbench.live.options import DEFAULT_LISTEN, parse_duration, parse_hostport

__all__ = ["probe", "watch"]


def watch(
    store: Annotated[
        str,
        typer.Option(
            help="The span store: a DuckDB file (read; with --otlp, written), or a ClickHouse "
            "store to read: chdb:///abs/dir or clickhouse://user:password@host:8123/otel."
        ),
    ],
    listen: Annotated[
        str, typer.Option(help="HOST:PORT of the Prometheus /metrics endpoint.")
    ] = DEFAULT_LISTEN,
    otlp: Annotated[
        str | None,
        typer.Option(
            help="HOST:PORT: also run the OTLP/HTTP receiver writing --store (the engine hooks "
            "and probes export there). Without it the store is opened read-only per refresh, "
            "which fails while another process writes it."
        ),
    ] = None,
    window: Annotated[str, typer.Option(help="Sliding window, e.g. 60s, 5m, 1h.")] = "5m",
    interval: Annotated[str, typer.Option(help="How often to recompute.")] = "5s",
    class_attribute: Annotated[
        str,
        typer.Option(
            help="Attribute naming a request's tenant or class, for Jain's index (looked up "
            "on the server span, its resource, then its client span)."
        ),
    ] = semconv.REQUEST_CLASS,
    slo_ttft_ms: Annotated[float | None, typer.Option(help="TTFT SLO, ms.")] = None,
    slo_tpot_ms: Annotated[float | None, typer.Option(help="TPOT SLO, ms.")] = None,
    prefill_deadline_ms: Annotated[
        float, typer.Option(help="Etalon prefill deadline D_p of the fluidity-index, ms.")
    ] = 1000.0,
    retention: Annotated[
        str | None,
        typer.Option(
            help="Delete spans older than this, e.g. 24h (a DuckDB store, with --otlp; a "
            "ClickHouse table expires spans with its TTL)."
        ),
    ] = None,
) -> None:
    """Compute the methodology's metrics over sliding windows of live traffic, continuously,
    and serve them on a Prometheus /metrics endpoint (probe traffic: source="probe")."""
    from otelbench.live.watch import WatchConfig, serve_watch
    from otelbench.live.window import WindowConfig
    from otelbench.query.extract import is_store_url

    try:
        window_config = WindowConfig(
            window_s=parse_duration(window),
            slo_ttft_s=slo_ttft_ms / 1000.0 if slo_ttft_ms is not None else None,
            slo_tpot_s=slo_tpot_ms / 1000.0 if slo_tpot_ms is not None else None,
            prefill_deadline_s=prefill_deadline_ms / 1000.0,
            class_attribute=class_attribute,
        )
    except ValueError as err:
        raise ConfigError(str(err)) from err
    config = WatchConfig(
        window=window_config,
        interval_s=parse_duration(interval),
        retention_s=parse_duration(retention) if retention is not None else None,
    )
    if config.retention_s is not None and otlp is None and not is_store_url(store):
        raise ConfigError("--retention deletes spans, which needs the store's writer: add --otlp")
    serve_watch(
        store if is_store_url(store) else Path(store),
        config,
        listen=parse_hostport(listen),
        otlp=parse_hostport(otlp) if otlp is not None else None,
    )


def probe(
    target: Annotated[str, typer.Option(help="Base URL of the OpenAI-compatible server.")],
    model: Annotated[str, typer.Option(help="Model name to request.")],
    rate: Annotated[float, typer.Option(help="Probe requests per second (keep it low).")] = 0.2,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            envvar=semconv.ENV_OTLP_ENDPOINT,
            help="OTLP/HTTP endpoint for the probe's spans (where otelbench watch --otlp listens).",
        ),
    ] = None,
    stream: Annotated[str, typer.Option(help="Name of this probe stream (its tag).")] = "probe",
    segment: Annotated[
        str, typer.Option(help="Length of one probe run (one run span), e.g. 5m.")
    ] = "5m",
    duration: Annotated[
        str | None, typer.Option(help="Stop after this long (default: until interrupted).")
    ] = None,
    workload: Annotated[str, typer.Option(help="Workload name (draft Appendix A).")] = (
        "synthetic-uniform"
    ),
    workload_param: Annotated[
        list[str] | None, typer.Option(help="KEY=VALUE workload parameter (repeatable).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the first segment.")] = 42,
    ignore_eos: Annotated[
        bool, typer.Option(help="Ask the server to ignore EOS (fixed output lengths).")
    ] = False,
    spool_dir: Annotated[
        Path | None,
        typer.Option(
            help="Keep the probe's spans here while the collector is unreachable and send them "
            "when it returns (also those a stopped probe left); default: no spool."
        ),
    ] = None,
    flush_timeout: Annotated[
        str,
        typer.Option(
            help="At the end, wait this long for the collector to take the probe's spans "
            "(the spool's too); what it has not taken by then stays in the spool (--spool-dir) "
            "or is lost, and the probe says so.",
        ),
    ] = "30s",
) -> None:
    """Send a low-rate, tagged benchmark stream beside live traffic (watch: source="probe")."""
    import asyncio

    from otelbench.cli.options import workload_params
    from otelbench.live.probe import ProbeConfig, ProbeTagger, run_probe
    from otelbench.loadgen.share import steady_heap
    from otelbench.spool import SpoolStats
    from otelbench.telemetry import make_tracer_provider, shutdown

    if otlp_endpoint is None:
        raise ConfigError(
            f"--otlp-endpoint (or ${semconv.ENV_OTLP_ENDPOINT}) is needed: the probe's results "
            "are its spans"
        )
    config = ProbeConfig(
        target=target,
        model=model,
        rate=rate,
        stream=stream,
        segment_s=parse_duration(segment),
        duration_s=parse_duration(duration) if duration is not None else None,
        workload=workload,
        workload_params=workload_params(workload, workload_param, {}),
        seed=seed,
        ignore_eos=ignore_eos,
    )
    flush_ms = round(parse_duration(flush_timeout) * 1000)
    spool_stats = SpoolStats()
    steady_heap()  # a probe may send for days
    provider = make_tracer_provider(
        otlp_endpoint,
        service_name=semconv.SERVICE_PROBE,
        spool_dir=spool_dir,
        spool_stats=spool_stats,
    )
    provider.add_span_processor(ProbeTagger(stream))
    outcomes = []
    try:
        outcomes = asyncio.run(run_probe(config, tracer_provider=provider, keep_records=False))
    except KeyboardInterrupt:
        pass
    finally:
        shutdown(provider, flush_ms)
    sent = sum(o.tally.sent for o in outcomes)
    failed = sum(o.tally.failed.total() for o in outcomes)
    typer.echo(f"otelbench probe: {sent} requests in {len(outcomes)} segments, {failed} failed")
    if spool_dir is not None:
        counts = spool_stats.as_dict()
        typer.echo(
            f"otelbench probe: spans sent {counts['spans_sent']}, spooled {counts['spans_spooled']}"
            f", replayed {counts['spans_replayed']}, dropped {counts['spans_dropped']}, "
            f"refused {counts['spans_rejected']}"
        )
