// The registry as the v1 API describes it (ProblemInfo), and the mapping
// between the API's Dtype/SizeSpec and the harness's names. Used by
// `pkforge-worker list` and by the executor (ListProblems, request
// validation), so both describe and validate problems identically.
//
// Thread safety: pure functions over the immutable registry.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "kernels/harness/problem.h"
#include "pkforge/v1/executor.pb.h"

namespace pkforge::kernels {

v1::Dtype ToProtoDtype(pkf_dtype d);
// DTYPE_UNSPECIFIED -> the problem's first (default) dtype; INVALID_ARGUMENT
// for dtypes the problem does not allow.
absl::StatusOr<pkf_dtype> FromProtoDtype(const Problem& p, v1::Dtype d);
// The harness's --size string ("tiny", "default", "K=V,...") for a SizeSpec;
// an unset spec is "default". Dimension names are checked against the problem.
absl::StatusOr<std::string> SizeSpecToString(const Problem& p, const v1::SizeSpec& size);

// Static facts of a problem; with `request.world_size` > 0 also the tensors
// of one rank at that configuration (INVALID_ARGUMENT when it is not valid).
absl::StatusOr<v1::ProblemInfo> DescribeProblem(const Problem& p,
                                                const v1::ListProblemsRequest& request);
absl::StatusOr<v1::ListProblemsResponse> DescribeProblems(const v1::ListProblemsRequest& request);

}  // namespace pkforge::kernels
