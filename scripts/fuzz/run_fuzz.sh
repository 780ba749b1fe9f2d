#!/usr/bin/env bash
# Starts one pkforge-executor, one pkforge-orchestrator (bearer tokens, a
# replay root with a symlink leading out, a provider key and tokens that are
# canaries) and a fake LLM on loopback, runs scripts/fuzz/api_fuzz.py against
# them, and stops all three on exit.
#
#   scripts/fuzz/run_fuzz.sh [-p PYTHON] [-d BIN_DIR] [-m EXEC_MAX_IN_FLIGHT] [-- api_fuzz.py args]
#
# PYTHON needs grpcio and grpcio-tools (python3 -m venv /tmp/fz &&
# /tmp/fz/bin/pip install grpcio grpcio-tools). With -m N the executor runs
# with max_in_flight N and the battery's orch_jobs group first holds N streams
# on it (--hog-executor N). The daemons' logs, database and the fake LLM's
# request log stay in the printed directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=python3 BIN=build-ci/bin MAXF=""
while getopts "p:d:m:h" opt; do
  case $opt in
    p) PY=$OPTARG ;; d) BIN=$OPTARG ;; m) MAXF=$OPTARG ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ ${1:-} == -- ]] && shift
OUT=$(mktemp -d /tmp/pkforge-fuzz.XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
EP=$(free_port) OP=$(free_port) LP=$(free_port)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

mkdir -p "$OUT/exec" "$OUT/replayroot/ok" "$OUT/outside"
printf 'exec-token-CANARY-%s' "$RANDOM$RANDOM" >"$OUT/exec.tok"
printf 'orch-token-CANARY-%s' "$RANDOM$RANDOM" >"$OUT/orch.tok"
chmod 600 "$OUT"/*.tok
echo "outside-file-CANARY-$RANDOM$RANDOM" >"$OUT/outside/secret.cu"
ln -s "$OUT/outside" "$OUT/replayroot/escape"
KEY="sk-provider-CANARY-$RANDOM$RANDOM"
"$PY" - "$OUT/cand.cc" <<'PYEOF'
import sys
t = open("executor/testing_candidates.h").read()
k = 'constexpr const char* kAllreduce = R"('
s = t.index(k) + len(k)
open(sys.argv[1], "w").write(t[s:t.index(')";', s)])
PYEOF
cp "$OUT/cand.cc" "$OUT/replayroot/ok/a.cc"

EXTRA=()
if [[ -n $MAXF ]]; then
  echo "{\"max_in_flight\": $MAXF}" >"$OUT/exec.json"
  EXTRA=(--config "$OUT/exec.json")
fi
"$BIN/pkforge-executor" "${EXTRA[@]}" --listen "127.0.0.1:$EP" --data-dir "$OUT/exec" \
  --token-file "$OUT/exec.tok" --gpus none --nvcc none --no-measure --host-slots 1 \
  --compile-workers 1 >"$OUT/executor.log" 2>&1 &
EXEC_PID=$!; PIDS+=("$EXEC_PID")
"$PY" scripts/fuzz/fake_llm.py --port "$LP" --candidate "$OUT/cand.cc" --log "$OUT/llm_requests.log" &
PIDS+=("$!")
PKF_FUZZ_KEY=$KEY "$BIN/pkforge-orchestrator" --listen "127.0.0.1:$OP" --db "$OUT/traj.db" \
  --executor "127.0.0.1:$EP" --executor-token-file "$OUT/exec.tok" --token-file "$OUT/orch.tok" \
  --provider "fake=openai,http://127.0.0.1:$LP/v1,PKF_FUZZ_KEY" \
  --provider "name=open,kind=openai,base_url=http://127.0.0.1:$LP/v1,allow_client_key=true" \
  --replay-root "$OUT/replayroot" --max-concurrent-jobs 2 --heartbeat-interval 0.5 \
  --health-interval 1 >"$OUT/orchestrator.log" 2>&1 &
ORCH_PID=$!; PIDS+=("$ORCH_PID")
for _ in $(seq 100); do grep -q LISTENING "$OUT/orchestrator.log" 2>/dev/null && break; sleep 0.1; done
sleep 1  # the executor's first health check
echo "fuzz: daemons in $OUT (executor $EXEC_PID, orchestrator $ORCH_PID)"
HOG=()
[[ -n $MAXF ]] && HOG=(--hog-executor "$MAXF")
rc=0
"$PY" scripts/fuzz/api_fuzz.py --executor "127.0.0.1:$EP" --exec-token-file "$OUT/exec.tok" \
  --exec-pid "$EXEC_PID" --orchestrator "127.0.0.1:$OP" --orch-token-file "$OUT/orch.tok" \
  --orch-pid "$ORCH_PID" --canary "$KEY" --outside-file "$OUT/outside/secret.cu" \
  "${HOG[@]}" "$@" || rc=$?
for f in "$OUT/orchestrator.log" "$OUT/executor.log"; do
  grep -q -e "$KEY" -e "$(cat "$OUT/exec.tok")" -e "$(cat "$OUT/orch.tok")" "$f" && echo "fuzz: a secret is in $f" && rc=1
done
grep -E -m3 'terminate called|Segmentation|AddressSanitizer|Aborted' "$OUT"/*.log && rc=1
echo "fuzz: logs and database in $OUT"
exit $rc
