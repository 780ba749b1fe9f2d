#!/usr/bin/env bash
# The GPU validation of one session, in parts that each fit one call of a
# lent GPU machine (scripts/bundle.sh here first; the call carries
# bundle/pkforge-bundle.tgz and runs this from the repo root):
#   scripts/gpu-session.sh 1     the most telling first: redteam_gpu_test with
#                                PKFORGE_REDTEAM_PENDING=1, executor_gpu_test (the path
#                                real clients take), kernels_gpu_test without the oracle
#                                test, the probe test
#   scripts/gpu-session.sh 2     sandbox gpu test, the executor-slowness diagnosis (the
#                                same worker launch directly and in pkforge-sandbox with
#                                --gpu, --gpus 0, --run-as-uid), the oracle test, the late
#                                seccomp filter (PKFORGE_CUDA_LATE_FILTER=1) on controls
#                                and naive candidates
#   scripts/gpu-session.sh 3     kernel_templates_gpu_test, identical-candidate fidelity
#   scripts/gpu-session.sh diag  the diagnosis alone
#   scripts/gpu-session.sh fid   cuda fidelity at the default size with and without the
#                                symmetry measures (reference filter, CPU wake-up hold)
#   scripts/gpu-session.sh s17a|s17b|s17c  session 17's three calls (below)
#   scripts/gpu-session.sh s18a|s18b  session 18's calls for the next session (below)
#   scripts/gpu-session.sh s19a  session 19: the block-reduced, batched checks (below)
#   scripts/gpu-session.sh s20a  session 20: the GPU tests no call reached after the moves
#   scripts/gpu-session.sh s22a|s22b|s22c  session 22's calls (below)
#   scripts/gpu-session.sh s23a  the next session's first call (below)
#   scripts/gpu-session.sh s21a|s21b|s21c|s21d|s21e  session 21's calls (below)
#   scripts/gpu-session.sh s20b|s20c|s20d  session 20: the cuda drip batches (below)
#   scripts/gpu-session.sh c     session 16's leftovers: control_linger_once (the idle
#                                probe's excuse now named), the whole oracle test (only 65
#                                of 126 jobs ever reached), the wake-gap diagnosis on the
#                                copies that read 0.87-0.91 (broadcast, gather)
# Each step has its own time limit; logs go to $OUT/logs.tgz (one file, rewritten after
# every step, since a call returns few files and may be cut at its limit).
# scripts/gpu-suite.sh is the whole suite for a GPU host of one's own.
set -uo pipefail
PART="${1:-1}"
O="${OUT:-/tmp/out}"; mkdir -p "$O" /tmp/gpu-logs/logs
# A call returns at most 8 files: the logs travel as one archive, rewritten
# after every step so a call cut at its limit still brings them back.
pack() { tar -C /tmp/gpu-logs -czf /tmp/gpu-logs/logs.tgz logs && cp /tmp/gpu-logs/logs.tgz "$O/logs.tgz"; }
trap 'pack' EXIT
T0=$SECONDS
t() {  # t NAME SECONDS [ENV=V ...] cmd...
  local name="$1" secs="$2"; shift 2
  local t0=$SECONDS
  timeout --signal=KILL "$secs" env "$@" >"/tmp/gpu-logs/logs/$name.log" 2>&1
  local rc=$?
  # A step killed at its limit leaves its workers and ranks (own process
  # groups) on the GPU: they would hog it for the next step.
  pkill -KILL -f 'pkforge-(worker|cuda-rank|executor|sandbox)' 2>/dev/null
  echo "== $name rc=$rc $((SECONDS - t0))s (at $((SECONDS - T0))s)"
  pack
  grep -E "^\[  (FAILED|  OK|  SKIPPED) |PASSED|FAILED TEST|result|speedup" "/tmp/gpu-logs/logs/$name.log" | tail -n 40
}
tar -C bundle -xzf bundle/pkforge-bundle.tgz
H=scripts/gpu-host.sh
B=build-gpu
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "/tmp/gpu-logs/logs/gpu.txt"
nproc; 
if [[ "$PART" == 1 ]]; then
  t redteam 200 PKFORGE_REDTEAM_PENDING=1 $H $B/kernels/redteam_gpu_test
  t executor 170 $H $B/executor/executor_gpu_test
  t kernels 170 $H $B/kernels/kernels_gpu_test --gtest_filter=-*CudaReferenceMatchesHostOracle*
  t probe 30 $H $B/kernels/probe_gpu_test
fi
if [[ "$PART" == 2 ]]; then
  t sandbox 30 $H $B/sandbox/sandbox_gpu_test
