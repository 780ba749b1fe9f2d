#include "common/clock.h"

#include <time.h>

#include <cstdio>

namespace pkforge {
namespace {
int64_t Read(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}
}  // namespace

int64_t SystemClock::NowWallMicros() const { return Read(CLOCK_REALTIME); }
int64_t SystemClock::NowMonotonicMicros() const { return Read(CLOCK_MONOTONIC); }

SystemClock* SystemClock::Get() {
  static SystemClock* clock = new SystemClock();
  return clock;
}

std::string FormatWallMicros(int64_t wall_us) {
  int64_t secs = wall_us / 1'000'000;
  int64_t micros = wall_us % 1'000'000;
  if (micros < 0) {
    micros += 1'000'000;
    secs -= 1;
  }
  time_t t = static_cast<time_t>(secs);
  tm utc{};
  gmtime_r(&t, &utc);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(micros));
  return buf;
}

}  // namespace pkforge
