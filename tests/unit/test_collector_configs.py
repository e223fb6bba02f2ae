"""Static validation of the committed collector configurations (collectors/).

otelcol-contrib cannot run on this machine (no registry here ships a usable build:
shared/research/backends-feasibility.md §1b), so its two configurations are checked as far as
can be done without it: the YAML parses; every pipeline names defined components, of a type
that exists in the contrib distribution and supports the pipeline's signal; every defined
component is used; each component's keys are keys its config schema declares; durations parse
as Go durations; the agent's exporter reaches the gateway's receiver; the span-metric
dimensions and the ClickHouse table are otelbench's names; every exporter's sending queue is on
disk (a ``file_storage`` extension the service starts) and retries until delivered, and nothing
writes ClickHouse tables that nothing reads. What is NOT checked: that a real otelcol-contrib of
a given version accepts the files (``otelcol-contrib validate``), nested settings below the
levels listed here, and any behaviour (ClickHouse inserts, a queue surviving a restart,
Prometheus output). collectors/README.md says the same.

The keys each component accepts (``SCHEMA_KEYS``, ``NESTED_KEYS``) are read from the upstream
sources below; the deployment pins ``otel/opentelemetry-collector-contrib:0.120.0``, so a key is
listed only where the source read has it at that release or where it is older than it:

- ``file_storage`` extension: contrib ``extension/storage/filestorage/config.go`` (``Config``:
  ``directory``, ``timeout``, ``compaction``, ``fsync``, ``create_directory``,
  ``directory_permissions``; ``CompactionConfig``: ``on_start``, ``on_rebound``, ``directory``,
  ``rebound_needed_threshold_mib``, ``rebound_trigger_threshold_mib``, ``max_transaction_size``,
  ``check_interval``, ``cleanup_on_start``) and its README (contrib commit 081fcead);
  ``create_directory`` / ``directory_permissions`` came with contrib PR #34985 (merged
  2024-09, before v0.120.0); ``fsync`` and ``compaction`` are in the 2023 version (4f70196d).
- ``sending_queue``: collector ``exporter/exporterhelper`` ``QueueConfig`` as v0.120.0 has it
  (``enabled``, ``num_consumers``, ``queue_size``, ``blocking``, ``storage``; ``blocking`` is
  deprecated for ``block_on_overflow`` in v0.123.0 and ``sizer`` came after v0.120.0, so the
  table keeps the four keys valid in both); its README's "Persistent Queue" section:
  ``storage`` names a storage extension and there is then no in-memory queue, ``queue_size``
  bounds the batches on disk, and ``retry_on_failure.max_elapsed_time: 0`` never stops retrying.
- ``retry_on_failure``: collector ``config/configretry`` ``BackOffConfig``.
- ``health_check``: contrib ``extension/healthcheckextension/config.go`` (``confighttp`` server
  settings squashed in, ``path``, ``response_body``, ``check_collector_pipeline``).
- the others: the ``config.schema.yaml`` commits named at ``SCHEMA_KEYS``.

rotel's env file must carry the same settings as the Python launcher; that every ``ROTEL_*`` key
is one that ``rotel-agent start --help`` lists is checked against the real binary in
``tests/integration/test_config_binaries.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from otelbench import semconv
from otelbench.collector.receiver import DEFAULT_PORT
from otelbench.collector.rotel import RotelCollector

COLLECTORS = Path(__file__).resolve().parents[2] / "collectors"
OTELCOL = COLLECTORS / "otelcol"
CONFIGS = ("agent.yaml", "gateway.yaml")

# ---------------------------------------------------------------------------------------------
# What the contrib distribution has, and what each component accepts
# ---------------------------------------------------------------------------------------------
# Component *types* (the part of an id before "/"), per kind. Modules from the otelcol-contrib
# build manifest, opentelemetry-collector-releases distributions/otelcol-contrib/manifest.yaml
# (v0.86.0, commit e0ae49ccb0a385a3007590cd97d79215071eb89b); the type string of each is the
# `type:` of the module's metadata.yaml (e.g. memorylimiterprocessor → memory_limiter,
# healthcheckextension → health_check). Only the components these configs could reasonably use
# are listed; a typo or a component from outside contrib fails the test.
KNOWN: dict[str, set[str]] = {
    "receivers": {"otlp", "prometheus", "hostmetrics", "filelog", "jaeger", "zipkin", "kafka"},
    "processors": {
        "batch",
        "memory_limiter",
        "attributes",
        "filter",
        "k8sattributes",
        "resource",
        "resourcedetection",
        "tail_sampling",
        "probabilistic_sampler",
        "transform",
    },
    "exporters": {
        "otlp",
        "otlphttp",
        "debug",
        "clickhouse",
        "prometheus",
        "prometheusremotewrite",
        "kafka",
        "loadbalancing",
        "file",
    },
    "connectors": {"spanmetrics", "servicegraph", "count", "forward", "routing"},
    "extensions": {
        "health_check",
        "file_storage",
        "pprof",
        "zpages",
        "basicauth",
        "bearertokenauth",
    },
}

# Signals a component handles: as a receiver / exporter of a pipeline of that signal. From the
# "Supported pipeline types" table of each README (clickhouseexporter: traces, logs, metrics;
# prometheusexporter: metrics; spanmetricsconnector: traces → metrics).
SIGNALS_IN: dict[str, set[str]] = {
    "otlp": {"traces", "metrics", "logs"},
    "spanmetrics": {"metrics"},
}
SIGNALS_OUT: dict[str, set[str]] = {
    "otlp": {"traces", "metrics", "logs"},
    "clickhouse": {"traces", "metrics", "logs"},
    "prometheus": {"metrics"},
    "spanmetrics": {"traces"},
}

# Top-level keys each component's config schema declares (config.schema.yaml of the module;
# "timeout", "retry_on_failure" and "sending_queue" come from the exporterhelper / configretry
# blocks the schemas include):
#   clickhouse     contrib exporter/clickhouseexporter/config.schema.yaml (fff7223e)
#   spanmetrics    contrib connector/spanmetricsconnector/config.schema.yaml (52a2d83a)
#   prometheus     contrib exporter/prometheusexporter/config.schema.yaml (fc12527a)
#                  + confighttp.server_config ("endpoint", "tls", ...)
#   memory_limiter collector internal/memorylimiter/config.schema.yaml (efe96685)
#   batch          collector processor/batchprocessor/config.schema.yaml (7d3529f1)
#   otlp receiver  collector receiver/otlpreceiver/config.schema.yaml (1f4355e9)
#   otlp exporter  collector exporter/otlpexporter (configgrpc.client_config + exporterhelper)
_EXPORTER_HELPER = {"timeout", "retry_on_failure", "sending_queue"}
SCHEMA_KEYS: dict[tuple[str, str], set[str]] = {
    ("receivers", "otlp"): {"protocols"},
    ("processors", "memory_limiter"): {
        "check_interval",
        "limit_mib",
        "limit_percentage",
        "min_gc_interval_when_hard_limited",
        "min_gc_interval_when_soft_limited",
        "spike_limit_mib",
        "spike_limit_percentage",
    },
    ("processors", "batch"): {
        "metadata_cardinality_limit",
        "metadata_keys",
        "send_batch_max_size",
        "send_batch_size",
        "timeout",
    },
    ("exporters", "clickhouse"): {
        "async_insert",
        "cluster_name",
        "compress",
        "connection_params",
        "create_schema",
        "database",
        "endpoint",
        "logs_table_name",
        "metrics_table_name",
        "metrics_tables",
        "password",
        "table_engine",
        "tls",
        "traces_table_name",
        "ttl",
        "username",
        *_EXPORTER_HELPER,
    },
    ("exporters", "prometheus"): {
        "add_metric_suffixes",
        "const_labels",
        "enable_open_metrics",
        "metric_expiration",
        "namespace",
        "resource_to_telemetry_conversion",
        "send_timestamps",
        "translation_strategy",
        "without_scope_info",
        "endpoint",
        "tls",
        *_EXPORTER_HELPER,
    },
    ("exporters", "otlp"): {
        "endpoint",
        "tls",
        "compression",
        "headers",
        "keepalive",
        "balancer_name",
        "auth",
        "write_buffer_size",
        "read_buffer_size",
        *_EXPORTER_HELPER,
    },
    ("connectors", "spanmetrics"): {
        "add_resource_attributes",
        "aggregation_cardinality_limit",
        "aggregation_temporality",
        "calls_dimensions",
        "dimensions",
        "dimensions_cache_size",
        "events",
        "exclude_dimensions",
        "exemplars",
        "histogram",
        "include_instrumentation_scope",
        "metric_timestamp_cache_size",
        "metrics_expiration",
        "metrics_flush_interval",
        "namespace",
        "resource_metrics_cache_size",
        "resource_metrics_key_attributes",
    },
    ("extensions", "health_check"): {
        "endpoint",
        "path",
        "response_body",
        "check_collector_pipeline",
        "tls",
    },
    # contrib extension/storage/filestorage/config.go (module docstring)
    ("extensions", "file_storage"): {
        "directory",
        "timeout",
        "compaction",
        "fsync",
        "create_directory",
        "directory_permissions",
    },
}
NESTED_KEYS: dict[str, set[str]] = {
    # configretry.BackOffConfig
    "retry_on_failure": {
        "enabled",
        "initial_interval",
        "randomization_factor",
        "multiplier",
        "max_interval",
        "max_elapsed_time",
    },
    # spanmetricsconnector $defs
    "histogram": {"dimensions", "disable", "explicit", "exponential", "unit"},
    "explicit": {"buckets"},
    "dimension": {"name", "default"},
    "exemplars": {"enabled", "max_per_data_point"},
    # clickhouseexporter $defs.table_engine
    "table_engine": {"name", "params"},
    # exporterhelper QueueConfig at v0.120.0, less `blocking` (deprecated in v0.123.0)
    "sending_queue": {"enabled", "num_consumers", "queue_size", "storage"},
    # filestorage CompactionConfig
    "compaction": {
        "on_start",
        "on_rebound",
        "directory",
        "rebound_needed_threshold_mib",
        "rebound_trigger_threshold_mib",
        "max_transaction_size",
        "check_interval",
        "cleanup_on_start",
    },
}
# Exporters built on exporterhelper: their queue and retry settings are checked below.
QUEUED_EXPORTERS = {"otlp", "otlphttp", "clickhouse"}
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
DURATION_KEYS = {
    "check_interval",
    "timeout",
    "ttl",
    "initial_interval",
    "max_interval",
    "max_elapsed_time",
    "metrics_flush_interval",
    "metrics_expiration",
    "metric_expiration",
}
KINDS = ("receivers", "processors", "exporters", "connectors", "extensions")


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((OTELCOL / name).read_text())
    assert isinstance(doc, dict)
    return doc


def ctype(component_id: str) -> str:
    """``otlp/gateway`` → ``otlp``."""
    return component_id.split("/", 1)[0]


def port_of(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def duration_ms(text: str) -> float:
    units = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4, "h": 3.6e6}
    return sum(
        float(n) * units[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)", text)
    )


def walk(node: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every (dotted path, value) of a YAML tree."""
    if isinstance(node, dict):
        return [pair for k, v in node.items() for pair in walk(v, f"{path}.{k}" if path else k)]
    if isinstance(node, list):
        return [pair for i, v in enumerate(node) for pair in walk(v, f"{path}[{i}]")]
    return [(path, node)]


