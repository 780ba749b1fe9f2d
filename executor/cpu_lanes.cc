#include "executor/cpu_lanes.h"

#include <sched.h>

#include <algorithm>
#include <set>

namespace pkforge::executor {

CpuLanes::CpuLanes(const std::vector<int>& cpus, const std::vector<int>& gpus) {
  const size_t lanes = gpus.size() + 1;
  if (gpus.empty() || cpus.size() < lanes) return;  // nothing to split
  const size_t share = cpus.size() / lanes;
  size_t next = 0;
  for (int g : gpus) {
    gpu_[g].assign(cpus.begin() + static_cast<std::ptrdiff_t>(next),
                   cpus.begin() + static_cast<std::ptrdiff_t>(next + share));
    next += share;
  }
  shared_.assign(cpus.begin() + static_cast<std::ptrdiff_t>(next), cpus.end());
}

std::vector<int> CpuLanes::For(const std::vector<int>& gpus) const {
  if (gpus.empty()) return shared_;
  std::set<int> out;
  for (int g : gpus) {
    auto it = gpu_.find(g);
    if (it == gpu_.end()) return {};
    out.insert(it->second.begin(), it->second.end());
  }
  return {out.begin(), out.end()};
}

std::vector<int> CpuLanes::Allowed() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

}  // namespace pkforge::executor
