#!/usr/bin/env bash
# Builds the pkforge container images offline, from this checkout's build:
#   pkforge-executor:TAG      the .deb's files + the dependency closure of its
#                             Depends (gRPC, ..., bubblewrap, g++) from this
#                             host's installed Debian packages
#   pkforge-orchestrator:TAG  the same without the compiler and sandbox, plus CA certificates
# No registry and no base image: the root filesystems are made by mkrootfs.py
# and imported (`podman import` / `docker import`).
#
# Usage: deploy/containers/build-images.sh [--build-dir DIR] [--engine podman|docker]
#                                          [--tag TAG] [--cuda DIR]
#   --build-dir  a configured and built tree (default: build)
#   --cuda DIR   copy a CUDA toolkit (nvcc, headers, libraries incl. NCCL) into
#                the executor image at /usr/local/cuda; otherwise GPU nodes
#                mount theirs there (deploy/README.md)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
BUILD=build ENGINE="" TAG="" CUDA=""
while (($#)); do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --engine) ENGINE="$2"; shift 2 ;;
    --tag) TAG="$2"; shift 2 ;;
    --cuda) CUDA="$2"; shift 2 ;;
    *) echo "build-images: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$BUILD/bin/pkforge-executor" ]] || { echo "build-images: $BUILD/bin/pkforge-executor missing: build first" >&2; exit 1; }
if [[ -z "$ENGINE" ]]; then
  if command -v podman >/dev/null; then ENGINE=podman; elif command -v docker >/dev/null; then ENGINE=docker;
  else echo "build-images: neither podman nor docker found" >&2; exit 1; fi
fi
[[ "$ENGINE" == podman ]] && export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/deploy/containers/containers.conf}"
VERSION="$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\{0,1\}\([^")]*\).*/\1/p' "$BUILD/CPackConfig.cmake" | head -n 1)"
TAG="${TAG:-${VERSION:-latest}}"
WORK="${PKFORGE_IMAGE_WORK:-$ROOT/.cache/images}"
rm -rf "$WORK"
mkdir -p "$WORK"

# 1. The .deb, from the built tree (no recompilation), unpacked.
DESTDIR="$WORK/stage" cmake --install "$BUILD" --prefix /usr --strip >/dev/null
cpack --config "$BUILD/CPackConfig.cmake" -B "$WORK/deb" -G DEB -D CPACK_INSTALL_CMAKE_PROJECTS= \
      -D "CPACK_INSTALLED_DIRECTORIES=$WORK/stage;/" >"$WORK/cpack.log" 2>&1 \
  || { cat "$WORK/cpack.log"; exit 1; }
DEB="$(ls "$WORK"/deb/pkforge_*.deb | head -n 1)"
dpkg -x "$DEB" "$WORK/deb-root"
mapfile -t DEPS < <(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g' | grep .)
echo "build-images: $(basename "$DEB"); Depends: ${DEPS[*]}"

# 2. Root filesystems.
TOOLS=(bash coreutils)  # a shell for `exec` and probes; nothing else
exe_tree=("$WORK/deb-root")
if [[ -n "$CUDA" ]]; then
  mkdir -p "$WORK/cuda-root/usr/local"
  cp -a "$(readlink -f "$CUDA")" "$WORK/cuda-root/usr/local/cuda"
  exe_tree+=("$WORK/cuda-root")
fi
python3 deploy/containers/mkrootfs.py --out "$WORK/executor-rootfs" \
  --packages "${DEPS[@]}" "${TOOLS[@]}" --tree "${exe_tree[@]}"
ORCH_DEPS=()
for d in "${DEPS[@]}"; do [[ "$d" == g++ || "$d" == bubblewrap || "$d" == libseccomp2 ]] || ORCH_DEPS+=("$d"); done
python3 deploy/containers/mkrootfs.py --out "$WORK/orchestrator-rootfs" \
  --packages "${ORCH_DEPS[@]}" ca-certificates "${TOOLS[@]}" --exclude-packages g++ bubblewrap \
  --files /etc/ssl/certs/ca-certificates.crt --tree "$WORK/deb-root"

# 3. Images.
tar -C "$WORK/executor-rootfs" -cf - . | "$ENGINE" import \
  --change 'ENTRYPOINT ["/usr/bin/pkforge-executor"]' \
  --change 'ENV PATH=/usr/local/cuda/bin:/usr/bin:/bin LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64' \
  --change 'EXPOSE 50051' --change 'WORKDIR /var/lib/pkforge' - "pkforge-executor:$TAG" >/dev/null
tar -C "$WORK/orchestrator-rootfs" -cf - . | "$ENGINE" import \
  --change 'ENTRYPOINT ["/usr/bin/pkforge-orchestrator"]' \
  --change 'ENV PATH=/usr/bin:/bin' \
  --change 'EXPOSE 50061' --change 'WORKDIR /var/lib/pkforge' - "pkforge-orchestrator:$TAG" >/dev/null
"$ENGINE" images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'pkforge-(executor|orchestrator):'"$TAG"' ' \
  | sed 's/^/build-images: /'
rm -rf "$WORK/stage" "$WORK/executor-rootfs" "$WORK/orchestrator-rootfs" "$WORK/cuda-root"
