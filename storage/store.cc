// SqliteTrajectoryStore: the TrajectoryStore behind TrajectoryStore::Open.
//
// Layout
// - Group commit for every write. A caller queues a PendingWrite (a function
//   to run on the writer connection) and waits. The first caller that finds
//   no active leader becomes the leader: it takes the queue, runs every write
//   in one BEGIN IMMEDIATE transaction so that a write that fails -- a
//   duplicate id, an unknown job -- is undone alone (by SQLite's statement
//   rollback, or a SAVEPOINT for writes of several statements: WriteShape),
//   COMMITs once (one fsync for the whole batch), wakes each caller of the
//   batch and the oldest caller still queued, who leads next unless another
//   caller takes the lead first. While one batch is being fsynced the next
//   one accumulates, so the fsync rate stays bounded while throughput grows
//   with the number of concurrent writers.
// - One writer connection (writer_), used only by the leader: SQLite admits
//   one writer per file, and leadership is exclusive, so it needs no mutex.
// - A pool of read-only connections (readers_): WAL readers see the last
//   committed snapshot and never block or wait for the writer.
// - Event seqs: the per-job last-seq cache (last_seq_) is only advanced after
//   a successful COMMIT and is dropped entirely on any batch failure; inside a
//   batch, seqs of kept writes are tracked by BatchTxn. So a rolled-back write
//   or batch can never leave a gap or a duplicate: the next use reloads
//   MAX(seq) from the file.
#include "storage/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "common/status.h"
#include "fmt/format.h"
#include "storage/migrations.h"
#include "storage/sqlite_util.h"

namespace pkforge::storage {

// ------------------------------------------------------------------ JobState

std::string_view JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kInterrupted:
      return "interrupted";
  }
  return "unknown";
}

absl::StatusOr<JobState> ParseJobState(std::string_view name) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled, JobState::kInterrupted}) {
    if (JobStateName(s) == name) return s;
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown job state '{}' (expected queued|running|succeeded|failed|cancelled|interrupted)",
      name));
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled ||
         s == JobState::kInterrupted;
}

namespace {

using internal::Connection;
using internal::Statement;
using internal::Transaction;

// One transaction is capped so a burst of thousands of callers still sees
// bounded commit latency (and a bounded rollback if the batch fails).
constexpr size_t kMaxBatch = 1024;
constexpr int32_t kMaxListLimit = 100000;

// ---------------------------------------------------------------- validation
//
// Every write validates its whole record before touching the database so bad
// input is rejected with a message naming the field and writes nothing. The
// CHECK constraints in the schema are the second line of defence.

absl::Status Invalid(std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(fmt::format("{} {}", field, problem));
}

absl::Status RequireNonEmpty(std::string_view field, std::string_view v) {
  if (v.empty()) return Invalid(field, "is required (empty)");
  return absl::OkStatus();
}

absl::Status RequireNonNegative(std::string_view field, int64_t v) {
  if (v < 0) return Invalid(field, fmt::format("must be >= 0, got {}", v));
  return absl::OkStatus();
}

// NaN compares false with everything, so test finiteness explicitly; SQLite
// would otherwise silently store a NaN as NULL.
absl::Status RequireFiniteNonNegative(std::string_view field, double v) {
  if (!std::isfinite(v) || v < 0) {
    return Invalid(field, fmt::format("must be finite and >= 0, got {}", v));
  }
  return absl::OkStatus();
}

absl::Status RequireOptionalFiniteNonNegative(std::string_view field,
                                              const std::optional<double>& v) {
  return v.has_value() ? RequireFiniteNonNegative(field, *v) : absl::OkStatus();
}

absl::Status RequireId(std::string_view field, std::string_view id, std::string_view prefix) {
  absl::Status s = ValidateId(id, prefix);
  if (!s.ok()) return Annotate(s, field);
  return absl::OkStatus();
}

bool IsLowerHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

absl::Status RequireSha256(std::string_view field, std::string_view v) {
  if (!IsLowerHex64(v)) {
    return Invalid(field,
                   fmt::format("must be 64 lower-case hex characters, got '{}'", v.substr(0, 80)));
  }
  return absl::OkStatus();
}

// Statuses come from the executor's proto enum; the store does not pin the
// list (a new status must not make results unloggable) but requires the
// enum-name shape so free text does not end up in a grouping column.
absl::Status RequireStatusName(std::string_view field, std::string_view v) {
  RETURN_IF_ERROR(RequireNonEmpty(field, v));
  bool ok = std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!ok) return Invalid(field, fmt::format("must be an upper-case status name, got '{}'", v));
  return absl::OkStatus();
}

absl::Status ValidateJob(const JobRecord& j) {
  RETURN_IF_ERROR(RequireId("id", j.id, "job"));
  RETURN_IF_ERROR(RequireNonEmpty("spec_json", j.spec_json));
  RETURN_IF_ERROR(RequireNonEmpty("problem", j.problem));
  RETURN_IF_ERROR(RequireNonEmpty("backend", j.backend));
  RETURN_IF_ERROR(RequireNonEmpty("dtype", j.dtype));
  RETURN_IF_ERROR(RequireNonEmpty("agent_kind", j.agent_kind));
  if (j.world_size < 1)
    return Invalid("world_size", fmt::format("must be >= 1, got {}", j.world_size));
  RETURN_IF_ERROR(RequireNonNegative("created_wall_us", j.created_wall_us));
  RETURN_IF_ERROR(RequireNonNegative("started_wall_us", j.started_wall_us));
  RETURN_IF_ERROR(RequireNonNegative("finished_wall_us", j.finished_wall_us));
  RETURN_IF_ERROR(RequireFiniteNonNegative("budget_wall_s", j.budget_wall_s));
  return absl::OkStatus();
}

absl::Status ValidateTurn(const TurnRecord& t) {
  RETURN_IF_ERROR(RequireId("id", t.id, "turn"));
  RETURN_IF_ERROR(RequireId("job_id", t.job_id, "job"));
  if (t.index < 0) return Invalid("index", fmt::format("must be >= 0, got {}", t.index));
  RETURN_IF_ERROR(RequireNonNegative("started_wall_us", t.started_wall_us));
  RETURN_IF_ERROR(RequireNonNegative("elapsed_ms", t.elapsed_ms));
  return absl::OkStatus();
}

absl::Status ValidateLlmCall(const LlmCallRecord& c) {
  RETURN_IF_ERROR(RequireId("id", c.id, "llm"));
  RETURN_IF_ERROR(RequireId("job_id", c.job_id, "job"));
  if (!c.turn_id.empty()) RETURN_IF_ERROR(RequireId("turn_id", c.turn_id, "turn"));
  RETURN_IF_ERROR(RequireNonEmpty("provider", c.provider));
  RETURN_IF_ERROR(RequireNonEmpty("model", c.model));
  RETURN_IF_ERROR(RequireNonNegative("prompt_tokens", c.prompt_tokens));
  RETURN_IF_ERROR(RequireNonNegative("completion_tokens", c.completion_tokens));
  RETURN_IF_ERROR(RequireFiniteNonNegative("latency_ms", c.latency_ms));
  RETURN_IF_ERROR(RequireFiniteNonNegative("cost_usd", c.cost_usd));
  if (c.attempts < 1) return Invalid("attempts", fmt::format("must be >= 1, got {}", c.attempts));
  RETURN_IF_ERROR(RequireNonNegative("wall_us", c.wall_us));
  RETURN_IF_ERROR(RequireNonNegative("elapsed_ms", c.elapsed_ms));
  return absl::OkStatus();
}

absl::Status ValidateCandidate(const CandidateRecord& c) {
  RETURN_IF_ERROR(RequireSha256("sha256", c.sha256));
  RETURN_IF_ERROR(RequireNonEmpty("source", c.source));
  RETURN_IF_ERROR(RequireNonEmpty("backend", c.backend));
  RETURN_IF_ERROR(RequireNonNegative("first_seen_wall_us", c.first_seen_wall_us));
  std::string actual = Sha256Hex(c.source);
  if (actual != c.sha256) {
    return Invalid("sha256", fmt::format("does not match the source: given {}, source hashes to {}",
                                         c.sha256, actual));
  }
  return absl::OkStatus();
}

