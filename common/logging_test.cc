#include "common/logging.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pkforge {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string(name) + "." + std::to_string(getpid()) + ".log"))
      .string();
}

TEST(LoggingTest, RejectsBadOptions) {
  EXPECT_EQ(InitLogging({.level = "loud"}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(InitLogging({.format = "xml"}).code(), absl::StatusCode::kInvalidArgument);
  // A regular file as the parent directory cannot be created through.
  std::string blocker = TempPath("pkf_logging_blocker");
  std::ofstream(blocker) << "x";
  absl::Status s = InitLogging({.file = blocker + "/y.log"});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("opening log file"), std::string::npos) << s;
  std::filesystem::remove(blocker);
}

TEST(LoggingTest, JsonLinesAreEscapedAndSecretsRedacted) {
  std::string path = TempPath("pkf_logging_json");
  std::filesystem::remove(path);
  ASSERT_TRUE(InitLogging({.level = "info", .format = "json", .file = path, .name = "t"}).ok());
  RegisterSecret("sk-test-SECRET-123");
  spdlog::info("calling provider with key {} and \"quotes\"\nnewline", "sk-test-SECRET-123");
  spdlog::debug("not shown at info");
  spdlog::default_logger()->flush();
  std::string out = ReadAll(path);
  EXPECT_EQ(out.find("sk-test-SECRET-123"), std::string::npos) << out;
  EXPECT_NE(out.find("key ***"), std::string::npos) << out;
  EXPECT_NE(out.find(R"(\"quotes\"\nnewline)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("level":"info","logger":"t")"), std::string::npos) << out;
  EXPECT_EQ(out.find("not shown"), std::string::npos);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);  // one object per line
  std::filesystem::remove(path);
}

TEST(LoggingTest, RedactionIgnoresTooShortSecrets) {
  RegisterSecret("ab");
  EXPECT_EQ(RedactSecrets("abab"), "abab");
  RegisterSecret("token-xyz");
  EXPECT_EQ(RedactSecrets("Bearer token-xyz!"), "Bearer ***!");
}

TEST(LoggingTest, JsonEscapeControlCharacters) {
  EXPECT_EQ(JsonEscape(std::string("a\x01"
                                   "b",
                                   3)),
            "a\\u0001b");
  EXPECT_EQ(JsonEscape("tab\there"), "tab\\there");
}

// Bytes that are not UTF-8 (a binary fragment of a candidate's output, a
// truncated multi-byte character) must not make the log line invalid JSON.
TEST(LoggingTest, JsonLinesStayValidForInvalidUtf8) {
  std::string path = TempPath("pkf_logging_utf8");
  std::filesystem::remove(path);
  ASSERT_TRUE(InitLogging({.level = "info", .format = "json", .file = path, .name = "t"}).ok());
  const std::string bad = std::string("caf\xc3\xa9 \xff\xfe bin \xc3 trunc \xed\xa0\x80 surrogate ") +
                          "\xe2\x82";  // a cut-off euro sign at the end
  spdlog::info("output: {}", bad);
  spdlog::default_logger()->flush();
  std::string out = ReadAll(path);
  ASSERT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  nlohmann::json line;
  ASSERT_NO_THROW(line = nlohmann::json::parse(out)) << out;
  const std::string msg = line.at("msg").get<std::string>();
  EXPECT_NE(msg.find("caf\xc3\xa9"), std::string::npos) << msg;  // valid UTF-8 kept as is
  EXPECT_NE(msg.find("\xef\xbf\xbd\xef\xbf\xbd bin \xef\xbf\xbd trunc"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(LoggingTest, JsonEscapeReplacesInvalidUtf8) {
  EXPECT_EQ(JsonEscape("\xc3\xa9"), "\xc3\xa9");
  EXPECT_EQ(JsonEscape("a\xff"), "a\\ufffd");
  EXPECT_EQ(JsonEscape("\xc0\xaf"), "\\ufffd\\ufffd");  // overlong '/'
  EXPECT_EQ(JsonEscape("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
}

}  // namespace
}  // namespace pkforge
