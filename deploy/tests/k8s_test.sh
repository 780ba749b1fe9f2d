#!/usr/bin/env bash
# Runs k8s_test.py with the pinned validator from scripts/install-deps.sh.
# Usage: k8s_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC="$1"
BUILD="$2"
PY="${PKFORGE_DEPLOY_VENV:-$SRC/.cache/deploy-venv}/bin/python"
if ! "$PY" -c 'import kubernetes_validate' 2>/dev/null; then
  echo "k8s_test: FAIL: $PY lacks kubernetes-validate; run scripts/install-deps.sh" >&2
  exit 1
fi
exec "$PY" "$SRC/deploy/tests/k8s_test.py" "$SRC/deploy/k8s" "$BUILD"
