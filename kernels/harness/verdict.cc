#include "kernels/harness/verdict.h"

#include <algorithm>
#include <cstring>

#include "common/stats.h"
#include "fmt/format.h"
#include "kernels/harness/ceilings.h"
#include "kernels/harness/shm.h"

namespace pkforge::kernels {

namespace v1 = ::pkforge::v1;

TimingSummary SummarizeTiming(const TimingSamples& s, int iters, v1::EvaluationResult* result) {
  // Statistics of the official times (the judge's clock) and the medians of
  // what the rank processes reported, for the cross-check.
  TimingSummary t;
  t.ref = ComputeStats(s.ref_us);
  t.cand = ComputeStats(s.cand_us);
  FillStats(t.ref, iters <= 200 ? s.ref_us : std::vector<double>{}, result->mutable_reference());
  FillStats(t.cand, iters <= 200 ? s.cand_us : std::vector<double>{}, result->mutable_candidate());
  if (iters <= 200)
    for (bool rf : s.ref_first) {
      result->mutable_reference()->add_first_in_pair(rf);
      result->mutable_candidate()->add_first_in_pair(!rf);
    }
  t.ref_rep = ComputeStats(s.ref_rep_us).median;
  t.cand_rep = ComputeStats(s.cand_rep_us).median;
  return t;
}

double OfficialCandidateTime(const std::vector<double>& cand_us, bool batches_flagged) {
  if (cand_us.empty()) return 0;
  return pkforge::Quantile(cand_us, batches_flagged ? 0.75 : 0.5);
}

bool ReferenceBatchDisturbed(double per_call, double fastest) {
  return fastest > 0 && per_call > kRefDisturbed * fastest;
}

double MeasureMemcpyGbps() {
  const size_t n = 32u << 20;
  std::vector<char> a(n, 1), b(n, 2);
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    int64_t t0 = MonotonicNs();
    std::memcpy(b.data(), a.data(), n);
    asm volatile("" ::"r"(b.data()) : "memory");
    best = std::min(best, double(MonotonicNs() - t0));
  }
  return double(n) / best;  // bytes per ns == GB/s
}

RooflineCeilings ChooseCeilings(const LaunchOptions& o, const std::string& gpu_name,
                                pkf_dtype dtype, double host_memcpy_gbps) {
  // cuda: nominal per-GPU ceilings from a table (GB/s, FLOP/s); host: measured
  // memcpy bandwidth and a nominal 10 GFLOP/s per rank.
  RooflineCeilings r;
  if (o.backend == "cuda") {
    const GpuCeilings& c = GpuCeilingsFor(gpu_name);
    r.hbm_gbps = c.hbm_gbps;
    r.link_gbps = c.link_gbps;
    r.flops_per_s = c.flops(dtype);
  } else {
    r.hbm_gbps = r.link_gbps = host_memcpy_gbps;
  }
  if (o.hbm_gbps > 0) r.hbm_gbps = o.hbm_gbps;
  if (o.link_gbps > 0) r.link_gbps = o.link_gbps;
  if (o.tflops > 0) r.flops_per_s = o.tflops * 1e12;
  return r;
}

double FillRoofline(const Cost& cost, const RooflineCeilings& c, double ref_median_us,
                    double cand_median_us, v1::Roofline* roof) {
  roof->set_interconnect_bytes(cost.interconnect_bytes);
  roof->set_hbm_bytes(cost.hbm_bytes);
  roof->set_flops(cost.flops);
  roof->set_bus_factor(cost.bus_factor);
  const double t_ic = cost.interconnect_bytes / c.link_gbps / 1e3,
               t_mem = cost.hbm_bytes / c.hbm_gbps / 1e3, t_fl = cost.flops / c.flops_per_s * 1e6;
  const double roof_us = std::max({t_ic, t_mem, t_fl});
  roof->set_roofline_us(roof_us);
  roof->set_bound(roof_us == t_ic ? "interconnect" : roof_us == t_mem ? "hbm" : "compute");
  if (cand_median_us > 0) {
    roof->set_candidate_fraction(roof_us / cand_median_us);
    roof->set_candidate_alg_gbps(cost.alg_bytes / cand_median_us / 1e3);
    roof->set_candidate_bus_gbps(roof->candidate_alg_gbps() * cost.bus_factor);
  }
  if (ref_median_us > 0) {
    roof->set_reference_fraction(roof_us / ref_median_us);
    roof->set_reference_alg_gbps(cost.alg_bytes / ref_median_us / 1e3);
    roof->set_reference_bus_gbps(roof->reference_alg_gbps() * cost.bus_factor);
  }
  return roof_us;
}

void SpeedupPlausibility(double roof_us, double cand_median_us, Outcome* out) {
  v1::EvaluationResult& result = out->result();
  const bool fast = result.has_speedup() && result.speedup() > 10;
  const bool beyond = cand_median_us > 0 && cand_median_us < roof_us;
  if (fast || beyond) {
    result.set_suspicious(true);
    const std::string d =
        fast ? fmt::format("speedup {:.2f}x over the reference exceeds 10x", result.speedup())
             : fmt::format("candidate median {:.2f} us is below the roofline {:.2f} us",
                           cand_median_us, roof_us);
    result.add_flags("suspicious: " + d);
    out->AddCheck("speedup_plausibility", false, true, d);
  } else {
    out->AddCheck("speedup_plausibility", true, true, "speedup <= 10x and not beyond the roofline");
  }
}

}  // namespace pkforge::kernels
