"""Static validation of deploy/ (the compose file and the Kubernetes manifests).

No Docker engine and no Kubernetes cluster exist on this machine, so nothing here starts a
container. What is checked: every file parses; compose services' references (depends_on,
networks, named volumes, build contexts, Dockerfiles and their COPY sources, bind mounts) resolve;
the ports each service listens on (taken from its own command line or collector config) are the
ports the others send to and Prometheus scrapes; the environment variables the engine hooks and
otelbench read are spelled as in otelbench/semconv.py; the `otelbench` command lines parse with
the real CLI; the collector overlay merges into a consistent gateway pipeline; every Kubernetes
object has apiVersion/kind/metadata.name and is valid under the strict JSON schemas of the
Kubernetes API (kubernetes-validate: no unknown field, required fields, types), selectors match
pod labels, Services target declared container ports, referenced ConfigMaps / Secrets / PVCs /
Services exist, kustomization.yaml lists every manifest, and the generated ConfigMaps equal
their source files; Grafana's provisioning (from dashboards/) names this deployment's services,
users and mount paths. deploy/README.md says what is not checked.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import typer
import yaml

from otelbench import semconv
from otelbench.cli import app
from otelbench.live.options import parse_duration, parse_hostport

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
COMPOSE_DIR = DEPLOY / "compose"
K8S = DEPLOY / "k8s"
OTELCOL = REPO / "collectors" / "otelcol"
OVERLAY = DEPLOY / "otelcol" / "gateway-overlay.yaml"
TEMPO: dict[str, Any] = yaml.safe_load((DEPLOY / "tempo" / "tempo.yaml").read_text())

# The environment variables the hooks and otelbench read: otelbench/semconv.py's ENV_* names,
# plus the OpenTelemetry SDK's own that the hooks read (engine_hooks/otelbench_vllm/export.py).
SEMCONV_ENV = {v for k, v in vars(semconv).items() if k.startswith("ENV_") and isinstance(v, str)}
SDK_ENV = {"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"}

# otlphttp exporter settings (confighttp.ClientConfig + exporterhelper; contrib's
# exporter/otlphttpexporter README): the keys the overlay may use.
OTLPHTTP_KEYS = {
    "endpoint",
    "traces_endpoint",
    "metrics_endpoint",
    "logs_endpoint",
    "encoding",
    "compression",
    "tls",
    "headers",
    "timeout",
    "read_buffer_size",
    "write_buffer_size",
    "sending_queue",
    "retry_on_failure",
}
# otlp (gRPC) exporter settings: configgrpc.ClientConfig + exporterhelper (as in
# tests/unit/test_collector_configs.py)
OTLP_KEYS = {
    "endpoint",
    "tls",
    "compression",
    "headers",
    "keepalive",
    "balancer_name",
    "auth",
    "write_buffer_size",
    "read_buffer_size",
    "timeout",
    "sending_queue",
    "retry_on_failure",
}
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


# ---------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------
def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


COMPOSE: dict[str, Any] = load_yaml(COMPOSE_DIR / "compose.yaml")
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
AGENT: dict[str, Any] = load_yaml(OTELCOL / "agent.yaml")
GATEWAY: dict[str, Any] = load_yaml(OTELCOL / "gateway.yaml")
KUSTOMIZATION: dict[str, Any] = load_yaml(K8S / "kustomization.yaml")


def k8s_objects() -> list[dict[str, Any]]:
    objects = []
    for name in KUSTOMIZATION["resources"]:
        for doc in yaml.safe_load_all((K8S / name).read_text(encoding="utf-8")):
            assert isinstance(doc, dict), f"{name}: a document that is not a mapping"
            objects.append(doc)
    return objects


OBJECTS = k8s_objects()


def objects_of(kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == kind}


WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet")


def workloads() -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] in WORKLOAD_KINDS}


def containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = workload["spec"]["template"]["spec"]["containers"]
    return result


def container(name: str) -> dict[str, Any]:
    (only,) = containers(workloads()[name])
    return only


def env_of(c: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in c.get("env", [])}


def port_of_endpoint(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def deep_merge(base: Any, overlay: Any) -> Any:
    """The collector's merge of several --config files: maps merge key by key, anything else
    (lists included) is replaced by the later file's value."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        merged = dict(base)
        for key, value in overlay.items():
            merged[key] = deep_merge(base[key], value) if key in base else value
        return merged
    return overlay


def walk(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}[{i}]")
    else:
        yield path, node


def flag(args: list[str], name: str) -> str:
    """The value of ``--name=value`` in an argument list."""
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    assert len(values) == 1, f"--{name}= appears {len(values)} times in {args}"
    return values[0]


