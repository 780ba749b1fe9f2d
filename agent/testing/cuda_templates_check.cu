// Runs the search agent's cuda kernel templates for correctness on a GPU host.
//
//   nvcc -std=c++17 -O2 -I kernels/include cuda_templates_check.cu -o check -ldl
//   ./check <library.so> <problem> <first> <count> [max_world]
//
// <library.so> holds instantiations compiled with GenerateOptions::symbol_suffix
// "_v<i>" (as kernel_templates_test builds them); variants first..first+count-1
// are run for world sizes 1..max_world (default 4), dtypes f32/f16/bf16, a
// tail-heavy small case, a tiny case and a large multi-chunk case, two calls
// each with different inputs, against a plain sum / concatenation computed on
// the host. Ranks are threads, one stream each, on device rank % device_count
// (peer access enabled between devices), so several ranks can share one GPU:
// that checks the chunking, slicing, signalling and data movement; NVLink
// performance needs one GPU per rank. A watchdog aborts a deadlocked variant.
// Exit code 0 when every case matched; the first mismatch is printed.
//
// Threading: one thread per rank per case; nothing else is shared.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "pkforge/candidate.h"

namespace {

std::atomic<long> g_progress{0};
char g_current[256] = "start";  // for the watchdog's message only
// What the watchdog prints about a stuck case: each rank's last step and the
// flag pads (which barrier epochs each rank has signalled).
std::atomic<int> g_phase[64];
std::atomic<int> g_rc[64];
std::vector<uint32_t*>* g_flags = nullptr;
// One stream per rank for the whole run. Ranks spin on each other, so their
// streams must never share a hardware work queue: streams created afresh per
// case map round-robin onto the device's connections and two ranks' streams
// can alias one queue (a false dependency, i.e. a deadlock that separate rank
// processes never see). CUDA_DEVICE_MAX_CONNECTIONS is raised for the same
// reason.
cudaStream_t g_streams[64];
int g_world = 0;

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s: %s (%s)\n", #x, cudaGetErrorString(e_), g_current); \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

size_t ElemSize(pkf_dtype dt) { return dt == PKF_F32 ? 4 : 2; }

float Quantize(pkf_dtype dt, float v) {
  if (dt == PKF_F16) return __half2float(__float2half_rn(v));
  if (dt == PKF_BF16) return __bfloat162float(__float2bfloat16_rn(v));
  return v;
}

void Put(pkf_dtype dt, std::vector<char>& buf, long i, float v) {
  if (dt == PKF_F32) {
    std::memcpy(buf.data() + 4 * i, &v, 4);
  } else if (dt == PKF_F16) {
    __half h = __float2half_rn(v);
    std::memcpy(buf.data() + 2 * i, &h, 2);
  } else {
    __nv_bfloat16 b = __float2bfloat16_rn(v);
    std::memcpy(buf.data() + 2 * i, &b, 2);
  }
}

float Get(pkf_dtype dt, const std::vector<char>& buf, long i) {
  if (dt == PKF_F32) {
    float f;
    std::memcpy(&f, buf.data() + 4 * i, 4);
    return f;
  }
  if (dt == PKF_F16) {
    __half h;
    std::memcpy(&h, buf.data() + 2 * i, 2);
    return __half2float(h);
  }
  __nv_bfloat16 b;
  std::memcpy(&b, buf.data() + 2 * i, 2);
  return __bfloat162float(b);
}

// Cheap pseudo-random values in [-8, 8), rounded to the dtype.
float Input(pkf_dtype dt, int it, int rank, long i) {
  const unsigned long h =
      (static_cast<unsigned long>(i) * 2654435761ul + rank * 40503ul + it * 977ul);
  return Quantize(dt, static_cast<float>(static_cast<long>((h >> 7) % 4096) - 2048) / 256.0f);
}

struct Syms {
  pkf_run_fn run;
  pkf_setup_fn setup;
  pkf_teardown_fn teardown;
};

// Returns "" on success.
std::string RunCase(const Syms& s, const std::string& problem, pkf_dtype dt, int world, long n,
                    uint64_t scratch_bytes, int ndev, int num_sms) {
  const long in_n = problem == "reducescatter" ? world * n : n;
  const long out_n = problem == "allgather" ? world * n : n;
  const size_t es = ElemSize(dt);
  const uint64_t flag_count = 64;
  std::vector<void*> scratch(world), in(world), out(world);
  std::vector<uint32_t*> flags(world);
  for (int r = 0; r < world; ++r) {
    CK(cudaSetDevice(r % ndev));
    CK(cudaMalloc(&scratch[r], scratch_bytes));
    CK(cudaMalloc(reinterpret_cast<void**>(&flags[r]), flag_count * 4));
    CK(cudaMemset(flags[r], 0, flag_count * 4));
    CK(cudaMalloc(&in[r], in_n * es + 16));
    CK(cudaMalloc(&out[r], out_n * es + 16));
  }
  CK(cudaDeviceSynchronize());
  std::vector<std::vector<char>> got(2 * world, std::vector<char>(out_n * es));
  std::vector<int> rcs(world, 0);
  std::vector<std::thread> threads;
  g_flags = &flags;
  g_world = world;
  for (int r = 0; r < world; ++r) {
    g_phase[r] = 0;
    g_rc[r] = 0;
    threads.emplace_back([&, r] {
      CK(cudaSetDevice(r % ndev));
      cudaStream_t st = g_streams[r];
      pkf_context ctx{};
      ctx.rank = r;
      ctx.world_size = world;
      ctx.device = r % ndev;
      ctx.num_sms = num_sms;
      ctx.peer_scratch = scratch.data();
      ctx.scratch_bytes = scratch_bytes;
      ctx.peer_flags = flags.data();
      ctx.flag_count = flag_count;
      if (s.setup != nullptr && s.setup(&ctx) != 0) rcs[r] = -1;
      std::vector<char> host(in_n * es);
      for (int it = 0; it < 2 && rcs[r] == 0; ++it) {
        for (long i = 0; i < in_n; ++i) Put(dt, host, i, Input(dt, it, r, i));
        // Inputs and poison on the call's own stream, finished before the
        // call: cudaMemset runs on the legacy stream, which a non-blocking
        // stream does not wait for (a copy that starts at once, as at world
        // size 1, raced it and read back poison).
        CK(cudaMemcpyAsync(in[r], host.data(), in_n * es, cudaMemcpyHostToDevice, st));
        CK(cudaMemsetAsync(out[r], 0xff, out_n * es, st));  // poison
        CK(cudaStreamSynchronize(st));
        pkf_tensor tin{in[r], dt, 1, {in_n}};
        pkf_tensor tout{out[r], dt, 1, {out_n}};
        g_phase[r] = 10 * it + 1;  // launching
        rcs[r] = s.run(&ctx, &tin, 1, &tout, 1, st);
        g_rc[r] = rcs[r];
        g_phase[r] = 10 * it + 2;  // launched, synchronizing
        CK(cudaStreamSynchronize(st));
        g_phase[r] = 10 * it + 3;  // done
        CK(cudaGetLastError());
        CK(cudaMemcpy(got[it * world + r].data(), out[r], out_n * es, cudaMemcpyDeviceToHost));
      }
      if (s.teardown != nullptr) s.teardown(&ctx);
    });
  }
  for (auto& t : threads) t.join();
  g_progress++;
  std::string err;
  for (int r = 0; r < world && err.empty(); ++r) {
    if (rcs[r] != 0) err = "rank " + std::to_string(r) + " returned " + std::to_string(rcs[r]);
  }
  const float tol = dt == PKF_F32 ? 1e-5f : dt == PKF_F16 ? 1e-3f : 1e-2f;
  for (int it = 0; it < 2 && err.empty(); ++it) {
    for (int r = 0; r < world && err.empty(); ++r) {
      for (long i = 0; i < out_n; ++i) {
        float want = 0;
        if (problem == "allgather") {
          want = Input(dt, it, static_cast<int>(i / n), i % n);
        } else {
          const long src = problem == "reducescatter" ? r * n + i : i;
          for (int p = 0; p < world; ++p) want += Input(dt, it, p, src);
          want = Quantize(dt, want);
        }
        const float g = Get(dt, got[it * world + r], i);
        if (!(std::fabs(g - want) <= tol + tol * std::fabs(want))) {
          char buf[256];
          std::snprintf(buf, sizeof(buf), "call %d rank %d element %ld: expected %g, got %g", it, r,
                        i, want, g);
          err = buf;
          break;
        }
      }
    }
  }
  for (int r = 0; r < world; ++r) {
    CK(cudaSetDevice(r % ndev));
    CK(cudaFree(scratch[r]));
    CK(cudaFree(flags[r]));
    CK(cudaFree(in[r]));
    CK(cudaFree(out[r]));
  }
  return err;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s <library.so> <problem> <first> <count> [max_world]\n", argv[0]);
    return 2;
  }
  const std::string so = argv[1], problem = argv[2];
  const int first = std::atoi(argv[3]), count = std::atoi(argv[4]);
  const int max_world = argc > 5 ? std::atoi(argv[5]) : 4;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", so.c_str(), dlerror());
    return 2;
  }
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);  // before the first CUDA call
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  int num_sms = 0;
  CK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, 0));
  for (int a = 0; a < ndev; ++a) {
    for (int b = 0; b < ndev; ++b) {
      int ok = 0;
      if (a != b && cudaDeviceCanAccessPeer(&ok, a, b) == cudaSuccess && ok) {
        CK(cudaSetDevice(a));
        CK(cudaDeviceEnablePeerAccess(b, 0));
      }
    }
  }
  for (int r = 0; r < max_world; ++r) {
    CK(cudaSetDevice(r % ndev));
    CK(cudaStreamCreateWithFlags(&g_streams[r], cudaStreamNonBlocking));
  }
  // A deadlocked variant (ranks waiting on a barrier that never completes)
  // would hang forever: abort, naming it.
  const char* wd = std::getenv("PKF_CHECK_WATCHDOG_S");
  const int watchdog_s = wd != nullptr ? std::atoi(wd) : 20;
  std::thread([watchdog_s] {
    long last = -1;
    while (true) {
      std::this_thread::sleep_for(std::chrono::seconds(watchdog_s));
      const long now = g_progress.load();
      if (now == last) {
        std::fprintf(stderr, "watchdog: no progress in %d s during %s\n", watchdog_s, g_current);
        for (int r = 0; r < g_world; ++r) {
          std::fprintf(stderr, "  rank %d: phase %d rc %d flags", r, g_phase[r].load(),
                       g_rc[r].load());
          uint32_t* host = nullptr;
          cudaStream_t st;
          if (cudaSetDevice(0) == cudaSuccess && cudaMallocHost(&host, 64 * 4) == cudaSuccess &&
              cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess &&
              cudaMemcpyAsync(host, (*g_flags)[r], 64 * 4, cudaMemcpyDeviceToHost, st) ==
                  cudaSuccess) {
            for (int i = 0; i < 200 && cudaStreamQuery(st) == cudaErrorNotReady; ++i) {
              std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            if (cudaStreamQuery(st) == cudaSuccess) {
              for (int i = 0; i < g_world; ++i) std::fprintf(stderr, " %u", host[i]);
            } else {
              std::fprintf(stderr, " (copy did not complete)");
            }
          }
          std::fprintf(stderr, "\n");
        }
        std::_Exit(3);
      }
      last = now;
    }
  }).detach();
  struct Case {
    long n;
    uint64_t scratch;
  };
  // Tails with many chunks; a tiny tensor; a large tensor spanning chunks,
  // vector widths and every block.
  const Case cases[] = {{1237, 4096}, {5, 1 << 16}, {300'017, 256u << 10}};
  int runs = 0;
  for (int v = first; v < first + count; ++v) {
    const std::string sfx = "_v" + std::to_string(v);
    Syms s{reinterpret_cast<pkf_run_fn>(dlsym(h, ("pkf_run" + sfx).c_str())),
           reinterpret_cast<pkf_setup_fn>(dlsym(h, ("pkf_setup" + sfx).c_str())),
           reinterpret_cast<pkf_teardown_fn>(dlsym(h, ("pkf_teardown" + sfx).c_str()))};
    if (s.run == nullptr) {
      std::fprintf(stderr, "missing pkf_run%s\n", sfx.c_str());
      return 2;
    }
    for (pkf_dtype dt : {PKF_F32, PKF_F16, PKF_BF16}) {
      for (int world = 1; world <= max_world; ++world) {
        for (const Case& c : cases) {
          char what[256];
          std::snprintf(what, sizeof(what), "%s variant %d dtype %d world %d n %ld scratch %llu",
                        problem.c_str(), v, static_cast<int>(dt), world, c.n,
                        static_cast<unsigned long long>(c.scratch));
          std::memcpy(g_current, what, sizeof(what));
          const std::string err = RunCase(s, problem, dt, world, c.n, c.scratch, ndev, num_sms);
          if (!err.empty()) {
            std::printf("FAIL %s: %s\n", what, err.c_str());
            return 1;
          }
          ++runs;
        }
      }
    }
  }
  std::printf("ok: %s variants %d..%d, %d cases on %d device(s)\n", problem.c_str(), first,
              first + count - 1, runs, ndev);
  return 0;
}
