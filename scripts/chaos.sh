#!/usr/bin/env bash
# Chaos run (issue 15): an executor and an orchestrator from build-ci/bin on
# loopback (host backend), N short search jobs, and kill -9 loops of both
# daemons while the jobs run. Then checks:
#   - every job reaches a terminal state (none left queued/running),
#   - each job's events have seq 1..n without a gap,
#   - the executor never died except by our kill -9 (no segfault, no abort),
# and prints the figures (jobs, kills, time to serve again after a restart).
#
#   scripts/chaos.sh [-n JOBS] [-k KILL_INTERVAL_S] [-b JOB_BUDGET_S] [-t KILL_PHASE_S]
#                    [-w SETTLE_TIMEOUT_S] [-d BIN_DIR] [-o OUT_DIR]
#
# Bounded: the kill phase lasts KILL_PHASE_S, then every job gets
# SETTLE_TIMEOUT_S to end; every daemon this script starts is killed on exit.
# Loopback only: both daemons listen on 127.0.0.1 ports chosen free at start.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=100 KILL_EVERY=4 BUDGET=8 KILL_PHASE=30 SETTLE=120 BIN=build-ci/bin OUT=""
while getopts "n:k:b:t:w:d:o:h" opt; do
  case $opt in
    n) JOBS=$OPTARG ;; k) KILL_EVERY=$OPTARG ;; b) BUDGET=$OPTARG ;; t) KILL_PHASE=$OPTARG ;;
    w) SETTLE=$OPTARG ;; d) BIN=$OPTARG ;; o) OUT=$OPTARG ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
done
for b in pkforge pkforge-executor pkforge-orchestrator pkforge-worker; do
  [[ -x $BIN/$b ]] || { echo "chaos: $BIN/$b missing (build it first)" >&2; exit 2; }
done
command -v sqlite3 >/dev/null || { echo "chaos: needs the sqlite3 command" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/pkforge-chaos.XXXXXX)}
mkdir -p "$OUT"
DB=$OUT/traj.db
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
EXEC_ADDR=127.0.0.1:$(free_port)
ORCH_ADDR=127.0.0.1:$(free_port)
export PKFORGE_ORCHESTRATOR=$ORCH_ADDR
now_ms() { date +%s%3N; }

