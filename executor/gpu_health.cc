#include "executor/gpu_health.h"

#include "absl/strings/str_cat.h"

namespace pkforge::executor {

bool NeedsGpuHealthCheck(v1::Backend backend, v1::EvaluationResult::Status status) {
  return backend == v1::BACKEND_CUDA &&
         (status == v1::EvaluationResult::RUNTIME_ERROR || status == v1::EvaluationResult::TIMEOUT);
}

std::vector<std::string> RetireFailedGpus(const std::vector<int>& gpus,
                                          const std::function<absl::Status(int gpu)>& check,
                                          DeviceQueue* queue, const std::string& what) {
  std::vector<std::string> flags;
  for (int g : gpus) {
    const absl::Status health = check(g);
    if (health.ok()) continue;
    queue->MarkUnhealthy(g, absl::StrCat(what, ": ", health.message()));
    flags.push_back(absl::StrCat("gpu ", g, " failed its health check and left the pool"));
  }
  return flags;
}

}  // namespace pkforge::executor