absl::Status ValidateEvaluation(const EvaluationRecord& e) {
  RETURN_IF_ERROR(RequireId("id", e.id, "eval"));
  RETURN_IF_ERROR(RequireId("job_id", e.job_id, "job"));
  if (!e.turn_id.empty()) RETURN_IF_ERROR(RequireId("turn_id", e.turn_id, "turn"));
  RETURN_IF_ERROR(RequireSha256("candidate_sha256", e.candidate_sha256));
  RETURN_IF_ERROR(RequireStatusName("status", e.status));
  if (e.correct != (e.status == "OK")) {
    return Invalid("correct", fmt::format("is {} but status is {} (correct means status == OK)",
                                          e.correct, e.status));
  }
  if (e.speedup.has_value() && !(std::isfinite(*e.speedup) && *e.speedup > 0)) {
    return Invalid("speedup", fmt::format("must be finite and > 0, got {}", *e.speedup));
  }
  RETURN_IF_ERROR(RequireOptionalFiniteNonNegative("candidate_median_us", e.candidate_median_us));
  RETURN_IF_ERROR(RequireOptionalFiniteNonNegative("reference_median_us", e.reference_median_us));
  RETURN_IF_ERROR(RequireOptionalFiniteNonNegative("roofline_fraction", e.roofline_fraction));
  RETURN_IF_ERROR(RequireFiniteNonNegative("queue_ms", e.queue_ms));
  RETURN_IF_ERROR(RequireFiniteNonNegative("compile_ms", e.compile_ms));
  RETURN_IF_ERROR(RequireFiniteNonNegative("run_ms", e.run_ms));
  RETURN_IF_ERROR(RequireNonNegative("wall_us", e.wall_us));
  RETURN_IF_ERROR(RequireNonNegative("elapsed_ms", e.elapsed_ms));
  RETURN_IF_ERROR(RequireNonNegative("timed_iters", e.timed_iters));
  RETURN_IF_ERROR(RequireNonNegative("trials", e.trials));
  if (e.role != kRoleSearch && e.role != kRoleFinal) {
    return Invalid("role", fmt::format("'{}' (search or final)", e.role));
  }
  return absl::OkStatus();
}

absl::Status ValidateEvent(const EventRecord& e) {
  RETURN_IF_ERROR(RequireId("job_id", e.job_id, "job"));
  RETURN_IF_ERROR(RequireNonEmpty("type", e.type));
  RETURN_IF_ERROR(RequireNonNegative("wall_us", e.wall_us));
  RETURN_IF_ERROR(RequireNonNegative("elapsed_ms", e.elapsed_ms));
  return absl::OkStatus();
}

absl::Status JobNotFound(std::string_view job_id) {
  return absl::NotFoundError(fmt::format("job {} not found", job_id));
}

// ------------------------------------------------------------------- columns

constexpr char kJobColumns[] =
    "id, spec_json, problem, backend, world_size, dtype, agent_kind, model, strategy, label, "
    "state, created_wall_us, started_wall_us, finished_wall_us, budget_wall_s, error, "
    "best_speedup, best_evaluation_id, client_request_id";

absl::StatusOr<JobRecord> ReadJobRow(const Statement& st) {
  JobRecord j;
  j.id = st.Text(0);
  j.spec_json = st.Text(1);
  j.problem = st.Text(2);
  j.backend = st.Text(3);
  j.world_size = static_cast<int32_t>(st.Int64(4));
  j.dtype = st.Text(5);
  j.agent_kind = st.Text(6);
  j.model = st.Text(7);
  j.strategy = st.Text(8);
  j.label = st.Text(9);
  ASSIGN_OR_RETURN(j.state, ParseJobState(st.Text(10)));
  j.created_wall_us = st.Int64(11);
  j.started_wall_us = st.Int64(12);
  j.finished_wall_us = st.Int64(13);
  j.budget_wall_s = st.Double(14);
  j.error = st.Text(15);
  j.best_speedup = st.OptionalDouble(16);
  j.best_evaluation_id = st.Text(17);
  j.client_request_id = st.Text(18);
  return j;
}

// Every row a prepared SELECT of kJobColumns returns, in its order.
absl::StatusOr<std::vector<JobRecord>> ReadJobRows(Statement& st) {
  std::vector<JobRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ASSIGN_OR_RETURN(JobRecord j, ReadJobRow(st));
    out.push_back(std::move(j));
  }
  return out;
}

constexpr char kEvaluationColumns[] =
    "id, job_id, turn_id, candidate_sha256, status, correct, speedup, candidate_median_us, "
    "reference_median_us, roofline_fraction, result_json, executor, queue_ms, compile_ms, "
    "run_ms, wall_us, elapsed_ms, timed_iters, trials, comparable, role";

EvaluationRecord ReadEvaluationRow(const Statement& st) {
  EvaluationRecord e;
  e.id = st.Text(0);
  e.job_id = st.Text(1);
  e.turn_id = st.Text(2);
  e.candidate_sha256 = st.Text(3);
  e.status = st.Text(4);
  e.correct = st.Int64(5) != 0;
  e.speedup = st.OptionalDouble(6);
  e.candidate_median_us = st.OptionalDouble(7);
  e.reference_median_us = st.OptionalDouble(8);
  e.roofline_fraction = st.OptionalDouble(9);
  e.result_json = st.Text(10);
  e.executor = st.Text(11);
  e.queue_ms = st.Double(12);
  e.compile_ms = st.Double(13);
  e.run_ms = st.Double(14);
  e.wall_us = st.Int64(15);
  e.elapsed_ms = st.Int64(16);
  e.timed_iters = static_cast<int32_t>(st.Int64(17));
  e.trials = static_cast<int32_t>(st.Int64(18));
  e.comparable = st.Int64(19) != 0;
  e.role = st.Text(20);
  return e;
}

// ------------------------------------------------------------ in-txn checks

absl::Status RequireJobExists(Connection& conn, std::string_view job_id) {
  ASSIGN_OR_RETURN(Statement st, conn.Prepare("SELECT 1 FROM jobs WHERE id = ?1"));
  st.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool found, st.Step());
  if (!found) return JobNotFound(job_id);
  return absl::OkStatus();
}

// A turn referenced by an LLM call or evaluation must belong to the same job,
// or per-job analyses would silently mix trajectories.
absl::Status RequireTurnOfJob(Connection& conn, std::string_view turn_id, std::string_view job_id) {
  ASSIGN_OR_RETURN(Statement st, conn.Prepare("SELECT job_id FROM turns WHERE id = ?1"));
  st.Bind(1, turn_id);
  ASSIGN_OR_RETURN(bool found, st.Step());
  if (!found) return absl::NotFoundError(fmt::format("turn {} not found", turn_id));
  std::string owner = st.Text(0);
  if (owner != job_id) {
    return absl::InvalidArgumentError(
        fmt::format("turn_id {} belongs to job {}, not {}", turn_id, owner, job_id));
  }
  return absl::OkStatus();
}

// -------------------------------------------------------------- row writers
//
// One function per row type, run on the writer connection inside the batch
// transaction. Shared by the single-row calls (AddTurn, ...) and by
// AppendEventWith, so both paths check and write exactly the same way.

