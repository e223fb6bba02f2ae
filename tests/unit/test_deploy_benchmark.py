"""Static validation of deploy/k8s/benchmark: one run sent from many pods, and its report.

No cluster exists here (tests/unit/test_deploy.py says what that means). The kustomization is
built here as kustomize builds it, for the features it uses (resources, the namespace, a
ConfigMap from literals without a name hash, JSON 6902 ``replace`` patches, image tags; run
``kubectl kustomize deploy/k8s/benchmark`` to compare), then checked: every object is valid under
the strict Kubernetes schemas; the shard count is one setting (the ConfigMap's SHARDS, the
Indexed Job's completions and parallelism); every ``$(VAR)`` of the command lines is defined by
the ConfigMap or the Secret deploy/README.md creates; the command lines, with those values
substituted, parse with the real CLI and name the deployed gateway and ClickHouse; the pods are
spread over nodes with whole, guaranteed CPUs; the report waits for the shards in the store.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from otelbench.loadgen.shard import ENV_SHARD_INDEX, parse_start
from tests.unit.test_deploy import (
    K8S,
    K8S_VERSIONS,
    assert_strictly_valid,
    objects_of,
    parse_cli,
    readme_secrets,
)

BENCH = K8S / "benchmark"
KUSTOMIZATION: dict[str, Any] = yaml.safe_load((BENCH / "kustomization.yaml").read_text())


def _pointer(path: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:]]


def build(kustomization: dict[str, Any], root: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize`` makes of ``kustomization`` (the features used here)."""
    objects: list[dict[str, Any]] = []
    for name in kustomization["resources"]:
        objects += [d for d in yaml.safe_load_all((root / name).read_text()) if d]
    for generator in kustomization.get("configMapGenerator", []):
        assert kustomization["generatorOptions"]["disableNameSuffixHash"] is True
        data = dict(item.split("=", 1) for item in generator["literals"])
        objects.append(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": generator["name"]},
             "data": data}
        )  # fmt: skip
    for patch in kustomization.get("patches", []):
        target = patch["target"]
        (obj,) = [
            o for o in objects
            if o["kind"] == target["kind"] and o["metadata"]["name"] == target["name"]
        ]  # fmt: skip
        for op in yaml.safe_load(patch["patch"]):
            assert op["op"] == "replace"
            *parents, last = _pointer(op["path"])
            node = obj
            for key in parents:
                node = node[key]
            assert last in node, f"replace of an absent {op['path']}"
            node[last] = op["value"]
    tags = {i["name"]: i["newTag"] for i in kustomization.get("images", [])}
    for obj in objects:
        obj["metadata"]["namespace"] = kustomization["namespace"]
        for c in _containers(obj):
            name = c["image"].split(":")[0]
            if name in tags:
                c["image"] = f"{name}:{tags[name]}"
    return objects


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] != "Job":
        return []
    found: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return found


OBJECTS = build(KUSTOMIZATION, BENCH)


