"""Print the declared minimum of every runtime dependency of otelbench as a pip constraint.

``pyproject.toml``'s ``[project] dependencies`` give each a lower bound (``>=``) or a pin
(``==``); this prints ``name==bound`` for each, so that ``pip install -c`` of the output installs
the oldest releases otelbench says it works with (scripts/minimums.sh installs them and runs the
tests that the declared range must pass).

Example::

    python scripts/minimums.py > /tmp/minimums.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def minimums(pyproject: Path = PYPROJECT) -> list[str]:
    """``name==version`` for each runtime dependency with a lower bound or a pin."""
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    out = []
    for dep in deps:
        match = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*(?:>=|==)\s*([^,;\s]+)", dep)
        if match is None:
            raise SystemExit(f"minimums: {dep!r} has no lower bound (>=) or pin (==)")
        out.append(f"{match.group(1)}=={match.group(2)}")
    return out


if __name__ == "__main__":
    sys.stdout.write("".join(line + "\n" for line in minimums()))
