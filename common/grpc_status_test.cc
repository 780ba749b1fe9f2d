#include "common/grpc_status.h"

#include "gtest/gtest.h"

namespace pkforge {
namespace {

TEST(GrpcStatusTest, RoundTripsEveryCanonicalCode) {
  for (int c = 0; c <= 16; ++c) {
    absl::Status s(static_cast<absl::StatusCode>(c), c ? "boom" : "");
    grpc::Status g = ToGrpcStatus(s);
    EXPECT_EQ(static_cast<int>(g.error_code()), c);
    absl::Status back = FromGrpcStatus(g);
    EXPECT_EQ(back.code(), s.code());
    if (c) {
      EXPECT_EQ(back.message(), "boom");
    }
  }
}

TEST(GrpcStatusTest, UnknownWireCodeBecomesUnknown) {
  grpc::Status g(static_cast<grpc::StatusCode>(42), "weird");
  EXPECT_EQ(FromGrpcStatus(g).code(), absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace pkforge
