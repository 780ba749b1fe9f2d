#!/usr/bin/env bash
# systemd units: installs this build into a throw-away root (cmake --install
# with DESTDIR, no rebuild) with a copy of the host's own systemd units (for
# sysinit.target and friends), then `systemd-analyze verify --root` on the
# orchestrator and an executor instance. Any message is a failure (unknown
# keys are only warnings for systemd). Then checks the policy that keeps the
# executor's bubblewrap sandbox working: Delegate=yes, and none of the
# options that forbid namespaces or over-mount /proc.
# Usage: systemd_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD="$1"
SRC="$2"
fail() { echo "systemd_test: FAIL: $*" >&2; exit 1; }
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing (scripts/install-deps.sh installs systemd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
root="$tmp/root"
DESTDIR="$root" cmake --install "$BUILD" --prefix /usr >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log"; fail "cmake --install"; }
units="$root/usr/lib/systemd/system"
[[ -f "$units/pkforge-orchestrator.service" && -f "$units/pkforge-executor@.service" ]] \
  || fail "install rules did not put the units in /usr/lib/systemd/system"
cp -an /usr/lib/systemd/system/. "$units/"
# ExecReload's /bin/kill must exist in the root (verify checks executables).
printf '#!/bin/sh\nexec /usr/bin/env kill "$@"\n' >"$root/usr/bin/kill"
chmod +x "$root/usr/bin/kill"
ln -sfn usr/bin "$root/bin"
mkdir -p "$root/etc/pkforge"
cp "$SRC"/deploy/config/* "$root/etc/pkforge/"

systemd-analyze --version | head -n 1
out="$(cd "$tmp" && systemd-analyze verify --root="$root" \
        pkforge-orchestrator.service pkforge-executor@gpu0.service 2>&1)" \
  || fail "systemd-analyze verify exited $?: $out"
[[ -z "$out" ]] || fail "systemd-analyze verify: $out"
echo "systemd_test: systemd-analyze verify: clean for pkforge-orchestrator.service, pkforge-executor@gpu0.service"

exe="$SRC/deploy/systemd/pkforge-executor@.service"
orch="$SRC/deploy/systemd/pkforge-orchestrator.service"
grep -qx 'Delegate=yes' "$exe" || fail "executor unit lacks Delegate=yes"
for opt in RestrictNamespaces PrivateUsers ProtectKernelTunables ProtectKernelLogs ProtectProc \
           ProcSubset ProtectControlGroups SystemCallFilter MemoryDenyWriteExecute PrivateDevices \
           RestrictSUIDSGID DynamicUser; do
  if grep -q "^$opt=" "$exe"; then fail "executor unit sets $opt= (breaks bubblewrap or the GPUs)"; fi
done
grep -q '^EnvironmentFile=-/etc/pkforge/orchestrator.env' "$orch" || fail "orchestrator EnvironmentFile"
grep -q '^EnvironmentFile=/etc/pkforge/executor-%i.env' "$exe" || fail "executor EnvironmentFile"
# Exposure scores, for the record (lower is better; the executor is root by design).
if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
  for u in pkforge-orchestrator.service pkforge-executor@gpu0.service; do
    (cd "$tmp" && systemd-analyze security --offline=yes --root="$root" "$u" 2>/dev/null | tail -n 1) || true
  done
fi
echo "systemd_test: PASS"
