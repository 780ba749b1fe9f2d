#include "common/clock.h"

#include "gtest/gtest.h"

namespace pkforge {
namespace {

TEST(ClockTest, SystemClockIsPlausibleAndMonotonic) {
  auto* c = SystemClock::Get();
  EXPECT_GT(c->NowWallMicros(), 1'600'000'000'000'000);  // after Sep 2020
  int64_t a = c->NowMonotonicMicros();
  int64_t b = c->NowMonotonicMicros();
  EXPECT_LE(a, b);
}

TEST(ClockTest, FakeClockDrivesStopwatch) {
  FakeClock clock(1'000'000, 50);
  Stopwatch sw(&clock);
  EXPECT_EQ(sw.ElapsedMicros(), 0);
  clock.AdvanceMicros(2500);
  EXPECT_EQ(sw.ElapsedMicros(), 2500);
  EXPECT_DOUBLE_EQ(sw.ElapsedMillis(), 2.5);
  EXPECT_EQ(clock.NowWallMicros(), 1'002'500);
  sw.Reset();
  EXPECT_EQ(sw.ElapsedMicros(), 0);
}

TEST(ClockTest, FormatsRfc3339Utc) {
  EXPECT_EQ(FormatWallMicros(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatWallMicros(1'764'681'264'123'456), "2025-12-02T13:14:24.123456Z");
  EXPECT_EQ(FormatWallMicros(-1), "1969-12-31T23:59:59.999999Z");
}

}  // namespace
}  // namespace pkforge
