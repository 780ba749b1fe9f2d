// ipc_copy_bench: does a device-to-device copy cost more when its destination
// is an allocation that another process has opened through CUDA IPC?
//
// Why it exists: in the cuda harness the candidate's inputs/outputs live in an
// allocation the candidate rank exports and the reference rank opens (to
// write inputs and compare outputs); the reference's live in a private one.
// An identical candidate whose last step copies a private temporary into its
// output (gemm_reducescatter at world size 1) read ~0.5 us slower than the
// reference (docs/performance.md). This measures that copy in isolation.
//
// One process forks a helper before touching CUDA; the parent allocates a
// source and four 2 MiB destinations: private, exported (IPC handle taken,
// never opened), opened (handle opened by the helper), and a slice of a large
// private allocation (like the harness's slot buffer). Each copy is timed
// like a harness call: a 50 us spin kernel, start event, the copy, stop event,
// synchronize; median of --reps. Copies are timed both with cudaMemcpyAsync
// and with a copy kernel, before and after the helper opens its handle.
// Prints each median and its ratio to the private destination's.
//
// Second table, "input residency": how fast a kernel reads a buffer that was
// just written (untimed, synchronized) by a kernel, by cudaMemcpyAsync (the
// copy engine), or by a kernel followed by a read of 2x L2 of other data (a
// flush). The harness used to write the candidate's inputs with a copy and
// the reference's with a kernel; this shows whether that alone starts the
// candidate's call colder.
//
// Usage: ipc_copy_bench [--bytes N] [--reps N]   (needs one GPU)
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,             \
                   cudaGetErrorString(e_));                                       \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

__global__ void Spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

__global__ void CopyKernel(const int4* s, int4* d, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    d[i] = s[i];
}

// Median over `reps` calls (after 20 warm-up calls) of `body(i)` timed like a
// harness call: a ~50 us spin kernel, start event, body, stop event,
// synchronize. `prepare(i)` runs before each, untimed.
template <typename Prepare, typename Body>
float TimedMedianUs(cudaStream_t st, int reps, long long spin_cycles, Prepare prepare, Body body) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> v;
  for (int i = 0; i < reps + 20; ++i) {
    prepare(i);
    Spin<<<1, 1, 0, st>>>(spin_cycles);
    CHECK(cudaEventRecord(a, st));
    body(i);
    CHECK(cudaEventRecord(b, st));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 20) v.push_back(ms * 1000.0f);  // first 20: warm-up
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

float MedianUs(cudaStream_t st, void* dst, const void* src, size_t bytes, bool kernel, int reps,
               long long spin_cycles) {
  return TimedMedianUs(
      st, reps, spin_cycles, [](int) {},
      [&](int) {
        if (kernel)
          CopyKernel<<<264, 512, 0, st>>>(static_cast<const int4*>(src), static_cast<int4*>(dst),
                                          bytes / sizeof(int4));
        else
          CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st));
      });
}

__global__ void FillKernel(int4* d, size_t n, int v) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    d[i] = make_int4(v, v + 1, v + 2, v + 3);
}

// Reads every element; writes only when the xor hits a value it never does,
// so the compiler keeps the loads and the sink stays untouched.
__global__ void ReadKernel(const int4* s, size_t n, int* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int4 x = s[i];
    acc ^= x.x ^ x.y ^ x.z ^ x.w;
  }
  if (acc == 0x7f3a5c91) *sink = acc;
}

enum class Prep { kKernelWrite, kCopyWrite, kKernelWriteThenFlush };

// Median time of a timed read of `buf` after preparing it as `prep` (untimed,
// synchronized).
float ReadAfterUs(cudaStream_t st, void* buf, const void* src, size_t bytes, Prep prep, int reps,
                  long long spin_cycles, void* flush, size_t flush_bytes, int* sink) {
  return TimedMedianUs(
      st, reps, spin_cycles,
      [&](int i) {
        if (prep == Prep::kCopyWrite)
          CHECK(cudaMemcpyAsync(buf, src, bytes, cudaMemcpyDeviceToDevice, st));
        else
          FillKernel<<<264, 512, 0, st>>>(static_cast<int4*>(buf), bytes / sizeof(int4), i);
        if (prep == Prep::kKernelWriteThenFlush)
          ReadKernel<<<528, 512, 0, st>>>(static_cast<const int4*>(flush),
                                          flush_bytes / sizeof(int4), sink);
        CHECK(cudaStreamSynchronize(st));
      },
      [&](int) {
        ReadKernel<<<264, 512, 0, st>>>(static_cast<const int4*>(buf), bytes / sizeof(int4), sink);
      });
}

