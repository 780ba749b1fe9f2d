// DIAGNOSTIC (round 8, item 3: can a candidate tell a probed batch before
// it runs?): the honest epoch exchange per call; at call 0 of every timed
// batch rank 0 reads the judge's CPU time (/proc/<ppid>/schedstat, ns,
// world-readable) and its context switches (/proc/<ppid>/status), as deltas
// since its previous batch's last call returned; during the batch it finds
// the longest gap between two calls (a progress probe freezes the batch
// mid-way: a gap of 100s of us). The log pairs what was visible before the
// batch with whether it was probed. EXPECT: OK (honest calls).
#include "kernels/testdata/redteam/epoch_lookahead.h"
#include "kernels/testdata/redteam/probe_dodge.h"

static int64_t JudgeCpuNs() {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/schedstat", (int)getppid());
  const std::string s = rt_read(path);
  return s.empty() ? -1 : atoll(s.c_str());
}
static int64_t JudgeSwitches() {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", (int)getppid());
  const std::string s = rt_read(path);
  const size_t a = s.find("voluntary_ctxt_switches:");
  return a == std::string::npos ? -1 : atoll(s.c_str() + a + 24);
}

static int64_t g_cpu_end = -1, g_sw_end = -1, g_prev_ret = 0, g_max_gap = 0;
static int64_t g_cpu_delta = 0, g_sw_delta = 0;

extern "C" int pkf_run(pkf_context* ctx, const pkf_tensor* in, int32_t n_in, pkf_tensor* out,
                       int32_t n_out, void* stream) {
  if (!rt_slots_init(&g_pd_s, ctx, in, out) || !rt_slots_init(&g_ep_s, ctx, in, out))
    return pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  const int64_t t_in = rt_now_ns();
  const rt_batch_pos p = rt_where(in);
  if (p.batch && ctx->rank == 0) {
    if (p.first) {
      const int64_t c = JudgeCpuNs(), w = JudgeSwitches();
      g_cpu_delta = g_cpu_end >= 0 ? c - g_cpu_end : -1;
      g_sw_delta = g_sw_end >= 0 ? w - g_sw_end : -1;
      g_max_gap = 0;
    } else if (g_prev_ret > 0) {
      g_max_gap = std::max(g_max_gap, t_in - g_prev_ret);
    }
  }
  const int64_t slot = rt_slot_of(&g_ep_s, in[0].data);
  int rc;
  if (slot >= g_ep_s.ring) {
    rc = pkf_run_correct(ctx, in, n_in, out, n_out, stream);
  } else {
    const std::vector<int64_t> one{slot};
    rc = rt_ep_exchange(ctx, &g_ep_s, one, out[0].dtype, {(char*)out[0].data});
  }
  if (p.batch && ctx->rank == 0) {
    g_prev_ret = rt_now_ns();
    if (p.last) {
      rt_log("batch j=%lld count %u short %d: judge cpu +%lld us, switches +%lld before; max gap %lld us",
             (long long)p.j, p.count, (int)p.is_short, (long long)(g_cpu_delta / 1000),
             (long long)g_sw_delta, (long long)(g_max_gap / 1000));
      g_cpu_end = JudgeCpuNs();
      g_sw_end = JudgeSwitches();
      g_prev_ret = 0;
    }
  }
  return rc;
}
