// Hidden shapes (issue #17 item 5): the shape family of a problem and the
// dims drawn from it with an evaluation's secret seed, so a candidate that
// hard-codes the prompt's shapes fails.
//
// A problem declares no family of its own: it is derived from what the spec
// already knows, its size presets and its `validate` constraints
// (divisibility by the world size, tile multiples...). Around a base size (a
// preset or K=V overrides, resolved at the world size), every dimension above
// 1 is scaled by a factor drawn uniformly in [0.75, 1.25] and rounded to a
// multiple of its quantum: the largest power of two dividing the base value,
// at most value/8 (1024 -> multiples of 128, 19 -> any integer). A draw that
// `validate` refuses, that equals the base, or that needs more than 2.5x the
// base's memory is drawn again; later attempts let each dimension round to the least common
// multiple of the quantum and the world size (then its square), so
// divisibility constraints are met without knowing them.
//
// Deterministic: the same (problem, size, world, seed) always gives the same
// dims; the seed is the judge's secret (kernels/README.md), so the dims are
// unknown to the candidate and to the agent before the result names them.
//
// Thread safety: pure functions over the immutable registry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/harness/problem.h"

namespace pkforge::kernels {

// Lowest and highest scale factor applied to one dimension.
inline constexpr double kHiddenScaleLo = 0.75;
inline constexpr double kHiddenScaleHi = 1.25;

// A valid dims set of `p`'s family near `size` at `world`, different from
// the size itself. INVALID_ARGUMENT when `size` is not valid at `world`;
// FAILED_PRECONDITION when no different valid dims were found (a size whose
// dimensions are all 1, or constraints too tight to move).
absl::StatusOr<Dims> DrawHiddenDims(const Problem& p, std::string_view size, int world,
                                    uint64_t seed);

// The multi-size score of a size ladder: the geometric mean of the speedups
// (CommBench reports this over its message sizes). Empty or any speedup <= 0:
// INVALID_ARGUMENT.
absl::StatusOr<double> GeometricMeanSpeedup(const std::vector<double>& speedups);

// "tiny,default,large" -> its entries, each a size preset, no duplicates, at
// most 3 (INVALID_ARGUMENT naming the entry otherwise).
absl::StatusOr<std::vector<std::string>> ParseSizeLadder(std::string_view list);

}  // namespace pkforge::kernels