def nested_blocks_checked(node: Any) -> int:
    """Check the keys of every block named in NESTED_KEYS; returns how many were checked."""
    count = 0
    if isinstance(node, dict):
        for key, value in node.items():
            if key in NESTED_KEYS and isinstance(value, dict):
                assert set(value) <= NESTED_KEYS[key], f"{key}: {set(value) - NESTED_KEYS[key]}"
                count += 1
            if key == "dimensions" and isinstance(value, list):
                for dimension in value:
                    assert set(dimension) <= NESTED_KEYS["dimension"], dimension
                    count += 1
            count += nested_blocks_checked(value)
    elif isinstance(node, list):
        count += sum(nested_blocks_checked(v) for v in node)
    return count


# ---------------------------------------------------------------------------------------------
# otelcol-contrib: structure
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CONFIGS)
def test_every_pipeline_names_defined_components_that_exist_in_contrib(name: str) -> None:
    doc = load(name)
    for kind in KINDS:
        for component_id in doc.get(kind) or {}:
            assert ctype(component_id) in KNOWN[kind], f"{name}: unknown {kind} {component_id}"
    service = doc["service"]
    assert set(service["extensions"]) <= set(doc["extensions"])
    pipelines = service["pipelines"]
    assert pipelines
    for pipeline_id, pipeline in pipelines.items():
        signal = ctype(pipeline_id)
        assert signal in ("traces", "metrics", "logs"), pipeline_id
        assert set(pipeline) <= {"receivers", "processors", "exporters"}, pipeline_id
        assert pipeline["receivers"], pipeline_id
        assert pipeline["exporters"], pipeline_id
        for r in pipeline["receivers"]:
            defined_as = "connectors" if r in (doc.get("connectors") or {}) else "receivers"
            assert r in (doc.get(defined_as) or {}), f"{name}/{pipeline_id}: no receiver {r}"
            assert signal in SIGNALS_IN[ctype(r)], f"{r} cannot feed a {signal} pipeline"
        for p in pipeline.get("processors", []):
            assert p in doc["processors"], f"{name}/{pipeline_id}: no processor {p}"
        for e in pipeline["exporters"]:
            defined_as = "connectors" if e in (doc.get("connectors") or {}) else "exporters"
            assert e in (doc.get(defined_as) or {}), f"{name}/{pipeline_id}: no exporter {e}"
            assert signal in SIGNALS_OUT[ctype(e)], f"{e} cannot take a {signal} pipeline"


