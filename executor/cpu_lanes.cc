#include "executor/cpu_lanes.h"

#include <sched.h>

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/files.h"

namespace pkforge::executor {
namespace {

// The file's first line, trimmed; empty when it cannot be read.
std::string ReadLine(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return "";
  const absl::string_view first = absl::string_view(*text).substr(0, text->find('\n'));
  return std::string(absl::StripAsciiWhitespace(first));
}

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; malformed parts are skipped.
std::vector<int> ParseCpuList(const std::string& list) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> ends = absl::StrSplit(part, '-');
    int lo = 0, hi = 0;
    if (ends.size() == 1 && absl::SimpleAtoi(ends[0], &lo)) {
      out.push_back(lo);
    } else if (ends.size() == 2 && absl::SimpleAtoi(ends[0], &lo) &&
               absl::SimpleAtoi(ends[1], &hi) && lo <= hi && hi - lo < 65536) {
      for (int c = lo; c <= hi; ++c) out.push_back(c);
    }
  }
  return out;
}

}  // namespace

CpuTopology CpuTopology::Probe(const std::vector<int>& gpus) {
  CpuTopology t;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return t;
  std::map<int, int> node_of;
  for (const std::string& n : ListDirSorted("/sys/devices/system/node")) {
    int node = 0;
    if (n.rfind("node", 0) != 0 || !absl::SimpleAtoi(n.substr(4), &node)) continue;
    for (int c : ParseCpuList(ReadLine("/sys/devices/system/node/" + n + "/cpulist")))
      node_of[c] = node;
  }
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    Cpu cpu{c, c, node_of.count(c) ? node_of[c] : 0};
    const std::vector<int> siblings = ParseCpuList(ReadLine(
        "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/thread_siblings_list"));
    if (!siblings.empty()) cpu.core = *std::min_element(siblings.begin(), siblings.end());
    t.cpus.push_back(cpu);
  }
  const std::vector<std::string> buses = ListDirSorted("/proc/driver/nvidia/gpus");
  for (int g : gpus) {
    if (g < 0 || g >= static_cast<int>(buses.size())) continue;
    int node = -1;
    if (absl::SimpleAtoi(ReadLine("/sys/bus/pci/devices/" + buses[g] + "/numa_node"), &node) &&
        node >= 0)
      t.gpu_node[g] = node;
  }
  return t;
}

CpuLanes::CpuLanes(const CpuTopology& topology, const std::vector<int>& gpus) {
  // Physical cores, each with its CPUs, in (node, core) order.
  std::map<std::pair<int, int>, std::vector<int>> cores;
  for (const CpuTopology::Cpu& c : topology.cpus) cores[{c.node, c.core}].push_back(c.id);
  const size_t lanes = gpus.size() + 1;
  if (gpus.empty() || cores.size() < lanes) return;  // nothing to split
  const size_t share = cores.size() / lanes;
  std::set<std::pair<int, int>> free;
  for (const auto& [key, cpus] : cores) free.insert(key);
  auto take = [&](int node, std::vector<int>* out) {
    // From the node first (cores in order), then from anywhere.
    size_t taken = 0;
    for (bool local : {true, false})
      for (auto it = free.begin(); it != free.end() && taken < share;) {
        if (local && it->first != node) {
          ++it;
          continue;
        }
        const std::vector<int>& cpus = cores[*it];
        out->insert(out->end(), cpus.begin(), cpus.end());
        it = free.erase(it);
        ++taken;
      }
    std::sort(out->begin(), out->end());
  };
  for (int g : gpus) {
    auto node = topology.gpu_node.find(g);
    take(node == topology.gpu_node.end() ? -1 : node->second, &gpu_[g]);
  }
  for (const auto& key : free) shared_.insert(shared_.end(), cores[key].begin(), cores[key].end());
  std::sort(shared_.begin(), shared_.end());
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

}  // namespace pkforge::executor
