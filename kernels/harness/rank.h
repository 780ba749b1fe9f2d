// A rank process (`pkforge-worker rank ...`), started only by the judge.
//
// Two roles, never mixed in one process:
//   ref:  trusted. Generates inputs from the per-trial secret seed (received
//         from the judge), runs the host reference, keeps reference outputs in
//         its own segment, compares the candidate's outputs (mapped from the
//         candidate side's segment) and reports records to the judge.
//   cand: loads the candidate .so (dlopen) and runs it. Holds no seed and no
//         reference output: it never maps a reference-side segment and its
//         image is a fresh exec of the worker, so nothing of the judge's
//         memory is inherited.
// Single-threaded; it serves commands from the judge until kOpExit or EOF.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/harness/problem.h"

namespace pkforge::kernels {

struct RankOptions {
  std::string role;  // "ref" | "cand"
  int rank = 0;
  int world = 1;
  std::string problem;
  std::string dtype;
  std::string dims;  // DimsToString form
  int slots = 1;
  uint64_t scratch_bytes = 0;
  uint64_t flag_count = 0;
  std::string candidate;  // cand: path of the .so
  std::vector<std::string> writable;  // cand: folders it may write beneath (host ranks)
  // cuda ref: the CPU of its drip watcher thread when the batches are
  // queued (kernels/cuda/rank_cuda_drip.cc), none of the rank pairs' nor
  // the judge's (rank_pool.h WatcherCpus); -1: none to spare.
  int watcher_cpu = -1;
};

// Returns the process exit code.
int RankMain(const RankOptions& options);

// What a rank's options name, resolved the same way by the host and the
// cuda rank: the problem, the dtype, the dimensions at this world size and
// the tolerance. An error says what was wrong ("bad problem/dtype", or the
// size's own message).
struct RankProblem {
  const Problem* problem = nullptr;
  pkf_dtype dtype = PKF_F32;
  Dims dims;
  Tolerance tol;
};
absl::StatusOr<RankProblem> ResolveRankProblem(const RankOptions& options);

// A candidate library's entry points, loaded the same way by the host and
// the cuda rank: dlopen(`path`, RTLD_NOW | RTLD_LOCAL) (the host rank passes
// /proc/self/fd/N of the file it opened before dropping privileges), then
// pkf_run (required), pkf_setup and pkf_teardown (optional: null). Errors
// name the cause: "dlopen: <dlerror>" or "candidate does not export pkf_run".
// The library stays loaded for the life of the process.
struct CandidateEntryPoints {
  pkf_run_fn run = nullptr;
  pkf_setup_fn setup = nullptr;
  pkf_teardown_fn teardown = nullptr;
};
absl::StatusOr<CandidateEntryPoints> LoadCandidate(const std::string& path);

struct Reply;  // harness/protocol.h

// Command-pipe I/O shared by the host and cuda rank processes: reads exactly
// n bytes (false on EOF or error), and writes one Reply to kFdReply (stamping
// the magic), exiting the process if the judge has gone away.
bool ReadFull(int fd, void* buf, size_t n);
void WriteReply(Reply* r);

}  // namespace pkforge::kernels
