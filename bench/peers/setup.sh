#!/usr/bin/env bash
# Install the peer benchmark clients bench/peers.py compares otelbench with, outside the repo.
#
#   bench/peers/setup.sh            # idempotent; ~0.1 s when already set up, ~5 min from nothing
#
# Each peer gets a venv of its own under ${OTELBENCH_PEERS_HOME:-~/.cache/otelbench-peers}:
#   guidellm-venv: guidellm==0.8.1 (about 6 GB: it pulls CUDA torch and nvidia wheels even on CPU)
#   aiperf-venv:   aiperf==0.13.0  (about 1.2 GB)
# Both installs run side by side. A stamp file per venv records what was installed; when it
# matches, the install is skipped. `vllm bench serve` needs no install: it runs from the vLLM
# venv (scripts/vllm/setup.sh) through bench/peers/vllm_bench.sh.
#
# It also writes the fake Hugging Face cache entry aiperf needs to load a local tokenizer
# offline (aiperf hands a local path to snapshot_download, which rejects it under
# HF_HUB_OFFLINE=1): hf-cache/models--local--tiny-llama/{refs/main,snapshots/<0*40>/...}
# holding a copy of the tiny Llama tokenizer (scripts/vllm/make_tiny_model.py).
#
# Environment: OTELBENCH_PEERS_HOME as above; OTELBENCH_PEERS_PYTHON (default python3.11).
set -euo pipefail

GUIDELLM="guidellm==0.8.1"
AIPERF="aiperf==0.13.0"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
peers_home="${OTELBENCH_PEERS_HOME:-$HOME/.cache/otelbench-peers}"
otel_home="${OTELBENCH_HOME:-$HOME/.cache/otelbench}"
model_dir="${OTELBENCH_VLLM_MODEL:-$otel_home/tiny-llama}"
base_python="${OTELBENCH_PEERS_PYTHON:-python3.11}"

export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
exec </dev/null

say() { printf 'peers-setup: %s\n' "$*"; }
die() { printf 'peers-setup: error: %s\n' "$*" >&2; exit 1; }

mkdir -p "$peers_home"
exec 9>"$peers_home/.lock"
flock 9

# install NAME REQUIREMENT CHECK_CMD: one venv, skipped when its stamp matches.
install() {
    local name="$1" req="$2" check="$3"
    local venv="$peers_home/$name-venv" log="$peers_home/$name-setup.log"
    local stamp="$venv/.otelbench-peers-stamp"
    if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$req" ]]; then
        say "$name: already set up ($req)"
        return 0
    fi
    rm -f "$stamp"
    [[ -x "$venv/bin/python" ]] || "$base_python" -m venv "$venv"
    say "$name: installing $req (log: $log)"
    local t1=$SECONDS
    if ! "$venv/bin/python" -m pip install --progress-bar off "$req" >"$log" 2>&1; then
        tail -n 25 "$log" >&2
        die "$name: pip install $req failed (full log: $log)"
    fi
    "$venv/bin/$check" --version >>"$log" 2>&1 || die "$name: $check --version fails (log: $log)"
    printf '%s\n' "$req" >"$stamp"
    say "$name: installed in $((SECONDS - t1)) s"
}

t0=$SECONDS
install guidellm "$GUIDELLM" guidellm &
pid_g=$!
install aiperf "$AIPERF" aiperf &
pid_a=$!
rc=0
wait "$pid_g" || rc=1
wait "$pid_a" || rc=1
((rc == 0)) || die "an install failed"

# The tiny tokenizer (no weights), then aiperf's fake HF cache entry for it.
if [[ ! -f "$model_dir/tokenizer.json" ]]; then
    say "making the tiny Llama tokenizer with scripts/vllm/setup.sh"
    bash "$repo_root/scripts/vllm/setup.sh" >/dev/null
fi
snap="$peers_home/hf-cache/models--local--tiny-llama/snapshots/0000000000000000000000000000000000000000"
mkdir -p "$snap" "$peers_home/hf-cache/models--local--tiny-llama/refs"
cp "$model_dir"/*.json "$snap/"
printf '0000000000000000000000000000000000000000' >"$peers_home/hf-cache/models--local--tiny-llama/refs/main"

say "ready in $((SECONDS - t0)) s"
say "  guidellm: $peers_home/guidellm-venv/bin/guidellm"
say "  aiperf:   HF_HUB_CACHE=$peers_home/hf-cache $peers_home/aiperf-venv/bin/aiperf (--tokenizer local/tiny-llama)"
say "  vllm:     $here/vllm_bench.sh"
