#include "common/unique_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <utility>

namespace pkforge {
namespace {

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFd, ClosesOnDestructionAndReset) {
  int raw = -1;
  {
    UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd.valid());
    raw = fd.get();
    EXPECT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  raw = fd.get();
  fd.Reset();
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(IsOpen(raw));
}

TEST(UniqueFd, MoveTransfersAndReleaseGivesUpOwnership) {
  UniqueFd a(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = a.get();
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(b.get(), raw);
  UniqueFd c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(IsOpen(raw));
  const int released = c.Release();
  EXPECT_FALSE(c.valid());
  EXPECT_TRUE(IsOpen(released));  // not closed by c
  close(released);
}

TEST(UniqueFd, AssigningOverAHeldDescriptorClosesIt) {
  UniqueFd a(open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd b(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int old_a = a.get(), raw_b = b.get();
  a = std::move(b);
  EXPECT_FALSE(IsOpen(old_a));
  EXPECT_EQ(a.get(), raw_b);
}

}  // namespace
}  // namespace pkforge
