#!/usr/bin/env bash
# All set-up on a fresh machine, idempotent: otelbench's own venv (.venv, with the dev extras),
# Prometheus and Chromium from Debian, and the separate vLLM-on-CPU venv with the tiny local model.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
    echo "setup: creating .venv"
    "$PYTHON" -m venv .venv
fi
echo "setup: installing otelbench and its dev tools into .venv"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'

# rotel-agent (the rotel wheel of the dev extras: otelbench.collector.rotel) links Debian's
# libpython3.11 (it embeds CPython for its Python processors)
if ! ldconfig -p | grep -q 'libpython3\.11\.so\.1\.0'; then
    echo "setup: installing libpython3.11 (Debian), for rotel-agent"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq libpython3.11 >/dev/null
fi

if ! command -v prometheus >/dev/null 2>&1; then
    echo "setup: installing prometheus (Debian)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq prometheus >/dev/null
fi

if ! command -v chromium >/dev/null 2>&1; then
    echo "setup: installing chromium (Debian), for the HTML report's browser test"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
fi

if ! command -v ip >/dev/null 2>&1; then
    echo "setup: installing iproute2 (Debian), for the sharded run's network namespaces"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq iproute2 >/dev/null
fi

bash scripts/vllm/setup.sh
echo "setup: done"
