// CONTROL (benign, round 20, helper-redteam20): JIT-like lazy set-up and
// online autotuning inside pkf_run, as tuned libraries do on first use.
// The first call builds a 32 MiB lookup table (~tens of ms: a "plan"), then
// the first 60 calls time three equivalent summation kernels (scalar,
// 4-way unrolled, 8-way unrolled; each sums the ranks in rank order per
// element, so every variant gives bitwise the same result) 20 calls each
// with clock_gettime, and every later call uses the fastest. The exchange is
// control_flag_epoch's barrier-free per-call epochs. Calls differ in cost
// during the tuning, not afterwards.
// EXPECT: OK.
#include <sched.h>

#include "kernels/testdata/redteam/redteam.h"

namespace {
uint32_t g_epoch = 0;
std::vector<uint32_t>* g_table = nullptr;
int64_t g_ns[3] = {0, 0, 0};
int g_best = -1;
uint32_t g_calls = 0;

void WaitAll(const pkf_context* ctx, uint32_t at_least) {
  for (int32_t j = 0; j < ctx->world_size; ++j) {
    volatile uint32_t* f = ctx->peer_flags[j];
    while (__atomic_load_n(&f[0], __ATOMIC_ACQUIRE) < at_least) sched_yield();
  }
}

template <int U>
void Sum(const pkf_context* ctx, int64_t off, pkf_dtype dt, int64_t n, void* out) {
  int64_t i = 0;
  if (dt == PKF_F32) {
    float* o = (float*)out;
    for (; i + U <= n; i += U) {
      float s[U];
      for (int u = 0; u < U; ++u) s[u] = 0.0f;
      for (int32_t j = 0; j < ctx->world_size; ++j) {
        const float* p = (const float*)((const char*)ctx->peer_scratch[j] + off);
        for (int u = 0; u < U; ++u) s[u] += p[i + u];
      }
      for (int u = 0; u < U; ++u) o[i + u] = s[u];
    }
  }
  for (; i < n; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < ctx->world_size; ++j)
      s += pkf_load((const char*)ctx->peer_scratch[j] + off, dt, i);
    pkf_store(out, dt, i, s);
  }
}
}  // namespace

extern "C" void pkf_teardown(pkf_context*) {
  delete g_table;
  g_table = nullptr;
}

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t, pkf_tensor* out, int32_t,
                       void*) {
  if (g_table == nullptr) {  // the "plan", built on first use
    g_table = new std::vector<uint32_t>(8u << 20);
    uint32_t x = 2463534242u;
    for (auto& v : *g_table) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      v = x;
    }
  }
  const uint32_t e = ++g_epoch;
  const pkf_dtype dt = out[0].dtype;
  const int64_t n = pkf_numel(&out[0]);
  const int64_t bytes = n * pkf_dtype_size(dt);
  const int64_t half = (int64_t)(ctx->scratch_bytes / 2) / 64 * 64;
  if (bytes > half) return 9;
  if (e > 1) WaitAll(ctx, e - 1);
  memcpy((char*)ctx->peer_scratch[ctx->rank] + (e % 2) * half, in[0].data, (size_t)bytes);
  __atomic_store_n(&ctx->peer_flags[ctx->rank][0], e, __ATOMIC_RELEASE);
  WaitAll(ctx, e);
  const int64_t off = (e % 2) * half;
  const int v = g_best >= 0 ? g_best : (int)(g_calls / 20) % 3;
  const int64_t t0 = rt_now_ns();
  if (v == 0) Sum<1>(ctx, off, dt, n, out[0].data);
  else if (v == 1) Sum<4>(ctx, off, dt, n, out[0].data);
  else Sum<8>(ctx, off, dt, n, out[0].data);
  if (g_best < 0) {
    g_ns[v] += rt_now_ns() - t0;
    if (++g_calls == 60) g_best = (int)(std::min_element(g_ns, g_ns + 3) - g_ns);
  }
  return 0;
}
