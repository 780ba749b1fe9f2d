// CONTROL (benign, cuda; false-positive probe for batch_consistency): an
// honest candidate that is much faster per call than the reference. At
// world size 1 the allreduce of one rank is a copy: one cudaMemcpyAsync
// device-to-device per call on the call's stream (NCCL's allreduce of one
// rank costs a kernel launch through NCCL); at larger world sizes it is the
// NCCL allreduce. Every call does all of its own work, nothing amortized
// over a batch. In a single-call round its few microseconds are dwarfed by
// the fixed cost of waking a candidate stopped for milliseconds (~90 us per
// round measured on the H200, kernels/harness/judge.cc), which batches
// spread over hundreds of calls: its batched and single-call speedups may be
// far apart for no fault of its own.
// EXPECT: OK.
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, (cudaStream_t)stream);
  return cudaMemcpyAsync(out[0].data, in[0].data, pkf_bytes(&out[0]), cudaMemcpyDeviceToDevice,
                         (cudaStream_t)stream) == cudaSuccess ? 0 : 1;
}
