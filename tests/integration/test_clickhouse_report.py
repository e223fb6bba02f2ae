"""`otelbench report`'s computation on a chdb store: the same report.json, report.md and
report.html as on the DuckDB store holding the same spans (``write_reports`` reads the store
through ``open_store``, which opens ``chdb://`` URLs), whether the rows are otelbench's, the
collector's ClickHouse exporter's, or an old store's (kinds and statuses spelled as before August
2024)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from otelbench.benchmark import write_reports
from tests.fixtures.cli import otelbench
from tests.fixtures.exporter_rows import with_legacy_spellings
from tests.unit.query.clickhouse_store import load_chdb, load_chdb_as_exporter
from tests.unit.query.spanstore import HOOK_RUN_ID, write_hook_scenario

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_reports_from_chdb_equal_reports_from_duckdb(tmp_path: Path) -> None:
    """The same report.json, report.md and report.html, byte for byte, from the DuckDB store and
    from every other shape of it: copied into chdb, inserted as the collector's ClickHouse exporter
    inserts rows (in its Map schema and in its json mode's JSON schema), and an old store (kinds
    and statuses spelled as before August 2024) as a DuckDB file and in chdb
    (``tests/fixtures/exporter_rows.py``)."""
    duck = write_hook_scenario(tmp_path / "spans.duckdb")
    legacy = with_legacy_spellings(duck, tmp_path / "legacy.duckdb")
    stores: dict[str, Path | str] = {
        "chdb": load_chdb(duck),
        "exporter": load_chdb_as_exporter(duck),
        "exporter-json": load_chdb_as_exporter(duck, json_schema=True),
        "legacy-duckdb": legacy,
        "legacy-chdb": load_chdb(legacy),
    }
    from_duck = tmp_path / "duck"
    from_duck.mkdir()
    report_d, md_d = write_reports(from_duck, duck, HOOK_RUN_ID)
    for shape, store in stores.items():
        out = tmp_path / shape
        out.mkdir()
        report_c, md_c = write_reports(out, store, HOOK_RUN_ID)
        assert report_c == report_d, shape
        assert md_c == md_d, shape
        for name in ("report.json", "report.md", "report.html"):
            assert (out / name).read_bytes() == (from_duck / name).read_bytes(), (shape, name)
    written = json.loads((tmp_path / "exporter" / "report.json").read_text())
    assert written["run"]["id"] == HOOK_RUN_ID
    assert written["metrics"]["server"]["itl_ms"]["count"] == 6


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


_WRITE_CHDB = """
import sys, chdb.session
from otelbench.store.clickhouse import ChdbConnection, copy_duckdb_to_chdb
session = chdb.session.Session(sys.argv[2])
print(copy_duckdb_to_chdb(sys.argv[1], ChdbConnection(session, "otel")))
session.close()
"""

_REPORT = """
import sys
from pathlib import Path
from otelbench.benchmark import write_reports
write_reports(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
"""

_HOLD = """
import sys, chdb.session
session = chdb.session.Session(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
session.close()
"""

_OPEN = """
import sys
from otelbench.errors import StoreError
from otelbench.query import list_runs, open_store
try:
    with open_store(sys.argv[1]) as store:
        print([r.run_id for r in list_runs(store)])
except StoreError as err:
    print(f"StoreError: {err}")
"""


def test_a_chdb_store_written_by_one_process_is_reported_by_the_next(tmp_path: Path) -> None:
    """chdb keeps a real ClickHouse data directory: a writer process fills it and exits, a
    later process computes the report from it (how `otelbench report --store chdb://` runs)."""
    duck = write_hook_scenario(tmp_path / "spans.duckdb")
    directory = tmp_path / "ch"
    written = _python(_WRITE_CHDB, str(duck), str(directory))
    assert written.returncode == 0, written.stderr
    assert written.stdout.strip() == "19"
    out = tmp_path / "out"
    out.mkdir()
    reported = _python(_REPORT, str(out), f"chdb://{directory}", HOOK_RUN_ID)
    assert reported.returncode == 0, reported.stderr
    (tmp_path / "duck").mkdir()
    write_reports(tmp_path / "duck", duck, HOOK_RUN_ID)
    assert (out / "report.json").read_bytes() == (tmp_path / "duck" / "report.json").read_bytes()


def test_a_chdb_store_held_by_another_process_is_a_store_error(tmp_path: Path) -> None:
    duck = write_hook_scenario(tmp_path / "spans.duckdb")
    directory = tmp_path / "ch"
    assert _python(_WRITE_CHDB, str(duck), str(directory)).returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        blocked = _python(_OPEN, f"chdb://{directory}")
    finally:
        holder.communicate("\n", timeout=60)
    assert blocked.returncode == 0, blocked.stderr
    assert blocked.stdout.strip().startswith(
        f"StoreError: cannot open chdb store {directory}: another process holds it (chdb allows "
        "one process per data directory); query it after that process exits ("
    )
    after = _python(_OPEN, f"chdb://{directory}")
    assert after.stdout.strip() == f"['{HOOK_RUN_ID}']"


_WRITE_AS_EXPORTER = """
import sys, chdb.session
from pathlib import Path
sys.path.insert(0, sys.argv[3])  # the repository: tests.fixtures
from otelbench.store.clickhouse import ChdbConnection
from tests.fixtures.exporter_rows import create_exporter_table, insert_like_exporter
from tests.fixtures.exporter_rows import request_from_store
session = chdb.session.Session(sys.argv[2])
connection = ChdbConnection(session, "otel")
create_exporter_table(connection, "otel")
print(insert_like_exporter(connection, "otel", request_from_store(Path(sys.argv[1]))))
session.close()
"""


def test_report_command_reads_a_chdb_store(tmp_path: Path) -> None:
    """`otelbench report DIR --store chdb:///dir`: the same report.json as from the DuckDB file,
    from a chdb directory holding otelbench's rows and from one the collector's ClickHouse
    exporter filled (its DDL and rows: current spellings, from an old DuckDB store's spans)."""
    duck = write_hook_scenario(tmp_path / "spans.duckdb")
    legacy = with_legacy_spellings(duck, tmp_path / "legacy.duckdb")
    assert _python(_WRITE_CHDB, str(duck), str(tmp_path / "ch")).returncode == 0
    exported = _python(_WRITE_AS_EXPORTER, str(legacy), str(tmp_path / "exporter"), str(REPO))
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.strip() == "19"
    (tmp_path / "duck").mkdir()
    write_reports(tmp_path / "duck", duck, HOOK_RUN_ID)
    expected = (tmp_path / "duck" / "report.json").read_bytes()
    for directory in ("ch", "exporter"):
        url = f"chdb://{tmp_path / directory}"
        out = tmp_path / f"out-{directory}"
        result = otelbench("report", str(out), "--store", url, "--run-id", HOOK_RUN_ID)
        assert result.returncode == 0, result.stderr
        assert (out / "report.json").read_bytes() == expected, directory
