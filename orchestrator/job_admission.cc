// JobManager's admission of a job spec: operator-chosen parts resolved (LLM
// provider URL and key variable, replay directory), search space and replay
// checks, then the executor's own rules for every evaluation of the job
// (contract in job_manager.h, Submit()). Split out of job_manager.cc, which
// keeps the life of admitted jobs.
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "agent/kernel_templates.h"
#include "agent/reply_parser.h"
#include "common/status.h"
#include "fmt/format.h"
#include "orchestrator/convert.h"
#include "orchestrator/job_manager.h"

namespace pkforge::orchestrator {
namespace {

bool Finite(double v) { return std::isfinite(v) && v >= 0; }

// A client string echoed in an error: short and printable only.
std::string Echo(const std::string& v) {
  std::string out;
  for (char c : v.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return v.size() > 64 ? out + "..." : out;
}

}  // namespace

absl::StatusOr<v1::JobSpec> JobManager::Admit(const v1::JobSpec& request_spec) const {
  v1::JobSpec spec = request_spec;
  if (spec.agent().kind() == v1::AGENT_KIND_LLM) {
    // Issue #15: the operator, not the client, decides which key goes to
    // which host. The client names a provider; nothing about the
    // orchestrator's environment is revealed or sent elsewhere.
    v1::LlmConfig* l = spec.mutable_agent()->mutable_llm();
    std::string names;
    for (const auto& p : options_.providers) names += (names.empty() ? "" : ", ") + p.name;
    if (names.empty()) names = "none configured: start the orchestrator with --provider";
    if (!l->api_key_env().empty())
      return InvalidField("spec.agent.llm.api_key_env",
                          "not accepted from clients: the orchestrator's operator chooses provider "
                          "keys; name a configured provider in spec.agent.llm.provider_name (" +
                              names + ")");
    if (l->provider_name().empty())
      return InvalidField("spec.agent.llm.provider_name",
                          "is required (configured: " + names + ")");
    const LlmProvider* found = nullptr;
    for (const auto& p : options_.providers)
      if (p.name == l->provider_name()) found = &p;
    if (found == nullptr)
      return InvalidField(
          "spec.agent.llm.provider_name",
          fmt::format("unknown provider '{}' (configured: {})", Echo(l->provider_name()), names));
    if (!l->base_url().empty() && l->base_url() != found->base_url)
      return InvalidField("spec.agent.llm.base_url",
                          "must be empty or the provider's own URL: a provider's key is never sent "
                          "to another host");
    const v1::Provider kind =
        found->kind == "anthropic" ? v1::PROVIDER_ANTHROPIC : v1::PROVIDER_OPENAI;
    if (l->provider() != v1::PROVIDER_UNSPECIFIED && l->provider() != kind)
      return InvalidField("spec.agent.llm.provider",
                          fmt::format("provider '{}' speaks {}", found->name, found->kind));
    RETURN_IF_ERROR(CheckProviderUse(*found, l->model(), l->api_key()));
    const bool client_key = !l->api_key().empty();
    l->clear_api_key();  // never stored nor echoed; Submit() hands it to the job
    l->set_provider(kind);
    l->set_base_url(found->base_url);
    l->set_api_key_env(found->key_env);
    if (!client_key && !found->key_env.empty() && std::getenv(found->key_env.c_str()) == nullptr)
      return absl::FailedPreconditionError(fmt::format(
          "spec.agent.llm.provider_name: provider '{}' has no API key in the orchestrator's "
          "environment (an operator setting)",
          found->name));
  }
  if (spec.agent().has_llm()) spec.mutable_agent()->mutable_llm()->clear_api_key();
  if (spec.agent().kind() == v1::AGENT_KIND_REPLAY) {
    // Issue #15: no client reads files of the orchestrator host, except
    // under the operator's replay root.
    v1::AgentConfig* a = spec.mutable_agent();
    if (!a->replay_sources().empty() && !a->replay_dir().empty())
      return InvalidField("spec.agent.replay_dir", "give replay_sources or replay_dir, not both");
    if (a->replay_sources_size() > 1000)
      return InvalidField("spec.agent.replay_sources", "more than 1000 sources");
    for (const auto& src : a->replay_sources()) {
      if (src.source().size() > agent::kMaxCandidateBytes)
        return InvalidField("spec.agent.replay_sources",
                            fmt::format("'{}' is over the {} byte limit", Echo(src.name()),
                                        agent::kMaxCandidateBytes));
      if (src.name().size() > 256)
        return InvalidField("spec.agent.replay_sources.name", "longer than 256 characters");
      // Accepted empty, it failed the job in storage later and the sources
      // after it never ran (API fuzzing, session 16).
      if (src.source().empty())
        return InvalidField("spec.agent.replay_sources",
                            fmt::format("'{}' has an empty source", Echo(src.name())));
    }
    if (a->replay_sources().empty()) {
      if (a->replay_dir().empty())
        return InvalidField("spec.agent.replay_sources",
                            "is required (or replay_dir under the orchestrator's --replay-root)");
      if (options_.replay_root.empty())
        return absl::PermissionDeniedError(
            "spec.agent.replay_dir: this orchestrator reads no files for clients (no "
            "--replay-root); send the candidates in spec.agent.replay_sources");
      char root[PATH_MAX], real[PATH_MAX];
      if (realpath(options_.replay_root.c_str(), root) == nullptr)
        return absl::FailedPreconditionError("the orchestrator's --replay-root does not exist");
      const std::string wanted = a->replay_dir()[0] == '/'
                                     ? a->replay_dir()
                                     : std::string(root) + "/" + a->replay_dir();
      const std::string r = root;
      // One answer for "missing" and "outside the root": two would tell a
      // client which paths exist on this host (API fuzzing, session 16).
      struct stat st;
      const bool found = realpath(wanted.c_str(), real) != nullptr;
      const std::string resolved = found ? real : "";
      if (!found || (resolved != r && resolved.rfind(r + "/", 0) != 0) ||
          stat(real, &st) != 0 || !S_ISDIR(st.st_mode))
        return absl::PermissionDeniedError(fmt::format(
            "spec.agent.replay_dir: '{}' is not a directory under the replay root",
            Echo(a->replay_dir())));
      a->set_replay_dir(resolved);
    }
  }
  if (absl::Status s = ValidateResolved(spec); !s.ok()) return s;
  return spec;
}

absl::Status JobManager::ValidateResolved(const v1::JobSpec& spec) const {
  // Bounded strings and budget, and the executor's own rules for every
  // evaluation of the job (convert.h; cuda: the GPU memory of its executor).
  RETURN_IF_ERROR(ValidateJobSpecFields(spec, spec.backend() == v1::BACKEND_CUDA
                                                  ? EvalLimitsFor(pool_->DeviceFor(spec))
                                                  : kernels::EvalLimits{}));
  if (spec.problem().empty()) return InvalidField("spec.problem", "is required");
  if (spec.backend() != v1::BACKEND_HOST && spec.backend() != v1::BACKEND_CUDA) {
    return InvalidField("spec.backend", "expected host or cuda");
  }
  if (spec.world_size() < 1 || spec.world_size() > 64) {
    return InvalidField("spec.world_size",
                        fmt::format("must be in 1..64, got {}", spec.world_size()));
  }
  if (!v1::Dtype_IsValid(spec.dtype())) {
    return InvalidField("spec.dtype",
                        fmt::format("unknown value {}", static_cast<int>(spec.dtype())));
  }
  if (spec.size().size_case() == v1::SizeSpec::kDims) {
    if (spec.size().dims().values().empty()) return InvalidField("spec.size.dims", "is empty");
    for (const auto& [k, v] : spec.size().dims().values()) {
      if (v < 1)
        return InvalidField("spec.size.dims", fmt::format("{} must be >= 1, got {}", k, v));
    }
  }
  const v1::Budget& b = spec.budget();
  if (!Finite(b.wall_seconds()))
    return InvalidField("spec.budget.wall_seconds", "must be finite, >= 0");
  if (b.max_turns() < 0) return InvalidField("spec.budget.max_turns", "must be >= 0");
  if (b.max_evaluations() < 0) return InvalidField("spec.budget.max_evaluations", "must be >= 0");
  if (b.max_tokens() < 0) return InvalidField("spec.budget.max_tokens", "must be >= 0");
  if (!Finite(b.target_speedup()))
    return InvalidField("spec.budget.target_speedup", "must be >= 0");
  if (!Finite(b.max_cost_usd())) return InvalidField("spec.budget.max_cost_usd", "must be >= 0");
  if (b.wall_seconds() == 0 && b.max_turns() == 0 && b.max_evaluations() == 0) {
    return InvalidField(
        "spec.budget",
        "set at least one of wall_seconds, max_turns, max_evaluations (a job must end)");
  }
  const v1::EvalSettings& ev = spec.eval();
  if (ev.trials() < 0 || ev.trials() > 100)
    return InvalidField("spec.eval.trials", "must be in 0..100");
  if (ev.timed_iters() < 0 || ev.timed_iters() > 10000) {
    return InvalidField("spec.eval.timed_iters", "must be in 0..10000");
  }
  if (ev.warmup_iters() < 0) return InvalidField("spec.eval.warmup_iters", "must be >= 0");
  if (!Finite(ev.timeout_s())) return InvalidField("spec.eval.timeout_s", "must be finite, >= 0");
  if (spec.label().size() > 256) return InvalidField("spec.label", "longer than 256 characters");

  const v1::AgentConfig& a = spec.agent();
  switch (a.kind()) {
    case v1::AGENT_KIND_LLM: {
      const v1::LlmConfig& l = a.llm();
      if (l.provider() != v1::PROVIDER_OPENAI && l.provider() != v1::PROVIDER_ANTHROPIC) {
        return InvalidField("spec.agent.llm.provider", "expected openai or anthropic");
      }
      if (l.model().empty()) return InvalidField("spec.agent.llm.model", "is required");
      if (l.base_url().rfind("http://", 0) != 0 && l.base_url().rfind("https://", 0) != 0) {
        return InvalidField("spec.agent.llm.base_url",
                            fmt::format("expected an http(s) URL, got '{}'", l.base_url()));
      }
      break;
    }
    case v1::AGENT_KIND_SEARCH:
      break;  // templates are checked once the problem is known to exist
    case v1::AGENT_KIND_REPLAY:
      break;  // resolved and checked by Admit()
    default:
      return InvalidField("spec.agent.kind", "expected llm, search or replay");
  }
  // The agent's own checks (strategy shapes, ...), with its field names.
  if (absl::Status s = agent::ValidateJobSpec(spec); !s.ok()) {
    return absl::InvalidArgumentError(fmt::format("spec: {}", AsStd(s.message())));
  }
  RETURN_IF_ERROR(pool_->CheckRunnable(spec));
  if (a.kind() == v1::AGENT_KIND_SEARCH &&
      agent::SearchSpace(spec.problem(), spec.backend()).empty()) {
    return InvalidField("spec.agent.kind",
                        fmt::format("the search agent has no kernel templates for "
                                    "'{}' on {}",
                                    spec.problem(), BackendName(spec.backend())));
  }
  // Problem-level checks against what the executors list.
  for (const auto& p : pool_->Problems()) {
    if (p.name() != spec.problem()) continue;
    if (spec.dtype() != v1::DTYPE_UNSPECIFIED && p.dtypes_size() > 0 &&
        std::find(p.dtypes().begin(), p.dtypes().end(), spec.dtype()) == p.dtypes().end()) {
      return InvalidField("spec.dtype", fmt::format("{} is not offered by problem '{}'",
                                                    DtypeName(spec.dtype()), p.name()));
    }
    if (spec.size().size_case() == v1::SizeSpec::kPreset && p.size_presets_size() > 0 &&
        std::find(p.size_presets().begin(), p.size_presets().end(), spec.size().preset()) ==
            p.size_presets().end()) {
      return InvalidField("spec.size.preset", fmt::format("'{}' is not a preset of problem '{}'",
                                                          spec.size().preset(), p.name()));
    }
  }
  return absl::OkStatus();
}
}  // namespace pkforge::orchestrator
