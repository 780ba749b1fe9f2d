// Clocks: the Env-like seam for time (leveldb style). Production code takes a
// Clock* so tests can drive time with FakeClock instead of sleeping.
//
// Units: wall time is microseconds since the Unix epoch (int64); monotonic time
// is microseconds from an arbitrary origin, only meaningful as differences.
//
// Thread safety: SystemClock and FakeClock are safe to call from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace pkforge {

// Milliseconds from `start` to now on std::chrono::steady_clock (tests that
// bound how long a wait took).
inline double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowWallMicros() const = 0;
  virtual int64_t NowMonotonicMicros() const = 0;
};

// The real clocks (CLOCK_REALTIME and CLOCK_MONOTONIC).
class SystemClock final : public Clock {
 public:
  int64_t NowWallMicros() const override;
  int64_t NowMonotonicMicros() const override;
  // Process-wide instance; never destroyed.
  static SystemClock* Get();
};

// Manually advanced clock for tests. Wall and monotonic advance together.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t wall_start_us = 1'700'000'000'000'000, int64_t mono_start_us = 0)
      : wall_(wall_start_us), mono_(mono_start_us) {}
  int64_t NowWallMicros() const override { return wall_.load(); }
  int64_t NowMonotonicMicros() const override { return mono_.load(); }
  void AdvanceMicros(int64_t us) {
    wall_ += us;
    mono_ += us;
  }

 private:
  std::atomic<int64_t> wall_;
  std::atomic<int64_t> mono_;
};

// Measures elapsed time on a clock's monotonic timeline.
class Stopwatch {
 public:
  explicit Stopwatch(const Clock* clock = SystemClock::Get())
      : clock_(clock), start_(clock->NowMonotonicMicros()) {}
  int64_t ElapsedMicros() const { return clock_->NowMonotonicMicros() - start_; }
  double ElapsedMillis() const { return static_cast<double>(ElapsedMicros()) / 1e3; }
  void Reset() { start_ = clock_->NowMonotonicMicros(); }

 private:
  const Clock* clock_;
  int64_t start_;
};

// RFC 3339 UTC with microseconds, e.g. "2026-12-02T13:14:24.123456Z".
std::string FormatWallMicros(int64_t wall_us);

}  // namespace pkforge
