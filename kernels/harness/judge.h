// The judge: `pkforge-worker launch`. Trusted; never loads candidate code.
//
// It creates the shared segments, starts 2 x world_size rank processes
// (kernels/harness/rank.h: a trusted reference rank and a candidate rank per
// rank index, each a fresh exec of this binary), drives the protocol of
// design section 5 through per-process command/reply pipes with a deadline on
// every wait, and builds the EvaluationResult. The secret per-trial seeds are
// drawn from getrandom() after every candidate process has been exec'ed and
// are sent only to reference ranks. kernels/README.md has the full design.
//
// Every path out of Evaluate() kills the process group of the ranks and reaps
// every child (the judge is a child subreaper, so even processes a candidate
// double-forks end up reaped here).
// Thread safety: one Evaluate() at a time per process (it owns SIGPIPE
// disposition and the subreaper attribute).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::kernels {

struct LaunchOptions {
  std::string problem;
  std::string backend = "host";  // host | cuda
  int world_size = 1;
  std::string dtype = "bf16";
  std::string size = "default";
  int trials = 5;
  int warmup = 5;
  int iters = 30;
  double timeout_s = 60;  // per phase (setup, correctness, timing, teardown)
  std::string candidate;  // path of the compiled .so
  std::vector<std::string> forbid;  // extra forbidden calls for the static scan
  std::string worker_exe = "/proc/self/exe";
  int outlive_delay_ms = 20;        // how long the judge waits before re-reading outputs
  std::string reveal_seeds_file;    // tests only: seeds written here after all ranks are gone
  bool skip_timing = false;         // correctness trials only (no speedup, no roofline)
  // Folders host candidate processes may write beneath (none by default:
  // containment.h confine_writes); the executor names its sandbox's private
  // /tmp and /dev/shm.
  std::vector<std::string> candidate_writable;
  // Ceilings measured by the executor (DescribeDevice); 0: the built-in table
  // (cuda) or a memcpy measurement (host).
  double hbm_gbps = 0;
  double link_gbps = 0;
  double tflops = 0;
  // cuda: measurement-grade timing, 2 GiB of input sets per side and rank
  // instead of 512 MiB (judge_internal.h SetBudgetBytes); refused on host.
  bool precise_timing = false;
};

// Runs one evaluation. A non-OK status only for problems of the request
// itself (unknown problem, bad size, unreadable candidate); everything the
// candidate does ends in an EvaluationResult.
absl::StatusOr<pkforge::v1::EvaluationResult> Evaluate(const LaunchOptions& options);

// Proto3 JSON of a result (one line).
std::string ResultToJson(const pkforge::v1::EvaluationResult& result);
// A short human-readable summary.
std::string ResultToText(const pkforge::v1::EvaluationResult& result);

}  // namespace pkforge::kernels