@pytest.mark.parametrize("name", CONFIGS)
def test_every_defined_component_is_used_and_connectors_on_both_ends(name: str) -> None:
    doc = load(name)
    pipelines = doc["service"]["pipelines"].values()
    used = {
        "receivers": {r for p in pipelines for r in p["receivers"]},
        "processors": {x for p in pipelines for x in p.get("processors", [])},
        "exporters": {e for p in pipelines for e in p["exporters"]},
    }
    for kind in ("receivers", "processors", "exporters"):
        assert set(doc[kind]) <= used[kind], f"{name}: {kind} defined but unused"
    for connector in doc.get("connectors") or {}:
        assert connector in used["exporters"], connector
        assert connector in used["receivers"], connector
    assert set(doc["extensions"]) == set(doc["service"]["extensions"])


@pytest.mark.parametrize("name", CONFIGS)
def test_memory_limiter_first_and_batch_last_in_every_processing_pipeline(name: str) -> None:
    """The collector's documented order: memory_limiter first (it refuses data before the
    pipeline grows), batch after it; a pipeline fed by a connector may skip processors."""
    for pipeline_id, pipeline in load(name)["service"]["pipelines"].items():
        processors = pipeline.get("processors", [])
        if "otlp" in pipeline["receivers"]:
            assert processors == ["memory_limiter", "batch"], pipeline_id


