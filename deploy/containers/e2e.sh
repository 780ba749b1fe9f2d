#!/usr/bin/env bash
# End-to-end check of the container images: builds them offline from this
# checkout's build (build-images.sh), starts one orchestrator and two
# executors (host backend) as containers on one podman network, and runs a
# `pkforge submit --watch` search job through them from a client container.
# Passes when the job succeeds, both executors are healthy in the
# orchestrator's view, and evaluations ran. Cleans up everything it started.
#
# Usage: deploy/containers/e2e.sh [--build-dir DIR] [--skip-build] [--keep-images]
#   --skip-build   use images tagged :e2e from an earlier run
#   --keep-images  keep the :e2e images it built (removed at exit otherwise)
#   Needs podman (Debian's package) and runc; settings in containers.conf here.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
BUILD=build SKIP_BUILD=0 KEEP=0
while (($#)); do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --skip-build) SKIP_BUILD=1; KEEP=1; shift ;;
    --keep-images) KEEP=1; shift ;;
    *) echo "e2e: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/deploy/containers/containers.conf}"
command -v podman >/dev/null || { echo "e2e: podman not found (apt-get install podman runc)" >&2; exit 1; }
TAG=e2e
if ((SKIP_BUILD == 0)); then
  deploy/containers/build-images.sh --build-dir "$BUILD" --engine podman --tag "$TAG"
fi

ID="pkf-e2e-$$"
NET="$ID-net"
tmp="$(mktemp -d)"
cleanup() {
  for c in "$ID-client" "$ID-orch" "$ID-exec1" "$ID-exec2"; do podman rm -f -t 5 "$c" >/dev/null 2>&1 || true; done
  podman network rm -f "$NET" >/dev/null 2>&1 || true
  ((KEEP)) || podman rmi -f "pkforge-executor:$TAG" "pkforge-orchestrator:$TAG" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "e2e: FAIL: $*" >&2
  for c in "$ID-orch" "$ID-exec1" "$ID-exec2"; do echo "--- logs $c" >&2; podman logs --tail 30 "$c" >&2 || true; done
  exit 1
}

mkdir -p "$tmp/tokens"
head -c 32 /dev/urandom | base64 >"$tmp/tokens/orchestrator.token"
head -c 32 /dev/urandom | base64 >"$tmp/tokens/executor.token"
chmod 0644 "$tmp/tokens"/*  # read by root inside the containers only
# Fixed addresses and --add-host instead of the network's DNS plugin, which
# Debian's podman (CNI backend) does not install by default.
SUBNET="10.89.$(( ($$ % 200) + 20 ))"
podman network create --subnet "$SUBNET.0/24" "$NET" >/dev/null
HOSTS=(--add-host "exec1:$SUBNET.11" --add-host "exec2:$SUBNET.12" --add-host "orch:$SUBNET.10")

# The executor's sandbox inside a container (deploy/README.md): bubblewrap
# needs the user/mount/pid/net namespace syscalls, which the default seccomp
# profile forbids (seccomp=unconfined; the sandbox installs its own filter for
# candidates), and a /proc without the runtime's over-mounts, without which
# the kernel refuses bwrap's fresh /proc (systempaths=unconfined). No added
# capabilities, not privileged: candidates run as uid 65534 in a user namespace.
SANDBOX_OPTS=(--security-opt seccomp=unconfined --security-opt systempaths=unconfined)
for n in 1 2; do
  podman run -d --name "$ID-exec$n" --network "$NET" --ip "$SUBNET.1$n" "${HOSTS[@]}" "${SANDBOX_OPTS[@]}" \
    -v "$tmp/tokens:/etc/pkforge/tokens:ro" "pkforge-executor:$TAG" \
    --listen 0.0.0.0:50051 --gpus none --no-measure --data-dir /var/lib/pkforge \
    --token-file /etc/pkforge/tokens/executor.token --executor-id "exec$n" --host-slots 2 >/dev/null
done
podman run -d --name "$ID-orch" --network "$NET" --ip "$SUBNET.10" "${HOSTS[@]}" \
  -v "$tmp/tokens:/etc/pkforge/tokens:ro" "pkforge-orchestrator:$TAG" \
  --listen 0.0.0.0:50061 --db /var/lib/pkforge/pkforge.db \
  --executor exec1:50051 --executor exec2:50051 --health-interval 1 \
  --token-file /etc/pkforge/tokens/orchestrator.token \
  --executor-token-file /etc/pkforge/tokens/executor.token >/dev/null

client() {
  podman run --rm --name "$ID-client" --network "$NET" "${HOSTS[@]}" -v "$tmp/tokens:/etc/pkforge/tokens:ro" \
    -e PKFORGE_ORCHESTRATOR=orch:50061 -e PKFORGE_TOKEN_FILE=/etc/pkforge/tokens/orchestrator.token \
    --entrypoint /usr/bin/pkforge "pkforge-orchestrator:$TAG" "$@"
}
# Both executors healthy (the orchestrator checks every second): poll the
# orchestrator's own view.
healthy=0
end=$((SECONDS + 180))  # generous: CI's two cores are shared with the other tests
while ((SECONDS < end)); do
  out="$(client executors 2>&1 || true)"
  healthy="$(grep -cE '^exec[12]:50051 +yes ' <<<"$out" || true)"
  ((healthy >= 2)) && break
  sleep 1
done
echo "$out"
((healthy >= 2)) || fail "executors not both healthy"

start=$(date +%s)
client submit --problem allreduce --backend host --size tiny --agent search \
  --budget 120s --max-evaluations 6 --label container-e2e --watch >"$tmp/watch.log" 2>&1 \
  || { cat "$tmp/watch.log"; fail "pkforge submit --watch exited non-zero"; }
tail -n 15 "$tmp/watch.log"
grep -qiE 'succeeded' "$tmp/watch.log" || fail "job did not succeed"
client jobs 2>&1 | tail -n 3
evals=0
for n in 1 2; do
  c="$(podman logs "$ID-exec$n" 2>&1 | grep -c ' evaluation .* -> ' || true)"
  echo "e2e: exec$n ran $c evaluation(s)"
  evals=$((evals + c))
done
((evals > 0)) || fail "no evaluation reached an executor"
for n in 1 2; do  # isolated, not --unsafe-no-sandbox
  logs="$(podman logs "$ID-exec$n" 2>&1)"
  grep -q 'sandbox bubblewrap' <<<"$logs" || fail "exec$n does not run the bubblewrap sandbox"
done
echo "e2e: PASS (job succeeded in $(( $(date +%s) - start )) s, $evals evaluations, 2 executors)"
