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
SYSTEM_RE='^(libc|libm|libdl|librt|libpthread|libresolv|libutil|libnsl|libanl|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libnccl|libcudart|libcublas|libcublasLt|libnvidia-[a-z-]+|libnvrtc|linux-vdso)\.so'
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
# Only the tests a GPU host runs (label gpu): the CPU tests run in CI, and
# each test binary links the project's static libraries (megabytes apiece).
ctest --test-dir "$OUT/build-gpu" -N --show-only=json-v1 2>/dev/null | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tests"]:
    labels = [v for p in t.get("properties", []) if p["name"] == "LABELS" for v in p["value"]]
    if "gpu" not in labels and t.get("command"):
        print(t["command"][0])
' | while read -r exe; do rm -f "$OUT/build-gpu/${exe#*/build-gpu/}"; done
mapfile -t elfs < <(find "$OUT/build-gpu" -type f \( -perm -u+x -o -name '*.so' \))
BWRAP="$(command -v bwrap || true)"
if [[ -n "$BWRAP" ]]; then cp -L "$BWRAP" "$OUT/bin/bwrap"; elfs+=("$OUT/bin/bwrap"); fi
collect "${elfs[@]}"
collect "$OUT"/lib/*  # dependencies of dependencies
strip --strip-unneeded "$OUT"/lib/*.so* 2>/dev/null || true

# One compressed file travels (the device tool carries at most 64 MiB);
# scripts/gpu-host.sh unpacks it on first use.
tar -C "$OUT" -czf "$ROOT/pkforge-bundle.tgz" .
mv "$ROOT/pkforge-bundle.tgz" "$OUT/pkforge-bundle.tgz"
du -sh "$OUT" | awk '{print "bundle: " $1 " in " $2}'
echo "bundle: $(ls "$OUT/lib" | wc -l) libraries: $(ls "$OUT/lib" | sed 's/\.so.*//' | tr '\n' ' ')"
