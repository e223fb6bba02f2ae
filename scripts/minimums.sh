#!/usr/bin/env bash
# The declared minimum versions, installed and tested: a venv (.venv-min) with every runtime
# dependency of otelbench at the lower bound pyproject.toml declares (scripts/minimums.py), the
# openai SDK the tests use, and the test tools, then the unit tier and the client integration
# modules on it. Left out: the modules of the optional parts whose packages the dev extras pin
# for the newest OpenTelemetry (ClickHouse through chdb/pyarrow, the dashboards with the
# Prometheus exporter, the deploy manifests' validators, the other openai instrumentations; the
# rotel and clickhouse-connect tests of two modules).
# Further arguments go to pytest. Idempotent; CI runs it beside the quick tier (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${OTELBENCH_MIN_VENV:-.venv-min}
if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON" -m venv "$VENV"
fi
constraints=$(mktemp "${TMPDIR:-/tmp}/otelbench-minimums.XXXXXX.txt")
trap 'rm -f "$constraints"' EXIT
"$PYTHON" scripts/minimums.py >"$constraints"
echo "minimums: installing the declared minimums into $VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c "$constraints" -e . \
    "pytest>=8" "pytest-asyncio>=0.24" "pytest-timeout>=2.3" "pytest-xdist>=3.8" \
    "hypothesis>=6.100" "openai==3.51.0" "brotli==1.2.1" 2>&1 | grep -v "^WARNING: Location" || true
"$VENV/bin/python" -m pip check >/dev/null
"$VENV/bin/python" - "$constraints" <<'PY'
import sys
from importlib.metadata import version

from packaging.version import Version

# every declared minimum is what is installed
for line in open(sys.argv[1], encoding="utf-8"):
    name, want = line.strip().split("==")
    assert Version(version(name)) == Version(want), (name, version(name), want)
PY
echo "minimums: pytest on the declared minimums"
exec "$VENV/bin/python" -m pytest -p no:cacheprovider --durations=10 tests/unit \
    tests/integration/test_openai_sdk.py tests/integration/test_client_behaviour.py \
    tests/integration/test_client_http11.py \
    --ignore=tests/unit/query/test_arrow_fetch.py \
    --ignore=tests/unit/query/test_chdb_fetch_speed_paths.py \
    --ignore=tests/unit/query/test_clickhouse_extract.py \
    --ignore=tests/unit/query/test_clickhouse_json_schema.py \
    --ignore=tests/unit/query/test_clickhouse_stores.py \
    --ignore=tests/unit/query/test_clickhouse_writer.py \
    --ignore=tests/unit/query/test_exporter_rows.py \
    --ignore=tests/unit/query/test_extract.py \
    --ignore=tests/unit/test_dashboards.py \
    --ignore=tests/unit/test_dashboards_sql.py \
    --ignore=tests/unit/test_deploy.py \
    --ignore=tests/unit/test_deploy_benchmark.py \
    --deselect=tests/unit/test_collector_configs.py::test_rotel_env_file_and_launcher_carry_the_same_settings \
    -k "not test_watch_refuses_a_clickhouse_store_it_cannot_read" \
    "$@"
