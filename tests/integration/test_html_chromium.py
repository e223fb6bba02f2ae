"""The HTML report in a real browser: Debian's ``chromium``, headless, offline.

The page is rendered from hand-built records (``tests/unit/report/test_html.py``) with every
plot's data, written to a file and opened with ``file://`` — no server, no network. Chromium
dumps the DOM after the page's scripts ran: the inline script at the end of the page marks
``<html data-script="ok" data-plots="N" data-plots-drawn="N">`` only when it ran to completion,
and the error listener at the top marks ``data-script-error`` on any script error. Chromium's
console log (``--enable-logging=stderr``) must hold no uncaught error. A screenshot is taken too
(``--screenshot``), kept next to the page in the test's temporary directory.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from otelbench.render.html import PLOTS, render_html, render_procedure_html
from otelbench.report import report_from_data
from otelbench.report.curve import curve_of, procedure_curve
from otelbench.report.plot_data import plot_data
from tests.unit.report.test_html import PROCEDURE, REQS, Page, html_run

pytestmark = pytest.mark.integration

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
)


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail(
            "chromium is not installed: run scripts/setup.sh (it installs Debian's chromium)"
        )
    return path


@pytest.fixture
def page_file(tmp_path: Path) -> Path:
    data = html_run(REQS)
    path = tmp_path / "report.html"
    page = render_html(report_from_data(data), plot_data(data), curve=curve_of(PROCEDURE))
    path.write_text(page, encoding="utf-8")
    return path


def run_chromium(chromium: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )


def test_every_plot_draws_in_chromium_with_no_script_error(
    chromium: str, page_file: Path, tmp_path: Path
) -> None:
    result = run_chromium(
        chromium,
        tmp_path,
        "--enable-logging=stderr",
        "--v=0",
        "--dump-dom",
        page_file.as_uri(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "Uncaught" in line or "Error" in line], console
    assert "Uncaught" not in result.stderr
    dom = Page(result.stdout)
    (html,) = [e for e in dom.elements if e.tag == "html"]
    assert "data-script-error" not in html.attrs
    assert html.attrs.get("data-script") == "ok"
    assert html.attrs.get("data-plots") == str(len(PLOTS))
    assert html.attrs.get("data-plots-drawn") == str(len(PLOTS))
    figures = [e.attrs["data-plot"] for e in dom.elements if e.tag == "figure"]
    assert figures == [name for name, _ in PLOTS]
    for name in figures:
        svgs = dom.in_figure(name, "svg")
        assert len(svgs) == 1, name
        data = dom.in_figure(name, "g", "data")
        assert len(data) == 1, name
        drawn = [
            e
            for e in dom.in_figure(name)
            if e.attrs.get("class") in {"cdf", "bar", "point", "line", "span", "marker"}
        ]
        assert drawn, name


def test_chromium_takes_a_screenshot(chromium: str, page_file: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    result = run_chromium(
        chromium,
        tmp_path,
        f"--screenshot={shot}",
        "--window-size=1280,4000",
        "--hide-scrollbars",
        page_file.as_uri(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(png[16:20], "big")
    height = int.from_bytes(png[20:24], "big")
    assert (width, height) == (1280, 4000)
    assert len(png) > 50_000  # a blank page compresses to a few kB


def test_the_procedure_page_draws_its_curve_in_chromium(chromium: str, tmp_path: Path) -> None:
    """procedure.html: the draft's Table 5 levels as a 5.3 sweep, one level's link per run."""
    levels = [
        {**row, "ttft_p99_ms": row["p99_ms"], "index": i + 1, "label": f"level {i + 1}"}
        for i, row in enumerate(PROCEDURE["levels"])
    ]
    result = {
        "schema_version": 1,
        "procedure": "throughput-latency",
        "draft_section": "5.3",
        "title": "Throughput-Latency Tradeoff",
        "profile": "quick",
        "levels": levels,
        "runs": [
            {"index": lv["index"], "label": lv["label"], "report": f"levels/{i:02d}/report.json"}
            for i, lv in enumerate(levels, start=1)
        ],
    }
    page = tmp_path / "procedure.html"
    page.write_text(
        render_procedure_html(result, "# Throughput <b>", procedure_curve(result)), encoding="utf-8"
    )
    out = run_chromium(chromium, tmp_path, "--dump-dom", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    dom = Page(out.stdout)
    (html,) = [e for e in dom.elements if e.tag == "html"]
    assert "data-script-error" not in html.attrs
    assert (html.attrs.get("data-plots"), html.attrs.get("data-plots-drawn")) == ("1", "1")
    assert [e.attrs["href"] for e in dom.elements if e.tag == "a"][:2] == [
        "levels/01/report.html",
        "levels/02/report.html",
    ]
    assert "# Throughput <b>" in out.stdout.replace("&lt;", "<").replace("&gt;", ">")
