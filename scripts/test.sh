#!/usr/bin/env bash
# The whole test suite, after all set-up: lint, types, then every test tier (unit, integration
# against real loopback servers, and the real vLLM engine on CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
echo "test: ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "test: mypy"
.venv/bin/mypy
echo "test: dependency audit (docs/security.md)"
bash scripts/audit.sh
echo "test: pytest"
.venv/bin/python -m pytest tests --durations=25 "$@"
