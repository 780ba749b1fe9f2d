// The evaluation rules shared by the executor and the orchestrator
// (eval_validation.h). Linked against the registry library alone, which also
// proves the orchestrator can use them without the judge or the worker.
#include "kernels/harness/eval_validation.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pkforge::kernels {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::EvaluateRequest Host(const std::string& problem, int world = 2) {
  v1::EvaluateRequest r;
  r.set_problem(problem);
  r.set_backend(v1::BACKEND_HOST);
  r.set_world_size(world);
  return r;
}

void SetDims(v1::EvaluateRequest* r, int64_t m, int64_t n) {
  auto* v = r->mutable_size()->mutable_dims()->mutable_values();
  (*v)["M"] = m;
  (*v)["N"] = n;
}

TEST(EvalValidationTest, OversizedHostProblemIsRefusedNamingTheSizeBeforeAnythingRuns) {
  EvalLimits limits;
  limits.host_memory_bytes = int64_t{32} << 30;  // the executor's default run_memory_mb
  v1::EvaluateRequest r = Host("allgather_gemm");
  EXPECT_TRUE(ValidateEvaluation(r, limits).ok());  // default size fits
  SetDims(&r, 30000, 30000);
  absl::Status s = ValidateEvaluation(r, limits);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), StartsWith("size: "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("M=30000"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("host memory"));
  // Without a memory budget the same size is accepted (the executor decides).
  EXPECT_TRUE(ValidateEvaluation(r, EvalLimits{}).ok());
}

TEST(EvalValidationTest, CudaSizeIsBoundedByTheSmallestGpu) {
  v1::EvaluateRequest r = Host("allreduce");
  r.set_backend(v1::BACKEND_CUDA);
  r.mutable_size()->set_preset("large");
  EvalLimits limits;
  limits.gpu_memory_bytes = int64_t{141} << 30;
  EXPECT_TRUE(ValidateEvaluation(r, limits).ok());
  limits.gpu_memory_bytes = int64_t{1} << 30;
  absl::Status s = ValidateEvaluation(r, limits);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("on one GPU"));
}

TEST(EvalValidationTest, EstimateCountsBothSidesAndEverySlotWithoutOverflow) {
  const Problem& p = **FindProblem("allreduce");
  // M=N=2^34 would overflow int64 element counts; the estimate stays finite and huge.
  MemoryNeed huge = EstimateMemory(p, {{"M", int64_t{1} << 34}, {"N", int64_t{1} << 34}}, 2,
                                   PKF_F32, 5);
  EXPECT_GT(huge.host_bytes, 1e20);
  // allreduce: x and y of M*N each per rank; 2 sides x (2 sets + 1 trial) slots.
  MemoryNeed small = EstimateMemory(p, {{"M", 4}, {"N", 8}}, 2, PKF_F32, 1);
  EXPECT_DOUBLE_EQ(small.host_bytes, 2 * 3 * (2 * 2 * 32 * 4.0));
  EXPECT_DOUBLE_EQ(small.per_gpu_bytes, 2 * 3 * (2 * 32 * 4.0));
}

TEST(EvalValidationTest, EverySettingOutsideTheExecutorsLimitsIsRefusedNamingTheField) {
  struct Case {
    std::string name;
    std::function<void(v1::EvaluateRequest*)> mutate;
    absl::StatusCode code;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"sanitize 99", [](auto* r) { r->set_sanitize(static_cast<v1::SanitizerTool>(99)); },
       absl::StatusCode::kInvalidArgument, "sanitize: unknown tool 99"},
      {"timeout 1e308", [](auto* r) { r->set_timeout_s(1e308); },
       absl::StatusCode::kInvalidArgument, "timeout_s"},
      {"timeout NaN", [](auto* r) { r->set_timeout_s(std::nan("")); },
       absl::StatusCode::kInvalidArgument, "timeout_s"},
      {"warmup 2^31-1", [](auto* r) { r->set_warmup_iters(2147483647); },
       absl::StatusCode::kInvalidArgument, "warmup_iters"},
      {"dims 2^40", [](auto* r) { SetDims(r, int64_t{1} << 40, int64_t{1} << 40); },
       absl::StatusCode::kInvalidArgument, "size.dims[M]"},
      {"dtype 99", [](auto* r) { r->set_dtype(static_cast<v1::Dtype>(99)); },
       absl::StatusCode::kInvalidArgument, "dtype: unknown value 99"},
      {"world 9", [](auto* r) { r->set_world_size(9); }, absl::StatusCode::kInvalidArgument,
       "world_size"},
      {"sanitize on host", [](auto* r) { r->set_sanitize(v1::SANITIZER_MEMCHECK); },
       absl::StatusCode::kFailedPrecondition, "sanitize"},
  };
  for (const auto& c : cases) {
    v1::EvaluateRequest r = Host("allreduce");
    c.mutate(&r);
    absl::Status s = ValidateEvaluation(r, EvalLimits{});
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s;
    EXPECT_THAT(std::string(s.message()), StartsWith(c.field)) << c.name;
    // The orchestrator's names for the same fields.
    absl::Status o = ValidateEvaluation(r, EvalLimits{}, {.config = "spec.", .settings = "spec.eval."});
    EXPECT_THAT(std::string(o.message()), StartsWith("spec.")) << c.name << ": " << o;
  }
}

