#include "kernels/harness/size_eval.h"

#include <sys/random.h>

#include <algorithm>

#include "common/status.h"
#include "fmt/format.h"
#include "kernels/harness/shape_family.h"

namespace pkforge::kernels {
namespace {

absl::StatusOr<uint64_t> SecretSeed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed))
    return absl::InternalError("getrandom failed: no secret seed for the hidden shapes");
  return seed;
}

void SetDims(const Dims& dims, google::protobuf::Map<std::string, int64_t>* out) {
  for (const auto& [k, v] : dims) (*out)[k] = v;
}

// One judge run at `size` (hidden or not); the result says what was requested
// and what ran.
absl::StatusOr<v1::EvaluationResult> EvaluateOne(const LaunchOptions& options,
                                                 const std::string& size,
                                                 const SizeOptions& sizes, int index) {
  ASSIGN_OR_RETURN(const Problem* p, FindProblem(options.problem));
  ASSIGN_OR_RETURN(Dims requested, ResolveSize(*p, size, options.world_size));
  LaunchOptions lo = options;
  lo.size = size;
  Dims dims = requested;
  if (sizes.hidden_shapes) {
    uint64_t seed = sizes.fixed_seed;
    if (seed == 0) {
      ASSIGN_OR_RETURN(seed, SecretSeed());
    } else {
      seed += static_cast<uint64_t>(index);
    }
    ASSIGN_OR_RETURN(dims, DrawHiddenDims(*p, size, options.world_size, seed));
    lo.size = DimsToString(dims);  // every dimension, as K=V overrides
  }
  ASSIGN_OR_RETURN(v1::EvaluationResult r, Evaluate(lo));
  if (sizes.hidden_shapes) {
    r.set_hidden_shapes(true);
    // The requested size, as the judge would have recorded it.
    r.clear_size();
    if (IsSizePreset(size)) r.mutable_size()->set_preset(size);
    else SetDims(requested, r.mutable_size()->mutable_dims()->mutable_values());
  }
  r.clear_evaluated_dims();
  SetDims(dims, r.mutable_evaluated_dims());
  return r;
}

}  // namespace

absl::StatusOr<v1::EvaluationResult> EvaluateSizes(const LaunchOptions& options,
                                                   const SizeOptions& sizes) {
  ASSIGN_OR_RETURN(v1::EvaluationResult primary, EvaluateOne(options, options.size, sizes, 0));
  if (sizes.size_ladder.empty()) return primary;
  std::vector<v1::EvaluationResult::SizeScore> scores;
  auto score_of = [](const std::string& size, const v1::EvaluationResult& r) {
    v1::EvaluationResult::SizeScore s;
    s.set_size(size);
    s.set_status(r.status());
    if (r.has_speedup()) s.set_speedup(r.speedup());
    *s.mutable_dims() = r.evaluated_dims();
    return s;
  };
  auto finish = [&](v1::EvaluationResult r) {
    for (auto& s : scores) *r.add_size_scores() = std::move(s);
    return r;
  };
  scores.push_back(score_of(options.size, primary));
  if (primary.status() != v1::EvaluationResult::OK) return finish(std::move(primary));
  int index = 1;
  for (const std::string& size : sizes.size_ladder) {
    if (size == options.size) continue;
    ASSIGN_OR_RETURN(v1::EvaluationResult r, EvaluateOne(options, size, sizes, index++));
    scores.push_back(score_of(size, r));
    if (r.status() != v1::EvaluationResult::OK) {
      r.set_message(fmt::format("at size {} of the ladder: {}", size, r.message()));
      return finish(std::move(r));
    }
  }
  std::vector<double> speedups;
  for (const auto& s : scores)
    if (s.has_speedup()) speedups.push_back(s.speedup());
  if (speedups.size() == scores.size()) {
    if (auto g = GeometricMeanSpeedup(speedups); g.ok()) primary.set_multi_size_score(*g);
  }
  return finish(std::move(primary));
}

std::string SizeSummaryText(const v1::EvaluationResult& r) {
  auto dims_text = [](const google::protobuf::Map<std::string, int64_t>& m) {
    return DimsToString(Dims(m.begin(), m.end()));
  };
  std::string out;
  if (r.hidden_shapes())
    out += fmt::format("hidden shapes: {}\n", dims_text(r.evaluated_dims()));
  for (const auto& s : r.size_scores()) {
    out += fmt::format("size {:<8} {:<14} {}  ({})\n", s.size(),
                       v1::EvaluationResult::Status_Name(s.status()),
                       s.has_speedup() ? fmt::format("{:.3f}x", s.speedup()) : "-",
                       dims_text(s.dims()));
  }
  if (r.has_multi_size_score())
    out += fmt::format("multi-size score (geometric mean): {:.3f}x\n", r.multi_size_score());
  return out;
}

}  // namespace pkforge::kernels
