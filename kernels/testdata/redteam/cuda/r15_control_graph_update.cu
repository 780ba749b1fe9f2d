// CONTROL (benign, cuda, red team round 15): an honest candidate that runs
// every call as a CUDA graph: one graph of one kernel node (the copy of
// r15_control_kernel_copy), made and instantiated in pkf_setup with empty
// arguments (nothing of the graph's is created inside a call), its node's
// arguments set to the call's tensors in each call
// (cudaGraphExecKernelNodeSetParams, which leaves launches already enqueued
// as they were) and launched on the call's stream. Nothing persists on the
// GPU between calls, no work leaves the stream, no thread is created after
// pkf_setup. Unusual (an update per call costs more than a launch), not a
// cheat.
// EXPECT: OK.
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"
#include "kernels/testdata/redteam/cuda/r15_cmd.h"

static cudaGraph_t g_graph = nullptr;
static cudaGraphExec_t g_exec = nullptr;
static cudaGraphNode_t g_node = nullptr;

static cudaKernelNodeParams Params(void** args) {
  cudaKernelNodeParams p;
  memset(&p, 0, sizeof p);
  p.func = (void*)r15_copy;
  p.gridDim = dim3(1);
  p.blockDim = dim3(128);
  p.sharedMemBytes = 0;
  p.kernelParams = args;
  p.extra = nullptr;
  return p;
}

extern "C" int pkf_setup(pkf_context* ctx) {
  if (ctx->world_size != 1) return 0;
  const char* src = nullptr;
  char* dst = nullptr;
  unsigned long long n = 0;
  void* args[] = {(void*)&src, (void*)&dst, (void*)&n};
  const cudaKernelNodeParams p = Params(args);
  if (cudaGraphCreate(&g_graph, 0) != cudaSuccess ||
      cudaGraphAddKernelNode(&g_node, g_graph, nullptr, 0, &p) != cudaSuccess ||
      cudaGraphInstantiate(&g_exec, g_graph, 0) != cudaSuccess)
    return 1;
  return 0;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (ctx->world_size != 1) return pkf_run_correct_on(ctx, in, out, st);
  const char* src = (const char*)in[0].data;
  char* dst = (char*)out[0].data;
  unsigned long long n = pkf_bytes(&out[0]);
  void* args[] = {(void*)&src, (void*)&dst, (void*)&n};
  const cudaKernelNodeParams p = Params(args);
  if (g_exec == nullptr || cudaGraphExecKernelNodeSetParams(g_exec, g_node, &p) != cudaSuccess)
    return 2;
  return cudaGraphLaunch(g_exec, st) == cudaSuccess ? 0 : 3;
}
