#!/usr/bin/env bash
# The main job on one machine: installs what is missing, builds, and runs
# `pkforge local` with any arguments given, e.g.
#   scripts/local.sh --problem allreduce --budget 10m
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${PKFORGE_SKIP_DEPS:-0}" != 1 ]]; then
  scripts/install-deps.sh
fi
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
# The same preset and build directory as scripts/test.sh (build-ci), but only
# the binaries (target pkforge-apps): the test command afterwards compiles
# just the tests, never the project a second time.
PRESET="${PKFORGE_PRESET:-ci}"
cmake --preset "$PRESET" >/dev/null
cmake --build --preset "$PRESET" -j "$(nproc)" --target pkforge-apps
case "$PRESET" in
  default) BUILD_DIR=build ;;
  gpu-bundle) BUILD_DIR=build-gpu ;;
  *) BUILD_DIR="build-$PRESET" ;;
esac
exec "$BUILD_DIR/bin/pkforge" local "$@"
