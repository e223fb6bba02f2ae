"""Apply otelbench's dependency-audit policy (docs/security.md) to pip-audit's JSON reports.

    python scripts/audit_policy.py --exceptions scripts/audit-exceptions.toml \\
        --summary out/audit/summary.json main=out/audit/main.json vllm=out/audit/vllm.json

Prints a table per environment (packages, audited, not audited, findings) and one row per
finding, writes the summary JSON, and exits

* 0 — no finding outside an unexpired exception;
* 1 — a known vulnerability without an exception, an expired exception, a malformed exceptions
  file, or (with ``--require-coverage``) a third-party package pip-audit could not look up;
* 2 — a report is missing or unreadable (the audit did not run).

Standard library only (it runs in the audit tool's own venv).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OWN = frozenset({"otelbench", "otelbench-vllm-hooks"})
"""This repository's own distributions: not looked up, not counted as unaudited."""

EXIT_OK, EXIT_POLICY, EXIT_NOT_RUN = 0, 1, 2


@dataclass(frozen=True)
class AcceptedRisk:
    id: str
    package: str
    reason: str
    expires: dt.date
    environments: frozenset[str]

    def covers(self, env: str, package: str, ids: set[str]) -> bool:
        return (
            self.package == _canon(package)
            and self.id in ids
            and (not self.environments or env in self.environments)
        )


def _canon(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def load_exceptions(path: Path) -> list[AcceptedRisk]:
    """The ``[[exception]]`` tables of the exceptions file; a malformed one is a ValueError."""
    if not path.exists():
        return []
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out = []
    for i, item in enumerate(data.get("exception", []), 1):
        missing = {"id", "package", "reason", "expires"} - set(item)
        if missing:
            raise ValueError(f"{path}: exception #{i} lacks {', '.join(sorted(missing))}")
        if not isinstance(item["expires"], dt.date):
            raise ValueError(f"{path}: exception #{i}: expires must be a date (2026-12-31)")
        envs = item.get("environments", [])
        out.append(
            AcceptedRisk(
                id=str(item["id"]),
                package=_canon(str(item["package"])),
                reason=str(item["reason"]),
                expires=item["expires"],
                environments=frozenset(str(e) for e in envs),
            )
        )
    return out


def evaluate(
    env: str, report: dict[str, Any], exceptions: list[AcceptedRisk], today: dt.date
) -> dict[str, Any]:
    """One environment's counts and findings under the policy."""
    packages = report.get("dependencies", [])
    own = [p for p in packages if _canon(p["name"]) in OWN]
    unaudited = [p for p in packages if "skip_reason" in p and _canon(p["name"]) not in OWN]
    findings = []
    for package in packages:
        for vuln in package.get("vulns", []):
            ids = {vuln["id"], *vuln.get("aliases", [])}
            match = next((e for e in exceptions if e.covers(env, package["name"], ids)), None)
            if match is None:
                status = "FAIL"
            elif match.expires < today:
                status = f"FAIL: exception expired {match.expires}"
            else:
                status = f"excepted until {match.expires}"
            findings.append(
                {
                    "package": package["name"],
                    "version": package["version"],
                    "id": vuln["id"],
                    "aliases": sorted(ids - {vuln["id"]}),
                    "fix_versions": vuln.get("fix_versions", []),
                    "status": status,
                }
            )
    return {
        "environment": env,
        "packages": len(packages) - len(own),
        "audited": len(packages) - len(own) - len(unaudited),
        "unaudited": sorted(p["name"] for p in unaudited),
        "findings": findings,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", help="ENV=pip-audit-report.json")
    ap.add_argument("--exceptions", type=Path, required=True)
    ap.add_argument("--summary", type=Path, required=True)
    ap.add_argument("--require-coverage", action="store_true")
    args = ap.parse_args(argv)
    today = dt.datetime.now(dt.UTC).date()
    try:
        exceptions = load_exceptions(args.exceptions)
    except (ValueError, tomllib.TOMLDecodeError) as err:
        print(f"audit: {err}", file=sys.stderr)
        return EXIT_POLICY
    results = []
    for item in args.reports:
        env, _, path = item.partition("=")
        try:
            report = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            print(f"audit: no pip-audit report for {env} ({err}): the audit did not run")
            return EXIT_NOT_RUN
        results.append(evaluate(env, report, exceptions, today))
    failed = [f for r in results for f in r["findings"] if f["status"].startswith("FAIL")]
    uncovered = sum(len(r["unaudited"]) for r in results)
    expired = [e for e in exceptions if e.expires < today]
    print(f"{'environment':<12} {'packages':>8} {'audited':>8} {'not audited':>12} {'findings':>9}")
    for r in results:
        print(
            f"{r['environment']:<12} {r['packages']:>8} {r['audited']:>8} "
            f"{len(r['unaudited']):>12} {len(r['findings']):>9}"
        )
    for r in results:
        for f in r["findings"]:
            fixes = ", ".join(f["fix_versions"]) or "none"
            print(
                f"  {r['environment']}: {f['package']} {f['version']} {f['id']} "
                f"(fixed in {fixes}): {f['status']}"
            )
    for e in expired:
        print(f"  exception {e.id} for {e.package} expired on {e.expires}: review it")
    if uncovered:
        print(
            f"  {uncovered} package versions could not be looked up on PyPI (not published "
            "there, or the index has no per-version JSON): see the summary"
        )
    verdict = EXIT_OK
    if failed or expired or (args.require_coverage and uncovered):
        verdict = EXIT_POLICY
    summary = {
        "date": today.isoformat(),
        "service": "pypi",
        "verdict": "pass" if verdict == EXIT_OK else "fail",
        "environments": results,
    }
    args.summary.parent.mkdir(parents=True, exist_ok=True)
    args.summary.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"audit: {summary['verdict']} (summary: {args.summary})")
    return verdict


if __name__ == "__main__":
    sys.exit(main())
