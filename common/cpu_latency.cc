#include "common/cpu_latency.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace pkforge {

CpuWakeLatencyHold CpuWakeLatencyHold::Acquire(const std::string& path) {
  CpuWakeLatencyHold h;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) {
    h.detail_ = fmt::format("not held: open {}: {}", path, std::strerror(errno));
    return h;
  }
  // The interface takes a binary s32 (microseconds); it holds until closed.
  const int32_t zero = 0;
  const ssize_t n = ::write(fd.get(), &zero, sizeof zero);
  if (n != static_cast<ssize_t>(sizeof zero)) {
    h.detail_ = fmt::format("not held: write {}: {}", path,
                            n < 0 ? std::strerror(errno) : "short write");
    return h;
  }
  h.fd_ = std::move(fd);
  h.detail_ = fmt::format("held ({} = 0 us)", path);
  return h;
}

CpuWakeLatencyHold CpuWakeLatencyHold::AcquireUnlessDisabled() {
  const char* v = std::getenv("PKFORGE_CPU_WAKE_HOLD");
  if (v != nullptr && std::string(v) == "0") {
    CpuWakeLatencyHold h;
    h.detail_ = "not held: PKFORGE_CPU_WAKE_HOLD=0";
    return h;
  }
  return Acquire();
}

}  // namespace pkforge
