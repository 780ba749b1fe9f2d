#include "kernels/harness/eval_validation.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "fmt/format.h"
#include "kernels/harness/problem_info.h"
#include "kernels/harness/shape_family.h"

namespace pkforge::kernels {

std::string ClientText(std::string_view s, size_t max) {
  size_t n = std::min(s.size(), max);
  // Never cut a UTF-8 sequence: back up over continuation bytes.
  if (n < s.size()) {
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  }
  std::string out = "'";
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "'";
  if (n < s.size()) out += fmt::format("... ({} bytes)", s.size());
  return out;
}

MemoryNeed EstimateMemory(const Problem& p, const Dims& dims, int world, pkf_dtype dtype,
                          int trials) {
  // Doubles: dimensions reach 2^34 each, so element counts overflow int64.
  double set_bytes = 0, max_rank = 0;
  for (int r = 0; r < world; ++r) {
    const RankSpec s = p.spec(dims, world, r);
    double rank = 0;
    for (const auto* list : {&s.in, &s.out}) {
      for (const TensorDesc& t : *list) {
        double numel = 1;
        for (int64_t x : t.shape) numel *= static_cast<double>(x);
        rank += numel * static_cast<double>(DtypeSize(t.dtype.value_or(dtype)));
      }
    }
    set_bytes += rank;
    max_rank = std::max(max_rank, rank);
  }
  const double slots = 2 + std::max(1, trials);  // >= 2 input sets + one slot per trial
  return {2 * slots * set_bytes, 2 * slots * max_rank};
}

namespace {

std::string GiB(double bytes) { return fmt::format("{:.1f} GiB", bytes / double(1 << 30)); }

}  // namespace

absl::Status ValidateEvaluation(const v1::EvaluateRequest& r, const EvalLimits& limits,
                                const EvalFieldNames& names) {
  const std::string& c = names.config;
  const std::string& e = names.settings;
  auto problem = r.problem().size() <= kMaxNameBytes ? FindProblem(r.problem())
                                                     : absl::NotFoundError("too long");
  if (!problem.ok()) {
    std::vector<std::string> known;
    for (const Problem* p : Problems()) known.emplace_back(p->name);
    return InvalidField(c + "problem",
                        fmt::format("{} is unknown (known: {})", ClientText(r.problem()),
                                    absl::StrJoin(known, ", ")));
  }
  const Problem& p = **problem;
  if (r.backend() != v1::BACKEND_HOST && r.backend() != v1::BACKEND_CUDA)
    return InvalidField(c + "backend", "required (BACKEND_HOST or BACKEND_CUDA)");
  const bool cuda = r.backend() == v1::BACKEND_CUDA;
  if (r.world_size() < 1)
    return InvalidField(c + "world_size", fmt::format("{} (must be >= 1)", r.world_size()));
  if (r.world_size() < p.min_world || r.world_size() > p.max_world)
    return InvalidField(c + "world_size", fmt::format("{} is outside {}..{} for {}", r.world_size(),
                                                      p.min_world, p.max_world, p.name));
  if (!cuda && r.world_size() > limits.max_host_world_size)
    return InvalidField(c + "world_size", fmt::format("{} exceeds the host backend's limit of {}",
                                                      r.world_size(), limits.max_host_world_size));
  if (!v1::Dtype_IsValid(r.dtype()))
    return InvalidField(c + "dtype", fmt::format("unknown value {}", static_cast<int>(r.dtype())));
  auto dtype = FromProtoDtype(p, r.dtype());
  if (!dtype.ok()) return absl::InvalidArgumentError(c + std::string(dtype.status().message()));
  // Bounded before the registry sees them: its messages quote names in full.
  if (r.size().size_case() == v1::SizeSpec::kPreset && !IsSizePreset(r.size().preset()))
    return InvalidField(c + "size.preset", fmt::format("{} is unknown (tiny, default, large)",
                                                       ClientText(r.size().preset())));
  if (r.size().size_case() == v1::SizeSpec::kDims) {
    if (r.size().dims().values_size() > kMaxDims)
      return InvalidField(c + "size.dims",
                          fmt::format("{} dimensions given, {} has {}",
                                      r.size().dims().values_size(), p.name, p.dims.size()));
    for (const auto& [name, value] : r.size().dims().values()) {
      if (std::find(p.dims.begin(), p.dims.end(), name) == p.dims.end())
        return InvalidField(c + "size.dims",
                            fmt::format("{} is not a dimension of {} ({})", ClientText(name),
                                        p.name, absl::StrJoin(p.dims, ", ")));
    }
  }
  auto size = SizeSpecToString(p, r.size());
  if (!size.ok()) return absl::InvalidArgumentError(c + std::string(size.status().message()));
  auto dims = ResolveSize(p, *size, r.world_size());
  if (!dims.ok()) return InvalidField(c + "size", std::string(dims.status().message()));

  if (r.trials() < 0 || r.trials() > limits.max_trials)
    return InvalidField(e + "trials", fmt::format("{} (0..{})", r.trials(), limits.max_trials));
  if (r.warmup_iters() < 0 || r.warmup_iters() > limits.max_iters)
    return InvalidField(e + "warmup_iters",
                        fmt::format("{} (0..{})", r.warmup_iters(), limits.max_iters));
  if (r.timed_iters() < 0 || r.timed_iters() > limits.max_iters)
    return InvalidField(e + "timed_iters",
                        fmt::format("{} (0..{})", r.timed_iters(), limits.max_iters));
  if (!(r.timeout_s() >= 0) || r.timeout_s() > limits.max_timeout_s)
    return InvalidField(e + "timeout_s",
                        fmt::format("{} (0..{})", r.timeout_s(), limits.max_timeout_s));
  if (!v1::SanitizerTool_IsValid(r.sanitize()))
    return InvalidField(e + "sanitize",
                        fmt::format("unknown tool {}", static_cast<int>(r.sanitize())));
  if (r.sanitize() != v1::SANITIZER_NONE && !cuda)
    return absl::FailedPreconditionError(e + "sanitize: compute-sanitizer needs backend cuda");
  if (r.profile() && !cuda)
    return absl::FailedPreconditionError(e + "profile: Nsight Compute needs backend cuda");
  if (r.precise_timing() && !cuda)
    return absl::FailedPreconditionError(
        e + "precise_timing: more input sets per GPU; needs backend cuda (host timings are CPU "
            "timings, their batches already sized by time)");
  if (r.precise_timing() && r.skip_timing())
    return InvalidField(e + "precise_timing", "precise timing needs timing (skip_timing is set)");
  if (r.hidden_shapes()) {
    // The family must have a member other than the size itself (any seed
    // shows it; the judge draws with its own secret one).
    auto drawn = DrawHiddenDims(p, *size, r.world_size(), 1);
    if (!drawn.ok())
      return InvalidField(e + "hidden_shapes", std::string(drawn.status().message()));
  }
  if (r.size_ladder_size() > 3)
    return InvalidField(e + "size_ladder", fmt::format("{} sizes (at most 3: tiny, default, large)",
                                                       r.size_ladder_size()));
  for (int i = 0; i < r.size_ladder_size(); ++i) {
    const std::string& s = r.size_ladder(i);
    const std::string field = fmt::format("{}size_ladder[{}]", e, i);
    if (!IsSizePreset(s))
      return InvalidField(
          field, fmt::format("{} is not a size preset (tiny, default, large)", ClientText(s)));
    for (int j = 0; j < i; ++j)
      if (r.size_ladder(j) == s) return InvalidField(field, fmt::format("'{}' is listed twice", s));
    if (r.skip_timing())
      return InvalidField(field, "a multi-size score needs timing (skip_timing is set)");
    auto at = ResolveSize(p, s, r.world_size());
    if (!at.ok()) return InvalidField(field, std::string(at.status().message()));
  }

  const int trials = r.trials() > 0 ? r.trials() : kDefaultTrials;
  const MemoryNeed need = EstimateMemory(p, *dims, r.world_size(), *dtype, trials);
  const std::string what = fmt::format("{} at {} with world size {}, {} and {} trials", p.name,
                                       DimsToString(*dims), r.world_size(), DtypeName(*dtype),
                                       trials);
  if (!cuda && limits.host_memory_bytes > 0 &&
      need.host_bytes > static_cast<double>(limits.host_memory_bytes))
    return InvalidField(c + "size",
                        fmt::format("{} needs at least {} of host memory; this executor "
                                    "allows {} per evaluation",
                                    what, GiB(need.host_bytes),
                                    GiB(static_cast<double>(limits.host_memory_bytes))));
  if (cuda && limits.gpu_memory_bytes > 0 &&
      need.per_gpu_bytes > static_cast<double>(limits.gpu_memory_bytes))
    return InvalidField(c + "size", fmt::format("{} needs at least {} on one GPU, which has {}",
                                                what, GiB(need.per_gpu_bytes),
                                                GiB(static_cast<double>(limits.gpu_memory_bytes))));
  // Every size of the ladder runs too (one at a time): each must fit.
  for (int i = 0; i < r.size_ladder_size(); ++i) {
    const MemoryNeed at = EstimateMemory(p, *ResolveSize(p, r.size_ladder(i), r.world_size()),
                                         r.world_size(), *dtype, trials);
    const double bytes = cuda ? at.per_gpu_bytes : at.host_bytes;
    const double limit = static_cast<double>(cuda ? limits.gpu_memory_bytes : limits.host_memory_bytes);
    if (limit > 0 && bytes > limit)
      return InvalidField(
          fmt::format("{}size_ladder[{}]", e, i),
          fmt::format("{} at size {} needs at least {} of {} memory; {} allowed", p.name,
                      r.size_ladder(i), GiB(bytes), cuda ? "GPU" : "host", GiB(limit)));
  }
  return absl::OkStatus();
}

}  // namespace pkforge::kernels
