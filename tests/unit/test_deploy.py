"""Static validation of deploy/ (the compose file and the Kubernetes manifests).

No Docker engine and no Kubernetes cluster exist on this machine, so nothing here starts a
container. What is checked: every file parses; compose services' references (depends_on,
networks, named volumes, build contexts, Dockerfiles and their COPY sources, bind mounts) resolve;
the ports each service listens on (taken from its own command line or collector config) are the
ports the others send to and Prometheus scrapes; the environment variables the engine hooks and
otelbench read are spelled as in otelbench/semconv.py; the `otelbench` command lines parse with
the real CLI; the collector overlay merges into a consistent gateway pipeline whose queues are
on disk; every Kubernetes object has apiVersion/kind/metadata.name and is valid under the strict
JSON schemas of the Kubernetes API (kubernetes-validate: no unknown field, required fields,
types), selectors match pod labels, Services target declared container ports, referenced
ConfigMaps / Secrets / PVCs / Services exist (the Secrets: those deploy/README.md's commands
create, none committed), kustomization.yaml lists every manifest, and the generated files equal
their sources; Grafana's provisioning names this deployment's services, its read-only ClickHouse
user and mount paths. Start order: every compose dependency waits for a healthcheck (or a
finished one-shot), each healthcheck probes a port its service listens on, and every service
waits for the ones its configuration sends to; in Kubernetes the gateway waits for ClickHouse
and every container has a readiness probe. Secure defaults: published ports on loopback unless
asked, no password with a default, a pinned plugin. GPU clusters: the agent tolerates what vLLM
tolerates, vLLM has its probes, resources, model cache volume and token Secret.
deploy/README.md says what is not checked. The checks by Prometheus's own binaries (promtool,
its flags) are ``tests/integration/test_config_binaries.py``.
"""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
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
from tests.unit.test_collector_configs import queue_problems

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
# read by vLLM's own tracer (vllm/tracing/otel.py get_span_exporter: "grpc" unless set), which
# --otlp-traces-endpoint turns on
VLLM_TRACER_ENV = {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"}

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
README = (DEPLOY / "README.md").read_text(encoding="utf-8")
GRAFANA_READER_XML = DEPLOY / "clickhouse" / "users.d" / "grafana-reader.xml"
DEPLOYED_DATASOURCES = DEPLOY / "grafana" / "datasources"
# the one address compose publishes host ports on, unless OTELBENCH_BIND_ADDRESS says otherwise
BIND_ADDRESS = "${OTELBENCH_BIND_ADDRESS:-127.0.0.1}"


def readme_secrets() -> dict[str, set[str]]:
    """Secret name → keys, as the ``kubectl -n otelbench create secret generic`` commands of
    deploy/README.md create them: no Secret is committed, so these are the ones that exist."""
    text = re.sub(r"\\\n\s*", " ", README)  # join continued lines
    command = r"kubectl -n otelbench create secret generic ([a-z0-9-]+)"
    pattern = command + r"((?:\s+--from-literal=\S+)+)"
    return {
        m[1]: set(re.findall(r"--from-literal=(\w+)=", m[2])) for m in re.finditer(pattern, text)
    }


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
        "otelcol-init",
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


def interpolated_compose() -> dict[str, Any]:
    """compose.yaml as compose reads it with every required variable set: ``${VAR:-default}``
    → default, ``${VAR:?message}`` → a value, ``${VAR}`` → empty, ``$$`` → ``$``."""

    def value(match: re.Match[str]) -> str:
        return {":-": match[3] or "", ":?": "a-generated-secret"}.get(match[2] or "", "")

    text = (COMPOSE_DIR / "compose.yaml").read_text(encoding="utf-8").replace("$$", "\x00")
    text = re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}", value, text).replace("\x00", "$")
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


def test_compose_file_parses_under_the_compose_specification() -> None:
    """The strict parser of the Compose Specification in the `compose_spec` Rust crate (PyPI
    `compose-spec`, bindings): unknown keys, wrong types, bad depends_on conditions, healthcheck
    durations and port syntax fail. Runs where that package is installed (it is not yet a dev
    dependency; checked by hand with compose-spec 0.2.1 when this test was written)."""
    import compose_spec  # the dev dependency compose-spec

    doc = interpolated_compose()
    parsed = compose_spec.PyCompose.from_json(json.dumps(doc))
    parsed.validate()
    assert set(parsed.service_names()) == set(SERVICES)
    misspelt = json.loads(json.dumps(doc))
    misspelt["services"]["vllm"]["healthchek"] = misspelt["services"]["vllm"].pop("healthcheck")
    with pytest.raises(ValueError, match="healthchek"):
        compose_spec.PyCompose.from_json(json.dumps(misspelt))


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
    assert len(mounts) == 10
    for name, source, target in mounts:
        path = (COMPOSE_DIR / source).resolve()
        assert path.is_relative_to(REPO), f"{name}: {source} is outside the repository"
        assert path.exists(), f"{name}: {source} does not exist"
        # a file mounted onto a file path, a directory onto a directory path
        assert path.is_file() == bool(re.search(r"\.(ya?ml|json|xml)$", target)), (name, source)


