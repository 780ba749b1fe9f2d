// The red-team battery's clean-up (launch_test_util.h StillAlive) reads a
// file the candidate writes: it must never kill the test itself, its
// ancestors or anything started before the test.
#include "kernels/harness/launch_test_util.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace pkforge::kernels::testing {
namespace {

TEST(StillAlive, KillsOnlyRecordedProcessesStartedAfterTheTest) {
  const std::string dir = ::testing::TempDir() + "/still_alive_" + std::to_string(getpid());
  ::mkdir(dir.c_str(), 0700);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();
  }
  // The child's start time is readable once it exists.
  unsigned long long child_start = 0;
  for (int i = 0; i < 1000 && child_start == 0; ++i) {
    child_start = StartTime(child);
    if (child_start == 0) usleep(1000);
  }
  ASSERT_NE(child_start, 0u);
  {
    std::ofstream pids(dir + "/pids");
    // What a hostile candidate would write: the test itself, its parent
    // (started before it), and init; then one process of its own.
    pids << getpid() << " " << StartTime(getpid()) << "\n";
    pids << getppid() << " " << StartTime(getppid()) << "\n";
    pids << 1 << " " << StartTime(1) << "\n";
    pids << child << " " << child_start << "\n";
  }
  const std::vector<int> alive = StillAlive(dir);
  ASSERT_EQ(alive, std::vector<int>{child});
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(kill(getppid(), 0), 0) << "the parent must be untouched";
  ::unlink((dir + "/pids").c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace pkforge::kernels::testing
