// Validation, row readers and row writers of the trajectory store
// (store_rows.h).
#include "storage/store_rows.h"

#include <sqlite3.h>

#include <cctype>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/ids.h"
#include "common/sha256.h"
#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::storage::store_internal {

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

}  // namespace pkforge::storage::store_internal