@pytest.mark.parametrize("name", CONFIGS)
def test_component_keys_are_in_their_schemas_and_durations_parse(name: str) -> None:
    doc = load(name)
    checked = 0
    for kind in KINDS:
        for component_id, config in (doc.get(kind) or {}).items():
            allowed = SCHEMA_KEYS[(kind, ctype(component_id))]
            unknown = set(config or {}) - allowed
            assert not unknown, f"{name}: {component_id} has keys not in its schema: {unknown}"
            checked += 1
    for path, value in walk(doc):
        leaf = path.rsplit(".", 1)[-1]
        if leaf in DURATION_KEYS:
            assert isinstance(value, str), f"{path}: {value!r}"
            assert GO_DURATION.match(value), f"{path}: {value!r}"
    assert nested_blocks_checked(doc) >= (12 if name == "gateway.yaml" else 3)
    assert checked >= 5


def queue_problems(doc: dict[str, Any]) -> list[str]:
    """Why an exporter of a collector config could lose a batch it accepted: a queue in memory
    (lost on restart), a storage id that names no started ``file_storage`` extension, retries
    that stop (``max_elapsed_time`` other than 0). Empty when every queued exporter is durable.
    Also used by tests/unit/test_deploy.py on the gateway merged with deploy's overlay."""
    extensions = doc.get("extensions") or {}
    started = set(doc["service"].get("extensions", []))
    problems = []
    for exporter_id, config in (doc.get("exporters") or {}).items():
        if ctype(exporter_id) not in QUEUED_EXPORTERS:
            continue
        queue = config.get("sending_queue") or {}
        retry = config.get("retry_on_failure") or {}
        storage = queue.get("storage")
        if queue.get("enabled") is not True:
            problems.append(f"{exporter_id}: no sending queue")
        if storage is None:
            problems.append(f"{exporter_id}: queue in memory (no sending_queue.storage)")
        elif ctype(storage) != "file_storage" or storage not in extensions:
            problems.append(f"{exporter_id}: storage {storage} is no file_storage extension")
        elif storage not in started:
            problems.append(f"{exporter_id}: storage {storage} not in service.extensions")
        if retry.get("enabled") is not True:
            problems.append(f"{exporter_id}: retry_on_failure off")
        elif duration_ms(str(retry.get("max_elapsed_time", "300s"))) != 0:
            problems.append(f"{exporter_id}: gives up after {retry.get('max_elapsed_time')}")
        if not int(queue.get("queue_size", 0)) > 0:
            problems.append(f"{exporter_id}: queue_size must bound the queue")
    return problems


