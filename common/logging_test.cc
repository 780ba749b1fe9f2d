#include "common/logging.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace pkforge
