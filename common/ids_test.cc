#include "common/ids.h"

#include <set>
#include <string>
#include <string_view>

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

// The low 60 bits of an id (its last 12 base32 digits).
uint64_t Low60(const std::string& id) {
  static constexpr std::string_view kDigits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  uint64_t v = 0;
  for (char c : id.substr(id.size() - 12)) v = (v << 5) | kDigits.find(c);
  return v;
}

// Ids made in one millisecond still sort in call order (ListJobs orders by id;
// two jobs submitted in one millisecond used to list in random order), and
// the step between them is random, not +1.
TEST(IdsTest, StrictlyIncreasingWithinOneMillisecond) {
  std::string prev = NewId("job", 7'000'000'000);
  bool all_plus_one = true;
  for (int i = 0; i < 10000; ++i) {
    std::string next = NewId("job", 7'000'000'000);
    ASSERT_LT(prev, next) << "id " << i;
    // Same millisecond: the first 10 characters (48-bit time) agree.
    ASSERT_EQ(prev.substr(0, 4 + 10), next.substr(0, 4 + 10));
    if (Low60(next) - Low60(prev) != 1) all_plus_one = false;
    prev = next;
  }
  EXPECT_FALSE(all_plus_one);
  // The system clock variant keeps order however fast it is called.
  std::string a = NewId("job");
  for (int i = 0; i < 1000; ++i) {
    std::string b = NewId("job");
    ASSERT_LT(a, b);
    a = b;
  }
  // An explicit earlier time is honoured, not raised to the last id's, and
  // explicit times (historical or far future) leave the system-clock
  // sequence alone.
  EXPECT_LT(NewId("job", 1'000'000), prev);
  std::string future = NewId("job", int64_t{8'000'000'000'000'000});
  std::string now1 = NewId("job");
  EXPECT_LT(now1, future);
  EXPECT_LT(NewId("job", 1'000'000), now1);
  EXPECT_LT(now1, NewId("job"));
}

}  // namespace
}  // namespace pkforge
