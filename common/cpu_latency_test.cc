#include "common/cpu_latency.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace pkforge {
namespace {

// The PM QoS device reads back the aggregate request: 0 while any holder has
// it open with 0 written.
int64_t ReadQos(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int32_t v = -1;
  const ssize_t n = ::read(fd, &v, sizeof v);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof v) ? v : -1;
}

TEST(CpuWakeLatencyHold, HoldsZeroWhileAliveAndReleasesOnDestruction) {
  const std::string dev = "/dev/cpu_dma_latency";
  if (::access(dev.c_str(), W_OK) != 0) GTEST_SKIP() << dev << " not writable here";
  const int64_t before = ReadQos(dev);
  {
    CpuWakeLatencyHold h = CpuWakeLatencyHold::Acquire(dev);
    ASSERT_TRUE(h.held()) << h.detail();
    EXPECT_EQ(ReadQos(dev), 0);
    CpuWakeLatencyHold moved = std::move(h);  // the hold travels with the object
    EXPECT_TRUE(moved.held());
    EXPECT_EQ(ReadQos(dev), 0);
  }
  if (before != 0) {
    EXPECT_EQ(ReadQos(dev), before) << "the request outlived its holder";
  }
}

TEST(CpuWakeLatencyHold, SaysWhyWhenTheDeviceCannotBeOpened) {
  CpuWakeLatencyHold h = CpuWakeLatencyHold::Acquire("/nonexistent/cpu_dma_latency");
  EXPECT_FALSE(h.held());
  EXPECT_NE(h.detail().find("/nonexistent/cpu_dma_latency"), std::string::npos) << h.detail();
  EXPECT_NE(h.detail().find("No such file"), std::string::npos) << h.detail();
}

// The request is the binary s32 0 the interface expects (checked on a plain
// file, which every machine has, unlike a writable QoS device).
TEST(CpuWakeLatencyHold, AWritableFileIsWrittenWithTheBinaryRequest) {
  const std::string f = ::testing::TempDir() + "/qos_" + std::to_string(::getpid());
  { const int fd = ::open(f.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600); ASSERT_GE(fd, 0); ::close(fd); }
  {
    CpuWakeLatencyHold h = CpuWakeLatencyHold::Acquire(f);
    EXPECT_TRUE(h.held()) << h.detail();
  }
  EXPECT_EQ(ReadQos(f), 0);
  ::unlink(f.c_str());
}

TEST(CpuWakeLatencyHold, TheEnvironmentCanTurnItOffForMeasurements) {
  ::setenv("PKFORGE_CPU_WAKE_HOLD", "0", 1);
  CpuWakeLatencyHold h = CpuWakeLatencyHold::AcquireUnlessDisabled();
  ::unsetenv("PKFORGE_CPU_WAKE_HOLD");
  EXPECT_FALSE(h.held());
  EXPECT_NE(h.detail().find("PKFORGE_CPU_WAKE_HOLD=0"), std::string::npos) << h.detail();
}

}  // namespace
}  // namespace pkforge
