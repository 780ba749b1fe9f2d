#include "orchestrator/convert.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <utility>

#include "common/log_text.h"
#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::orchestrator {

v1::EvaluateRequest EvaluationOf(const v1::JobSpec& spec) {
  // As agent/job_context.cc builds each evaluation of the job.
  v1::EvaluateRequest r;
  r.set_problem(spec.problem());
  r.set_backend(spec.backend());
  r.set_world_size(spec.world_size());
  r.set_dtype(spec.dtype());
  *r.mutable_size() = spec.size();
  r.set_trials(spec.eval().trials());
  r.set_warmup_iters(spec.eval().warmup_iters());
  r.set_timed_iters(spec.eval().timed_iters());
  r.set_timeout_s(spec.eval().timeout_s());
  r.set_profile(spec.eval().profile());
  r.set_sanitize(spec.eval().sanitize());
  r.set_hidden_shapes(spec.eval().hidden_shapes());
  *r.mutable_size_ladder() = spec.eval().size_ladder();
  r.set_precise_timing(spec.eval().precise_timing());
  return r;
}

kernels::EvalLimits EvalLimitsFor(const absl::StatusOr<v1::DeviceInfo>& device) {
  kernels::EvalLimits limits;
  if (!device.ok()) return limits;
  for (const auto& g : device->gpus()) {
    if (g.memory_bytes() > 0 &&
        (limits.gpu_memory_bytes == 0 || g.memory_bytes() < limits.gpu_memory_bytes)) {
      limits.gpu_memory_bytes = g.memory_bytes();
    }
  }
  return limits;
}

namespace {

absl::Status CheckLength(const std::string& field, const std::string& value, size_t max) {
  if (value.size() <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("{}: {} bytes, longer than {} (starts {})", field, value.size(), max,
                  kernels::ClientText(value, 32)));
}

}  // namespace

absl::Status ValidateJobSpecFields(const v1::JobSpec& spec, const kernels::EvalLimits& limits) {
  // Strings first, so no later message can quote a huge one.
  const v1::AgentConfig& a = spec.agent();
  RETURN_IF_ERROR(CheckLength("spec.problem", spec.problem(), kernels::kMaxNameBytes));
  RETURN_IF_ERROR(CheckLength("spec.label", spec.label(), 256));
  RETURN_IF_ERROR(CheckLength("spec.agent.search_algorithm", a.search_algorithm(),
                              kMaxAlgorithmBytes));
  RETURN_IF_ERROR(CheckLength("spec.agent.replay_dir", a.replay_dir(), kMaxPathBytes));
  RETURN_IF_ERROR(CheckLength("spec.agent.llm.model", a.llm().model(), kMaxModelBytes));
  RETURN_IF_ERROR(CheckLength("spec.agent.llm.base_url", a.llm().base_url(), kMaxBaseUrlBytes));
  RETURN_IF_ERROR(CheckLength("spec.agent.llm.api_key_env", a.llm().api_key_env(),
                              kMaxEnvNameBytes));
  // Printed by `pkforge jobs` and `show` and logged: a control character
  // would forge table rows or rewrite the reader's terminal (API fuzzing,
  // session 16), as the executor already refuses for client_tag.
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string*>{"spec.label", &spec.label()},
        {"spec.agent.llm.model", &a.llm().model()}}) {
    if (auto ctl = FirstControlCharacter(*value)) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: control character U+{:04X} at byte {} (one line of printable text expected)",
          field, ctl->code_point, ctl->offset));
    }
  }
  if (spec.size().size_case() == v1::SizeSpec::kPreset) {
    RETURN_IF_ERROR(CheckLength("spec.size.preset", spec.size().preset(), kernels::kMaxNameBytes));
  }
  for (const auto& [name, value] : spec.size().dims().values()) {
    RETURN_IF_ERROR(CheckLength("spec.size.dims", name, kernels::kMaxNameBytes));
  }
  const double wall = spec.budget().wall_seconds();
  if (!(wall >= 0) || wall > kMaxWallSeconds) {
    return absl::InvalidArgumentError(fmt::format(
        "spec.budget.wall_seconds: {} (0..{}, 0 = no wall budget)", wall, kMaxWallSeconds));
  }
  v1::EvaluateRequest r = EvaluationOf(spec);
  // The final re-measurement's request is the same with hidden shapes and
  // precise timing where the job asks for them.
  if (spec.eval().final_hidden_shapes()) r.set_hidden_shapes(true);
  if (spec.eval().final_precise_timing()) r.set_precise_timing(true);
  return kernels::ValidateEvaluation(r, limits, {.config = "spec.", .settings = "spec.eval."});
}

absl::StatusOr<storage::JobRecord> NewJobRecord(const std::string& id, const v1::JobSpec& spec,
                                                int64_t created_wall_us) {
  storage::JobRecord r;
  r.id = id;
  if (spec.agent().llm().api_key().empty()) {
    ASSIGN_OR_RETURN(r.spec_json, ToJson(spec));
  } else {
    // A client's own provider key is never stored (JobManager::Admit already
    // clears it; this holds for any other caller too).
    v1::JobSpec stored = spec;
    stored.mutable_agent()->mutable_llm()->clear_api_key();
    ASSIGN_OR_RETURN(r.spec_json, ToJson(stored));
  }
  r.problem = spec.problem();
  r.backend = BackendName(spec.backend());
  r.world_size = spec.world_size();
  // The store needs a name; "default" says the executor picks the problem's.
  r.dtype = spec.dtype() == v1::DTYPE_UNSPECIFIED ? "default" : DtypeName(spec.dtype());
  r.agent_kind = AgentKindName(spec.agent().kind());
  r.model = spec.agent().kind() == v1::AGENT_KIND_LLM ? spec.agent().llm().model() : "";
  r.strategy = StrategyName(spec.agent());
  r.label = spec.label();
  r.state = storage::JobState::kQueued;
  r.created_wall_us = created_wall_us;
  r.budget_wall_s = spec.budget().wall_seconds();
  return r;
}

}  // namespace pkforge::orchestrator