fi
if [[ "$PART" == 2 || "$PART" == diag ]]; then
  # Executor slowness (open since session 9): the same worker launch directly,
  # in the sandbox with --gpu, with --gpus 0, and with --run-as-uid 65534.
  WL="$B/bin/pkforge-worker launch --problem allreduce --backend cuda --world-size 1 --dtype bf16 --size tiny --json $B/kernels/candidates/naive_cuda_allreduce.so"
  SB="$B/bin/pkforge-sandbox --max-procs 4096 --ro $PWD --ro $(readlink -f $B) --ro /work --env PKFORGE_TIMING_DIAG=1"
  t diag_direct 30 PKFORGE_TIMING_DIAG=1 $H $WL
  t diag_sb_gpu 30 $H bash -c "$SB --env LD_LIBRARY_PATH=\$LD_LIBRARY_PATH --gpu -- $WL"
  t diag_sb_gpus0 30 $H bash -c "$SB --env LD_LIBRARY_PATH=\$LD_LIBRARY_PATH --gpus 0 -- $WL"
  t diag_sb_uid 30 $H bash -c "$SB --env LD_LIBRARY_PATH=\$LD_LIBRARY_PATH --gpus 0 --run-as-uid 65534 --run-as-gid 65534 -- $WL"
  grep -H "^phase\|rror" /tmp/gpu-logs/logs/diag_*.log | head -40
fi
if [[ "$PART" == 2 ]]; then
  t oracle 150 $H $B/kernels/kernels_gpu_test --gtest_filter=*CudaReferenceMatchesHostOracle*
  t redteam_late 100 PKFORGE_CUDA_LATE_FILTER=1 $H $B/kernels/redteam_gpu_test --gtest_filter=*control*:*early_return*:*side_stream*
  t naive_late 60 PKFORGE_CUDA_LATE_FILTER=1 $H $B/kernels/kernels_gpu_test --gtest_filter=*EveryNaiveCuda*:*ReferenceAsCandidate*
fi
if [[ "$PART" == keeper ]]; then
  # Is the slowness the GPU's cold start? The same launches without and with
  # a process that keeps an NVML session open (nvidia-smi -l: changes no
  # setting), directly and in the sandbox; then the executor test with it.
  nvidia-smi -q | grep -i -A1 "persistence\|Compute Mode" | tee /tmp/gpu-logs/logs/persistence.txt
  WL="$B/bin/pkforge-worker launch --problem allreduce --backend cuda --world-size 1 --dtype bf16 --size tiny --json $B/kernels/candidates/naive_cuda_allreduce.so"
  SB="$B/bin/pkforge-sandbox --max-procs 4096 --ro $PWD --ro $(readlink -f $B) --ro /work --env PKFORGE_TIMING_DIAG=1"
  t cold_direct 40 PKFORGE_TIMING_DIAG=1 $H $WL
  t cold_sb 40 $H bash -c "$SB --env LD_LIBRARY_PATH=\$LD_LIBRARY_PATH --gpus 0 -- $WL"
  nvidia-smi -l 1 >/dev/null 2>&1 &
  KEEP=$!
  sleep 3
  t warm_direct 40 PKFORGE_TIMING_DIAG=1 $H $WL
  t warm_sb 40 $H bash -c "$SB --env LD_LIBRARY_PATH=\$LD_LIBRARY_PATH --gpus 0 -- $WL"
  t warm_executor 170 $H $B/executor/executor_gpu_test
  t warm_naive 80 $H $B/kernels/kernels_gpu_test --gtest_filter=*EveryNaiveCuda*
  kill $KEEP
  grep -H "^phase\|rror\|status" /tmp/gpu-logs/logs/{cold,warm}_*.log | cut -c1-200 | head -60
