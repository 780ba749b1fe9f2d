// Hidden shapes and the multi-size score around the judge (issue #17 item 5),
// for `pkforge-worker launch --hidden-shapes --sizes tiny,default,large`.
//
// Hidden shapes: the dims are drawn from the problem's shape family
// (shape_family.h) around the requested size with a seed from getrandom()
// that lives only in this (trusted) judge process; the judge then runs the
// usual evaluation at those dims. Nothing prints them before the result,
// which records them (EvaluationResult.evaluated_dims, hidden_shapes) and
// keeps the requested size as `size`.
//
// Size ladder: the requested size first, then each ladder size (a fresh
// judge run each, hidden or not); the result is the requested size's, with
// one SizeScore per size and multi_size_score = the geometric mean of the
// speedups when every size is OK and timed. The first size that is not OK
// ends the ladder and is the result (its message says which size).
//
// Thread safety: like Evaluate() (judge.h), one call at a time per process.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/harness/judge.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels {

struct SizeOptions {
  bool hidden_shapes = false;
  std::vector<std::string> size_ladder;  // presets; empty = the requested size only
  // Tests only: the seed of the draws instead of getrandom() (0 = random).
  uint64_t fixed_seed = 0;
};

absl::StatusOr<v1::EvaluationResult> EvaluateSizes(const LaunchOptions& options,
                                                   const SizeOptions& sizes);

// Lines about the hidden dims and the size ladder of a result ("" when it has
// neither), for text output after ResultToText.
std::string SizeSummaryText(const v1::EvaluationResult& result);

}  // namespace pkforge::kernels
