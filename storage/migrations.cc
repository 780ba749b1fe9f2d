#include "storage/migrations.h"

#include <string>

#include "common/status.h"
#include "fmt/format.h"
#include "storage/sqlite_util.h"
#include "storage/store.h"

namespace pkforge::storage {
namespace internal {
namespace {

// v1: the core tables. Times are integers (microseconds or milliseconds, see
// schema.md) so researchers can do exact arithmetic in SQL; durations measured
// with sub-millisecond resolution (latency, queue/compile/run) are REAL ms.
// The CHECK constraints repeat the store's validation as a second line of
// defence for anything that writes the file directly.
constexpr char kV1CoreTables[] = R"sql(
CREATE TABLE jobs (
  id               TEXT    NOT NULL PRIMARY KEY,
  spec_json        TEXT    NOT NULL,
  problem          TEXT    NOT NULL,
  backend          TEXT    NOT NULL,
  world_size       INTEGER NOT NULL CHECK (world_size >= 1),
  dtype            TEXT    NOT NULL,
  agent_kind       TEXT    NOT NULL,
  model            TEXT    NOT NULL DEFAULT '',
  strategy         TEXT    NOT NULL DEFAULT '',
  label            TEXT    NOT NULL DEFAULT '',
  state            TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed',
                                                     'cancelled', 'interrupted')),
  created_wall_us  INTEGER NOT NULL CHECK (created_wall_us >= 0),
  started_wall_us  INTEGER NOT NULL DEFAULT 0 CHECK (started_wall_us >= 0),
  finished_wall_us INTEGER NOT NULL DEFAULT 0 CHECK (finished_wall_us >= 0),
  budget_wall_s    REAL    NOT NULL DEFAULT 0 CHECK (budget_wall_s >= 0),
  error            TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE turns (
  id              TEXT    NOT NULL PRIMARY KEY,
  job_id          TEXT    NOT NULL REFERENCES jobs (id),
  turn_index      INTEGER NOT NULL CHECK (turn_index >= 0),
  started_wall_us INTEGER NOT NULL CHECK (started_wall_us >= 0),
  elapsed_ms      INTEGER NOT NULL CHECK (elapsed_ms >= 0),
  note            TEXT    NOT NULL DEFAULT '',
  UNIQUE (job_id, turn_index)
);

CREATE TABLE llm_calls (
  id                TEXT    NOT NULL PRIMARY KEY,
  job_id            TEXT    NOT NULL REFERENCES jobs (id),
  turn_id           TEXT    REFERENCES turns (id),
  provider          TEXT    NOT NULL,
  model             TEXT    NOT NULL,
  prompt            TEXT    NOT NULL,
  reply             TEXT    NOT NULL,
  prompt_tokens     INTEGER NOT NULL CHECK (prompt_tokens >= 0),
  completion_tokens INTEGER NOT NULL CHECK (completion_tokens >= 0),
  latency_ms        REAL    NOT NULL CHECK (latency_ms >= 0),
  cost_usd          REAL    NOT NULL CHECK (cost_usd >= 0),
  error             TEXT    NOT NULL DEFAULT '',
  wall_us           INTEGER NOT NULL CHECK (wall_us >= 0),
  elapsed_ms        INTEGER NOT NULL CHECK (elapsed_ms >= 0)
);

CREATE TABLE candidates (
  sha256             TEXT    NOT NULL PRIMARY KEY CHECK (length(sha256) = 64),
  source             TEXT    NOT NULL,
  backend            TEXT    NOT NULL,
  first_seen_wall_us INTEGER NOT NULL CHECK (first_seen_wall_us >= 0)
);

CREATE TABLE evaluations (
  id                  TEXT    NOT NULL PRIMARY KEY,
  job_id              TEXT    NOT NULL REFERENCES jobs (id),
  turn_id             TEXT    REFERENCES turns (id),
  candidate_sha256    TEXT    NOT NULL REFERENCES candidates (sha256),
  status              TEXT    NOT NULL,
  correct             INTEGER NOT NULL CHECK (correct IN (0, 1)),
  speedup             REAL    CHECK (speedup > 0),
  candidate_median_us REAL    CHECK (candidate_median_us >= 0),
  reference_median_us REAL    CHECK (reference_median_us >= 0),
  roofline_fraction   REAL    CHECK (roofline_fraction >= 0),
  result_json         TEXT    NOT NULL DEFAULT '',
  executor            TEXT    NOT NULL DEFAULT '',
  queue_ms            REAL    NOT NULL DEFAULT 0 CHECK (queue_ms >= 0),
  compile_ms          REAL    NOT NULL DEFAULT 0 CHECK (compile_ms >= 0),
  run_ms              REAL    NOT NULL DEFAULT 0 CHECK (run_ms >= 0),
  wall_us             INTEGER NOT NULL CHECK (wall_us >= 0),
  elapsed_ms          INTEGER NOT NULL CHECK (elapsed_ms >= 0)
);

-- A rowid table (not WITHOUT ROWID) on purpose: payloads can be large, and the
-- rowid gives researchers the global commit order of events across jobs.
CREATE TABLE events (
  job_id       TEXT    NOT NULL REFERENCES jobs (id),
  seq          INTEGER NOT NULL CHECK (seq >= 1),
  wall_us      INTEGER NOT NULL CHECK (wall_us >= 0),
  elapsed_ms   INTEGER NOT NULL CHECK (elapsed_ms >= 0),
  type         TEXT    NOT NULL,
  payload_json TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (job_id, seq)
);
)sql";

// v2: the best-so-far columns (maintained by AddEvaluation, backfilled here
// from existing evaluations: the first correct evaluation in insertion order
// with the highest speedup, the same rule AddEvaluation applies) and the
// indexes behind ListJobs / ListEvaluations / ListLlmCalls. The ALTERs come
// first so that a failing CREATE INDEX proves the whole step rolls back.
constexpr char kV2BestAndIndexes[] = R"sql(
ALTER TABLE jobs ADD COLUMN best_speedup REAL CHECK (best_speedup > 0);
ALTER TABLE jobs ADD COLUMN best_evaluation_id TEXT REFERENCES evaluations (id);

UPDATE jobs SET best_evaluation_id = (
  SELECT e.id FROM evaluations AS e
  WHERE e.job_id = jobs.id AND e.correct = 1 AND e.speedup IS NOT NULL
  ORDER BY e.speedup DESC, e.rowid ASC LIMIT 1);
UPDATE jobs SET best_speedup = (
  SELECT e.speedup FROM evaluations AS e WHERE e.id = jobs.best_evaluation_id)
WHERE best_evaluation_id IS NOT NULL;

CREATE INDEX jobs_by_state ON jobs (state, id);
CREATE INDEX jobs_by_problem ON jobs (problem, id);
CREATE INDEX jobs_by_model ON jobs (model, id);
CREATE INDEX jobs_by_label ON jobs (label, id);
CREATE INDEX llm_calls_by_job ON llm_calls (job_id, elapsed_ms);
CREATE INDEX evaluations_by_job ON evaluations (job_id, elapsed_ms);
CREATE INDEX evaluations_by_candidate ON evaluations (candidate_sha256);
)sql";

