#include "common/ids.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace pkforge {
namespace {

TEST(IdsTest, FormatAndValidation) {
  std::string id = NewId("job");
  EXPECT_EQ(id.size(), 3u + 1 + 26);
  EXPECT_TRUE(ValidateId(id, "job").ok()) << ValidateId(id, "job");
  EXPECT_EQ(ValidateId(id, "eval").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateId("", "job").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateId("job_0123456789012345678901234", "job").code(),
            absl::StatusCode::kInvalidArgument);  // only 25 characters
  std::string bad = id;
  bad.back() = 'U';  // not in Crockford's alphabet
  EXPECT_EQ(ValidateId(bad, "job").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateId("job_../../etc/passwd", "job").message().find("malformed"),
            std::string::npos);
}

TEST(IdsTest, SortByTimeAndUnique) {
  std::string early = NewId("job", 1'000'000'000);
  std::string late = NewId("job", 2'000'000'000);
  EXPECT_LT(early, late);
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) seen.insert(NewId("e", 5'000'000));
  EXPECT_EQ(seen.size(), 10000u);  // 80 random bits: collisions would be a bug
}

}  // namespace
}  // namespace pkforge
