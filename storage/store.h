// TrajectoryStore: the SQLite trajectory database (design section 9).
//
// One database file holds every job, turn, LLM call, candidate (deduplicated by
// sha256 of its source), evaluation and event. Researchers query it offline, so
// the schema is part of the product: see storage/schema.md.
//
// Contract
// - Open() creates the file or upgrades an older schema through the numbered
//   migrations in migrations.cc, inside one transaction per step; a file whose
//   schema version is newer than this binary knows is refused with
//   FAILED_PRECONDITION naming both versions (never touched).
// - WAL journal, foreign keys on, synchronous=FULL: every write is durable
//   (fsynced in the WAL) before the call returns. A caller may acknowledge a
//   write to a client as soon as the call returns OK.
// - Events get a per-job sequence number (1, 2, 3, ...) assigned inside the
//   committing transaction: strictly increasing, no gaps, no duplicates, even
//   with many threads appending to one job.
// - Group commit: every write (jobs, rows, events) joins one queue; a batch
//   of concurrent callers' writes is committed in one transaction with one
//   fsync, each caller returning only after its batch is durable. Each write
//   is still all-or-nothing on its own (statement rollback, or a savepoint
//   for writes of several statements): a caller whose write fails gets its
//   own error and leaves no trace, while the others in the batch go ahead.
//   Only a failure of the batch itself (BEGIN, COMMIT, I/O) fails every
//   caller in it.
// - AppendEventWith() commits one agent step -- its rows (turn, LLM call,
//   candidate, evaluation) and its event -- as one write: after a crash the
//   rows are either all present together with their event or all absent, so
//   a watcher never sees an event whose rows are missing and a resumed job
//   never finds rows without the event that announced them.
// - Bad input (unknown job id, negative times, NaN speedups, empty required
//   fields) is rejected with INVALID_ARGUMENT or NOT_FOUND and writes nothing.
// - Times: wall_us is Unix microseconds; elapsed_ms is milliseconds since the
//   job started (wall clock, includes executor queueing); queue_ms/compile_ms/
//   run_ms are the executor's breakdown of one evaluation, so "active" time
//   (elapsed minus time spent waiting in executor queues) can be analysed.
//   A wall time of 0 passed to a write means "now" (Options::clock), except
//   JobRecord::started_wall_us / finished_wall_us, where 0 means "not yet".
//
// Threading
// - A TrajectoryStore is safe for concurrent use from any number of threads.
//   Writes are serialised on one writer connection (SQLite allows one writer),
//   driven by whichever caller currently leads the group commit;
//   reads use a small pool of read-only connections and run concurrently with
//   writes (WAL readers never block the writer and see committed data only).
// - Several processes may open the same file (e.g. `pkforge trajectory --db`
//   while the orchestrator runs); only one should write.
//
// Read-only opening (Options::access, for offline analysis)
// - kReadOnly / kImmutable never create, migrate or write the file: every
//   connection is SQLITE_OPEN_READONLY (URI mode=ro), kImmutable adds
//   immutable=1 (no locks, no -wal/-shm files: only for a file nothing can
//   change, e.g. an archived copy without a -wal; a WAL-mode file in a
//   directory the reader cannot write can only be read this way). Every write
//   method returns FAILED_PRECONDITION.
// - A file at the current schema version is read in place, and a kReadOnly
//   reader sees a live writer's commits. A file of an older version (1 ..
//   current-1) is read through a private in-memory copy that the migrations
//   upgrade (the file itself stays untouched; memory ~ the file's size; one
//   read connection). A newer file is refused as by kReadWrite; a file with
//   user_version 0 is FAILED_PRECONDITION (not a trajectory database); a
//   missing file is NOT_FOUND.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"

namespace pkforge::storage {

// Current schema version of this binary (the highest migration number).
int CurrentSchemaVersion();

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled, kInterrupted };
std::string_view JobStateName(JobState s);  // "queued", "running", ...
absl::StatusOr<JobState> ParseJobState(std::string_view name);
bool IsTerminal(JobState s);

