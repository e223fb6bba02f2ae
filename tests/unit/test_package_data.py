"""Every file the package reads at run time ships in its wheel.

``pyproject.toml``'s ``[tool.setuptools.package-data]`` lists, by glob, the files of
``otelbench/`` that are not Python (the SQL of each dialect, the draft's statements, the
``py.typed`` marker); a file missing there works from a checkout and fails after
``pip install``. This checks each tracked non-Python file against the globs.
"""

from __future__ import annotations

import fnmatch
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_every_non_python_file_of_the_package_is_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["otelbench"]
    tracked = subprocess.run(
        ["git", "ls-files", "otelbench"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    data = [p.removeprefix("otelbench/") for p in tracked if not p.endswith(".py")]
    assert "draft/statements.toml" in data
    assert [p for p in data if not any(fnmatch.fnmatch(p, g) for g in globs)] == []
