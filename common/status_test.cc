#include "common/status.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace pkforge {
namespace {

absl::Status FailIf(bool fail) {
  if (fail) return absl::NotFoundError("missing thing");
  return absl::OkStatus();
}

absl::Status UsesReturnIfError(bool fail, int* reached) {
  RETURN_IF_ERROR(FailIf(fail));
  ++*reached;
  return absl::OkStatus();
}

absl::StatusOr<int> Half(int x) {
  if (x % 2) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, ReturnIfErrorPropagatesAndStops) {
  int reached = 0;
  EXPECT_TRUE(UsesReturnIfError(false, &reached).ok());
  EXPECT_EQ(reached, 1);
  absl::Status s = UsesReturnIfError(true, &reached);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reached, 1);
}

TEST(StatusTest, AssignOrReturnChains) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Quarter(7).status().message(), "odd");
}

TEST(StatusTest, AnnotateKeepsCodeAndPrefixes) {
  absl::Status s = Annotate(absl::NotFoundError("no such job"), "GetJob job_1");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "GetJob job_1: no such job");
  EXPECT_TRUE(Annotate(absl::OkStatus(), "ctx").ok());
}

TEST(StatusTest, ErrnoErrorMapsCodeAndText) {
  absl::Status s = ErrnoError("open /nope", ENOENT);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("open /nope: No such file or directory"), std::string::npos)
      << s.message();
  EXPECT_EQ(ErrnoError("x", EACCES).code(), absl::StatusCode::kPermissionDenied);
}

// The one shape of a field's validation error, used by the orchestrator's
// requests, job admission and the evaluation rules alike.
TEST(StatusTest, InvalidFieldNamesTheFieldThenWhy) {
  const absl::Status s = InvalidField("spec.problem.world_size", "must be 1..8, got 9");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "spec.problem.world_size: must be 1..8, got 9");
}

}  // namespace
}  // namespace pkforge
