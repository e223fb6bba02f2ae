#!/usr/bin/env bash
# The whole test suite, after all set-up: lint, types, the dependency audit, then every test tier
# (tests/conftest.py): the quick tier (unit and integration, on every core) and the real vLLM
# engine on CPU (one process) side by side — the vLLM tier keeps about one core busy, the quick
# tier takes what is left — then the timing tier (the load generator timed to the millisecond)
# with nothing else running. After the quick tier, while the vLLM tier still runs, the declared
# minimum versions are installed and tested (scripts/minimums.sh, one process: the core the quick
# tier leaves). `scripts/test.sh --quick` runs the quick tier only. Further arguments go to every
# pytest run. Each tier lists its 25 slowest tests; the vLLM tier's output
# is printed when it ends.
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
pytest=(.venv/bin/python -m pytest --durations=25)
if ((quick)); then
    echo "test: pytest, unit and integration"
    exec "${pytest[@]}" tests/unit tests/integration "$@"
fi

vllm_log=$(mktemp "${TMPDIR:-/tmp}/otelbench-vllm-tier.XXXXXX.log")
echo "test: pytest, the real vLLM engine on CPU, in the background (output: $vllm_log)"
"${pytest[@]}" tests/vllm "$@" >"$vllm_log" 2>&1 &
vllm_pid=$!
trap 'kill -INT "$vllm_pid" 2>/dev/null || true' EXIT

echo "test: pytest, unit and integration"
quick_rc=0
"${pytest[@]}" tests/unit tests/integration "$@" || quick_rc=$?

echo "test: the declared minimum versions (scripts/minimums.sh), beside the vLLM tier"
minimums_rc=0
minimums_start=$SECONDS
bash scripts/minimums.sh -n 1 "$@" || minimums_rc=$?
echo "test: the declared minimum versions took $((SECONDS - minimums_start)) s"

vllm_rc=0
wait "$vllm_pid" || vllm_rc=$?
trap - EXIT
echo "test: pytest, the real vLLM engine on CPU (its output)"
cat "$vllm_log"

echo "test: pytest, the load generator's timing (nothing else running)"
timing_rc=0
"${pytest[@]}" tests/timing "$@" || timing_rc=$?

echo "test: exit status: quick tier $quick_rc, minimum versions $minimums_rc, vLLM tier $vllm_rc," \
    "timing tier $timing_rc"
((quick_rc == 0 && minimums_rc == 0 && vllm_rc == 0 && timing_rc == 0))