def only(kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in OBJECTS if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


SETTINGS: dict[str, str] = only("ConfigMap", "otelbench-benchmark")["data"]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_object_is_valid_under_the_strict_kubernetes_schemas(version: str) -> None:
    assert_strictly_valid(OBJECTS, version)


def test_the_shard_count_is_one_setting_and_each_pod_is_one_shard() -> None:
    job = only("Job", "otelbench-shards")
    shards = int(SETTINGS["SHARDS"])
    assert job["spec"]["completionMode"] == "Indexed"  # pod I gets JOB_COMPLETION_INDEX=I
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == shards
    assert job["spec"]["backoffLimit"] == 0  # a shard sent again would be off its schedule
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert ENV_SHARD_INDEX == "JOB_COMPLETION_INDEX"
    # the patch in kustomization.yaml is the only place the count is changed: the file's own
    # values equal the patched ones (a reader of sharded-run.yaml is not misled)
    raw = yaml.safe_load((BENCH / "sharded-run.yaml").read_text())
    assert raw["spec"]["completions"] == raw["spec"]["parallelism"] == shards


def _substituted(args: list[str], env: dict[str, str]) -> list[str]:
    def value(match: re.Match[str]) -> str:
        name = match[1]
        assert name in env, f"$({name}) is defined by neither the ConfigMap nor the Secret"
        return env[name]

    return [re.sub(r"\$\(([A-Z_][A-Z0-9_]*)\)", value, arg) for arg in args]


def _environment(container: dict[str, Any]) -> dict[str, str]:
    """What the container's ``$(VAR)`` references resolve to: its ConfigMap's values, and
    placeholders for the keys of the Secrets deploy/README.md creates."""
    secrets = readme_secrets()
    env: dict[str, str] = {}
    for source in container["envFrom"]:
        if "configMapRef" in source:
            assert source["configMapRef"]["name"] == "otelbench-benchmark"
            env.update(SETTINGS)
        else:
            name = source["secretRef"]["name"]
            assert name in secrets, f"Secret {name} is not one deploy/README.md creates"
            env.update({key: f"secret-{key.lower()}" for key in secrets[name]})
    return env


def test_the_shard_command_line_parses_and_sends_to_the_deployed_stack() -> None:
    (shard,) = _containers(only("Job", "otelbench-shards"))
    params = parse_cli(_substituted(shard["args"], _environment(shard)))
    assert params["shards"] == int(SETTINGS["SHARDS"])
    assert params["shard"] is None  # the index comes from JOB_COMPLETION_INDEX
    assert params["run_id"] == SETTINGS["RUN_ID"]
    assert parse_start(params["start_at"]) > 0
    assert params["clock_reference"] in ("", None) or ":" in params["clock_reference"]
    services = objects_of("Service")
    gateway = re.fullmatch(r"http://([a-z0-9-]+):(\d+)", params["otlp_endpoint"])
    assert gateway is not None
    ports = {p["port"] for p in services[gateway[1]]["spec"]["ports"]}
    assert int(gateway[2]) in ports
    store = re.fullmatch(r"clickhouse://[^:]+:[^@]+@([a-z0-9-]+):(\d+)/(\w+)", params["store"])
    assert store is not None, params["store"]
    assert int(store[2]) in {p["port"] for p in services[store[1]]["spec"]["ports"]}


def test_the_report_waits_for_the_shards_in_the_same_store() -> None:
    (report,) = _containers(only("Job", "otelbench-report"))
    (shard,) = _containers(only("Job", "otelbench-shards"))
    env = _environment(report)
    params = parse_cli(_substituted(report["args"], env))
    assert params["run_id"] == SETTINGS["RUN_ID"]
    assert params["wait"] >= 60
    shard_params = parse_cli(_substituted(shard["args"], _environment(shard)))
    assert params["store"] == shard_params["store"]
    claims = {o["metadata"]["name"] for o in OBJECTS if o["kind"] == "PersistentVolumeClaim"}
    (volume,) = only("Job", "otelbench-report")["spec"]["template"]["spec"]["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] in claims
    (mount,) = report["volumeMounts"]
    assert str(params["directory"]).startswith(mount["mountPath"] + "/")


def test_shard_pods_are_spread_over_nodes_with_whole_guaranteed_cpus() -> None:
    job = only("Job", "otelbench-shards")
    pod = job["spec"]["template"]
    (spread,) = pod["spec"]["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert spread["whenUnsatisfiable"] == "DoNotSchedule"
    assert spread["labelSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (shard,) = pod["spec"]["containers"]
    resources = shard["resources"]
    assert resources["requests"] == resources["limits"]  # Guaranteed QoS
    assert float(resources["requests"]["cpu"]).is_integer()  # whole cores: pinnable


def test_the_image_is_the_one_the_watch_deployment_runs() -> None:
    watch = objects_of("Deployment")["otelbench-watch"]
    (image,) = {c["image"] for c in watch["spec"]["template"]["spec"]["containers"]}
    for name in ("otelbench-shards", "otelbench-report"):
        (c,) = _containers(only("Job", name))
        assert c["image"] == image


def test_the_builder_applies_the_patch_as_kustomize_does() -> None:
    """The emulation above replaces what the patch names, and refuses a path the object lacks
    (kustomize fails on it too)."""
    changed = copy.deepcopy(KUSTOMIZATION)
    changed["patches"][0]["patch"] = "- op: replace\n  path: /spec/completions\n  value: 7\n"
    (job,) = [o for o in build(changed, BENCH) if o["metadata"]["name"] == "otelbench-shards"]
    assert job["spec"]["completions"] == 7
    changed["patches"][0]["patch"] = "- op: replace\n  path: /spec/nothing\n  value: 7\n"
    with pytest.raises(AssertionError, match="replace of an absent /spec/nothing"):
        build(changed, BENCH)
