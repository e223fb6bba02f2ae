#!/usr/bin/env bash
# Run rotel in the foreground with the settings of rotel.env; a ROTEL_* variable already set in
# the environment wins over the file's (ROTEL_OTLP_EXPORTER_ENDPOINT=http://gw:4319 run-rotel.sh).
#   collectors/rotel/run-rotel.sh                 # rotel.env beside this script
#   OTELBENCH_ROTEL_ENV=/etc/otelbench/rotel.env collectors/rotel/run-rotel.sh
# The binary: $OTELBENCH_ROTEL_AGENT, else the one inside the rotel wheel of $PYTHON (default:
# the repository's .venv), installed by `pip install 'rotel==0.0.1a15'` or scripts/setup.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
env_file="${OTELBENCH_ROTEL_ENV:-$here/rotel.env}"
while IFS='=' read -r key value; do
    [[ "$key" =~ ^ROTEL_[A-Z0-9_]+$ ]] || continue   # comments and blank lines
    [[ -n "${!key+set}" ]] || export "$key=$value"
done <"$env_file"
python="${PYTHON:-$here/../../.venv/bin/python}"
agent="${OTELBENCH_ROTEL_AGENT:-}"
if [[ -z "$agent" ]]; then
    agent="$("$python" -c 'import otelbench.collector.rotel as r; print(r.rotel_binary())')"
fi
exec "$agent" start "$@"
