/* pkforge candidate ABI (binding; the evaluation protocol is kernels/README.md).
 *
 * A candidate is one source file that includes only this header (plus CUDA,
 * NCCL and standard headers) and exports pkf_run, optionally pkf_setup and
 * pkf_teardown, with C linkage. The same layout serves both backends:
 *   cuda: compiled by nvcc into a shared library; tensors hold device pointers;
 *         `nccl` is an ncclComm_t; peer_scratch[r] / peer_flags[r] are device
 *         pointers into rank r's memory mapped here (NVLink loads/stores, copy
 *         engine and TMA all work on them).
 *   host: compiled by g++; tensors hold host pointers; `nccl` is NULL;
 *         peer_scratch / peer_flags point into one shared-memory segment
 *         mapped by every rank process; `stream` is NULL (run synchronously).
 * The harness allocates inputs and outputs, fresh for each trial.
 */
#ifndef PKFORGE_CANDIDATE_H_
#define PKFORGE_CANDIDATE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PKF_F32,
  PKF_F16,
  PKF_BF16,
  PKF_F64,
  PKF_I32,
  PKF_I64,
  PKF_U8,
  PKF_FP8_E4M3
} pkf_dtype;

typedef struct {
  void* data; /* device pointer (cuda) or host pointer (host); row-major, contiguous */
  pkf_dtype dtype;
  int32_t ndim;
  int64_t shape[8];
} pkf_tensor;

typedef struct pkf_context {
  int32_t rank, world_size, device, num_sms;
  void* nccl;                   /* ncclComm_t on cuda, NULL on host */
  void* const* peer_scratch;    /* [world_size] every rank's symmetric scratch, mapped here  */
  uint64_t scratch_bytes;       /* per rank */
  uint32_t* const* peer_flags;  /* [world_size] symmetric signal pads, zeroed before setup   */
  uint64_t flag_count;
  int (*barrier)(const struct pkf_context*); /* host-side barrier across all ranks            */
  void* user_state;             /* free for the candidate; set in pkf_setup                  */
} pkf_context;

/* Required: enqueue the whole computation on `stream` (NULL on host: run
   synchronously). Return 0 on success. All work must be done when `stream` is
   synchronized: no other stream, thread or process may still be working on
   outputs after that. Timed calls follow each other back to back, each on
   new buffers, with no synchronization between ranks in between: a call that
   reuses its scratch or flags must itself make sure its peers are done with
   them (for example end with ctx->barrier, or use a new flag value per call).
   Each call does its own work, in call order: work for several calls done
   together (one exchange for a whole batch, calls deferred to a later one)
   is detected (checks batch_progress: the candidate is stopped in the middle
   of secret batches and the calls done so far are counted; batch_drip: in
   secret batches a call's inputs appear only once the previous call's
   outputs were verified; and batch_consistency). Helper threads are allowed (idle between calls:
   blocked without a timeout, e.g. a condition variable's wait(), not wait_for(): a timed wait
   expires while the judge holds the candidate stopped, so every waiting helper runs at the
   moment the next call starts, ahead of it), started in pkf_setup or by the first pkf_run (an
   OpenMP team, a pool made on first use) and idle after it; a thread a later call leaves
   behind is not. Each rank runs on the CPUs sched_getaffinity() reports (often one), not
   hardware_concurrency(): helpers beyond them only compete with the calling thread, and the
   judge's every stop and continue wakes each of them;
   child processes are not: a process the candidate started that is still
   alive when a call returns is CHEAT_DETECTED (outlived_call), and on the
   host backend starting any process at all (fork, vfork, posix_spawn,
   system, popen; in pkf_setup, pkf_run or pkf_teardown) kills the rank:
   CHEAT_DETECTED (outlived_call). Kernel timers
   that outlive a stop (timerfd_create, timer_create, setitimer, alarm,
   io_uring_setup, io_setup), socket() and datagram socket pairs (only
   socketpair(AF_UNIX, SOCK_STREAM or SOCK_SEQPACKET) stays; no bind,
   connect, listen or accept, no descriptors passed: sendmsg and sendmmsg,
   no SO_RCVTIMEO/SO_SNDTIMEO), System V IPC (shmget, semget, msgget, ...), POSIX message
   queues, perf_event_open, file locks (flock, fcntl locks), changes of file
   modes, owners, times, inode flags or extended attributes fail with EPERM
   on the host backend, and the kernel's keyrings (add_key, request_key,
   keyctl), file leases and notifications (F_SETLEASE, F_NOTIFY) and core
   scheduling (PR_SCHED_CORE) on both. On the host
   backend files can be written only beneath the folders the judge names
   (none in a bare launch; the executor's private /tmp and /dev/shm), and
   read anywhere but /dev, where only null, zero, full, random, urandom and
   shm are open: scratch files belong in memfd_create. */
int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out, int32_t n_out,
            void* stream);

/* Optional, outside the timed region, before any input is known. */
int pkf_setup(pkf_context* ctx);
void pkf_teardown(pkf_context* ctx);

/* Symbol types, for loaders (dlsym). */
typedef int (*pkf_run_fn)(pkf_context*, const pkf_tensor*, int32_t, pkf_tensor*, int32_t, void*);
typedef int (*pkf_setup_fn)(pkf_context*);
typedef void (*pkf_teardown_fn)(pkf_context*);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PKFORGE_CANDIDATE_H_ */
