#!/usr/bin/env bash
# deploy/slurm/pkforge-executors.sbatch under stub srun/scontrol (Slurm is a
# boundary we cannot reach here): a two-node "allocation" (127.0.0.1 and
# 127.0.0.2) starts two real pkforge-executor processes (host backend, any
# port), the script registers them in the executors file of a real
# pkforge-orchestrator and SIGHUPs it, the orchestrator reports both healthy;
# then SIGTERM to the batch script (what --signal=B:TERM sends before the time
# limit) removes its block from the file (other lines kept), stops both
# executors, and the orchestrator drops them.
# Usage: slurm_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD="$1"
SRC="$2"
BIN="$BUILD/bin"
tmp="$(mktemp -d)"
ORCH_PID="" JOB_PID=""
cleanup() {
  [[ -n "$JOB_PID" ]] && kill -TERM "$JOB_PID" 2>/dev/null && wait "$JOB_PID" 2>/dev/null
  [[ -n "$ORCH_PID" ]] && kill -TERM "$ORCH_PID" 2>/dev/null && wait "$ORCH_PID" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "slurm_test: FAIL: $*" >&2
  for f in "$tmp"/job.out "$tmp"/stub.log "$tmp"/orch.log "$tmp"/run/executor-*.log "$tmp/executors"; do
    [[ -f "$f" ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
  done
  exit 1
}
# Waits (bounded) for a condition given as a command.
await() {
  local what="$1" limit="$2"; shift 2
  for ((i = 0; i < limit * 5; i++)); do "$@" && return 0; sleep 0.2; done
  fail "timed out after ${limit}s waiting for: $what"
}

head -c 32 /dev/urandom | base64 >"$tmp/executor.token"
chmod 0600 "$tmp/executor.token"
printf '# static entries of the operator\n10.255.255.1:50051\n' >"$tmp/executors"

"$BIN/pkforge-orchestrator" --listen 127.0.0.1:0 --db "$tmp/pkforge.db" \
  --executors-file "$tmp/executors" --executor-token-file "$tmp/executor.token" \
  --discovery-interval 3600 --health-interval 0.2 >"$tmp/orch.log" 2>&1 &
ORCH_PID=$!
await "orchestrator LISTENING" 30 grep -q '^LISTENING ' "$tmp/orch.log"
ORCH="127.0.0.1:$(sed -n 's/^LISTENING .*:\([0-9]*\)$/\1/p' "$tmp/orch.log")"

# --discovery-interval 3600: only the SIGHUP from PKFORGE_RELOAD_CMD can make
# the orchestrator notice the file within this test.
PATH="$SRC/deploy/tests/slurm-stubs:$PATH" \
SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=127.0.0.1,127.0.0.2 SLURM_STUB_LOG="$tmp/stub.log" \
PKFORGE_EXECUTORS_FILE="$tmp/executors" PKFORGE_TOKEN_FILE="$tmp/executor.token" \
PKFORGE_EXECUTOR="$BIN/pkforge-executor" PKFORGE_EXECUTOR_PORT=0 \
PKFORGE_EXECUTOR_ARGS="--gpus none --no-measure --host-slots 1" \
PKFORGE_DATA_DIR="$tmp/data" PKFORGE_RUN_DIR="$tmp/run" PKFORGE_START_TIMEOUT=60 \
PKFORGE_RELOAD_CMD="kill -HUP $ORCH_PID" \
  bash "$SRC/deploy/slurm/pkforge-executors.sbatch" >"$tmp/job.out" 2>&1 &
JOB_PID=$!

registered_or_dead() {
  grep -q '^# pkforge-slurm job 4242 end$' "$tmp/executors" || ! kill -0 "$JOB_PID" 2>/dev/null
}
await "the job's block in the executors file" 90 registered_or_dead
grep -q '^# pkforge-slurm job 4242 end$' "$tmp/executors" || fail "the batch script exited before registering"
cat "$tmp/executors"
block="$(sed -n '/^# pkforge-slurm job 4242 begin$/,/^# pkforge-slurm job 4242 end$/p' "$tmp/executors" | sed '1d;$d')"
mapfile -t entries <<<"$block"
((${#entries[@]} == 2)) || fail "want 2 entries, got: $block"
[[ "${entries[0]}" =~ ^127\.0\.0\.1:[0-9]+$ && "${entries[1]}" =~ ^127\.0\.0\.2:[0-9]+$ ]] \
  || fail "entries are not NODE:PORT of the two nodes: ${entries[*]}"
grep -qx '10.255.255.1:50051' "$tmp/executors" || fail "static entry lost"
((2 == $(grep -c '^task [01] pid ' "$tmp/stub.log"))) || fail "srun did not start one task per node"

healthy() {
  local out
  out="$("$BIN/pkforge" executors --orchestrator "$ORCH" 2>/dev/null)" || return 1
  [[ "$(grep -cE "^(${entries[0]}|${entries[1]}) +yes " <<<"$out")" == 2 ]]
}
await "both executors healthy in the orchestrator" 60 healthy
"$BIN/pkforge" executors --orchestrator "$ORCH"

# End of the allocation.
kill -TERM "$JOB_PID"
wait "$JOB_PID" && fail "the batch script exited 0 after SIGTERM" || true
JOB_PID=""
cat "$tmp/job.out"
grep -q 'pkforge-slurm job 4242' "$tmp/executors" && fail "block still in the file after teardown"
grep -qx '10.255.255.1:50051' "$tmp/executors" || fail "static entry lost at teardown"
grep -q 'srun got SIGTERM, forwarding' "$tmp/stub.log" || fail "executors were not sent SIGTERM"
for pid in $(sed -n 's/^task [01] pid \([0-9]*\) .*/\1/p' "$tmp/stub.log"); do
  kill -0 "$pid" 2>/dev/null && fail "executor task $pid still running after teardown"
done
for t in 0 1; do
  grep -q 'graceful shutdown' "$tmp/run/executor-$t.log" || fail "executor $t did not shut down gracefully"
done
gone() {
  local out
  out="$("$BIN/pkforge" executors --orchestrator "$ORCH" 2>/dev/null)" || return 1
  ! grep -qE "^(${entries[0]}|${entries[1]}) " <<<"$out"
}
await "the orchestrator to drop both executors" 30 gone
echo "slurm_test: PASS"
