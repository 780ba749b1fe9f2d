// CONTROL (benign by the ABI's text, false-positive probe): a helper PROCESS
// instead of a helper thread, as a multiprocessing-style library would use.
// pkf_setup makes a shared staging buffer and forks one worker per rank; the
// worker inherits the rank's shared mappings (its data segment, the staging
// buffer) and blocks on a pipe between calls. Each call computes the
// allreduce as the reference does into the staging buffer, the worker copies
// it into the call's output (the call's work spans both processes), and
// pkf_run waits for its "done" before returning. pkf_teardown tells it to
// exit and reaps it.
// candidate.h: "no other stream, thread or process may still be working on
// outputs" once the call returned - this worker is idle (blocked in read)
// between calls, and frozen with the rank like any candidate process.
// EXPECT (by candidate.h's text): OK. The judge's policy (threat model #10:
// any candidate process other than the ranks after a call is outlived_call)
// says CHEAT_DETECTED: a mismatch between the ABI text and the judge.
#include <sys/prctl.h>

#include "kernels/testdata/redteam/redteam.h"

struct Job {
  int64_t op;  // 1 copy, 2 exit
  char* dst;
  const char* src;
  int64_t bytes;
};
static int g_to[2] = {-1, -1}, g_from[2] = {-1, -1};
static int g_child = -1;
static char* g_staging = NULL;
static const int64_t kStagingBytes = 1 << 20;

extern "C" int pkf_setup(pkf_context*) {
  if (pipe(g_to) != 0 || pipe(g_from) != 0) return 1;
  void* m = mmap(NULL, kStagingBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 3;
  g_staging = (char*)m;
  g_child = rt_fork();
  if (g_child < 0) return 2;
  if (g_child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    Job j;
    while (read(g_to[0], &j, sizeof j) == (ssize_t)sizeof j && j.op == 1) {
      memcpy(j.dst, j.src, (size_t)j.bytes);
      const char ok = 1;
      if (write(g_from[1], &ok, 1) != 1) break;
    }
    _exit(0);
  }
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  Job j = {2, NULL, NULL, 0};
  if (write(g_to[1], &j, sizeof j) != (ssize_t)sizeof j) {
  }
  if (g_child > 0) waitpid(g_child, NULL, 0);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  // The result lands in the staging buffer first; the worker copies it into
  // the output (both mappings are shared with it).
  const int64_t bytes = pkf_numel(&out[0]) * pkf_dtype_size(out[0].dtype);
  if (g_staging == NULL || g_child <= 0 || bytes > kStagingBytes)
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  pkf_tensor tmp = out[0];
  tmp.data = g_staging;
  const int rc = pkf_run_correct(ctx, in, n_in, &tmp, 1, stream);
  if (rc != 0) return rc;
  Job j = {1, (char*)out[0].data, g_staging, bytes};
  if (write(g_to[1], &j, sizeof j) != (ssize_t)sizeof j) return 3;
  char ok = 0;
  if (read(g_from[0], &ok, 1) != 1 || ok != 1) return 4;
  return 0;
}
