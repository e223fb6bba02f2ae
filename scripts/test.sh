#!/usr/bin/env bash
# The whole test suite, after all set-up: lint, types, then every test tier: the quick tier (unit,
# and integration against real loopback servers and system binaries; on every core), then the
# real vLLM engine on CPU (one process). `scripts/test.sh --quick` stops before the vLLM tier.
# Further arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
if [[ "${1:-}" == "--quick" ]]; then
    quick=1
    shift
fi

bash scripts/setup.sh
echo "test: ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "test: mypy"
.venv/bin/mypy
echo "test: dependency audit (docs/security.md)"
bash scripts/audit.sh
echo "test: pytest, unit and integration"
.venv/bin/python -m pytest tests --durations=25 "$@"
if ((quick)); then
    exit 0
fi
echo "test: pytest, the real vLLM engine on CPU"
.venv/bin/python -m pytest tests -m vllm --durations=25 "$@"
