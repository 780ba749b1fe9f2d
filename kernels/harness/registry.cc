// The problem registry, size presets and dtype helpers.
#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "fmt/format.h"
#include "kernels/harness/problem.h"
#include "kernels/problems/common/host_math.h"
#include "kernels/problems/common/spec_util.h"
#include "kernels/problems/problem_list.inc"

namespace pkforge::kernels {

// Generated at build time from problems/*/prompt.md and reference_host.cc.
std::string_view EmbeddedPrompt(std::string_view name);
std::string_view EmbeddedReference(std::string_view name);

// Every problem of kernels/problems/problems.list (PKF_FOR_EACH_PROBLEM,
// generated at configure time), defined in problems/<name>/spec.cc.
#define PKF_DECLARE_PROBLEM(NAME) extern const Problem kProblem_##NAME;
PKF_FOR_EACH_PROBLEM(PKF_DECLARE_PROBLEM)
#undef PKF_DECLARE_PROBLEM

const std::vector<const Problem*>& Problems() {
#define PKF_PROBLEM_ADDRESS(NAME) &kProblem_##NAME,
  static const std::vector<const Problem*> kAll = {PKF_FOR_EACH_PROBLEM(PKF_PROBLEM_ADDRESS)};
#undef PKF_PROBLEM_ADDRESS
  return kAll;
}

std::string ProblemTableMarkdown() {
  std::string t =
      "| problem | PKB | category | dims (default) | tiny | dtypes | world sizes |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const Problem* p : Problems()) {
    std::string dtypes;
    for (pkf_dtype d : p->dtypes) dtypes += fmt::format("{}{}", dtypes.empty() ? "" : ", ", DtypeName(d));
    t += fmt::format("| {} | {} | {} | {} | {} | {} | {}..{} |\n", p->name,
                     p->pkb_id > 0 ? std::to_string(p->pkb_id) : "-", p->category,
                     DimsToString(p->default_size), DimsToString(p->tiny), dtypes, p->min_world,
                     p->max_world);
  }
  return t;
}

absl::StatusOr<const Problem*> FindProblem(std::string_view name) {
  for (const Problem* p : Problems())
    if (p->name == name) return p;
  return absl::NotFoundError(fmt::format("unknown problem '{}'", name));
}

std::string_view ProblemPrompt(std::string_view name) { return EmbeddedPrompt(name); }
std::string_view ProblemReferenceSource(std::string_view name) { return EmbeddedReference(name); }

bool IsSizePreset(std::string_view size) {
  return size == "tiny" || size == "default" || size == "large";
}

absl::StatusOr<Dims> ResolveSize(const Problem& p, std::string_view size, int world) {
  Dims dims;
  if (size.empty() || size == "default") {
    dims = p.default_size;
  } else if (size == "tiny") {
    dims = p.tiny;
  } else if (size == "large") {
    dims = p.large.empty() ? p.default_size : p.large;
  } else {
    dims = p.default_size;
    for (absl::string_view kv : absl::StrSplit(AsAbsl(size), ',')) {
      std::vector<std::string> parts = absl::StrSplit(kv, '=');
      int64_t v = 0;
      if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &v))
        return absl::InvalidArgumentError(
            fmt::format("bad size '{}': want tiny, default, large or K=V,...", size));
      if (std::find(p.dims.begin(), p.dims.end(), parts[0]) == p.dims.end())
        return absl::InvalidArgumentError(
            fmt::format("problem {} has no dimension '{}'", p.name, parts[0]));
      dims[parts[0]] = v;
    }
  }
  if (world < p.min_world || world > p.max_world)
    return absl::InvalidArgumentError(fmt::format("problem {} supports world sizes {}..{}", p.name,
                                                  p.min_world, p.max_world));
  RETURN_IF_ERROR(p.validate(dims, world));
  return dims;
}

std::string DimsToString(const Dims& dims) {
  std::string s;
  for (const auto& [k, v] : dims) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
  return s;
}

double BaseTolerance(pkf_dtype dtype) {
  switch (dtype) {
    case PKF_BF16: return 1e-2;
    case PKF_F16: return 1e-3;
    case PKF_F32: return 1e-5;
    default: return 0;
  }
}

Tolerance ReductionTolerance(pkf_dtype dtype, double terms, double magnitude) {
  const double base = BaseTolerance(dtype);
  return {base * magnitude * std::max(1.0, terms / 2), base};
}

absl::StatusOr<pkf_dtype> ParseDtype(std::string_view s) {
  if (s == "bf16") return PKF_BF16;
  if (s == "f16") return PKF_F16;
  if (s == "f32") return PKF_F32;
  return absl::InvalidArgumentError(fmt::format("unsupported dtype '{}' (bf16|f16|f32)", s));
}

std::string_view DtypeName(pkf_dtype d) {
  switch (d) {
    case PKF_F32: return "f32";
    case PKF_F16: return "f16";
    case PKF_BF16: return "bf16";
    case PKF_F64: return "f64";
    case PKF_I32: return "i32";
    case PKF_I64: return "i64";
    case PKF_U8: return "u8";
    case PKF_FP8_E4M3: return "fp8_e4m3";
  }
  return "?";
}

int64_t DtypeSize(pkf_dtype d) { return pkf_dtype_size(d); }

}  // namespace pkforge::kernels
