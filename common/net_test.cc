#include "common/net.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"

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

// One token-file format for both daemons and the CLI (each had its own reader,
// and they disagreed: the executor took the first line and wanted >= 16
// characters, the orchestrator took the whole text and wanted it non-empty).
class ReadTokenFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path =
        absl::StrCat(::testing::TempDir(), "/token-", getpid(), "-", n_++);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  int n_ = 0;
};

TEST_F(ReadTokenFileTest, TrimsSurroundingWhitespaceOnly) {
  const std::string token = "0123456789abcdef-secret";
  for (const std::string& text : {token, token + "\n", "  " + token + " \r\n\n", "\n\t" + token}) {
    auto got = ReadTokenFile(Write(text), TokenRole::kRequire);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, token);
  }
}

// The executor used to take the first line of this file; the orchestrator
// took both lines (a token gRPC metadata cannot carry). Now both refuse it.
TEST_F(ReadTokenFileTest, MoreThanOneLineOrABlankInsideIsRefused) {
  for (const char* text : {"0123456789abcdef\nsecond-line-here\n", "0123456789 abcdef-secret",
                           "0123456789abcdef\x01secret", "0123456789abcdef\xc3\xa9secret"}) {
    for (TokenRole role : {TokenRole::kRequire, TokenRole::kSend}) {
      const std::string path = Write(text);
      auto got = ReadTokenFile(path, role, "token_file");
      ASSERT_FALSE(got.ok()) << text;
      EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(got.status().message().find("token_file " + path + ": "), absl::string_view::npos)
          << got.status();
    }
  }
}

// A token a daemon requires is at least 16 characters (the orchestrator used
// to accept "abc"); a token a client sends is whatever the file holds (the
// daemon decides, and the client's error names the file).
TEST_F(ReadTokenFileTest, ShortTokensOnlyRefusedWhereRequired) {
  const std::string path = Write("short-token\n");
  auto required = ReadTokenFile(path, TokenRole::kRequire);
  ASSERT_FALSE(required.ok());
  EXPECT_NE(required.status().message().find("shorter than 16 characters"), absl::string_view::npos)
      << required.status();
  auto sent = ReadTokenFile(path, TokenRole::kSend);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(*sent, "short-token");
  EXPECT_TRUE(ReadTokenFile(Write("0123456789abcdef"), TokenRole::kRequire).ok());
}

TEST_F(ReadTokenFileTest, EmptyOrMissingFilesNameTheField) {
  auto empty = ReadTokenFile(Write(" \n\n"), TokenRole::kSend, "--token-file");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("is empty"), absl::string_view::npos);
  auto missing = ReadTokenFile("/nonexistent/pkforge.token", TokenRole::kSend, "--token-file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("--token-file: cannot read /nonexistent/pkforge.token"),
            absl::string_view::npos)
      << missing.status();
}

}  // namespace
}  // namespace pkforge
