"""The dependency-audit policy (scripts/audit_policy.py, docs/security.md) on pip-audit reports.

The reports are pip-audit's JSON format written here, because the PyPI index this machine reaches
has no per-version JSON and so no real report here has a finding (scripts/audit.sh runs the real
pip-audit in CI; this checks what the policy does with what it would report).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "audit_policy.py"


@pytest.fixture(scope="module")
def policy() -> ModuleType:
    spec = importlib.util.spec_from_file_location("audit_policy", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def report(*packages: dict[str, Any]) -> dict[str, Any]:
    return {"dependencies": list(packages), "fixes": []}


VULNERABLE = {
    "name": "Some_Package",
    "version": "1.0",
    "vulns": [{"id": "PYSEC-2026-1", "aliases": ["GHSA-aaaa-bbbb-cccc"], "fix_versions": ["1.1"]}],
}
CLEAN = {"name": "clean", "version": "2.0", "vulns": []}
UNKNOWN = {"name": "torch", "skip_reason": "Dependency not found on PyPI"}
OWN = {"name": "otelbench", "skip_reason": "Dependency not found on PyPI"}


def run(
    policy: ModuleType,
    tmp_path: Path,
    reports: dict[str, dict[str, Any] | None],
    exceptions: str = "",
    *extra: str,
) -> tuple[int, dict[str, Any] | None]:
    args = []
    for env, content in reports.items():
        path = tmp_path / f"{env}.json"
        if content is not None:
            path.write_text(json.dumps(content))
        args.append(f"{env}={path}")
    (tmp_path / "exceptions.toml").write_text(exceptions)
    summary = tmp_path / "summary.json"
    code = policy.main(
        [
            *args,
            "--exceptions",
            str(tmp_path / "exceptions.toml"),
            "--summary",
            str(summary),
            *extra,
        ]
    )
    return code, json.loads(summary.read_text()) if summary.exists() else None


def exception(expires: dt.date, environments: str = "") -> str:
    return (
        '[[exception]]\nid = "GHSA-aaaa-bbbb-cccc"\npackage = "some-package"\n'
        f'reason = "not reachable"\nexpires = {expires.isoformat()}\n{environments}'
    )


def test_a_known_vulnerability_fails(policy: ModuleType, tmp_path: Path) -> None:
    code, summary = run(policy, tmp_path, {"main": report(VULNERABLE, CLEAN, OWN)})
    assert code == policy.EXIT_POLICY
    assert summary is not None
    [env] = summary["environments"]
    assert env["packages"] == 2  # otelbench itself is not counted
    assert [f["status"] for f in env["findings"]] == ["FAIL"]


def test_an_unexpired_exception_by_alias_accepts_it(policy: ModuleType, tmp_path: Path) -> None:
    future = dt.date.today() + dt.timedelta(days=30)
    code, _ = run(policy, tmp_path, {"main": report(VULNERABLE)}, exception(future))
    assert code == policy.EXIT_OK


def test_an_expired_exception_fails_again(policy: ModuleType, tmp_path: Path) -> None:
    past = dt.date.today() - dt.timedelta(days=1)
    code, _ = run(policy, tmp_path, {"main": report(VULNERABLE)}, exception(past))
    assert code == policy.EXIT_POLICY


def test_an_exception_holds_only_in_its_environments(policy: ModuleType, tmp_path: Path) -> None:
    future = dt.date.today() + dt.timedelta(days=30)
    vllm_only = exception(future, 'environments = ["vllm"]\n')
    reports = {"main": report(VULNERABLE), "vllm": report(VULNERABLE)}
    assert run(policy, tmp_path, reports, vllm_only)[0] == policy.EXIT_POLICY
    assert run(policy, tmp_path, {"vllm": report(VULNERABLE)}, vllm_only)[0] == policy.EXIT_OK


def test_unaudited_packages_warn_unless_coverage_is_required(
    policy: ModuleType, tmp_path: Path
) -> None:
    assert run(policy, tmp_path, {"main": report(CLEAN, UNKNOWN)})[0] == policy.EXIT_OK
    code, _ = run(policy, tmp_path, {"main": report(CLEAN, UNKNOWN)}, "", "--require-coverage")
    assert code == policy.EXIT_POLICY


def test_a_missing_report_means_the_audit_did_not_run(policy: ModuleType, tmp_path: Path) -> None:
    assert run(policy, tmp_path, {"main": None})[0] == policy.EXIT_NOT_RUN


def test_a_malformed_exception_is_refused(policy: ModuleType, tmp_path: Path) -> None:
    no_reason = '[[exception]]\nid = "X"\npackage = "p"\nexpires = 2030-01-01\n'
    assert run(policy, tmp_path, {"main": report(CLEAN)}, no_reason)[0] == policy.EXIT_POLICY