// v3: retries of one logical LLM call are recorded in the call itself.
// Existing rows predate retry accounting and count as one attempt.
constexpr char kV3LlmAttempts[] = R"sql(
ALTER TABLE llm_calls ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1 CHECK (attempts >= 1);
)sql";

// v4: SubmitJob's client_request_id, stored with the job so a retried
// submission finds the job made by the first call even after a restart.
// Existing jobs predate it and get '' ("none"); the partial unique index makes
// every non-empty id name at most one job while '' never collides, and serves
// the lookup by id (queries must repeat `client_request_id <> ''` to use it).
constexpr char kV4ClientRequestId[] = R"sql(
ALTER TABLE jobs ADD COLUMN client_request_id TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX jobs_by_client_request_id ON jobs (client_request_id)
  WHERE client_request_id <> '';
)sql";

// v5: the settings each evaluation ran at and whether they were the job's
// own (successive-halving rungs time with fewer iterations: such results are
// kept apart from the best-so-far axis), and the role of an evaluation: the
// agent's search, or the final fresh re-measurement of the chosen candidate.
// Existing rows predate both: recorded as comparable search evaluations with
// unknown (0) settings, so their best and curves stay what they were.
constexpr char kV5EvaluationSettings[] = R"sql(
ALTER TABLE evaluations ADD COLUMN timed_iters INTEGER NOT NULL DEFAULT 0 CHECK (timed_iters >= 0);
ALTER TABLE evaluations ADD COLUMN trials INTEGER NOT NULL DEFAULT 0 CHECK (trials >= 0);
ALTER TABLE evaluations ADD COLUMN comparable INTEGER NOT NULL DEFAULT 1
  CHECK (comparable IN (0, 1));
