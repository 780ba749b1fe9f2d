#!/usr/bin/env bash
# Makes a self-contained bundle of pkforge for a GPU host that has the NVIDIA
# driver, CUDA and NCCL but none of the build dependencies (e.g. no gRPC):
#   bundle/build-gpu/   the Release build tree without objects (binaries, test
#                       binaries, candidate .so test data, CTestTestfile.cmake)
#   bundle/lib/         every non-system shared library they need (grpc,
#                       protobuf, abseil, c-ares, re2, ssl, spdlog, fmt, sqlite,
#                       curl, ...); never libc, libstdc++, libcuda, libnccl or
#                       the CUDA runtime, which the host provides
#   bundle/bin/bwrap    bubblewrap, for hosts without it
# On the GPU host run commands through scripts/gpu-host.sh, which maps the
# build-time absolute paths and sets LD_LIBRARY_PATH:
#   scripts/gpu-host.sh ctest --test-dir build-gpu -L gpu --output-on-failure
# Usage: scripts/bundle.sh [--skip-build]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="$ROOT/bundle"

if [[ "${1:-}" != --skip-build ]]; then
  export CCACHE_DIR="${CCACHE_DIR:-$ROOT/.cache/ccache}"
  cmake --preset gpu-bundle >/dev/null
  cmake --build --preset gpu-bundle -j "$(nproc)"
fi
[[ -d build-gpu ]] || { echo "bundle: build-gpu missing (run without --skip-build)" >&2; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT/lib" "$OUT/bin"
# The build tree minus what only the compiler needs.
tar -C "$ROOT" --exclude='*.o' --exclude='*.a' --exclude='CMakeFiles' --exclude='.ninja_*' \
    --exclude='*.ninja' --exclude='Testing' -cf - build-gpu | tar -C "$OUT" -xf -

# Libraries the host provides (same CUDA/NCCL major there) or that must come
# from the host's own C runtime.
SYSTEM_RE='^(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libnccl|libcudart|libcublas|libcublasLt|libnvidia-[a-z-]+|libnvrtc|linux-vdso)\.so'
collect() {  # ldd every ELF given, copy non-system dependencies into lib/
  local f
  for f in "$@"; do
    file -b "$f" | grep -q '^ELF' || continue
    ldd "$f" 2>/dev/null | awk '/=> \//{print $1" "$3}' | while read -r name path; do
      [[ "$name" =~ $SYSTEM_RE ]] && continue
      [[ -e "$OUT/lib/$name" ]] || cp -L "$path" "$OUT/lib/$name"
    done
  done
}
mapfile -t elfs < <(find "$OUT/build-gpu" -type f \( -perm -u+x -o -name '*.so' \))
BWRAP="$(command -v bwrap || true)"
if [[ -n "$BWRAP" ]]; then cp -L "$BWRAP" "$OUT/bin/bwrap"; elfs+=("$OUT/bin/bwrap"); fi
collect "${elfs[@]}"
collect "$OUT"/lib/*  # dependencies of dependencies
strip --strip-unneeded "$OUT"/lib/*.so* 2>/dev/null || true

du -sh "$OUT" | awk '{print "bundle: " $1 " in " $2}'
echo "bundle: $(ls "$OUT/lib" | wc -l) libraries: $(ls "$OUT/lib" | sed 's/\.so.*//' | tr '\n' ' ')"
