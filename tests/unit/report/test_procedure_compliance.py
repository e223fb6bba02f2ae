"""A procedure's own verdict (draft 2: compliance is per test): section 4's statements and its own
section's, over all of its levels' run reports and the procedure's own facts.

The level reports are ``test_compliance``'s hand-built ones; the procedure dicts carry the
``procedure.json`` keys the verdict reads (``draft_section``, ``configuration.sut``, ``levels``,
``parameters``).
"""

from __future__ import annotations

from typing import Any

from otelbench.render.html import render_procedure_html
from otelbench.render.procedure import render_procedure
from otelbench.report.compliance import (
    VERDICT_CONDITIONAL,
    VERDICT_NOT_COMPLIANT,
    procedure_compliance,
)
from otelbench.report.curve import procedure_curve
from tests.unit.report.test_compliance import full_report


def procedure(section: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": "A procedure",
        "draft_section": section,
        "procedure": "p",
        "profile": "draft",
        "store": "spans.duckdb",
        "duration_s": 10.0,
        "parameters": {},
        "configuration": {"sut": {"boundary": "Model Engine"}, "workload": {"name": "w"}},
        "levels": [{"index": 1, "label": "25%"}, {"index": 2, "label": "50%"}],
        "runs": [],
        "deviations": [],
        "notes": [],
        **extra,
    }


def test_a_5_1_procedure_is_judged_over_every_level() -> None:
    short = full_report()
    short["metrics"]["client"]["ttft_ms"]["count"] = 999
    buckets = short["metrics"]["client"]["ttft_by_input_tokens"]
    buckets[0]["count"], buckets[1]["count"] = 999, 0
    result = procedure_compliance(
        procedure("5.1"), [("level 1 (25%)", full_report()), ("level 2 (50%)", short)]
    )
    (test,) = result["tests"]
    assert (test["test"], test["verdict"]) == ("5.1", VERDICT_NOT_COMPLIANT)
    assert result["verdict"] == VERDICT_NOT_COMPLIANT
    assert test["unmet_must"] == ["ttft-request-count"]
    (row,) = [s for s in test["statements"] if s["id"] == "ttft-request-count"]
    assert row["evidence"] == (
        "sample-count-p99: level 2 (50%): 10000 requests, 999 TTFT samples; P99 needs at least "
        "1000; sample-count-p99-9: level 2 (50%): 10000 requests, 999 TTFT samples; P99.9 needs "
        "at least 10000"
    )
    checks = {c["id"]: c for c in result["checks"]}
    assert checks["sut-boundary"]["evidence"] == (
        "every run it applies to (2); level 1 (25%): declared: run.sut.boundary Model Engine "
        "(draft 4.1.1)"
    )
    # only the checks that bear on 5.1: none of another test's workloads
    assert "fairness-workload" not in checks
    assert "poisson-arrivals" in checks


def test_the_levels_of_a_5_4_procedure_meet_the_load_level_recommendation() -> None:
    result = procedure_compliance(procedure("5.4"), [("level 1 (25%)", full_report())])
    (test,) = result["tests"]
    assert test["unmet_should"] == ["grpc-model-engine"]  # the levels are there; gRPC is not
    (row,) = [s for s in test["statements"] if s["id"] == "itl-load-levels"]
    assert (row["met"], row["evidence"]) == (True, "itl-load-levels: 2 load level(s): 25%, 50%")


def test_5_6_requires_the_synthetic_skewed_workload() -> None:
    mixed = full_report()
    mixed["run"]["workload"]["name"] = "mixed-classes"
    mixed["run"]["workload"]["spec"]["draft_section"] = "5.6.2"
    skewed = full_report()
    skewed["run"]["workload"]["spec"]["draft_section"] = "A.2"
    params = {"parameters": {"rate": 8.0, "saturation_rps": 10.0}}
    bad = procedure_compliance(procedure("5.6", **params), [("level 1 (mixed)", mixed)])
    good = procedure_compliance(procedure("5.6", **params), [("level 1 (mixed)", skewed)])
    assert bad["tests"][0]["unmet_must"] == ["fairness-workload"]
    assert good["tests"][0]["unmet_must"] == []
    assert good["tests"][0]["verdict"] == VERDICT_CONDITIONAL  # gRPC for a Model Engine


def test_procedure_md_and_html_carry_the_verdict() -> None:
    result = procedure("5.1")
    result["compliance"] = procedure_compliance(result, [("level 1 (25%)", full_report())])
    md = render_procedure(result, ["## Results", ""])
    assert md.endswith("Scope: " + result["compliance"]["scope"] + ".\n")
    assert "## Methodology Compliance\n\n**Verdict: conditionally compliant** (draft 2; " in md
    assert "| 5.1 Time to First Token | **conditionally compliant** |" in md
    assert "| `grpc-model-engine`: RECOMMENDED for Model Engine testing. | 4.6.1 |" in md
    html = render_procedure_html(result, md, procedure_curve(result))
    assert "<h2>Methodology compliance (draft 2)</h2>" in html
    assert (
        "<tr><td>5.1 Time to First Token</td><td><strong>conditionally compliant</strong></td>"
        "<td>grpc-model-engine</td></tr>"
    ) in html


def test_a_procedure_judges_its_warm_up_on_the_level_that_warmed_up() -> None:
    """The draft's procedures warm up once, then run every level: a later level without a
    warm-up of its own does not fail 4.5.1; a procedure none of whose levels warmed up does."""
    later = full_report()
    later["run"]["warmup"] = None
    del later["run"]["phases"]["warmup"], later["run"]["phases"]["probe"]
    levels = [("level 1 (25%)", full_report()), ("level 2 (50%)", later)]
    (test,) = procedure_compliance(procedure("5.4"), levels)["tests"]
    rows = {s["id"]: s for s in test["statements"]}
    assert (rows["warmup"]["met"], rows["warmup-verified"]["met"]) == (True, True)
    assert "level 1 (25%)" in rows["warmup"]["evidence"]
    assert "level 2" not in rows["warmup"]["evidence"]
    (cold,) = procedure_compliance(procedure("5.4"), [("level 1", later), ("level 2", later)])[
        "tests"
    ]
    assert {"warmup"} <= set(cold["unmet_must"])
    assert "warmup-verified" in cold["unmet_should"]