ALTER TABLE evaluations ADD COLUMN role TEXT NOT NULL DEFAULT 'search'
  CHECK (role IN ('search', 'final'));
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const auto* const kMigrations = new std::vector<Migration>{
      {1, "core tables", kV1CoreTables},
      {2, "jobs.best_* columns and query indexes", kV2BestAndIndexes},
      {3, "llm_calls.attempts", kV3LlmAttempts},
      {4, "jobs.client_request_id", kV4ClientRequestId},
      {5, "evaluations.timed_iters, trials, comparable, role", kV5EvaluationSettings},
  };
  return *kMigrations;
}

absl::StatusOr<int> ReadUserVersion(sqlite3* db) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(rc, db, "reading user_version");
  rc = sqlite3_step(stmt);
  int version = rc == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : 0;
  absl::Status s =
      rc == SQLITE_ROW ? absl::OkStatus() : SqliteError(rc, db, "reading user_version");
  sqlite3_finalize(stmt);
  RETURN_IF_ERROR(s);
  return version;
}

absl::Status NewerSchemaError(int file_version, int known_version) {
  return absl::FailedPreconditionError(
      fmt::format("database schema version {} is newer than this binary's schema version {}; "
                  "upgrade pkforge to open it",
                  file_version, known_version));
}

namespace {

absl::Status Exec(sqlite3* db, const char* sql, std::string_view what) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  absl::Status mapped = SqliteError(rc, nullptr, what);
  return absl::Status(mapped.code(), fmt::format("sqlite: {}: {} (code {})", what, msg, rc));
}

// One step under the write lock. Returns OK without writing when another
// process already applied it.
absl::Status ApplyStep(sqlite3* db, const Migration& m) {
  RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE", "beginning migration"));
  auto step = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(int version, ReadUserVersion(db));
    if (version >= m.version) return absl::OkStatus();
    if (version != m.version - 1) {
      return absl::InternalError(
          fmt::format("database is at schema version {}, expected {}", version, m.version - 1));
    }
    RETURN_IF_ERROR(Exec(db, m.sql, "running migration"));
    // PRAGMA takes no bound parameters; the value is our own integer.
    std::string bump = fmt::format("PRAGMA user_version = {}", m.version);
    RETURN_IF_ERROR(Exec(db, bump.c_str(), "setting user_version"));
    return Exec(db, "COMMIT", "committing migration");
  };
  absl::Status s = step();
  if (!s.ok()) {
    if (sqlite3_get_autocommit(db) == 0) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return Annotate(s, fmt::format("migration {} ({})", m.version, m.name));
  }
  if (sqlite3_get_autocommit(db) == 0) {
    // The early "already applied" return leaves the read transaction open.
    RETURN_IF_ERROR(Exec(db, "COMMIT", "ending migration"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MigrateTo(sqlite3* db, int target_version) {
  if (target_version < 0 || target_version > CurrentSchemaVersion()) {
    return absl::InvalidArgumentError(fmt::format("no schema version {} (this binary knows 0..{})",
                                                  target_version, CurrentSchemaVersion()));
  }
  ASSIGN_OR_RETURN(int version, ReadUserVersion(db));
  if (version > target_version) return NewerSchemaError(version, target_version);
  for (const Migration& m : Migrations()) {
    if (m.version <= version || m.version > target_version) continue;
    RETURN_IF_ERROR(ApplyStep(db, m));
  }
  // A concurrent newer binary could have moved past us between steps.
  ASSIGN_OR_RETURN(version, ReadUserVersion(db));
  if (version > target_version) return NewerSchemaError(version, target_version);
  return absl::OkStatus();
}

}  // namespace internal

int CurrentSchemaVersion() { return internal::Migrations().back().version; }

}  // namespace pkforge::storage
