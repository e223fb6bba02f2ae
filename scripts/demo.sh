#!/usr/bin/env bash
# The main job on the embedded default: set everything up, start the tiny vLLM on CPU with its
# tracer pointed at the embedded collector, run a benchmark against it, print the report
# (client and server timing side by side). Extra arguments go to `otelbench run`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
out=${OUT:-out/demo}
rm -rf "$out"
.venv/bin/otelbench run --sut vllm-cpu --model tiny --requests 120 --rate 2 --seed 42 \
    --vocab-size 1024 --ignore-eos --out "$out" "$@"
