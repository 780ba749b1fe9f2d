#!/usr/bin/env bash
# Sets up, builds and runs every test that can run on this machine.
#   scripts/test.sh            # install missing packages, build (preset ci), ctest
# Tests that need a GPU carry the ctest label "gpu" and skip cleanly without one.
# Environment: PKFORGE_PRESET (default ci), PKFORGE_JOBS (default nproc),
# PKFORGE_SKIP_DEPS=1 to skip the package check (e.g. on the GPU machine).
set -euo pipefail
cd "$(dirname "$0")/.."

PRESET="${PKFORGE_PRESET:-ci}"
JOBS="${PKFORGE_JOBS:-$(nproc)}"

if [[ "${PKFORGE_SKIP_DEPS:-0}" != 1 ]]; then
  scripts/install-deps.sh
fi

# ccache lives inside the checkout's ignored cache dir unless the user has one:
# a second CI run on the same machine then rebuilds in seconds.
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-2G}"

# The ci preset leaves out the cuda candidates that only GPU tests load
# (CI has no GPU); on a machine with one they are built and run.
configure=(--preset "$PRESET")
if [[ -e /dev/nvidia0 ]]; then
  configure+=(-DPKFORGE_GPU_TEST_CANDIDATES=ON)
fi

start=$(date +%s)
cmake "${configure[@]}"
cmake --build --preset "$PRESET" -j "$JOBS"
built=$(date +%s)
echo "test.sh: configure+build took $((built - start)) s"

ctest --preset "$PRESET" -j "$JOBS" --timeout 600
echo "test.sh: tests took $(( $(date +%s) - built )) s"
