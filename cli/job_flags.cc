#include "cli/job_flags.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/remote.h"
#include "common/status.h"

namespace pkforge::cli {

void JobFlags::Add(CLI::App* cmd, const std::string& provider_help) {
  cmd->add_option("--problem", problem, "Problem name")->capture_default_str();
  cmd->add_option("--backend", backend, "auto | host | cuda (auto: cuda where a GPU is usable)")
      ->check(CLI::IsMember({"auto", "host", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--world-size", world_size,
                  "Ranks; 0 = auto: 4 processes on the host backend, every usable GPU on cuda")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_option("--size", size, "Size preset: tiny | default | large, or K=V,... overrides")
      ->capture_default_str();
  cmd->add_option("--dtype", dtype, "bf16 | f16 | f32 (default: the problem's)");
  cmd->add_option("--agent", agent, "auto | llm | search | replay (auto: llm when --model is given)")
      ->check(CLI::IsMember({"auto", "llm", "search", "replay"}))
      ->capture_default_str();
  cmd->add_option("--provider", provider, provider_help);
  cmd->add_option("--model", model, "LLM model");
  cmd->add_option("--api-key-env", api_key_env, "Environment variable holding the API key");
  cmd->add_option("--temperature", temperature, "LLM temperature")->capture_default_str();
  cmd->add_option("--strategy", strategy, "sequential | best_of_n | tree")
      ->check(CLI::IsMember({"sequential", "best_of_n", "tree"}))
      ->capture_default_str();
  cmd->add_option("--n", n, "best_of_n: candidates per turn");
  cmd->add_option("--replay-dir", replay_dir, "replay: directory whose files are the candidates");
  cmd->add_option("--budget", budget, "Wall-clock budget: 90s, 5m, 1h30m (a bare number is seconds)")
      ->capture_default_str();
  cmd->add_option("--max-turns", max_turns, "Turn budget (0: none)");
  cmd->add_option("--max-evaluations", max_evaluations, "Evaluation budget (0: none)");
  cmd->add_option("--max-tokens", max_tokens, "Token budget (0: none)");
  cmd->add_option("--target-speedup", target_speedup, "Stop once reached (0: never)");
  cmd->add_option("--max-cost", max_cost, "Cost budget in USD (0: none)");
  cmd->add_option("--seed", seed, "Agent seed");
  cmd->add_option("--label", label, "Experiment label");
  cmd->add_option("--trials", trials, "Correctness trials per evaluation (0: the executor's)");
  cmd->add_flag("--hidden-shapes", hidden_shapes,
                "Every evaluation on shapes drawn from the problem's shape family with a secret "
                "seed (not the prompt's)");
  cmd->add_flag("--final-hidden-shapes", final_hidden_shapes,
                "Only the final re-measurement (the job's result) on hidden shapes");
  cmd->add_flag("--precise-timing", precise_timing,
                "cuda: every evaluation with measurement-grade timing (2 GiB of input sets per "
                "side and GPU, ~2.5x the evaluation time)");
  cmd->add_flag("--final-precise-timing", final_precise_timing,
                "cuda: only the final re-measurement (the job's result) with measurement-grade "
                "timing");
  cmd->add_option("--sizes", sizes,
                  "Size ladder for a multi-size score (geometric mean of speedups), e.g. "
                  "tiny,default,large");
}

std::string JobFlags::ResolvedBackend(int gpus) const {
  if (backend != "auto") return backend;
  return gpus > 0 ? "cuda" : "host";
}

int JobFlags::ResolvedWorldSize(const std::string& resolved_backend, int gpus) const {
  if (world_size > 0) return world_size;
  if (resolved_backend == "host") return kHostDefaultWorldSize;
  return std::max(1, gpus);
}

absl::StatusOr<v1::JobSpec> JobSpecFromFlags(const JobFlags& f, const std::string& backend,
                                             int world_size, const std::string& agent,
                                             const std::string& llm_provider_name) {
  v1::JobSpec s;
  if (f.problem.empty()) return absl::InvalidArgumentError("--problem: must not be empty");
  s.set_problem(f.problem);
  s.set_backend(backend == "cuda" ? v1::BACKEND_CUDA : v1::BACKEND_HOST);
  s.set_world_size(world_size);
  if (!f.dtype.empty()) {
    v1::Dtype d;
    std::string name = "DTYPE_" + f.dtype;
    for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (!v1::Dtype_Parse(name, &d)) {
      return absl::InvalidArgumentError(absl::StrCat("--dtype '", f.dtype, "' is unknown (bf16, f16, f32)"));
    }
    s.set_dtype(d);
  }
  if (!f.size.empty()) s.mutable_size()->set_preset(f.size);
  auto* a = s.mutable_agent();
  a->set_kind(agent == "llm"      ? v1::AGENT_KIND_LLM
              : agent == "replay" ? v1::AGENT_KIND_REPLAY
                                  : v1::AGENT_KIND_SEARCH);
  if (agent == "llm") {
    a->mutable_llm()->set_provider_name(llm_provider_name);
    a->mutable_llm()->set_model(f.model);
    a->mutable_llm()->set_temperature(f.temperature);
    a->mutable_strategy()->set_kind(f.strategy == "best_of_n" ? v1::STRATEGY_BEST_OF_N
                                    : f.strategy == "tree"    ? v1::STRATEGY_TREE
                                                              : v1::STRATEGY_SEQUENTIAL);
    a->mutable_strategy()->set_n(f.n);
  }
  ASSIGN_OR_RETURN(double wall, ParseDuration(f.budget));
  auto* b = s.mutable_budget();
  b->set_wall_seconds(wall);
  b->set_max_turns(f.max_turns);
  b->set_max_evaluations(f.max_evaluations);
  b->set_max_tokens(f.max_tokens);
  b->set_target_speedup(f.target_speedup);
  b->set_max_cost_usd(f.max_cost);
  s.set_seed(f.seed);
  s.set_label(f.label);
  s.mutable_eval()->set_trials(f.trials);
  s.mutable_eval()->set_hidden_shapes(f.hidden_shapes);
  s.mutable_eval()->set_final_hidden_shapes(f.final_hidden_shapes);
  s.mutable_eval()->set_precise_timing(f.precise_timing);
  s.mutable_eval()->set_final_precise_timing(f.final_precise_timing);
  if (!f.sizes.empty()) {
    for (absl::string_view size : absl::StrSplit(f.sizes, ',')) {
      if (size.empty()) return absl::InvalidArgumentError("--sizes: empty entry (e.g. tiny,default,large)");
      s.mutable_eval()->add_size_ladder(std::string(size));
    }
  }
  return s;
}

}  // namespace pkforge::cli