absl::Status InsertJob(Connection& conn, const JobRecord& job, int64_t created) {
  // Checked first (a read, inside the write transaction, so no other writer
  // can slip in between) to name the colliding job; the unique index
  // jobs_by_client_request_id stays as the second line of defence.
  if (!job.client_request_id.empty()) {
    ASSIGN_OR_RETURN(Statement find, conn.Prepare("SELECT id FROM jobs WHERE client_request_id = "
                                                  "?1 AND client_request_id <> ''"));
    find.Bind(1, job.client_request_id);
    ASSIGN_OR_RETURN(bool taken, find.Step());
    if (taken) {
      return absl::AlreadyExistsError(fmt::format(
          "client_request_id '{}' is already used by job {}", job.client_request_id, find.Text(0)));
    }
  }
  ASSIGN_OR_RETURN(Statement st,
                   conn.Prepare("INSERT INTO jobs (id, spec_json, problem, backend, world_size, "
                                "dtype, agent_kind, model, strategy, label, state, "
                                "created_wall_us, started_wall_us, finished_wall_us, "
                                "budget_wall_s, error, client_request_id) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                "?13, ?14, ?15, ?16, ?17)"));
  st.Bind(1, job.id)
      .Bind(2, job.spec_json)
      .Bind(3, job.problem)
      .Bind(4, job.backend)
      .Bind(5, job.world_size)
      .Bind(6, job.dtype)
      .Bind(7, job.agent_kind)
      .Bind(8, job.model)
      .Bind(9, job.strategy)
      .Bind(10, job.label)
      .Bind(11, JobStateName(job.state))
      .Bind(12, created)
      .Bind(13, job.started_wall_us)
      .Bind(14, job.finished_wall_us)
      .Bind(15, job.budget_wall_s)
      .Bind(16, job.error)
      .Bind(17, job.client_request_id);
  absl::Status s = st.Run();
  if (absl::IsAlreadyExists(s)) {
    return absl::AlreadyExistsError(fmt::format("job {} already exists", job.id));
  }
  return s;
}

absl::Status WriteJobState(Connection& conn, std::string_view job_id, JobState state,
                           std::string_view error, int64_t wall) {
  JobState current;
  int64_t started;
  std::string old_error;
  {
    ASSIGN_OR_RETURN(Statement st,
                     conn.Prepare("SELECT state, started_wall_us, error FROM jobs WHERE id = ?1"));
    st.Bind(1, job_id);
    ASSIGN_OR_RETURN(bool found, st.Step());
    if (!found) return JobNotFound(job_id);
    ASSIGN_OR_RETURN(current, ParseJobState(st.Text(0)));
    started = st.Int64(1);
    old_error = st.Text(2);
  }
  if (IsTerminal(current)) {
    // Even a repeat of the same terminal state is refused: it would rewrite
    // finished_wall_us/error of a result researchers may already have used.
    return absl::FailedPreconditionError(
        fmt::format("job {} is already {} (terminal); cannot move it to {}", job_id,
                    JobStateName(current), JobStateName(state)));
  }
  if (state == JobState::kRunning && started == 0) started = wall;
  const int64_t finished = IsTerminal(state) ? wall : 0;
  ASSIGN_OR_RETURN(Statement st, conn.Prepare("UPDATE jobs SET state = ?2, started_wall_us = ?3, "
                                              "finished_wall_us = ?4, error = ?5 WHERE id = ?1"));
  st.Bind(1, job_id)
      .Bind(2, JobStateName(state))
      .Bind(3, started)
      .Bind(4, finished)
      .Bind(5, error.empty() ? std::string_view(old_error) : error);
  return st.Run();
}

absl::Status InsertTurn(Connection& conn, const TurnRecord& turn, int64_t started) {
  RETURN_IF_ERROR(RequireJobExists(conn, turn.job_id));
  ASSIGN_OR_RETURN(Statement st,
                   conn.Prepare("INSERT INTO turns (id, job_id, turn_index, started_wall_us, "
                                "elapsed_ms, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  st.Bind(1, turn.id)
      .Bind(2, turn.job_id)
      .Bind(3, turn.index)
      .Bind(4, started)
      .Bind(5, turn.elapsed_ms)
      .Bind(6, turn.note);
  absl::Status s = st.Run();
  if (absl::IsAlreadyExists(s)) {
    return absl::AlreadyExistsError(fmt::format("turn {} or index {} of job {} already exists",
                                                turn.id, turn.index, turn.job_id));
  }
  return s;
}

absl::Status InsertLlmCall(Connection& conn, const LlmCallRecord& call, int64_t wall) {
  RETURN_IF_ERROR(RequireJobExists(conn, call.job_id));
  if (!call.turn_id.empty()) RETURN_IF_ERROR(RequireTurnOfJob(conn, call.turn_id, call.job_id));
  ASSIGN_OR_RETURN(Statement st,
                   conn.Prepare("INSERT INTO llm_calls (id, job_id, turn_id, provider, model, "
                                "prompt, reply, prompt_tokens, completion_tokens, latency_ms, "
                                "cost_usd, attempts, error, wall_us, elapsed_ms) VALUES (?1, "
                                "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"));
  st.Bind(1, call.id)
      .Bind(2, call.job_id)
      .BindTextOrNull(3, call.turn_id)
      .Bind(4, call.provider)
      .Bind(5, call.model)
      .Bind(6, call.prompt)
      .Bind(7, call.reply)
      .Bind(8, call.prompt_tokens)
      .Bind(9, call.completion_tokens)
      .Bind(10, call.latency_ms)
      .Bind(11, call.cost_usd)
      .Bind(12, call.attempts)
      .Bind(13, call.error)
      .Bind(14, wall)
      .Bind(15, call.elapsed_ms);
  absl::Status s = st.Run();
  if (absl::IsAlreadyExists(s)) {
    return absl::AlreadyExistsError(fmt::format("llm call {} already exists", call.id));
  }
  return s;
}

// Sets *inserted to whether the candidate was new.
absl::Status InsertCandidate(Connection& conn, const CandidateRecord& candidate, int64_t first_seen,
                             bool* inserted) {
  // ON CONFLICT DO NOTHING (not INSERT OR IGNORE, which would also swallow
  // CHECK and NOT NULL failures and report them as "already stored").
  ASSIGN_OR_RETURN(Statement st, conn.Prepare("INSERT INTO candidates (sha256, source, backend, "
                                              "first_seen_wall_us) VALUES (?1, ?2, ?3, ?4) "
                                              "ON CONFLICT (sha256) DO NOTHING"));
  st.Bind(1, candidate.sha256)
      .Bind(2, candidate.source)
      .Bind(3, candidate.backend)
      .Bind(4, first_seen);
  RETURN_IF_ERROR(st.Run());
  *inserted = sqlite3_changes(conn.db()) == 1;
  return absl::OkStatus();
}

absl::Status InsertEvaluation(Connection& conn, const EvaluationRecord& e, int64_t wall) {
  RETURN_IF_ERROR(RequireJobExists(conn, e.job_id));
  if (!e.turn_id.empty()) RETURN_IF_ERROR(RequireTurnOfJob(conn, e.turn_id, e.job_id));
  {
    ASSIGN_OR_RETURN(Statement st, conn.Prepare("SELECT 1 FROM candidates WHERE sha256 = ?1"));
    st.Bind(1, e.candidate_sha256);
    ASSIGN_OR_RETURN(bool found, st.Step());
    if (!found) {
      return absl::NotFoundError(
          fmt::format("candidate {} not found (PutCandidate it first)", e.candidate_sha256));
    }
  }
  {
    ASSIGN_OR_RETURN(Statement st,
                     conn.Prepare(fmt::format("INSERT INTO evaluations ({}) VALUES (?1, ?2, ?3, "
                                              "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
                                              "?15, ?16, ?17, ?18, ?19, ?20, ?21)",
                                              kEvaluationColumns)));
    st.Bind(1, e.id)
        .Bind(2, e.job_id)
        .BindTextOrNull(3, e.turn_id)
        .Bind(4, e.candidate_sha256)
        .Bind(5, e.status)
        .Bind(6, e.correct)
        .Bind(7, e.speedup)
        .Bind(8, e.candidate_median_us)
        .Bind(9, e.reference_median_us)
        .Bind(10, e.roofline_fraction)
        .Bind(11, e.result_json)
        .Bind(12, e.executor)
        .Bind(13, e.queue_ms)
        .Bind(14, e.compile_ms)
        .Bind(15, e.run_ms)
        .Bind(16, wall)
        .Bind(17, e.elapsed_ms)
        .Bind(18, static_cast<int64_t>(e.timed_iters))
        .Bind(19, static_cast<int64_t>(e.trials))
        .Bind(20, e.comparable)
        .Bind(21, e.role);
    absl::Status s = st.Run();
    if (absl::IsAlreadyExists(s)) {
      return absl::AlreadyExistsError(fmt::format("evaluation {} already exists", e.id));
    }
    RETURN_IF_ERROR(s);
  }
  if (e.correct && e.speedup.has_value() && e.comparable && e.role == kRoleSearch) {
    // Strictly better only: on ties the first evaluation to reach the best
    // keeps the credit (the same rule the v2 backfill uses).
    ASSIGN_OR_RETURN(Statement st,
                     conn.Prepare("UPDATE jobs SET best_speedup = ?2, best_evaluation_id = ?3 "
                                  "WHERE id = ?1 AND (best_speedup IS NULL OR best_speedup < ?2)"));
    st.Bind(1, e.job_id).Bind(2, *e.speedup).Bind(3, e.id);
    RETURN_IF_ERROR(st.Run());
  }
  return absl::OkStatus();
}

// ----------------------------------------------------------------- BatchTxn

// The leader's view of one group-commit transaction: the writer connection,
// and per-job event sequence numbers. A seq becomes visible to later writes
// of the batch only when the write that took it is kept (its savepoint
// released); a rolled-back write's job falls back to MAX(seq) read inside the
// transaction, which already excludes it. Publish() after COMMIT is the only
// way seqs reach the store's committed cache.
class BatchTxn {
 public:
  BatchTxn(Connection* conn, const std::unordered_map<std::string, int64_t>* committed)
      : conn_(conn), committed_(committed) {}

  Connection& conn() { return *conn_; }

  // Inserts `ev` (validated, wall resolved) with its job's next seq.
  // NOT_FOUND for an unknown job.
  absl::StatusOr<int64_t> InsertEvent(const EventRecord& ev, int64_t wall_us) {
    current_job_ = ev.job_id;
    int64_t last = 0;
    if (auto it = batch_.find(ev.job_id); it != batch_.end()) {
      last = it->second;
    } else if (auto c = committed_->find(ev.job_id);
               c != committed_->end() && !stale_.contains(ev.job_id)) {
      last = c->second;
    } else {
      // One statement answers "does the job exist" and "where does its
      // sequence stand" from the transaction's own view.
      ASSIGN_OR_RETURN(Statement st,
                       conn_->Prepare("SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?1), "
                                      "(SELECT COALESCE(MAX(seq), 0) FROM events "
                                      "WHERE job_id = ?1)"));
      st.Bind(1, ev.job_id);
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row || st.Int64(0) == 0) return JobNotFound(ev.job_id);
      last = st.Int64(1);
    }
    const int64_t seq = last + 1;
    ASSIGN_OR_RETURN(Statement st,
                     conn_->Prepare("INSERT INTO events (job_id, seq, wall_us, elapsed_ms, type, "
                                    "payload_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    st.Bind(1, ev.job_id)
        .Bind(2, seq)
        .Bind(3, wall_us)
        .Bind(4, ev.elapsed_ms)
        .Bind(5, ev.type)
        .Bind(6, ev.payload_json);
    RETURN_IF_ERROR(st.Run());
    current_seq_ = seq;
    return seq;
  }

  // The current write was kept: its seq (if it appended an event) counts.
  void Keep() {
    if (current_seq_ != 0) batch_[current_job_] = current_seq_;
    Reset();
  }

  // The current write was rolled back. If it touched an event, the cached
  // position of that job is no longer trusted (a seq conflict means the file
  // disagrees with the cache): reload it from the file on next use.
  void Discard() {
    if (!current_job_.empty()) {
      batch_.erase(current_job_);
      stale_.insert(current_job_);
    }
    Reset();
  }

  // After a successful COMMIT: folds this batch's seqs into `committed`.
  void Publish(std::unordered_map<std::string, int64_t>* committed) const {
    for (const std::string& job : stale_) committed->erase(job);
    for (const auto& [job, seq] : batch_) (*committed)[job] = seq;
  }

 private:
  void Reset() {
    current_job_.clear();
    current_seq_ = 0;
  }

  Connection* conn_;
  const std::unordered_map<std::string, int64_t>* committed_;
  std::unordered_map<std::string, int64_t> batch_;  // last kept seq per job
  std::unordered_set<std::string> stale_;           // jobs whose cached seq is distrusted
  std::string current_job_;                         // event job of the running write
  int64_t current_seq_ = 0;                         // its seq once inserted
};

// ------------------------------------------------------------------ ReadPool

// Fixed set of read-only connections handed out one caller at a time.
class ReadPool {
 public:
  class Lease {
   public:
    Lease(ReadPool* pool, Connection* conn) : pool_(pool), conn_(conn) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool_->Release(conn_); }
    Connection& operator*() const { return *conn_; }

   private:
    ReadPool* pool_;
    Connection* conn_;
  };

  void Add(std::unique_ptr<Connection> conn) {
    absl::MutexLock lock(&mu_);
    free_.push_back(conn.get());
    all_.push_back(std::move(conn));
  }

  Lease Acquire() {
    absl::MutexLock lock(&mu_);
    while (free_.empty()) cv_.Wait(&mu_);
    Connection* conn = free_.back();
    free_.pop_back();
    return Lease(this, conn);
  }

 private:
  void Release(Connection* conn) {
    {
      absl::MutexLock lock(&mu_);
      free_.push_back(conn);
    }
    cv_.Signal();
  }

  absl::Mutex mu_;
  absl::CondVar cv_;  // a connection was returned (with mu_)
  std::vector<Connection*> free_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Connection>> all_ ABSL_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------- the store

class SqliteTrajectoryStore final : public TrajectoryStore {
 public:
  SqliteTrajectoryStore(std::string path, Options options, std::unique_ptr<Connection> writer)
      : path_(std::move(path)), options_(options), writer_(std::move(writer)) {}

  ReadPool& readers() { return readers_; }

  const std::string& path() const override { return path_; }

  absl::StatusOr<int> SchemaVersion() override {
    ReadPool::Lease conn = readers_.Acquire();
    return internal::ReadUserVersion((*conn).db());
  }

  absl::Status CreateJob(const JobRecord& job) override;
  absl::Status UpdateJobState(std::string_view job_id, JobState state, std::string_view error,
                              int64_t wall_us) override;
  absl::StatusOr<JobRecord> GetJob(std::string_view job_id) override;
  absl::StatusOr<std::optional<JobRecord>> FindJobByClientRequestId(
      std::string_view client_request_id) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobs(const JobFilter& filter) override;
  absl::StatusOr<std::vector<JobRecord>> ListUnfinishedJobs() override;

  absl::Status AddTurn(const TurnRecord& turn) override;
  absl::Status AddLlmCall(const LlmCallRecord& call) override;
  absl::StatusOr<bool> PutCandidate(const CandidateRecord& candidate) override;
  absl::StatusOr<CandidateRecord> GetCandidate(std::string_view sha256) override;
  absl::Status AddEvaluation(const EvaluationRecord& evaluation) override;

  absl::StatusOr<std::vector<TurnRecord>> ListTurns(std::string_view job_id) override;
  absl::StatusOr<std::vector<LlmCallRecord>> ListLlmCalls(std::string_view job_id) override;
  absl::StatusOr<std::vector<EvaluationRecord>> ListEvaluations(std::string_view job_id) override;
  // Shared body of the per-job list readers: validates the id, checks the job
  // exists (NOT_FOUND otherwise), runs `sql` with ?1 = job_id on a read
  // connection and maps each row with `read_row`.
  template <typename Record, typename ReadRow>
  absl::StatusOr<std::vector<Record>> ListForJob(const char* op, std::string_view job_id,
                                                 const std::string& sql, ReadRow read_row);

  absl::StatusOr<int64_t> AppendEvent(const EventRecord& event) override;
  absl::StatusOr<int64_t> AppendEventWith(const StepRows& rows, const EventRecord& event) override;
  absl::StatusOr<std::vector<EventRecord>> ReadEvents(std::string_view job_id, int64_t after_seq,
                                                      int32_t limit) override;
  absl::StatusOr<int64_t> LastEventSeq(std::string_view job_id) override;

  absl::StatusOr<JobStats> GetJobStats(std::string_view job_id) override;

  absl::StatusOr<int64_t> SetMaxPageCount(int64_t pages) override;

 private:
  using WriteFn = absl::FunctionRef<absl::Status(BatchTxn&)>;

  // How a write changes the database, which decides how it is undone alone
  // when it fails inside a batch.
  enum class WriteShape {
    // At most one statement modifies the database (anything before it only
    // reads). SQLite backs a failed statement out by itself (statement
    // rollback), so the write needs no savepoint; this keeps the hot
    // AppendEvent path as cheap as before group commit covered every write.
    kOneStatement,
    // Several modifying statements (a step, an evaluation and its best-
    // speedup update): run under a savepoint so a failure part-way also
    // undoes the statements that succeeded.
    kMultiStatement,
  };

  // One caller's write in the group-commit queue. Lives on the caller's
  // stack; the caller blocks until `done`, so the leader may run `fn` (which
  // refers to the caller's arguments) and fill `status`. `done` is guarded by
  // group_mu_, which also publishes `status`. Each waiter has its own
  // condition variable so a finished batch wakes exactly its own callers and
  // one candidate leader, not every thread queued behind it.
  struct PendingWrite {
    PendingWrite(WriteShape shape, WriteFn fn) : shape(shape), fn(fn) {}
    WriteShape shape;
    WriteFn fn;
    absl::Status status;
    bool done = false;
    absl::CondVar cv;  // waited on with group_mu_
  };

  int64_t WallOrNow(int64_t wall_us) const {
    return wall_us != 0 ? wall_us : options_.clock->NowWallMicros();
  }

  // Queues `fn` for the next group commit and returns once it is durable (OK)
  // or has failed (its own error, or the batch's), annotated with `what`.
  absl::Status Write(const char* what, WriteShape shape, WriteFn fn);
  // Leader only: runs `batch` in one transaction and fills every status.
  void CommitBatch(const std::vector<PendingWrite*>& batch);
  // Leader only: runs one write so that its failure undoes only itself (see
  // WriteShape). Returns an error only when the whole transaction is lost
  // (SQLite rolled it back, or the savepoint could not be undone); the
  // write's own failure goes to w->status.
  absl::Status RunWrite(BatchTxn& txn, PendingWrite* w);

  // The shared body of AppendEvent and AppendEventWith.
  absl::StatusOr<int64_t> AppendStep(const char* what, const StepRows& rows,
                                     const EventRecord& event);

  const std::string path_;
  const Options options_;

  // Used only by the current group-commit leader (leader_active_ makes the
  // leader unique), never concurrently.
  std::unique_ptr<Connection> writer_;
  std::unordered_map<std::string, int64_t> last_seq_;  // committed seqs only

  absl::Mutex group_mu_;
  std::deque<PendingWrite*> pending_ ABSL_GUARDED_BY(group_mu_);
  bool leader_active_ ABSL_GUARDED_BY(group_mu_) = false;

  // Declared last so it is destroyed first: read connections close before the
  // writer, whose close then checkpoints the WAL and removes it.
  ReadPool readers_;
};

// -------------------------------------------------------------- group commit

absl::Status SqliteTrajectoryStore::Write(const char* what, WriteShape shape, WriteFn fn) {
  if (writer_ == nullptr) {
    return absl::FailedPreconditionError(
        fmt::format("{}: the store was opened read-only ({})", what, path_));
  }
  PendingWrite me(shape, fn);
  absl::MutexLock lock(&group_mu_);
  pending_.push_back(&me);
  while (true) {
    // Sleeps only while somebody else leads; a leader that finishes wakes
    // the oldest waiter, which leads next unless a caller got there first.
    while (!me.done && leader_active_) me.cv.Wait(&group_mu_);
    if (me.done) return Annotate(me.status, what);
    // Lead: commit whatever has queued up (normally including `me`).
    leader_active_ = true;
    const size_t n = std::min(pending_.size(), kMaxBatch);
    std::vector<PendingWrite*> batch(pending_.begin(),
                                     pending_.begin() + static_cast<std::ptrdiff_t>(n));
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    group_mu_.Unlock();
    CommitBatch(batch);
    group_mu_.Lock();
    // Notified under group_mu_: a woken caller returns and destroys its
    // PendingWrite, which it can only do after we release the lock.
    for (PendingWrite* w : batch) {
      w->done = true;
      if (w != &me) w->cv.Signal();
    }
    // Leadership is released rather than handed over: the next batch is led
    // by whichever caller runs first -- often this very thread coming back
    // with its next write, which saves waking a sleeping one. The oldest
    // waiter is woken so that queued writes never wait for a newcomer.
    leader_active_ = false;
    if (!pending_.empty()) pending_.front()->cv.Signal();
  }
}

void SqliteTrajectoryStore::CommitBatch(const std::vector<PendingWrite*>& batch) {
  absl::Status s = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(writer_.get()));
    BatchTxn btx(writer_.get(), &last_seq_);
    for (PendingWrite* w : batch) RETURN_IF_ERROR(RunWrite(btx, w));
    // A batch whose writes all failed commits an empty transaction: SQLite
    // writes (and fsyncs) nothing for it.
    RETURN_IF_ERROR(txn.Commit());
    btx.Publish(&last_seq_);
    return absl::OkStatus();
  }();
  if (s.ok()) return;
  // After a failed batch we cannot be sure which tentative seqs reached the
  // file (a failed COMMIT is rolled back, but stay conservative): forget
  // everything and reload MAX(seq) per job on next use.
  last_seq_.clear();
  for (PendingWrite* w : batch) {
    if (w->status.ok()) w->status = s;
  }
}

absl::Status SqliteTrajectoryStore::RunWrite(BatchTxn& txn, PendingWrite* w) {
  Connection& conn = txn.conn();
  const bool savepoint = w->shape == WriteShape::kMultiStatement;
  if (savepoint) {
    ASSIGN_OR_RETURN(Statement st, conn.Prepare("SAVEPOINT write"));
    RETURN_IF_ERROR(st.Run());
  }
  absl::Status s = w->fn(txn);
  if (s.ok() && savepoint) {
    ASSIGN_OR_RETURN(Statement st, conn.Prepare("RELEASE write"));
    s = st.Run();
  }
  if (s.ok()) {
    txn.Keep();
    return absl::OkStatus();
  }
  w->status = s;
  txn.Discard();
  // Some errors (I/O, full disk, out of memory) make SQLite roll back the
  // whole transaction; then the batch's earlier writes are gone too.
  if (sqlite3_get_autocommit(conn.db()) != 0) {
    return Annotate(s, "the batch transaction was rolled back by SQLite");
  }
  if (!savepoint) return absl::OkStatus();
  ASSIGN_OR_RETURN(Statement rollback, conn.Prepare("ROLLBACK TO write"));
  RETURN_IF_ERROR(rollback.Run());
  ASSIGN_OR_RETURN(Statement release, conn.Prepare("RELEASE write"));
  return release.Run();
}

// --------------------------------------------------------------------- jobs

absl::Status SqliteTrajectoryStore::CreateJob(const JobRecord& job) {
  RETURN_IF_ERROR(Annotate(ValidateJob(job), "CreateJob"));
  const int64_t created = WallOrNow(job.created_wall_us);
  return Write("CreateJob", WriteShape::kOneStatement,
               [&](BatchTxn& txn) { return InsertJob(txn.conn(), job, created); });
}

absl::Status SqliteTrajectoryStore::UpdateJobState(std::string_view job_id, JobState state,
                                                   std::string_view error, int64_t wall_us) {
  RETURN_IF_ERROR(Annotate(RequireId("job_id", job_id, "job"), "UpdateJobState"));
  RETURN_IF_ERROR(Annotate(RequireNonNegative("wall_us", wall_us), "UpdateJobState"));
  const int64_t wall = WallOrNow(wall_us);
  return Write("UpdateJobState", WriteShape::kOneStatement, [&](BatchTxn& txn) {
    return WriteJobState(txn.conn(), job_id, state, error, wall);
  });
}

absl::StatusOr<JobRecord> SqliteTrajectoryStore::GetJob(std::string_view job_id) {
  RETURN_IF_ERROR(Annotate(RequireId("job_id", job_id, "job"), "GetJob"));
  ReadPool::Lease conn = readers_.Acquire();
  ASSIGN_OR_RETURN(Statement st,
                   (*conn).Prepare(fmt::format("SELECT {} FROM jobs WHERE id = ?1", kJobColumns)));
  st.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool found, st.Step());
  if (!found) return Annotate(JobNotFound(job_id), "GetJob");
  return ReadJobRow(st);
}

absl::StatusOr<std::optional<JobRecord>> SqliteTrajectoryStore::FindJobByClientRequestId(
    std::string_view client_request_id) {
  RETURN_IF_ERROR(Annotate(RequireNonEmpty("client_request_id", client_request_id),
                           "FindJobByClientRequestId"));
  ReadPool::Lease conn = readers_.Acquire();
  // The repeated "<> ''" lets SQLite use the partial index.
  ASSIGN_OR_RETURN(Statement st, (*conn).Prepare(fmt::format(
                                     "SELECT {} FROM jobs WHERE client_request_id = ?1 AND "
                                     "client_request_id <> ''",
                                     kJobColumns)));
  st.Bind(1, client_request_id);
  ASSIGN_OR_RETURN(bool found, st.Step());
  if (!found) return std::optional<JobRecord>();
  ASSIGN_OR_RETURN(JobRecord j, ReadJobRow(st));
  return std::optional<JobRecord>(std::move(j));
}

absl::StatusOr<std::vector<JobRecord>> SqliteTrajectoryStore::ListJobs(const JobFilter& filter) {
  if (filter.limit < 1 || filter.limit > kMaxListLimit) {
    return absl::InvalidArgumentError(
        fmt::format("ListJobs: limit must be in 1..{}, got {}", kMaxListLimit, filter.limit));
  }
  if (!filter.after_id.empty()) {
    RETURN_IF_ERROR(Annotate(RequireId("after_id", filter.after_id, "job"), "ListJobs"));
  }
  // The SQL depends only on which filters are set (at most 2^7 shapes), so the
  // per-connection statement cache stays small while each shape can use the
  // matching index instead of a catch-all "(? = '' OR col = ?)" scan.
  std::vector<std::string> where;
  std::vector<std::string> values;
  auto add = [&](const char* column, const std::string& value) {
    if (value.empty()) return;
    where.push_back(fmt::format("{} = ?{}", column, values.size() + 1));
    values.push_back(value);
  };
  add("problem", filter.problem);
  add("model", filter.model);
  add("strategy", filter.strategy);
  add("agent_kind", filter.agent_kind);
  add("label", filter.label);
  if (filter.state.has_value()) add("state", std::string(JobStateName(*filter.state)));
  if (!filter.after_id.empty()) {
    where.push_back(fmt::format("id > ?{}", values.size() + 1));
    values.push_back(filter.after_id);
  }
  std::string sql = fmt::format("SELECT {} FROM jobs", kJobColumns);
  for (size_t i = 0; i < where.size(); ++i) {
    sql += (i == 0 ? " WHERE " : " AND ") + where[i];
  }
  sql += fmt::format(" ORDER BY id LIMIT ?{}", values.size() + 1);

  ReadPool::Lease conn = readers_.Acquire();
  ASSIGN_OR_RETURN(Statement st, (*conn).Prepare(sql));
  for (size_t i = 0; i < values.size(); ++i) st.Bind(static_cast<int>(i + 1), values[i]);
  st.Bind(static_cast<int>(values.size() + 1), filter.limit);
  return ReadJobRows(st);
}

absl::StatusOr<std::vector<JobRecord>> SqliteTrajectoryStore::ListUnfinishedJobs() {
  ReadPool::Lease conn = readers_.Acquire();
  ASSIGN_OR_RETURN(Statement st,
                   (*conn).Prepare(fmt::format("SELECT {} FROM jobs WHERE state IN ('queued', "
                                               "'running') ORDER BY id",
                                               kJobColumns)));
  return ReadJobRows(st);
}

// --------------------------------------------------------------- trajectory

absl::Status SqliteTrajectoryStore::AddTurn(const TurnRecord& turn) {
  RETURN_IF_ERROR(Annotate(ValidateTurn(turn), "AddTurn"));
  const int64_t started = WallOrNow(turn.started_wall_us);
  return Write("AddTurn", WriteShape::kOneStatement,
               [&](BatchTxn& txn) { return InsertTurn(txn.conn(), turn, started); });
}

absl::Status SqliteTrajectoryStore::AddLlmCall(const LlmCallRecord& call) {
  RETURN_IF_ERROR(Annotate(ValidateLlmCall(call), "AddLlmCall"));
  const int64_t wall = WallOrNow(call.wall_us);
  return Write("AddLlmCall", WriteShape::kOneStatement,
               [&](BatchTxn& txn) { return InsertLlmCall(txn.conn(), call, wall); });
}

absl::StatusOr<bool> SqliteTrajectoryStore::PutCandidate(const CandidateRecord& candidate) {
  RETURN_IF_ERROR(Annotate(ValidateCandidate(candidate), "PutCandidate"));
  const int64_t first_seen = WallOrNow(candidate.first_seen_wall_us);
  bool inserted = false;
  absl::Status s = Write("PutCandidate", WriteShape::kOneStatement, [&](BatchTxn& txn) {
    return InsertCandidate(txn.conn(), candidate, first_seen, &inserted);
  });
  RETURN_IF_ERROR(s);
  return inserted;
}

absl::StatusOr<CandidateRecord> SqliteTrajectoryStore::GetCandidate(std::string_view sha256) {
  RETURN_IF_ERROR(Annotate(RequireSha256("sha256", sha256), "GetCandidate"));
  ReadPool::Lease conn = readers_.Acquire();
  ASSIGN_OR_RETURN(Statement st,
                   (*conn).Prepare("SELECT sha256, source, backend, first_seen_wall_us "
                                   "FROM candidates WHERE sha256 = ?1"));
  st.Bind(1, sha256);
  ASSIGN_OR_RETURN(bool found, st.Step());
  if (!found)
    return absl::NotFoundError(fmt::format("GetCandidate: candidate {} not found", sha256));
  CandidateRecord c;
  c.sha256 = st.Text(0);
  c.source = st.Text(1);
  c.backend = st.Text(2);
  c.first_seen_wall_us = st.Int64(3);
  return c;
}

absl::Status SqliteTrajectoryStore::AddEvaluation(const EvaluationRecord& e) {
  RETURN_IF_ERROR(Annotate(ValidateEvaluation(e), "AddEvaluation"));
  const int64_t wall = WallOrNow(e.wall_us);
  return Write("AddEvaluation", WriteShape::kMultiStatement,
               [&](BatchTxn& txn) { return InsertEvaluation(txn.conn(), e, wall); });
}

template <typename Record, typename ReadRow>
absl::StatusOr<std::vector<Record>> SqliteTrajectoryStore::ListForJob(const char* op,
                                                                      std::string_view job_id,
                                                                      const std::string& sql,
                                                                      ReadRow read_row) {
  RETURN_IF_ERROR(Annotate(RequireId("job_id", job_id, "job"), op));
  ReadPool::Lease conn = readers_.Acquire();
  RETURN_IF_ERROR(Annotate(RequireJobExists(*conn, job_id), op));
  ASSIGN_OR_RETURN(Statement st, (*conn).Prepare(sql));
  st.Bind(1, job_id);
  std::vector<Record> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(read_row(st));
  }
  return out;
}