def published(spec: str) -> tuple[str, int, int]:
    """(host address, host port, container port) of a compose ``ports`` entry
    ``[ADDRESS:]HOST:CONTAINER`` (the address may be a ``${VAR:-default}`` reference; without
    one, ``""``: every interface)."""
    parts = spec.rsplit(":", 2)
    address = parts[0] if len(parts) == 3 else ""
    return address, int(parts[-2]), int(parts[-1])


def test_compose_container_ports_are_unique_on_the_host() -> None:
    host_ports = [
        published(spec)[1] for service in SERVICES.values() for spec in service.get("ports", [])
    ]
    assert len(host_ports) == len(set(host_ports)), host_ports
    assert len(host_ports) == 7


def test_published_ports_listen_on_loopback_unless_asked() -> None:
    """Every published port binds to ``${OTELBENCH_BIND_ADDRESS:-127.0.0.1}``: this host only,
    unless the operator sets OTELBENCH_BIND_ADDRESS (e.g. 0.0.0.0) on purpose."""
    for name, service in SERVICES.items():
        for spec in service.get("ports", []):
            assert isinstance(spec, str), f"{name}: {spec!r} (short syntax expected)"
            assert published(spec)[0] == BIND_ADDRESS, f"{name}: {spec} binds elsewhere"
    assert "OTELBENCH_BIND_ADDRESS" in README


def test_no_password_has_a_default_and_none_is_committed() -> None:
    """Compose refuses to start without each password (``${VAR:?message}``); no Kubernetes Secret
    with a value is committed; deploy/README.md generates them (openssl rand)."""
    text = (COMPOSE_DIR / "compose.yaml").read_text(encoding="utf-8")
    references = re.findall(r"\$\{(\w*PASSWORD\w*)(:?[-?])?", text)
    assert {name for name, _ in references} == {
        "CLICKHOUSE_PASSWORD",
        "CLICKHOUSE_GRAFANA_PASSWORD",
        "GRAFANA_ADMIN_PASSWORD",
    }
    assert {how for _, how in references} == {":?"}, references
    for _, value in walk(COMPOSE):
        assert "change-me" not in str(value)
    assert not objects_of("Secret"), "Secrets are created by the commands in deploy/README.md"
    for document in (K8S / name for name in KUSTOMIZATION["resources"]):
        assert "stringData" not in document.read_text(encoding="utf-8"), document
    secrets = readme_secrets()
    assert set(secrets) == {
        "clickhouse-credentials",
        "clickhouse-grafana",
        "grafana-admin",
        "hf-token",
    }
    assert README.count("$(openssl rand") >= 4
    assert ".env" in (COMPOSE_DIR / ".gitignore").read_text(encoding="utf-8").split()


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
    # installed but inert: a deployment enables the hooks with their endpoint, never the image
    env = " ".join(a for word, a in steps if word == "ENV")
    assert semconv.ENV_VLLM_HOOKS not in env
    assert f"OTEL_SERVICE_NAME={semconv.SERVICE_VLLM}" in env


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
        "otelcol-init": set(),  # one-shot
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


# ---------------------------------------------------------------------------------------------
# environment variables
# ---------------------------------------------------------------------------------------------
def all_env_names() -> list[tuple[str, str]]:
    names = [(f"compose {n}", k) for n, s in SERVICES.items() for k in s.get("environment", {})]
    for name, workload in workloads().items():
        for c in containers(workload):
            names += [(f"k8s {name}", e["name"]) for e in c.get("env", [])]
    for secret, keys in readme_secrets().items():
        names += [(f"k8s secret {secret}", k) for k in keys]
    return names


def test_otelbench_and_otel_variables_are_spelled_as_in_semconv() -> None:
    checked = 0
    for where, name in all_env_names():
        if name.startswith(("OTELBENCH_", "OTEL_")):
            known = SEMCONV_ENV | SDK_ENV | VLLM_TRACER_ENV
            assert name in known, f"{where}: {name} is read by nothing"
            checked += 1
    assert checked >= 11


