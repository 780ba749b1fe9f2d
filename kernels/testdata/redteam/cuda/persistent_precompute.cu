// ATTACK (work while frozen, cuda): freezing stops the candidate's CPU side,
// not its GPU work. pkf_setup starts a persistent one-block kernel on a side
// stream; it watches the candidate's input buffers in device memory (their
// addresses are learnt from the first calls and published to the kernel
// through mapped host memory) and, whenever an input set changes (the
// reference ranks generate the next batch's inputs into the candidate's
// memory while the candidate is frozen), computes that set's outputs into a
// private buffer with its first element as a key. A timed call whose key
// matches copies the precomputed outputs (one memcpy instead of the
// reduction). At world size 1 the allreduce is a copy, so the saving is
// small; the class is what matters: GPU work running while the candidate
// is frozen and while the reference is timed (it also shares the GPU with
// the reference's kernels by time slicing).
// EXPECT: CHEAT_DETECTED outlived_call (the judge's empty kernel waits for a
// time slice after a call) / timed_output_reverify.
#include "kernels/testdata/cuda/wrap_allreduce_cuda.inc"

struct Shared {
  volatile int stop;
  volatile int n_sets;
  volatile long long n;
  float* volatile in[256];
};
static Shared* host = nullptr;
static Shared* dev = nullptr;
static float* cache = nullptr;  // [256][n + 1]: key, outputs
static cudaStream_t side;
static const int kMaxN = 1 << 16;

__global__ void watcher(Shared* s, float* cache) {
  while (s->stop == 0) {
    const long long n = s->n;
    for (int k = 0; k < s->n_sets && n > 0 && n <= kMaxN; ++k) {
      const float* in = s->in[k];
      float* c = cache + (size_t)k * (kMaxN + 1);
      if (in == nullptr || c[0] == in[0]) continue;
      for (long long i = threadIdx.x; i < n; i += blockDim.x) c[1 + i] = in[i];  // world 1: a copy
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence();
        c[0] = in[0];
      }
      __syncthreads();
    }
  }
}
extern "C" int pkf_setup(pkf_context*) {
  if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
  if (cudaHostAlloc((void**)&host, sizeof(Shared), cudaHostAllocMapped) != cudaSuccess) return 2;
  memset((void*)host, 0, sizeof(Shared));
  cudaHostGetDevicePointer((void**)&dev, (void*)host, 0);
  if (cudaMalloc(&cache, sizeof(float) * 256 * (kMaxN + 1)) != cudaSuccess) return 3;
  cudaMemset(cache, 0xff, sizeof(float) * 256 * (kMaxN + 1));
  cudaDeviceSynchronize();
  watcher<<<1, 256, 0, side>>>(dev, cache);
  return cudaGetLastError() != cudaSuccess;
}
extern "C" void pkf_teardown(pkf_context*) {
  if (host != nullptr) host->stop = 1;
  cudaStreamSynchronize(side);
}
extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void* stream) {
  cudaStream_t s = (cudaStream_t)stream;
  const long long n = (long long)pkf_n(&out[0]);
  if (ctx->world_size != 1 || out[0].dtype != PKF_F32 || n > kMaxN)
    return pkf_run_correct_on(ctx, in, out, s);
  // Publish this call's input set to the watcher (sets are learnt as they come).
  int k = 0;
  while (k < host->n_sets && host->in[k] != (float*)in[0].data) ++k;
  if (k == host->n_sets && k < 256) {
    host->in[k] = (float*)in[0].data;
    host->n = n;
    host->n_sets = k + 1;
  }
  // Precomputed? Compare the key with the input's first element (device reads, tiny).
  float key = 0, first = 0;
  const float* c = cache + (size_t)k * (kMaxN + 1);
  if (k < 256) {
    cudaMemcpyAsync(&key, c, sizeof key, cudaMemcpyDeviceToHost, s);
    cudaMemcpyAsync(&first, in[0].data, sizeof first, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
  }
  if (k < 256 && key == first)
    return cudaMemcpyAsync(out[0].data, c + 1, n * sizeof(float), cudaMemcpyDeviceToDevice, s) !=
           cudaSuccess;
  return pkf_run_correct_on(ctx, in, out, s);
}