absl::StatusOr<std::vector<TurnRecord>> SqliteTrajectoryStore::ListTurns(std::string_view job_id) {
  return ListForJob<TurnRecord>(
      "ListTurns", job_id,
      "SELECT id, job_id, turn_index, started_wall_us, elapsed_ms, note FROM turns "
      "WHERE job_id = ?1 ORDER BY turn_index",
      [](Statement& st) {
        TurnRecord t;
        t.id = st.Text(0);
        t.job_id = st.Text(1);
        t.index = static_cast<int32_t>(st.Int64(2));
        t.started_wall_us = st.Int64(3);
        t.elapsed_ms = st.Int64(4);
        t.note = st.Text(5);
        return t;
      });
}

absl::StatusOr<std::vector<LlmCallRecord>> SqliteTrajectoryStore::ListLlmCalls(
    std::string_view job_id) {
  return ListForJob<LlmCallRecord>(
      "ListLlmCalls", job_id,
      "SELECT id, job_id, turn_id, provider, model, prompt, reply, prompt_tokens, "
      "completion_tokens, latency_ms, cost_usd, attempts, error, wall_us, elapsed_ms "
      "FROM llm_calls WHERE job_id = ?1 ORDER BY elapsed_ms, rowid",
      [](Statement& st) {
        LlmCallRecord c;
        c.id = st.Text(0);
        c.job_id = st.Text(1);
        c.turn_id = st.Text(2);
        c.provider = st.Text(3);
        c.model = st.Text(4);
        c.prompt = st.Text(5);
        c.reply = st.Text(6);
        c.prompt_tokens = st.Int64(7);
        c.completion_tokens = st.Int64(8);
        c.latency_ms = st.Double(9);
        c.cost_usd = st.Double(10);
        c.attempts = static_cast<int32_t>(st.Int64(11));
        c.error = st.Text(12);
        c.wall_us = st.Int64(13);
        c.elapsed_ms = st.Int64(14);
        return c;
      });
}

