// The v1 API view of the trajectory database (storage -> proto), defined once
// for the orchestrator (GetJob, ListJobs, GetTrajectory, WatchJob replays,
// AnalyzePlateau) and the CLI's offline `--db` commands (show, report, jobs),
// so both print the same job, the same best-so-far curve and the same final
// result.
//
// Contract
// - Names written to SQLite and shown to people ("host", "llm",
//   "successive_halving", "OK", "queued") come from here (the backend, dtype
//   and status names from common/v1_names.h, the one table the agent's
//   prompts use too).
// - Event payloads: events.type is the name of the v1::Event payload case
//   ("state_changed", "turn_started", "llm_call", "evaluation_started",
//   "evaluation_finished", "best_improved", "log", "evaluation_aborted",
//   "waiting_for_executor") and events.payload_json is the proto3 JSON of that
//   payload message; job_id, seq, wall_us and elapsed_ms live in their own
//   columns. EventFromRecord() rebuilds the same v1::Event that was streamed
//   live, so a replay is indistinguishable from following; an unknown type
//   (an older or newer writer) becomes a log line, never dropped.
// - Stored JSON (jobs.spec_json, evaluations.result_json) is read leniently:
//   fields a newer writer added are ignored, malformed JSON is DATA_LOSS
//   naming the row. JSON coming from a client (FromJson) is strict.
// - Comparable results (issue #18 item 5): Trajectory.best_curve, Job.best_*
//   and the plateau inputs use search evaluations at the job's own settings
//   only; evaluations at other settings (search rungs) are flagged
//   other_settings and counted apart (Job.other_settings_*); the final fresh
//   re-measurement is flagged final_measurement and is the job's result
//   (Job.final_*), never a point of the curve.
//
// Thread safety: pure functions of their arguments; the loaders are as
// thread-safe as the store (TrajectoryStore is).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/v1_names.h"
#include "pkforge/v1/orchestrator.pb.h"
#include "storage/plateau.h"
#include "storage/store.h"

namespace pkforge::convert {

// Backend and evaluation status names (and the status of a stored name:
// STATUS_UNSPECIFIED for "" or an unknown one) are the project's one table,
// common/v1_names.h, re-exported for this library's callers.
using pkforge::BackendName;  // "host" | "cuda" | "unspecified"
using pkforge::ParseStatus;
using pkforge::StatusName;  // "OK", "COMPILE_ERROR", ...
std::string AgentKindName(v1::AgentKind k);          // "llm" | "search" | "replay"
std::string StrategyName(const v1::AgentConfig& a);  // "sequential" | ... | "successive_halving"

v1::JobState ToProtoState(storage::JobState s);
storage::JobState FromProtoState(v1::JobState s);  // UNSPECIFIED maps to queued
bool IsTerminal(v1::JobState s);
std::string_view ProtoStateName(v1::JobState s);  // "queued", "running", ...

// Proto3 JSON with the message's JSON names (what the orchestrator stores).
absl::StatusOr<std::string> ToJson(const google::protobuf::Message& m);
// Strict: unknown fields are INVALID_ARGUMENT (JSON from a client).
absl::Status FromJson(std::string_view json, google::protobuf::Message* m);
// Lenient, for JSON read back from the database: unknown fields ignored;
// malformed JSON is DATA_LOSS prefixed with `what` (e.g. "job <id>: spec_json").
absl::Status FromStoredJson(std::string_view json, google::protobuf::Message* m,
                            std::string_view what);

// The API view of a stored job: the row plus its aggregates. `stop_reason` is
// not stored in the row (see LoadJob).
absl::StatusOr<v1::Job> JobFromRecord(const storage::JobRecord& job,
                                      const storage::JobStats& stats, int64_t now_wall_us);
// JobFromRecord of the stored job with its stop reason: the reason of its
// terminal state event. NOT_FOUND for an unknown job.
absl::StatusOr<v1::Job> LoadJob(storage::TrajectoryStore& store, std::string_view job_id,
                                int64_t now_wall_us);
// The other direction, for the CLI's tables of remote answers: the fields of
// a JobRecord a v1::Job carries (spec_json and dtype are left empty).
storage::JobRecord JobRecordFromProto(const v1::Job& job);

// Event <-> row, see the top comment.
absl::StatusOr<storage::EventRecord> EventToRecord(const v1::Event& event);
absl::StatusOr<v1::Event> EventFromRecord(const storage::EventRecord& record);

struct TrajectoryOptions {
  bool include_sources = false;   // Candidate.source
  bool include_llm_text = false;  // LlmCall.prompt / reply
  bool include_results = false;   // EvaluationRecord.result
};
// The trajectory of a stored job as GetTrajectory returns it: the job
// (LoadJob), turns, LLM calls, every evaluation (active_s as
// storage/plateau_loader.h defines it; settings, other_settings,
// final_measurement), each evaluated candidate once, and the best-so-far curve
// of the comparable search evaluations.
absl::StatusOr<v1::Trajectory> LoadTrajectory(storage::TrajectoryStore& store,
                                              std::string_view job_id,
                                              const TrajectoryOptions& options,
                                              int64_t now_wall_us);

// The storage plateau report as the API message.
v1::PlateauReport PlateauToProto(const storage::PlateauReport& report, bool include_curves);

}  // namespace pkforge::convert
