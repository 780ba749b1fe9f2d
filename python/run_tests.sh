#!/usr/bin/env bash
# The ctest entry `python_test` (python/CMakeLists.txt): pytest of the Python
# package against real daemons from BUILD_DIR/bin.
#   python/run_tests.sh BUILD_DIR [pytest args...]
# The venv BUILD_DIR/python-venv is created once with the pinned
# requirements.txt (from PyPI; pip's cache in .cache/pip of the checkout) and
# kept; it is recreated only when requirements.txt changes. The package itself
# is reinstalled on every run from a copy in BUILD_DIR (stubs generated from
# proto/ at build time), so the source tree gets no build outputs.
set -euo pipefail
SRC="$(cd "$(dirname "$0")" && pwd)"
REPO="$(dirname "$SRC")"
BUILD="$(cd "${1:?usage: run_tests.sh BUILD_DIR [pytest args]}" && pwd)"
shift
VENV="$BUILD/python-venv"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$REPO/.cache/pip}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# Debian's interpreter when present: readable by every user (the read-only
# test reads as uid 65534 when run as root), unlike one under /root.
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3)"

want="$(sha256sum "$SRC/requirements.txt" | cut -d' ' -f1) $("$PY" -c 'import sys; print(sys.version.split()[0])')"
if [[ ! -x "$VENV/bin/python" || "$(cat "$VENV/.pkforge-requirements" 2>/dev/null)" != "$want" ]]; then
  echo "run_tests.sh: creating $VENV (pinned requirements from PyPI)"
  rm -rf "$VENV"
  if ! "$PY" -m venv "$VENV"; then
    echo "run_tests.sh: '$PY -m venv' failed: install python3-venv (scripts/install-deps.sh)" >&2
    exit 1
  fi
  "$VENV/bin/pip" install -q -r "$SRC/requirements.txt"
  echo "$want" > "$VENV/.pkforge-requirements"
fi

PKG="$BUILD/python-pkg"
rm -rf "$PKG"
mkdir -p "$PKG"
cp -r "$SRC/pyproject.toml" "$SRC/setup.py" "$SRC/README.md" "$SRC/pkforge" "$PKG/"
PKFORGE_PROTO_DIR="$REPO/proto" "$VENV/bin/pip" install -q --no-build-isolation --no-deps \
  --force-reinstall "$PKG"

RUN="$BUILD/python-run"
mkdir -p "$RUN"
cd "$RUN"  # not the source folder: `import pkforge` must find the installed package
PKFORGE_BIN_DIR="${PKFORGE_BIN_DIR:-$BUILD/bin}" MPLBACKEND=Agg \
  exec "$VENV/bin/python" -m pytest -p no:cacheprovider -q -rs "$SRC/tests" "$@"