absl::StatusOr<std::vector<EvaluationRecord>> SqliteTrajectoryStore::ListEvaluations(
    std::string_view job_id) {
  return ListForJob<EvaluationRecord>(
      "ListEvaluations", job_id,
      fmt::format("SELECT {} FROM evaluations WHERE job_id = ?1 ORDER BY elapsed_ms, rowid",
                  kEvaluationColumns),
      [](Statement& st) { return ReadEvaluationRow(st); });
}

// ------------------------------------------------------------------- events

absl::StatusOr<int64_t> SqliteTrajectoryStore::AppendEvent(const EventRecord& event) {
  return AppendStep("AppendEvent", StepRows{}, event);
}

absl::StatusOr<int64_t> SqliteTrajectoryStore::AppendEventWith(const StepRows& rows,
                                                               const EventRecord& event) {
  return AppendStep("AppendEventWith", rows, event);
}

absl::StatusOr<int64_t> SqliteTrajectoryStore::AppendStep(const char* what, const StepRows& rows,
                                                          const EventRecord& event) {
  // Every field check happens here, before queueing, so a malformed step
  // fails alone and cheaply instead of inside somebody else's batch.
  RETURN_IF_ERROR(Annotate(ValidateEvent(event), what));
  auto same_job = [&](const char* row, const std::string& job_id) -> absl::Status {
    if (job_id == event.job_id) return absl::OkStatus();
    return Invalid(fmt::format("{}.job_id", row),
                   fmt::format("is {} but the event's job is {}", job_id, event.job_id));
  };
  if (rows.turn != nullptr) {
    RETURN_IF_ERROR(Annotate(ValidateTurn(*rows.turn), fmt::format("{}: turn", what)));
    RETURN_IF_ERROR(Annotate(same_job("turn", rows.turn->job_id), what));
  }
  if (rows.llm_call != nullptr) {
    RETURN_IF_ERROR(Annotate(ValidateLlmCall(*rows.llm_call), fmt::format("{}: llm_call", what)));
    RETURN_IF_ERROR(Annotate(same_job("llm_call", rows.llm_call->job_id), what));
  }
  if (rows.candidate != nullptr) {
    RETURN_IF_ERROR(
        Annotate(ValidateCandidate(*rows.candidate), fmt::format("{}: candidate", what)));
  }
  if (rows.evaluation != nullptr) {
    RETURN_IF_ERROR(
        Annotate(ValidateEvaluation(*rows.evaluation), fmt::format("{}: evaluation", what)));
    RETURN_IF_ERROR(Annotate(same_job("evaluation", rows.evaluation->job_id), what));
  }
  if (rows.job_state != nullptr) {
    RETURN_IF_ERROR(Annotate(RequireNonNegative("job_state.wall_us", rows.job_state->wall_us),
                             what));
  }
  // "0 = now" is resolved once, before queueing, so every row of the step
  // that leaves its time at 0 gets the same time.
  const int64_t now = options_.clock->NowWallMicros();
  auto wall = [now](int64_t w) { return w != 0 ? w : now; };
  const bool event_only = rows.turn == nullptr && rows.llm_call == nullptr &&
                          rows.candidate == nullptr && rows.evaluation == nullptr &&
                          rows.job_state == nullptr;
  int64_t seq = 0;
  absl::Status s =
      Write(what, event_only ? WriteShape::kOneStatement : WriteShape::kMultiStatement,
            [&](BatchTxn& txn) -> absl::Status {
              Connection& conn = txn.conn();
              if (rows.turn != nullptr) {
                RETURN_IF_ERROR(Annotate(
                    InsertTurn(conn, *rows.turn, wall(rows.turn->started_wall_us)), "turn"));
              }
              if (rows.candidate != nullptr) {
                bool inserted = false;
                RETURN_IF_ERROR(
                    Annotate(InsertCandidate(conn, *rows.candidate,
                                             wall(rows.candidate->first_seen_wall_us), &inserted),
                             "candidate"));
              }
              if (rows.llm_call != nullptr) {
                RETURN_IF_ERROR(Annotate(
                    InsertLlmCall(conn, *rows.llm_call, wall(rows.llm_call->wall_us)), "llm_call"));
              }
              if (rows.evaluation != nullptr) {
                RETURN_IF_ERROR(Annotate(
                    InsertEvaluation(conn, *rows.evaluation, wall(rows.evaluation->wall_us)),
                    "evaluation"));
              }
              ASSIGN_OR_RETURN(seq, txn.InsertEvent(event, wall(event.wall_us)));
              if (rows.job_state != nullptr) {
                RETURN_IF_ERROR(Annotate(
                    WriteJobState(conn, event.job_id, rows.job_state->state,
                                  rows.job_state->error, wall(rows.job_state->wall_us)),
                    "job state"));
              }
              return absl::OkStatus();
            });
  RETURN_IF_ERROR(s);
  return seq;
}