@pytest.mark.parametrize("name", CONFIGS)
def test_every_sending_queue_is_on_disk_and_retries_until_delivered(name: str) -> None:
    """Nothing accepted is lost across a collector restart or a long outage downstream: each
    exporterhelper exporter queues in a started ``file_storage`` extension and retries with
    ``max_elapsed_time: 0`` (never stop); ``queue_size`` is then the only bound."""
    doc = load(name)
    assert queue_problems(doc) == []
    exporters = [e for e in doc["exporters"] if ctype(e) in QUEUED_EXPORTERS]
    assert exporters == (["otlp/gateway"] if name == "agent.yaml" else ["clickhouse"])
    # the check itself: the committed config with its queue back in memory fails it
    in_memory = load(name)
    for exporter in exporters:
        del in_memory["exporters"][exporter]["sending_queue"]["storage"]
        in_memory["exporters"][exporter]["retry_on_failure"]["max_elapsed_time"] = "300s"
    assert len(queue_problems(in_memory)) == 2 * len(exporters)


@pytest.mark.parametrize("name", CONFIGS)
def test_file_storage_keeps_its_files_in_one_absolute_directory(name: str) -> None:
    """The directory (and compaction's scratch directory) is one absolute path, the mount point
    deploy/ gives a volume; fsync on, so a batch the queue acknowledged is on disk."""
    doc = load(name)
    (storage_id,) = [e for e in doc["extensions"] if ctype(e) == "file_storage"]
    storage = doc["extensions"][storage_id]
    assert storage["directory"] == "/var/lib/otelcol/file_storage"
    assert storage["compaction"]["directory"] == storage["directory"]
    assert storage["fsync"] is True
    assert storage["compaction"]["on_rebound"] is True


def test_only_traces_reach_clickhouse() -> None:
    """The ClickHouse exporter writes otel_traces only: no pipeline of another signal feeds it
    (nothing reads the otel_metrics_* tables a metrics pipeline would fill)."""
    pipelines = load("gateway.yaml")["service"]["pipelines"]
    feeding = {p for p, pipeline in pipelines.items() if "clickhouse" in pipeline["exporters"]}
    assert feeding == {"traces"}
    assert pipelines["metrics"]["exporters"] == ["prometheus"]


def test_otlp_receivers_listen_on_the_standard_ports() -> None:
    for name in CONFIGS:
        protocols = load(name)["receivers"]["otlp"]["protocols"]
        assert port_of(protocols["grpc"]["endpoint"]) == 4317, name
        assert port_of(protocols["http"]["endpoint"]) == 4318, name


def test_agent_forwards_to_the_gateway_receiver() -> None:
    """The agent's exporter is gRPC OTLP (type ``otlp``) to the gateway's gRPC port, in
    plaintext exactly when the gateway's receiver has no TLS."""
    agent, gateway = load("agent.yaml"), load("gateway.yaml")
    forward = [e for e in agent["exporters"] if ctype(e) == "otlp"]
    assert forward == ["otlp/gateway"]
    exporter = agent["exporters"]["otlp/gateway"]
    host, port = exporter["endpoint"].rsplit(":", 1)
    grpc = gateway["receivers"]["otlp"]["protocols"]["grpc"]
    assert int(port) == port_of(grpc["endpoint"])
    assert host == "otel-gateway"  # the Service name collectors/README.md and deploy/ use
    assert exporter["tls"]["insecure"] is ("tls" not in grpc)
    for pipeline in agent["service"]["pipelines"].values():
        assert pipeline["exporters"] == ["otlp/gateway"]
    assert set(agent["service"]["pipelines"]) == {"traces", "metrics"}