struct JobRecord {
  std::string id;         // NewId("job")
  std::string spec_json;  // the full job spec (proto3 JSON), opaque here
  std::string problem;    // denormalised from the spec for queries
  std::string backend;    // "cuda" | "host"
  int32_t world_size = 1;
  std::string dtype;       // "bf16" | "f16" | "f32" | ...
  std::string agent_kind;  // "llm" | "search" | "replay"
  std::string model;       // LLM model name, "" for non-LLM agents
  std::string strategy;    // "sequential" | "best_of_n" | "tree" | ...
  std::string label;       // free-form experiment label for grouping
  JobState state = JobState::kQueued;
  int64_t created_wall_us = 0;
  int64_t started_wall_us = 0;   // 0 until running
  int64_t finished_wall_us = 0;  // 0 until terminal
  double budget_wall_s = 0;      // the wall-clock budget, 0 = none
  std::string error;             // why it failed / was interrupted
  // SubmitJob's client_request_id ("" = none). A non-empty id names at most
  // one job in the database (the idempotency key of submissions).
  std::string client_request_id;
  // Maintained by the store from evaluations: best correct speedup so far and
  // the evaluation that achieved it (empty when none is correct yet), over
  // the comparable search evaluations only (EvaluationRecord::comparable).
  std::optional<double> best_speedup;
  std::string best_evaluation_id;
};

struct TurnRecord {
  std::string id;  // NewId("turn")
  std::string job_id;
  int32_t index = 0;  // 0-based within the job, unique per job
  int64_t started_wall_us = 0;
  int64_t elapsed_ms = 0;  // at turn start
  std::string note;        // e.g. strategy step ("expand node 3")
};

struct LlmCallRecord {
  std::string id;  // NewId("llm")
  std::string job_id;
  std::string turn_id;   // may be empty
  std::string provider;  // "openai" | "anthropic" | ...
  std::string model;
  std::string prompt;  // full request messages (JSON)
  std::string reply;   // full reply text
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double latency_ms = 0;
  double cost_usd = 0;
  int32_t attempts = 1;  // including retries
  std::string error;     // empty on success
  int64_t wall_us = 0;
  int64_t elapsed_ms = 0;
};

struct CandidateRecord {
  std::string sha256;  // of source; primary key (dedup)
  std::string source;
  std::string backend;
  int64_t first_seen_wall_us = 0;
};

struct EvaluationRecord {
  std::string id;  // NewId("eval")
  std::string job_id;
  std::string turn_id;            // may be empty
  std::string candidate_sha256;   // must exist in candidates
  std::string status;             // OK | COMPILE_ERROR | SETUP_ERROR | RUNTIME_ERROR |
                                  // TIMEOUT | WRONG_OUTPUT | CHEAT_DETECTED
  bool correct = false;           // status == OK
  std::optional<double> speedup;  // median(ref)/median(cand); finite, > 0
  std::optional<double> candidate_median_us;
  std::optional<double> reference_median_us;
  std::optional<double> roofline_fraction;  // 0..1 (can exceed 1 only if suspicious)
  std::string result_json;                  // the full EvaluationResult (proto3 JSON), opaque here
  std::string executor;                     // executor address/name that ran it
  double queue_ms = 0;
  double compile_ms = 0;
  double run_ms = 0;
  int64_t wall_us = 0;     // when the result arrived
  int64_t elapsed_ms = 0;  // since job start, when the result arrived
  // The settings it was requested with (0 = the executor's default).
  int32_t timed_iters = 0;
  int32_t trials = 0;
  // It ran at the job's own evaluation settings (the spec's size, trials,
  // warm-up and timed iterations). Only comparable evaluations make the job's
  // best (jobs.best_*) and best-so-far curves: a successive-halving rung timed
  // with fewer iterations is noisier and is not put on the same axis.
  bool comparable = true;
  // kRoleSearch: the agent's. kRoleFinal: the orchestrator's fresh
  // re-measurement of the chosen candidate at the job's end (JobStats.final_*);
  // never part of the best or the curves, never counted in JobStats.evaluations.
  std::string role = "search";
};
inline constexpr char kRoleSearch[] = "search";
inline constexpr char kRoleFinal[] = "final";

struct EventRecord {
  std::string job_id;
  int64_t seq = 0;  // assigned by the store on append
  int64_t wall_us = 0;
  int64_t elapsed_ms = 0;
  std::string type;          // e.g. "job_started", "evaluation", "llm_call"
  std::string payload_json;  // opaque JSON
};

