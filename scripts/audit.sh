#!/usr/bin/env bash
# Dependency audit (docs/security.md, "Dependency audit"): pip-audit over otelbench's venv (.venv)
# and the vLLM venv, against PyPI's vulnerability data, then the policy in scripts/audit_policy.py
# with the accepted exceptions in scripts/audit-exceptions.toml.
#
#   scripts/audit.sh                      # exit 0 pass, 1 policy failure, 2 the audit did not run
#   scripts/audit.sh --require-coverage   # also fail when a package could not be looked up
#
# Writes out/audit/{main,vllm}.json (pip-audit's reports), out/audit/summary.json and prints a
# table. Network: pip-audit asks https://pypi.org/pypi/<name>/<version>/json only (no OSV);
# installing pip-audit itself (once, into its own venv) uses pip's configured index.
#
# Environment: OTELBENCH_AUDIT_VENV (the tool's venv; default ~/.cache/otelbench/audit-venv),
# OTELBENCH_VLLM_VENV (default ~/.cache/otelbench/vllm-venv; skipped when absent),
# OTELBENCH_AUDIT_OUT (default out/audit).
set -euo pipefail
cd "$(dirname "$0")/.."

PIP_AUDIT_VERSION="2.10.1"
HOME_DIR="${OTELBENCH_HOME:-$HOME/.cache/otelbench}"
AUDIT_VENV="${OTELBENCH_AUDIT_VENV:-$HOME_DIR/audit-venv}"
VLLM_VENV="${OTELBENCH_VLLM_VENV:-$HOME_DIR/vllm-venv}"
OUT="${OTELBENCH_AUDIT_OUT:-out/audit}"

if ! "$AUDIT_VENV/bin/pip-audit" --version 2>/dev/null | grep -qx "pip-audit $PIP_AUDIT_VERSION"; then
    echo "audit: installing pip-audit $PIP_AUDIT_VERSION into $AUDIT_VENV"
    if ! python3 -m venv "$AUDIT_VENV" ||
        ! "$AUDIT_VENV/bin/python" -m pip install --quiet "pip-audit==$PIP_AUDIT_VERSION"; then
        echo "audit: cannot install pip-audit $PIP_AUDIT_VERSION: the audit did not run" >&2
        exit 2
    fi
fi
mkdir -p "$OUT"

reports=()
audit_env() {  # audit_env NAME PYTHON: the site-packages of that interpreter
    local name="$1" python="$2" site
    site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    rm -f "$OUT/$name.json"
    # pip-audit exits 1 when it finds something: the policy decides; a missing report means it failed
    "$AUDIT_VENV/bin/pip-audit" --path "$site" --vulnerability-service pypi --format json \
        --output "$OUT/$name.json" --skip-editable --progress-spinner off --timeout 30 \
        2>"$OUT/$name.log" || true
    reports+=("$name=$OUT/$name.json")
}

audit_env main .venv/bin/python
if [[ -x "$VLLM_VENV/bin/python" ]]; then
    audit_env vllm "$VLLM_VENV/bin/python"
else
    echo "audit: no vLLM venv at $VLLM_VENV (scripts/vllm/setup.sh makes it); auditing .venv only"
fi

exec "$AUDIT_VENV/bin/python" scripts/audit_policy.py --exceptions scripts/audit-exceptions.toml \
    --summary "$OUT/summary.json" "$@" "${reports[@]}"
