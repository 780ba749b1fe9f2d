#!/usr/bin/env bash
# Installs every Debian package pkforge needs to build, test and run.
# Idempotent and non-interactive: packages already present are skipped, so a
# second run only checks. Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libssl-dev
  libboost-dev libcurl4-openssl-dev libsqlite3-dev sqlite3
  libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev
  bubblewrap libseccomp-dev
  python3 libxml2-utils
  openssl  # the TLS tests make a throw-away CA with the openssl command
  clang  # scripts/thread-safety.sh: -Wthread-safety over the annotated daemon sources
  # deploy/ checks: systemd-analyze, the Kubernetes validator's venv, container images and e2e (podman)
  systemd python3-venv
  podman runc ca-certificates procps
  # the HTML report test loads `pkforge report` pages in headless Chromium
  chromium
)

SUDO=""
if [[ "$(id -u)" != 0 ]]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install-deps: must run as root or with sudo" >&2; exit 1
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all ${#PACKAGES[@]} Debian packages present"
fi

# Python tools for the deploy/ checks (deploy/CMakeLists.txt), pinned, in a
# virtual environment inside the checkout's ignored cache: kubernetes-validate
# carries the Kubernetes JSON schemas, so validation then runs offline.
DEPLOY_VENV="$(cd "$(dirname "$0")/.." && pwd)/.cache/deploy-venv"
DEPLOY_PY_PACKAGES=(kubernetes-validate==1.37.0)
if ! "$DEPLOY_VENV/bin/kubernetes-validate" --version 2>/dev/null | grep -qx 1.37.0; then
  echo "install-deps: creating $DEPLOY_VENV (${DEPLOY_PY_PACKAGES[*]})"
  python3 -m venv "$DEPLOY_VENV"
  "$DEPLOY_VENV/bin/python" -m pip install -q "${DEPLOY_PY_PACKAGES[@]}"
fi

# The CUDA toolkit is not a Debian package here: it comes from NVIDIA's installer
# at /usr/local/cuda. Everything except the cuda backend builds without it.
NVCC="$(command -v nvcc || true)"
[[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]] && NVCC=/usr/local/cuda/bin/nvcc
if [[ -n "$NVCC" ]]; then
  echo "install-deps: CUDA toolkit found: $("$NVCC" --version | tail -n 2 | head -n 1)"
else
  echo "install-deps: nvcc not found (looked on PATH and /usr/local/cuda/bin)." >&2
  echo "install-deps: the cuda backend will be disabled; the host backend and all CPU" >&2
  echo "install-deps: tests still build. Install the CUDA Toolkit to enable it." >&2
fi