// The rows one agent step records, committed in the same transaction as the
// step's event by AppendEventWith. Each pointer is optional (null = no such
// row) and must stay valid for the call. Every row's job_id must be the
// event's job. Within the step they are written in dependency order: turn,
// candidate, LLM call, evaluation, so an LLM call or evaluation may point to
// the turn and candidate of the same step.
// A change of the job's row (as by UpdateJobState) that commits with a step's
// event: a job's terminal event and its terminal row are then one write, so no
// reader or restart ever finds one without the other.
struct JobStateChange {
  JobState state = JobState::kRunning;
  std::string error;
  int64_t wall_us = 0;  // 0 = now
};

struct StepRows {
  const TurnRecord* turn = nullptr;
  const LlmCallRecord* llm_call = nullptr;
  const CandidateRecord* candidate = nullptr;  // deduplicated like PutCandidate
  const EvaluationRecord* evaluation = nullptr;
  const JobStateChange* job_state = nullptr;   // written last, after the event
};

struct JobFilter {
  std::string problem, model, strategy, agent_kind, label;  // empty = any
  std::optional<JobState> state;
  int32_t limit = 1000;  // 1..100000
  std::string after_id;  // pagination: ids sort by creation time
};

// Aggregates of one job's trajectory for job summaries (GetJob, ListJobs),
// computed by SQL without loading any text (prompts, sources, results).
struct JobStats {
  int32_t turns = 0;
  int32_t llm_calls = 0;
  int32_t evaluations = 0;  // rows of `evaluations` of role search (results only)
  int64_t tokens = 0;       // prompt + completion tokens of every LLM call
  double cost_usd = 0;
  std::string last_evaluation_status;  // latest evaluation in elapsed order, "" when none
  std::string best_candidate_sha256;   // candidate of jobs.best_evaluation_id, "" when none
  std::optional<double> best_roofline_fraction;  // of that evaluation
  int64_t last_event_seq = 0;                    // 0 when the job has no events
  int64_t last_event_elapsed_ms = 0;
  // Search evaluations at other settings than the job's (not comparable) and
  // the best correct speedup among them.
  int32_t other_evaluations = 0;
  std::optional<double> other_best_speedup;
  // The latest final re-measurement ("" / nullopt when there is none).
  std::string final_evaluation_id;
  std::string final_status;
  std::string final_candidate_sha256;
  std::optional<double> final_speedup;
  std::optional<double> final_roofline_fraction;
};

class TrajectoryStore {
 public:
  struct Options {
    int read_connections = 4;    // size of the read-only connection pool
    int busy_timeout_ms = 5000;  // wait for another process's write lock
    const Clock* clock = SystemClock::Get();
    // Largest size of the database file in pages (SQLite's max_page_count),
    // 0 = SQLite's default. Writes that would grow the file beyond it fail as
    // on a full disk ("database or disk is full"), with nothing written.
    int64_t max_page_count = 0;
    // How the file is opened; see "Read-only opening" above.
    enum class Access {
      kReadWrite,  // create if missing, migrate, write (the orchestrator)
      kReadOnly,   // SQLITE_OPEN_READONLY: never created, migrated or written
      kImmutable,  // kReadOnly plus immutable=1: for a file that cannot change
    };
    Access access = Access::kReadWrite;
  };

  // Opens (creating if needed) and migrates the database at `path`
  // (Options::access = kReadWrite), or opens it read-only (see above).
  static absl::StatusOr<std::unique_ptr<TrajectoryStore>> Open(const std::string& path,
                                                               Options options);
  static absl::StatusOr<std::unique_ptr<TrajectoryStore>> Open(const std::string& path) {
    return Open(path, Options());
  }
  virtual ~TrajectoryStore() = default;

  virtual const std::string& path() const = 0;
  virtual absl::StatusOr<int> SchemaVersion() = 0;