absl::StatusOr<std::vector<EventRecord>> SqliteTrajectoryStore::ReadEvents(std::string_view job_id,
                                                                           int64_t after_seq,
                                                                           int32_t limit) {
  RETURN_IF_ERROR(Annotate(RequireId("job_id", job_id, "job"), "ReadEvents"));
  RETURN_IF_ERROR(Annotate(RequireNonNegative("after_seq", after_seq), "ReadEvents"));
  if (limit < 1 || limit > kMaxListLimit) {
    return absl::InvalidArgumentError(
        fmt::format("ReadEvents: limit must be in 1..{}, got {}", kMaxListLimit, limit));
  }
  ReadPool::Lease conn = readers_.Acquire();
  RETURN_IF_ERROR(Annotate(RequireJobExists(*conn, job_id), "ReadEvents"));
  ASSIGN_OR_RETURN(Statement st,
                   (*conn).Prepare("SELECT job_id, seq, wall_us, elapsed_ms, type, payload_json "
                                   "FROM events WHERE job_id = ?1 AND seq > ?2 "
                                   "ORDER BY seq LIMIT ?3"));
  st.Bind(1, job_id).Bind(2, after_seq).Bind(3, limit);
  std::vector<EventRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    EventRecord e;
    e.job_id = st.Text(0);
    e.seq = st.Int64(1);
    e.wall_us = st.Int64(2);
    e.elapsed_ms = st.Int64(3);
    e.type = st.Text(4);
    e.payload_json = st.Text(5);
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<int64_t> SqliteTrajectoryStore::LastEventSeq(std::string_view job_id) {
  RETURN_IF_ERROR(Annotate(RequireId("job_id", job_id, "job"), "LastEventSeq"));
  ReadPool::Lease conn = readers_.Acquire();
  ASSIGN_OR_RETURN(Statement st,
                   (*conn).Prepare("SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?1), "
                                   "(SELECT COALESCE(MAX(seq), 0) FROM events WHERE job_id = ?1)"));
  st.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.Int64(0) == 0) return Annotate(JobNotFound(job_id), "LastEventSeq");
  return st.Int64(1);
}