fi
if [[ "$PART" == sb || "$PART" == sb2 ]]; then
  # Executor slowness, bisected: GPU health check (cuInit, a kernel) and one
  # worker launch, directly and in pkforge-sandbox with the executor's flags.
  # Absolute paths: the sandbox's cwd is its own.
  BA="$(readlink -f $B)"
  HC="$BA/bin/pkforge-cuda-rank health --gpu 0"
  WL="$BA/bin/pkforge-worker launch --problem allreduce --backend cuda --world-size 1 --dtype bf16 --size tiny --json $BA/kernels/candidates/naive_cuda_allreduce.so"
  SB="$BA/bin/pkforge-sandbox --ro $PWD --ro $BA --env PKFORGE_TIMING_DIAG=1 --env LD_LIBRARY_PATH=\$LD_LIBRARY_PATH"
  FULL="--run-as-uid 65534 --run-as-gid 65534 --memory-mb 32768 --max-open-files 4096 --cpu-seconds 60 --max-procs 4096 --max-file-mb 1024"
  ( nvidia-smi -q | grep -i -A1 "persistence\|MIG Mode\|Compute Mode"; ls -la /dev/nvidia*; nproc ) > /tmp/gpu-logs/logs/env.txt 2>&1
  if [[ "$PART" == sb2 ]]; then
    # The executor's old CUDA_MODULE_LOADING=EAGER against the default (lazy).
    t w_sb_full 40 $H bash -c "time taskset -c 0-7 $SB --gpus 0 $FULL -- $WL"
    t w_sb_full_eager 40 $H bash -c "time taskset -c 0-7 $SB --env CUDA_MODULE_LOADING=EAGER --gpus 0 $FULL -- $WL"
    t h_sb_full_eager 20 $H bash -c "time $SB --env CUDA_MODULE_LOADING=EAGER --gpus 0 $FULL -- $HC"
    t h_sb_full 20 $H bash -c "time $SB --gpus 0 $FULL -- $HC"
  fi
  t h_direct 20 $H bash -c "time $HC"
  [[ "$PART" == sb ]] && t h_sb 20 $H bash -c "time $SB --gpus 0 -- $HC"
  [[ "$PART" == sb ]] && t h_sb_full 20 $H bash -c "time taskset -c 0-7 $SB --gpus 0 $FULL -- $HC"
  [[ "$PART" == sb ]] && t w_sb_full 45 $H bash -c "time taskset -c 0-7 $SB --gpus 0 $FULL -- $WL"
  if [[ "$PART" == sb2 ]]; then
    grep -H "^real\|^phase\|rror\|healthy\|\"status" /tmp/gpu-logs/logs/{h,w}_*.log | cut -c1-160
    exit 0
  fi
  t w_direct 25 PKFORGE_TIMING_DIAG=1 $H bash -c "time $WL"
  t w_sb 45 $H bash -c "time $SB --gpus 0 -- $WL"
  t h_sb_uid 20 $H bash -c "time $SB --gpus 0 --run-as-uid 65534 --run-as-gid 65534 -- $HC"
  t h_sb_all 20 $H bash -c "time $SB --gpu -- $HC"
  grep -H "^real\|^phase\|rror\|healthy\|\"status" /tmp/gpu-logs/logs/{h,w}_*.log | cut -c1-160 | head -60
  t executor 150 $H $B/executor/executor_gpu_test
  grep -H "^real\|^phase\|rror\|healthy\|\"status" /tmp/gpu-logs/logs/{h,w}_*.log | cut -c1-160 | head -60
fi
if [[ "$PART" == a ]]; then
  # Session 15, first call: lazy against eager module loading in the sandbox with the
  # executor's flags, the executor test (health-check retries, lazy loading), then the
  # red-team tests that session 14's 200 s step did not reach (pending ones included).
  BA="$(readlink -f $B)"
  WL="$BA/bin/pkforge-worker launch --problem allreduce --backend cuda --world-size 1 --dtype bf16 --size tiny --json $BA/kernels/candidates/naive_cuda_allreduce.so"
  SB="$BA/bin/pkforge-sandbox --ro $PWD --ro $BA --env PKFORGE_TIMING_DIAG=1 --env LD_LIBRARY_PATH=\$LD_LIBRARY_PATH"
  FULL="--run-as-uid 65534 --run-as-gid 65534 --memory-mb 32768 --max-open-files 4096 --cpu-seconds 60 --max-procs 4096 --max-file-mb 1024"
  t w_sb_full 35 $H bash -c "time taskset -c 0-7 $SB --gpus 0 $FULL -- $WL"
  t w_sb_full_eager 35 $H bash -c "time taskset -c 0-7 $SB --env CUDA_MODULE_LOADING=EAGER --gpus 0 $FULL -- $WL"
  grep -H "^real\|^phase\|rror\|\"status" /tmp/gpu-logs/logs/w_*.log | cut -c1-160
  t executor 170 $H $B/executor/executor_gpu_test
  t redteam 330 PKFORGE_REDTEAM_PENDING=1 $H $B/kernels/redteam_gpu_test \
    --gtest_filter=-*control_private_stream:*side_stream_short:*gpu_hog_setup:*mailbox_garbage:*early_return_host_thread:*patch_device_sync
fi
if [[ "$PART" == b ]]; then
  # Session 15, second call: the cuda references against the host oracles (#17),
  # every naive cuda candidate, identical-candidate fidelity at the default size.
  t oracle 150 $H $B/kernels/kernels_gpu_test --gtest_filter=*CudaReferenceMatchesHostOracle*
  t kernels 190 $H $B/kernels/kernels_gpu_test --gtest_filter=-*CudaReferenceMatchesHostOracle*
  W="$B/bin/pkforge-worker bench --backend cuda --candidates $B/kernels/candidates"
  t fidelity 240 $H $W --world-size 1 --size default --repeats 6
