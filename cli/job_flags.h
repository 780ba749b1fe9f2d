// The job flags `pkforge submit` and `pkforge local` share: one definition
// (names, help, defaults) so the two commands cannot drift apart.
//
// Defaults (what a bare `pkforge local` or `pkforge submit` runs):
//   --problem allreduce  --size default  --budget 10m
//   --backend auto   cuda where a GPU is usable, else host
//   --world-size 0   auto: on host 4 ranks (processes), on cuda every usable
//                    GPU of one machine (at least 1)
//   --agent auto     llm when a provider and model are given, else search
// `local` decides "auto" from this machine; `submit` from the executors the
// orchestrator reports (ListExecutors).
//
// Thread safety: plain data; commands run on the main thread.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "pkforge/v1/orchestrator.pb.h"

namespace pkforge::cli {

inline constexpr int kHostDefaultWorldSize = 4;

struct JobFlags {
  std::string problem = "allreduce";
  std::string backend = "auto";  // auto | host | cuda
  int world_size = 0;            // 0 = auto
  std::string size = "default";
  std::string dtype;             // "" = the problem's
  std::string agent = "auto";    // auto | llm | search | replay
  std::string provider, model, api_key_env;
  double temperature = 0.7;
  std::string strategy = "sequential";
  int n = 0;
  std::string replay_dir;
  std::string budget = "10m";
  int max_turns = 0, max_evaluations = 0;
  int64_t max_tokens = 0;
  double target_speedup = 0, max_cost = 0;
  uint64_t seed = 0;
  std::string label;
  int trials = 0;
  // Hidden shapes and the multi-size score (issue #17 item 5): EvalSettings.
  bool hidden_shapes = false;
  bool final_hidden_shapes = false;
  bool precise_timing = false;
  bool final_precise_timing = false;
  std::string sizes;  // "tiny,default,large" -> EvalSettings.size_ladder

  // Adds every flag above to `cmd`. `provider_help` differs between the
  // commands (local: a provider kind it configures; submit: a name the
  // orchestrator's operator configured).
  void Add(CLI::App* cmd, const std::string& provider_help);

  // Resolves "auto" backend/world size: `gpus` usable GPUs where the job runs.
  std::string ResolvedBackend(int gpus) const;
  int ResolvedWorldSize(const std::string& backend, int gpus) const;
};

// The JobSpec of `f` with backend/world size already resolved and the agent
// kind given (llm | search | replay). `llm_provider_name` is what goes into
// LlmConfig.provider_name. Errors name the flag.
absl::StatusOr<v1::JobSpec> JobSpecFromFlags(const JobFlags& f, const std::string& backend,
                                             int world_size, const std::string& agent,
                                             const std::string& llm_provider_name);

}  // namespace pkforge::cli
