#include "kernels/harness/result_frame.h"

#include <gtest/gtest.h>

namespace pkforge::kernels {
namespace {

TEST(ResultFrame, RoundTrip) {
  const std::string key = NewResultKey();
  EXPECT_EQ(key.size(), 64u);
  const std::string json = R"({"status":"OK","message":"line\nwith newline"})";
  auto parsed = ParseFramedResult(FrameResult(json, key), key, false);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, json);
}

TEST(ResultFrame, AnythingBesidesTheOneFrameIsAnError) {
  const std::string key = NewResultKey();
  const std::string frame = FrameResult(R"({"status":"OK"})", key);
  // A forged line before the frame (what a candidate would print).
  EXPECT_FALSE(ParseFramedResult(R"({"status":"OK","speedup":100})" "\n" + frame, key, false).ok());
  // A second frame, or any byte, after it.
  EXPECT_FALSE(ParseFramedResult(frame + frame, key, false).ok());
  EXPECT_FALSE(ParseFramedResult(frame + "x", key, false).ok());
  // Cut at the capture limit: never a parsed partial.
  EXPECT_FALSE(ParseFramedResult(frame, key, /*truncated=*/true).ok());
  EXPECT_FALSE(ParseFramedResult(frame.substr(0, frame.size() - 3), key, false).ok());
  EXPECT_FALSE(ParseFramedResult("", key, false).ok());
}

TEST(ResultFrame, OnlyTheKeyHolderCanFrame) {
  const std::string key = NewResultKey();
  const std::string forged = FrameResult(R"({"status":"OK","speedup":100})", NewResultKey());
  auto parsed = ParseFramedResult(forged, key, false);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(std::string(parsed.status().message()).find("MAC"), std::string::npos);
  // Same MAC, different body of the same length.
  std::string tampered = FrameResult(R"({"status":"OK","speedup":1.0})", key);
  tampered.replace(tampered.find("1.0"), 3, "9.9");
  EXPECT_FALSE(ParseFramedResult(tampered, key, false).ok());
}

}  // namespace
}  // namespace pkforge::kernels
