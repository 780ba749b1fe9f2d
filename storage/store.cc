// The trajectory store (store.h): job states, and SqliteTrajectoryStore's
// group commit, jobs and trajectory rows (store_impl.h has the layout and
// the threading rules; events and summaries are in store_events.cc,
// opening in store_open.cc, row validation and writers in store_rows.cc).
#include "storage/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "fmt/format.h"
#include "storage/migrations.h"
#include "storage/sqlite_util.h"
#include "storage/store_impl.h"

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

namespace store_internal {

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
  return SelectJobs("ListJobs", kJobColumns, filter);
}

absl::StatusOr<std::vector<JobRecord>> SqliteTrajectoryStore::ListJobSummaries(
    const JobFilter& filter) {
  return SelectJobs("ListJobSummaries", kJobSummaryColumns, filter);
}

absl::StatusOr<std::vector<JobRecord>> SqliteTrajectoryStore::SelectJobs(std::string_view what,
                                                                         const char* columns,
                                                                         const JobFilter& filter) {
  if (filter.limit < 1 || filter.limit > kMaxListLimit) {
    return absl::InvalidArgumentError(
        fmt::format("{}: limit must be in 1..{}, got {}", what, kMaxListLimit, filter.limit));
  }
  if (!filter.after_id.empty()) {
    RETURN_IF_ERROR(Annotate(RequireId("after_id", filter.after_id, "job"), what));
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
  std::string sql = fmt::format("SELECT {} FROM jobs", columns);
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
  return SelectEvaluations("ListEvaluations", kEvaluationColumns, job_id);
}

absl::StatusOr<std::vector<EvaluationRecord>> SqliteTrajectoryStore::ListEvaluationPoints(
    std::string_view job_id) {
  return SelectEvaluations("ListEvaluationPoints", kEvaluationPointColumns, job_id);
}

absl::StatusOr<std::vector<EvaluationRecord>> SqliteTrajectoryStore::SelectEvaluations(
    const char* what, const char* columns, std::string_view job_id) {
  return ListForJob<EvaluationRecord>(
      what, job_id,
      fmt::format("SELECT {} FROM evaluations WHERE job_id = ?1 ORDER BY elapsed_ms, rowid",
                  columns),
      [](Statement& st) { return ReadEvaluationRow(st); });
}

}  // namespace store_internal
}  // namespace pkforge::storage
