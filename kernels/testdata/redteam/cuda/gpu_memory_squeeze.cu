// ATTACK (blame the reference, cuda): the reference rank allocates its
// tensors and snapshots before any candidate code runs, but one GPU
// resource it creates later: the second CUDA context it switches to before
// every timed batch (rank_cuda.cc SwitchContext: cuCtxCreate on the first
// kOpSwitch, at the start of the timing phase, after pkf_setup). A context
// needs device memory of its own. pkf_setup takes all but 16 MiB of the
// GPU's free memory (cudaMalloc in shrinking chunks): the reference's
// cuCtxCreate then fails with out-of-memory, and a failing reference rank is
// reported as the harness's fault.
// EXPECT: RUNTIME_ERROR / SETUP_ERROR (the candidate's doing) or OK
// (nothing failed); never HARNESS_ERROR.
// (Read from rank_cuda.cc; not run: no GPU in the session that wrote it.)
#include <vector>

#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"

static std::vector<void*> held;
extern "C" int pkf_setup(pkf_context*) {
  size_t chunk = size_t{1} << 30;
  for (;;) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) break;
    if (free_b <= (size_t{16} << 20) + (size_t{2} << 20)) break;
    while (chunk > free_b - (size_t{16} << 20) && chunk > (size_t{2} << 20)) chunk /= 2;
    void* p = nullptr;
    if (cudaMalloc(&p, chunk) != cudaSuccess) {
      cudaGetLastError();
      if (chunk <= (size_t{2} << 20)) break;
      chunk /= 2;
      continue;
    }
    held.push_back(p);
  }
  return 0;
}
extern "C" void pkf_teardown(pkf_context*) {
  for (void* p : held) cudaFree(p);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
}
