// Schema migrations of the trajectory database, private to storage/ (and its
// tests, which build old-version databases by hand).
//
// The schema version lives in PRAGMA user_version (0 = empty file). Migration
// N takes a version N-1 database to version N; each runs in its own
// BEGIN IMMEDIATE transaction together with the user_version bump, so a crash
// or a failing step leaves the file at the previous version, never between.
// Migrations are append-only: once released, a step's SQL never changes (old
// files in the field were built by it); fix mistakes with a new step.
//
// Threading: functions take a connection the caller uses exclusively.
#pragma once

#include <sqlite3.h>

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pkforge::storage::internal {

struct Migration {
  int version;       // the user_version after this step (1, 2, 3, ...)
  const char* name;  // short description, shown in errors
  const char* sql;   // one or more statements, run inside the step's transaction
};

// All migrations in order; versions are 1..CurrentSchemaVersion() without gaps.
const std::vector<Migration>& Migrations();

absl::StatusOr<int> ReadUserVersion(sqlite3* db);

// The FAILED_PRECONDITION returned for a file newer than this binary; names
// both versions so an operator knows which binary the file needs.
absl::Status NewerSchemaError(int file_version, int known_version);

// Brings the database from its current version to `target_version` (at most
// CurrentSchemaVersion()). FAILED_PRECONDITION, with nothing written, when the
// file is already newer than `target_version`. Safe against another process
// migrating concurrently: each step re-reads the version under the write lock.
absl::Status MigrateTo(sqlite3* db, int target_version);

}  // namespace pkforge::storage::internal