def test_gateway_writes_otel_traces_with_the_exporters_own_schema() -> None:
    ch = load("gateway.yaml")["exporters"]["clickhouse"]
    assert ch["traces_table_name"] == semconv.TABLE_TRACES
    assert ch["create_schema"] is True
    assert re.match(r"^(tcp|clickhouse|http|https)://[^/:]+:\d+", ch["endpoint"])
    assert duration_ms(ch["ttl"]) == 7 * 24 * 3600 * 1000
    assert ch["table_engine"]["name"] in ("MergeTree", "ReplicatedMergeTree")
    # secrets come from the environment, never the file
    assert ch["password"] == "${env:CLICKHOUSE_PASSWORD}"
    assert ch["username"] == "${env:CLICKHOUSE_USER}"
    # ClickHouse's advice, quoted in the exporter's README: inserts of >= 1,000 rows
    assert load("gateway.yaml")["processors"]["batch"]["send_batch_size"] >= 1000


def test_span_metrics_reach_prometheus_with_otelbench_dimensions() -> None:
    gateway = load("gateway.yaml")
    pipelines = gateway["service"]["pipelines"]
    assert "spanmetrics" in pipelines["traces"]["exporters"]
    assert pipelines["metrics/spanmetrics"] == {
        "receivers": ["spanmetrics"],
        "exporters": ["prometheus"],
    }
    spanmetrics = gateway["connectors"]["spanmetrics"]
    names = {v for v in vars(semconv).values() if isinstance(v, str)}
    dimensions = [d["name"] for d in spanmetrics["dimensions"]]
    assert dimensions
    assert set(dimensions) <= names, set(dimensions) - names
    assert semconv.RUN_ID in dimensions
    buckets = [duration_ms(b) for b in spanmetrics["histogram"]["explicit"]["buckets"]]
    assert buckets == sorted(set(buckets))
    assert buckets[0] > 0
    ports = [
        port_of(gateway["exporters"]["prometheus"]["endpoint"]),
        port_of(gateway["extensions"]["health_check"]["endpoint"]),
        4317,
        4318,
    ]
    assert len(set(ports)) == len(ports)


@pytest.mark.parametrize("name", CONFIGS)
def test_environment_references_use_the_collectors_syntax(name: str) -> None:
    text = (OTELCOL / name).read_text()
    refs = re.findall(r"\$\{?[^\s}]*\}?", text)
    assert all(re.fullmatch(r"\$\{env:[A-Z_][A-Z0-9_]*\}", r) for r in refs), refs
    readme = (COLLECTORS / "README.md").read_text()
    for ref in refs:  # each one documented for the operator
        assert ref.removeprefix("${env:").removesuffix("}") in readme, ref


# ---------------------------------------------------------------------------------------------
# rotel: the env file against the real binary and the Python launcher
# ---------------------------------------------------------------------------------------------
def env_file() -> dict[str, str]:
    pairs = {}
    for line in (COLLECTORS / "rotel" / "rotel.env").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            pairs[key] = value
    return pairs


def test_rotel_env_file_and_launcher_carry_the_same_settings() -> None:
    """The file is the launcher's defaults, with the documented ports: receivers on the OTLP
    ports, forwarding to the embedded receiver moved to 4319 (its default, 4318, is rotel's)."""
    launcher = RotelCollector(
        "http://127.0.0.1:4319", grpc_port=4317, http_port=4318, log_path="/tmp/x.log"
    )
    expected = launcher.rotel_env()
    del expected["ROTEL_PID_FILE"]  # per instance
    assert env_file() == expected
    assert DEFAULT_PORT == 4318
    assert port_of(env_file()["ROTEL_OTLP_EXPORTER_ENDPOINT"]) == 4319
