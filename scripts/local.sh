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
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)"
exec build/bin/pkforge local "$@"
