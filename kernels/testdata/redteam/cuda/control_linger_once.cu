// CONTROL (benign, cuda): correct work on the call's stream; on its second
// call only, a 20 ms spin kernel on a private stream that nobody waits for,
// as a one-off hiccup of the host would make one device-wide synchronize
// slow (an honest naive candidate through a real executor, H100 2026-12-05:
// 5.7 ms against the 5 ms limit). The judge makes a call whose synchronize
// was slow once more; only work left behind again convicts.
// EXPECT: OK (the outlived_call detail names one excused synchronize).
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
static cudaStream_t side;
static int calls = 0;
__global__ void spin_ns(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
extern "C" int pkf_setup(pkf_context*) {
  return cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess;
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  const int rc = pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
  if (++calls == 2) spin_ns<<<1, 1, 0, side>>>(20'000'000ull);
  return rc;
}