  // --- jobs ---
  // ALREADY_EXISTS when the id is taken, or when job.client_request_id is
  // non-empty and another job already has it (the message then names
  // client_request_id and that job). Empty client_request_ids never collide.
  // best_speedup/best_evaluation_id of `job` are ignored (the store maintains
  // them).
  virtual absl::Status CreateJob(const JobRecord& job) = 0;
  // Changes state (and started/finished times, error). Terminal states are final:
  // moving out of one is FAILED_PRECONDITION. wall_us = 0 means "now".
  virtual absl::Status UpdateJobState(std::string_view job_id, JobState state,
                                      std::string_view error = "", int64_t wall_us = 0) = 0;
  virtual absl::StatusOr<JobRecord> GetJob(std::string_view job_id) = 0;
  // The job created with this non-empty client_request_id, or nullopt when
  // there is none. Unlike Get*, absence is an ordinary answer here (the
  // common case of a first submission), not NOT_FOUND; an empty id is
  // INVALID_ARGUMENT (it never identifies a job).
  virtual absl::StatusOr<std::optional<JobRecord>> FindJobByClientRequestId(
      std::string_view client_request_id) = 0;
  virtual absl::StatusOr<std::vector<JobRecord>> ListJobs(const JobFilter& filter) = 0;
  // As ListJobs, without the spec (spec_json empty): for analyses over many
  // jobs (AnalyzePlateau), whose specs can hold whole candidate sources.
  virtual absl::StatusOr<std::vector<JobRecord>> ListJobSummaries(const JobFilter& filter) = 0;
  // Jobs in queued or running state (for restart recovery).
  virtual absl::StatusOr<std::vector<JobRecord>> ListUnfinishedJobs() = 0;

  // --- trajectory ---
  virtual absl::Status AddTurn(const TurnRecord& turn) = 0;
  virtual absl::Status AddLlmCall(const LlmCallRecord& call) = 0;
  // Inserts the candidate unless its sha256 is already stored; returns true when
  // it was new. The sha256 is recomputed and must match the source.
  virtual absl::StatusOr<bool> PutCandidate(const CandidateRecord& candidate) = 0;
  virtual absl::StatusOr<CandidateRecord> GetCandidate(std::string_view sha256) = 0;
  // Also updates the job's best_speedup when the evaluation is correct,
  // comparable, of role search and better.
  virtual absl::Status AddEvaluation(const EvaluationRecord& evaluation) = 0;

  virtual absl::StatusOr<std::vector<TurnRecord>> ListTurns(std::string_view job_id) = 0;
  virtual absl::StatusOr<std::vector<LlmCallRecord>> ListLlmCalls(std::string_view job_id) = 0;
  // In elapsed order (ties by insertion order).
  virtual absl::StatusOr<std::vector<EvaluationRecord>> ListEvaluations(
      std::string_view job_id) = 0;
  // As ListEvaluations, with result_json reduced by SQL to
  // {"multiSizeScore":x} (x null when the result has none or is not JSON):
  // the plateau loader's view, without the results' text.
  virtual absl::StatusOr<std::vector<EvaluationRecord>> ListEvaluationPoints(
      std::string_view job_id) = 0;

  // --- events ---
  // Assigns the next seq for event.job_id, commits durably, returns the seq.
  virtual absl::StatusOr<int64_t> AppendEvent(const EventRecord& event) = 0;
  // Like AppendEvent, and writes `rows` in the same transaction: all of them
  // and the event, or nothing (the seq is then not consumed). Each row is
  // checked as by its own Add*/PutCandidate call, and any error (including a
  // row of another job: INVALID_ARGUMENT) fails the whole step. This is the
  // cheap way to record a step: one queue round trip and one share of an
  // fsync instead of one per row.
  virtual absl::StatusOr<int64_t> AppendEventWith(const StepRows& rows,
                                                  const EventRecord& event) = 0;
  // Events of a job with seq > after_seq, ascending, at most `limit`.
  virtual absl::StatusOr<std::vector<EventRecord>> ReadEvents(std::string_view job_id,
                                                              int64_t after_seq,
                                                              int32_t limit = 10000) = 0;
  // Highest seq of the job (0 when it has no events).
  virtual absl::StatusOr<int64_t> LastEventSeq(std::string_view job_id) = 0;

  // Changes Options::max_page_count of the open store (the writer's limit)
  // and returns the limit now in force: SQLite never sets it below the
  // file's current size, so SetMaxPageCount(1) makes the file exactly full
  // (a full disk, reproducible without privileges), and a large value
  // gives the space back.
  virtual absl::StatusOr<int64_t> SetMaxPageCount(int64_t pages) = 0;

  // --- summaries ---
  // NOT_FOUND for an unknown job. One consistent snapshot (one read transaction).
  virtual absl::StatusOr<JobStats> GetJobStats(std::string_view job_id) = 0;
};

}  // namespace pkforge::storage
