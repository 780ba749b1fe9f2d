#include "kernels/harness/problem_info.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace pkforge::kernels {

v1::Dtype ToProtoDtype(pkf_dtype d) {
  switch (d) {
    case PKF_F32: return v1::DTYPE_F32;
    case PKF_F16: return v1::DTYPE_F16;
    case PKF_BF16: return v1::DTYPE_BF16;
    case PKF_F64: return v1::DTYPE_F64;
    case PKF_I32: return v1::DTYPE_I32;
    case PKF_I64: return v1::DTYPE_I64;
    case PKF_U8: return v1::DTYPE_U8;
    default: return v1::DTYPE_UNSPECIFIED;
  }
}

absl::StatusOr<pkf_dtype> FromProtoDtype(const Problem& p, v1::Dtype d) {
  if (d == v1::DTYPE_UNSPECIFIED) return p.dtypes.front();
  for (pkf_dtype allowed : p.dtypes)
    if (ToProtoDtype(allowed) == d) return allowed;
  std::string names;
  for (pkf_dtype allowed : p.dtypes)
    absl::StrAppend(&names, names.empty() ? "" : ", ", AsAbsl(DtypeName(allowed)));
  // An unknown enum value has no name: say the number (issue #15).
  const std::string name = v1::Dtype_IsValid(d) ? v1::Dtype_Name(d)
                                                : absl::StrCat("unknown value ", static_cast<int>(d));
  return absl::InvalidArgumentError(absl::StrCat("dtype: ", name, " is not allowed for ",
                                                 AsAbsl(p.name), " (allowed: ", names, ")"));
}

absl::StatusOr<std::string> SizeSpecToString(const Problem& p, const v1::SizeSpec& size) {
  switch (size.size_case()) {
    case v1::SizeSpec::SIZE_NOT_SET: return std::string("default");
    case v1::SizeSpec::kPreset:
      if (IsSizePreset(size.preset())) return size.preset();
      return absl::InvalidArgumentError(
          absl::StrCat("size.preset: '", size.preset(), "' is unknown (tiny, default, large)"));
    case v1::SizeSpec::kDims: {
      if (size.dims().values().empty())
        return absl::InvalidArgumentError("size.dims: empty (give at least one dimension)");
      std::vector<std::pair<std::string, int64_t>> dims(size.dims().values().begin(),
                                                        size.dims().values().end());
      std::sort(dims.begin(), dims.end());
      std::string out;
      for (const auto& [name, value] : dims) {
        if (std::find(p.dims.begin(), p.dims.end(), name) == p.dims.end())
          return absl::InvalidArgumentError(absl::StrCat("size.dims: '", name, "' is not a dimension of ",
                                                         AsAbsl(p.name)));
        if (value <= 0 || value > (int64_t{1} << 34))
          return absl::InvalidArgumentError(
              absl::StrCat("size.dims[", name, "]: ", value, " is out of range (1..2^34)"));
        absl::StrAppend(&out, out.empty() ? "" : ",", name, "=", value);
      }
      return out;
    }
  }
  return absl::InvalidArgumentError("size: unknown kind");
}

absl::StatusOr<v1::ProblemInfo> DescribeProblem(const Problem& p,
                                                const v1::ListProblemsRequest& request) {
  v1::ProblemInfo info;
  info.set_name(std::string(p.name));
  info.set_category(std::string(p.category));
  info.set_statement_markdown(std::string(ProblemPrompt(p.name)));
  info.add_backends(v1::BACKEND_HOST);
  info.add_backends(v1::BACKEND_CUDA);
  for (pkf_dtype d : p.dtypes) info.add_dtypes(ToProtoDtype(d));
  info.add_size_presets("tiny");
  info.add_size_presets("default");
  info.add_size_presets("large");
  for (const auto& d : p.dims) info.add_dims(d);
  if (request.include_reference_source())
    info.set_reference_source(std::string(ProblemReferenceSource(p.name)));
  for (const auto& f : p.forbidden_calls) info.add_forbidden_calls(f);
  info.set_min_world_size(p.min_world);
  info.set_max_world_size(p.max_world);
  if (request.world_size() > 0) {
    const int world = request.world_size();
    if (world < p.min_world || world > p.max_world)
      return absl::InvalidArgumentError(absl::StrCat("world_size: ", world, " is outside ",
                                                     p.min_world, "..", p.max_world, " for ",
                                                     AsAbsl(p.name)));
    ASSIGN_OR_RETURN(pkf_dtype dtype, FromProtoDtype(p, request.dtype()));
    ASSIGN_OR_RETURN(std::string size, SizeSpecToString(p, request.size()));
    ASSIGN_OR_RETURN(Dims dims, ResolveSize(p, size, world));
    const RankSpec spec = p.spec(dims, world, 0);
    auto add = [&](const TensorDesc& t, v1::TensorSpec* out) {
      out->set_name(t.name);
      out->set_dtype(ToProtoDtype(t.dtype.value_or(dtype)));  // integer ids keep their own
      for (int64_t s : t.shape) out->add_shape(s);
    };
    for (const auto& t : spec.in) add(t, info.add_inputs());
    for (const auto& t : spec.out) add(t, info.add_outputs());
  }
  return info;
}

absl::StatusOr<v1::ListProblemsResponse> DescribeProblems(const v1::ListProblemsRequest& request) {
  v1::ListProblemsResponse response;
  for (const Problem* p : Problems()) {
    auto info = DescribeProblem(*p, request);
    // A configuration that does not fit one problem (world size, dims) must
    // not hide the others: list it without tensors.
    if (!info.ok() && request.world_size() > 0) {
      v1::ListProblemsRequest statics = request;
      statics.set_world_size(0);
      info = DescribeProblem(*p, statics);
    }
    if (!info.ok()) return info.status();
    *response.add_problems() = *std::move(info);
  }
  return response;
}

}  // namespace pkforge::kernels