fi
if [[ "$PART" == fid ]]; then
  # cuda identical-candidate fidelity at the default size, and what each
  # symmetry measure adds (session 15: 0.81-0.99 before them): as shipped, the
  # reference ranks without the candidate's seccomp filter, the CPUs free to
  # idle deeply. stdbuf: bench lines survive a step cut at its limit.
  W="stdbuf -oL $B/bin/pkforge-worker bench --backend cuda --candidates $B/kernels/candidates --world-size 1 --size default --repeats 5 --problems allreduce,allgather,reducescatter,alltoall,moe_all2all"
  t fid_default 160 $H $W
  t fid_no_ref_filter 160 PKFORGE_REF_FILTER=0 $H $W
  t fid_no_wake_hold 160 PKFORGE_CPU_WAKE_HOLD=0 $H $W
  grep -H "^[a-z_]* *[0-9.]* *[0-9.]\|wake-up" /tmp/gpu-logs/logs/fid_*.log
fi
if [[ "$PART" == c ]]; then
  t linger 60 $H $B/kernels/redteam_gpu_test --gtest_filter='*linger*'
  grep -h "slow idle probe\|slow synchronize\|REDTEAM" /tmp/gpu-logs/logs/linger.log | cut -c1-300
  for p in broadcast gather; do
    t "diag_$p" 40 PKFORGE_TIMING_DIAG=1 $H $B/bin/pkforge-worker launch --problem $p \
      --backend cuda --world-size 1 --dtype bf16 --size default --json \
      $B/kernels/candidates/ref_cuda_$p.so
    grep -h "^timing-diag" "/tmp/gpu-logs/logs/diag_$p.log" | sort | awk '{print $2, $4, $6, $8, $10}' | head -40
  done
  t oracle 300 $H $B/kernels/kernels_gpu_test --gtest_filter=*CudaReferenceMatchesHostOracle*
fi
if [[ "$PART" == s17a ]]; then
  # Session 17, first call: the linger excuse, the rewritten ddp/zero1/zero2
  # reference against the naive candidates (session 16: naive 1.23-1.42x
  # faster), the wake-gap diagnosis on broadcast, the whole oracle test.
  t linger 45 $H $B/kernels/redteam_gpu_test --gtest_filter='*linger*'
  grep -h "slow idle probe\|slow synchronize\|REDTEAM" /tmp/gpu-logs/logs/linger.log | cut -c1-300
  t mlp 150 $H bash -c 'for p in ddp zero1 zero2; do for d in f32 bf16; do for z in tiny default; do
      echo "== $p $d $z"; timeout 20 '"$B"'/bin/pkforge-worker launch --problem $p --backend cuda \
        --world-size 1 --dtype $d --size $z --json '"$B"'/kernels/candidates/naive_cuda_$p.so |
        grep -o "\"status\":\"[A-Z_]*\",\"message\":\"[^\"]*\"" | cut -c1-240; echo
      done; done; done'
  cat /tmp/gpu-logs/logs/mlp.log | grep -v "^$" | cut -c1-200
  t diag_broadcast 40 PKFORGE_TIMING_DIAG=1 $H $B/bin/pkforge-worker launch --problem broadcast \
    --backend cuda --world-size 1 --dtype bf16 --size default --json $B/kernels/candidates/ref_cuda_broadcast.so
  grep -h "^timing-diag" /tmp/gpu-logs/logs/diag_broadcast.log | head -60
  t oracle 270 $H $B/kernels/kernels_gpu_test --gtest_filter=*CudaReferenceMatchesHostOracle*
fi
if [[ "$PART" == s17b ]]; then
  t executor 170 $H $B/executor/executor_gpu_test
  t redteam 310 PKFORGE_REDTEAM_PENDING=1 $H $B/kernels/redteam_gpu_test
fi
if [[ "$PART" == s17c ]]; then
  # Fidelity of the problems without numbers so far, ddp and zero1 again
  # (new reference); then the ~5 us copies (0.87-0.91 at the default 512 MiB
  # of input sets: batches of ~64 calls) with 2 GiB of sets at the same 2 ms
  # batch target: is the set budget alone the lever, and at what eval_s?
  W="stdbuf -oL $B/bin/pkforge-worker bench --backend cuda --candidates $B/kernels/candidates --world-size 1 --size default"
  t fid_rest 200 $H $W --repeats 2 --problems ddp,zero1,zero2,allgather_gemm_at,clip_grad_norm_ep,combined_sharded_gemms,gnn_feature_exchange,hyena_conv1d_halo,moe_token_preprocess,sinkhorn_knopp,ulysses_gather_heads_scatter_seq,ulysses_gather_seq_scatter_heads,ulysses_gather_seq_scatter_heads_qkv
  t fid_budget 140 PKFORGE_SET_BUDGET_MB=2048 $H $W --repeats 3 --problems broadcast,gather,scatter,allgather,embedding_lookup