def test_vllm_enables_the_hooks_and_exports_to_the_agent_in_both() -> None:
    compose_env = SERVICES["vllm"]["environment"]
    k8s_env = env_of(container("vllm"))
    compose_args = [*SERVICES["vllm"]["entrypoint"], *SERVICES["vllm"]["command"]]
    k8s_args = [*container("vllm")["command"], *container("vllm")["args"]]
    for env, args in ((compose_env, compose_args), (k8s_env, k8s_args)):
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
        # vLLM's own tracer on (no release passes the client's traceparent to the engine
        # without it: engine_hooks/README.md), to the same OTLP/HTTP endpoint, in protobuf
        assert flag(args, "otlp-traces-endpoint") == env[semconv.ENV_OTLP_TRACES_ENDPOINT]
        assert env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
        assert args[:2] == ["vllm", "serve"]
        assert env[semconv.ENV_SPOOL_DIR] == "/var/lib/otelbench/spool"


def test_vllm_spool_and_model_cache_live_on_volumes_in_both() -> None:
    """The hooks' spool (OTELBENCH_SPOOL_DIR; one api-server-N slot per API server process
    below it) and Hugging Face's cache are mount points of persistent volumes: a named volume
    each in compose, the vllm-data claim in Kubernetes."""
    spool = SERVICES["vllm"]["environment"][semconv.ENV_SPOOL_DIR]
    cache = "/root/.cache/huggingface"
    compose = {
        target: source for source, target in (v.split(":")[:2] for v in SERVICES["vllm"]["volumes"])
    }
    assert compose[spool] in COMPOSE["volumes"]
    assert compose[cache] in COMPOSE["volumes"]
    workload = workloads()["vllm"]
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: m for m in container("vllm")["volumeMounts"]}
    claims = objects_of("PersistentVolumeClaim")
    for path in (spool, cache):
        claim = volumes[mounts[path]["name"]]["persistentVolumeClaim"]["claimName"]
        assert claims[claim]["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert mounts[spool]["subPath"] != mounts[cache]["subPath"]
    # one ReadWriteOnce claim: a new pod replaces the old one, never beside it
    assert workload["spec"]["strategy"]["type"] == "Recreate"
    assert workload["spec"]["replicas"] == 1


def test_clickhouse_credentials_come_from_the_variables_the_gateway_reads() -> None:
    wanted = {
        m for _, v in walk(GATEWAY) if isinstance(v, str) for m in re.findall(r"\$\{env:(\w+)}", v)
    }
    assert wanted == {"CLICKHOUSE_USER", "CLICKHOUSE_PASSWORD"}
    assert wanted <= set(SERVICES["otel-gateway"]["environment"])
    assert wanted <= set(SERVICES["clickhouse"]["environment"])
    secrets = readme_secrets()
    assert secrets["clickhouse-credentials"] == wanted
    for name in ("otel-gateway", "clickhouse"):
        refs = [e["secretRef"]["name"] for e in container(name).get("envFrom", [])]
        assert refs[0] == "clickhouse-credentials", name
    # Grafana gets the read-only user's password, never the writer's
    assert "CLICKHOUSE_PASSWORD" not in SERVICES["grafana"]["environment"]
    grafana_refs = [e["secretRef"]["name"] for e in container("grafana")["envFrom"]]
    assert grafana_refs == ["clickhouse-grafana", "grafana-admin"]
    assert secrets["grafana-admin"] == {"GF_SECURITY_ADMIN_PASSWORD"}
    assert secrets["clickhouse-grafana"] == {"CLICKHOUSE_GRAFANA_PASSWORD"}
    assert secrets["hf-token"] == {"HF_TOKEN"}


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
        (mount,) = [m for m in c["volumeMounts"] if "configMap" in volumes.get(m["name"], {})]
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
    for exporter in exporters.values():
        assert set(exporter["sending_queue"]) <= {
            "enabled",
            "num_consumers",
            "queue_size",
            "storage",
        }


def test_the_merged_gateway_queues_every_exporter_on_disk() -> None:
    """The overlay's exporters (watch, Tempo) queue in the base's file_storage extension and
    retry until delivered, like the base's ClickHouse exporter: a gateway restart loses nothing
    on any of its outputs (the check of tests/unit/test_collector_configs.py, on the merge)."""
    merged = merged_gateway()
    assert queue_problems(merged) == []
    queued = [
        e for e in merged["exporters"] if e.split("/")[0] in ("otlp", "otlphttp", "clickhouse")
    ]
    assert sorted(queued) == ["clickhouse", "otlp/tempo", "otlphttp/watch"]


QUEUE_DIR = AGENT["extensions"]["file_storage/queue"]["directory"]


def test_collector_queues_are_on_volumes_that_outlive_the_container() -> None:
    """The file_storage directory of each collector is a volume mount: a named volume in
    compose (owned by the collector's uid through otelcol-init), a hostPath on each node for
    the agent DaemonSet (chowned by an init container), a volume claim per replica for the
    gateway StatefulSet (writable through fsGroup)."""
    assert GATEWAY["extensions"]["file_storage/queue"]["directory"] == QUEUE_DIR
    init = SERVICES["otelcol-init"]
    init_mounts = dict(v.split(":")[:2] for v in init["volumes"])
    chown = re.search(r"chown -R 10001:10001 ([^&]+)", " ".join(init["command"]))
    assert chown is not None
    for name in ("otel-agent", "otel-gateway"):
        mounts = {t: src for src, t in (v.split(":")[:2] for v in SERVICES[name]["volumes"])}
        volume = mounts[QUEUE_DIR]
        assert volume in COMPOSE["volumes"], name
        # the one-shot hands exactly that volume to uid 10001 before the collector starts
        assert init_mounts[volume] in chown[1].split(), name
        assert SERVICES[name]["depends_on"]["otelcol-init"] == {
            "condition": "service_completed_successfully"
        }
    agent = workloads()["otel-agent"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in agent["volumes"]}
    (queue,) = [m for m in container("otel-agent")["volumeMounts"] if m["mountPath"] == QUEUE_DIR]
    assert volumes[queue["name"]]["hostPath"]["type"] == "DirectoryOrCreate"
    (owner,) = agent["initContainers"]
    assert owner["command"] == ["chown", "-R", "10001:10001", QUEUE_DIR]
    assert [m["name"] for m in owner["volumeMounts"]] == [queue["name"]]
    gateway = workloads()["otel-gateway"]
    assert gateway["kind"] == "StatefulSet"
    (claim,) = gateway["spec"]["volumeClaimTemplates"]
    (mount,) = [m for m in container("otel-gateway")["volumeMounts"] if m["mountPath"] == QUEUE_DIR]
    assert mount["name"] == claim["metadata"]["name"]
    assert gateway["spec"]["template"]["spec"]["securityContext"]["fsGroup"] == 10001


# ---------------------------------------------------------------------------------------------
# Grafana: provisioning from dashboards/
# ---------------------------------------------------------------------------------------------
GRAFANA_MOUNTS = {
    "deploy/grafana/datasources": "/etc/grafana/provisioning/datasources",
    "dashboards/provisioning/dashboards": "/etc/grafana/provisioning/dashboards",
    "dashboards/json": "/var/lib/grafana/dashboards/otelbench",
}
# GF_INSTALL_PLUGINS entries: "<plugin id> <version>", comma-separated (Grafana's image run.sh
# passes each to `grafana cli plugins install`, which skips a plugin already installed at that
# version: pkg/cmd/grafana-cli/commands/install_command.go)
PLUGIN_ENTRY = re.compile(r"^([a-z0-9-]+) (\d+\.\d+\.\d+)$")


def installed_plugins(env: dict[str, str]) -> dict[str, str]:
    """Plugin id → pinned version, from GF_INSTALL_PLUGINS; a bare id (unpinned) fails."""
    plugins = {}
    for entry in env["GF_INSTALL_PLUGINS"].split(","):
        match = PLUGIN_ENTRY.match(entry.strip())
        assert match is not None, f"{entry!r}: pin the version (id X.Y.Z)"
        plugins[match[1]] = match[2]
    return plugins


def test_grafana_mounts_dashboards_provisioning_and_json_in_both() -> None:
    compose = {
        str((COMPOSE_DIR / s).resolve().relative_to(REPO)): t
        for s, t in bind_mounts(SERVICES["grafana"])
    }
    assert compose == GRAFANA_MOUNTS
    spec = workloads()["grafana"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounted = {
        volumes[m["name"]]["configMap"]["name"]: m["mountPath"]
        for m in container("grafana")["volumeMounts"]
        if "configMap" in volumes[m["name"]]
    }
    assert mounted == {
        "grafana-datasources": GRAFANA_MOUNTS["deploy/grafana/datasources"],
        "grafana-dashboard-providers": GRAFANA_MOUNTS["dashboards/provisioning/dashboards"],
        "grafana-dashboards": GRAFANA_MOUNTS["dashboards/json"],
    }


def test_grafana_plugins_are_pinned_and_kept_on_a_volume_in_both() -> None:
    """A pinned plugin in a persistent /var/lib/grafana is downloaded once, not on every start."""
    compose_env = SERVICES["grafana"]["environment"]
    assert installed_plugins(compose_env) == installed_plugins(env_of(container("grafana")))
    assert installed_plugins(compose_env) == {"grafana-clickhouse-datasource": "4.5.1"}
    assert "grafana-data:/var/lib/grafana" in SERVICES["grafana"]["volumes"]
    spec = workloads()["grafana"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    (data,) = [
        m for m in container("grafana")["volumeMounts"] if m["mountPath"] == "/var/lib/grafana"
    ]
    assert volumes[data["name"]]["persistentVolumeClaim"]["claimName"] in objects_of(
        "PersistentVolumeClaim"
    )
    assert workloads()["grafana"]["spec"]["strategy"]["type"] == "Recreate"


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
        plugins = set(installed_plugins(env))
        assert types <= builtin | plugins, types - builtin - plugins


def provisioned_datasources(directory: Path = DEPLOYED_DATASOURCES) -> list[dict[str, Any]]:
    """The datasources Grafana provisions here (deploy's copy of dashboards' file)."""
    sources: list[dict[str, Any]] = []
    for file in sorted(directory.glob("*.y*ml")):
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


def grafana_reader() -> ET.Element:
    """The read-only user element of deploy/clickhouse/users.d/grafana-reader.xml."""
    root = ET.parse(GRAFANA_READER_XML).getroot()
    users = root.find("users")
    assert users is not None
    (user,) = list(users)
    return user


def test_clickhouse_datasource_logs_in_as_the_read_only_user() -> None:
    """Grafana's ClickHouse datasource uses the users.d user, whose password ClickHouse and
    Grafana both take from one variable (compose: required; k8s: Secret clickhouse-grafana);
    that user may only read (readonly = 1, SELECT on the span database)."""
    (clickhouse,) = [
        d for d in provisioned_datasources() if d["type"].endswith("clickhouse-datasource")
    ]
    user = grafana_reader()
    assert clickhouse["jsonData"]["username"] == user.tag == "grafana"
    password = user.find("password")
    assert password is not None
    variable = password.get("from_env")
    assert variable == "CLICKHOUSE_GRAFANA_PASSWORD"
    assert not (password.text or "").strip(), "the password comes from the environment only"
    assert clickhouse["secureJsonData"]["password"] == f"${variable}"
    required = f"${{{variable}:?"
    assert SERVICES["clickhouse"]["environment"][variable].startswith(required)
    assert SERVICES["grafana"]["environment"][variable].startswith(required)
    assert readme_secrets()["clickhouse-grafana"] == {variable}
    for name in ("clickhouse", "grafana"):
        refs = [e["secretRef"]["name"] for e in container(name)["envFrom"]]
        assert "clickhouse-grafana" in refs, name
    # read-only: the profile's readonly = 1, max_execution_time changeable (the plugin sets it)
    root = ET.parse(GRAFANA_READER_XML).getroot()
    profile = root.find(f"profiles/{user.findtext('profile')}")
    assert profile is not None
    assert profile.findtext("readonly") == "1"
    assert profile.find("constraints/max_execution_time/changeable_in_readonly") is not None
    grants = [q.text for q in user.findall("grants/query")]
    assert grants == [f"GRANT SELECT ON {GATEWAY['exporters']['clickhouse']['database']}.*"]
    access = ET.parse(DEPLOY / "clickhouse/config.d/access-control.xml").getroot()
    replace = "access_control_improvements/settings_constraints_replace_previous"
    assert access.findtext(replace) == "true"


def test_deployed_datasources_are_dashboards_own_but_for_the_clickhouse_login() -> None:
    """deploy/grafana/datasources is dashboards/provisioning/datasources with only the
    ClickHouse datasource's user and password changed (deploy/k8s/generate.py derives it)."""
    source = provisioned_datasources(REPO / "dashboards/provisioning/datasources")
    deployed = provisioned_datasources()
    assert [(d["uid"], d["type"]) for d in deployed] == [(d["uid"], d["type"]) for d in source]
    for mine, theirs in zip(deployed, source, strict=True):
        if mine["type"] != "grafana-clickhouse-datasource":
            assert mine == theirs
            continue
        assert {**mine["jsonData"], "username": None} == {**theirs["jsonData"], "username": None}
        assert {k: v for k, v in mine.items() if k not in ("jsonData", "secureJsonData")} == {
            k: v for k, v in theirs.items() if k not in ("jsonData", "secureJsonData")
        }


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


def assert_strictly_valid(objects: list[dict[str, Any]], version: str) -> None:
    """Every object valid under Kubernetes ``version``'s strict schemas, or the first problem."""
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            name = f"{obj['kind']}/{obj['metadata']['name']}"
            pytest.fail(f"{name} (Kubernetes {version}): {error.message} at {list(error.path)}")


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_object_is_valid_under_the_strict_kubernetes_schemas(version: str) -> None:
    assert_strictly_valid(OBJECTS, version)


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
    """Secrets: the ones deploy/README.md's commands create, with the keys referenced."""
    configmaps, secrets = objects_of("ConfigMap"), readme_secrets()
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
        init = workload["spec"]["template"]["spec"].get("initContainers", [])
        for c in [*containers(workload), *init]:
            for mount in c.get("volumeMounts", []):
                assert mount["name"] in volumes or mount["name"] in templates, (name, mount)
            for source in c.get("envFrom", []):
                assert source["secretRef"]["name"] in secrets, (name, source)
                references += 1
            for variable in c.get("env", []):
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref is not None:
                    assert ref["key"] in secrets[ref["name"]], (name, ref)
                    references += 1
        if workload["kind"] == "StatefulSet":
            governing = services[workload["spec"]["serviceName"]]
            assert governing["spec"]["clusterIP"] == "None"
            references += 1
    assert references >= 16


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
    # the init containers' busybox is the compose one-shot's
    init_images = {
        c["image"]
        for w in workloads().values()
        for c in w["spec"]["template"]["spec"].get("initContainers", [])
    }
    assert init_images == {SERVICES["otelcol-init"]["image"]}
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
    "clickhouse-config": ["deploy/clickhouse/users.d/*", "deploy/clickhouse/config.d/*"],
    "grafana-datasources": ["deploy/grafana/datasources/*"],
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
    assert set(configmaps["clickhouse-config"]["data"]) == {
        "grafana-reader.xml",
        "access-control.xml",
    }


def test_generated_file_is_what_the_generator_writes() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("deploy_k8s_generate", K8S / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (K8S / "configmaps.generated.yaml").read_text(encoding="utf-8")
    assert module.render() == committed, "run python deploy/k8s/generate.py"
    datasources = (REPO / module.DATASOURCES_OUTPUT).read_text(encoding="utf-8")
    assert module.render_datasources() == datasources, "run python deploy/k8s/generate.py"
    assert module.main(["--check"]) == 0


# ---------------------------------------------------------------------------------------------
# start order: healthchecks, depends_on conditions, Kubernetes probes and init containers
# ---------------------------------------------------------------------------------------------
def host_of(endpoint: str) -> str | None:
    """The host of ``scheme://host:port/...`` or ``host:port``."""
    return urlsplit(endpoint if "://" in endpoint else f"//{endpoint}").hostname


def compose_needs() -> dict[str, set[str]]:
    """Service → the services its own configuration sends to (so it must start after them):
    the collectors' exporter endpoints, vLLM's OTLP endpoint, Grafana's datasources, the probe's
    target and OTLP endpoint. Prometheus is left out on purpose: it scrapes whatever is up."""

    def services_in(endpoints: list[str]) -> set[str]:
        return {h for h in map(host_of, endpoints) if h in SERVICES}

    merged = merged_gateway()
    probe = parse_cli(SERVICES["probe"]["command"])
    datasources = [
        d.get("url") or f"{d['jsonData']['host']}:{d['jsonData']['port']}"
        for d in provisioned_datasources()
    ]
    needs = {
        "otel-gateway": services_in([e["endpoint"] for e in merged["exporters"].values()]),
        "otel-agent": services_in([e["endpoint"] for e in AGENT["exporters"].values()]),
        "vllm": services_in([SERVICES["vllm"]["environment"][semconv.ENV_OTLP_TRACES_ENDPOINT]]),
        "grafana": services_in(datasources),
        "probe": services_in([probe["target"], probe["otlp_endpoint"]]),
    }
    return {name: hosts for name, hosts in needs.items() if hosts}


def test_compose_services_wait_for_what_they_send_to() -> None:
    """Every depends_on has a condition: ``service_healthy`` on a service with a healthcheck,
    or ``service_completed_successfully`` on a one-shot; each service waits, healthy, for every
    service its configuration sends to. So the gateway (whose ClickHouse exporter creates its
    tables at start and exits when ClickHouse does not answer) starts after ClickHouse is up."""
    needs = compose_needs()
    assert needs == {
        "otel-gateway": {"clickhouse", "otelbench-watch", "tempo"},
        "otel-agent": {"otel-gateway"},
        "vllm": {"otel-agent"},
        "grafana": {"prometheus", "clickhouse", "tempo"},
        "probe": {"vllm", "otel-agent"},
    }
    for name, service in SERVICES.items():
        depends = service.get("depends_on", {})
        assert isinstance(depends, dict), f"{name}: depends_on without a condition"
        conditions = {d: c["condition"] for d, c in depends.items()}
        healthy = {d for d, c in conditions.items() if c == "service_healthy"}
        done = {d for d, c in conditions.items() if c == "service_completed_successfully"}
        assert healthy | done == set(conditions), f"{name}: {conditions}"
        assert needs.get(name, set()) <= healthy, f"{name} must wait for {needs[name] - healthy}"
        for dependency in healthy:
            assert "healthcheck" in SERVICES[dependency], f"{name} waits on {dependency}"
        for dependency in done:
            assert SERVICES[dependency]["restart"] == "no", dependency
            assert "healthcheck" not in SERVICES[dependency], dependency
    assert "depends_on" not in SERVICES["prometheus"]


# The program each healthcheck runs, by image: the collector and Tempo images have no shell or
# HTTP client (the contrib image is FROM scratch), so theirs runs the static busybox otelcol-init
# copies into a volume; the others use what their base image has.
IMAGE_PROBE_PROGRAMS = {
    "otelbench/vllm-hooks": "python3",  # vLLM's image is a Python application
    "otelbench/otelbench": "python",  # python:3.11-slim
    "clickhouse/clickhouse-server": "wget",  # its entrypoint itself pings with wget
    "prom/prometheus": "wget",  # busybox-based
    "grafana/grafana": "wget",  # Alpine-based
    "otel/opentelemetry-collector-contrib": "/otelcol-tools/busybox",
    "grafana/tempo": "/otelcol-tools/busybox",
}
CLICKHOUSE_STARTED = "grep -q clickhouse-server /proc/1/cmdline && "
HEALTH_URL = re.compile(r"http://([^:/\s\"']+):(\d+)(/[^\s\"';]*)")


def health_url(service: dict[str, Any]) -> tuple[str, int, str]:
    """(host, port, path) the compose healthcheck requests."""
    match = HEALTH_URL.search(" ".join(service["healthcheck"]["test"]))
    assert match is not None, service["healthcheck"]
    return match[1], int(match[2]), match[3]


def health_port(name: str) -> int:
    """Where a service answers its health check: the collectors' health_check extension, the
    others on a port they listen on."""
    if name == "otel-agent":
        return port_of_endpoint(AGENT["extensions"]["health_check"]["endpoint"])
    if name == "otel-gateway":
        return port_of_endpoint(GATEWAY["extensions"]["health_check"]["endpoint"])
    raise KeyError(name)


def test_every_healthcheck_probes_its_own_service_with_a_program_its_image_has() -> None:
    listening = listening_ports()
    checked = set()
    init = SERVICES["otelcol-init"]
    init_targets = dict(v.split(":")[:2] for v in init["volumes"])
    for name, service in SERVICES.items():
        if "healthcheck" not in service:
            continue
        test = service["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL"), name
        program = test[1].split("&&")[-1].split()[0]  # the one that requests the URL
        image = service["image"].split(":")[0]
        assert program == IMAGE_PROBE_PROGRAMS[image], name
        host, port, _ = health_url(service)
        if name in ("otel-agent", "otel-gateway"):
            assert port == health_port(name), name
        else:
            assert port in listening[name], name
        assert host == "127.0.0.1", name
        if name == "clickhouse":
            # not the entrypoint's temporary server (first start: it creates the database, then
            # PID 1 execs the real one)
            assert test[1].startswith(CLICKHOUSE_STARTED), test
        if program.startswith("/otelcol-tools/"):
            mounts = dict(v.split(":")[:2] for v in service["volumes"])
            tools = {t: s for s, t in mounts.items()}["/otelcol-tools"]
            copied = f"{init_targets[tools]}/busybox"
            assert copied in " ".join(init["command"]), name
            assert service["depends_on"]["otelcol-init"]["condition"] == (
                "service_completed_successfully"
            )
        checked.add(name)
    assert checked >= {"clickhouse", "otel-gateway", "prometheus", "grafana"}
    assert checked == set(SERVICES) - {"otelcol-init", "probe"}


def probe_target(workload: str, probe: dict[str, Any]) -> tuple[int, str]:
    """(container port, path) of a Kubernetes probe: an httpGet's, a named port resolved, or the
    URL an exec probe requests from the container itself."""
    if "exec" in probe:
        match = HEALTH_URL.search(" ".join(probe["exec"]["command"]))
        assert match is not None, probe
        assert match[1] == "127.0.0.1", probe
        return int(match[2]), match[3]
    ports = {p["name"]: p["containerPort"] for p in container(workload)["ports"]}
    port = probe["httpGet"]["port"]
    return ports.get(port, port), probe["httpGet"]["path"]


def test_k8s_readiness_probes_check_what_the_compose_healthchecks_check() -> None:
    """Every container has a readiness probe (a Service sends only to ready pods), on the same
    port and path as its compose twin's healthcheck."""
    for name, workload in workloads().items():
        for c in containers(workload):
            assert "readinessProbe" in c, f"{name}/{c['name']}"
        port, path = probe_target(name, container(name)["readinessProbe"])
        assert (port, path) == health_url(SERVICES[name])[1:], name
    for name in ("vllm", "clickhouse", "otel-agent", "otel-gateway", "grafana"):
        assert "livenessProbe" in container(name), name
    # ClickHouse is ready (and started) with the compose healthcheck's own command
    compose_test = SERVICES["clickhouse"]["healthcheck"]["test"][1]
    for probe in ("startupProbe", "readinessProbe"):
        assert container("clickhouse")[probe]["exec"]["command"] == ["sh", "-c", compose_test]


def test_k8s_gateway_starts_after_clickhouse_answers() -> None:
    """The gateway's init container waits until the ClickHouse Service answers /ping on its
    HTTP port (the Service routes only to a ready ClickHouse pod), like compose's
    service_healthy: its exporter, which creates the tables at start, never meets a missing
    ClickHouse on a first start."""
    (wait,) = workloads()["otel-gateway"]["spec"]["template"]["spec"]["initContainers"]
    match = HEALTH_URL.search(" ".join(wait["command"]))
    assert match is not None
    host, port, path = match[1], int(match[2]), match[3]
    assert host == host_of(GATEWAY["exporters"]["clickhouse"]["endpoint"])
    service_ports = {p["port"] for p in objects_of("Service")[host]["spec"]["ports"]}
    assert port in service_ports
    assert (port, path) == probe_target("clickhouse", container("clickhouse")["readinessProbe"])
    assert "until wget" in " ".join(wait["command"])


# ---------------------------------------------------------------------------------------------
# Kubernetes on GPU nodes
# ---------------------------------------------------------------------------------------------
def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    """Kubernetes' rule: a toleration matches a taint when the keys match (an empty key with
    Exists matches every key), the effect matches or is empty, and Exists or equal values."""
    for t in tolerations:
        key_ok = t.get("key") in (None, "", taint["key"])
        effect_ok = t.get("effect") in (None, "", taint["effect"])
        value_ok = t.get("operator") == "Exists" or t.get("value") == taint.get("value")
        if key_ok and effect_ok and value_ok:
            return True
    return False


def test_an_agent_runs_wherever_vllm_runs() -> None:
    """The otel-agent Service is internalTrafficPolicy: Local, so vLLM's spans need an agent on
    vLLM's node: the DaemonSet tolerates every taint vLLM tolerates (the GPU taint)."""
    agent = workloads()["otel-agent"]["spec"]["template"]["spec"]["tolerations"]
    vllm = workloads()["vllm"]["spec"]["template"]["spec"]["tolerations"]
    gpu_taint = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
    assert tolerates(vllm, gpu_taint)
    for toleration in vllm:
        taint = {"key": toleration["key"], "effect": toleration["effect"]}
        assert tolerates(agent, taint), toleration
    assert not tolerates(agent, {"key": "dedicated", "effect": "NoSchedule"})


def apply_json_patch(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 ``add`` / ``replace`` on a copy of ``obj`` (all the component uses)."""
    result: dict[str, Any] = json.loads(json.dumps(obj))
    for op in ops:
        assert op["op"] in ("add", "replace"), op
        *parents, last = op["path"].strip("/").split("/")
        node = result
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if op["op"] == "replace":
            assert last in node, op["path"]
        node[last] = op["value"]
    return result


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_the_tolerate_all_taints_component_patches_the_agent_validly(version: str) -> None:
    component = load_yaml(K8S / "components/agent-tolerate-all-taints/kustomization.yaml")
    assert component["kind"] == "Component"
    (patch,) = component["patches"]
    target = patch["target"]
    agent = workloads()[target["name"]]
    assert (target["group"] + "/" + target["version"], target["kind"]) == (
        agent["apiVersion"],
        agent["kind"],
    )
    patched = apply_json_patch(agent, yaml.safe_load(patch["patch"]))
    kubernetes_validate.validate(patched, version, strict=True)
    tolerations = patched["spec"]["template"]["spec"]["tolerations"]
    assert tolerates(tolerations, {"key": "amd.com/gpu", "effect": "NoExecute"})


def test_vllm_asks_for_its_gpu_cpu_memory_and_is_probed() -> None:
    c = container("vllm")
    requests, limits = c["resources"]["requests"], c["resources"]["limits"]
    assert {"cpu", "memory", "nvidia.com/gpu"} <= set(requests)
    # an extended resource's request must equal its limit
    assert requests["nvidia.com/gpu"] == limits["nvidia.com/gpu"] == "1"
    assert "memory" in limits
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert probe_target("vllm", c[probe]) == (vllm_port(), "/health"), probe
    # the startup probe covers a model download before liveness may restart the pod
    startup = c["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 600
    (token,) = [e for e in c["env"] if e["name"] == "HF_TOKEN"]
    assert token["valueFrom"]["secretKeyRef"] == {
        "name": "hf-token",
        "key": "HF_TOKEN",
        "optional": True,
    }
    # compose: exactly one GPU for one unsharded vLLM, not every GPU of the host
    (device,) = SERVICES["vllm"]["deploy"]["resources"]["reservations"]["devices"]
    assert "count" not in device
    assert len(device["device_ids"]) == 1
