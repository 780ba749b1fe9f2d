#include "common/files.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

// Sorted names (PCI addresses under /proc/driver/nvidia/gpus sort in bus
// order), without "." and ".."; a missing folder is empty.
TEST(ListDirSorted, SortedNamesOrNothing) {
  const std::string dir = testing::TempDir() + "/pkf_list_dir_test";
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(ListDirSorted(dir).empty());
  std::filesystem::create_directories(dir + "/0000:c1:00.0");
  for (const char* n : {"0000:18:00.0", "0000:9a:00.0", ".hidden"}) std::ofstream(dir + "/" + n) << "x";
  EXPECT_EQ(ListDirSorted(dir),
            (std::vector<std::string>{".hidden", "0000:18:00.0", "0000:9a:00.0", "0000:c1:00.0"}));
  std::filesystem::remove_all(dir);
}

TEST(RemoveTreeOnExit, RemovesTheTreeButNotWhatALinkInsidePointsAt) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(testing::TempDir()) / "pkf_remove_tree_test";
  fs::remove_all(root);
  const fs::path outside = root / "outside";
  const fs::path scratch = root / "scratch";
  fs::create_directories(outside);
  fs::create_directories(scratch / "a" / "b");
  std::ofstream(scratch / "a" / "b" / "f") << "x";
  std::ofstream(outside / "keep") << "y";
  fs::create_directory_symlink(outside, scratch / "link");
  { const RemoveTreeOnExit cleanup(scratch.string()); }
  EXPECT_FALSE(fs::exists(scratch));
  EXPECT_TRUE(fs::exists(outside / "keep"));
  { const RemoveTreeOnExit missing((root / "never-made").string()); }  // no throw, no error
  fs::remove_all(root);
}

}  // namespace
}  // namespace pkforge
