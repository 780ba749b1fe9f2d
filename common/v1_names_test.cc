// The one table of v1 enum names (common/v1_names.h). It replaced two copies,
// agent/prompt.cc (BackendName, DtypeName, StatusName) and convert/convert.cc
// (BackendName, StatusName, ParseStatus); the expected strings below are what
// those copies returned, and the two agreed on every value (only the return
// type differed: the agent returned string_view, convert std::string). The
// names are written to SQLite (jobs.backend, evaluations.status), so a change
// here is a storage format change.
#include "common/v1_names.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace pkforge {
namespace {

TEST(V1Names, BackendNamesAreTheOnesBothOldCopiesWrote) {
  const std::map<v1::Backend, std::string> want = {
      {v1::BACKEND_UNSPECIFIED, "unspecified"},
      {v1::BACKEND_HOST, "host"},
      {v1::BACKEND_CUDA, "cuda"},
  };
  for (int i = v1::Backend_MIN; i <= v1::Backend_MAX; ++i) {
    const auto b = static_cast<v1::Backend>(i);
    ASSERT_TRUE(want.count(b)) << "new backend " << v1::Backend_Name(b) << ": give it a name";
    EXPECT_EQ(BackendName(b), want.at(b));
  }
  // A value from a newer peer is not a backend this build knows.
  EXPECT_EQ(BackendName(static_cast<v1::Backend>(99)), "unspecified");
}

TEST(V1Names, DtypeNamesAreTheAgentsTable) {
  const std::map<v1::Dtype, std::string> want = {
      {v1::DTYPE_UNSPECIFIED, "default"}, {v1::DTYPE_F32, "f32"}, {v1::DTYPE_F16, "f16"},
      {v1::DTYPE_BF16, "bf16"},           {v1::DTYPE_F64, "f64"}, {v1::DTYPE_I32, "i32"},
      {v1::DTYPE_I64, "i64"},             {v1::DTYPE_U8, "u8"},   {v1::DTYPE_FP8_E4M3, "fp8_e4m3"},
  };
  for (int i = v1::Dtype_MIN; i <= v1::Dtype_MAX; ++i) {
    const auto d = static_cast<v1::Dtype>(i);
    ASSERT_TRUE(want.count(d)) << "new dtype " << v1::Dtype_Name(d) << ": give it a name";
    EXPECT_EQ(DtypeName(d), want.at(d));
  }
  EXPECT_EQ(DtypeName(static_cast<v1::Dtype>(99)), "default");
}

TEST(V1Names, StatusNamesAreTheProtoNamesAndParseBack) {
  const std::map<v1::EvaluationResult::Status, std::string> want = {
      {v1::EvaluationResult::STATUS_UNSPECIFIED, "STATUS_UNSPECIFIED"},
      {v1::EvaluationResult::OK, "OK"},
      {v1::EvaluationResult::COMPILE_ERROR, "COMPILE_ERROR"},
      {v1::EvaluationResult::SETUP_ERROR, "SETUP_ERROR"},
      {v1::EvaluationResult::RUNTIME_ERROR, "RUNTIME_ERROR"},
      {v1::EvaluationResult::TIMEOUT, "TIMEOUT"},
      {v1::EvaluationResult::WRONG_OUTPUT, "WRONG_OUTPUT"},
      {v1::EvaluationResult::CHEAT_DETECTED, "CHEAT_DETECTED"},
      {v1::EvaluationResult::HARNESS_ERROR, "HARNESS_ERROR"},
  };
  for (int i = v1::EvaluationResult::Status_MIN; i <= v1::EvaluationResult::Status_MAX; ++i) {
    const auto s = static_cast<v1::EvaluationResult::Status>(i);
    ASSERT_TRUE(want.count(s)) << "new status " << i << ": add it here";
    EXPECT_EQ(StatusName(s), want.at(s));
    EXPECT_EQ(ParseStatus(want.at(s)), s);
  }
  // Stored rows from an older or newer writer.
  EXPECT_EQ(ParseStatus(""), v1::EvaluationResult::STATUS_UNSPECIFIED);
  EXPECT_EQ(ParseStatus("NOT_A_STATUS"), v1::EvaluationResult::STATUS_UNSPECIFIED);
  EXPECT_EQ(ParseStatus("ok"), v1::EvaluationResult::STATUS_UNSPECIFIED);  // names are exact
}

}  // namespace
}  // namespace pkforge