EXEC_PID="" ORCH_PID="" EXEC_CRASHES=0 EXEC_KILLS=0 ORCH_KILLS=0
RECOVERY_MS=()
cleanup() {
  for p in $EXEC_PID $ORCH_PID ${SUBMITTER:-}; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

start_executor() {
  "$BIN/pkforge-executor" --listen "$EXEC_ADDR" --data-dir "$OUT/executor" --gpus none \
    --no-measure --host-slots 2 >>"$OUT/executor.log" 2>&1 &
  EXEC_PID=$!
}
start_orchestrator() {
  "$BIN/pkforge-orchestrator" --listen "$ORCH_ADDR" --db "$DB" --executor "$EXEC_ADDR" \
    --max-concurrent-jobs 50 --health-interval 0.5 >>"$OUT/orchestrator.log" 2>&1 &
  ORCH_PID=$!
}
# Milliseconds until the orchestrator answers an RPC (bounded by 30 s).
wait_serving() {
  local t0; t0=$(now_ms)
  for _ in $(seq 300); do
    if "$BIN/pkforge" executors >/dev/null 2>&1; then echo $(( $(now_ms) - t0 )); return 0; fi
    sleep 0.1
  done
  echo "chaos: the orchestrator did not serve within 30 s" >&2; return 1
}
# Reaps the executor if it died; one that died by anything but our SIGKILL crashed.
check_executor() {
  if [[ -n $EXEC_PID ]] && ! kill -0 "$EXEC_PID" 2>/dev/null; then
    local rc=0; wait "$EXEC_PID" || rc=$?
    echo "chaos: executor exited on its own (status $rc)" >&2
    EXEC_CRASHES=$((EXEC_CRASHES + 1))
    start_executor
  fi
}

start_executor
start_orchestrator
wait_serving >/dev/null

# Submit in the background (an idempotency key per job, so a submission cut
# by a kill is retried without a second job) while this shell, which owns the
# daemons' pids, runs the kill loop.
T0=$(now_ms)
(
  for i in $(seq "$JOBS"); do
    for _ in $(seq 100); do
      if "$BIN/pkforge" submit --agent search --problem allreduce --backend host --world-size 2 \
           --size tiny --budget "${BUDGET}s" --max-evaluations 4 --label chaos \
           --request-id "chaos-$i" >/dev/null 2>>"$OUT/submit.err"; then
        echo "$i" >"$OUT/submitted"; break
      fi
      sleep 0.2
    done
  done
) &
SUBMITTER=$!
submitted() { cat "$OUT/submitted" 2>/dev/null || echo 0; }
# Kills start once a third of the jobs are in.
while kill -0 "$SUBMITTER" 2>/dev/null && (( $(submitted) < JOBS / 3 )); do sleep 0.2; done
end=$(( $(date +%s) + KILL_PHASE )); n=0
while (( $(date +%s) < end )) || kill -0 "$SUBMITTER" 2>/dev/null; do
  sleep "$KILL_EVERY"
  check_executor
  n=$((n + 1))
  if (( n % 2 )); then
    kill -9 "$ORCH_PID"; wait "$ORCH_PID" 2>/dev/null || true
    ORCH_KILLS=$((ORCH_KILLS + 1))
    start_orchestrator
    RECOVERY_MS+=("$(wait_serving)")
  else
    kill -9 "$EXEC_PID"; wait "$EXEC_PID" 2>/dev/null || true
    EXEC_KILLS=$((EXEC_KILLS + 1))
    start_executor
  fi
  # Bounded even if submissions stall: never more than twice the kill phase.
  (( $(date +%s) > end + KILL_PHASE )) && break
done
wait "$SUBMITTER" 2>/dev/null || true
submitted=$(submitted)
SUBMIT_MS=$(( $(now_ms) - T0 ))

# Settle: every job must end within SETTLE seconds.
deadline=$(( $(date +%s) + SETTLE ))
while :; do
  check_executor
  open=$(sqlite3 -readonly "$DB" "SELECT COUNT(*) FROM jobs WHERE state IN ('queued','running')")
  (( open == 0 )) && break
  if (( $(date +%s) >= deadline )); then break; fi
  sleep 1
done
TOTAL_S=$(( ($(now_ms) - T0) / 1000 ))

fail=0
jobs_stored=$(sqlite3 -readonly "$DB" "SELECT COUNT(*) FROM jobs WHERE label='chaos'")
states=$(sqlite3 -readonly "$DB" "SELECT state || '=' || COUNT(*) FROM jobs GROUP BY state" | tr '\n' ' ')
if (( open > 0 )); then echo "FAIL: $open job(s) not terminal after ${SETTLE}s" >&2; fail=1; fi
if (( jobs_stored != JOBS )); then echo "FAIL: $jobs_stored jobs stored, $JOBS submitted" >&2; fail=1; fi
gaps=$(sqlite3 -readonly "$DB" \
  "SELECT COUNT(*) FROM (SELECT job_id FROM events GROUP BY job_id HAVING MIN(seq) != 1 OR MAX(seq) != COUNT(*))")
if (( gaps > 0 )); then echo "FAIL: $gaps job(s) with a gap in event seq" >&2; fail=1; fi
crash_lines=$(grep -ciE "segmentation fault|sanitizer|core dumped|terminate called|abort" \
  "$OUT/executor.log" || true)
if (( EXEC_CRASHES > 0 || crash_lines > 0 )); then
  echo "FAIL: executor crashed on its own ($EXEC_CRASHES exits, $crash_lines crash lines)" >&2; fail=1
fi
evals=$(sqlite3 -readonly "$DB" "SELECT COUNT(*) FROM evaluations")
unended=$(sqlite3 -readonly "$DB" "SELECT COUNT(*) FROM events s WHERE s.type='evaluation_started' AND NOT EXISTS (SELECT 1 FROM events f WHERE f.job_id = s.job_id AND f.type IN ('evaluation_finished','evaluation_aborted') AND json_extract(f.payload_json,'\$.evaluationId') = json_extract(s.payload_json,'\$.evaluationId'))")
rec_sorted=$(printf '%s\n' "${RECOVERY_MS[@]:-}" | sort -n | tr '\n' ' ')

echo "chaos: jobs=$JOBS submitted=$submitted stored=$jobs_stored states: $states"
echo "chaos: orchestrator kills=$ORCH_KILLS executor kills=$EXEC_KILLS executor crashes=$EXEC_CRASHES"
echo "chaos: restart-to-serving ms (orchestrator, sorted): $rec_sorted"
echo "chaos: evaluations with a result=$evals, evaluation_started without an end event=$unended"
echo "chaos: event seq gaps=$gaps, jobs not terminal=$open, submit+kill phase ${SUBMIT_MS} ms, total ${TOTAL_S} s"
echo "chaos: logs and database in $OUT"
if (( fail )); then echo "chaos: FAILED"; exit 1; fi
echo "chaos: OK"
