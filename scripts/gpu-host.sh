#!/usr/bin/env bash
# Runs a command on a GPU host against the bundle made by scripts/bundle.sh.
# The build tree has this checkout's absolute path baked into test files, so
# the same path is recreated with symlinks when it differs; libraries come from
# bundle/lib; bwrap from bundle/bin when the host has none.
#   scripts/gpu-host.sh ctest --test-dir build-gpu -L gpu --output-on-failure
set -euo pipefail
cd "$(dirname "$0")/.."
HERE="$PWD"
if [[ ! -d bundle/build-gpu && -f bundle/pkforge-bundle.tgz ]]; then
  tar -C bundle -xzf bundle/pkforge-bundle.tgz
fi
[[ -d bundle/build-gpu ]] || { echo "gpu-host: bundle/ missing: run scripts/bundle.sh first" >&2; exit 1; }
BUILT_AT="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' bundle/build-gpu/CMakeCache.txt)"
ln -sfn "$HERE/bundle/build-gpu" "$HERE/build-gpu"
if [[ -n "$BUILT_AT" && "$BUILT_AT" != "$HERE" && ! -e "$BUILT_AT" ]]; then
  mkdir -p "$(dirname "$BUILT_AT")"
  ln -sfn "$HERE" "$BUILT_AT"
fi
CUDA_LIBS=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d "$d" ]] && CUDA_LIBS="$CUDA_LIBS:$d"
done
export LD_LIBRARY_PATH="$HERE/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}$CUDA_LIBS"
command -v bwrap >/dev/null || export PATH="$HERE/bundle/bin:$PATH"
# NVLink multicast stays off on shared hosts (see docs/gpu-host.md).
export NCCL_NVLS_ENABLE=0
exec "$@"
