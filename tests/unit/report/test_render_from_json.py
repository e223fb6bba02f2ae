"""From ``report.json`` to ``report.html`` one way: ``load_report`` → the typed report → the
renderers, with no call back into the builder (``otelbench render``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from otelbench.benchmark import write_reports
from otelbench.cli import app
from otelbench.errors import ConfigError
from otelbench.model.load import load_report
from otelbench.render.html import render_html
from tests.unit.query.spanstore import write_scenario

ROOT = Path(__file__).parents[3]


def _full_run(tmp_path: Path) -> Path:
    """A run directory as ``otelbench report`` writes it: report.json, .md and .html."""
    run = tmp_path / "run"
    run.mkdir()
    write_reports(run, write_scenario(tmp_path / "spans.duckdb"))
    return run


def test_render_writes_the_pages_of_a_stored_report_json(tmp_path: Path) -> None:
    run = _full_run(tmp_path)
    out = tmp_path / "rendered"
    result = CliRunner().invoke(app, ["render", str(run / "report.json"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    # the Markdown is the report's alone: byte-identical to the full run's
    assert (out / "report.md").read_bytes() == (run / "report.md").read_bytes()
    assert result.output == (run / "report.md").read_text() + "\n"
    # the page draws what report.json holds; the per-request figures say where they come from
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html == render_html(load_report(run / "report.json"))
    assert "report.json holds no per-request TTFT" in html
    assert "otelbench report draws it from the span store" in html
    assert html != (run / "report.html").read_text(encoding="utf-8")


def test_render_refuses_to_overwrite_the_full_pages_and_a_broken_report(tmp_path: Path) -> None:
    run = _full_run(tmp_path)
    full = (run / "report.html").read_bytes()
    same = CliRunner().invoke(app, ["render", str(run), "--out", str(run)])
    assert isinstance(same.exception, ConfigError)
    assert "holds the report.json rendered from" in str(same.exception)
    assert (run / "report.html").read_bytes() == full
    report = json.loads((run / "report.json").read_text())
    del report["compliance"]
    (run / "report.json").write_text(json.dumps(report))
    broken = CliRunner().invoke(app, ["render", str(run), "--out", str(tmp_path / "x")])
    assert isinstance(broken.exception, ConfigError)
    assert "$: missing key compliance" in str(broken.exception)
    assert not (tmp_path / "x" / "report.html").exists()


def test_rendering_a_stored_report_loads_nothing_that_computes(tmp_path: Path) -> None:
    """In a fresh interpreter, reading a report.json and writing its pages imports no module
    of the builder, the judge, the metrics, the query layer or the procedures."""
    run = _full_run(tmp_path)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from otelbench.model.load import load_report\n"
        "from otelbench.render import write_report_pages\n"
        f"out = Path({str(tmp_path / 'out')!r}); out.mkdir()\n"
        f"write_report_pages(load_report(Path({str(run)!r})), out)\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('otelbench'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = done.stdout.split()
    assert "otelbench.render.html" in loaded
    assert (tmp_path / "out" / "report.md").read_bytes() == (run / "report.md").read_bytes()
    computing = ("otelbench.report", "otelbench.metrics", "otelbench.query", "otelbench.procedures")
    assert [m for m in loaded if m.startswith(computing)] == []
