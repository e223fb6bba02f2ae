"""``otelbench dashboards push``: provision otelbench's Grafana datasources, folder and dashboards
(:func:`otelbench.dashboards.push.push_dashboards`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Final

import typer

from otelbench.dashboards import names
from otelbench.dashboards.push import DEFAULT_DASHBOARDS_DIR, PushConfig, push_dashboards

__all__ = ["dashboards_app", "dashboards_push"]


def dashboards_push(
    grafana: Annotated[str, typer.Option(help="Grafana's base URL, e.g. http://grafana:3000.")],
    token: Annotated[
        str,
        typer.Option(envvar="GRAFANA_TOKEN", help="Grafana service-account token (Editor)."),
    ],
    dashboards_dir: Annotated[
        Path, typer.Option(help="Directory of the dashboard JSON files.")
    ] = DEFAULT_DASHBOARDS_DIR,
    prometheus_url: Annotated[
        str, typer.Option(help="URL Grafana reaches Prometheus at.")
    ] = "http://prometheus:9090",
    clickhouse_host: Annotated[str, typer.Option(help="ClickHouse host (native protocol).")] = (
        "clickhouse"
    ),
    clickhouse_port: Annotated[int, typer.Option(help="ClickHouse native port.")] = 9000,
    clickhouse_database: Annotated[
        str, typer.Option(help="Database holding otel_traces.")
    ] = "otel",
    tempo_url: Annotated[str, typer.Option(help="URL Grafana reaches Tempo at.")] = (
        "http://tempo:3200"
    ),
    datasources: Annotated[
        bool, typer.Option(help="Also create or update the three datasources.")
    ] = True,
    traces_schema: Annotated[
        str,
        typer.Option(
            help="The schema of otel_traces: map (the ClickHouse exporter's default) or json "
            "(its json mode: JSON attribute columns)."
        ),
    ] = "map",
) -> None:
    """Provision otelbench's datasources, folder and dashboards into Grafana (HTTP API).

    Example: ``otelbench dashboards push --grafana http://grafana:3000 --token $TOKEN``
    """
    result = push_dashboards(
        PushConfig(
            grafana_url=grafana,
            token=token,
            dashboards_dir=dashboards_dir,
            prometheus_url=prometheus_url,
            clickhouse_host=clickhouse_host,
            clickhouse_port=clickhouse_port,
            clickhouse_database=clickhouse_database,
            tempo_url=tempo_url,
            datasources=datasources,
            traces_schema=traces_schema,
        )
    )
    typer.echo(
        f"pushed {len(result.dashboards)} dashboards ({', '.join(result.dashboards)}) into "
        f"folder {names.FOLDER_UID!r}; datasources created: "
        f"{', '.join(result.datasources_created) or '-'}, updated: "
        f"{', '.join(result.datasources_updated) or '-'}"
    )


dashboards_app: Final = typer.Typer(
    help="Grafana dashboards: provision them.", no_args_is_help=True
)
dashboards_app.command("push")(dashboards_push)