# ---------------------------------------------------------------------------------------------
# compose: references
# ---------------------------------------------------------------------------------------------
def bind_mounts(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(source, target) of every bind mount (short syntax; a source starting with . or /)."""
    mounts = []
    for spec in service.get("volumes", []):
        source, target = spec.split(":")[:2]
        if source.startswith((".", "/")):
            mounts.append((source, target))
    return mounts


def named_volumes(service: dict[str, Any]) -> list[str]:
    return [
        spec.split(":")[0] for spec in service.get("volumes", []) if not spec.startswith((".", "/"))
    ]


def test_compose_references_resolve_and_nothing_is_declared_unused() -> None:
    assert set(SERVICES) == {
        "vllm",
        "otel-agent",
        "otel-gateway",
        "clickhouse",
        "otelbench-watch",
        "prometheus",
        "grafana",
        "tempo",
        "probe",
    }
    used_volumes: set[str] = set()
    used_networks: set[str] = set()
    for name, service in SERVICES.items():
        for dependency in service.get("depends_on", []):
            assert dependency in SERVICES, f"{name}: depends_on {dependency}"
            assert dependency != name
        assert service.get("networks"), f"{name}: no network"
        for network in service["networks"]:
            assert network in COMPOSE["networks"], f"{name}: network {network}"
            used_networks.add(network)
        for volume in named_volumes(service):
            assert volume in COMPOSE["volumes"], f"{name}: volume {volume}"
            used_volumes.add(volume)
        assert "image" in service or "build" in service, name
    assert used_volumes == set(COMPOSE["volumes"])
    assert used_networks == set(COMPOSE["networks"])


def test_compose_has_no_dependency_cycle() -> None:
    state: dict[str, str] = {}

    def visit(name: str) -> None:
        assert state.get(name) != "open", f"depends_on cycle through {name}"
        if state.get(name) == "done":
            return
        state[name] = "open"
        for dependency in SERVICES[name].get("depends_on", []):
            visit(dependency)
        state[name] = "done"

    for name in SERVICES:
        visit(name)
    assert state == dict.fromkeys(SERVICES, "done")


def test_every_compose_bind_mount_exists_in_the_repository() -> None:
    mounts = [(n, s, t) for n, svc in SERVICES.items() for s, t in bind_mounts(svc)]
    assert len(mounts) == 7
    for name, source, target in mounts:
        path = (COMPOSE_DIR / source).resolve()
        assert path.is_relative_to(REPO), f"{name}: {source} is outside the repository"
        assert path.exists(), f"{name}: {source} does not exist"
        # a file mounted onto a file path, a directory onto a directory path
        assert path.is_file() == bool(re.search(r"\.(ya?ml|json)$", target)), (name, source)


def test_compose_container_ports_are_unique_on_the_host() -> None:
    host_ports = [
        spec.split(":")[0] for service in SERVICES.values() for spec in service.get("ports", [])
    ]
    assert len(host_ports) == len(set(host_ports)), host_ports


# ---------------------------------------------------------------------------------------------
# images: Dockerfiles
# ---------------------------------------------------------------------------------------------
def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def dockerignore_allows(dockerfile: Path, source: str) -> bool:
    """Whether BuildKit's <Dockerfile>.dockerignore (allow-list form: ``*`` then ``!path``)
    sends ``source`` in the build context."""
    lines = Path(f"{dockerfile}.dockerignore").read_text(encoding="utf-8").splitlines()
    assert "*" in lines, "the .dockerignore is an allow-list"
    allowed = {line[1:] for line in lines if line.startswith("!")}
    return source.split("/")[0] in allowed


@pytest.mark.parametrize("service", ["vllm", "otelbench-watch"])
def test_built_images_copy_only_existing_files_the_dockerignore_sends(service: str) -> None:
    build = SERVICES[service]["build"]
    context = (COMPOSE_DIR / build["context"]).resolve()
    assert context == REPO
    dockerfile = context / build["dockerfile"]
    assert dockerfile.is_file()
    copies = [args.split() for word, args in dockerfile_instructions(dockerfile) if word == "COPY"]
    assert copies
    for words in copies:
        for source in words[:-1]:
            assert (context / source).exists(), f"COPY {source}: no such file"
            assert dockerignore_allows(dockerfile, source), f"COPY {source}: .dockerignore'd"
    assert not dockerignore_allows(dockerfile, ".venv")


def test_vllm_image_adds_the_hooks_with_no_deps_to_a_supported_vllm() -> None:
    dockerfile = REPO / SERVICES["vllm"]["build"]["dockerfile"]
    steps = dockerfile_instructions(dockerfile)
    args = dict(a.split("=", 1) for word, a in steps if word == "ARG")
    assert [a for word, a in steps if word == "FROM"] == ["vllm/vllm-openai:${VLLM_VERSION}"]
    internals = (REPO / "engine_hooks/otelbench_vllm/_vllm_internals.py").read_text()
    known = {
        (int(major), int(minor))
        for name in ("TESTED_RELEASES", "CONFORMED_RELEASES")
        for major, minor in re.findall(
            r"\((\d+), (\d+)\)", re.search(rf"{name}: .*? = frozenset\(\{{(.*?)\}}\)", internals)[1]
        )
    }  # a release the hooks ran on (tested) or whose sources conform
    image = re.fullmatch(r"v(\d+)\.(\d+)\.\d+", args["VLLM_VERSION"])
    assert image is not None
    assert (int(image[1]), int(image[2])) in known
    run = " ".join(a for word, a in steps if word == "RUN")
    installs = [shlex.split(c) for c in run.split(";") if "pip install" in c]
    assert len(installs) == 2
    for words in installs:
        assert "--no-deps" in words, words
    targets = [w for words in installs for w in words if w.startswith("/tmp/")]
    assert "/tmp/otelbench-src/engine_hooks" in targets
    assert "/tmp/otelbench-src/otelbench" in targets
    assert any(w.startswith("opentelemetry-exporter-prometheus==") for w in installs[0])
    # the package directories pip installs hold what pip needs
    assert (REPO / "engine_hooks/pyproject.toml").is_file()
    env = " ".join(a for word, a in steps if word == "ENV")
    assert f"{semconv.ENV_VLLM_HOOKS}=1" in env


def test_otelbench_image_default_command_is_a_valid_watch_command() -> None:
    dockerfile = REPO / SERVICES["otelbench-watch"]["build"]["dockerfile"]
    steps = dict(dockerfile_instructions(dockerfile))
    assert yaml.safe_load(steps["ENTRYPOINT"]) == ["otelbench"]
    cmd = yaml.safe_load(steps["CMD"])
    params = parse_cli(cmd)
    exposed = {int(p) for p in steps["EXPOSE"].split()}
    assert exposed == {parse_hostport(params["otlp"])[1], parse_hostport(params["listen"])[1]}


# ---------------------------------------------------------------------------------------------
# the otelbench command lines parse with the real CLI
# ---------------------------------------------------------------------------------------------
def parse_cli(argv: list[str]) -> dict[str, Any]:
    """Parse ``otelbench <command> <args>`` with otelbench's own click command (no run)."""
    group = typer.main.get_command(app)
    commands = getattr(group, "commands", {})
    command = commands[argv[0]]
    context = command.make_context(argv[0], list(argv[1:]))
    return dict(context.params)


def test_watch_command_lines_parse_and_agree_between_compose_and_k8s() -> None:
    compose_args = SERVICES["otelbench-watch"]["command"]
    k8s_args = container("otelbench-watch")["args"]
    assert compose_args == k8s_args
    params = parse_cli(compose_args)
    assert params["otlp"] is not None, "watch must run its receiver (the gateway sends to it)"
    assert params["retention"] is not None, "bounded store"
    for key in ("window", "interval", "retention"):
        assert parse_duration(params[key]) > 0
    assert parse_hostport(params["listen"])[0] == "0.0.0.0"
    assert parse_hostport(params["otlp"])[0] == "0.0.0.0"


def test_probe_command_parses_and_targets_vllm_and_the_agent() -> None:
    params = parse_cli(SERVICES["probe"]["command"])
    target = urlsplit(params["target"])
    assert (target.hostname, target.port) == ("vllm", vllm_port())
    otlp = urlsplit(params["otlp_endpoint"])
    assert (otlp.hostname, otlp.port) == ("otel-agent", agent_port("http"))
    assert SERVICES["probe"]["profiles"] == ["probe"]


# ---------------------------------------------------------------------------------------------
# ports: who listens where, and who sends there
# ---------------------------------------------------------------------------------------------
def vllm_port() -> int:
    return int(flag(SERVICES["vllm"]["command"], "port"))


def agent_port(protocol: str) -> int:
    return port_of_endpoint(AGENT["receivers"]["otlp"]["protocols"][protocol]["endpoint"])


def listening_ports() -> dict[str, set[int]]:
    """What each compose service listens on, from its own configuration (not compose's)."""
    watch = parse_cli(SERVICES["otelbench-watch"]["command"])
    gateway_receivers = GATEWAY["receivers"]["otlp"]["protocols"]
    return {
        "vllm": {vllm_port()},
        "otel-agent": {agent_port("grpc"), agent_port("http")},
        "otel-gateway": {
            port_of_endpoint(gateway_receivers["grpc"]["endpoint"]),
            port_of_endpoint(gateway_receivers["http"]["endpoint"]),
            port_of_endpoint(GATEWAY["exporters"]["prometheus"]["endpoint"]),
        },
        # clickhouse-server's defaults: native TCP 9000, HTTP 8123
        "clickhouse": {9000, 8123},
        "otelbench-watch": {
            parse_hostport(watch["otlp"])[1],
            parse_hostport(watch["listen"])[1],
        },
        "prometheus": {9090},
        "grafana": {3000},
        # Tempo's HTTP API and OTLP/gRPC receiver (its internal gRPC port is not published)
        "tempo": {
            TEMPO["server"]["http_listen_port"],
            port_of_endpoint(
                TEMPO["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
            ),
        },
    }


def compose_ports(name: str) -> set[int]:
    service = SERVICES[name]
    published = {int(str(p).split(":")[-1]) for p in service.get("ports", [])}
    return published | {int(p) for p in service.get("expose", [])}


@pytest.mark.parametrize("name", sorted(set(SERVICES) - {"probe"}))
def test_compose_publishes_exactly_the_ports_the_service_listens_on(name: str) -> None:
    assert compose_ports(name) == listening_ports()[name]


def test_senders_reach_the_ports_their_receivers_listen_on() -> None:
    listening = listening_ports()
    # vLLM hooks → agent (OTLP/HTTP), agent → gateway (OTLP/gRPC), gateway → ClickHouse, watch
    hooks = urlsplit(SERVICES["vllm"]["environment"][semconv.ENV_OTLP_TRACES_ENDPOINT])
    assert (hooks.hostname, hooks.port, hooks.path) == (
        "otel-agent",
        agent_port("http"),
        "/v1/traces",
    )
    gateway = AGENT["exporters"]["otlp/gateway"]["endpoint"]
    host, port = gateway.rsplit(":", 1)
    assert host in SERVICES
    assert int(port) == 4317
    assert int(port) == port_of_endpoint(
        GATEWAY["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    )
    clickhouse = urlsplit(GATEWAY["exporters"]["clickhouse"]["endpoint"])
    assert clickhouse.hostname in SERVICES
    assert clickhouse.port == 9000
    assert clickhouse.port in listening[clickhouse.hostname]
    watch = urlsplit(load_yaml(OVERLAY)["exporters"]["otlphttp/watch"]["endpoint"])
    tempo = load_yaml(OVERLAY)["exporters"]["otlp/tempo"]["endpoint"]
    assert port_of_endpoint(tempo) in listening[tempo.rsplit(":", 1)[0]]
    assert watch.hostname == "otelbench-watch"
    assert (
        watch.port == parse_hostport(parse_cli(SERVICES["otelbench-watch"]["command"])["otlp"])[1]
    )


def test_prometheus_scrapes_every_metrics_endpoint_in_compose() -> None:
    config = load_yaml(COMPOSE_DIR / "prometheus.yml")
    listening = listening_ports()
    targets = {
        target
        for job in config["scrape_configs"]
        for static in job["static_configs"]
        for target in static["targets"]
    }
    for target in targets:
        host, port = target.rsplit(":", 1)
        assert host in SERVICES, target
        assert int(port) in listening[host], target
    watch_listen = parse_hostport(parse_cli(SERVICES["otelbench-watch"]["command"])["listen"])[1]
    spanmetrics = port_of_endpoint(GATEWAY["exporters"]["prometheus"]["endpoint"])
    assert targets == {
        f"vllm:{vllm_port()}",
        f"otel-gateway:{spanmetrics}",
        f"otelbench-watch:{watch_listen}",
    }


@pytest.mark.parametrize("config", ["compose/prometheus.yml", "k8s/config/prometheus.yml"])
def test_prometheus_configs_pass_promtool(config: str) -> None:
    # the real checker, from Debian's prometheus package (scripts/setup.sh installs it)
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool missing: scripts/setup.sh installs Debian's prometheus"
    done = subprocess.run(
        [promtool, "check", "config", str(DEPLOY / config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_prometheus_flags_are_flags_of_the_real_binary() -> None:
    prometheus = shutil.which("prometheus")
    assert prometheus is not None
    done = subprocess.run(
        [prometheus, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    help_text = done.stdout + done.stderr
    compose_args = SERVICES["prometheus"]["command"]
    assert compose_args == container("prometheus")["args"]
    for arg in compose_args:
        name, _, value = arg.partition("=")
        assert re.search(rf"\s{re.escape(name)}=", help_text), name
        if name == "--enable-feature":
            assert re.search(rf"\b{re.escape(value)}\b", help_text), value


# ---------------------------------------------------------------------------------------------
# environment variables
# ---------------------------------------------------------------------------------------------
def all_env_names() -> list[tuple[str, str]]:
    names = [(f"compose {n}", k) for n, s in SERVICES.items() for k in s.get("environment", {})]
    for name, workload in workloads().items():
        for c in containers(workload):
            names += [(f"k8s {name}", e["name"]) for e in c.get("env", [])]
    for secret in objects_of("Secret").values():
        names += [("k8s secret", k) for k in secret["stringData"]]
    return names


def test_otelbench_and_otel_variables_are_spelled_as_in_semconv() -> None:
    checked = 0
    for where, name in all_env_names():
        if name.startswith(("OTELBENCH_", "OTEL_")):
            assert name in SEMCONV_ENV | SDK_ENV, f"{where}: {name} is read by nothing"
            checked += 1
    assert checked >= 6


def test_vllm_enables_the_hooks_and_exports_to_the_agent_in_both() -> None:
    compose_env = SERVICES["vllm"]["environment"]
    k8s_env = env_of(container("vllm"))
    for env in (compose_env, k8s_env):
        assert env[semconv.ENV_VLLM_HOOKS] == "1"
        assert env["OTEL_SERVICE_NAME"] == semconv.SERVICE_VLLM
        url = urlsplit(env[semconv.ENV_OTLP_TRACES_ENDPOINT])
        assert (url.scheme, url.hostname, url.port, url.path) == (
            "http",
            "otel-agent",
            agent_port("http"),
            "/v1/traces",
        )
        # the base endpoint would also send the hooks' metrics over OTLP: /metrics serves them
        assert semconv.ENV_OTLP_ENDPOINT not in env


def test_clickhouse_credentials_come_from_the_variables_the_gateway_reads() -> None:
    wanted = {
        m for _, v in walk(GATEWAY) if isinstance(v, str) for m in re.findall(r"\$\{env:(\w+)}", v)
    }
    assert wanted == {"CLICKHOUSE_USER", "CLICKHOUSE_PASSWORD"}
    assert wanted <= set(SERVICES["otel-gateway"]["environment"])
    assert wanted <= set(SERVICES["clickhouse"]["environment"])
    secret = objects_of("Secret")["clickhouse-credentials"]
    assert set(secret["stringData"]) == wanted
    for name in ("otel-gateway", "clickhouse", "grafana"):
        refs = [e["secretRef"]["name"] for e in container(name).get("envFrom", [])]
        assert refs[0] == "clickhouse-credentials", name
    assert objects_of("Secret")["grafana-admin"]["stringData"].keys() == {
        "GF_SECURITY_ADMIN_PASSWORD"
    }


# ---------------------------------------------------------------------------------------------
# collectors: the commands load the mounted configs; the watch overlay
# ---------------------------------------------------------------------------------------------
def config_args(args: list[str]) -> list[str]:
    return [a.split("=", 1)[1] for a in args if a.startswith("--config=")]


def test_compose_collectors_load_the_files_mounted_from_collectors() -> None:
    for name, sources in {
        "otel-agent": ["collectors/otelcol/agent.yaml"],
        "otel-gateway": ["collectors/otelcol/gateway.yaml", "deploy/otelcol/gateway-overlay.yaml"],
    }.items():
        mounts = dict(bind_mounts(SERVICES[name]))
        by_target = {t: (COMPOSE_DIR / s).resolve() for s, t in mounts.items()}
        loaded = [by_target[path] for path in config_args(SERVICES[name]["command"])]
        assert loaded == [REPO / s for s in sources]
        assert SERVICES[name]["image"].startswith("otel/opentelemetry-collector-contrib:")


def test_k8s_collectors_load_the_keys_of_their_configmaps() -> None:
    configmaps = objects_of("ConfigMap")
    for name, configmap in {
        "otel-agent": "otelcol-agent",
        "otel-gateway": "otelcol-gateway",
    }.items():
        c = container(name)
        volumes = {v["name"]: v for v in workloads()[name]["spec"]["template"]["spec"]["volumes"]}
        (mount,) = c["volumeMounts"]
        assert volumes[mount["name"]]["configMap"]["name"] == configmap
        wanted = [p.removeprefix(mount["mountPath"] + "/") for p in config_args(c["args"])]
        assert wanted == [p.rsplit("/", 1)[1] for p in config_args(SERVICES[name]["command"])]
        assert set(wanted) == set(configmaps[configmap]["data"])
        assert c["image"] == SERVICES[name]["image"]


def merged_gateway() -> dict[str, Any]:
    merged: dict[str, Any] = deep_merge(GATEWAY, load_yaml(OVERLAY))
    return merged


def test_watch_overlay_keeps_the_gateway_exporters_and_adds_only_watch() -> None:
    base = GATEWAY["service"]["pipelines"]["traces"]["exporters"]
    merged = merged_gateway()
    exporters = merged["service"]["pipelines"]["traces"]["exporters"]
    assert exporters == [*base, "otlphttp/watch", "otlp/tempo"]
    # the merge changed nothing else in the base
    assert {k: v for k, v in merged.items() if k not in ("exporters", "service")} == {
        k: v for k, v in GATEWAY.items() if k not in ("exporters", "service")
    }
    assert set(merged["exporters"]) == {*GATEWAY["exporters"], "otlphttp/watch", "otlp/tempo"}
    for pipeline in merged["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in merged.get(kind, {}) or component in merged["connectors"]


def test_overlay_exporters_use_their_components_settings_only() -> None:
    exporters = load_yaml(OVERLAY)["exporters"]
    assert set(exporters) == {"otlphttp/watch", "otlp/tempo"}
    watch, tempo = exporters["otlphttp/watch"], exporters["otlp/tempo"]
    assert set(watch) <= OTLPHTTP_KEYS, set(watch) - OTLPHTTP_KEYS
    assert set(tempo) <= OTLP_KEYS, set(tempo) - OTLP_KEYS
    assert tempo["tls"] == {"insecure": True}
    assert watch["compression"] == "gzip"
    durations = [
        v for path, v in walk(exporters) if path.endswith(("timeout", "interval", "elapsed_time"))
    ]
    assert len(durations) == 7
    assert all(GO_DURATION.match(str(v)) for v in durations), durations


# ---------------------------------------------------------------------------------------------
# Grafana: provisioning from dashboards/
# ---------------------------------------------------------------------------------------------
GRAFANA_MOUNTS = {
    "dashboards/provisioning/datasources": "/etc/grafana/provisioning/datasources",
    "dashboards/provisioning/dashboards": "/etc/grafana/provisioning/dashboards",
    "dashboards/json": "/var/lib/grafana/dashboards/otelbench",
}


def test_grafana_mounts_dashboards_provisioning_and_json_in_both() -> None:
    compose = {
        str((COMPOSE_DIR / s).resolve().relative_to(REPO)): t
        for s, t in bind_mounts(SERVICES["grafana"])
    }
    assert compose == {
        "dashboards/provisioning": "/etc/grafana/provisioning",
        "dashboards/json": GRAFANA_MOUNTS["dashboards/json"],
    }
    spec = workloads()["grafana"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v["configMap"]["name"] for v in spec["volumes"]}
    mounted = {volumes[m["name"]]: m["mountPath"] for m in container("grafana")["volumeMounts"]}
    assert mounted == {
        "grafana-datasources": GRAFANA_MOUNTS["dashboards/provisioning/datasources"],
        "grafana-dashboard-providers": GRAFANA_MOUNTS["dashboards/provisioning/dashboards"],
        "grafana-dashboards": GRAFANA_MOUNTS["dashboards/json"],
    }
    for env in (SERVICES["grafana"]["environment"], env_of(container("grafana"))):
        assert env["GF_INSTALL_PLUGINS"] == "grafana-clickhouse-datasource"


def dashboard_datasources() -> set[tuple[str, str]]:
    """(type, uid) of every datasource the committed dashboards name."""
    found = set()
    for file in sorted((REPO / "dashboards/json").glob("*.json")):
        leaves = dict(walk(json.loads(file.read_text(encoding="utf-8"))))
        for path, value in leaves.items():
            if path.endswith(".datasource.type"):
                found.add((value, leaves[path.removesuffix(".type") + ".uid"]))
    return found


def test_the_dashboards_datasource_plugins_are_installed_in_both() -> None:
    types = {t for t, _ in dashboard_datasources()}
    assert "grafana-clickhouse-datasource" in types
    builtin = {"prometheus", "tempo", "grafana", "datasource", "__expr__"}
    for env in (SERVICES["grafana"]["environment"], env_of(container("grafana"))):
        plugins = set(env["GF_INSTALL_PLUGINS"].split(","))
        assert types <= builtin | plugins, types - builtin - plugins


def provisioned_datasources() -> list[dict[str, Any]]:
    sources: list[dict[str, Any]] = []
    for file in sorted((REPO / "dashboards/provisioning/datasources").glob("*.y*ml")):
        sources += load_yaml(file).get("datasources", [])
    return sources


def test_provisioned_datasources_point_at_the_deployed_services() -> None:
    listening = listening_ports()
    sources = provisioned_datasources()
    assert {(d["type"], d["uid"]) for d in sources} >= dashboard_datasources()
    for source in sources:
        json_data = source.get("jsonData", {})
        if "url" in source:
            url = urlsplit(source["url"])
            assert url.hostname in listening, source["name"]
            assert url.port in listening[url.hostname], source["name"]
        else:
            assert json_data["host"] in listening, source["name"]
            assert int(json_data["port"]) in listening[json_data["host"]], source["name"]


def test_clickhouse_datasource_logs_in_as_the_deployed_user() -> None:
    (clickhouse,) = [
        d for d in provisioned_datasources() if d["type"].endswith("clickhouse-datasource")
    ]
    user = clickhouse["jsonData"]["username"]
    password = clickhouse["secureJsonData"]["password"]
    secret = objects_of("Secret")["clickhouse-credentials"]["stringData"]
    compose_user = SERVICES["clickhouse"]["environment"]["CLICKHOUSE_USER"]
    for variable, value in (("CLICKHOUSE_USER", user), ("CLICKHOUSE_PASSWORD", password)):
        if value.startswith("$"):  # Grafana expands $VAR / ${VAR} from its environment
            assert value.strip("${}") == variable
            assert variable in SERVICES["grafana"]["environment"]
        else:
            assert value == secret[variable], variable
            assert compose_user == f"${{{variable}:-{value}}}", variable


def test_dashboard_providers_read_the_directory_the_json_is_mounted_on() -> None:
    providers_dir = REPO / "dashboards/provisioning/dashboards"
    paths = []
    for file in sorted(providers_dir.glob("*.y*ml")):
        for provider in load_yaml(file).get("providers", []):
            paths.append(provider["options"]["path"])
    # the JSON files lie flat in dashboards/json: the provider reads exactly the mount point
    assert paths == [GRAFANA_MOUNTS["dashboards/json"]]


# ---------------------------------------------------------------------------------------------
# Kubernetes: objects, references, kustomization
# ---------------------------------------------------------------------------------------------
def test_kustomization_lists_every_manifest_and_nothing_else() -> None:
    manifests = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(KUSTOMIZATION["resources"]) == sorted(manifests)
    assert KUSTOMIZATION["namespace"] == objects_of("Namespace").popitem()[0]
    images = {i["name"] for i in KUSTOMIZATION["images"]}
    used = {c["image"].split(":")[0] for w in workloads().values() for c in containers(w)}
    assert images <= used


def test_every_object_has_api_version_kind_and_a_unique_name() -> None:
    seen = set()
    for obj in OBJECTS:
        assert obj["apiVersion"], obj
        assert obj["kind"], obj
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", obj["metadata"]["name"]), obj
        key = (obj["kind"], obj["metadata"]["name"])
        assert key not in seen, key
        seen.add(key)
        assert "namespace" not in obj["metadata"], "kustomization.yaml sets the namespace"
    assert {k for k, _ in seen} >= {"Deployment", "DaemonSet", "StatefulSet", "Service"}


# Strict JSON schemas of the Kubernetes API (no unknown field, required fields, types, enums),
# as kubernetes-validate ships them: the oldest release the manifests target (README: kubectl
# 1.27+; internalTrafficPolicy is GA since 1.26) and the newest the package has.
K8S_VERSIONS = ("1.27.0", kubernetes_validate.latest_version())


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_object_is_valid_under_the_strict_kubernetes_schemas(version: str) -> None:
    for obj in OBJECTS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            name = f"{obj['kind']}/{obj['metadata']['name']}"
            pytest.fail(f"{name} (Kubernetes {version}): {error.message} at {list(error.path)}")


def test_the_schema_check_catches_a_misspelt_and_a_missing_field() -> None:
    deployment = workloads()["vllm"]
    misspelt = {**deployment, "spec": {**deployment["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError, match="'replica' was unexpected"):
        kubernetes_validate.validate(misspelt, K8S_VERSIONS[-1], strict=True)
    no_selector = {**deployment, "spec": {"template": deployment["spec"]["template"]}}
    with pytest.raises(kubernetes_validate.ValidationError, match="'selector' is a required"):
        kubernetes_validate.validate(no_selector, K8S_VERSIONS[-1], strict=True)


def pod_labels(workload: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def test_workload_selectors_match_their_pod_labels() -> None:
    for name, workload in workloads().items():
        selector = workload["spec"]["selector"]["matchLabels"]
        assert selector, name
        assert selector.items() <= pod_labels(workload).items(), name


def selected(service: dict[str, Any]) -> list[dict[str, Any]]:
    selector = service["spec"]["selector"]
    return [w for w in workloads().values() if selector.items() <= pod_labels(w).items()]


def test_every_service_selects_one_workload_and_targets_its_container_ports() -> None:
    for name, service in objects_of("Service").items():
        (workload,) = selected(service)
        ports = [p for c in containers(workload) for p in c.get("ports", [])]
        by_name = {p["name"]: p["containerPort"] for p in ports}
        numbers = set(by_name.values())
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            assert target in by_name or target in numbers, f"Service {name}: {target}"
            resolved = by_name.get(target, target)
            assert resolved == port["port"], f"Service {name}: {port} maps to {resolved}"


def test_k8s_services_listen_where_compose_services_do() -> None:
    listening = listening_ports()
    services = objects_of("Service")
    for name in ("vllm", "clickhouse", "prometheus", "grafana", "otelbench-watch", "tempo"):
        assert {p["port"] for p in services[name]["spec"]["ports"]} == listening[name], name
    assert {p["port"] for p in services["otel-agent"]["spec"]["ports"]} == listening["otel-agent"]
    assert services["otel-agent"]["spec"]["internalTrafficPolicy"] == "Local"
    gateway = {p["port"] for p in services["otel-gateway"]["spec"]["ports"]}
    gateway |= {p["port"] for p in services["otel-gateway-headless"]["spec"]["ports"]}
    assert gateway == listening["otel-gateway"]


def test_referenced_configmaps_secrets_claims_and_services_exist() -> None:
    configmaps, secrets = objects_of("ConfigMap"), objects_of("Secret")
    claims, services = objects_of("PersistentVolumeClaim"), objects_of("Service")
    references = 0
    for name, workload in workloads().items():
        spec = workload["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        templates = {
            t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])
        }
        for volume in volumes.values():
            if "configMap" in volume:
                assert volume["configMap"]["name"] in configmaps, (name, volume)
                references += 1
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims, (name, volume)
                references += 1
        for c in containers(workload):
            for mount in c.get("volumeMounts", []):
                assert mount["name"] in volumes or mount["name"] in templates, (name, mount)
            for source in c.get("envFrom", []):
                assert source["secretRef"]["name"] in secrets, (name, source)
                references += 1
        if workload["kind"] == "StatefulSet":
            governing = services[workload["spec"]["serviceName"]]
            assert governing["spec"]["clusterIP"] == "None"
            references += 1
    assert references >= 12


def test_every_configmap_is_used() -> None:
    used = {
        v["configMap"]["name"]
        for w in workloads().values()
        for v in w["spec"]["template"]["spec"].get("volumes", [])
        if "configMap" in v
    }
    assert used == set(objects_of("ConfigMap"))


def test_prometheus_k8s_targets_are_services_and_their_ports() -> None:
    config = yaml.safe_load(objects_of("ConfigMap")["prometheus-config"]["data"]["prometheus.yml"])
    services = objects_of("Service")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    compose_jobs = {
        j["job_name"] for j in load_yaml(COMPOSE_DIR / "prometheus.yml")["scrape_configs"]
    }
    assert set(jobs) == compose_jobs
    checked = 0
    for job in jobs.values():
        for sd in job.get("dns_sd_configs", []):
            for dns_name in sd["names"]:
                service = services[dns_name]
                assert service["spec"]["clusterIP"] == "None", f"{dns_name}: not headless"
                assert sd["port"] in {p["port"] for p in service["spec"]["ports"]}
                checked += 1
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                host, port = target.rsplit(":", 1)
                assert int(port) in {p["port"] for p in services[host]["spec"]["ports"]}
                checked += 1
    assert checked == 3


def test_same_images_in_compose_and_k8s() -> None:
    for name in (
        "vllm",
        "otel-agent",
        "otel-gateway",
        "clickhouse",
        "prometheus",
        "grafana",
        "tempo",
    ):
        assert container(name)["image"] == SERVICES[name]["image"], name
    assert container("otelbench-watch")["image"] == SERVICES["otelbench-watch"]["image"]
    assert workloads()["otelbench-watch"]["spec"]["replicas"] == 1, "DuckDB has one writer"
    assert workloads()["otelbench-watch"]["spec"]["strategy"]["type"] == "Recreate"


# ---------------------------------------------------------------------------------------------
# generated ConfigMaps: no drift from their sources
# ---------------------------------------------------------------------------------------------
CONFIGMAP_SOURCES = {
    "otelcol-agent": ["collectors/otelcol/agent.yaml"],
    "otelcol-gateway": ["collectors/otelcol/gateway.yaml", "deploy/otelcol/gateway-overlay.yaml"],
    "prometheus-config": ["deploy/k8s/config/prometheus.yml"],
    "tempo-config": ["deploy/tempo/tempo.yaml"],
    "grafana-datasources": ["dashboards/provisioning/datasources/*"],
    "grafana-dashboard-providers": ["dashboards/provisioning/dashboards/*"],
    "grafana-dashboards": ["dashboards/json/*"],
}


def test_generated_configmaps_equal_their_source_files() -> None:
    configmaps = objects_of("ConfigMap")
    assert set(configmaps) == set(CONFIGMAP_SOURCES)
    for name, patterns in CONFIGMAP_SOURCES.items():
        files = [p for pattern in patterns for p in sorted(REPO.glob(pattern)) if p.is_file()]
        expected = {p.name: p.read_text(encoding="utf-8") for p in files}
        assert configmaps[name]["data"] == expected, (
            f"{name} differs from {patterns}: run python deploy/k8s/generate.py"
        )
    assert len(configmaps["otelcol-gateway"]["data"]) == 2


def test_generated_file_is_what_the_generator_writes() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("deploy_k8s_generate", K8S / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (K8S / "configmaps.generated.yaml").read_text(encoding="utf-8")
    assert module.render() == committed, "run python deploy/k8s/generate.py"
    assert module.main(["--check"]) == 0
