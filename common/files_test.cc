#include "common/files.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace pkforge {
namespace {

TEST(ReadFileToString, WholeFileBytesOrAnErrorNamingThePath) {
  const std::string path = testing::TempDir() + "/pkf_files_test.bin";
  const std::string bytes("a\0b\xff\n", 5);
  std::ofstream(path, std::ios::binary) << bytes;
  auto got = ReadFileToString(path);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, bytes);
  std::remove(path.c_str());
  auto missing = ReadFileToString(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace pkforge
