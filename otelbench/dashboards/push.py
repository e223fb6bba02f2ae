"""``otelbench dashboards push``: provision otelbench's Grafana datasources, folder and dashboards
through Grafana's HTTP API (grafana-client).

What it sends, in order (idempotent; run it again after regenerating the dashboards):

1. each datasource of :func:`datasource_models` (Prometheus, ClickHouse, Tempo), by its fixed
   UID: ``PUT /api/datasources/uid/<uid>`` when Grafana has it, else ``POST /api/datasources``;
2. the folder ``otelbench``: ``POST /api/folders`` unless ``GET /api/folders/otelbench`` finds it;
3. every ``*.json`` dashboard of the directory: ``POST /api/dashboards/db`` with
   ``overwrite: true`` into that folder.

The dashboards' queries name the datasources by these UIDs, so file provisioning
(``dashboards/provisioning``) and push give the same result. Their ClickHouse queries read
``otel_traces`` in the exporter's default Map schema; ``traces_schema="json"`` (``--traces-schema
json``) pushes them reading a table of its json mode instead (:func:`for_traces_schema`: the query
layer's relation, :func:`otelbench.query.clickhouse.traces_relation`, in place of each ``FROM
otel_traces``). Grafana runs the queries, so nothing here can tell which schema the table has.

Errors (translated once, here)::

    OtelbenchError
    ├── ConfigError        bad Grafana URL, missing dashboards directory, malformed dashboard JSON
    └── GrafanaPushError   Grafana unreachable, or it refused a request (status and message)

Example::

    push_dashboards(PushConfig(grafana_url="http://grafana:3000", token="glsa_..."))
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NotRequired, TypedDict
from urllib.parse import urlsplit

from otelbench.dashboards import names
from otelbench.errors import ConfigError, OtelbenchError
from otelbench.model.jsonvalue import JsonObject, JsonValue

__all__ = [
    "DEFAULT_DASHBOARDS_DIR",
    "Datasource",
    "GrafanaPushError",
    "PushConfig",
    "PushResult",
    "datasource_models",
    "for_traces_schema",
    "push_dashboards",
]

DEFAULT_DASHBOARDS_DIR: Final = Path("dashboards/json")


class GrafanaPushError(OtelbenchError):
    """Grafana could not be reached, or refused one of the provisioning requests."""


class Datasource(TypedDict):
    """A Grafana datasource, as Grafana's HTTP API (``POST /api/datasources``) and its
    provisioning files take it; ``jsonData`` holds the plugin's own settings."""

    name: str
    type: str
    uid: str
    access: str
    url: NotRequired[str]
    isDefault: bool
    jsonData: JsonObject
    editable: NotRequired[bool]
    """Provisioning files only: whether the datasource may be edited in Grafana's UI."""
    secureJsonData: NotRequired[dict[str, str]]
    """Provisioning files only: the plugin's secrets."""


@dataclass(frozen=True)
class PushConfig:
    """Where Grafana is, how to authenticate, what to push and where the datasources point."""

    grafana_url: str
    token: str
    dashboards_dir: Path = DEFAULT_DASHBOARDS_DIR
    prometheus_url: str = "http://prometheus:9090"
    clickhouse_host: str = "clickhouse"
    clickhouse_port: int = 9000
    clickhouse_database: str = "otel"
    clickhouse_username: str = "default"
    tempo_url: str = "http://tempo:3200"
    datasources: bool = True
    timeout_s: float = 10.0
    traces_schema: str = "map"

    def __post_init__(self) -> None:
        from otelbench.store.clickhouse import TRACES_SCHEMAS

        if self.traces_schema not in TRACES_SCHEMAS:
            known = "; ".join(f"{name}: {what}" for name, what in TRACES_SCHEMAS.items())
            raise ConfigError(f"--traces-schema {self.traces_schema!r} is not one of {known}")
        parts = urlsplit(self.grafana_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"--grafana {self.grafana_url!r} is not an http(s) URL; "
                "give e.g. http://grafana:3000"
            )
        if not self.token:
            raise ConfigError("--token is empty; give a Grafana service-account token")


@dataclass(frozen=True)
class PushResult:
    """What was provisioned: datasource UIDs (created or updated), the folder, dashboard UIDs."""

    datasources_created: tuple[str, ...]
    datasources_updated: tuple[str, ...]
    folder_created: bool
    dashboards: tuple[str, ...]