// --------------------------------------------------------------- summaries

absl::StatusOr<JobStats> SqliteTrajectoryStore::GetJobStats(std::string_view job_id) {
  RETURN_IF_ERROR(Annotate(RequireId("job_id", job_id, "job"), "GetJobStats"));
  ReadPool::Lease conn = readers_.Acquire();
  // One statement runs in one implicit read transaction, so the numbers agree
  // with each other even while the writer appends.
  ASSIGN_OR_RETURN(
      Statement st,
      (*conn).Prepare(
          "SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?1), "
          "(SELECT COUNT(*) FROM turns WHERE job_id = ?1), "
          "(SELECT COUNT(*) FROM llm_calls WHERE job_id = ?1), "
          "(SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM llm_calls "
          "   WHERE job_id = ?1), "
          "(SELECT COALESCE(SUM(cost_usd), 0.0) FROM llm_calls WHERE job_id = ?1), "
          "(SELECT COUNT(*) FROM evaluations WHERE job_id = ?1 AND role = 'search'), "
          "(SELECT status FROM evaluations WHERE job_id = ?1 AND role = 'search' "
          "   ORDER BY elapsed_ms DESC, rowid DESC LIMIT 1), "
          "(SELECT e.candidate_sha256 FROM jobs j JOIN evaluations e "
          "   ON e.id = j.best_evaluation_id WHERE j.id = ?1), "
          "(SELECT e.roofline_fraction FROM jobs j JOIN evaluations e "
          "   ON e.id = j.best_evaluation_id WHERE j.id = ?1), "
          "(SELECT MAX(seq) FROM events WHERE job_id = ?1), "
          "(SELECT elapsed_ms FROM events WHERE job_id = ?1 ORDER BY seq DESC LIMIT 1), "
          "(SELECT COUNT(*) FROM evaluations WHERE job_id = ?1 AND role = 'search' "
          "   AND comparable = 0), "
          "(SELECT MAX(speedup) FROM evaluations WHERE job_id = ?1 AND role = 'search' "
          "   AND comparable = 0 AND correct = 1), "
          "(SELECT id || ' ' || status || ' ' || candidate_sha256 FROM evaluations "
          "   WHERE job_id = ?1 AND role = 'final' ORDER BY elapsed_ms DESC, rowid DESC LIMIT 1), "
          "(SELECT speedup FROM evaluations WHERE job_id = ?1 AND role = 'final' "
          "   ORDER BY elapsed_ms DESC, rowid DESC LIMIT 1), "
          "(SELECT roofline_fraction FROM evaluations WHERE job_id = ?1 AND role = 'final' "
          "   ORDER BY elapsed_ms DESC, rowid DESC LIMIT 1)"));
  st.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.Int64(0) == 0) return Annotate(JobNotFound(job_id), "GetJobStats");
  JobStats s;
  s.turns = static_cast<int32_t>(st.Int64(1));
  s.llm_calls = static_cast<int32_t>(st.Int64(2));
  s.tokens = st.Int64(3);
  s.cost_usd = st.Double(4);
  s.evaluations = static_cast<int32_t>(st.Int64(5));
  s.last_evaluation_status = st.IsNull(6) ? "" : st.Text(6);
  s.best_candidate_sha256 = st.IsNull(7) ? "" : st.Text(7);
  s.best_roofline_fraction = st.OptionalDouble(8);
  s.last_event_seq = st.IsNull(9) ? 0 : st.Int64(9);
  s.last_event_elapsed_ms = st.IsNull(10) ? 0 : st.Int64(10);
  s.other_evaluations = static_cast<int32_t>(st.Int64(11));
  s.other_best_speedup = st.OptionalDouble(12);
  if (!st.IsNull(13)) {
    // id, status and sha256 never contain spaces (validated on insert).
    const std::string f = st.Text(13);
    const size_t a = f.find(' '), b = f.rfind(' ');
    if (a != std::string::npos && b > a) {
      s.final_evaluation_id = f.substr(0, a);
      s.final_status = f.substr(a + 1, b - a - 1);
      s.final_candidate_sha256 = f.substr(b + 1);
    }
  }
  s.final_speedup = st.OptionalDouble(14);
  s.final_roofline_fraction = st.OptionalDouble(15);
  return s;
}

