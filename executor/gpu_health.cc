#include "executor/gpu_health.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"

namespace pkforge::executor {

bool NeedsGpuHealthCheck(v1::Backend backend, v1::EvaluationResult::Status status) {
  return backend == v1::BACKEND_CUDA &&
         (status == v1::EvaluationResult::RUNTIME_ERROR || status == v1::EvaluationResult::TIMEOUT);
}

std::vector<std::string> RetireFailedGpus(const std::vector<int>& gpus,
                                          const std::function<absl::Status(int gpu)>& check,
                                          DeviceQueue* queue, const std::string& what,
                                          const std::function<void(int ms)>& sleep_ms) {
  std::vector<std::string> flags;
  for (int g : gpus) {
    absl::Status health = check(g);
    int attempt = 1;
    for (; !health.ok() && attempt < kHealthAttempts; ++attempt) {
      const int ms = kHealthRetryDelaysMs[attempt - 1];
      if (sleep_ms) {
        sleep_ms(ms);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      }
      health = check(g);
    }
    if (health.ok()) {
      if (attempt > 1)
        flags.push_back(absl::StrCat("gpu ", g, " passed its health check on attempt ", attempt,
                                     " of ", kHealthAttempts));
      continue;
    }
    queue->MarkUnhealthy(g, absl::StrCat(what, ": ", health.message(), " (", kHealthAttempts,
                                         " attempts)"));
    flags.push_back(absl::StrCat("gpu ", g, " failed its health check ", kHealthAttempts,
                                 " times and left the pool"));
  }
  return flags;
}

}  // namespace pkforge::executor
