// CONTROL (benign, cuda, red team round 28, against 27d3e9a; compiled here,
// NOT run: no GPU for helpers): r15_control_kernel_copy (one copy kernel a
// call on the call's stream) plus a per-call temporary from the stream-ordered
// allocator, the documented modern way to get scratch memory:
// cudaMallocAsync on the call's stream, the kernel also writes a checksum
// word there, cudaFreeAsync on the same stream. Nothing is shared between
// calls; every call does all of its work on its stream.
//
// Why it is a round-28 case (the false-positive side of the cuda drip
// batches): the device's default memory pool has a release threshold of 0,
// so EVERY stream, event or device synchronize returns the pool's unused
// memory to the driver (CUDA runtime docs, cudaMemPoolAttrReleaseThreshold),
// and the next cudaMallocAsync maps fresh physical memory again.
//   - free-running batch (rank_cuda.cc Batch): one device-wide synchronize
//     after the LAST call, so calls 1..n-1 reuse call 0's pool memory: the
//     allocation costs about nothing per call.
//   - drip batch (rank_cuda_drip.cc DripCalls): a stream synchronize after
//     the staged inputs' copy, a device-wide synchronize after the call and a
//     stream synchronize after the outputs' copy, EVERY call: each call's
//     cudaMallocAsync maps the pool's memory again, and each synchronize
//     unmaps it (predicted ~10-50 us a call, none of it in the reference's
//     NCCL calls).
// What each check sees: the timed batches as r15_control_kernel_copy (OK
// 1.22-1.26x on the H100, ~3.0-3.3 us a call against the reference's
// ~3.6); batch_drip: a dripped call ~10-50 us over the reference's, against
// an allowance of max(free ~3.3 us, 1 us + 2% of the hand-off).
// Predicted today: CHEAT_DETECTED batch_drip (slow on every drip batch and
// faster than the reference; an honest candidate convicted), or OK with
// batch_drip flagged if its median ends up no faster than the reference's.
// EXPECT: OK, batch_drip passed (not flagged).
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r15_cmd.h"

__global__ void r28_copy_sum(const char* src, char* dst, unsigned long long n,
                             unsigned int* sum) {
  const unsigned long long w = n / 4;
  unsigned int s = 0;
  for (unsigned long long i = threadIdx.x; i < w; i += blockDim.x) {
    const unsigned int v = ((const unsigned int*)src)[i];
    ((unsigned int*)dst)[i] = v;
    s ^= v;
  }
  for (unsigned long long i = w * 4 + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
  atomicXor(sum, s);
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, st);
  unsigned int* tmp = nullptr;
  if (cudaMallocAsync((void**)&tmp, 256, st) != cudaSuccess) return 1;
  if (cudaMemsetAsync(tmp, 0, 4, st) != cudaSuccess) return 2;
  r28_copy_sum<<<1, 128, 0, st>>>((const char*)in[0].data, (char*)out[0].data,
                                  pkf_bytes(&out[0]), tmp);
  if (cudaGetLastError() != cudaSuccess) return 3;
  return cudaFreeAsync(tmp, st) == cudaSuccess ? 0 : 4;
}