fi
if [[ "$PART" == s18a ]]; then
  # Next session, first call: the stall rule on batch_fuse_group (H100
  # session 17: OK at 14.9x/15.3x in 2 of 3 runs before it), the rank_cuda
  # split (rank_cuda_checks.cc) through the fast GPU tests, where an
  # evaluation's time goes with 512 MiB and 2 GiB of input sets (round-diag),
  # and the batched check (PKFORGE_BATCH_CHECK=1: one synchronization per
  # batch) for time and for the same verdicts on the cheats it must catch.
  t fuse 60 $H $B/kernels/redteam_gpu_test --gtest_filter='*batch_fuse_group*:*linger*:*control_nccl_per_call*'
  t kernels 200 $H $B/kernels/kernels_gpu_test --gtest_filter=-*CudaReferenceMatchesHostOracle*:*EveryNaiveCuda*:*ReferenceAsCandidate*
  for v in 512:0 2048:0 2048:1; do
    b=${v%:*}; c=${v#*:}
    t "rdiag_${b}_$c" 40 PKFORGE_TIMING_DIAG=1 PKFORGE_SET_BUDGET_MB=$b PKFORGE_BATCH_CHECK=$c $H \
      $B/bin/pkforge-worker launch --problem broadcast --backend cuda --world-size 1 --dtype bf16 \
      --size default --json $B/kernels/candidates/ref_cuda_broadcast.so
    grep -h "^phase\|^round-diag\|\"message\"" "/tmp/gpu-logs/logs/rdiag_${b}_$c.log" | cut -c1-200
  done
  t batchcheck 80 PKFORGE_BATCH_CHECK=1 $H $B/kernels/kernels_gpu_test \
    --gtest_filter='*Perturbed*:*Unwritten*:*MutatingInputs*:*CachingByPointer*:*DoingNothing*:*PreciseTiming*'
  t probe 30 $H $B/kernels/probe_gpu_test
  t sandbox 30 $H $B/sandbox/sandbox_gpu_test
fi
if [[ "$PART" == s18b ]]; then
  # Precise timing as shipped (the 2 GiB shape): the copies and the two
  # problems at 0.96; the executor; the red team with pending ones.
  t fid_precise 150 $H stdbuf -oL $B/bin/pkforge-worker bench --backend cuda --candidates \
    $B/kernels/candidates --world-size 1 --size default --repeats 3 --precise-timing \
    --problems broadcast,allgather,embedding_lookup,allgather_gemm_at,ulysses_gather_seq_scatter_heads_qkv
  t executor 170 $H $B/executor/executor_gpu_test
  t redteam 250 PKFORGE_REDTEAM_PENDING=1 $H $B/kernels/redteam_gpu_test
fi
if [[ "$PART" == s19a ]]; then
  # Session 19 (one short call: the device budget left after a failed start):
  # block-reduced comparison kernels, batched poison checks and progress
  # probes, the batched check by default. Where the time goes now
  # (round-diag: poisoncheck 1.56 s and progress 0.9 s a round at 2 GiB
  # before), the fast GPU tests, and the verdicts the probes feed.
  for b in 512 2048; do
    t "rdiag_$b" 35 PKFORGE_TIMING_DIAG=1 PKFORGE_SET_BUDGET_MB=$b $H \
      $B/bin/pkforge-worker launch --problem broadcast --backend cuda --world-size 1 --dtype bf16 \
      --size default --json $B/kernels/candidates/ref_cuda_broadcast.so
    grep -h "^phase\|^round-diag\|\"message\"" "/tmp/gpu-logs/logs/rdiag_$b.log" | cut -c1-200
  done
  t kernels 100 $H $B/kernels/kernels_gpu_test --gtest_filter=-*CudaReferenceMatchesHostOracle*:*EveryNaiveCuda*:*ReferenceAsCandidate*
  t fuse 30 $H $B/kernels/redteam_gpu_test --gtest_filter='*batch_fuse_group*:*control_nccl_per_call*'
fi
if [[ "$PART" == s19mini ]]; then
  # The last ~40 s of session 19's device time: one evaluation at 512 MiB
  # with the block-reduced, batched checks (verdict and round-diag), then
  # the tests where unwritten and perturbed outputs must be caught.
  t rdiag_512 25 PKFORGE_TIMING_DIAG=1 $H $B/bin/pkforge-worker launch --problem broadcast \
    --backend cuda --world-size 1 --dtype bf16 --size default --json \
    $B/kernels/candidates/ref_cuda_broadcast.so
  grep -h "^phase\|^round-diag\|\"message\"" /tmp/gpu-logs/logs/rdiag_512.log | cut -c1-200
  t caught 30 $H $B/kernels/kernels_gpu_test --gtest_filter='*Unwritten*:*Perturbed*:*DoingNothing*'
fi
if [[ "$PART" == s20a ]]; then
  # Session 20, first call: the parts of `ctest -L gpu` no call reached
  # after the moves of sessions 17-19 (the cuda references against the host
  # oracles, every naive cuda candidate and the reference as a candidate,
  # the agent's templates compiled and run), and the executor's GPU tests.
  t oracle 170 $H $B/kernels/kernels_gpu_test --gtest_filter=*CudaReferenceMatchesHostOracle*
  t naive 80 $H $B/kernels/kernels_gpu_test --gtest_filter=*EveryNaiveCuda*:*ReferenceAsCandidate*
  t templates 160 $H $B/agent/kernel_templates_gpu_test
  t executor 150 $H $B/executor/executor_gpu_test
fi
if [[ "$PART" == s20b ]]; then
  # Session 20: cuda drip batches. Per-call drip times (TIMING_DIAG "drip"
  # lines) and verdicts of the honest controls and the round-15 amortizers
  # at world size 1, tiny allreduce (the red team's set-up), then the red
  # team with the pending ones (its controls: false positives).
  C=$B/kernels/candidates
  for c in ref_cuda_allreduce naive_cuda_allreduce redteam_cuda_r15_control_kernel_copy \
           redteam_cuda_control_copy_per_call redteam_cuda_control_nccl_per_call \
           redteam_cuda_r15_control_graph_update redteam_cuda_r15_chunk_k8 \
           redteam_cuda_r15_persistent_mailbox; do
    t "drip_$c" 30 PKFORGE_TIMING_DIAG=1 $H $B/bin/pkforge-worker launch --problem allreduce \
      --backend cuda --world-size 1 --dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 \
      --timeout 30 --json $C/$c.so
    grep -h "^drip [0-9]*:" "/tmp/gpu-logs/logs/drip_$c.log" | cut -c1-220
    grep -o '"status":"[A-Z_]*"\|"speedup":[0-9.]*\|batch_drip[^}]*' "/tmp/gpu-logs/logs/drip_$c.log" | cut -c1-400 | head -4
  done
  t redteam 270 PKFORGE_REDTEAM_PENDING=1 $H $B/kernels/redteam_gpu_test
fi
if [[ "$PART" == s20c ]]; then
  # Session 20, the cuda drip batches as tuned: the red team (round 15's
  # amortizers no longer gated) and the fast kernels tests (honest
  # candidates with drip batches at tiny sizes).
  t redteam 250 $H $B/kernels/redteam_gpu_test
  t kernels 220 $H $B/kernels/kernels_gpu_test --gtest_filter=-*CudaReferenceMatchesHostOracle*:*EveryNaiveCuda*:*ReferenceAsCandidate*
fi
if [[ "$PART" == s20d ]]; then
  # Session 20's last minutes: the drip calls' staged copies waited for on
  # the call's stream; the tests they touch.
  t redteam 120 $H $B/kernels/redteam_gpu_test \
    --gtest_filter='*patch_device_sync*:*r15_chunk_k8*:*r15_persistent_mailbox*:*drip_batches_judge*:*control_private_stream*'
fi
if [[ "$PART" == s21a ]]; then
  # Next session, first call: session 20's last cuda changes (the drip
  # word armed at the end of the reference's own drip, idle probes around
  # a drip pair's reference rounds, the absolute allowance, the memory
  # pool's release threshold), then red team round 28 (pending) and the
  # whole red team, and the drip diagnostics of three honest candidates.
  C=$B/kernels/candidates
  for c in ref_cuda_allreduce redteam_cuda_r15_control_kernel_copy \
           redteam_cuda_r15_control_graph_update; do
    t "drip_$c" 30 PKFORGE_TIMING_DIAG=1 $H $B/bin/pkforge-worker launch --problem allreduce \
      --backend cuda --world-size 1 --dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 \
      --timeout 30 --json $C/$c.so
    grep -h "^drip [0-9]*:" "/tmp/gpu-logs/logs/drip_$c.log" | cut -c1-220
  done
  # A/B: fewer waits a dripped call (less harness work to skip): 3 (the
  # default then), 2, 1; and the hand-off taker r28_drip_agent with each.
  # (Run in session 21 as PKFORGE_DRIP_ONE_SYNC=0/1/2, the same paths.)
  for m in 3 2 1; do
    for c in ref_cuda_allreduce redteam_cuda_r15_control_kernel_copy redteam_cuda_r15_chunk_k8 \
             redteam_cuda_r28_drip_agent; do
      [[ $m == 3 && $c != redteam_cuda_r28_drip_agent ]] && continue
      t "drip${m}_$c" 30 PKFORGE_DRIP_WAITS=$m PKFORGE_TIMING_DIAG=1 $H $B/bin/pkforge-worker \
        launch --problem allreduce --backend cuda --world-size 1 --dtype f32 --size tiny \
        --trials 2 --warmup 1 --iters 6 --timeout 30 --json $C/$c.so
      grep -h "^drip [0-9]*:" "/tmp/gpu-logs/logs/drip${m}_$c.log" | cut -c1-220
      grep -ho '"status": *"[A-Z_]*"\|"speedup": *[0-9.]*' "/tmp/gpu-logs/logs/drip${m}_$c.log" | head -3
    done
  done
  t r28 120 PKFORGE_REDTEAM_PENDING=1 $H $B/kernels/redteam_gpu_test --gtest_filter='*r28_*'
  t redteam 300 $H $B/kernels/redteam_gpu_test --gtest_filter='-*r28_*'
fi
if [[ "$PART" == s21b ]]; then
  # Session 21, second call: one wait a dripped call (the new default) on
  # every naive cuda candidate (42 problems) and the whole red team, then
  # round 28's two pending ones.
  t naive 280 $H $B/kernels/kernels_gpu_test --gtest_filter='*EveryNaiveCudaCandidateIsOk*'
  t r28 30 PKFORGE_REDTEAM_PENDING=1 PKFORGE_TIMING_DIAG=1 $H $B/kernels/redteam_gpu_test \
    --gtest_filter='*r28_drip_agent*:*r28_control_malloc_async*'
  grep -h "^drip [0-9]*:" /tmp/gpu-logs/logs/r28.log | cut -c1-220
  t redteam 270 $H $B/kernels/redteam_gpu_test
fi
if [[ "$PART" == s21c ]]; then
  # Session 21, third call: the rest of `ctest -L gpu` (the templates'
  # compiles side by side, one output line per chunk), the executor's GPU
  # tests, the oracle sweep (every input generated anew since the SipHash
  # seeds).
  t oracle 190 $H $B/kernels/kernels_gpu_test --gtest_filter=*CudaReferenceMatchesHostOracle*
  t executor 180 $H $B/executor/executor_gpu_test
  t templates 190 $H $B/agent/kernel_templates_gpu_test
fi
if [[ "$PART" == s21e ]]; then
  # Session 21, last call: three waits a dripped call (the default again,
  # with the new floor, kShort) on every naive cuda candidate.
  t naive 250 $H $B/kernels/kernels_gpu_test --gtest_filter='*EveryNaiveCudaCandidateIsOk*'
fi
if [[ "$PART" == s22a ]]; then
  # Next session, first call: the drip tail (from a watcher's last return
  # to the candidate's reply) of honest candidates against r28_drip_agent's
  # takeover, the judge's numbers for a tail rule; then the whole oracle
  # sweep (95 of 126 fit 190 s in s21c) and #17's precise-timing fidelity.
  C=$B/kernels/candidates
  for c in ref_cuda_allreduce redteam_cuda_r15_control_kernel_copy \
           redteam_cuda_r15_control_graph_update redteam_cuda_r28_drip_agent; do
    t "tail_$c" 30 PKFORGE_TIMING_DIAG=1 $H $B/bin/pkforge-worker launch --problem allreduce \
      --backend cuda --world-size 1 --dtype f32 --size tiny --trials 2 --warmup 1 --iters 6 \
      --timeout 30 --json $C/$c.so
    grep -h "^drip [0-9]*:" "/tmp/gpu-logs/logs/tail_$c.log" | sed 's/.*per call: //' | cut -c1-200
  done
  t oracle 290 $H $B/kernels/kernels_gpu_test --gtest_filter=*CudaReferenceMatchesHostOracle*
  W="$B/bin/pkforge-worker bench --backend cuda --candidates $B/kernels/candidates"
  t fidelity_precise 200 $H $W --world-size 1 --size default --repeats 3 --precise-timing \
    --problems allgather_gemm_at,ulysses_gather_seq_scatter_heads_qkv
  tail -n 8 /tmp/gpu-logs/logs/fidelity_precise.log
fi
if [[ "$PART" == s22b ]]; then
  # Session 22: the queued drip batches (PKFORGE_DRIP_WAITS=0: the calls'
  # side's hand-off as GPU stream waits and writes) against three waits a
  # call: honest candidates and the takeovers, per-call drip lines; then the
  # naive cuda sweep and the drip-sensitive red team queued.
  C=$B/kernels/candidates
  for m in 0 3; do
    for c in ref_cuda_allreduce naive_cuda_allreduce redteam_cuda_r15_control_kernel_copy \
             redteam_cuda_r15_control_graph_update redteam_cuda_r15_chunk_k8 \
             redteam_cuda_r28_chunk_paced redteam_cuda_r28_drip_agent \
             redteam_cuda_r32_drip_spin_agent redteam_cuda_r32_drip_gpu_agent \
             redteam_cuda_r32_drip_gpu_agent_pad redteam_cuda_r32_control_sync_in_run \
             redteam_cuda_r28_control_malloc_async; do
      t "q${m}_$c" 30 PKFORGE_DRIP_WAITS=$m PKFORGE_TIMING_DIAG=1 $H $B/bin/pkforge-worker \
        launch --problem allreduce --backend cuda --world-size 1 --dtype f32 --size tiny \
        --trials 2 --warmup 1 --iters 6 --timeout 30 --json $C/$c.so
      echo "-- $m $c: $(grep -ho '"status": *"[A-Z_]*"' "/tmp/gpu-logs/logs/q${m}_$c.log" | head -1) $(grep -ho '"speedup": *[0-9.]*' "/tmp/gpu-logs/logs/q${m}_$c.log" | head -1)"
      grep -h "^drip [0-9]*:" "/tmp/gpu-logs/logs/q${m}_$c.log" | sed 's/.*per call: //' | cut -c1-200
      grep -h "queued drip\|returned 9" "/tmp/gpu-logs/logs/q${m}_$c.log" | head -2
    done
  done
  t naive_q 250 PKFORGE_DRIP_WAITS=0 $H $B/kernels/kernels_gpu_test --gtest_filter='*EveryNaiveCudaCandidateIsOk*'
  t redteam_q 150 PKFORGE_DRIP_WAITS=0 PKFORGE_REDTEAM_PENDING=1 $H $B/kernels/redteam_gpu_test \
    --gtest_filter='*r15_*:*r28_*:*r32_*:*drip*:*side_stream*:*patch_device_sync*'
fi
if [[ "$PART" == s22c ]]; then
  # Session 22, last call: the whole red team with the default three waits
  # (the committed drip changes touch the default path too: the reference's
  # drip word in its mailbox, its watcher thread started before the filter,
  # kDripAbort).
  t redteam 290 $H $B/kernels/redteam_gpu_test
fi
if [[ "$PART" == s23a ]]; then
  # Next session, first call: what session 22 did not run (the executor's
  # GPU tests, the agent's templates), the takeovers after their shared copy
  # kernel moved (r28_drip.h), and allgather_gemm_at's identical-candidate
  # fidelity (0.964 precise) with and without the reference's seccomp
  # filter, which is one asymmetry left to rule out.
  t takeovers 60 $H $B/kernels/redteam_gpu_test \
    --gtest_filter='*r28_drip_agent*:*r32_*:*drip_batches_judge*:*r15_control_*'
  t executor 170 $H $B/executor/executor_gpu_test
  t templates 190 $H $B/agent/kernel_templates_gpu_test
  W="stdbuf -oL $B/bin/pkforge-worker bench --backend cuda --candidates $B/kernels/candidates --world-size 1 --size default --repeats 3 --problems allgather_gemm_at"
  t fid_gemm_at 60 $H $W
  t fid_gemm_at_nofilter 60 PKFORGE_REF_FILTER=0 $H $W
  tail -n 3 /tmp/gpu-logs/logs/fid_gemm_at*.log
fi
if [[ "$PART" == s21d ]]; then
  # #17: identical-candidate fidelity of the three problems that read
  # 0.961-0.974 with 2 repeats (session 17), in precise timing (2 GiB of
  # input sets), 5 repeats each.
  W="$B/bin/pkforge-worker bench --backend cuda --candidates $B/kernels/candidates"
  t fidelity_precise 300 $H $W --world-size 1 --size default --repeats 5 --precise-timing \
    --problems allgather_gemm_at,ulysses_gather_seq_scatter_heads_qkv,ulysses_gather_seq_scatter_heads
  tail -n 12 /tmp/gpu-logs/logs/fidelity_precise.log
fi
if [[ "$PART" == 3 ]]; then
  t templates 250 $H $B/agent/kernel_templates_gpu_test
  W="$B/bin/pkforge-worker bench --backend cuda --candidates $B/kernels/candidates"
  t fidelity 250 $H $W --world-size 1 --size default --repeats 10
fi