bool ReadAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = 2u << 20;
  int reps = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--bytes N] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  bytes = std::max<size_t>(bytes / 16 * 16, 16);
  int to_child[2], to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) return std::perror("pipe"), 1;
  const pid_t pid = fork();
  if (pid < 0) return std::perror("fork"), 1;
  if (pid == 0) {  // the helper: opens the handle it is sent, then waits
    cudaIpcMemHandle_t h;
    if (!ReadAll(to_child[0], &h, sizeof h)) _exit(1);
    void* p = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    const char ok = e == cudaSuccess ? 'y' : 'n';
    if (write(to_parent[1], &ok, 1) != 1) _exit(1);
    char x;
    (void)!read(to_child[0], &x, 1);
    _exit(0);
  }
  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const long long spin_cycles = 50LL * clock_khz / 1000;  // ~50 us
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  void *src, *priv, *exported, *opened, *big;
  const size_t big_bytes = 256u << 20;
  CHECK(cudaMalloc(&big, big_bytes));
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&priv, bytes));
  CHECK(cudaMalloc(&exported, bytes));
  CHECK(cudaMalloc(&opened, bytes));
  CHECK(cudaMemset(src, 1, bytes));
  cudaIpcMemHandle_t h_exported, h_opened;
  CHECK(cudaIpcGetMemHandle(&h_exported, exported));
  CHECK(cudaIpcGetMemHandle(&h_opened, opened));
  std::printf("ipc_copy_bench: %zu bytes, median of %d timed copies each (us; ratio to private)\n",
              bytes, reps);
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      char ok = 'n';
      if (write(to_child[1], &h_opened, sizeof h_opened) != sizeof h_opened ||
          !ReadAll(to_parent[0], &ok, 1) || ok != 'y') {
        std::fprintf(stderr, "the helper could not open the handle\n");
        return 1;
      }
    }
    for (int k = 0; k < 2; ++k) {
      const bool kernel = k == 1;
      const float p = MedianUs(st, priv, src, bytes, kernel, reps, spin_cycles);
      const float e = MedianUs(st, exported, src, bytes, kernel, reps, spin_cycles);
      const float o = MedianUs(st, opened, src, bytes, kernel, reps, spin_cycles);
      const float b =
          MedianUs(st, static_cast<char*>(big) + big_bytes / 4, src, bytes, kernel, reps, spin_cycles);
      std::printf(
          "%-28s %-16s private %6.2f | exported %6.2f (%.3f) | %s %6.2f (%.3f) | big slice %6.2f "
          "(%.3f)\n",
          round == 0 ? "before the helper opens" : "after the helper opened",
          kernel ? "copy kernel" : "cudaMemcpyAsync", p, e, e / p,
          round == 0 ? "to-be-opened" : "peer-opened", o, o / p, b, b / p);
    }
  }
  {
    int l2 = 0;
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    const size_t flush_bytes = std::max<size_t>(2 * static_cast<size_t>(l2), 16u << 20);
    void* flush = nullptr;
    int* sink = nullptr;
    CHECK(cudaMalloc(&flush, flush_bytes));
    CHECK(cudaMemset(flush, 3, flush_bytes));
    CHECK(cudaMalloc(&sink, sizeof(int)));
    const float k = ReadAfterUs(st, priv, src, bytes, Prep::kKernelWrite, reps, spin_cycles, flush,
                                flush_bytes, sink);
    const float c = ReadAfterUs(st, priv, src, bytes, Prep::kCopyWrite, reps, spin_cycles, flush,
                                flush_bytes, sink);
    const float f = ReadAfterUs(st, priv, src, bytes, Prep::kKernelWriteThenFlush, reps,
                                spin_cycles, flush, flush_bytes, sink);
    std::printf(
        "input residency: timed read of %zu bytes just written by a kernel %6.2f | by "
        "cudaMemcpyAsync %6.2f (%.3f) | by a kernel, then %zu MiB read (L2 flush) %6.2f (%.3f)\n",
        bytes, k, c, c / k, flush_bytes >> 20, f, f / k);
    CHECK(cudaFree(flush));
    CHECK(cudaFree(sink));
  }
  const char x = 0;
  (void)!write(to_child[1], &x, 1);
  waitpid(pid, nullptr, 0);
  return 0;
}