TEST(EvalValidationTest, ClientStringsAreNeverEchoedInFull) {
  const std::string mb(1 << 20, 'p');
  v1::EvaluateRequest r = Host("allreduce");
  r.mutable_size()->set_preset(mb);
  absl::Status s = ValidateEvaluation(r, EvalLimits{});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("size.preset"));
  EXPECT_LT(s.message().size(), 200u);
  r = Host(mb);
  s = ValidateEvaluation(r, EvalLimits{});
  EXPECT_THAT(std::string(s.message()), StartsWith("problem"));
  // The message lists the known problems (it grows with the suite); the
  // client's megabyte is cut to a bounded prefix.
  size_t known = 0;
  for (const Problem* p : Problems()) known += p->name.size() + 2;
  EXPECT_LT(s.message().size(), 200u + known);
  r = Host("allreduce");
  (*r.mutable_size()->mutable_dims()->mutable_values())[mb] = 4;
  s = ValidateEvaluation(r, EvalLimits{});
  EXPECT_THAT(std::string(s.message()), StartsWith("size.dims"));
  EXPECT_LT(s.message().size(), 200u);
  // Cut on a UTF-8 boundary, control characters escaped, length stated.
  EXPECT_EQ(ClientText("ab\ncd", 10), "'ab\\x0acd'");
  EXPECT_EQ(ClientText("a\xC3\xA9" "b", 2), "'a'... (4 bytes)");
}

// Measurement-grade timing is a cuda option (more input sets per GPU): on
// the host it is refused, as is asking for it without timing.
TEST(EvalValidationTest, PreciseTimingIsCudaOnlyAndNeedsTiming) {
  v1::EvaluateRequest r = Host("allreduce");
  r.set_precise_timing(true);
  absl::Status s = ValidateEvaluation(r, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), StartsWith("precise_timing: "));
  r.set_backend(v1::BACKEND_CUDA);
  EXPECT_TRUE(ValidateEvaluation(r, {}).ok());
  r.set_skip_timing(true);
  s = ValidateEvaluation(r, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("skip_timing"));
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

TEST(EvalValidationTest, HiddenShapesAndSizeLadderAreChecked) {
  EvalLimits limits;
  v1::EvaluateRequest r = Host("allreduce");
  r.set_hidden_shapes(true);
  r.add_size_ladder("tiny");
  r.add_size_ladder("default");
  EXPECT_TRUE(ValidateEvaluation(r, limits).ok());
  r.add_size_ladder("huge");
  absl::Status s = ValidateEvaluation(r, limits, {"spec.", "spec.eval."});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("spec.eval.size_ladder[2]: 'huge'"));
  r.set_size_ladder(2, "tiny");
  s = ValidateEvaluation(r, limits);
  EXPECT_THAT(std::string(s.message()), StartsWith("size_ladder[2]: 'tiny' is listed twice"));
  r.mutable_size_ladder()->RemoveLast();
  r.set_skip_timing(true);
  s = ValidateEvaluation(r, limits);
  EXPECT_THAT(std::string(s.message()), HasSubstr("needs timing"));
  r.set_skip_timing(false);
  // A ladder size beyond the executor's memory is refused before anything runs.
  limits.host_memory_bytes = int64_t{1} << 30;
  r.add_size_ladder("large");
  s = ValidateEvaluation(r, limits);
  EXPECT_THAT(std::string(s.message()), StartsWith("size_ladder[2]: allreduce at size large"));
  // Hidden shapes need a family: a size whose every dimension is 1 has none.
  v1::EvaluateRequest one = Host("allreduce");
  SetDims(&one, 1, 1);
  one.set_hidden_shapes(true);
  s = ValidateEvaluation(one, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("hidden_shapes: "));
}

}  // namespace
}  // namespace pkforge::kernels
