#!/usr/bin/env bash
# Runs monitoring_test.py with the Python of scripts/install-deps.sh's venv (PyYAML).
# Usage: monitoring_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
PY="${PKFORGE_DEPLOY_VENV:-$2/.cache/deploy-venv}/bin/python"
"$PY" -c 'import yaml' 2>/dev/null || { echo "monitoring_test: FAIL: $PY lacks PyYAML; run scripts/install-deps.sh" >&2; exit 1; }
exec "$PY" "$2/deploy/tests/monitoring_test.py" "$1" "$2"
