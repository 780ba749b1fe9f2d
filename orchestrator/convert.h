// Conversions between the v1 API (protobuf) and the storage records, in one
// place so the names written to SQLite ("host", "bf16", "llm", ...) and the
// JSON shapes of event payloads are defined once.
//
// Event payloads: events.type is the name of the v1::Event payload case
// ("state_changed", "turn_started", "llm_call", "evaluation_started",
// "evaluation_finished", "best_improved", "log") and events.payload_json is
// the proto3 JSON of that payload message; job_id, seq, wall_us and
// elapsed_ms live in their own columns. EventFromRecord() rebuilds the same
// v1::Event that was streamed live, so a replay is indistinguishable from
// following.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/prompt.h"
#include "kernels/harness/eval_validation.h"
#include "pkforge/v1/orchestrator.pb.h"
#include "storage/plateau.h"
#include "storage/store.h"

namespace pkforge::orchestrator {

std::string BackendName(v1::Backend b);  // "host" | "cuda" | "unspecified"
// "f32" | "bf16" | ...: the agent's names (agent/prompt.h), one table for
// prompts, messages and stored specs.
using agent::DtypeName;
std::string AgentKindName(v1::AgentKind k);        // "llm" | "search" | "replay"
std::string StrategyName(const v1::AgentConfig& a);  // "sequential" | ... | "successive_halving"
std::string StatusName(v1::EvaluationResult::Status s);  // "OK", "COMPILE_ERROR", ...

v1::JobState ToProtoState(storage::JobState s);
storage::JobState FromProtoState(v1::JobState s);  // UNSPECIFIED maps to queued
bool IsTerminal(v1::JobState s);
std::string_view ProtoStateName(v1::JobState s);  // "queued", "running", ...

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& m);
absl::Status FromJson(std::string_view json, google::protobuf::Message* m);

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

// The API view of a stored job: the row plus its aggregates. `stop_reason` is
// not stored in the row; pass it when known (from the last state event).
absl::StatusOr<v1::Job> JobFromRecord(const storage::JobRecord& job,
                                      const storage::JobStats& stats, int64_t now_wall_us);

// Event <-> row, see the top comment.
absl::StatusOr<storage::EventRecord> EventToRecord(const v1::Event& event);
absl::StatusOr<v1::Event> EventFromRecord(const storage::EventRecord& record);

// The storage report as the API message.
v1::PlateauReport PlateauToProto(const storage::PlateauReport& report, bool include_curves);

}  // namespace pkforge::orchestrator
