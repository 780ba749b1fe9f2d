#!/usr/bin/env bash
# The GPU test and benchmark suite, run on a GPU host from the bundle
# (scripts/bundle.sh here, then on the host: scripts/gpu-suite.sh OUTDIR [part]).
#   part "tests":  ctest -L gpu (every gpu-labelled test), then the harness
#                  benchmarks at world size = every GPU of the host:
#                  identical-candidate fidelity (20 evaluations of every
#                  problem) and every cuda reference's bus bandwidth/roofline
#                  at the default and large sizes
#   part "bench":  the executor benchmark (latency breakdown, duty cycle) and a
#                  `pkforge local` search job on the cuda backend
# Each step has its own time limit and writes OUTDIR/<step>.log, so one slow or
# failing step never hides the others.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: gpu-suite.sh OUTDIR [tests|bench|all]}"
PART="${2:-all}"
mkdir -p "$OUT"
step() {  # step NAME SECONDS command...
  local name="$1" secs="$2"; shift 2
  echo "== $name (limit ${secs}s): $*"
  local t0=$SECONDS
  timeout --signal=KILL "$secs" scripts/gpu-host.sh "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc in $((SECONDS - t0)) s"
  tail -n 25 "$OUT/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >"$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
if [[ "$PART" == tests || "$PART" == all ]]; then
  step ctest 330 ctest --test-dir build-gpu -L gpu --output-on-failure -V
  W="build-gpu/bin/pkforge-worker bench --backend cuda --candidates build-gpu/kernels/candidates"
  NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  NGPU=$(( NGPU > 0 ? NGPU : 1 ))
  # shellcheck disable=SC2086
  step fidelity 300 $W --world-size "$NGPU" --size default --repeats 20 \
    --problems allreduce,allgather,gemm_allreduce,tp_rmsnorm,allgather_gemm,gemm_reducescatter
  # shellcheck disable=SC2086
  step fidelity_collectives 300 $W --world-size "$NGPU" --size default --repeats 20 \
    --problems reducescatter,alltoall,broadcast,reduce,gather,scatter
  # shellcheck disable=SC2086
  step busbw 200 $W --world-size "$NGPU" --size default --repeats 3
  # shellcheck disable=SC2086
  step busbw_large 200 $W --world-size "$NGPU" --size large --repeats 3
fi
if [[ "$PART" == bench || "$PART" == all ]]; then
  step executor_bench 240 build-gpu/bench/executor_bench --backend cuda --mode all --seconds 30
  step local 200 build-gpu/bin/pkforge local --backend cuda --problem allreduce --budget 120s \
    --data-dir /tmp/pkforge-local-gpu
fi
