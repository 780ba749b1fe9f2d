// The rows of the trajectory store: validation of every record before it
// is written (a message naming the field; nothing written), the column
// lists and row readers, and the statements that insert or update rows on a
// connection inside the caller's transaction. Internal to storage/ (used by
// store.cc, store_events.cc, store_open.cc); the contract is store.h's.
//
// Thread safety: pure functions over the connection they are given, which
// the caller owns for the duration of the call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/sqlite_util.h"
#include "storage/store.h"

namespace pkforge::storage::store_internal {

using internal::Connection;
using internal::Statement;

inline constexpr char kJobColumns[] =
    "id, spec_json, problem, backend, world_size, dtype, agent_kind, model, strategy, label, "
    "state, created_wall_us, started_wall_us, finished_wall_us, budget_wall_s, error, "
    "best_speedup, best_evaluation_id, client_request_id";

// kJobColumns with the spec left out (an empty text in its place).
inline constexpr char kJobSummaryColumns[] =
    "id, '' AS spec_json, problem, backend, world_size, dtype, agent_kind, model, strategy, "
    "label, state, created_wall_us, started_wall_us, finished_wall_us, budget_wall_s, error, "
    "best_speedup, best_evaluation_id, client_request_id";

// kEvaluationColumns with result_json reduced to its multi-size score.
inline constexpr char kEvaluationPointColumns[] =
    "id, job_id, turn_id, candidate_sha256, status, correct, speedup, candidate_median_us, "
    "reference_median_us, roofline_fraction, "
    "CASE WHEN json_valid(result_json) THEN json_object('multiSizeScore', "
    "coalesce(json_extract(result_json, '$.multiSizeScore'), "
    "json_extract(result_json, '$.multi_size_score'))) ELSE '' END AS result_json, "
    "executor, queue_ms, compile_ms, run_ms, wall_us, elapsed_ms, timed_iters, trials, "
    "comparable, role";

inline constexpr char kEvaluationColumns[] =
    "id, job_id, turn_id, candidate_sha256, status, correct, speedup, candidate_median_us, "
    "reference_median_us, roofline_fraction, result_json, executor, queue_ms, compile_ms, "
    "run_ms, wall_us, elapsed_ms, timed_iters, trials, comparable, role";

absl::Status Invalid(std::string_view field, std::string_view problem);
absl::Status RequireNonEmpty(std::string_view field, std::string_view v);
absl::Status RequireNonNegative(std::string_view field, int64_t v);
absl::Status RequireFiniteNonNegative(std::string_view field, double v);
absl::Status RequireOptionalFiniteNonNegative(std::string_view field,
                                              const std::optional<double>& v);
absl::Status RequireId(std::string_view field, std::string_view id, std::string_view prefix);
bool IsLowerHex64(std::string_view s);
absl::Status RequireSha256(std::string_view field, std::string_view v);
absl::Status RequireStatusName(std::string_view field, std::string_view v);
absl::Status ValidateJob(const JobRecord& j);
absl::Status ValidateTurn(const TurnRecord& t);
absl::Status ValidateLlmCall(const LlmCallRecord& c);
absl::Status ValidateCandidate(const CandidateRecord& c);
absl::Status ValidateEvaluation(const EvaluationRecord& e);
absl::Status ValidateEvent(const EventRecord& e);
absl::Status JobNotFound(std::string_view job_id);
absl::StatusOr<JobRecord> ReadJobRow(const Statement& st);
absl::StatusOr<std::vector<JobRecord>> ReadJobRows(Statement& st);
EvaluationRecord ReadEvaluationRow(const Statement& st);
absl::Status RequireJobExists(Connection& conn, std::string_view job_id);
absl::Status RequireTurnOfJob(Connection& conn, std::string_view turn_id, std::string_view job_id);
absl::Status InsertJob(Connection& conn, const JobRecord& job, int64_t created);
absl::Status WriteJobState(Connection& conn, std::string_view job_id, JobState state,
                           std::string_view error, int64_t wall);
absl::Status InsertTurn(Connection& conn, const TurnRecord& turn, int64_t started);
absl::Status InsertLlmCall(Connection& conn, const LlmCallRecord& call, int64_t wall);
absl::Status InsertCandidate(Connection& conn, const CandidateRecord& candidate, int64_t first_seen,
                             bool* inserted);
absl::Status InsertEvaluation(Connection& conn, const EvaluationRecord& e, int64_t wall);

}  // namespace pkforge::storage::store_internal
