#!/usr/bin/env bash
# Runs the systemd units for real: a container booting systemd as PID 1
# (podman --systemd=always) with the .deb's files and the closure of its
# Depends from this host's installed packages, /etc/pkforge set up as
# deploy/README.md says, both units enabled. Passes when both units are
# active under their hardening, the executor's bubblewrap sandbox works
# under its unit (a `pkforge submit --watch` job succeeds through the
# orchestrator unit), `systemctl reload` reaches the orchestrator (SIGHUP),
# and `systemctl stop` ends both cleanly.
# Usage: deploy/containers/systemd-e2e.sh [--build-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
BUILD=build
while (($#)); do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    *) echo "systemd-e2e: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/deploy/containers/containers.conf}"
command -v podman >/dev/null || { echo "systemd-e2e: podman not found" >&2; exit 1; }
tmp="$(mktemp -d)"
NAME="pkf-systemd-$$"
IMAGE="pkforge-systemd-e2e:$$"
cleanup() {
  [[ -n "${PKFORGE_E2E_KEEP:-}" ]] && { echo "systemd-e2e: kept container $NAME"; return; }
  podman rm -f -t 5 "$NAME" >/dev/null 2>&1 || true
  podman rmi -f "$IMAGE" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "systemd-e2e: FAIL: $*" >&2
  podman exec "$NAME" journalctl --no-pager -n 40 -u pkforge-orchestrator -u pkforge-executor@gpu0 >&2 || true
  exit 1
}
cx() { podman exec "$NAME" "$@"; }
# Polls a condition until it holds or LIMIT seconds pass (generous: CI's two
# cores are shared with the other tests).
await() { local end=$((SECONDS + $1)); shift; until "$@"; do ((SECONDS < end)) || return 1; sleep 0.5; done; }

# The .deb from the built tree (no recompilation), unpacked.
DESTDIR="$tmp/stage" cmake --install "$BUILD" --prefix /usr --strip >/dev/null
cpack --config "$BUILD/CPackConfig.cmake" -B "$tmp/deb" -G DEB -D CPACK_INSTALL_CMAKE_PROJECTS= \
      -D "CPACK_INSTALLED_DIRECTORIES=$tmp/stage;/" >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; exit 1; }
DEB="$(ls "$tmp"/deb/pkforge_*.deb | head -n 1)"
dpkg -x "$DEB" "$tmp/deb-root"
mapfile -t DEPS < <(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g' | grep .)
R="$tmp/rootfs"
# dbus is optional (systemctl reaches PID 1 through its private socket as root).
OPTIONAL=()
dpkg-query -W -f='${Status}' dbus 2>/dev/null | grep -q 'install ok installed' && OPTIONAL+=(dbus)
python3 deploy/containers/mkrootfs.py --out "$R" --packages systemd procps bash coreutils "${OPTIONAL[@]}" \
  "${DEPS[@]}" --tree "$tmp/deb-root" >"$tmp/mkrootfs.log" || { cat "$tmp/mkrootfs.log"; exit 1; }
head -n 1 "$tmp/mkrootfs.log"

# /etc/pkforge as an operator sets it up (deploy/README.md), on loopback.
install -d -m 0755 "$R/etc/pkforge" "$R/etc/systemd/system/multi-user.target.wants"
cp "$R/usr/share/pkforge/config/executor.json" "$R/etc/pkforge/"
sed 's/"0\.0\.0\.0:/"127.0.0.1:/g' "$R/usr/share/pkforge/config/orchestrator.json" >"$R/etc/pkforge/orchestrator.json"
sed 's/0\.0\.0\.0:/127.0.0.1:/g' "$R/usr/share/pkforge/config/executor-gpu0.env" |
  sed 's/^PKFORGE_GPUS=.*/PKFORGE_GPUS=none/' >"$R/etc/pkforge/executor-gpu0.env"
head -c 32 /dev/urandom | base64 >"$R/etc/pkforge/orchestrator.token"
head -c 32 /dev/urandom | base64 >"$R/etc/pkforge/executor.token"
chmod 0600 "$R"/etc/pkforge/*.token
ln -s /usr/lib/systemd/system/pkforge-orchestrator.service "$R/etc/systemd/system/multi-user.target.wants/"
ln -s /usr/lib/systemd/system/pkforge-executor@.service \
  "$R/etc/systemd/system/multi-user.target.wants/pkforge-executor@gpu0.service"
: >"$R/etc/machine-id"
tar -C "$R" -cf - . | podman import --change 'ENTRYPOINT ["/usr/lib/systemd/systemd"]' - "$IMAGE" >/dev/null 2>&1

# The same two sandbox options as the container e2e (deploy/README.md).
podman run -d --name "$NAME" --systemd=always \
  --security-opt seccomp=unconfined --security-opt systempaths=unconfined "$IMAGE" >/dev/null
active() { [[ "$(cx systemctl is-active pkforge-orchestrator pkforge-executor@gpu0 2>/dev/null | sort -u)" == active ]]; }
await 180 active || true
cx systemctl --no-pager --lines=0 status pkforge-orchestrator pkforge-executor@gpu0 || fail "units not active"
ready() {
  local out
  out="$(cx pkforge executors --token-file /etc/pkforge/orchestrator.token 2>/dev/null)" &&
    grep -qE '^127\.0\.0\.1:50051 +yes ' <<<"$out"
}
await 180 ready || fail "the orchestrator unit does not see the executor unit healthy"

cx pkforge submit --token-file /etc/pkforge/orchestrator.token --problem allreduce --backend host \
  --world-size 1 --agent search --max-evaluations 2 --budget 120s --watch >"$tmp/watch.log" 2>&1 \
  || { cat "$tmp/watch.log"; fail "pkforge submit --watch through the units"; }
tail -n 2 "$tmp/watch.log"
grep -q succeeded "$tmp/watch.log" || fail "job did not succeed"
journal="$(cx journalctl --no-pager -u pkforge-executor@gpu0)"
grep -q 'sandbox bubblewrap' <<<"$journal" || fail "executor unit does not run the bubblewrap sandbox"
grep -q ' -> OK ' <<<"$journal" || fail "no evaluation finished OK in the executor unit"

cx systemctl reload pkforge-orchestrator || fail "systemctl reload"
reloaded() {
  local j
  j="$(cx journalctl --no-pager -u pkforge-orchestrator)" && grep -q 'SIGHUP: re-reading the executor list' <<<"$j"
}
await 60 reloaded || fail "the orchestrator did not log the SIGHUP of systemctl reload"
cx systemctl is-active pkforge-orchestrator >/dev/null || fail "orchestrator died on reload"

cx systemctl stop pkforge-orchestrator pkforge-executor@gpu0 || fail "systemctl stop"
for u in pkforge-orchestrator pkforge-executor@gpu0; do
  r="$(cx systemctl show -p Result --value "$u")"
  [[ "$r" == success ]] || fail "$u stopped with Result=$r"
done
echo "systemd-e2e: exposure: $(cx systemd-analyze security pkforge-orchestrator 2>/dev/null | tail -n 1)"
echo "systemd-e2e: PASS (both units ran hardened under systemd 252; job succeeded; reload; clean stop)"
