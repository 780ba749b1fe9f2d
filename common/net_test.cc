#include "common/net.h"

#include <gtest/gtest.h>

namespace pkforge {
namespace {

TEST(IsLoopbackAddress, LocalOnlyAddressesAndSockets) {
  for (const char* a : {"127.0.0.1:50051", "127.9.9.9:1", "localhost:1", "[::1]:1", "::1",
                        "localhost", "unix:/run/pkforge.sock", "unix-abstract:pkf"})
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  for (const char* a : {"0.0.0.0:1", "[::]:1", "10.1.2.3:50051", "example.org:443", "[::2]:1",
                        "128.0.0.1:1", "localhost.example.org:1", "[::1:1", ""})
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
}

TEST(BearerToken, MatchesOnlyTheExactHeader) {
  const BearerToken t("0123456789abcdef-secret");
  EXPECT_FALSE(t.empty());
  EXPECT_TRUE(t.Matches("Bearer 0123456789abcdef-secret"));
  EXPECT_FALSE(t.Matches("Bearer 0123456789abcdef-secre"));
  EXPECT_FALSE(t.Matches("Bearer 0123456789abcdef-secrets"));
  EXPECT_FALSE(t.Matches("bearer 0123456789abcdef-secret"));
  EXPECT_FALSE(t.Matches("0123456789abcdef-secret"));
  EXPECT_FALSE(t.Matches(""));
  EXPECT_TRUE(BearerToken().Matches("anything"));
  EXPECT_TRUE(BearerToken("").empty());
}

}  // namespace
}  // namespace pkforge
