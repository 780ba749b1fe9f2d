// Builds plateau-analysis inputs (storage/plateau.h) from the trajectory
// database (storage/store.h).
//
// Contract
// - One JobTrajectory per job, one EvalPoint per search evaluation of it (the
//   final re-measurement, role "final", is the job's result and not a point;
//   EvalPoint::comparable is the record's comparable):
//   * elapsed_s = elapsed_ms / 1000 (when the result arrived, since job start).
//   * active_s = elapsed_s minus the executor queue time (queue_ms) of every
//     evaluation of the job that completed at or before this one (its own
//     included: it queued before it completed), clamped to >= 0 and made
//     non-decreasing along elapsed time. This is exact when evaluations run
//     one after another. With overlapping evaluations (best_of_n, tree) queue
//     intervals overlap each other and other evaluations' compile/run time, so
//     subtracting their sum over-counts the waiting and the result is a lower
//     bound of the true active time; the clamps keep it a valid clock.
//   * correct = the evaluation was correct and has a speedup. A correct
//     evaluation without a speedup (no timing) cannot be placed on a speedup
//     curve; it counts as an evaluation, not as a correct one.
// - duration_s: (finished - started) wall time for a finished job; (now -
//   started) for one still running; the last evaluation's elapsed time for a
//   job that never started. Never less than the last evaluation's elapsed
//   time: elapsed_ms and wall times come from different clocks, and a small
//   skew must not turn into "evaluation after the run ended".
// - Unknown (well-formed) job id: NOT_FOUND; a malformed one: the store's
//   INVALID_ARGUMENT. Store errors are returned annotated with the job id.
//
// Thread safety: the functions hold no state; they are as thread-safe as the
// store (TrajectoryStore is safe for concurrent use).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "storage/plateau.h"
#include "storage/store.h"

namespace pkforge::storage {

// The pure conversion behind the loaders, for callers that already hold the
// records. `evaluations` may be in any order; `now_wall_us` is only used for a
// job that started and has not finished.
// The multi-size score of a stored result (EvaluationResult proto3 JSON, as
// result_json holds it; field multi_size_score or multiSizeScore), none when
// absent or not a positive finite number. The key cannot be forged from inside
// a string value: there its closing quote is escaped.
std::optional<double> MultiSizeScore(std::string_view result_json);

JobTrajectory TrajectoryFromRecords(const JobRecord& job,
                                    const std::vector<EvaluationRecord>& evaluations,
                                    int64_t now_wall_us);

absl::StatusOr<JobTrajectory> LoadJobTrajectory(TrajectoryStore& store, std::string_view job_id,
                                                const Clock* clock = SystemClock::Get());

// Every job ListJobs(filter) returns (honouring its limit and pagination), in
// that order.
absl::StatusOr<std::vector<JobTrajectory>> LoadJobTrajectories(
    TrajectoryStore& store, const JobFilter& filter, const Clock* clock = SystemClock::Get());

}  // namespace pkforge::storage
