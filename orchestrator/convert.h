// The orchestrator's side of the API <-> storage conversions: admission
// checks of a JobSpec and the row of a newly submitted job. Everything that
// reads the store back into the API (names, states, jobs, events,
// trajectories, plateau reports) lives in the convert library
// (convert/convert.h), shared with the CLI's offline commands; it is
// re-exported here under the orchestrator's namespace for its callers.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/prompt.h"
#include "convert/convert.h"
#include "kernels/harness/eval_validation.h"
#include "pkforge/v1/orchestrator.pb.h"
#include "storage/plateau.h"
#include "storage/store.h"

namespace pkforge::orchestrator {

// The store -> API view (convert/convert.h).
using convert::AgentKindName;
using convert::BackendName;
using convert::EventFromRecord;
using convert::EventToRecord;
using convert::FromJson;
using convert::FromProtoState;
using convert::IsTerminal;
using convert::JobFromRecord;
using convert::PlateauToProto;
using convert::ProtoStateName;
using convert::StatusName;
using convert::StrategyName;
using convert::ToJson;
using convert::ToProtoState;
// "f32" | "bf16" | ...: the one table of v1 enum names (common/v1_names.h,
// re-exported by agent/prompt.h) for prompts, messages and stored specs.
using agent::DtypeName;

// Longest accepted client strings of a JobSpec (bytes). Errors never quote
// more than a short prefix of a client string (kernels::ClientText).
inline constexpr size_t kMaxModelBytes = 256;
inline constexpr size_t kMaxBaseUrlBytes = 2048;
inline constexpr size_t kMaxEnvNameBytes = 256;
inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxAlgorithmBytes = 64;
// Longest wall budget: 30 days (larger ones overflow deadlines in microseconds).
inline constexpr double kMaxWallSeconds = 30 * 24 * 3600.0;

// The evaluation request the agents build from `spec` (no source).
v1::EvaluateRequest EvaluationOf(const v1::JobSpec& spec);
// Limits for validating `spec` against the executor `device` that would run
// it (cuda: its smallest GPU's memory); the executor defaults otherwise.
kernels::EvalLimits EvalLimitsFor(const absl::StatusOr<v1::DeviceInfo>& device);
// The checks of a JobSpec that need neither the executors nor the agent kind's
// own rules: every client string bounded, the budget bounded, and the rules
// every evaluation of the job must pass on an executor (the executor's own
// validator, kernels/harness/eval_validation.h, with "spec." field names).
absl::Status ValidateJobSpecFields(const v1::JobSpec& spec, const kernels::EvalLimits& limits);

// The storage row of a newly submitted job (state queued, created now).
absl::StatusOr<storage::JobRecord> NewJobRecord(const std::string& id, const v1::JobSpec& spec,
                                                int64_t created_wall_us);

}  // namespace pkforge::orchestrator