// --------------------------------------------------------------------- open

// "file:" URI of `path` for sqlite3_open_v2 with SQLITE_OPEN_URI: absolute,
// every byte outside a safe set percent-encoded (a '?' or '#' in a file name
// would otherwise start the query or fragment).
std::string FileUri(const std::string& path, const char* query) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  const std::string p = ec ? path : abs.string();
  std::string uri = "file:";
  for (unsigned char c : p) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') {
      uri.push_back(static_cast<char>(c));
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + "?" + query;
}

// Options::access = kReadOnly / kImmutable (store.h, "Read-only opening").
absl::Status OpenReadOnlyImpl(const std::string& path, const TrajectoryStore::Options& options,
                              std::unique_ptr<SqliteTrajectoryStore>* out) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(fmt::format("database {} does not exist", path));
  }
  const bool immutable = options.access == TrajectoryStore::Options::Access::kImmutable;
  // immutable=1 skips the WAL: commits still in a -wal file would be invisible.
  const std::string wal = path + "-wal";
  if (immutable && std::filesystem::exists(wal, ec) && std::filesystem::file_size(wal, ec) > 0) {
    return absl::FailedPreconditionError(fmt::format(
        "{} holds commits not yet in the file: the immutable mode would not see them", wal));
  }
  const std::string uri = FileUri(path, immutable ? "mode=ro&immutable=1" : "mode=ro");
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> file,
                   Connection::Open(uri, flags, options.busy_timeout_ms));
  absl::StatusOr<int> version = internal::ReadUserVersion(file->db());
  if (!version.ok()) {
    if (!immutable && version.status().message().find("readonly") != std::string_view::npos) {
      // SQLite cannot create the -shm file a WAL reader needs next to the file.
      return Annotate(version.status(),
                      "reading a WAL-mode file whose directory is not writable needs the "
                      "immutable mode (the file must not change) or a copy");
    }
    return version.status();
  }
  if (*version > CurrentSchemaVersion()) {
    return internal::NewerSchemaError(*version, CurrentSchemaVersion());
  }
  if (*version < 1) {
    return absl::FailedPreconditionError(
        "not a pkforge trajectory database (user_version 0, no schema)");
  }
  auto store = std::make_unique<SqliteTrajectoryStore>(path, options, nullptr);
  if (*version == CurrentSchemaVersion()) {
    store->readers().Add(std::move(file));
    for (int i = 1; i < options.read_connections; ++i) {
      ASSIGN_OR_RETURN(std::unique_ptr<Connection> reader,
                       Connection::Open(uri, flags, options.busy_timeout_ms));
      store->readers().Add(std::move(reader));
    }
    *out = std::move(store);
    return absl::OkStatus();
  }
  // An older schema: the queries need the current columns, and the file must
  // not be migrated, so the migrations upgrade a private in-memory copy.
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> copy,
                   Connection::Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                    options.busy_timeout_ms));
  sqlite3_backup* backup = sqlite3_backup_init(copy->db(), "main", file->db(), "main");
  if (backup == nullptr) {
    return internal::SqliteError(sqlite3_errcode(copy->db()), copy->db(),
                                 "copying the file into memory");
  }
  const int step_rc = sqlite3_backup_step(backup, -1);
  const int finish_rc = sqlite3_backup_finish(backup);
  if (step_rc != SQLITE_DONE) {
    return internal::SqliteError(step_rc, file->db(), "copying the file into memory");
  }
  if (finish_rc != SQLITE_OK) {
    return internal::SqliteError(finish_rc, copy->db(), "copying the file into memory");
  }
  file.reset();
  RETURN_IF_ERROR(Annotate(internal::MigrateTo(copy->db(), CurrentSchemaVersion()),
                           fmt::format("upgrading the in-memory copy of a version {} file",
                                       *version)));
  store->readers().Add(std::move(copy));
  *out = std::move(store);
  return absl::OkStatus();
}

absl::Status OpenImpl(const std::string& path, const TrajectoryStore::Options& options,
                      std::unique_ptr<SqliteTrajectoryStore>* out) {
  if (path.empty()) return absl::InvalidArgumentError("path is empty");
  if (options.read_connections < 1 || options.read_connections > 64) {
    return absl::InvalidArgumentError(
        fmt::format("read_connections must be in 1..64, got {}", options.read_connections));
  }
  if (options.busy_timeout_ms < 0) {
    return absl::InvalidArgumentError(
        fmt::format("busy_timeout_ms must be >= 0, got {}", options.busy_timeout_ms));
  }
  if (options.clock == nullptr) return absl::InvalidArgumentError("clock is null");
  if (options.access != TrajectoryStore::Options::Access::kReadWrite) {
    return OpenReadOnlyImpl(path, options, out);
  }

  ASSIGN_OR_RETURN(
      std::unique_ptr<Connection> writer,
      Connection::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, options.busy_timeout_ms));
  sqlite3* db = writer->db();
  // Until the version check passes the file may belong to a newer binary:
  // closing must not checkpoint that binary's WAL into the main file.
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  ASSIGN_OR_RETURN(int version, internal::ReadUserVersion(db));
  if (version > CurrentSchemaVersion()) {
    return internal::NewerSchemaError(version, CurrentSchemaVersion());
  }

  ASSIGN_OR_RETURN(std::string mode, writer->QueryText("PRAGMA journal_mode = WAL"));
  if (mode != "wal") {
    return absl::FailedPreconditionError(
        fmt::format("cannot switch to WAL journal mode (got '{}')", mode));
  }
  // FULL: the WAL is fsynced at every commit, which is what lets a caller
  // acknowledge a write as soon as it returns (NORMAL may lose the last
  // commits on power loss).
  RETURN_IF_ERROR(writer->Exec("PRAGMA synchronous = FULL"));
  RETURN_IF_ERROR(writer->Exec("PRAGMA foreign_keys = ON"));
  // Keeps a WAL that grew during a burst from staying large on disk.
  RETURN_IF_ERROR(writer->Exec("PRAGMA journal_size_limit = 67108864"));
  if (options.max_page_count < 0) {
    return absl::InvalidArgumentError(
        fmt::format("max_page_count must be >= 0, got {}", options.max_page_count));
  }
  if (options.max_page_count > 0) {
    RETURN_IF_ERROR(writer->Exec(
        fmt::format("PRAGMA max_page_count = {}", options.max_page_count).c_str()));
  }
  ASSIGN_OR_RETURN(std::string fk, writer->QueryText("PRAGMA foreign_keys"));
  if (fk != "1") {
    return absl::FailedPreconditionError("this SQLite build does not enforce foreign keys");
  }
  RETURN_IF_ERROR(internal::MigrateTo(db, CurrentSchemaVersion()));
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);

  auto store = std::make_unique<SqliteTrajectoryStore>(path, options, std::move(writer));
  for (int i = 0; i < options.read_connections; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<Connection> reader,
                     Connection::Open(path, SQLITE_OPEN_READONLY, options.busy_timeout_ms));
    store->readers().Add(std::move(reader));
  }
  *out = std::move(store);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> SqliteTrajectoryStore::SetMaxPageCount(int64_t pages) {
  if (pages < 0) return Invalid("max_page_count", "must be >= 0");
  int64_t now = 0;
  // On the writer connection (the limit is per connection), as a write of
  // its own so it never runs inside another leader's batch.
  RETURN_IF_ERROR(Write("SetMaxPageCount", WriteShape::kOneStatement, [&](BatchTxn& txn) {
    ASSIGN_OR_RETURN(Statement st, txn.conn().Prepare(
                                       fmt::format("PRAGMA max_page_count = {}", pages)));
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) now = st.Int64(0);
    return absl::OkStatus();
  }));
  return now;
}

absl::StatusOr<std::unique_ptr<TrajectoryStore>> TrajectoryStore::Open(const std::string& path,
                                                                       Options options) {
  std::unique_ptr<SqliteTrajectoryStore> store;
  RETURN_IF_ERROR(Annotate(OpenImpl(path, options, &store), fmt::format("opening {}", path)));
  return std::unique_ptr<TrajectoryStore>(std::move(store));
}

}  // namespace pkforge::storage