def datasource_models(
    *,
    prometheus_url: str,
    clickhouse_host: str,
    clickhouse_port: int,
    clickhouse_database: str,
    clickhouse_username: str,
    tempo_url: str,
) -> list[Datasource]:
    """The three datasources, as Grafana's API and provisioning files take them."""
    return [
        {
            "name": "otelbench Prometheus",
            "type": names.PLUGIN_PROMETHEUS,
            "uid": names.DATASOURCE_PROMETHEUS,
            "access": "proxy",
            "url": prometheus_url,
            "isDefault": False,
            "jsonData": {"timeInterval": "15s"},
        },
        {
            "name": "otelbench ClickHouse",
            "type": names.PLUGIN_CLICKHOUSE,
            "uid": names.DATASOURCE_CLICKHOUSE,
            "access": "proxy",
            "isDefault": False,
            "jsonData": {
                "host": clickhouse_host,
                "port": clickhouse_port,
                "protocol": "native",
                "defaultDatabase": clickhouse_database,
                "username": clickhouse_username,
                "traces": {
                    "defaultDatabase": clickhouse_database,
                    "defaultTable": "otel_traces",
                    "otelEnabled": True,
                },
            },
        },
        {
            "name": "otelbench Tempo",
            "type": names.PLUGIN_TEMPO,
            "uid": names.DATASOURCE_TEMPO,
            "access": "proxy",
            "url": tempo_url,
            "isDefault": False,
            "jsonData": {},
        },
    ]


def _load_dashboards(directory: Path) -> list[JsonObject]:
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise ConfigError(
            f"no dashboard JSON in {directory}; run from the repository root or pass "
            "--dashboards-dir (regenerate with python -m otelbench.dashboards.build)"
        )
    out = []
    for path in paths:
        try:
            model = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ConfigError(f"cannot read dashboard {path}: {err}") from err
        if not isinstance(model, dict) or not model.get("uid"):
            raise ConfigError(f"{path} is not a dashboard model with a uid")
        out.append(model)
    return out


def for_traces_schema(model: JsonObject, schema: str) -> JsonObject:
    """``model`` (a dashboard's JSON) with every ClickHouse query (``rawSql``) reading
    ``otel_traces`` of ``schema`` (a key of ``TRACES_SCHEMAS``): unchanged for ``map``."""
    from otelbench.query.clickhouse import traces_relation
    from otelbench.query.extract import read_traces_from

    relation = traces_relation(schema)
    if relation is None:
        return model

    def walk(value: JsonValue) -> JsonValue:
        if isinstance(value, dict):
            return {
                k: read_traces_from(v, relation)
                if k == "rawSql" and isinstance(v, str)
                else walk(v)
                for k, v in value.items()
            }
        return [walk(v) for v in value] if isinstance(value, list) else value

    walked = walk(model)
    assert isinstance(walked, dict)  # an object walks to an object
    return walked


def _status(err: BaseException) -> int | None:
    status = getattr(err, "status_code", None)
    return status if isinstance(status, int) else None


def push_dashboards(config: PushConfig) -> PushResult:
    """Provision the datasources, the folder and the dashboards (see the module docstring)."""
    from grafana_client.api import GrafanaApi
    from grafana_client.client import GrafanaClientError, GrafanaException

    dashboards = [
        for_traces_schema(m, config.traces_schema) for m in _load_dashboards(config.dashboards_dir)
    ]
    api = GrafanaApi.from_url(config.grafana_url, credential=config.token, timeout=config.timeout_s)
    created: list[str] = []
    updated: list[str] = []
    folder_created = False
    step = "connect"
    try:
        if config.datasources:
            for datasource in datasource_models(
                prometheus_url=config.prometheus_url,
                clickhouse_host=config.clickhouse_host,
                clickhouse_port=config.clickhouse_port,
                clickhouse_database=config.clickhouse_database,
                clickhouse_username=config.clickhouse_username,
                tempo_url=config.tempo_url,
            ):
                uid = datasource["uid"]
                step = f"datasource {uid}"
                try:
                    api.datasource.get_datasource_by_uid(uid)
                except GrafanaClientError as err:
                    if _status(err) != 404:
                        raise
                    api.datasource.create_datasource(datasource)
                    created.append(uid)
                else:
                    api.datasource.update_datasource_by_uid(uid, datasource)
                    updated.append(uid)
        step = f"folder {names.FOLDER_UID}"
        try:
            api.folder.get_folder(names.FOLDER_UID)
        except GrafanaClientError as err:
            if _status(err) != 404:
                raise
            api.folder.create_folder(names.FOLDER_TITLE, uid=names.FOLDER_UID)
            folder_created = True
        for model in dashboards:
            step = f"dashboard {model['uid']}"
            api.dashboard.update_dashboard(
                {
                    "dashboard": {**model, "id": None},
                    "folderUid": names.FOLDER_UID,
                    "overwrite": True,
                    "message": "otelbench dashboards push",
                }
            )
    except GrafanaException as err:
        status = _status(err)
        what = f"HTTP {status}" if status is not None else "error"
        raise GrafanaPushError(
            f"Grafana at {config.grafana_url} refused {step}: {what}: {err}".splitlines()[0]
        ) from err
    except OSError as err:  # connection refused, DNS, timeout (niquests' errors are OSErrors)
        raise GrafanaPushError(
            f"cannot reach Grafana at {config.grafana_url} ({step}): {err}".splitlines()[0]
        ) from err
    return PushResult(
        datasources_created=tuple(created),
        datasources_updated=tuple(updated),
        folder_created=folder_created,
        dashboards=tuple(str(m["uid"]) for m in dashboards),
    )
