// Offline reading of a trajectory database for the `--db` commands (jobs,
// trajectory, plateau, show): the file is opened read-only and never created,
// migrated or written (storage/store.h "Read-only opening", storage/schema.md).
//
// Thread safety: plain functions; the returned store is thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "pkforge/v1/orchestrator.pb.h"
#include "storage/store.h"

namespace pkforge::cli {

// The access mode for `db`: kImmutable when the file cannot change under us
// (no write permission on it or its directory, and no non-empty -wal beside
// it), kReadOnly otherwise (a running orchestrator's commits stay visible).
storage::TrajectoryStore::Options::Access DbAccessFor(const std::string& db);

// Opens `db` read-only (mode from DbAccessFor). NOT_FOUND when missing,
// INVALID_ARGUMENT naming --db when empty.
absl::StatusOr<std::unique_ptr<storage::TrajectoryStore>> OpenDb(const std::string& db);

// `pkforge show JOB --db FILE`: the trajectory as GetTrajectory(include_sources)
// returns it (convert::LoadTrajectory, the same conversion the orchestrator
// uses): the job with its aggregates, stop reason and final result, every
// evaluated candidate with its source, the best-so-far curve.
absl::StatusOr<v1::Trajectory> OfflineShowTrajectory(const std::string& db,
                                                     const std::string& job_id);

}  // namespace pkforge::cli
